//! Checks of the permessage-deflate path (`wsbench_proto::deflate`) for the `inflate` fuzz
//! target and its corpus test: arbitrary bytes inflated as a peer's messages must end in
//! `Ok` or a typed error (never a panic, never more output than the limit); the same bytes
//! compressed and inflated again must come back unchanged; an extension header must parse
//! without panicking, and a parsed offer must read back equal from its own formatting.
//! Uses only `wsbench_proto` and std, because the corpus test includes it by path.

use wsbench_proto::deflate::{Deflater, Inflater, parse_offers};
use wsbench_proto::{MessageMemory, Reservation};

/// Small, so fuzzed inputs can cross it.
const LIMIT: u64 = 64 * 1024;

/// First byte: window bits (9..=15), context takeover, how the input is cut. The rest: the
/// messages, separated by `0xA5 0x5A`.
pub fn inflate(data: &[u8]) {
    let Some((&control, body)) = data.split_first() else { return };
    let bits = 9 + control % 7;
    let no_context_takeover = control & 0x08 != 0;
    let step = 1 + usize::from(control >> 4);
    let mut inflater = Inflater::new(bits, no_context_takeover, LIMIT);
    let mut deflater = Deflater::new(bits, no_context_takeover);
    let mut check = Inflater::new(bits, no_context_takeover, u64::MAX);
    // A process budget twice the message limit: whichever a message meets first stops it.
    let budget = MessageMemory::new(2 * LIMIT);
    for message in body.split(|&b| b == 0xA5) {
        let mut out = Vec::new();
        let mut reservation = Reservation::new(budget.clone());
        let result =
            message.chunks(step).try_for_each(|piece| inflater.inflate(piece, &mut out, &mut reservation));
        let result = result.and_then(|()| inflater.finish(&mut out, &mut reservation));
        assert!(out.len() as u64 <= LIMIT + 1, "inflated {} bytes past the limit", out.len());
        assert!(budget.held() <= budget.limit(), "the budget was overdrawn");
        drop(reservation);
        assert_eq!(budget.held(), 0, "a finished message gave its charge back");
        if result.is_err() {
            // A failed connection is dropped; start a new one as the next peer would.
            inflater = Inflater::new(bits, no_context_takeover, LIMIT);
        }
        let mut compressed = Vec::new();
        deflater.compress(message, &mut compressed).expect("compressing never fails");
        let mut back = Vec::new();
        let mut unlimited = Reservation::default();
        check.inflate(&compressed, &mut back, &mut unlimited).expect("our own output inflates");
        check.finish(&mut back, &mut unlimited).expect("our own output ends cleanly");
        assert_eq!(back, message, "a message changed through deflate and inflate");
    }
    if let Ok(text) = std::str::from_utf8(body) {
        for params in parse_offers([text]).into_iter().flatten() {
            let again = parse_offers([params.to_string().as_str()]);
            assert_eq!(again, vec![Ok(params)], "formatting {params:?} does not read back");
        }
    }
}

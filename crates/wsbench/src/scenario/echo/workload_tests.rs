//! Unit tests of the echo loop's bookkeeping: what an echo answers (its number, cut
//! anywhere), and the reply deadline giving requests up.

use super::*;
use crate::engine::batch::encode_number;

/// An echo of message `seq` of `rest`, as a server would return it.
fn echo(seq: u64, rest: &[u8]) -> Vec<u8> {
    [&encode_number(seq)[..], rest].concat()
}

/// Feeds `message` to [`check_piece`] in pieces cut at `cuts`.
fn pieces(state: &mut EchoConn, expected: &[u8], numbered: bool, message: &[u8], cuts: &[usize]) -> Answer {
    let mut bounds = vec![0];
    bounds.extend_from_slice(cuts);
    bounds.push(message.len());
    let mut answer = None;
    for (index, pair) in bounds.windows(2).enumerate() {
        let last = index == bounds.len() - 2;
        answer = check_piece(state, expected, numbered, index == 0, last, &message[pair[0]..pair[1]]);
        assert_eq!(answer.is_some(), last);
    }
    answer.unwrap()
}

#[test]
fn an_echo_answers_the_request_its_number_names_even_cut_inside_the_number() {
    let expected = echo(0, b"the rest of it");
    let mut state = EchoConn { sampled: true, ..EchoConn::default() };
    let message = echo(41, b"the rest of it");
    for cuts in [&[][..], &[3], &[3, 5, 12], &[8]] {
        let answer = pieces(&mut state, &expected, true, &message, cuts);
        assert_eq!(answer, Answer::Request { seq: Some(41), mismatch: false }, "cut at {cuts:?}");
    }
    let altered = echo(41, b"the rest of iT");
    assert_eq!(
        pieces(&mut state, &expected, true, &altered, &[4]),
        Answer::Request { seq: Some(41), mismatch: true }
    );
    // Not sampled: only the number is checked.
    state.sampled = false;
    assert_eq!(
        pieces(&mut state, &expected, true, &altered, &[4]),
        Answer::Request { seq: Some(41), mismatch: false }
    );
}

#[test]
fn a_message_without_a_number_answers_nothing() {
    let expected = echo(0, b"the rest of it");
    let mut state = EchoConn { sampled: true, ..EchoConn::default() };
    let flood = vec![0xffu8; 64 * 1024];
    assert_eq!(pieces(&mut state, &expected, true, &flood, &[4096]), Answer::Nothing);
    assert_eq!(pieces(&mut state, &expected, true, b"short", &[]), Answer::Nothing);
}

#[test]
fn a_payload_too_short_for_a_number_is_checked_whole_against_the_oldest() {
    let mut state = EchoConn { sampled: true, ..EchoConn::default() };
    assert_eq!(
        pieces(&mut state, b"abcd", false, b"abcd", &[1]),
        Answer::Request { seq: None, mismatch: false }
    );
    assert_eq!(
        pieces(&mut state, b"abcd", false, b"abce", &[]),
        Answer::Request { seq: None, mismatch: true }
    );
}

/// A connection with requests 0..4 in flight, due one second apart from `start`, and two
/// sends held back, due at 4 s and 5 s.
fn connection(start: Instant) -> EchoConn {
    let at = |secs: u64| start + std::time::Duration::from_secs(secs);
    let mut state = EchoConn::default();
    state.in_flight.extend((0..4).map(|seq| Sent { seq, intended: at(seq), sent: at(seq) }));
    state.backlog.extend([at(4), at(5)]);
    state.next_seq = 4;
    state
}

#[test]
fn the_deadline_gives_up_what_fell_due_by_it_oldest_first_sent_or_not() {
    let start = Instant::now();
    let mut state = connection(start);
    assert_eq!(state.expire(start + std::time::Duration::from_millis(1500)), (2, 0));
    assert_eq!(state.in_flight.iter().map(|sent| sent.seq).collect::<Vec<_>>(), [2, 3]);
    assert_eq!(state.backlog.len(), 2);
    assert!(state.forgotten(1) && !state.forgotten(2));
    assert_eq!(
        state.expire(start + std::time::Duration::from_secs(4)),
        (2, 1),
        "due exactly at the deadline"
    );
    assert_eq!(state.backlog.len(), 1);
    assert_eq!(state.expire(start + std::time::Duration::from_secs(4)), (0, 0), "nothing twice");
    assert_eq!(state.next_echo_seq(), 4, "nothing in flight: the next one sent");
}

#[test]
fn echoes_of_forgotten_requests_are_late_and_the_next_is_checked_against_its_own() {
    let start = Instant::now();
    let mut state = connection(start);
    state.expire(start + std::time::Duration::from_secs(1));
    assert_eq!(state.next_echo_seq(), 2);
    assert!(state.late_echo() && state.late_echo(), "the two forgotten echoes, in order");
    assert!(!state.late_echo(), "then the one in flight");
    assert_eq!(state.take(None).map(|sent| sent.seq), Some(2));
}

#[test]
fn only_a_request_in_flight_is_answered_once() {
    let mut state = EchoConn::default();
    let now = Instant::now();
    state.in_flight.extend((5..8).map(|seq| Sent { seq, intended: now, sent: now }));
    assert_eq!(state.take(Some(6)).map(|sent| sent.seq), Some(6), "out of order still answers");
    assert!(state.take(Some(6)).is_none(), "answered already");
    assert!(state.take(Some(9)).is_none(), "never sent");
    assert_eq!(state.take(Some(5 + (1 << 48))).map(|sent| sent.seq), Some(5), "numbers wrap at 2^48");
    assert_eq!(state.take(None).map(|sent| sent.seq), Some(7));
}

#[test]
fn a_connections_state_moves_in_registers() {
    // Every hook takes it out of its slot and puts it back: past 128 bytes each move is a
    // call to memcpy (four per round trip measured).
    assert!(std::mem::size_of::<Option<EchoConn>>() <= 128, "{}", std::mem::size_of::<Option<EchoConn>>());
}

//! Unit tests of permessage-deflate negotiation and the per-message codec.

use super::*;
use crate::{MessageMemory, Reservation};

fn offer(value: &str) -> Result<DeflateParams, DeflateError> {
    parse_offers([value]).remove(0)
}

#[test]
fn offers_parse_every_parameter() {
    let params = offer(
        "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10; client_max_window_bits",
    )
    .unwrap();
    assert!(params.server_no_context_takeover && params.client_no_context_takeover);
    assert_eq!(params.server_max_window_bits, Some(10));
    assert_eq!(params.client_max_window_bits, ClientWindowBits::Supported);
    assert_eq!(
        offer("permessage-deflate; client_max_window_bits=\"9\"").unwrap().client_max_window_bits,
        ClientWindowBits::Bits(9)
    );
}

#[test]
fn invalid_offers_are_typed_errors() {
    let dup = offer("permessage-deflate; server_no_context_takeover; server_no_context_takeover");
    assert_eq!(dup, Err(DeflateError::DuplicateParameter("server_no_context_takeover".into())));
    let bad = |v: &str| offer(&format!("permessage-deflate; server_max_window_bits={v}")).unwrap_err();
    for value in ["7", "16", "08", "x", "", "1000"] {
        assert!(matches!(bad(value), DeflateError::InvalidValue { .. }), "{value}");
    }
    assert!(matches!(
        offer("permessage-deflate; server_max_window_bits"),
        Err(DeflateError::InvalidValue { .. })
    ));
    assert!(matches!(
        offer("permessage-deflate; client_no_context_takeover=1"),
        Err(DeflateError::InvalidValue { .. })
    ));
    assert_eq!(offer("permessage-deflate; foo"), Err(DeflateError::UnknownParameter("foo".into())));
}

#[test]
fn server_picks_the_first_acceptable_offer() {
    // The first offer is invalid, the second asks for an 8-bit server window (declined).
    let chosen = negotiate([
        "permessage-deflate; foo=1, permessage-deflate; server_max_window_bits=8",
        "x-webkit-deflate-frame, permessage-deflate; client_max_window_bits; server_no_context_takeover",
    ])
    .unwrap();
    assert_eq!(
        chosen,
        Negotiated {
            server_no_context_takeover: true,
            client_no_context_takeover: false,
            server_max_window_bits: 15,
            client_max_window_bits: 15
        }
    );
    assert_eq!(chosen.params().to_string(), "permessage-deflate; server_no_context_takeover");
    assert_eq!(negotiate(["x-other"]), None);
}

#[test]
fn client_checks_the_answer_against_its_offer() {
    let offered = DeflateParams { client_max_window_bits: ClientWindowBits::Supported, ..Default::default() };
    assert_eq!(check_answer(&offered, None), Ok(None));
    let agreed =
        check_answer(&offered, Some("permessage-deflate; client_max_window_bits=10")).unwrap().unwrap();
    assert_eq!(agreed.client_max_window_bits, 10);
    let plain = DeflateParams::default();
    assert_eq!(
        check_answer(&plain, Some("permessage-deflate; client_max_window_bits=10")),
        Err(DeflateError::NotOffered("client_max_window_bits".into()))
    );
    let limited = DeflateParams { server_max_window_bits: Some(10), ..Default::default() };
    assert!(check_answer(&limited, Some("permessage-deflate; server_max_window_bits=12")).is_err());
    assert!(check_answer(&limited, Some("permessage-deflate")).is_err());
    assert!(check_answer(&plain, Some("permessage-deflate, permessage-deflate")).is_err());
    assert!(check_answer(&plain, Some("x-foo")).is_err());
}

fn round_trip(agreed: Negotiated, messages: &[Vec<u8>]) -> Vec<usize> {
    let mut deflater = agreed.deflater(false);
    let mut inflater = agreed.inflater(true, 1 << 24);
    let mut sizes = Vec::new();
    for message in messages {
        let mut compressed = Vec::new();
        deflater.compress(message, &mut compressed).unwrap();
        sizes.push(compressed.len());
        let mut inflated = Vec::new();
        // Fed in pieces, as frames of a fragmented message would arrive.
        for piece in compressed.chunks(7) {
            inflater.inflate(piece, &mut inflated, &mut Reservation::default()).unwrap();
        }
        inflater.finish(&mut inflated, &mut Reservation::default()).unwrap();
        assert_eq!(&inflated, message);
    }
    sizes
}

#[test]
fn messages_round_trip_with_and_without_context_takeover_at_every_window() {
    let text = br#"{"type":"quote","symbol":"ACME","price":101.25,"ts":1700000000000}"#.to_vec();
    let messages =
        vec![text.clone(), text.clone(), Vec::new(), (0..70_000u32).map(|i| (i % 251) as u8).collect()];
    for bits in 9..=15 {
        for no_takeover in [false, true] {
            let agreed = Negotiated {
                server_no_context_takeover: no_takeover,
                client_no_context_takeover: no_takeover,
                server_max_window_bits: bits,
                client_max_window_bits: bits,
            };
            let sizes = round_trip(agreed, &messages);
            // With context takeover the repeated message refers back to the first one.
            assert_eq!(sizes[1] < sizes[0], !no_takeover, "bits {bits} no_takeover {no_takeover}");
            assert_eq!(sizes[2], if no_takeover { 1 } else { sizes[2] });
        }
    }
}

#[test]
fn the_rfc_example_inflates() {
    // RFC 7692 §7.2.3.1: "Hello" compressed.
    let mut inflater = Inflater::new(15, false, 100);
    let mut out = Vec::new();
    inflater
        .inflate(&[0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00], &mut out, &mut Reservation::default())
        .unwrap();
    inflater.finish(&mut out, &mut Reservation::default()).unwrap();
    assert_eq!(out, b"Hello");
    // §7.2.3.2: the same message again with context takeover, referring back.
    let mut again = Vec::new();
    inflater.inflate(&[0xf2, 0x00, 0x11, 0x00, 0x00], &mut again, &mut Reservation::default()).unwrap();
    inflater.finish(&mut again, &mut Reservation::default()).unwrap();
    assert_eq!(again, b"Hello");
}

#[test]
fn a_compression_bomb_stops_at_the_limit() {
    let mut deflater = Deflater::new(15, false);
    let mut bomb = Vec::new();
    deflater.compress(&vec![0u8; 10 << 20], &mut bomb).unwrap();
    assert!(bomb.len() < 20_000);
    let mut inflater = Inflater::new(15, false, 1 << 20);
    let mut out = Vec::new();
    let error = inflater.inflate(&bomb, &mut out, &mut Reservation::default()).unwrap_err();
    assert_eq!(error, DeflateError::TooBig { limit: 1 << 20 });
    assert_eq!(error.close_code(), 1009);
    assert!(out.len() <= (1 << 20) + 1);
}

#[test]
fn a_compression_bomb_stops_at_the_process_budget_before_its_own_limit() {
    let mut deflater = Deflater::new(15, false);
    let mut bomb = Vec::new();
    deflater.compress(&vec![0u8; 10 << 20], &mut bomb).unwrap();
    let budget = MessageMemory::new(1 << 20);
    // Another connection holds half of the budget already.
    let mut other = Reservation::new(budget.clone());
    other.make_room(&mut Vec::new(), 512 << 10).unwrap();
    let mut inflater = Inflater::new(15, false, 8 << 20);
    let (mut out, mut reservation) = (Vec::new(), Reservation::new(budget.clone()));
    let error = inflater.inflate(&bomb, &mut out, &mut reservation).unwrap_err();
    assert_eq!(error, DeflateError::OverBudget(crate::OverBudget { limit: 1 << 20 }));
    assert_eq!(error.close_code(), 1009);
    assert!(out.capacity() <= 512 << 10, "inflated into {} bytes", out.capacity());
    drop((reservation, other));
    assert_eq!(budget.held(), 0);
}

#[test]
fn garbage_is_corrupt_not_a_panic() {
    let mut inflater = Inflater::new(15, false, 1 << 20);
    let mut out = Vec::new();
    let result = inflater
        .inflate(&[0xff; 32], &mut out, &mut Reservation::default())
        .and_then(|()| inflater.finish(&mut out, &mut Reservation::default()));
    assert_eq!(result, Err(DeflateError::Corrupt));
    assert_eq!(DeflateError::Corrupt.close_code(), 1002);
}

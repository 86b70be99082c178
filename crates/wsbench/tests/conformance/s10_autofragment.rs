//! Autobahn case 10.1.1 (auto-fragmentation): a 64 KiB text message sent as 1300-byte
//! fragments (what a client with `autoFragmentSize = 1300` emits) is reassembled and echoed.

use crate::connect;
use crate::raw_frame::OutFrame;

#[test]
fn case_10_1_1_text_64k_auto_fragmented_into_1300_byte_frames_is_echoed() {
    let payload = vec![b'*'; 65536];
    let pieces: Vec<&[u8]> = payload.chunks(1300).collect();
    assert_eq!(pieces.len(), 51, "50 full fragments and one of 536 bytes");
    let frames: Vec<OutFrame> = pieces
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let f = if i == 0 { OutFrame::text(*p) } else { OutFrame::cont(*p) };
            f.fin(i + 1 == pieces.len())
        })
        .collect();
    let mut c = connect();
    c.send_all(&frames);
    c.expect_text(&payload);
    c.close_normally();
}

//! Tests of the HTTP/3 frame reader and writers.

use super::*;

/// Every piece `bytes` holds, fed in chunks of `chunk` bytes (DATA pieces joined).
fn read_all(role: StreamRole, bytes: &[u8], chunk: usize) -> Result<Vec<String>, Error> {
    let mut reader = FrameReader::new(role);
    let mut buffered: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    let mut data = Vec::new();
    for piece in bytes.chunks(chunk) {
        buffered.extend_from_slice(piece);
        while let Some((piece, used)) = reader.next(&buffered)? {
            match piece {
                Piece::Data(bytes) => data.extend_from_slice(bytes),
                other => out.push(format!("{other:?}")),
            }
            buffered.drain(..used);
            if reader.at_boundary() && !data.is_empty() {
                out.push(format!("data {}", String::from_utf8_lossy(&data)));
                data.clear();
            }
        }
    }
    Ok(out)
}

#[test]
fn data_comes_in_pieces_and_whole_frames_wait_for_their_bytes() {
    let mut bytes = Vec::new();
    put_frame(HEADERS, b"\x00\x00\xd1", &mut bytes);
    put_frame(DATA, b"hello websocket", &mut bytes);
    put_frame(0x21, b"grease", &mut bytes);
    put_frame(DATA, b"again", &mut bytes);
    for chunk in [1, 2, 3, 7, 100] {
        let pieces = read_all(StreamRole::Request, &bytes, chunk).unwrap();
        let pieces: Vec<&str> = pieces.iter().map(String::as_str).filter(|p| *p != "Skipped").collect();
        assert_eq!(pieces, ["Headers([0, 0, 209])", "data hello websocket", "data again"], "chunk {chunk}");
    }
}

#[test]
fn settings_round_trip_and_open_the_control_stream() {
    let settings = Settings {
        enable_connect_protocol: true,
        max_field_section_size: Some(16_384),
        qpack_max_table_capacity: 0,
        qpack_blocked_streams: 0,
    };
    let mut bytes = Vec::new();
    settings.put(&mut bytes);
    put_frame(GOAWAY, &[0x04], &mut bytes);
    let pieces = read_all(StreamRole::Control, &bytes, 1).unwrap();
    assert_eq!(pieces, [format!("Settings({settings:?})"), "Goaway(4)".to_string()]);
}

#[test]
fn a_control_stream_without_settings_first_is_refused() {
    let mut bytes = Vec::new();
    put_frame(GOAWAY, &[0], &mut bytes);
    let error = read_all(StreamRole::Control, &bytes, 64).unwrap_err();
    assert_eq!(error.code, Code::MissingSettings);
}

#[test]
fn frames_out_of_place_are_refused_with_their_codes() {
    let cases: &[(StreamRole, &[&[u8]], Code)] = &[
        (StreamRole::Control, &[&[4, 0], &[4, 0]], Code::FrameUnexpected),
        (StreamRole::Control, &[&[4, 0], &[0, 1, 0]], Code::FrameUnexpected),
        (StreamRole::Request, &[&[4, 0]], Code::FrameUnexpected),
        (StreamRole::Request, &[&[7, 1, 0]], Code::FrameUnexpected),
        (StreamRole::Request, &[&[2, 0]], Code::FrameUnexpected),
        (StreamRole::Request, &[&[5, 1, 0]], Code::IdError),
        (StreamRole::Control, &[&[4, 2, 0x08, 0x02]], Code::SettingsError),
        (StreamRole::Control, &[&[4, 4, 0x08, 0x01, 0x08, 0x01]], Code::SettingsError),
        (StreamRole::Control, &[&[4, 2, 0x03, 0x00]], Code::SettingsError),
        (StreamRole::Control, &[&[4, 1, 0x08]], Code::FrameError),
        (StreamRole::Control, &[&[4, 0], &[7, 2, 0, 0]], Code::FrameError),
    ];
    for (role, frames, code) in cases {
        let bytes = frames.concat();
        let error = read_all(*role, &bytes, 64).unwrap_err();
        assert_eq!(error.code, *code, "{frames:?}");
    }
}

#[test]
fn a_frame_past_the_limit_is_refused_before_its_bytes_come() {
    let mut reader = FrameReader::with_limit(StreamRole::Request, 10);
    let mut head = Vec::new();
    put_head(HEADERS, 11, &mut head);
    assert_eq!(reader.next(&head).unwrap_err().code, Code::ExcessiveLoad);
    // DATA has no such limit: it is never held whole.
    let mut reader = FrameReader::with_limit(StreamRole::Request, 10);
    let mut data = Vec::new();
    put_head(DATA, 1 << 40, &mut data);
    data.extend_from_slice(b"abc");
    assert_eq!(reader.next(&data).unwrap(), Some((Piece::Data(b"abc"), data.len())));
    assert!(!reader.at_boundary());
}

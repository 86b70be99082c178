//! The few pieces of HTTP/3 (RFC 9114) that WebSockets over it need (RFC 9220), as a
//! sans-I/O codec beside [`crate::http2`]: the stream types, frames ([`frame`]: DATA,
//! HEADERS, SETTINGS with SETTINGS_ENABLE_CONNECT_PROTOCOL, GOAWAY; others skipped), QPACK
//! with the static table only ([`qpack`], reading Huffman-coded strings: [`huffman`]) and the extended CONNECT's request and answer.
//! It reads and writes byte buffers; the QUIC streams those bytes travel on are the
//! caller's.
//!
//! Written here rather than taken from hyperium's `h3`: that crate runs on an async QUIC
//! stack (`h3-quinn` needs a tokio runtime and quinn's endpoint driver), while wsbench's
//! client and server are mio event loops that drive every connection themselves.

pub mod error;
pub mod frame;
pub mod huffman;
pub mod qpack;
mod static_table;
pub mod varint;

pub use error::{Code, Error};
pub use frame::{FrameReader, Piece, Settings, StreamRole};

/// The ALPN token of HTTP/3 over QUIC.
pub const ALPN: &[u8] = b"h3";

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
pub const STREAM_CONTROL: u64 = 0x00;
pub const STREAM_PUSH: u64 = 0x01;
pub const STREAM_QPACK_ENCODER: u64 = 0x02;
pub const STREAM_QPACK_DECODER: u64 = 0x03;

/// The most bytes of a field section this side takes (and advertises).
pub const MAX_FIELD_SECTION: u64 = 16 * 1024;

/// What this side sends first on its control stream: the stream type and SETTINGS
/// (`enable_connect` on a server that accepts WebSockets).
pub fn control_stream_opening(enable_connect: bool) -> Vec<u8> {
    let mut out = Vec::new();
    varint::put(STREAM_CONTROL, &mut out);
    let settings = Settings {
        enable_connect_protocol: enable_connect,
        max_field_section_size: Some(MAX_FIELD_SECTION),
        ..Settings::default()
    };
    settings.put(&mut out);
    out
}

/// The HEADERS frame opening a WebSocket (RFC 9220 §3, as RFC 8441 §4): an extended
/// CONNECT with `:protocol websocket`, then `extra` fields (lower-case names).
pub fn websocket_request(scheme: &str, authority: &str, path: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let mut fields: Vec<(&str, &str)> = vec![
        (":method", "CONNECT"),
        (":protocol", "websocket"),
        (":scheme", scheme),
        (":path", path),
        (":authority", authority),
        ("sec-websocket-version", "13"),
    ];
    fields.extend_from_slice(extra);
    headers_frame(&fields)
}

/// A HEADERS frame carrying `fields`.
pub fn headers_frame<N: AsRef<[u8]>, V: AsRef<[u8]>>(fields: &[(N, V)]) -> Vec<u8> {
    let mut block = Vec::new();
    qpack::encode(fields, &mut block);
    let mut out = Vec::new();
    frame::put_frame(frame::HEADERS, &block, &mut out);
    out
}

/// The `:status` of a response's fields.
pub fn status(fields: &[qpack::Field]) -> Result<u16, Error> {
    let value =
        field(fields, ":status").ok_or(Error::new(Code::MessageError, "a response without :status"))?;
    std::str::from_utf8(value)
        .ok()
        .filter(|v| v.len() == 3)
        .and_then(|v| v.parse().ok())
        .ok_or(Error::new(Code::MessageError, "a :status that is not three digits"))
}

/// An extended CONNECT a server was sent: its protocol, authority and path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectRequest {
    pub protocol: Vec<u8>,
    pub authority: Vec<u8>,
    pub path: Vec<u8>,
}

/// The extended CONNECT in a request's fields (RFC 9220 §3: `:method CONNECT` with
/// `:protocol`, `:scheme`, `:path` and `:authority`), or why it is not one.
pub fn connect_request(fields: &[qpack::Field]) -> Result<ConnectRequest, Error> {
    let malformed = |what| Error::new(Code::MessageError, what);
    if field(fields, ":method") != Some(b"CONNECT") {
        return Err(malformed("a request that is not CONNECT"));
    }
    let protocol = field(fields, ":protocol").ok_or(malformed("a CONNECT without :protocol"))?;
    let path = field(fields, ":path").filter(|p| !p.is_empty());
    let path = path.ok_or(malformed("an extended CONNECT without :path"))?;
    let authority = field(fields, ":authority").ok_or(malformed("a CONNECT without :authority"))?;
    if field(fields, ":scheme").is_none() {
        return Err(malformed("an extended CONNECT without :scheme"));
    }
    Ok(ConnectRequest { protocol: protocol.to_vec(), authority: authority.to_vec(), path: path.to_vec() })
}

/// The value of the first field called `name`.
pub fn field<'a>(fields: &'a [qpack::Field], name: &str) -> Option<&'a [u8]> {
    fields.iter().find(|(n, _)| n == name.as_bytes()).map(|(_, v)| v.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_headers(frame: &[u8]) -> Vec<qpack::Field> {
        let mut reader = FrameReader::new(StreamRole::Request);
        match reader.next(frame).unwrap() {
            Some((Piece::Headers(block), n)) if n == frame.len() => qpack::decode(block, 16_384).unwrap(),
            other => panic!("not one HEADERS frame: {other:?}"),
        }
    }

    #[test]
    fn a_websocket_request_reads_back_as_an_extended_connect() {
        let frame = websocket_request("https", "localhost:4433", "/echo", &[("origin", "https://a")]);
        let request = connect_request(&first_headers(&frame)).unwrap();
        assert_eq!(request.protocol, b"websocket");
        assert_eq!(request.authority, b"localhost:4433");
        assert_eq!(request.path, b"/echo");
    }

    #[test]
    fn requests_that_are_no_extended_connect_are_refused() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[(":method", "GET"), (":path", "/")], "not CONNECT"),
            (&[(":method", "CONNECT"), (":authority", "a")], "without :protocol"),
            (&[(":method", "CONNECT"), (":protocol", "websocket"), (":authority", "a")], "without :path"),
        ];
        for (fields, what) in cases {
            let error = connect_request(&first_headers(&headers_frame(fields))).unwrap_err();
            assert_eq!(error.code, Code::MessageError);
            assert!(error.what.contains(what), "{}", error.what);
        }
    }

    #[test]
    fn a_status_is_three_digits() {
        assert_eq!(status(&first_headers(&headers_frame(&[(":status", "200")]))), Ok(200));
        assert_eq!(status(&first_headers(&headers_frame(&[(":status", "501")]))), Ok(501));
        assert!(status(&first_headers(&headers_frame(&[(":status", "20")]))).is_err());
        assert!(status(&first_headers(&headers_frame(&[("server", "x")]))).is_err());
    }

    #[test]
    fn the_control_stream_opens_with_its_type_and_settings() {
        let bytes = control_stream_opening(true);
        assert_eq!(bytes[0], STREAM_CONTROL as u8);
        let mut reader = FrameReader::new(StreamRole::Control);
        let (piece, n) = reader.next(&bytes[1..]).unwrap().unwrap();
        assert_eq!(n, bytes.len() - 1);
        let Piece::Settings(settings) = piece else { panic!("{piece:?}") };
        assert!(settings.enable_connect_protocol);
        assert_eq!(settings.max_field_section_size, Some(MAX_FIELD_SECTION));
    }
}

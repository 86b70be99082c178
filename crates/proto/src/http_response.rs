//! An HTTP/1.1 response read whole from the start of a buffer: its status, whether the
//! connection stays open after it, and its body, framed by `Content-Length` or chunked
//! (RFC 9112 §6–7). A client that makes a plain HTTP request on a connection before it asks
//! for the WebSocket upgrade there (a protocol's negotiate step) reads the answer with it.
//! Sans-I/O: `Ok(None)` asks for more bytes; nothing past [`MAX_BODY_BYTES`] is read.

use std::borrow::Cow;

use crate::handshake::{DEFAULT_MAX_HEADER_BYTES, MAX_HEADERS, response_head};

/// The largest body read, in bytes: a negotiate answer is a few hundred.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// A whole response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response<'a> {
    pub status: u16,
    /// The body, chunks joined.
    pub body: Cow<'a, [u8]>,
    /// The bytes the response took (head and body).
    pub used: usize,
    /// The connection stays open for another request (HTTP/1.1 without `Connection: close`).
    pub keep_alive: bool,
}

/// Why bytes are no HTTP/1.1 response this reader takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResponseError {
    #[error("not an HTTP response: {0}")]
    Malformed(String),
    #[error("a response head past {0} bytes")]
    HeadTooLarge(usize),
    #[error("a response body past {0} bytes")]
    BodyTooLarge(usize),
    #[error("a response whose body has no length (neither Content-Length nor chunked)")]
    NoLength,
    #[error("a malformed chunk of a chunked body")]
    BadChunk,
}

/// Reads the response at the start of `buf`: `Ok(None)` while it is incomplete.
pub fn read(buf: &[u8]) -> Result<Option<Response<'_>>, ResponseError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let head = match response_head(&mut response, buf) {
        Ok(Some(n)) => n,
        Ok(None) => return Ok(None),
        Err(None) => return Err(ResponseError::HeadTooLarge(DEFAULT_MAX_HEADER_BYTES)),
        Err(Some(error)) => return Err(ResponseError::Malformed(error.to_string())),
    };
    let status = response.code.unwrap_or(0);
    let find = |name: &str| {
        response
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value.trim_ascii()).to_ascii_lowercase())
    };
    let connection = find("connection").unwrap_or_default();
    let keep_alive = match response.version {
        Some(1) => !connection.split(',').any(|token| token.trim() == "close"),
        _ => connection.split(',').any(|token| token.trim() == "keep-alive"),
    };
    let rest = &buf[head..];
    let framed = if find("transfer-encoding").is_some_and(|te| te.ends_with("chunked")) {
        chunked(rest)?.map(|(body, used)| (Cow::Owned(body), used))
    } else if let Some(length) = find("content-length") {
        let length: usize =
            length.parse().map_err(|_| ResponseError::Malformed("a bad Content-Length".into()))?;
        if length > MAX_BODY_BYTES {
            return Err(ResponseError::BodyTooLarge(MAX_BODY_BYTES));
        }
        (rest.len() >= length).then(|| (Cow::Borrowed(&rest[..length]), length))
    } else if status == 204 || status == 304 || (100..200).contains(&status) {
        Some((Cow::Borrowed(&rest[..0]), 0))
    } else {
        return Err(ResponseError::NoLength);
    };
    Ok(framed.map(|(body, used)| Response { status, body, used: head + used, keep_alive }))
}

/// A chunked body at the start of `buf`, joined, and the bytes it took (its trailer too).
fn chunked(buf: &[u8]) -> Result<Option<(Vec<u8>, usize)>, ResponseError> {
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        let Some(line_end) = find_crlf(&buf[at..]) else {
            return if buf.len() - at > 1024 { Err(ResponseError::BadChunk) } else { Ok(None) };
        };
        let line = std::str::from_utf8(&buf[at..at + line_end]).map_err(|_| ResponseError::BadChunk)?;
        let size = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16).map_err(|_| ResponseError::BadChunk)?;
        at += line_end + 2;
        if size == 0 {
            // Trailer fields, then the blank line.
            loop {
                let Some(end) = find_crlf(&buf[at..]) else { return Ok(None) };
                at += end + 2;
                if end == 0 {
                    return Ok(Some((body, at)));
                }
            }
        }
        if body.len() + size > MAX_BODY_BYTES {
            return Err(ResponseError::BodyTooLarge(MAX_BODY_BYTES));
        }
        if buf.len() < at + size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&buf[at..at + size]);
        if &buf[at + size..at + size + 2] != b"\r\n" {
            return Err(ResponseError::BadChunk);
        }
        at += size + 2;
    }
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_content_length_body_is_read_once_whole() {
        let whole = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloGET";
        for cut in 0..whole.len() - 3 {
            assert_eq!(read(&whole[..cut]), Ok(None), "cut at {cut}");
        }
        let response = read(whole).unwrap().unwrap();
        assert_eq!(
            (response.status, &*response.body, response.used, response.keep_alive),
            (200, &b"hello"[..], 43, true)
        );
    }

    #[test]
    fn a_chunked_body_is_joined_and_its_trailer_taken() {
        let whole = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n2;x=y\r\n\":\r\n1\r\n1\r\n3\r\n0}\n\r\n0\r\nX-T: 1\r\n\r\n";
        for cut in 0..whole.len() {
            assert_eq!(read(&whole[..cut]), Ok(None), "cut at {cut}");
        }
        let response = read(whole).unwrap().unwrap();
        assert_eq!((&*response.body, response.used), (&b"{\"a\":10}\n"[..], whole.len()));
    }

    #[test]
    fn connection_close_and_http_1_0_do_not_keep_the_connection() {
        let close =
            b"HTTP/1.1 401 Unauthorized\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n";
        assert!(!read(close).unwrap().unwrap().keep_alive);
        let old = b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n";
        assert!(!read(old).unwrap().unwrap().keep_alive);
        let old_kept = b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n";
        assert!(read(old_kept).unwrap().unwrap().keep_alive);
    }

    #[test]
    fn bad_framing_is_refused_by_its_cause() {
        assert_eq!(read(b"HTTP/1.1 200 OK\r\n\r\n{}"), Err(ResponseError::NoLength));
        let huge = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", MAX_BODY_BYTES + 1);
        assert_eq!(read(huge.as_bytes()), Err(ResponseError::BodyTooLarge(MAX_BODY_BYTES)));
        let bad = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
        assert_eq!(read(bad), Err(ResponseError::BadChunk));
        let unended = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY";
        assert_eq!(read(unended), Err(ResponseError::BadChunk));
        assert!(matches!(read(b"SSH-2.0-OpenSSH\r\n\r\n"), Err(ResponseError::Malformed(_))));
        assert!(matches!(
            read(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"),
            Err(ResponseError::Malformed(_))
        ));
    }

    #[test]
    fn a_bodiless_status_needs_no_length() {
        let response = read(b"HTTP/1.1 204 No Content\r\n\r\n").unwrap().unwrap();
        assert_eq!((response.status, response.body.len()), (204, 0));
    }
}

//! The incremental decoder of frames and heart-beats from a broker, and the typed views of
//! the frames a client expects. Decoding checks a frame's whole shape once (command, every
//! header line and its escapes, body, NUL) and remembers where its header block is; a
//! header's value is unescaped only when it is looked up, and borrowed when it has no escape.

use std::borrow::Cow;

use super::DecodeError;
use crate::json::parse_u64;

/// One thing read from the byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item<'a> {
    /// A bare end of line between frames: the broker's heart-beat.
    HeartBeat,
    Frame(Frame<'a>),
}

/// A frame, borrowing the decoder's input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    pub command: &'a str,
    /// The header lines, each ending with an end of line; checked when decoded.
    header_block: &'a str,
    pub body: &'a [u8],
}

/// A frame a client expects from a broker, with the headers that matter to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerFrame<'a> {
    /// `version` is absent from a STOMP 1.0 broker; `heart_beat` is (sx, sy) in ms.
    Connected {
        version: Option<Cow<'a, str>>,
        heart_beat: (u32, u32),
    },
    Message {
        destination: Cow<'a, str>,
        subscription: Cow<'a, str>,
        message_id: Cow<'a, str>,
        body: &'a [u8],
    },
    Receipt {
        receipt_id: Cow<'a, str>,
    },
    /// `message`: the broker's short description of the error, when it gave one.
    Error {
        message: Option<Cow<'a, str>>,
        body: &'a [u8],
    },
}

/// The header lines of a frame, in order, as (name, value) with escapes decoded.
#[derive(Debug, Clone)]
pub struct Headers<'a> {
    lines: std::str::Lines<'a>,
    escaped: bool,
}

impl<'a> Iterator for Headers<'a> {
    type Item = (Cow<'a, str>, Cow<'a, str>);

    fn next(&mut self) -> Option<Self::Item> {
        let line = self.lines.next()?;
        // Checked by the decoder: every line has a colon.
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        if self.escaped { Some((unescape(name), unescape(value))) } else { Some((name.into(), value.into())) }
    }
}

/// Decodes STOMP 1.2 escapes (checked valid by the decoder).
fn unescape(raw: &str) -> Cow<'_, str> {
    if !raw.contains('\\') {
        return Cow::Borrowed(raw);
    }
    let mut text = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            text.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => text.push('\n'),
            Some('r') => text.push('\r'),
            Some('c') => text.push(':'),
            Some(other) => text.push(other),
            None => {}
        }
    }
    Cow::Owned(text)
}

fn valid_escapes(value: &[u8]) -> bool {
    let mut bytes = value.iter();
    while let Some(&byte) = bytes.next() {
        if byte == b'\\' && !matches!(bytes.next(), Some(b'n' | b'r' | b'c' | b'\\')) {
            return false;
        }
    }
    true
}

/// CONNECT and CONNECTED keep 1.0's unescaped headers.
fn escapes_headers(command: &str) -> bool {
    !matches!(command, "CONNECT" | "CONNECTED")
}

impl<'a> Frame<'a> {
    /// Every header line in order (a repeated header appears as often as it was sent).
    pub fn headers(&self) -> Headers<'a> {
        Headers { lines: self.header_block.lines(), escaped: escapes_headers(self.command) }
    }

    /// The value of header `name`; the first one when it is repeated, as STOMP says.
    pub fn header(&self, name: &str) -> Option<Cow<'a, str>> {
        let escaped = escapes_headers(self.command);
        self.header_block.lines().find_map(|line| {
            let (raw_name, value) = line.split_once(':').unwrap_or((line, ""));
            // Only the value of the header asked for is unescaped.
            let matches = if escaped && raw_name.contains('\\') {
                unescape(raw_name) == name
            } else {
                raw_name == name
            };
            matches.then(|| if escaped { unescape(value) } else { Cow::Borrowed(value) })
        })
    }

    fn required(&self, command: &'static str, header: &'static str) -> Result<Cow<'a, str>, DecodeError> {
        self.header(header).ok_or(DecodeError::MissingHeader { command, header })
    }

    /// The frame as one a broker sends a client, with its required headers.
    pub fn server_frame(&self) -> Result<ServerFrame<'a>, DecodeError> {
        match self.command {
            "CONNECTED" => {
                let heart_beat = match self.header("heart-beat") {
                    None => (0, 0),
                    Some(value) => {
                        parse_heart_beat(&value).ok_or(DecodeError::Malformed("heart-beat header"))?
                    }
                };
                Ok(ServerFrame::Connected { version: self.header("version"), heart_beat })
            }
            "MESSAGE" => Ok(ServerFrame::Message {
                destination: self.required("MESSAGE", "destination")?,
                subscription: self.required("MESSAGE", "subscription")?,
                message_id: self.required("MESSAGE", "message-id")?,
                body: self.body,
            }),
            "RECEIPT" => Ok(ServerFrame::Receipt { receipt_id: self.required("RECEIPT", "receipt-id")? }),
            "ERROR" => Ok(ServerFrame::Error { message: self.header("message"), body: self.body }),
            other => Err(DecodeError::UnexpectedCommand(other.to_owned())),
        }
    }
}

fn parse_heart_beat(value: &str) -> Option<(u32, u32)> {
    let (x, y) = value.split_once(',')?;
    let parse = |n: &str| parse_u64(n.trim().as_bytes()).and_then(|n| u32::try_from(n).ok());
    Some((parse(x)?, parse(y)?))
}

/// Decodes frames of one connection, refusing any over `max_frame` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoder {
    max_frame: usize,
}

/// The end of the line starting at `from`: (end of its text, start of the next line).
fn line_end(buf: &[u8], from: usize) -> Option<(usize, usize)> {
    let newline = from + buf.get(from..)?.iter().position(|&b| b == b'\n')?;
    let end = if newline > from && buf[newline - 1] == b'\r' { newline - 1 } else { newline };
    Some((end, newline + 1))
}

/// End-of-line bytes at `at`: 0 when none, `None` when a lone CR may yet become CRLF.
fn eol_len(buf: &[u8], at: usize) -> Option<usize> {
    match (buf.get(at), buf.get(at + 1)) {
        (Some(b'\n'), _) => Some(1),
        (Some(b'\r'), Some(b'\n')) => Some(2),
        (Some(b'\r'), None) => None,
        _ => Some(0),
    }
}

impl Decoder {
    /// See [`super::DEFAULT_MAX_FRAME`].
    pub fn new(max_frame: usize) -> Self {
        Decoder { max_frame }
    }

    fn too_large(&self, size: usize) -> DecodeError {
        DecodeError::FrameTooLarge { size, limit: self.max_frame }
    }

    /// `Ok(None)` for "need more bytes" unless what is buffered already exceeds the limit.
    fn incomplete<T>(&self, buffered: usize) -> Result<Option<T>, DecodeError> {
        if buffered > self.max_frame { Err(self.too_large(buffered)) } else { Ok(None) }
    }

    /// Decodes the heart-beat or frame at the start of `buf`: the item and the bytes it took
    /// (a frame takes the ends of line that follow its NUL), or `Ok(None)` for more bytes.
    pub fn decode<'a>(&self, buf: &'a [u8]) -> Result<Option<(Item<'a>, usize)>, DecodeError> {
        match eol_len(buf, 0) {
            None => return Ok(None),
            Some(0) => {}
            Some(eol) => return Ok(Some((Item::HeartBeat, eol))),
        }
        if buf.is_empty() {
            return Ok(None);
        }
        let Some((command_end, mut at)) = line_end(buf, 0) else { return self.incomplete(buf.len()) };
        let command =
            std::str::from_utf8(&buf[..command_end]).map_err(|_| DecodeError::Malformed("command"))?;
        if command.is_empty() || !command.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(DecodeError::Malformed("command"));
        }
        let headers_start = at;
        let mut content_length = None;
        loop {
            let Some((end, next)) = line_end(buf, at) else { return self.incomplete(buf.len()) };
            if end == at {
                break;
            }
            let line = &buf[at..end];
            let colon = line
                .iter()
                .position(|&b| b == b':')
                .ok_or(DecodeError::Malformed("header without a colon"))?;
            if escapes_headers(command) && !valid_escapes(line) {
                return Err(DecodeError::Malformed("header escape"));
            }
            if content_length.is_none() && &line[..colon] == b"content-length" {
                let length = parse_u64(line[colon + 1..].trim_ascii()).and_then(|n| usize::try_from(n).ok());
                content_length = Some(length.ok_or(DecodeError::Malformed("content-length"))?);
            }
            at = next;
        }
        let header_block = std::str::from_utf8(&buf[headers_start..at])
            .map_err(|_| DecodeError::Malformed("header is not UTF-8"))?;
        let (_, body_start) = line_end(buf, at).unwrap_or((at, at + 1));
        let Some(nul) = self.find_nul(buf, body_start, content_length)? else { return Ok(None) };
        let mut used = nul + 1;
        loop {
            match eol_len(buf, used) {
                Some(0) | None => break,
                Some(eol) => used += eol,
            }
        }
        let frame = Frame { command, header_block, body: &buf[body_start..nul] };
        Ok(Some((Item::Frame(frame), used)))
    }

    /// Where the body's NUL is: after `content-length` bytes, or the first NUL.
    fn find_nul(
        &self,
        buf: &[u8],
        body_start: usize,
        length: Option<usize>,
    ) -> Result<Option<usize>, DecodeError> {
        match length {
            Some(length) => {
                let nul = body_start.saturating_add(length);
                if nul >= self.max_frame {
                    return Err(self.too_large(nul.saturating_add(1)));
                }
                match buf.get(nul) {
                    None => Ok(None),
                    Some(0) => Ok(Some(nul)),
                    Some(_) => Err(DecodeError::Malformed("no NUL after content-length bytes")),
                }
            }
            None => match buf.get(body_start..).unwrap_or_default().iter().position(|&b| b == 0) {
                Some(n) if body_start + n >= self.max_frame => Err(self.too_large(body_start + n + 1)),
                Some(n) => Ok(Some(body_start + n)),
                None => self.incomplete(buf.len()),
            },
        }
    }
}

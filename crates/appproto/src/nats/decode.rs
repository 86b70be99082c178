//! The incremental decoder of what a NATS server sends: one operation at the start of the
//! bytes handed in, or `Ok(None)` while its control line or payload is still incomplete.

use super::{DEFAULT_MAX_PAYLOAD, DecodeError, MAX_CONTROL_LINE};
use crate::json::parse_u64;

/// One operation from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerOp<'a> {
    /// INFO and its JSON (read with [`Info::parse`]).
    Info(&'a str),
    /// MSG or HMSG: a message on a subscription.
    Msg(Msg<'a>),
    Ping,
    Pong,
    /// `+OK` (only a `verbose` connection gets them).
    Ok,
    /// `-ERR` and the server's words, without their quotes.
    Err(&'a str),
}

/// A message delivered on subscription `sid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Msg<'a> {
    pub subject: &'a str,
    pub sid: u64,
    /// Where the publisher wants its answer (a request's inbox).
    pub reply_to: Option<&'a str>,
    /// HMSG's header block (`NATS/1.0 …` and its lines, the blank line included).
    pub headers: Option<&'a [u8]>,
    pub payload: &'a [u8],
}

/// What INFO says that a client acts on; every other field is ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(default)]
pub struct Info {
    /// The largest payload the server takes or sends.
    pub max_payload: Option<u64>,
    /// Whether the server takes headers (HPUB, HMSG, no-responders statuses).
    pub headers: bool,
    /// Whether CONNECT must carry credentials.
    pub auth_required: bool,
}

impl Info {
    /// INFO's JSON read.
    pub fn parse(json: &str) -> Result<Info, serde_json::Error> {
        serde_json::from_str(json)
    }
}

/// The server operations, as their control lines begin (matched without regard to case).
const OPS: [&str; 7] = ["INFO", "MSG", "HMSG", "PING", "PONG", "+OK", "-ERR"];

/// How much of an unknown operation an error quotes.
const QUOTED: usize = 32;

/// Decodes server operations, payloads bounded by its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoder {
    max_payload: usize,
}

impl Default for Decoder {
    fn default() -> Decoder {
        Decoder::new(DEFAULT_MAX_PAYLOAD)
    }
}

impl Decoder {
    /// A decoder taking payloads of at most `max_payload` bytes.
    pub fn new(max_payload: usize) -> Decoder {
        Decoder { max_payload }
    }

    /// The limit INFO announced.
    pub fn set_max_payload(&mut self, max_payload: usize) {
        self.max_payload = max_payload;
    }

    /// The operation at the start of `buf` and the bytes it took, `Ok(None)` when more bytes
    /// are needed, or why `buf` cannot be NATS from a server.
    pub fn decode<'a>(&self, buf: &'a [u8]) -> Result<Option<(ServerOp<'a>, usize)>, DecodeError> {
        let window = &buf[..buf.len().min(MAX_CONTROL_LINE + 2)];
        let Some(end) = window.iter().position(|&b| b == b'\n') else {
            if buf.len() > MAX_CONTROL_LINE {
                return Err(DecodeError::ControlLineTooLong { limit: MAX_CONTROL_LINE });
            }
            return match may_begin_an_op(buf) {
                true => Ok(None),
                false => Err(unknown(buf)),
            };
        };
        let line = &buf[..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let after_line = end + 1;
        let (op, args) = match line.iter().position(|&b| b == b' ' || b == b'\t') {
            Some(space) => (&line[..space], trim(&line[space + 1..])),
            None => (line, &line[line.len()..]),
        };
        let is = |name: &str| op.eq_ignore_ascii_case(name.as_bytes());
        let no_args = |found: ServerOp<'a>| match args.is_empty() {
            true => Ok(Some((found, after_line))),
            false => Err(DecodeError::Malformed {
                op: "control line",
                problem: "arguments after PING, PONG or +OK",
            }),
        };
        if is("MSG") {
            self.message(buf, args, after_line, false)
        } else if is("HMSG") {
            self.message(buf, args, after_line, true)
        } else if is("PING") {
            no_args(ServerOp::Ping)
        } else if is("PONG") {
            no_args(ServerOp::Pong)
        } else if is("+OK") {
            no_args(ServerOp::Ok)
        } else if is("-ERR") {
            let words = std::str::from_utf8(args)
                .map_err(|_| DecodeError::Malformed { op: "-ERR", problem: "its text is not UTF-8" })?;
            let words = words.strip_prefix('\'').and_then(|w| w.strip_suffix('\'')).unwrap_or(words);
            Ok(Some((ServerOp::Err(words), after_line)))
        } else if is("INFO") {
            let json = std::str::from_utf8(args)
                .map_err(|_| DecodeError::Malformed { op: "INFO", problem: "its JSON is not UTF-8" })?;
            Ok(Some((ServerOp::Info(json), after_line)))
        } else {
            Err(unknown(line))
        }
    }

    /// MSG (`subject sid [reply] size`) or HMSG (`subject sid [reply] header-size
    /// total-size`) whose control line ends at `after_line`.
    fn message<'a>(
        &self,
        buf: &'a [u8],
        args: &'a [u8],
        after_line: usize,
        headers: bool,
    ) -> Result<Option<(ServerOp<'a>, usize)>, DecodeError> {
        let op = if headers { "HMSG" } else { "MSG" };
        let malformed = |problem| DecodeError::Malformed { op, problem };
        let mut fields = [&args[..0]; 5];
        let mut count = 0;
        for field in args.split(|&b| b == b' ' || b == b'\t').filter(|field| !field.is_empty()) {
            if count == fields.len() {
                return Err(malformed("too many arguments"));
            }
            fields[count] = field;
            count += 1;
        }
        let sizes = if headers { 2 } else { 1 };
        let reply_to = match count.checked_sub(2 + sizes) {
            Some(0) => None,
            Some(1) => Some(text(fields[2]).ok_or(malformed("its reply subject is not UTF-8"))?),
            _ => return Err(malformed("too few or too many arguments")),
        };
        let subject = text(fields[0]).ok_or(malformed("its subject is not UTF-8"))?;
        let sid = parse_u64(fields[1]).ok_or(malformed("its subscription id is not a number"))?;
        let size_of = |field: &[u8]| parse_u64(field).and_then(|n| usize::try_from(n).ok());
        let total = size_of(fields[count - 1]).ok_or(malformed("its size is not a number"))?;
        let header_size = match headers {
            true => size_of(fields[count - 2]).ok_or(malformed("its header size is not a number"))?,
            false => 0,
        };
        if header_size > total {
            return Err(malformed("its header size is over its total size"));
        }
        if total > self.max_payload {
            return Err(DecodeError::PayloadTooLarge { size: total, limit: self.max_payload });
        }
        let Some(body) = buf.get(after_line..after_line + total + 2) else { return Ok(None) };
        if !body.ends_with(b"\r\n") {
            return Err(malformed("its payload is not followed by CRLF where its size says"));
        }
        let msg = Msg {
            subject,
            sid,
            reply_to,
            headers: headers.then(|| &body[..header_size]),
            payload: &body[header_size..total],
        };
        Ok(Some((ServerOp::Msg(msg), after_line + total + 2)))
    }
}

/// Whether `partial`, a control line without its end yet, can begin a server operation.
fn may_begin_an_op(partial: &[u8]) -> bool {
    let partial = partial.strip_suffix(b"\r").unwrap_or(partial);
    match partial.iter().position(|&b| b == b' ' || b == b'\t') {
        Some(space) => OPS.iter().any(|op| partial[..space].eq_ignore_ascii_case(op.as_bytes())),
        None => OPS.iter().any(|op| {
            op.len() >= partial.len() && op.as_bytes()[..partial.len()].eq_ignore_ascii_case(partial)
        }),
    }
}

fn unknown(bytes: &[u8]) -> DecodeError {
    let quoted = String::from_utf8_lossy(&bytes[..bytes.len().min(QUOTED)]);
    match bytes.len() > QUOTED {
        true => DecodeError::UnknownOperation(format!("{quoted}…")),
        false => DecodeError::UnknownOperation(quoted.into_owned()),
    }
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|&b| b != b' ' && b != b'\t').unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|&b| b != b' ' && b != b'\t').map_or(start, |at| at + 1);
    &bytes[start..end.max(start)]
}

fn text(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes).ok()
}

//! HTTP/3 frames (RFC 9114 §7) on one stream, read as they arrive: a [`FrameReader`] takes
//! bytes from the front of a stream's buffer and gives DATA payloads piece by piece (a large
//! WebSocket message is never held whole), HEADERS blocks and SETTINGS whole (bounded), and
//! skips frame types it does not know, as the RFC asks. Which frames a stream may carry is
//! checked here (SETTINGS first and once on the control stream, no DATA there, no SETTINGS
//! on a request stream). Writers append frames to an output buffer.

use super::error::{Code, Error};
use super::varint;

pub const DATA: u64 = 0x0;
pub const HEADERS: u64 = 0x1;
pub const CANCEL_PUSH: u64 = 0x3;
pub const SETTINGS: u64 = 0x4;
pub const PUSH_PROMISE: u64 = 0x5;
pub const GOAWAY: u64 = 0x7;
pub const MAX_PUSH_ID: u64 = 0xd;

/// SETTINGS_QPACK_MAX_TABLE_CAPACITY (RFC 9204 §5).
pub const SETTING_QPACK_MAX_TABLE_CAPACITY: u64 = 0x1;
/// SETTINGS_MAX_FIELD_SECTION_SIZE (RFC 9114 §7.2.4.1).
pub const SETTING_MAX_FIELD_SECTION_SIZE: u64 = 0x6;
/// SETTINGS_QPACK_BLOCKED_STREAMS (RFC 9204 §5).
pub const SETTING_QPACK_BLOCKED_STREAMS: u64 = 0x7;
/// SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 9220 §3): the peer accepts extended CONNECT.
pub const SETTING_ENABLE_CONNECT_PROTOCOL: u64 = 0x8;

/// The most bytes of a HEADERS, SETTINGS or GOAWAY frame held to be parsed whole.
pub const DEFAULT_LIMIT: usize = 64 * 1024;

/// The settings a peer sent that this codec acts on (others are ignored, as RFC 9114 asks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settings {
    pub enable_connect_protocol: bool,
    pub max_field_section_size: Option<u64>,
    pub qpack_max_table_capacity: u64,
    pub qpack_blocked_streams: u64,
}

impl Settings {
    /// Appends this as a SETTINGS frame (zero-valued QPACK settings left out: 0 is their
    /// default).
    pub fn put(&self, out: &mut Vec<u8>) {
        let mut payload = Vec::new();
        let mut pair = |id: u64, value: u64| {
            varint::put(id, &mut payload);
            varint::put(value, &mut payload);
        };
        if self.qpack_max_table_capacity > 0 {
            pair(SETTING_QPACK_MAX_TABLE_CAPACITY, self.qpack_max_table_capacity);
        }
        if let Some(size) = self.max_field_section_size {
            pair(SETTING_MAX_FIELD_SECTION_SIZE, size);
        }
        if self.qpack_blocked_streams > 0 {
            pair(SETTING_QPACK_BLOCKED_STREAMS, self.qpack_blocked_streams);
        }
        if self.enable_connect_protocol {
            pair(SETTING_ENABLE_CONNECT_PROTOCOL, 1);
        }
        put_frame(SETTINGS, &payload, out);
    }

    /// Parses a SETTINGS frame's payload.
    pub fn parse(mut payload: &[u8]) -> Result<Settings, Error> {
        let mut settings = Settings::default();
        let mut seen: Vec<u64> = Vec::new();
        while !payload.is_empty() {
            let cut = || Error::new(Code::FrameError, "a SETTINGS frame ends inside a setting");
            let (id, a) = varint::get(payload).ok_or_else(cut)?;
            let (value, b) = varint::get(&payload[a..]).ok_or_else(cut)?;
            payload = &payload[a + b..];
            if (0x2..=0x5).contains(&id) {
                return Err(Error::new(Code::SettingsError, "an HTTP/2 setting in HTTP/3 SETTINGS"));
            }
            if seen.contains(&id) {
                return Err(Error::new(Code::SettingsError, "a setting sent twice"));
            }
            seen.push(id);
            match id {
                SETTING_QPACK_MAX_TABLE_CAPACITY => settings.qpack_max_table_capacity = value,
                SETTING_MAX_FIELD_SECTION_SIZE => settings.max_field_section_size = Some(value),
                SETTING_QPACK_BLOCKED_STREAMS => settings.qpack_blocked_streams = value,
                SETTING_ENABLE_CONNECT_PROTOCOL if value > 1 => {
                    let what = "SETTINGS_ENABLE_CONNECT_PROTOCOL neither 0 nor 1";
                    return Err(Error::new(Code::SettingsError, what));
                }
                SETTING_ENABLE_CONNECT_PROTOCOL => settings.enable_connect_protocol = value == 1,
                _ => {}
            }
        }
        Ok(settings)
    }
}

/// Appends a frame of type `kind` with `payload`.
pub fn put_frame(kind: u64, payload: &[u8], out: &mut Vec<u8>) {
    put_head(kind, payload.len() as u64, out);
    out.extend_from_slice(payload);
}

/// Appends a frame's type and length, its payload to follow.
pub fn put_head(kind: u64, len: u64, out: &mut Vec<u8>) {
    varint::put(kind, out);
    varint::put(len, out);
}

/// What a stream carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamRole {
    /// The peer's control stream (its type byte already taken).
    Control,
    /// A request stream: an extended CONNECT and the WebSocket's bytes.
    Request,
}

/// A piece of a stream, as [`FrameReader::next`] gives them.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Bytes of a DATA frame's payload (a frame may come in several pieces).
    Data(&'a [u8]),
    /// A whole HEADERS frame's field section (QPACK-encoded).
    Headers(&'a [u8]),
    Settings(Settings),
    /// GOAWAY with the stream ID after which the peer takes no more requests.
    Goaway(u64),
    /// Bytes of a frame that is skipped (a type this codec does not use).
    Skipped,
}

/// Reads one stream's frames.
#[derive(Debug, Clone)]
pub struct FrameReader {
    role: StreamRole,
    /// Payload bytes of the current DATA frame still to come.
    data_left: u64,
    /// Payload bytes of a skipped frame still to come.
    skip_left: u64,
    limit: usize,
    settings_seen: bool,
}

impl FrameReader {
    pub fn new(role: StreamRole) -> FrameReader {
        FrameReader::with_limit(role, DEFAULT_LIMIT)
    }

    /// A reader holding at most `limit` bytes of a frame parsed whole.
    pub fn with_limit(role: StreamRole, limit: usize) -> FrameReader {
        FrameReader { role, data_left: 0, skip_left: 0, limit, settings_seen: false }
    }

    /// Whether the stream may end here (not inside a frame).
    pub fn at_boundary(&self) -> bool {
        self.data_left == 0 && self.skip_left == 0
    }

    /// The next piece at the front of `buf` and the bytes it took, `None` when `buf` holds
    /// too little of it yet.
    pub fn next<'a>(&mut self, buf: &'a [u8]) -> Result<Option<(Piece<'a>, usize)>, Error> {
        if self.data_left > 0 || self.skip_left > 0 {
            return Ok(self.continue_payload(buf));
        }
        let Some((kind, a)) = varint::get(buf) else { return Ok(None) };
        let Some((len, b)) = varint::get(&buf[a..]) else { return Ok(None) };
        let head = a + b;
        self.check_allowed(kind)?;
        let rest = &buf[head..];
        match kind {
            DATA => {
                let n = rest.len().min(usize::try_from(len).unwrap_or(usize::MAX));
                self.data_left = len - n as u64;
                Ok(Some((Piece::Data(&rest[..n]), head + n)))
            }
            HEADERS | SETTINGS | GOAWAY => {
                if len > self.limit as u64 {
                    return Err(Error::new(Code::ExcessiveLoad, "a frame larger than the limit"));
                }
                let len = len as usize;
                if rest.len() < len {
                    return Ok(None);
                }
                let piece = self.whole(kind, &rest[..len])?;
                self.settings_seen |= kind == SETTINGS;
                Ok(Some((piece, head + len)))
            }
            _ => {
                let n = rest.len().min(usize::try_from(len).unwrap_or(usize::MAX));
                self.skip_left = len - n as u64;
                Ok(Some((Piece::Skipped, head + n)))
            }
        }
    }

    fn continue_payload<'a>(&mut self, buf: &'a [u8]) -> Option<(Piece<'a>, usize)> {
        if buf.is_empty() {
            return None;
        }
        let take = |left: &mut u64| {
            let n = buf.len().min(usize::try_from(*left).unwrap_or(usize::MAX));
            *left -= n as u64;
            n
        };
        if self.data_left > 0 {
            let n = take(&mut self.data_left);
            Some((Piece::Data(&buf[..n]), n))
        } else {
            Some((Piece::Skipped, take(&mut self.skip_left)))
        }
    }

    fn check_allowed(&self, kind: u64) -> Result<(), Error> {
        let unexpected = |what| Err(Error::new(Code::FrameUnexpected, what));
        if matches!(kind, 0x2 | 0x6 | 0x8 | 0x9) {
            return unexpected("an HTTP/2 frame type");
        }
        match self.role {
            StreamRole::Control => {
                if !self.settings_seen && kind != SETTINGS {
                    let what = "the control stream does not open with SETTINGS";
                    return Err(Error::new(Code::MissingSettings, what));
                }
                match kind {
                    SETTINGS if self.settings_seen => unexpected("a second SETTINGS frame"),
                    DATA | HEADERS => unexpected("DATA or HEADERS on the control stream"),
                    PUSH_PROMISE => unexpected("PUSH_PROMISE on the control stream"),
                    _ => Ok(()),
                }
            }
            StreamRole::Request => match kind {
                SETTINGS | GOAWAY | CANCEL_PUSH | MAX_PUSH_ID => {
                    unexpected("a control frame on a request stream")
                }
                PUSH_PROMISE => Err(Error::new(Code::IdError, "PUSH_PROMISE though no push was allowed")),
                _ => Ok(()),
            },
        }
    }

    fn whole<'a>(&self, kind: u64, payload: &'a [u8]) -> Result<Piece<'a>, Error> {
        match kind {
            HEADERS => Ok(Piece::Headers(payload)),
            SETTINGS => Settings::parse(payload).map(Piece::Settings),
            _ => match varint::get(payload) {
                Some((id, n)) if n == payload.len() => Ok(Piece::Goaway(id)),
                _ => Err(Error::new(Code::FrameError, "a GOAWAY frame that is not one integer")),
            },
        }
    }
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;

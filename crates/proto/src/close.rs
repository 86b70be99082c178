//! Close codes (RFC 6455 §7.4) and the close frame's payload: a 2-byte code and a UTF-8
//! reason. Which codes a peer may send is decided here once, for the server and the client.

use crate::ProtocolError;

/// Close codes wsbench sends or counts by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CloseCode;

impl CloseCode {
    pub const NORMAL: u16 = 1000;
    pub const GOING_AWAY: u16 = 1001;
    pub const PROTOCOL_ERROR: u16 = 1002;
    pub const UNSUPPORTED_DATA: u16 = 1003;
    pub const INVALID_PAYLOAD: u16 = 1007;
    pub const POLICY_VIOLATION: u16 = 1008;
    pub const MESSAGE_TOO_BIG: u16 = 1009;
    pub const INTERNAL_ERROR: u16 = 1011;
    /// The server is restarting: reconnect (IANA WebSocket Close Code registry).
    pub const SERVICE_RESTART: u16 = 1012;
    /// The server is overloaded: reconnect later.
    pub const TRY_AGAIN_LATER: u16 = 1013;
}

/// Whether a peer may put `code` on the wire: 1000–1003, 1007–1014 and the registered and
/// private ranges 3000–4999. 1005, 1006 and 1015 are reserved for local use only.
pub fn is_valid_close_code(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999)
}

/// Splits a close payload into its code and reason; `None` for an empty payload.
pub fn parse_close_payload(payload: &[u8]) -> Result<Option<(u16, &str)>, ProtocolError> {
    match payload.len() {
        0 => Ok(None),
        1 => Err(ProtocolError::CloseTooShort),
        _ => {
            let code = u16::from_be_bytes([payload[0], payload[1]]);
            if !is_valid_close_code(code) {
                return Err(ProtocolError::InvalidCloseCode(code));
            }
            let reason = std::str::from_utf8(&payload[2..]).map_err(|_| ProtocolError::InvalidCloseReason)?;
            Ok(Some((code, reason)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_and_invalid_codes() {
        for code in [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 3999, 4000, 4999] {
            assert!(is_valid_close_code(code), "{code}");
        }
        for code in [0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535] {
            assert!(!is_valid_close_code(code), "{code}");
        }
    }

    #[test]
    fn payload_parsing() {
        assert_eq!(parse_close_payload(b""), Ok(None));
        assert_eq!(parse_close_payload(b"\x03"), Err(ProtocolError::CloseTooShort));
        assert_eq!(parse_close_payload(b"\x03\xe8bye"), Ok(Some((1000, "bye"))));
        assert_eq!(parse_close_payload(b"\x03\xed"), Err(ProtocolError::InvalidCloseCode(1005)));
        assert_eq!(parse_close_payload(b"\x03\xe8\xff"), Err(ProtocolError::InvalidCloseReason));
    }
}

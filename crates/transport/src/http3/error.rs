//! HTTP/3's error codes (RFC 9114 §8.1, RFC 9204 §6) and the codec's error: each names the
//! code a connection is closed with and, for counting failures by cause, a short
//! lower-case name (`h3_frame_error`).

use std::fmt;

/// An HTTP/3 or QPACK error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    NoError,
    GeneralProtocolError,
    InternalError,
    StreamCreationError,
    ClosedCriticalStream,
    FrameUnexpected,
    FrameError,
    ExcessiveLoad,
    IdError,
    SettingsError,
    MissingSettings,
    RequestRejected,
    RequestCancelled,
    RequestIncomplete,
    MessageError,
    ConnectError,
    VersionFallback,
    QpackDecompressionFailed,
    QpackEncoderStreamError,
    QpackDecoderStreamError,
}

/// Every code with its value and name, in value order.
const CODES: &[(Code, u64, &str)] = &[
    (Code::NoError, 0x100, "h3_no_error"),
    (Code::GeneralProtocolError, 0x101, "h3_general_protocol_error"),
    (Code::InternalError, 0x102, "h3_internal_error"),
    (Code::StreamCreationError, 0x103, "h3_stream_creation_error"),
    (Code::ClosedCriticalStream, 0x104, "h3_closed_critical_stream"),
    (Code::FrameUnexpected, 0x105, "h3_frame_unexpected"),
    (Code::FrameError, 0x106, "h3_frame_error"),
    (Code::ExcessiveLoad, 0x107, "h3_excessive_load"),
    (Code::IdError, 0x108, "h3_id_error"),
    (Code::SettingsError, 0x109, "h3_settings_error"),
    (Code::MissingSettings, 0x10a, "h3_missing_settings"),
    (Code::RequestRejected, 0x10b, "h3_request_rejected"),
    (Code::RequestCancelled, 0x10c, "h3_request_cancelled"),
    (Code::RequestIncomplete, 0x10d, "h3_request_incomplete"),
    (Code::MessageError, 0x10e, "h3_message_error"),
    (Code::ConnectError, 0x10f, "h3_connect_error"),
    (Code::VersionFallback, 0x110, "h3_version_fallback"),
    (Code::QpackDecompressionFailed, 0x200, "qpack_decompression_failed"),
    (Code::QpackEncoderStreamError, 0x201, "qpack_encoder_stream_error"),
    (Code::QpackDecoderStreamError, 0x202, "qpack_decoder_stream_error"),
];

impl Code {
    /// The value carried in a QUIC CONNECTION_CLOSE or RESET_STREAM frame.
    pub fn value(self) -> u64 {
        CODES.iter().find(|(code, ..)| *code == self).map_or(0x102, |(_, value, _)| *value)
    }

    /// Its name in RFC 9114 / RFC 9204, lower case (`h3_frame_error`).
    pub fn name(self) -> &'static str {
        CODES.iter().find(|(code, ..)| *code == self).map_or("h3_internal_error", |(.., name)| name)
    }

    /// The code with value `value`, if HTTP/3 or QPACK defines it.
    pub fn from_value(value: u64) -> Option<Code> {
        CODES.iter().find(|(_, v, _)| *v == value).map(|(code, ..)| *code)
    }
}

/// Why the codec refused what a peer sent: the code to close with and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: Code,
    pub what: &'static str,
}

impl Error {
    pub fn new(code: Code, what: &'static str) -> Error {
        Error { code, what }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.what, self.code.name())
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_through_their_values() {
        for (code, value, name) in CODES {
            assert_eq!(code.value(), *value);
            assert_eq!(code.name(), *name);
            assert_eq!(Code::from_value(*value), Some(*code));
        }
        assert_eq!(Code::from_value(0x99), None);
        let error = Error::new(Code::FrameError, "a DATA frame on the control stream");
        assert_eq!(error.to_string(), "a DATA frame on the control stream (h3_frame_error)");
    }
}

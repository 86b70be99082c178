//! Typed errors of the codec. A [`ProtocolError`] fails the connection and knows which close
//! code to send; a [`HandshakeError`] knows which HTTP status to answer with.

/// A frame-level violation of RFC 6455; the connection must be failed with [`Self::close_code`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    #[error("reserved bits {0:#05b} set without a negotiated extension")]
    ReservedBits(u8),
    #[error("reserved opcode {0:#x}")]
    ReservedOpcode(u8),
    #[error("control frame payload of {0} bytes exceeds 125")]
    ControlFrameTooLong(u64),
    #[error("control frame is fragmented")]
    FragmentedControlFrame,
    #[error("continuation frame without a message in progress")]
    UnexpectedContinuation,
    #[error("new data frame while a fragmented message is in progress")]
    ExpectedContinuation,
    #[error("client frame is not masked")]
    UnmaskedClientFrame,
    #[error("server frame is masked")]
    MaskedServerFrame,
    #[error("64-bit payload length has its most significant bit set")]
    InvalidLength,
    #[error("message of {size} bytes exceeds the limit of {limit} bytes")]
    MessageTooBig { size: u64, limit: u64 },
    #[error("text message is not valid UTF-8")]
    InvalidUtf8,
    #[error("close frame payload of 1 byte")]
    CloseTooShort,
    #[error("invalid close code {0}")]
    InvalidCloseCode(u16),
    #[error("close reason is not valid UTF-8")]
    InvalidCloseReason,
    #[error("compressed message inflates to more than the limit of {limit} bytes")]
    InflatedTooBig { limit: u64 },
    #[error("compressed message is not valid deflate data")]
    InvalidDeflateData,
    #[error(transparent)]
    OverBudget(#[from] crate::OverBudget),
}

impl ProtocolError {
    /// The close code that fails the connection for this error (RFC 6455 §7.4.1).
    pub fn close_code(&self) -> u16 {
        match self {
            ProtocolError::InvalidUtf8 | ProtocolError::InvalidCloseReason => 1007,
            ProtocolError::MessageTooBig { .. }
            | ProtocolError::InflatedTooBig { .. }
            | ProtocolError::OverBudget(_) => 1009,
            _ => 1002,
        }
    }

    /// The rule that broke, in a word a report can count by (`masked_server_frame`,
    /// `message_too_big`, …): with [`Self::close_code`] it names the failure.
    pub fn rule(&self) -> &'static str {
        match self {
            ProtocolError::ReservedBits(_) => "reserved_bits",
            ProtocolError::ReservedOpcode(_) => "reserved_opcode",
            ProtocolError::ControlFrameTooLong(_) => "control_frame_too_long",
            ProtocolError::FragmentedControlFrame => "fragmented_control_frame",
            ProtocolError::UnexpectedContinuation => "unexpected_continuation",
            ProtocolError::ExpectedContinuation => "expected_continuation",
            ProtocolError::UnmaskedClientFrame => "unmasked_client_frame",
            ProtocolError::MaskedServerFrame => "masked_server_frame",
            ProtocolError::InvalidLength => "invalid_length",
            ProtocolError::MessageTooBig { .. }
            | ProtocolError::InflatedTooBig { .. }
            | ProtocolError::OverBudget(_) => "message_too_big",
            ProtocolError::InvalidUtf8 => "invalid_utf8",
            ProtocolError::CloseTooShort => "close_too_short",
            ProtocolError::InvalidCloseCode(_) => "invalid_close_code",
            ProtocolError::InvalidCloseReason => "invalid_close_reason",
            ProtocolError::InvalidDeflateData => "invalid_deflate_data",
        }
    }
}

impl From<crate::deflate::DeflateError> for ProtocolError {
    /// A received message that does not inflate (the other errors are the negotiation's
    /// and never come from a message).
    fn from(error: crate::deflate::DeflateError) -> ProtocolError {
        use crate::deflate::DeflateError;
        match error {
            DeflateError::TooBig { limit } => ProtocolError::InflatedTooBig { limit },
            DeflateError::OverBudget(over) => ProtocolError::OverBudget(over),
            _ => ProtocolError::InvalidDeflateData,
        }
    }
}

/// Why an HTTP upgrade request or response was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    #[error("request header larger than {0} bytes")]
    HeaderTooLarge(usize),
    #[error("more than {0} header fields")]
    TooManyHeaders(usize),
    #[error("malformed HTTP: {0}")]
    Malformed(&'static str),
    #[error("bad upgrade request: {0}")]
    BadUpgrade(&'static str),
    #[error("unsupported Sec-WebSocket-Version (only 13 is supported)")]
    UnsupportedVersion,
    #[error("server answered the upgrade with HTTP {0}")]
    UnexpectedStatus(u16),
    #[error("server's Sec-WebSocket-Accept does not match the key sent")]
    BadAccept,
}

impl HandshakeError {
    /// The HTTP status a server answers this error with.
    pub fn http_status(&self) -> (u16, &'static str) {
        match self {
            HandshakeError::HeaderTooLarge(_) | HandshakeError::TooManyHeaders(_) => {
                (431, "Request Header Fields Too Large")
            }
            _ => (400, "Bad Request"),
        }
    }

    /// A complete HTTP response for a server to send before closing the connection.
    pub fn http_response(&self) -> Vec<u8> {
        let (status, text) = self.http_status();
        let body = format!("{self}\n");
        let version =
            if *self == HandshakeError::UnsupportedVersion { "Sec-WebSocket-Version: 13\r\n" } else { "" };
        format!(
            "HTTP/1.1 {status} {text}\r\n{version}Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }
}

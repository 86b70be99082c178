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
}

impl ProtocolError {
    /// The close code that fails the connection for this error (RFC 6455 §7.4.1).
    pub fn close_code(&self) -> u16 {
        match self {
            ProtocolError::InvalidUtf8 | ProtocolError::InvalidCloseReason => 1007,
            ProtocolError::MessageTooBig { .. } => 1009,
            _ => 1002,
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

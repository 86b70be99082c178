//! permessage-deflate (RFC 7692): the extension's negotiation and its per-message codec.
//!
//! Negotiation is text in, text out: parsing a `Sec-WebSocket-Extensions` value into offers
//! (a server picks the first acceptable one, §7.1) or into a server's answer (a client checks
//! it against what it offered), and formatting both. The codec ([`Deflater`], [`Inflater`])
//! compresses and decompresses whole messages with flate2 (never hand-written deflate),
//! strips and restores the `00 00 ff ff` tail (§7.2.1–2), resets the window when context
//! takeover is off, and bounds the decompressed size against compression bombs: per message, and against
//! the process's budget for messages still arriving (a [`crate::Reservation`]). Like the rest
//! of the crate it does no I/O.

mod stream;

pub use stream::{Deflater, Inflater};

/// The extension's token in `Sec-WebSocket-Extensions`.
pub const EXTENSION_NAME: &str = "permessage-deflate";
/// The LZ77 window when no `*_max_window_bits` says otherwise.
pub const DEFAULT_WINDOW_BITS: u8 = 15;
/// The smallest window RFC 7692 allows (§7.1.2.1).
pub const MIN_WINDOW_BITS: u8 = 8;

/// Why a permessage-deflate offer, answer or message was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeflateError {
    #[error("permessage-deflate parameter `{0}` is given twice")]
    DuplicateParameter(String),
    #[error("unknown permessage-deflate parameter `{0}`")]
    UnknownParameter(String),
    #[error("permessage-deflate parameter `{name}` has an invalid value `{value}`")]
    InvalidValue { name: String, value: String },
    #[error("the server answered with permessage-deflate parameter `{0}`, which was not offered")]
    NotOffered(String),
    #[error("the server's answer lacks `{0}`, which the offer requires")]
    Missing(String),
    #[error("the server answered with more than one permessage-deflate extension")]
    SeveralAnswers,
    #[error("the server answered with an extension that was not offered: `{0}`")]
    UnknownExtension(String),
    #[error("deflate compression failed")]
    CompressFailed,
    #[error("compressed message is not valid deflate data")]
    Corrupt,
    #[error("decompressed message exceeds the limit of {limit} bytes")]
    TooBig { limit: u64 },
    #[error(transparent)]
    OverBudget(#[from] crate::OverBudget),
}

impl DeflateError {
    /// The close code that fails the connection for an error in a message (RFC 6455 §7.4.1):
    /// 1009 for a message too big once inflated, 1002 otherwise.
    pub fn close_code(&self) -> u16 {
        match self {
            DeflateError::TooBig { .. } | DeflateError::OverBudget(_) => 1009,
            _ => 1002,
        }
    }
}

/// `client_max_window_bits` in an offer may come without a value ("I can honour a limit").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientWindowBits {
    #[default]
    Absent,
    /// Given without a value (offers only).
    Supported,
    Bits(u8),
}

/// The parameters of one permessage-deflate offer or answer (§7.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeflateParams {
    pub server_no_context_takeover: bool,
    pub client_no_context_takeover: bool,
    pub server_max_window_bits: Option<u8>,
    pub client_max_window_bits: ClientWindowBits,
}

/// What both sides agreed to, with the defaults filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Negotiated {
    pub server_no_context_takeover: bool,
    pub client_no_context_takeover: bool,
    pub server_max_window_bits: u8,
    pub client_max_window_bits: u8,
}

impl Negotiated {
    /// The parameters as the server's answer states them.
    pub fn params(&self) -> DeflateParams {
        DeflateParams {
            server_no_context_takeover: self.server_no_context_takeover,
            client_no_context_takeover: self.client_no_context_takeover,
            server_max_window_bits: (self.server_max_window_bits != DEFAULT_WINDOW_BITS)
                .then_some(self.server_max_window_bits),
            client_max_window_bits: if self.client_max_window_bits == DEFAULT_WINDOW_BITS {
                ClientWindowBits::Absent
            } else {
                ClientWindowBits::Bits(self.client_max_window_bits)
            },
        }
    }

    /// The compressor of the side given (`server`: the server's outgoing messages).
    pub fn deflater(&self, server: bool) -> Deflater {
        if server {
            Deflater::new(self.server_max_window_bits, self.server_no_context_takeover)
        } else {
            Deflater::new(self.client_max_window_bits, self.client_no_context_takeover)
        }
    }

    /// The decompressor of the side given (`server`: the server's incoming messages).
    pub fn inflater(&self, server: bool, limit: u64) -> Inflater {
        if server {
            Inflater::new(self.client_max_window_bits, self.client_no_context_takeover, limit)
        } else {
            Inflater::new(self.server_max_window_bits, self.server_no_context_takeover, limit)
        }
    }
}

impl std::fmt::Display for DeflateParams {
    /// The extension as it is written in `Sec-WebSocket-Extensions`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(EXTENSION_NAME)?;
        if self.server_no_context_takeover {
            f.write_str("; server_no_context_takeover")?;
        }
        if self.client_no_context_takeover {
            f.write_str("; client_no_context_takeover")?;
        }
        if let Some(bits) = self.server_max_window_bits {
            write!(f, "; server_max_window_bits={bits}")?;
        }
        match self.client_max_window_bits {
            ClientWindowBits::Absent => Ok(()),
            ClientWindowBits::Supported => f.write_str("; client_max_window_bits"),
            ClientWindowBits::Bits(bits) => write!(f, "; client_max_window_bits={bits}"),
        }
    }
}

/// Splits a `Sec-WebSocket-Extensions` value into extensions: (name, parameters), each
/// parameter a name and an optional value with any quotes removed.
fn extensions(value: &str) -> impl Iterator<Item = (&str, Vec<(&str, Option<&str>)>)> {
    value.split(',').map(str::trim).filter(|e| !e.is_empty()).map(|extension| {
        let mut parts = extension.split(';').map(str::trim);
        let name = parts.next().unwrap_or_default();
        let params = parts
            .filter(|p| !p.is_empty())
            .map(|p| match p.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim().trim_matches('"'))),
                None => (p, None),
            })
            .collect();
        (name, params)
    })
}

fn window_bits(name: &str, value: &str) -> Result<u8, DeflateError> {
    let invalid = || DeflateError::InvalidValue { name: name.to_owned(), value: value.to_owned() };
    // RFC 7692 §7.1.2: a decimal integer 8..15 without leading zeros.
    if value.starts_with('0') || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    match value.parse::<u8>() {
        Ok(bits) if (MIN_WINDOW_BITS..=DEFAULT_WINDOW_BITS).contains(&bits) => Ok(bits),
        _ => Err(invalid()),
    }
}

/// Parses the parameters of one permessage-deflate extension, rejecting duplicates, unknown
/// names and bad values (§7.1).
pub fn parse_params(params: &[(&str, Option<&str>)]) -> Result<DeflateParams, DeflateError> {
    let mut out = DeflateParams::default();
    let mut seen: Vec<&str> = Vec::with_capacity(params.len());
    for &(name, value) in params {
        let lower = name.to_ascii_lowercase();
        if seen.iter().any(|s| s.eq_ignore_ascii_case(name)) {
            return Err(DeflateError::DuplicateParameter(lower));
        }
        seen.push(name);
        let flag = |value: Option<&str>| match value {
            None => Ok(true),
            Some(v) => Err(DeflateError::InvalidValue { name: lower.clone(), value: v.to_owned() }),
        };
        match lower.as_str() {
            "server_no_context_takeover" => out.server_no_context_takeover = flag(value)?,
            "client_no_context_takeover" => out.client_no_context_takeover = flag(value)?,
            "server_max_window_bits" => {
                let value = value.ok_or_else(|| DeflateError::InvalidValue {
                    name: lower.clone(),
                    value: String::new(),
                })?;
                out.server_max_window_bits = Some(window_bits(&lower, value)?);
            }
            "client_max_window_bits" => {
                out.client_max_window_bits = match value {
                    None => ClientWindowBits::Supported,
                    Some(v) => ClientWindowBits::Bits(window_bits(&lower, v)?),
                }
            }
            _ => return Err(DeflateError::UnknownParameter(name.to_owned())),
        }
    }
    Ok(out)
}

/// The permessage-deflate offers in the request's `Sec-WebSocket-Extensions` values, in the
/// client's order; an invalid offer is kept as its error (the server declines it).
pub fn parse_offers<'a>(
    values: impl IntoIterator<Item = &'a str>,
) -> Vec<Result<DeflateParams, DeflateError>> {
    values
        .into_iter()
        .flat_map(extensions)
        .filter(|(name, _)| name.eq_ignore_ascii_case(EXTENSION_NAME))
        .map(|(_, params)| parse_params(&params))
        .collect()
}

/// What a server that can compress with any window of 9..15 bits accepts of one valid
/// offer, or `None` to decline it. zlib cannot produce a raw deflate stream with an 8-bit
/// window, so an offer limiting the server to 8 bits is declined (as zlib-based servers do).
pub fn accept_offer(offer: &DeflateParams) -> Option<Negotiated> {
    let server_bits = offer.server_max_window_bits.unwrap_or(DEFAULT_WINDOW_BITS);
    if server_bits < 9 {
        return None;
    }
    let client_bits = match offer.client_max_window_bits {
        ClientWindowBits::Bits(bits) => bits,
        ClientWindowBits::Absent | ClientWindowBits::Supported => DEFAULT_WINDOW_BITS,
    };
    Some(Negotiated {
        server_no_context_takeover: offer.server_no_context_takeover,
        client_no_context_takeover: offer.client_no_context_takeover,
        server_max_window_bits: server_bits,
        client_max_window_bits: client_bits,
    })
}

/// The server's choice: the first valid offer it can accept, or `None` (no extension).
pub fn negotiate<'a>(values: impl IntoIterator<Item = &'a str>) -> Option<Negotiated> {
    parse_offers(values).iter().filter_map(|offer| offer.as_ref().ok()).find_map(accept_offer)
}

/// A client's check of the server's `Sec-WebSocket-Extensions` answer against its `offer`:
/// `Ok(None)` when the server declined (no permessage-deflate in the answer), the agreed
/// parameters, or why the answer is not acceptable (§7.1: a parameter not offered, a window
/// bigger than asked, a bad value).
pub fn check_answer(offer: &DeflateParams, answer: Option<&str>) -> Result<Option<Negotiated>, DeflateError> {
    let mut found = None;
    for (name, params) in answer.into_iter().flat_map(extensions) {
        if !name.eq_ignore_ascii_case(EXTENSION_NAME) {
            return Err(DeflateError::UnknownExtension(name.to_owned()));
        }
        if found.is_some() {
            return Err(DeflateError::SeveralAnswers);
        }
        found = Some(parse_params(&params)?);
    }
    let Some(params) = found else { return Ok(None) };
    let client_bits = match params.client_max_window_bits {
        ClientWindowBits::Absent => DEFAULT_WINDOW_BITS,
        ClientWindowBits::Supported => {
            return Err(DeflateError::InvalidValue {
                name: "client_max_window_bits".to_owned(),
                value: String::new(),
            });
        }
        ClientWindowBits::Bits(_) if offer.client_max_window_bits == ClientWindowBits::Absent => {
            return Err(DeflateError::NotOffered("client_max_window_bits".to_owned()));
        }
        // zlib cannot compress a raw stream with an 8-bit window.
        ClientWindowBits::Bits(8) => {
            return Err(DeflateError::InvalidValue {
                name: "client_max_window_bits".to_owned(),
                value: "8".to_owned(),
            });
        }
        ClientWindowBits::Bits(bits) => bits,
    };
    let server_bits = params.server_max_window_bits.unwrap_or(DEFAULT_WINDOW_BITS);
    if let Some(asked) = offer.server_max_window_bits
        && (params.server_max_window_bits.is_none() || server_bits > asked)
    {
        return Err(DeflateError::InvalidValue {
            name: "server_max_window_bits".to_owned(),
            value: server_bits.to_string(),
        });
    }
    if offer.server_no_context_takeover && !params.server_no_context_takeover {
        return Err(DeflateError::Missing("server_no_context_takeover".to_owned()));
    }
    Ok(Some(Negotiated {
        server_no_context_takeover: params.server_no_context_takeover,
        // The server may ask this of the client even if the client did not offer it (§7.1.1.2).
        client_no_context_takeover: params.client_no_context_takeover || offer.client_no_context_takeover,
        server_max_window_bits: server_bits,
        client_max_window_bits: client_bits,
    }))
}

#[cfg(test)]
mod tests;

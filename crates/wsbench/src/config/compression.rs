//! `--compression`: which permessage-deflate (RFC 7692) offer connections make.
//!
//! `deflate` offers what browsers offer (`permessage-deflate; client_max_window_bits`);
//! parameters follow in the header's own syntax, e.g. `deflate; client_no_context_takeover;
//! server_max_window_bits=10`, so what a user reads in a browser's request can be pasted.
//! The offer is validated here with the codec's own parser, before any connection is made.

use serde::Serialize;
use wsbench_proto::deflate::{ClientWindowBits, DeflateParams, parse_params};

use super::ConfigError;
use super::error::invalid;

/// The permessage-deflate offer every connection makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressionOffer {
    pub params: DeflateParams,
}

impl CompressionOffer {
    /// Parses `--compression`: `none`, `deflate` or `deflate; PARAM; PARAM=VALUE…`.
    pub fn parse(text: &str) -> Result<Option<CompressionOffer>, ConfigError> {
        let mut parts = text.split(';').map(str::trim);
        let name = parts.next().unwrap_or_default();
        let wrong = |why: String| {
            invalid(
                "compression",
                format!(
                    "{why}: use none, deflate or e.g. `deflate; client_no_context_takeover; server_max_window_bits=10`"
                ),
            )
        };
        match name {
            "none" | "off" if text.trim() == name => return Ok(None),
            "deflate" | "permessage-deflate" => {}
            _ => return Err(wrong(format!("`{text}` is not a compression"))),
        }
        let params: Vec<(&str, Option<&str>)> = parts
            .map(|p| match p.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim())),
                None => (p, None),
            })
            .collect();
        let mut params = parse_params(&params).map_err(|e| wrong(e.to_string()))?;
        if params.client_max_window_bits == ClientWindowBits::Absent {
            // As browsers do: tell the server it may limit our window.
            params.client_max_window_bits = ClientWindowBits::Supported;
        }
        Ok(Some(CompressionOffer { params }))
    }

    /// The `Sec-WebSocket-Extensions` value sent.
    pub fn header_value(&self) -> String {
        self.params.to_string()
    }
}

impl Serialize for CompressionOffer {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.header_value())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deflate_offers_what_browsers_offer() {
        let offer = CompressionOffer::parse("deflate").unwrap().unwrap();
        assert_eq!(offer.header_value(), "permessage-deflate; client_max_window_bits");
        let offer = CompressionOffer::parse("deflate; server_no_context_takeover; server_max_window_bits=10")
            .unwrap()
            .unwrap();
        assert_eq!(
            offer.header_value(),
            "permessage-deflate; server_no_context_takeover; server_max_window_bits=10; client_max_window_bits"
        );
        assert_eq!(CompressionOffer::parse("none").unwrap(), None);
    }

    #[test]
    fn bad_offers_name_the_problem() {
        for (text, says) in [
            ("gzip", "`gzip` is not a compression"),
            ("deflate; server_max_window_bits=16", "invalid value `16`"),
            ("deflate; client_no_context_takeover; client_no_context_takeover", "given twice"),
            ("deflate; window=9", "unknown permessage-deflate parameter `window`"),
        ] {
            let error = CompressionOffer::parse(text).unwrap_err().to_string();
            assert!(error.contains(says) && error.contains("--compression"), "{text}: {error}");
        }
    }
}

//! Histograms in and out of text: HdrHistogram's "V2 compressed" encoding (V2 + DEFLATE,
//! cookie 0x1c849304) in standard base64, byte-for-byte what HdrHistogram's Java and Go
//! tools write and read. Also rebuilds a [`Metrics`] from a result, for `wsbench merge`.

use std::collections::BTreeMap;
use std::io::Cursor;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};

use super::{ResultError, RunResult};
use crate::metrics::{Counters, HISTOGRAM_MAX_US, HISTOGRAM_SIGFIG, Metrics, TimelineSecond, new_histogram};

/// A histogram as V2-compressed base64 text.
pub fn encode_histogram(histogram: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(histogram, &mut bytes)
        // Writing to a Vec cannot fail, and u64 counts of real events never exceed i64::MAX.
        .expect("a histogram serializes into memory");
    STANDARD.encode(bytes)
}

/// Decodes V2 (compressed or not) base64 text. Histograms with other bounds than wsbench's
/// are re-recorded into wsbench's bounds so they merge with the rest; `field` names the JSON
/// field in errors.
pub fn decode_histogram(field: &str, text: &str) -> Result<Histogram<u64>, ResultError> {
    let error = |reason: String| ResultError::Histogram { field: field.to_owned(), reason };
    let bytes = STANDARD.decode(text.trim()).map_err(|e| error(format!("not base64 ({e})")))?;
    let decoded: Histogram<u64> = Deserializer::new()
        .deserialize(&mut Cursor::new(bytes))
        .map_err(|e| error(format!("not an HdrHistogram V2 histogram ({e})")))?;
    if decoded.low() == 1 && decoded.high() == HISTOGRAM_MAX_US && decoded.sigfig() == HISTOGRAM_SIGFIG {
        return Ok(decoded);
    }
    let mut normalized = new_histogram();
    normalized.add(&decoded).map_err(|e| error(format!("values outside wsbench's range ({e:?})")))?;
    Ok(normalized)
}

impl RunResult {
    /// The run's [`Metrics`] but its scenario's section, decoded losslessly from the
    /// histograms and raw counters (the section is the scenario's to decode:
    /// `crate::scenario::decode_metrics` gives the whole).
    pub fn common_metrics(&self) -> Result<Metrics, ResultError> {
        let encoded = &self.histograms;
        // Files of schema_version 1 also carry per-second histograms (`histograms.intervals`):
        // their timeline has the same seconds' counts and percentiles, which is what is kept.
        let timeline = self
            .timeline
            .iter()
            .map(|point| TimelineSecond {
                second: point.second,
                exchanges: point.exchanges,
                connections_open: point.connections_open,
                p50_us: point.p50_us,
                p99_us: point.p99_us,
            })
            .collect();
        Ok(Metrics {
            latency: decode_histogram("histograms.latency", &encoded.latency)?,
            latency_uncorrected: decode_histogram(
                "histograms.latency_uncorrected",
                &encoded.latency_uncorrected,
            )?,
            connect: decode_histogram("histograms.connect", &encoded.connect)?,
            send_lag: decode_histogram("histograms.send_lag", &encoded.send_lag)?,
            counters: Counters { scenario: BTreeMap::new(), ..self.counters.clone() },
            timeline,
            section: None,
        })
    }
}

//! Histograms in and out of text: HdrHistogram's "V2 compressed" encoding (V2 + DEFLATE,
//! cookie 0x1c849304) in standard base64, byte-for-byte what HdrHistogram's Java and Go
//! tools write and read. Also rebuilds a [`Metrics`] from a result, for `wsbench merge`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{Cursor, Read};
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use flate2::read::DeflateDecoder;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};

use super::{ResultError, RunResult};
use crate::metrics::{Counters, HISTOGRAM_MAX_US, HISTOGRAM_SIGFIG, Metrics, TimelineSecond, new_histogram};

/// Every histogram (a string) in `value`, at any depth of its objects, decodes.
fn verify_nested(field: &str, value: &serde_json::Value) -> Result<(), ResultError> {
    match value {
        serde_json::Value::String(text) => decode_histogram(field, text).map(drop),
        serde_json::Value::Object(map) => {
            map.iter().try_for_each(|(key, value)| verify_nested(&format!("{field}.{key}"), value))
        }
        _ => Ok(()),
    }
}

/// A histogram as V2-compressed base64 text.
pub fn encode_histogram(histogram: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(histogram, &mut bytes)
        // Writing to a Vec cannot fail, and u64 counts of real events never exceed i64::MAX.
        .expect("a histogram serializes into memory");
    STANDARD.encode(bytes)
}

/// The most bytes one histogram's V2 encoding may inflate to. wsbench's own histograms
/// (1 µs to an hour at 3 significant digits) take at most about 200 KB uncompressed; the
/// limit leaves room for histograms of other tools with finer bounds.
pub const MAX_HISTOGRAM_DECODED_BYTES: usize = 4 << 20;
/// The most counters a histogram's bounds may make the decoder allocate (8 bytes each).
const MAX_HISTOGRAM_COUNTS: u64 = 1 << 21;
/// The most samples one histogram may hold: a billion a second for over three months.
/// More is an edited or damaged count, not a measurement.
pub const MAX_HISTOGRAM_SAMPLES: u64 = 1 << 53;
/// HdrHistogram's cookies (their base, 0x1c849303 and 0x1c849304, with the word size 0x10 in): V2, and V2 + DEFLATE.
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
/// Bytes of a V2 header: cookie, payload length, normalizing offset, digits, lowest,
/// highest, integer-to-double ratio.
const V2_HEADER_BYTES: usize = 40;

/// Decodes V2 (compressed or not) base64 text. Histograms with other bounds than wsbench's
/// are re-recorded into wsbench's bounds so they merge with the rest; `field` names the JSON
/// field in errors. Nothing is allocated from the text's own numbers before they are
/// checked: the inflated size is bounded ([`MAX_HISTOGRAM_DECODED_BYTES`]), the zlib
/// checksum (Adler-32) verified, the counters its bounds need bounded, and its counts must
/// add up to at most [`MAX_HISTOGRAM_SAMPLES`].
pub fn decode_histogram(field: &str, text: &str) -> Result<Histogram<u64>, ResultError> {
    let error = |reason: String| ResultError::Histogram { field: field.to_owned(), reason };
    let bytes = STANDARD.decode(text.trim()).map_err(|e| error(format!("not base64 ({e})")))?;
    let plain = v2_bytes(&bytes).map_err(error)?;
    let decoded: Histogram<u64> = Deserializer::new()
        .deserialize(&mut Cursor::new(plain.as_ref()))
        .map_err(|e| error(format!("not an HdrHistogram V2 histogram ({e:?})")))?;
    let samples = decoded
        .iter_recorded()
        .try_fold(0u64, |sum, value| sum.checked_add(value.count_at_value()))
        .filter(|&sum| sum <= MAX_HISTOGRAM_SAMPLES && sum == decoded.len());
    if samples.is_none() {
        return Err(error(format!("counts add up to more than {MAX_HISTOGRAM_SAMPLES} samples")));
    }
    if decoded.low() == 1 && decoded.high() == HISTOGRAM_MAX_US && decoded.sigfig() == HISTOGRAM_SIGFIG {
        return Ok(decoded);
    }
    let mut normalized = new_histogram();
    normalized.add(&decoded).map_err(|e| error(format!("values outside wsbench's range ({e:?})")))?;
    Ok(normalized)
}

/// The uncompressed V2 encoding of `bytes` (V2, or V2 + DEFLATE inflated within
/// [`MAX_HISTOGRAM_DECODED_BYTES`], its checksum verified), its header checked.
fn v2_bytes(bytes: &[u8]) -> Result<Cow<'_, [u8]>, String> {
    let not_v2 = || "not an HdrHistogram V2 histogram (too short)".to_owned();
    let cookie = u32::from_be_bytes(bytes.get(..4).ok_or_else(not_v2)?.try_into().expect("4 bytes"));
    let plain = match cookie {
        V2_COOKIE => Cow::Borrowed(bytes),
        V2_COMPRESSED_COOKIE => {
            let length = u32::from_be_bytes(bytes.get(4..8).ok_or_else(not_v2)?.try_into().expect("4 bytes"));
            let compressed = bytes.get(8..8 + length as usize).ok_or_else(not_v2)?;
            Cow::Owned(inflate(compressed)?)
        }
        other => return Err(format!("not an HdrHistogram V2 histogram (cookie {other:#x})")),
    };
    check_v2_header(&plain)?;
    Ok(plain)
}

/// `compressed` (a zlib stream: a 2-byte header, DEFLATE data, the Adler-32 of what it
/// inflates to) inflated to at most [`MAX_HISTOGRAM_DECODED_BYTES`], its checksum verified.
fn inflate(compressed: &[u8]) -> Result<Vec<u8>, String> {
    let not_zlib = || "not a zlib stream".to_owned();
    let [cmf, flg] = *compressed.get(..2).ok_or_else(not_zlib)? else { return Err(not_zlib()) };
    if cmf & 0x0f != 8 || (u16::from(cmf) << 8 | u16::from(flg)) % 31 != 0 || flg & 0x20 != 0 {
        return Err(not_zlib());
    }
    let trailer = compressed.len().checked_sub(4).filter(|&at| at >= 2).ok_or_else(not_zlib)?;
    let mut plain = Vec::new();
    DeflateDecoder::new(&compressed[2..trailer])
        .take(MAX_HISTOGRAM_DECODED_BYTES as u64 + 1)
        .read_to_end(&mut plain)
        .map_err(|e| format!("not valid DEFLATE data ({e})"))?;
    if plain.len() > MAX_HISTOGRAM_DECODED_BYTES {
        return Err(format!(
            "inflates to more than {} MiB, the most a histogram may take",
            MAX_HISTOGRAM_DECODED_BYTES >> 20
        ));
    }
    let expected = u32::from_be_bytes(compressed[trailer..].try_into().expect("4 bytes"));
    if adler32(&plain) != expected {
        return Err("fails its zlib checksum (Adler-32)".to_owned());
    }
    Ok(plain)
}

/// The Adler-32 checksum of `data` (RFC 1950).
fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65_521;
    let (mut a, mut b) = (1u32, 0u32);
    // 5552 bytes at most between reductions keep `b` within u32 (zlib's NMAX).
    for chunk in data.chunks(5552) {
        for &byte in chunk {
            a += u32::from(byte);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    b << 16 | a
}

/// The V2 header of `plain` promises no more than `plain` holds, and bounds that need at
/// most [`MAX_HISTOGRAM_COUNTS`] counters.
fn check_v2_header(plain: &[u8]) -> Result<(), String> {
    let header = plain.get(..V2_HEADER_BYTES).ok_or("not an HdrHistogram V2 histogram (too short)")?;
    let u32_at = |at: usize| u32::from_be_bytes(header[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |at: usize| u64::from_be_bytes(header[at..at + 8].try_into().expect("8 bytes"));
    let (payload, digits, low, high) = (u32_at(4) as usize, u32_at(12), u64_at(16), u64_at(24));
    if u32_at(0) != V2_COOKIE {
        return Err("not an HdrHistogram V2 histogram (its inner cookie)".to_owned());
    }
    if payload != plain.len() - V2_HEADER_BYTES {
        return Err(format!(
            "its header says {payload} bytes of counts but it holds {}",
            plain.len() - V2_HEADER_BYTES
        ));
    }
    if !(1..=5).contains(&digits) || low == 0 || high < low.saturating_mul(2) {
        return Err(format!("its bounds are not a histogram's ({low} to {high}, {digits} digits)"));
    }
    if counters_needed(low, high, digits) > MAX_HISTOGRAM_COUNTS {
        return Err(format!("its bounds ({low} to {high}, {digits} digits) need too many counters"));
    }
    Ok(())
}

/// How many counters HdrHistogram allocates for `low..=high` at `digits` significant digits.
fn counters_needed(low: u64, high: u64, digits: u32) -> u64 {
    let largest_single_unit = 2 * 10u64.pow(digits);
    let sub_bucket_magnitude = 64 - (largest_single_unit - 1).leading_zeros();
    let sub_bucket_count = 1u64 << sub_bucket_magnitude;
    let unit_magnitude = 63 - low.leading_zeros();
    let mut buckets = 1u64;
    let mut trackable = u128::from(sub_bucket_count) << unit_magnitude;
    while trackable <= u128::from(high) {
        trackable <<= 1;
        buckets += 1;
    }
    (buckets + 1) * (sub_bucket_count / 2)
}

impl RunResult {
    /// Every histogram of the file decodes (within its bounds, its checksum right) and the
    /// common ones hold as many samples as the summary says; `path` names the file in the
    /// error. Nothing is merged or reported from a histogram that fails.
    pub fn verify_histograms(&self, path: &Path) -> Result<(), ResultError> {
        let damaged = |field: &str, reason: String| ResultError::DamagedHistogram {
            path: path.to_owned(),
            field: field.to_owned(),
            reason,
        };
        let in_file = |error: ResultError| match error {
            ResultError::Histogram { field, reason } => {
                damaged(&field, format!("cannot be decoded: {reason}"))
            }
            other => other,
        };
        let encoded = &self.histograms;
        let summary = &self.summary;
        let common = [
            ("histograms.latency", &encoded.latency, "summary.latency_us.count", summary.latency_us.count),
            (
                "histograms.latency_uncorrected",
                &encoded.latency_uncorrected,
                "summary.latency_uncorrected_us.count",
                summary.latency_uncorrected_us.count,
            ),
            ("histograms.connect", &encoded.connect, "summary.connect_us.count", summary.connect_us.count),
            (
                "histograms.send_lag",
                &encoded.send_lag,
                "summary.send_lag_us.count",
                summary.send_lag_us.count,
            ),
        ];
        for (field, text, count_field, count) in common {
            let histogram = decode_histogram(field, text).map_err(in_file)?;
            if histogram.len() != count {
                return Err(damaged(
                    field,
                    format!("holds {} samples but `{count_field}` says {count}", histogram.len()),
                ));
            }
        }
        for (key, value) in &encoded.scenario {
            verify_nested(&format!("histograms.{key}"), value).map_err(in_file)?;
        }
        Ok(())
    }

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
                awaiting: point.awaiting,
                reconnects: point.reconnects,
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
            stages: Vec::new(),
            recovery: self.recovery_tally()?,
        })
    }

    /// The recovery's tally, its histograms decoded (empty without a recovery).
    fn recovery_tally(&self) -> Result<crate::metrics::RecoveryTally, ResultError> {
        let Some(figures) = &self.recovery else { return Ok(crate::metrics::RecoveryTally::default()) };
        let decode = |field: &'static str, encoded: &Option<String>| match encoded {
            Some(encoded) => decode_histogram(field, encoded),
            None => Ok(crate::metrics::new_histogram()),
        };
        Ok(figures.tally(
            decode("histograms.recovery_back_after", &self.histograms.recovery_back_after)?,
            decode("histograms.recovery_downtime", &self.histograms.recovery_downtime)?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::adler32;

    #[test]
    fn adler32_of_known_strings() {
        assert_eq!(adler32(b""), 1);
        assert_eq!(adler32(b"Wikipedia"), 0x11e6_0398);
        let long = vec![0xff; 100_000];
        assert_eq!(adler32(&long), reference(&long));
    }

    /// Adler-32 one byte at a time, reduced every byte.
    fn reference(data: &[u8]) -> u32 {
        let (mut a, mut b) = (1u32, 0u32);
        for &byte in data {
            a = (a + u32::from(byte)) % 65_521;
            b = (b + a) % 65_521;
        }
        b << 16 | a
    }
}

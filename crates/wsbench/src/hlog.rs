//! The run's per-second latency histograms as an HdrHistogram interval log (`.hlog`), the
//! format of HdrHistogram's `HistogramLogWriter`, so the existing ecosystem
//! (HistogramLogProcessor, HdrHistogramVisualizer, HistogramLogAnalyzer, the Go and Rust
//! readers) can plot and slice a wsbench run. Values are microseconds.

use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;

use crate::metrics::Interval;
use crate::result::{ResultError, write_atomically};

/// The legend line HdrHistogram's Java writer puts after the headers.
const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n";

/// Writes `intervals` (one per second, `second` counted from `start_unix_ms`) as an interval
/// log at `path`, atomically. Interval timestamps are seconds since the BaseTime (the run's
/// start); `Interval_Max` is in milliseconds, the histograms hold microseconds.
pub fn write_hlog(path: &Path, start_unix_ms: u64, intervals: &[Interval]) -> Result<(), ResultError> {
    write_atomically(path, |out| write_log(out, start_unix_ms, intervals))
}

fn write_log(mut out: &mut dyn Write, start_unix_ms: u64, intervals: &[Interval]) -> io::Result<()> {
    let start = UNIX_EPOCH + Duration::from_millis(start_unix_ms);
    let mut serializer = V2DeflateSerializer::new();
    // Headers first, in the Java writer's order: comments, StartTime, BaseTime, legend. The
    // crate's builder writes all but the legend, which is not a comment and so cannot be
    // written through its writer; a second writer then adds the histograms (and its
    // `#[MaxValueDivisor: 1000.000]` comment, which readers skip like any other).
    IntervalLogWriterBuilder::new()
        .add_comment(concat!("[Logged with wsbench ", env!("CARGO_PKG_VERSION"), "]"))
        .add_comment("[Histogram log format version 1.3]")
        .add_comment("[Values are round-trip latencies in microseconds; Interval_Max is in milliseconds]")
        .with_start_time(start)
        .with_base_time(start)
        .begin_log_with(&mut out, &mut serializer)?;
    out.write_all(LEGEND.as_bytes())?;
    let mut log = IntervalLogWriterBuilder::new()
        .with_max_value_divisor(1000.0)
        .begin_log_with(&mut out, &mut serializer)?;
    for interval in intervals {
        log.write_histogram(
            &interval.latency,
            Duration::from_secs(interval.second),
            Duration::from_secs(1),
            None,
        )
        .map_err(|e| io::Error::other(e.to_string()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use hdrhistogram::Histogram;
    use hdrhistogram::serialization::Deserializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    use super::*;
    use crate::fixture;

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("wsbench-hlog-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn interval_log_reads_back_with_the_same_counts() {
        let metrics = fixture::random_metrics(7, 6_000, 6);
        let dir = temp_dir("roundtrip");
        let path = dir.join("run.hlog");
        write_hlog(&path, 1_735_689_600_250, &metrics.intervals).unwrap();
        let text = std::fs::read(&path).unwrap();

        let mut base_time = None;
        let mut start_time = None;
        let mut read = Vec::new();
        for entry in IntervalLogIterator::new(&text) {
            match entry.unwrap() {
                LogEntry::StartTime(t) => start_time = Some(t),
                LogEntry::BaseTime(t) => base_time = Some(t),
                LogEntry::Interval(h) => {
                    let bytes = base64::Engine::decode(
                        &base64::engine::general_purpose::STANDARD,
                        h.encoded_histogram(),
                    )
                    .unwrap();
                    let histogram: Histogram<u64> =
                        Deserializer::new().deserialize(&mut std::io::Cursor::new(bytes)).unwrap();
                    read.push((h.start_timestamp(), h.duration(), histogram));
                }
            }
        }
        assert_eq!(start_time, Some(Duration::from_millis(1_735_689_600_250)));
        assert_eq!(base_time, start_time);
        assert_eq!(read.len(), metrics.intervals.len());
        for ((start, length, histogram), interval) in read.iter().zip(&metrics.intervals) {
            assert_eq!(*start, Duration::from_secs(interval.second));
            assert_eq!(*length, Duration::from_secs(1));
            assert_eq!(histogram.len(), interval.latency.len());
            assert_eq!(histogram, &interval.latency);
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn interval_log_has_the_java_writer_headers() {
        let metrics = fixture::random_metrics(3, 100, 2);
        let mut out = Vec::new();
        write_log(&mut out, 1_500_000_040_000, &metrics.intervals).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.contains(&"#[Histogram log format version 1.3]"), "{text}");
        assert!(lines.contains(&"#[StartTime: 1500000040.000 (seconds since epoch)]"), "{text}");
        assert!(lines.contains(&"#[BaseTime: 1500000040.000 (seconds since epoch)]"), "{text}");
        assert_eq!(lines.iter().filter(|l| **l == LEGEND.trim_end()).count(), 1, "{text}");
        let legend_at = lines.iter().position(|l| *l == LEGEND.trim_end()).unwrap();
        let base_at = lines.iter().position(|l| l.starts_with("#[BaseTime")).unwrap();
        assert!(base_at < legend_at, "{text}");
        let data: Vec<&str> =
            lines.iter().copied().filter(|l| !l.starts_with('#') && !l.starts_with('"')).collect();
        assert_eq!(data.len(), 2);
        assert!(data[0].starts_with("0.000,1.000,"), "{}", data[0]);
        assert!(data[1].starts_with("1.000,1.000,"), "{}", data[1]);
        // V2 compressed cookie 0x1c849304, base64.
        assert!(data[0].split(',').nth(3).unwrap().starts_with("HISTFAAA"), "{}", data[0]);
    }
}

//! The run's per-second latency histograms as an HdrHistogram interval log (`.hlog`), the
//! format of HdrHistogram's `HistogramLogWriter`, so the existing ecosystem
//! (HistogramLogProcessor, HdrHistogramVisualizer, HistogramLogAnalyzer, the Go and Rust
//! readers) can plot and slice a wsbench run. Values are microseconds.
//!
//! The log is written as the run goes ([`HlogWriter`]: one line per second, flushed), so a
//! run of days never holds its seconds' histograms in memory, and a killed run leaves the
//! seconds it measured. The shards of `run --processes N` each write their own, which
//! [`merge_files`] adds up second by second, reading one line of each at a time.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use base64::Engine as _;
use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};

use crate::metrics::Interval;
use crate::result::ResultError;

/// The legend line HdrHistogram's Java writer puts after the headers.
const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n";

/// `Interval_Max` is written in milliseconds; the histograms hold microseconds.
const MAX_VALUE_DIVISOR: f64 = 1000.0;

/// An interval log being written, one second at a time.
pub struct HlogWriter {
    path: PathBuf,
    out: BufWriter<File>,
    serializer: V2DeflateSerializer,
    encoded: Vec<u8>,
    /// Set once a write failed: said once on stderr, then the log stops.
    failed: bool,
}

impl std::fmt::Debug for HlogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HlogWriter").field("path", &self.path).field("failed", &self.failed).finish()
    }
}

impl HlogWriter {
    /// Creates the log at `path` and writes its headers: interval timestamps count seconds
    /// since `start_unix_ms`, the run's start (its StartTime and BaseTime).
    pub fn create(path: &Path, start_unix_ms: u64) -> Result<HlogWriter, ResultError> {
        let error = |source| ResultError::Write { path: path.to_owned(), source };
        let file = File::create(path).map_err(error)?;
        let mut writer = HlogWriter {
            path: path.to_owned(),
            out: BufWriter::new(file),
            serializer: V2DeflateSerializer::new(),
            encoded: Vec::new(),
            failed: false,
        };
        writer.headers(start_unix_ms).and_then(|()| writer.out.flush()).map_err(error)?;
        Ok(writer)
    }

    /// Headers in the Java writer's order: comments, StartTime, BaseTime, legend. The
    /// crate's builder writes all but the legend, which is not a comment and so cannot be
    /// written through its writer; its `#[MaxValueDivisor: 1000.000]` comment follows, which
    /// readers skip like any other.
    fn headers(&mut self, start_unix_ms: u64) -> io::Result<()> {
        let start = UNIX_EPOCH + Duration::from_millis(start_unix_ms);
        IntervalLogWriterBuilder::new()
            .add_comment(concat!("[Logged with wsbench ", env!("CARGO_PKG_VERSION"), "]"))
            .add_comment("[Histogram log format version 1.3]")
            .add_comment("[Values are round-trip latencies in microseconds; Interval_Max is in milliseconds]")
            .with_start_time(start)
            .with_base_time(start)
            .begin_log_with(&mut self.out, &mut self.serializer)?;
        self.out.write_all(LEGEND.as_bytes())?;
        IntervalLogWriterBuilder::new()
            .with_max_value_divisor(MAX_VALUE_DIVISOR)
            .begin_log_with(&mut self.out, &mut self.serializer)?;
        Ok(())
    }

    /// Writes one second as one line (`start,length,max,histogram`, as the Java writer
    /// does) and flushes it. A failure is said once on stderr and ends the log.
    pub fn write(&mut self, interval: &Interval) {
        if self.failed {
            return;
        }
        if let Err(e) = self.line(interval).and_then(|()| self.out.flush()) {
            self.failed = true;
            eprintln!("wsbench: --hlog {}: writing failed, the log ends here: {e}", self.path.display());
        }
    }

    fn line(&mut self, interval: &Interval) -> io::Result<()> {
        self.encoded.clear();
        self.serializer.serialize(&interval.latency, &mut self.encoded).map_err(io::Error::other)?;
        let max_ms = interval.latency.max() as f64 / MAX_VALUE_DIVISOR;
        write!(self.out, "{:.3},{:.3},{:.3},", interval.second as f64, 1.0, max_ms)?;
        let text = base64::engine::general_purpose::STANDARD.encode(&self.encoded);
        self.out.write_all(text.as_bytes())?;
        self.out.write_all(b"\n")
    }

    /// Whether every second so far was written.
    pub fn intact(&self) -> bool {
        !self.failed
    }
}

/// One shard's log being read: its start (ms since the epoch) and its next second.
struct Reader {
    path: PathBuf,
    lines: std::io::Lines<BufReader<File>>,
    start_unix_ms: Option<u64>,
}

impl Reader {
    fn open(path: &Path) -> Result<Reader, ResultError> {
        let file = File::open(path).map_err(|source| ResultError::Read { path: path.to_owned(), source })?;
        Ok(Reader { path: path.to_owned(), lines: BufReader::new(file).lines(), start_unix_ms: None })
    }

    /// The next interval (its second counted from this log's start, and its histogram),
    /// reading the headers on the way; `None` at the end.
    fn next_interval(&mut self) -> Result<Option<Interval>, ResultError> {
        let invalid = |reason: String| ResultError::Invalid { path: self.path.clone(), reason };
        for line in self.lines.by_ref() {
            let line = line.map_err(|source| ResultError::Read { path: self.path.clone(), source })?;
            if let Some(rest) = line.strip_prefix("#[StartTime: ") {
                let seconds: f64 = rest.split_whitespace().next().and_then(|s| s.parse().ok()).unwrap_or(0.0);
                self.start_unix_ms = Some((seconds * 1000.0).round() as u64);
                continue;
            }
            if line.starts_with('#') || line.starts_with('"') || line.trim().is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.splitn(4, ',').collect();
            let [start, _length, _max, histogram] = fields[..] else {
                return Err(invalid(format!("`{line}` is not an interval line")));
            };
            let start: f64 = start.parse().map_err(|_| invalid(format!("`{start}` is not a time")))?;
            let mut interval = Interval::new(start.round() as u64);
            interval.latency = crate::result::decode_histogram("interval", histogram)?;
            interval.exchanges = interval.latency.len();
            return Ok(Some(interval));
        }
        Ok(None)
    }
}

/// Writes to `out` the sum of the interval logs `inputs` (the shards of one run), second by
/// second on the wall clock: a log that started `k` seconds after `start_unix_ms` has its
/// seconds moved `k` later. Reads one line of each log at a time.
pub fn merge_files(inputs: &[PathBuf], out: &Path, start_unix_ms: u64) -> Result<(), ResultError> {
    let mut readers = inputs.iter().map(|path| Reader::open(path)).collect::<Result<Vec<_>, _>>()?;
    let mut heads = Vec::with_capacity(readers.len());
    for reader in &mut readers {
        let head = reader.next_interval()?;
        heads.push(head.map(|interval| shifted(interval, reader.start_unix_ms, start_unix_ms)));
    }
    let mut writer = HlogWriter::create(out, start_unix_ms)?;
    while let Some(second) = heads.iter().flatten().map(|interval| interval.second).min() {
        let mut merged = Interval::new(second);
        for (reader, head) in readers.iter_mut().zip(&mut heads) {
            while let Some(interval) = head.as_ref().filter(|interval| interval.second == second) {
                merged.add(interval);
                *head =
                    reader.next_interval()?.map(|next| shifted(next, reader.start_unix_ms, start_unix_ms));
            }
        }
        writer.write(&merged);
    }
    if !writer.intact() {
        return Err(ResultError::Write { path: out.to_owned(), source: io::Error::other("see above") });
    }
    Ok(())
}

/// `interval` of a log that started at `log_start_ms`, on the clock of `start_ms`.
fn shifted(mut interval: Interval, log_start_ms: Option<u64>, start_ms: u64) -> Interval {
    let offset_ms = log_start_ms.unwrap_or(start_ms).saturating_sub(start_ms);
    interval.second += (offset_ms + 500) / 1000;
    interval
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

    fn written(path: &Path, start_unix_ms: u64, intervals: &[Interval]) {
        let mut writer = HlogWriter::create(path, start_unix_ms).unwrap();
        for interval in intervals {
            writer.write(interval);
        }
        assert!(writer.intact());
    }

    /// One interval as read back: its start, its length, its histogram.
    type Read = (Duration, Duration, Histogram<u64>);

    /// The StartTime and BaseTime of the log at `path`, and every interval of it.
    fn read(path: &Path) -> (Option<Duration>, Option<Duration>, Vec<Read>) {
        let text = std::fs::read(path).unwrap();
        let (mut start_time, mut base_time, mut read) = (None, None, Vec::new());
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
        (start_time, base_time, read)
    }

    #[test]
    fn interval_log_reads_back_with_the_same_counts() {
        let intervals = fixture::random_intervals(7, 6_000, 6);
        let dir = temp_dir("roundtrip");
        let path = dir.join("run.hlog");
        written(&path, 1_735_689_600_250, &intervals);
        let (start_time, base_time, read) = read(&path);
        assert_eq!(start_time, Some(Duration::from_millis(1_735_689_600_250)));
        assert_eq!(base_time, start_time);
        assert_eq!(read.len(), intervals.len());
        for ((start, length, histogram), interval) in read.iter().zip(&intervals) {
            assert_eq!(*start, Duration::from_secs(interval.second));
            assert_eq!(*length, Duration::from_secs(1));
            assert_eq!(histogram.len(), interval.latency.len());
            assert_eq!(histogram, &interval.latency);
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn interval_log_has_the_java_writer_headers() {
        let intervals = fixture::random_intervals(3, 100, 2);
        let dir = temp_dir("headers");
        let path = dir.join("run.hlog");
        written(&path, 1_500_000_040_000, &intervals);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_dir_all(dir).unwrap();
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

    #[test]
    fn shard_logs_merge_second_by_second_on_the_wall_clock() {
        let dir = temp_dir("merge");
        let (a, b) = (fixture::random_intervals(1, 3_000, 3), fixture::random_intervals(2, 4_000, 4));
        // The second shard started 2 s after the first: its second 0 is the run's second 2.
        written(&dir.join("a.hlog"), 1_000_000, &a);
        written(&dir.join("b.hlog"), 1_002_000, &b);
        let out = dir.join("merged.hlog");
        merge_files(&[dir.join("a.hlog"), dir.join("b.hlog")], &out, 1_000_000).unwrap();
        let (start_time, _, merged) = read(&out);
        std::fs::remove_dir_all(dir).unwrap();
        assert_eq!(start_time, Some(Duration::from_millis(1_000_000)));
        let seconds: Vec<u64> = merged.iter().map(|(start, ..)| start.as_secs()).collect();
        assert_eq!(seconds, [0, 1, 2, 3, 4, 5]);
        let mut expected = a[2].latency.clone();
        expected.add(&b[0].latency).unwrap();
        assert_eq!(merged[2].2, expected, "second 2 holds both shards' samples");
        assert_eq!(merged[5].2, b[3].latency);
    }
}

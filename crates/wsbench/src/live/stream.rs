//! `--stream FILE`: one JSON object per line, one line per second of the run, flushed as it
//! is written so `tail -f` or a collector sees each second when it ends. A line holds the
//! second's round trips and latency (the per-second interval the result keeps too), its
//! phase (and stage, with `--stages`), and the run's counters so far. A `--find-max-rate` run appends every step's
//! seconds (each step counts its seconds from 0 again; `step` numbers them).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use serde_json::json;

use super::{Second, Steps};

#[derive(Debug)]
pub struct Stream {
    out: BufWriter<File>,
    /// The measurement being written (0, then 1, … for search steps).
    steps: Steps,
    /// Set once a write failed: said once on stderr, then the stream stops.
    failed: bool,
}

impl Stream {
    pub fn create(path: &Path) -> std::io::Result<Stream> {
        Ok(Stream { out: BufWriter::new(File::create(path)?), steps: Steps::default(), failed: false })
    }

    /// Writes `second` as one line and flushes it.
    pub fn write(&mut self, second: &Second) {
        let step = self.steps.of(second.second);
        let written = serde_json::to_writer(&mut self.out, &line(second, step))
            .map_err(std::io::Error::from)
            .and_then(|()| self.out.write_all(b"\n"))
            .and_then(|()| self.out.flush());
        if let Err(e) = written
            && !self.failed
        {
            self.failed = true;
            eprintln!("wsbench: --stream: writing failed, the stream ends here: {e}");
        }
    }

    pub fn flush(&mut self) {
        let _ = self.out.flush();
    }
}

/// The JSON object of one second; a `--processes` parent's says how its shards compare.
pub fn line(s: &Second, step: u64) -> serde_json::Value {
    let c = &s.counters;
    let mut line = json!({
        "step": step,
        "second": s.second,
        "phase": s.phase.name(),
        "round_trips": s.round_trips,
        "connections_open": s.connections_open,
        "stall_s": s.stall_s,
        "reconnects": s.reconnects,
        "latency_us": { "p50": s.p50_us, "p90": s.p90_us, "p99": s.p99_us, "max": s.max_us },
        "remaining_secs": s.remaining_secs,
        "counters": {
            "messages_sent": c.messages_sent,
            "messages_received": c.messages_received,
            "bytes_sent": c.bytes_sent,
            "bytes_received": c.bytes_received,
            "connections_established": c.connections_established,
            "connections_failed": c.connections_failed(),
            "errors": s.errors,
        },
    });
    if let Some(stage) = s.stage_name() {
        line["stage"] = json!(stage);
    }
    if let Some(spread) = &s.shards {
        line["shards"] = json!({
            "running": spread.running,
            "behind": spread.behind,
            "round_trips": { "min": spread.rate.0, "max": spread.rate.1 },
            "connections_open": { "min": spread.open.0, "max": spread.open.1 },
        });
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Phase;
    use crate::metrics::Counters;

    fn second(n: u64) -> Second {
        Second {
            second: n,
            phase: Phase::Warmup,
            stage: None,
            round_trips: 7,
            connections_open: 2,
            awaiting: false,
            reconnects: 0,
            stall_s: 0,
            p50_us: 100,
            p90_us: 150,
            p99_us: 200,
            max_us: 250,
            counters: Counters { messages_received: 7 * (n + 1), resets: 1, ..Counters::default() },
            errors: [("reset".to_owned(), 1)].into(),
            remaining_secs: None,
            shards: None,
        }
    }

    #[test]
    fn each_second_is_one_flushed_line_and_a_new_step_restarts_the_count() {
        let path = std::env::temp_dir().join(format!("wsbench-stream-test-{}.jsonl", std::process::id()));
        let mut stream = Stream::create(&path).unwrap();
        for n in [0, 1, 0] {
            stream.write(&second(n));
        }
        // No flush and no drop: each line is on disk already.
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1]["second"], 1);
        assert_eq!(lines[1]["phase"], "warm-up");
        assert_eq!(lines[1]["counters"]["messages_received"], 14);
        assert_eq!(lines[1]["counters"]["errors"]["reset"], 1);
        assert_eq!(lines.iter().map(|l| l["step"].as_u64().unwrap()).collect::<Vec<_>>(), [0, 0, 1]);
        drop(stream);
    }

    #[test]
    fn a_staged_second_names_its_stage_and_an_unstaged_one_has_none() {
        let staged = Second { stage: Some(2), ..second(3) };
        assert_eq!(line(&staged, 0)["stage"], "stage2");
        assert!(line(&second(3), 0).get("stage").is_none());
    }
}

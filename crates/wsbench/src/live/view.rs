//! The live view on stderr, so stdout keeps only the report: on a terminal a block redrawn
//! in place (indicatif) with the phase, time elapsed and left, connections, this second's
//! round trips and latency, and errors; elsewhere (piped, CI logs, a `--processes` shard)
//! one plain line per second. `--quiet` shows neither. Numbers are written by
//! [`crate::units::format`], as in the report.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::Second;
use crate::units::format::{group, micros};

/// How often the terminal block's spinner turns.
const SPIN: Duration = Duration::from_millis(200);

#[derive(Debug)]
pub struct View {
    /// `None`: plain lines.
    block: Option<ProgressBar>,
    /// What the rate counts: "round trips", or a fan-out's "deliveries".
    exchanges: &'static str,
}

impl View {
    /// Starts drawing: the block (and its spinner) at once on a terminal. `exchanges` names
    /// what the rate counts.
    pub fn start(exchanges: &'static str) -> View {
        let block = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_message("connecting…");
            bar.enable_steady_tick(SPIN);
            bar
        });
        View { block, exchanges }
    }

    /// One more second of the run.
    pub fn second(&mut self, second: &Second) {
        match &self.block {
            Some(bar) => bar.set_message(block(second, self.exchanges)),
            // A closed stderr (`2>&1 | head`) ends the lines, not the run.
            None => {
                let _ = writeln!(std::io::stderr(), "{}", line(second, self.exchanges));
            }
        }
    }

    /// The run ended: the block is cleared (the report follows on stdout).
    pub fn finish(self) {
        if let Some(bar) = self.block {
            bar.finish_and_clear();
        }
    }
}

/// The terminal block for `second` (its first line follows the spinner).
pub fn block(s: &Second, exchanges: &str) -> String {
    format!(
        "{phase}  {elapsed} s elapsed{left}\n  connections  {up} up, {failed} failed\n  {exchanges:<11}  \
         {rate}/s this second   p50 {p50}   p99 {p99}\n  errors       {errors}",
        phase = s.phase.name(),
        elapsed = s.second + 1,
        left = s.remaining_secs.map_or(String::new(), |left| format!(", {left} s left")),
        up = group(s.connections_open),
        failed = group(s.counters.connect_failures()),
        rate = group(s.round_trips),
        p50 = latency(s.p50_us, s.round_trips),
        p99 = latency(s.p99_us, s.round_trips),
        errors = group(s.error_count()),
    )
}

/// The plain line for `second`: one per second, each whole.
pub fn line(s: &Second, exchanges: &str) -> String {
    format!(
        "wsbench: {elapsed:>4} s {phase:<8}  {rate} {exchanges}/s  p50 {p50}  p99 {p99}  \
         connections {up} up, {failed} failed  errors {errors}{left}",
        elapsed = s.second + 1,
        phase = s.phase.name(),
        rate = group(s.round_trips),
        p50 = latency(s.p50_us, s.round_trips),
        p99 = latency(s.p99_us, s.round_trips),
        up = group(s.connections_open),
        failed = group(s.counters.connect_failures()),
        errors = group(s.error_count()),
        left = s.remaining_secs.map_or(String::new(), |left| format!("  {left} s left")),
    )
}

/// A latency of a second, or `-` when it had no round trips.
fn latency(us: u64, round_trips: u64) -> String {
    if round_trips == 0 { "-".to_owned() } else { micros(us as f64) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Phase;
    use crate::metrics::Counters;

    fn second() -> Second {
        Second {
            second: 4,
            phase: Phase::Measured,
            round_trips: 12_345,
            connections_open: 10,
            p50_us: 210,
            p90_us: 300,
            p99_us: 1_500,
            max_us: 2_000,
            counters: Counters {
                connections_attempted: 11,
                connections_established: 10,
                connect_timeouts: 1,
                resets: 2,
                ..Counters::default()
            },
            errors: [("reset".to_owned(), 2)].into(),
            remaining_secs: Some(3),
        }
    }

    #[test]
    fn a_plain_line_says_everything_of_its_second() {
        assert_eq!(
            line(&second(), "round trips"),
            "wsbench:    5 s measured  12,345 round trips/s  p50 210 µs  p99 1.50 ms  connections 10 up, \
             1 failed  errors 2  3 s left"
        );
        // A connection still connecting has not failed.
        let mut connecting = second();
        connecting.counters.connections_attempted += 1;
        assert!(line(&connecting, "round trips").contains("10 up, 1 failed"));
    }

    #[test]
    fn a_second_without_round_trips_has_no_latency() {
        let idle = Second { round_trips: 0, phase: Phase::Ramp, remaining_secs: None, ..second() };
        let text = block(&idle, "round trips");
        assert!(text.starts_with("ramp  5 s elapsed\n"), "{text}");
        assert!(text.contains("0/s this second   p50 -   p99 -"), "{text}");
    }
}

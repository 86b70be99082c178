//! The live view on stderr, so stdout keeps only the report: on a terminal a block redrawn
//! in place (indicatif) with the phase, time elapsed and left, connections, this second's
//! round trips and latency, and errors; elsewhere (piped, CI logs, a `--processes` shard)
//! one plain line per second. `--quiet` shows neither. A `--processes` parent shows its
//! shards' seconds summed up here too, with how the shards compare ([`spread_text`]). Numbers are written by
//! [`crate::units::format`], as in the report.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{Second, ShardSpread};
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

    /// A line of its own (a shard's message): above the block on a terminal, so the block
    /// is not torn.
    pub fn note(&self, line: &str) {
        match &self.block {
            Some(bar) => bar.println(line),
            None => {
                let _ = writeln!(std::io::stderr(), "{line}");
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
        "{phase}{stage}  {elapsed} s elapsed{left}\n  connections  {up} up, {failed} failed\n  {exchanges:<11}  \
         {rate}/s this second   p50 {p50}   p99 {p99}{stall}\n  errors       {errors}{shards}",
        phase = s.phase.name(),
        stage = s.stage_name().map_or(String::new(), |stage| format!(" · {stage}")),
        elapsed = s.second + 1,
        left = s.remaining_secs.map_or(String::new(), |left| format!(", {left} s left")),
        up = group(s.connections_open),
        failed = group(s.counters.connect_failures()),
        rate = group(s.round_trips),
        p50 = latency(s.p50_us, s.round_trips),
        p99 = latency(s.p99_us, s.round_trips),
        errors = group(s.error_count()),
        stall = stall_text(s).map_or(String::new(), |stall| format!("   {stall}")),
        shards = s
            .shards
            .map_or(String::new(), |spread| format!("\n  shards       {}", spread_text(&spread, exchanges))),
    )
}

/// The plain line for `second`: one per second, each whole.
pub fn line(s: &Second, exchanges: &str) -> String {
    format!(
        "wsbench: {elapsed:>4} s {phase:<8}{stage}  {rate} {exchanges}/s  p50 {p50}  p99 {p99}  \
         connections {up} up, {failed} failed  errors {errors}{stall}{left}{shards}",
        elapsed = s.second + 1,
        phase = s.phase.name(),
        stage = s.stage_name().map_or(String::new(), |stage| format!("  {stage}")),
        rate = group(s.round_trips),
        p50 = latency(s.p50_us, s.round_trips),
        p99 = latency(s.p99_us, s.round_trips),
        up = group(s.connections_open),
        failed = group(s.counters.connect_failures()),
        errors = group(s.error_count()),
        stall = stall_text(s).map_or(String::new(), |stall| format!("  {stall}")) + &reconnects_text(s),
        left = s.remaining_secs.map_or(String::new(), |left| format!("  {left} s left")),
        shards = s.shards.map_or(String::new(), |spread| format!("  {}", spread_text(&spread, exchanges))),
    )
}

/// `  reconnecting 2,338/s`: attempts to reopen lost connections this second, when any.
fn reconnects_text(s: &Second) -> String {
    match s.reconnects {
        0 => String::new(),
        n => format!("  reconnecting {}/s", group(n)),
    }
}

/// `STALLED 3 s`: replies awaited and none for that long, this second included.
fn stall_text(s: &Second) -> Option<String> {
    (s.stall_s > 0).then(|| format!("STALLED {} s", group(s.stall_s)))
}

/// How a `--processes` run's shards compare: `50 shards (2 behind): 626–809 round trips/s,
/// 20–20 up each`.
pub fn spread_text(spread: &ShardSpread, exchanges: &str) -> String {
    let behind = match spread.behind {
        0 => String::new(),
        n => format!(" ({n} behind)"),
    };
    let range = |(low, high): (u64, u64)| format!("{}–{}", group(low), group(high));
    format!(
        "{running} {shards}{behind}: {rates} {exchanges}/s, {open} up each",
        running = spread.running,
        shards = if spread.running == 1 { "shard" } else { "shards" },
        rates = range(spread.rate),
        open = range(spread.open),
    )
}

/// A latency of a second, or `-` when it had no round trips.
fn latency(us: u64, round_trips: u64) -> String {
    if round_trips == 0 { "-".to_owned() } else { micros(us as f64) }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::engine::Phase;
    use crate::metrics::Counters;

    /// A second of the measured window with a bit of everything (also `shard_feed`'s).
    pub(in crate::live) fn second() -> Second {
        Second {
            second: 4,
            phase: Phase::Measured,
            stage: None,
            round_trips: 12_345,
            connections_open: 10,
            awaiting: true,
            reconnects: 0,
            stall_s: 0,
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
            shards: None,
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
    fn a_second_of_many_shards_names_them_and_their_range() {
        let spread = ShardSpread { running: 55, behind: 3, rate: (900, 1_250), open: (18_000, 18_200) };
        let of_shards = Second { shards: Some(spread), ..second() };
        assert!(
            line(&of_shards, "round trips")
                .ends_with("3 s left  55 shards (3 behind): 900–1,250 round trips/s, 18,000–18,200 up each"),
            "{}",
            line(&of_shards, "round trips")
        );
        assert!(block(&of_shards, "round trips").ends_with(
            "\n  shards       55 shards (3 behind): 900–1,250 round trips/s, 18,000–18,200 up each"
        ));
    }

    #[test]
    fn a_stalled_second_says_for_how_long() {
        let stalled = Second { round_trips: 0, stall_s: 3, ..second() };
        assert!(
            line(&stalled, "round trips").contains("errors 2  STALLED 3 s  3 s left"),
            "{}",
            line(&stalled, "round trips")
        );
        assert!(
            block(&stalled, "round trips").contains("p99 -   STALLED 3 s\n"),
            "{}",
            block(&stalled, "round trips")
        );
        assert!(!line(&second(), "round trips").contains("STALLED"));
        let reconnecting = Second { reconnects: 2_338, ..second() };
        assert!(line(&reconnecting, "round trips").contains("errors 2  reconnecting 2,338/s  3 s left"));
        assert!(!line(&second(), "round trips").contains("reconnecting"));
    }

    #[test]
    fn a_second_without_round_trips_has_no_latency() {
        let idle = Second { round_trips: 0, phase: Phase::Ramp, remaining_secs: None, ..second() };
        let text = block(&idle, "round trips");
        assert!(text.starts_with("ramp  5 s elapsed\n"), "{text}");
        assert!(text.contains("0/s this second   p50 -   p99 -"), "{text}");
    }
}

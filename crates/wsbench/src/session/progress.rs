//! The live progress line of a run: on stderr, only when stdout is a terminal (redrawn in
//! place), so piped output stays clean.

use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::engine::Control;

/// Redraws at most this often.
const REDRAW: Duration = Duration::from_millis(500);

pub(super) struct Progress {
    enabled: bool,
    last_echoes: u64,
    last_at: Instant,
    shown: bool,
}

impl Progress {
    pub(super) fn new() -> Progress {
        Progress {
            enabled: std::io::stdout().is_terminal(),
            last_echoes: 0,
            last_at: Instant::now(),
            shown: false,
        }
    }

    pub(super) fn update(&mut self, control: &Control) {
        if !self.enabled || self.last_at.elapsed() < REDRAW {
            return;
        }
        let echoes = control.echoes.load(Ordering::Relaxed);
        let rate = (echoes - self.last_echoes) as f64 / self.last_at.elapsed().as_secs_f64();
        self.last_echoes = echoes;
        self.last_at = Instant::now();
        let open = control.open_connections.load(Ordering::Relaxed);
        let p99 = control.last_p99_us.load(Ordering::Relaxed);
        let elapsed = control.start.elapsed().as_secs_f64();
        let mut stderr = std::io::stderr().lock();
        let _ = write!(
            stderr,
            "\r\x1b[2K{elapsed:6.1}s  {open} connections open  {rate:.0} echoes/s  p99 {:.2} ms",
            p99 as f64 / 1e3
        );
        let _ = stderr.flush();
        self.shown = true;
    }

    pub(super) fn finish(&mut self) {
        if self.shown {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

/// A `--find-max-rate` step begins: said on stderr when no progress line is drawn.
pub(super) fn step_started(rate: f64) {
    if !std::io::stdout().is_terminal() {
        eprintln!("wsbench: step at {rate:.0} messages/s");
    }
}

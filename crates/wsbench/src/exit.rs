//! Exit codes, documented in docs/exit-codes.md, and the one trait that maps what a command
//! produced (a result, or an error: see `error.rs`) to its code. The binary only asks
//! `exit_code()`. This module depends on nothing but the types whose outcome it judges.

/// The command did what it was asked and nothing it measured failed.
pub const SUCCESS: u8 = 0;
/// wsbench itself failed (a server would not start, a file could not be written, a shard
/// of a `--processes` run died).
pub const FAILED: u8 = 1;
/// Bad usage: flags, scenario files.
pub const USAGE: u8 = 2;
/// A run completed but counted failures (`summary.errors` is not empty), or a comparison
/// or a rate search has a server or step that failed. Its results are still written.
pub const RUN_FAILURES: u8 = 3;
/// A run completed but a `--threshold` failed (99, as k6 exits). Its results, with each
/// threshold judged in `summary.thresholds`, are still written.
pub const THRESHOLDS_FAILED: u8 = 99;
/// Interrupted by Ctrl-C (SIGINT), SIGTERM or SIGHUP; what was measured is still written.
pub const INTERRUPTED: u8 = 130;

/// The exit code of a finished run. When it was cut short: [`INTERRUPTED`] for a signal
/// (`ctrl_c`) or [`FAILED`] otherwise (a shard of a `--processes` run died). When it
/// completed: [`THRESHOLDS_FAILED`] when a `--threshold` failed (a CI gate outranks the
/// failures it may be about), [`RUN_FAILURES`] when it counted failures, else [`SUCCESS`].
pub fn of_run(result: &crate::result::RunResult, ctrl_c: bool) -> u8 {
    match (result.interrupted, ctrl_c) {
        (false, _) if crate::thresholds::any_failed(result) => THRESHOLDS_FAILED,
        (false, _) if !result.summary.errors.is_empty() => RUN_FAILURES,
        (false, _) => SUCCESS,
        (true, true) => INTERRUPTED,
        (true, false) => FAILED,
    }
}

/// The exit code of `wsbench compare`: [`INTERRUPTED`] for a signal, [`RUN_FAILURES`] when
/// a server's row failed (`compare::Row::failed`: not installed, failed to start, died, or
/// a run that counted errors or failed a `--threshold`), else [`SUCCESS`].
pub fn of_compare(any_row_failed: bool, ctrl_c: bool) -> u8 {
    match (ctrl_c, any_row_failed) {
        (true, _) => INTERRUPTED,
        (false, true) => RUN_FAILURES,
        (false, false) => SUCCESS,
    }
}

/// The exit code of `run --find-max-rate`: [`INTERRUPTED`] when cut short, [`RUN_FAILURES`]
/// when a step counted errors or no rate held (the search has no answer), else
/// [`SUCCESS`]. A step broken only by the objective or the delivered rate is the search's
/// answer, not a failure.
pub fn of_search(search: &crate::result::search::Search) -> u8 {
    match search.interrupted {
        true => INTERRUPTED,
        false if search.max_rate_per_sec.is_none() => RUN_FAILURES,
        false if search.steps.iter().any(|step| !step.errors.is_empty()) => RUN_FAILURES,
        false => SUCCESS,
    }
}

/// The exit code of `wsbench sweep`: [`INTERRUPTED`] when a signal cut it short,
/// [`THRESHOLDS_FAILED`] when a `--threshold` on it failed, [`RUN_FAILURES`] when a step
/// counted errors or no step measured anything, else [`SUCCESS`]. A knee not found or a
/// fit refused is the sweep's answer, not a failure.
pub fn of_sweep(sweep: &crate::result::sweep::Sweep, ctrl_c: bool) -> u8 {
    match (sweep.interrupted, ctrl_c) {
        (_, true) => INTERRUPTED,
        (true, false) => FAILED,
        _ if sweep.thresholds.iter().any(|t| !t.passed) => THRESHOLDS_FAILED,
        _ if sweep.usable().next().is_none() => RUN_FAILURES,
        _ if sweep.steps.iter().any(|step| step.errors > 0) => RUN_FAILURES,
        _ => SUCCESS,
    }
}

/// What a command's outcome or error means for the process's exit status.
pub trait ExitCode {
    fn exit_code(&self) -> u8;
}

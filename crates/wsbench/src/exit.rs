//! Exit codes, documented in docs/exit-codes.md, and the one trait that maps what a command
//! produced (a result, or an error: see `error.rs`) to its code. The binary only asks
//! `exit_code()`. This module depends on nothing but the result type.

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
/// Interrupted by Ctrl-C (SIGINT) or SIGTERM; what was measured is still written.
pub const INTERRUPTED: u8 = 130;

/// The exit code of a finished run: [`RUN_FAILURES`] when it counted failures, and when it
/// was cut short, [`INTERRUPTED`] for Ctrl-C (`ctrl_c`) or [`FAILED`] otherwise (a shard of
/// a `--processes` run died).
pub fn of_run(result: &crate::result::RunResult, ctrl_c: bool) -> u8 {
    match (result.interrupted, ctrl_c) {
        (false, _) if !result.summary.errors.is_empty() => RUN_FAILURES,
        (false, _) => SUCCESS,
        (true, true) => INTERRUPTED,
        (true, false) => FAILED,
    }
}

/// What a command's outcome or error means for the process's exit status.
pub trait ExitCode {
    fn exit_code(&self) -> u8;
}

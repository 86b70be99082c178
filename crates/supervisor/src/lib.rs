//! Every child process of the workspace is started, signalled and reaped here, and nowhere
//! else (`crates/wsbench/tests/architecture.rs` checks it): the built-in server a run
//! starts, the processes of `serve --processes N`, the shards of `run --processes N`, fleet
//! servers and the fleet's install steps.
//!
//! A [`Launch`] says what to start; started, it is a [`Supervised`] child: in a process
//! group of its own (Ctrl-C in a terminal reaches the parent only, which decides what the
//! children get), with `PR_SET_PDEATHSIG` so that none outlives a parent killed outright,
//! and stopped with SIGTERM to the whole group, then SIGKILL after a grace period. Dropping
//! one stops it. A [`Group`] is children started together and stopped together: it forwards
//! SIGINT and SIGTERM ([`TermSignals`]), names a member that exits on its own, and stops all
//! within a timeout. [`Launch::run_to_completion`] runs a command that is meant to finish (an
//! install step) within a timeout.
//!
//! Children get their settings as data, never as re-stringified flags or as files: the
//! parent writes them as JSON to the child's stdin ([`Launch::this_program`]) and the child,
//! started with `--settings-from-stdin`, reads them with [`read_settings`]. So a new setting
//! cannot be forgotten on the way, and nothing holding them (a `--bearer` token, say) is
//! written to disk or shown in the process table.
//!
//! This crate must never know what its children do: it has no server, run or fleet code.

mod child;
mod group;
mod launch;
mod settings;

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

pub use child::Supervised;
pub use group::{Group, TermSignals};
pub use launch::{DEFAULT_GRACE, Launch};
pub use settings::{SETTINGS_FLAG, encode_settings, read_settings};

/// Why a child could not be started, handed its settings, made ready or kept running; and
/// why a child could not read its settings. Each message names the child.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot find this program's executable to start {name}")]
    ThisProgram {
        name: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start {name}")]
    Spawn {
        name: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the settings of {name} as JSON")]
    EncodeSettings {
        name: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{name} (pid {pid}) did not take its settings ({status})")]
    HandSettings {
        name: String,
        pid: u32,
        status: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{name} (pid {pid}) printed no `{prefix}…` line ({status})")]
    NotReady { name: String, pid: u32, prefix: String, status: String },
    #[error("{name} (pid {pid}) printed {line:?} instead of `{prefix}…`")]
    UnexpectedLine { name: String, pid: u32, prefix: String, line: String },
    #[error("{name} has no standard output for wsbench to read (it was not piped)")]
    NoStdout { name: String },
    #[error("{name} (pid {pid}) exited: {status}")]
    Exited { name: String, pid: u32, status: String },
    #[error("{name} did not finish within {timeout:?} and was stopped")]
    TimedOut { name: String, timeout: std::time::Duration },
    #[error("cannot catch SIGINT and SIGTERM")]
    Signals(#[source] std::io::Error),
    #[error("cannot read the settings on stdin (--{SETTINGS_FLAG} is for wsbench's own child processes)")]
    ReadSettings(#[source] std::io::Error),
    #[error(
        "the settings on stdin are not this command's (--{SETTINGS_FLAG} is for wsbench's own child \
         processes)"
    )]
    ParseSettings(#[source] serde_json::Error),
}

/// How a child ended, in words: `exit status 1`, `signal 9`, `signal 11 (core dumped)`.
pub fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) if status.core_dumped() => format!("signal {signal} (core dumped)"),
        (None, Some(signal)) => format!("signal {signal}"),
        _ => status.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_are_described_by_code_or_signal() {
        assert_eq!(describe(ExitStatus::from_raw(0)), "exit status 0");
        assert_eq!(describe(ExitStatus::from_raw(3 << 8)), "exit status 3");
        assert_eq!(describe(ExitStatus::from_raw(libc::SIGKILL)), "signal 9");
        assert_eq!(describe(ExitStatus::from_raw(libc::SIGSEGV | 0x80)), "signal 11 (core dumped)");
    }
}

//! The error a command ends with: one variant per part of the library, each message naming
//! its cause once (the binary prints the sources after it), and which of them are usage
//! errors ([`ExitCode`]).

pub use crate::causes::with_causes;
use crate::exit::{ExitCode, FAILED, USAGE};

/// Why a command ended in an error: one variant per part of the library, each message
/// naming its cause once (its sources follow it, printed by the binary).
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Run(#[from] crate::session::RunError),
    #[error(transparent)]
    Compare(#[from] crate::compare::CompareError),
    #[error(transparent)]
    Fleet(#[from] crate::fleet::FleetError),
    #[error(transparent)]
    Rtt(#[from] crate::rtt::RttError),
    #[error(transparent)]
    Result(#[from] crate::result::ResultError),
    #[error(transparent)]
    Merge(#[from] crate::merge::MergeError),
    #[error(transparent)]
    Report(#[from] crate::report::ReportError),
    #[error(transparent)]
    Serve(#[from] wsbench_server::ServeError),
    #[error(transparent)]
    Diff(#[from] crate::diff::DiffError),
    #[error(transparent)]
    Recording(#[from] crate::recording::RecordingError),
    #[error(transparent)]
    Record(#[from] crate::record::RecordError),
    /// A shard that could not read the settings its parent handed it.
    #[error(transparent)]
    Child(#[from] wsbench_supervisor::Error),
    #[error("cannot install the signal handlers (SIGINT, SIGTERM, SIGHUP)")]
    Signals(#[source] std::io::Error),
    #[error("cannot write to stdout")]
    Stdout(#[source] std::io::Error),
    /// `--dashboard` names a port that is taken.
    #[error(transparent)]
    Dashboard(#[from] crate::live::dashboard::BindError),
}

impl ExitCode for crate::session::RunError {
    fn exit_code(&self) -> u8 {
        match self {
            crate::session::RunError::Config(_) => USAGE,
            // --metrics-addr names a port that is taken, or --stream a file that cannot be made.
            crate::session::RunError::Live(_) => USAGE,
            crate::session::RunError::TargetWait(crate::session::target_wait::WaitError::Interrupted {
                ..
            }) => crate::exit::INTERRUPTED,
            // The server refused the run's transport before any load: a failure of the
            // target, as a refused handshake is, not of wsbench.
            crate::session::RunError::Transport(crate::engine::dial::CheckError::Refused(_)) => {
                crate::exit::RUN_FAILURES
            }
            _ => FAILED,
        }
    }
}

/// A file the user named that is not what the command reads (missing, empty, cut short,
/// not a result, of a newer wsbench) is bad usage, as a missing `--cacert` is; only writing
/// a file wsbench made is its own failure.
impl ExitCode for crate::result::ResultError {
    fn exit_code(&self) -> u8 {
        match self {
            crate::result::ResultError::Write { .. } => FAILED,
            _ => USAGE,
        }
    }
}

impl ExitCode for CommandError {
    fn exit_code(&self) -> u8 {
        use crate::compare::CompareError;
        use crate::merge::MergeError;
        use crate::report::ReportError;
        use crate::rtt::RttError;
        match self {
            CommandError::Config(_) | CommandError::Compare(CompareError::Config(_)) => USAGE,
            CommandError::Result(error) | CommandError::Report(ReportError::Result(error)) => {
                error.exit_code()
            }
            // Files of no kind it reads, of a newer wsbench, that cannot be reported together,
            // or not in the format asked for.
            CommandError::Report(_) => USAGE,
            CommandError::Rtt(RttError::Config(_)) => USAGE,
            // Files that cannot be read or decoded, or are not the shards of one run: given
            // twice, from different runs or scenarios, a merged result among its shards.
            CommandError::Merge(MergeError::Read(error) | MergeError::Decode { source: error, .. }) => {
                error.exit_code()
            }
            CommandError::Merge(_) => USAGE,
            CommandError::Dashboard(_) => USAGE,
            CommandError::Run(error) => error.exit_code(),
            CommandError::Diff(error) => error.exit_code(),
            CommandError::Recording(error) => error.exit_code(),
            CommandError::Record(error) => error.exit_code(),
            _ => FAILED,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigError;

    #[test]
    fn configuration_errors_are_usage_errors_wherever_they_surface() {
        let bad = || ConfigError::Invalid { setting: "connections", problem: "must be at least 1".into() };
        let usage = [
            CommandError::Config(bad()),
            CommandError::Run(crate::session::RunError::Config(bad())),
            CommandError::Compare(crate::compare::CompareError::Config(bad())),
            CommandError::Rtt(crate::rtt::RttError::Config(bad())),
        ];
        for error in usage {
            assert_eq!(error.exit_code(), USAGE, "{error:?}");
        }
        let failed = CommandError::Run(crate::session::RunError::ServerStart("no".into()));
        assert_eq!(failed.exit_code(), FAILED);
    }
}

//! The one error type of configuration: a bad flag, a bad scenario file. Every variant says
//! which setting is wrong and what to do; the binary maps all of them to the usage exit code.

use std::path::PathBuf;

use crate::units::UnitError;

/// A bad setting, named, with what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Unit(#[from] UnitError),
    #[error("--{setting}: {problem}")]
    Invalid { setting: &'static str, problem: String },
    #[error("cannot read scenario file {path}")]
    ReadScenario {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("scenario file {path}: {message}")]
    ParseScenario { path: PathBuf, message: String },
}

/// A [`ConfigError::Invalid`] for `setting`.
pub(crate) fn invalid(setting: &'static str, problem: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { setting, problem: problem.into() }
}

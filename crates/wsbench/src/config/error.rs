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
    /// A word of `run` (or `scenario` in a scenario file) that names no scenario: the word,
    /// never a flag it was not given with; `hint` says what it may have meant.
    #[error("`{word}` is not a scenario{hint}")]
    NotAScenario { word: String, hint: String },
    /// The server URL (a word of `run`, or `target` in a scenario file).
    #[error("`{url}`: {problem}")]
    Url { url: String, problem: String },
    /// A scenario-file table that has no flag (a member's `[[NAME.steps]]`).
    #[error("scenario file [[{table}]]: {problem}")]
    Table { table: &'static str, problem: String },
    /// A file past its limit ([`crate::input_file`]).
    #[error(transparent)]
    InputFile(#[from] crate::input_file::InputFileError),
    #[error("cannot read scenario file {path}")]
    ReadScenario {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "--scenario {name}{meant}: not a built-in scenario or preset ({known}) and cannot read the file {}",
        path.display()
    )]
    UnknownScenario {
        name: String,
        /// ` (did you mean `NAME`?)`, or empty.
        meant: String,
        known: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `location` is `:LINE:COLUMN`, or empty when the parser does not say.
    #[error("scenario file {}{location}: {message}", path.display())]
    ParseScenario { path: PathBuf, location: String, message: String },
    #[error("--{setting} {}: {problem}", path.display())]
    Output { setting: &'static str, path: PathBuf, problem: String },
    #[error(
        "--{setting} {}: cannot create a file in {}: choose a folder you can write to",
        path.display(),
        folder.display()
    )]
    Unwritable {
        setting: &'static str,
        path: PathBuf,
        folder: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A [`ConfigError::Invalid`] for `setting`.
pub(crate) fn invalid(setting: &'static str, problem: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { setting, problem: problem.into() }
}

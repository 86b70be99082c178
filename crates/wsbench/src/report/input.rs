//! The files `wsbench report` reads, told apart by their `kind`: a result file of
//! `wsbench run` has none (it is known by its `schema_version` and `scenario`), an rtt file
//! says `"kind": "wsbench-rtt"`, a search file `"kind": "wsbench-search"`, a sweep file
//! `"kind": "wsbench-sweep"`. Each kind is
//! parsed into its own type, so a file is rendered the way the command that wrote it did.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use crate::result::search::{SEARCH_KIND, SEARCH_SCHEMA_VERSION, SearchFile};
use crate::result::sweep::{SWEEP_KIND, SWEEP_SCHEMA_VERSION, Sweep, SweepFile};
use crate::result::{ResultError, RunResult};
use crate::rtt::json::{RTT_KIND, RTT_SCHEMA_VERSION, RttFile};

/// Why `wsbench report` cannot render its files. Each message names the file.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Result(#[from] ResultError),
    #[error(
        "{} has kind `{kind}`, which this wsbench does not read (it reads result files of `wsbench \
         run`, `wsbench rtt --json` files, `--find-max-rate --json` files and `wsbench sweep --json` files)",
        path.display()
    )]
    UnknownKind { path: PathBuf, kind: String },
    #[error("{} is not a valid {kind} file: {reason}", path.display())]
    Invalid { path: PathBuf, kind: &'static str, reason: String },
    #[error(
        "{} was written by a newer wsbench ({kind} schema_version {found}; this wsbench reads \
         {supported}): upgrade wsbench to read it",
        path.display()
    )]
    NewerSchema { path: PathBuf, kind: &'static str, found: u64, supported: u32 },
    #[error(
        "cannot report {} ({first_kind}) together with {} ({other_kind}): give files of one kind",
        first.display(),
        other.display()
    )]
    MixedKinds { first: PathBuf, first_kind: &'static str, other: PathBuf, other_kind: &'static str },
    #[error("{} is {kind} file: {what} is for result files; use --format text or json", path.display())]
    NotForKind { path: PathBuf, kind: &'static str, what: &'static str },
}

/// One file given to `wsbench report`, parsed by its kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// A result file of `wsbench run` (or `wsbench merge`).
    Run(Box<RunResult>),
    /// The `--json` file of `wsbench rtt`.
    Rtt(Box<RttFile>),
    /// The `--json` file of `wsbench run --find-max-rate`.
    Search(Box<SearchFile>),
    /// The `--json` file of `wsbench sweep`.
    Sweep(Box<SweepFile>),
}

impl Input {
    /// The kind in words, for messages: `a result`, `an rtt`, `a search`.
    pub fn kind(&self) -> &'static str {
        match self {
            Input::Run(_) => "a result",
            Input::Rtt(_) => "an rtt",
            Input::Search(_) => "a search",
            Input::Sweep(_) => "a sweep",
        }
    }

    /// The file again, pretty-printed in its own field order, ending in a newline.
    pub fn to_json(&self) -> String {
        let text = match self {
            Input::Run(result) => serde_json::to_string_pretty(result),
            Input::Rtt(file) => serde_json::to_string_pretty(file),
            Input::Search(file) => serde_json::to_string_pretty(file),
            Input::Sweep(file) => serde_json::to_string_pretty(file),
        };
        text.expect("a parsed file serializes") + "\n"
    }

    /// The sweep, when this is a sweep file.
    pub fn into_sweep(self) -> Option<Sweep> {
        match self {
            Input::Sweep(file) => Some(file.sweep),
            _ => None,
        }
    }

    /// The result of `wsbench run`, or an error saying `what` needs one.
    pub fn into_run(self, path: &Path, what: &'static str) -> Result<RunResult, ReportError> {
        match self {
            Input::Run(result) => Ok(*result),
            other => Err(ReportError::NotForKind { path: path.to_owned(), kind: other.kind(), what }),
        }
    }
}

/// Reads one file and parses it by its kind.
pub fn read_input(path: &Path) -> Result<Input, ReportError> {
    let bytes = crate::result::read_bounded(path)?;
    let value = crate::result::parse_json(path, &bytes)?;
    match value.get("kind") {
        None => Ok(Input::Run(Box::new(RunResult::from_json_bytes(path, &bytes)?))),
        Some(kind) if kind == RTT_KIND => {
            Ok(Input::Rtt(Box::new(parse(path, &value, &bytes, "wsbench rtt", RTT_SCHEMA_VERSION)?)))
        }
        Some(kind) if kind == SEARCH_KIND => {
            let file = parse(path, &value, &bytes, "wsbench search", SEARCH_SCHEMA_VERSION)?;
            Ok(Input::Search(Box::new(file)))
        }
        Some(kind) if kind == SWEEP_KIND => {
            let file = parse(path, &value, &bytes, "wsbench sweep", SWEEP_SCHEMA_VERSION)?;
            Ok(Input::Sweep(Box::new(file)))
        }
        Some(kind) => Err(ReportError::UnknownKind {
            path: path.to_owned(),
            kind: kind.as_str().map_or_else(|| kind.to_string(), str::to_owned),
        }),
    }
}

/// A file of a known kind, refused when a newer wsbench wrote it. Parsed from its `bytes`
/// (not from `value`, whose objects have lost their order: the rtt protocols' is the table's).
fn parse<T: DeserializeOwned>(
    path: &Path,
    value: &serde_json::Value,
    bytes: &[u8],
    kind: &'static str,
    supported: u32,
) -> Result<T, ReportError> {
    let invalid = |reason: String| ReportError::Invalid { path: path.to_owned(), kind, reason };
    match value.get("schema_version").map(serde_json::Value::as_u64) {
        None => return Err(invalid("it has no `schema_version`".to_owned())),
        Some(Some(found)) if found > u64::from(supported) => {
            return Err(ReportError::NewerSchema { path: path.to_owned(), kind, found, supported });
        }
        Some(Some(found)) if found >= 1 => {}
        Some(_) => return Err(invalid("`schema_version` is not a version number".to_owned())),
    }
    serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))
}

/// Reads every file, refusing a mix of kinds (which would not make one report).
pub fn read_inputs(files: &[PathBuf]) -> Result<Vec<Input>, ReportError> {
    let mut inputs: Vec<Input> = Vec::with_capacity(files.len());
    for path in files {
        let input = read_input(path)?;
        if let Some(first) = inputs.first()
            && std::mem::discriminant(first) != std::mem::discriminant(&input)
        {
            return Err(ReportError::MixedKinds {
                first: files[0].clone(),
                first_kind: first.kind(),
                other: path.clone(),
                other_kind: input.kind(),
            });
        }
        inputs.push(input);
    }
    Ok(inputs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, json: &serde_json::Value) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("wsbench-input-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, json.to_string()).unwrap();
        path
    }

    fn error(name: &str, json: serde_json::Value) -> String {
        let path = file(name, &json);
        let message = read_input(&path).unwrap_err().to_string();
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
        message
    }

    #[test]
    fn an_unknown_kind_is_named_with_the_kinds_read() {
        let message =
            error("other.json", serde_json::json!({ "kind": "wsbench-other", "schema_version": 1 }));
        assert!(message.contains("other.json has kind `wsbench-other`"), "{message}");
        assert!(message.contains("`wsbench rtt --json` files"), "{message}");
    }

    #[test]
    fn a_newer_rtt_or_search_file_asks_for_a_newer_wsbench() {
        let message = error("rtt.json", serde_json::json!({ "kind": "wsbench-rtt", "schema_version": 9 }));
        assert!(
            message.ends_with(
                "(wsbench rtt schema_version 9; this wsbench reads 1): upgrade wsbench to read it"
            ),
            "{message}"
        );
        let message = error("search.json", serde_json::json!({ "kind": "wsbench-search" }));
        assert!(
            message.ends_with("search.json is not a valid wsbench search file: it has no `schema_version`"),
            "{message}"
        );
        let message = error("bad.json", serde_json::json!({ "kind": "wsbench-search", "schema_version": 1 }));
        assert!(message.contains("bad.json is not a valid wsbench search file: missing field"), "{message}");
    }

    #[test]
    fn a_file_without_kind_is_a_result_file() {
        let message = error("old.json", serde_json::json!({ "scenario": "echo" }));
        assert!(
            message.ends_with("old.json is not a wsbench result file: it has no `schema_version`"),
            "{message}"
        );
    }
}

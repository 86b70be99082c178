//! `wsbench report FILE...`: renders result files for people (a compact terminal report) or
//! for scripts (the JSON, pretty-printed). Each output format is its own submodule; this
//! module reads the files and dispatches.

mod text;

use std::path::PathBuf;

use crate::result::{ResultError, RunResult};

pub use text::{render_text, render_text_with};

/// How `wsbench report` renders result files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReportFormat {
    /// The terminal report.
    #[default]
    Text,
    /// The result file itself, checked and pretty-printed.
    Json,
}

/// Renders every file in turn, without colours. See [`report_command_with`].
pub fn report_command(files: &[PathBuf], format: ReportFormat) -> Result<String, ResultError> {
    report_command_with(files, format, false)
}

/// Renders every file in turn; stops at the first file that cannot be read.
///
/// Text: one report per file, each headed `==> FILE <==` when there are several.
/// Json: each file parsed and pretty-printed back in the file's field order (fields this
/// wsbench does not know are dropped), one document after another, as `jq` reads them. `color` adds ANSI colours to text reports.
pub fn report_command_with(
    files: &[PathBuf],
    format: ReportFormat,
    color: bool,
) -> Result<String, ResultError> {
    let mut out = String::new();
    for (index, path) in files.iter().enumerate() {
        match format {
            ReportFormat::Text => {
                let result = RunResult::read_json(path)?;
                if files.len() > 1 {
                    if index > 0 {
                        out.push('\n');
                    }
                    out.push_str(&format!("==> {} <==\n", path.display()));
                }
                out.push_str(&render_text_with(&result, color));
            }
            ReportFormat::Json => {
                let result = RunResult::read_json(path)?;
                out.push_str(&serde_json::to_string_pretty(&result).expect("a result serializes"));
                out.push('\n');
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::fixture;

    fn written(name: &str) -> (PathBuf, RunResult) {
        let dir = std::env::temp_dir().join(format!("wsbench-report-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let result = RunResult::from_outcome(&fixture::closed_loop());
        let path = dir.join(name);
        result.write_json(&path).unwrap();
        (path, result)
    }

    #[test]
    fn json_format_prints_the_file_back() {
        let (path, result) = written("json-back.json");
        let out = report_command(std::slice::from_ref(&path), ReportFormat::Json).unwrap();
        let parsed: RunResult = serde_json::from_str(&out).unwrap();
        assert_eq!(parsed, result);
        assert!(out.starts_with("{\n  \"schema_version\": 1,"), "{}", &out[..40]);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn text_format_heads_each_of_several_files() {
        let (first, result) = written("several-1.json");
        let (second, _) = written("several-2.json");
        let out = report_command(&[first.clone(), second.clone()], ReportFormat::Text).unwrap();
        assert!(out.starts_with(&format!("==> {} <==\n", first.display())));
        assert!(out.contains(&format!("\n\n==> {} <==\n", second.display())));
        assert_eq!(out.matches(&render_text(&result)).count(), 2);
        let single = report_command(std::slice::from_ref(&first), ReportFormat::Text).unwrap();
        assert_eq!(single, render_text(&result));
        std::fs::remove_dir_all(first.parent().unwrap()).unwrap();
        std::fs::remove_dir_all(second.parent().unwrap()).unwrap();
    }

    #[test]
    fn unreadable_file_is_named_in_the_error() {
        let missing = PathBuf::from("/nonexistent/wsbench/result.json");
        let error = report_command(std::slice::from_ref(&missing), ReportFormat::Text).unwrap_err();
        assert!(error.to_string().contains("/nonexistent/wsbench/result.json"), "{error}");
    }
}

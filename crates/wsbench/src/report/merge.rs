//! What `wsbench merge` prints: with `-o FILE` the merged result is written there and the
//! terminal report of it is shown; without, the merged result itself goes to stdout as
//! JSON, for a pipe or a redirect.

use super::text::render_text_with;
use crate::result::RunResult;

/// The output of `wsbench merge`: the terminal report when the merged result was written
/// to a file (`written`), else the merged result as pretty JSON. `color` adds ANSI colours
/// to the report.
pub fn render_merge(merged: &RunResult, written: bool, color: bool) -> String {
    if written {
        render_text_with(merged, color)
    } else {
        serde_json::to_string_pretty(merged).expect("a result serializes") + "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn written_shows_the_report_else_the_json() {
        let merged = RunResult::from_outcome(&fixture::closed_loop());
        assert_eq!(render_merge(&merged, true, false), super::super::render_text(&merged));
        let json = render_merge(&merged, false, false);
        assert!(json.ends_with("}\n"));
        assert_eq!(serde_json::from_str::<RunResult>(&json).unwrap(), merged);
    }
}

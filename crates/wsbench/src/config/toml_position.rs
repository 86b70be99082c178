//! Where in a scenario file's text a TOML error or a key is (line and column, the key a
//! value belongs to), so that errors point at the line to fix. Pure text arithmetic.

/// `:LINE:COLUMN` (1-based) of the byte `offset` of `text`.
pub(super) fn line_column(text: &str, offset: usize) -> String {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    format!(":{line}:{column}")
}

/// The key whose value starts at byte `offset` of `text` (`connections = "many"`, or one
/// of an inline table's `{ count = "x" }`), when the offset is in a value.
pub(super) fn key_at(text: &str, offset: usize) -> Option<String> {
    let before = text.get(..offset)?;
    let line = &before[before.rfind('\n').map_or(0, |at| at + 1)..];
    let (head, _) = line.rsplit_once('=')?;
    let key = head.trim_end().rsplit(['{', ',', ' ', '\t']).next()?.trim_matches(['"', '\'']);
    (!key.is_empty()).then(|| key.to_owned())
}

/// The byte offset of the line that sets `key` in `text` (`key = …` at a line's start).
pub(super) fn key_offset(text: &str, key: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let rest = trimmed.strip_prefix(key).or_else(|| trimmed.strip_prefix(&format!("\"{key}\"")));
        if rest.is_some_and(|rest| rest.trim_start().starts_with('=')) {
            return Some(offset + line.len() - trimmed.len());
        }
        offset += line.len();
    }
    None
}

//! `--payload text:FILE`: messages taken from the lines of a file (a recorded feed, say), so
//! that compression ratios and message sizes are those of real traffic.
//!
//! The file is read once, when the settings are validated: a missing, unreadable or empty
//! file is a one-line usage error before any connection is made. Blank lines are skipped (an
//! empty message measures nothing), a trailing `\r` is dropped, and the engine sends the
//! lines in order, cycling, checking each echo against the line it sent.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::ConfigError;
use super::error::invalid;
use crate::input_file::{InputFileError, InputKind};

/// The lines of a `text:FILE` payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextLines {
    pub path: PathBuf,
    /// Never empty.
    pub lines: Arc<Vec<Vec<u8>>>,
}

impl TextLines {
    /// Reads the messages of `path`.
    pub fn load(path: &Path) -> Result<TextLines, ConfigError> {
        let shown = path.display();
        let bytes = crate::input_file::read(path, InputKind::PayloadText).map_err(|e| match e {
            InputFileError::Read { source, .. } => invalid(
                "payload",
                format!("cannot read text:{shown} ({source}); give a file of messages, one a line"),
            ),
            too_big => invalid("payload", format!("text:{too_big}")),
        })?;
        let lines: Vec<Vec<u8>> = bytes
            .split(|&b| b == b'\n')
            .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
            .filter(|line| !line.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        if lines.is_empty() {
            return Err(invalid(
                "payload",
                format!("text:{shown} has no lines; give a file of messages, one a line"),
            ));
        }
        Ok(TextLines { path: path.to_owned(), lines: Arc::new(lines) })
    }

    /// Whether every line is UTF-8 (text frames need it).
    pub fn is_utf8(&self) -> bool {
        self.lines.iter().all(|line| std::str::from_utf8(line).is_ok())
    }
}

impl Serialize for TextLines {
    /// As the user gave it: the path.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.path.display().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_without_blanks_or_carriage_returns() {
        let dir = std::env::temp_dir().join(format!("wsbench-lines-{}", std::process::id()));
        let file = dir.join("feed.jsonl");
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(&file, "{\"a\":1}\r\n\n{\"b\":2}\n"))
            .unwrap();
        let lines = TextLines::load(&file).unwrap();
        assert_eq!(*lines.lines, vec![b"{\"a\":1}".to_vec(), b"{\"b\":2}".to_vec()]);
        std::fs::write(&file, "\n\n").unwrap();
        let error = TextLines::load(&file).unwrap_err().to_string();
        assert!(error.contains("has no lines"), "{error}");
        let error = TextLines::load(&dir.join("missing")).unwrap_err().to_string();
        assert!(error.contains("cannot read text:") && error.contains("--payload"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

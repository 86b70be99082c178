//! The recording file: one JSON event a line, in the format `wsbench import` reads
//! (`recording::jsonl`), each line written whole with one `write` and so on disk as soon as
//! its message was forwarded. Shared by every connection behind one lock, so lines never
//! interleave. Bounded: past the messages or bytes it may hold, or the connections a
//! recording may name, it records nothing more (forwarding goes on), writes one last line
//! saying why and says so once on stderr; a closed journal (after a signal) writes nothing,
//! so the file always ends with a whole line.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::recording::MAX_CONNECTIONS;
use crate::units::format::group;

/// What a journal may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalBounds {
    /// Messages recorded over every connection.
    pub messages: u64,
    /// Bytes of the file.
    pub bytes: u64,
}

/// Room kept under the byte bound for the line that says recording stopped.
const LAST_LINE_ROOM: u64 = 512;

/// What was recorded, for the summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub connections: u64,
    pub messages: u64,
    pub bytes: u64,
    pub upstream_failures: u64,
    /// Why recording stopped before the end, if it did.
    pub stopped: Option<String>,
}

struct State {
    file: File,
    tally: Tally,
    closed: bool,
}

pub struct Journal {
    path: PathBuf,
    bounds: JournalBounds,
    state: Mutex<State>,
}

/// Seconds since the Unix epoch, as recordings give times.
pub fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

impl Journal {
    /// Creates (or empties) the file at `path`.
    pub fn create(path: &Path, bounds: JournalBounds) -> std::io::Result<Journal> {
        let file = File::create(path)?;
        let state = State { file, tally: Tally::default(), closed: false };
        Ok(Journal { path: path.to_owned(), bounds, state: Mutex::new(state) })
    }

    /// A number for a new connection, or `None` once a recording holds as many as
    /// `wsbench import` reads (or recording stopped): that connection is forwarded
    /// unrecorded.
    pub fn next_connection(&self) -> Option<usize> {
        let mut state = self.lock();
        if state.closed || state.tally.stopped.is_some() {
            return None;
        }
        if state.tally.connections >= MAX_CONNECTIONS as u64 {
            let why = format!(
                "{} connections recorded, as many as a recording holds",
                group(MAX_CONNECTIONS as u64)
            );
            self.stop(&mut state, None, why);
            return None;
        }
        state.tally.connections += 1;
        Some(state.tally.connections as usize - 1)
    }

    /// Writes `event` (an object) for connection `conn`, with `conn` and `time` added; a
    /// message event counts against the message bound. False when it was not written
    /// (recording stopped or closed, or the file failed).
    pub fn write(&self, conn: usize, mut event: Value, message: bool) -> bool {
        if let Value::Object(fields) = &mut event {
            fields.insert("conn".into(), json!(conn));
            fields.entry("time").or_insert_with(|| json!(now()));
        }
        let mut line = event.to_string();
        line.push('\n');
        let mut state = self.lock();
        if state.closed || state.tally.stopped.is_some() {
            return false;
        }
        if message && state.tally.messages >= self.bounds.messages {
            let why = format!("{} messages recorded (--max-messages)", group(self.bounds.messages));
            self.stop(&mut state, Some(conn), why);
            return false;
        }
        if state.tally.bytes + line.len() as u64 + LAST_LINE_ROOM > self.bounds.bytes {
            let why =
                format!("the file reached its bound of {} bytes (--max-bytes)", group(self.bounds.bytes));
            self.stop(&mut state, Some(conn), why);
            return false;
        }
        if let Err(error) = state.file.write_all(line.as_bytes()) {
            let why = format!("cannot write {}: {error}", self.path.display());
            state.tally.stopped = Some(why.clone());
            eprintln!("wsbench record: {why}: recording stopped, still forwarding");
            return false;
        }
        state.tally.bytes += line.len() as u64;
        state.tally.messages += u64::from(message);
        true
    }

    /// Counts a connection whose upstream could not be reached (its event written apart).
    pub fn count_upstream_failure(&self) {
        self.lock().tally.upstream_failures += 1;
    }

    /// Ends recording for good (a signal): nothing more is written, the file ends with a
    /// whole line. Returns what was recorded.
    pub fn close(&self) -> Tally {
        let mut state = self.lock();
        state.closed = true;
        let _ = state.file.sync_data();
        state.tally.clone()
    }

    /// Stops recording for `why`: one last line (when `conn` names the connection whose
    /// event was refused), and one note on stderr.
    fn stop(&self, state: &mut State, conn: Option<usize>, why: String) {
        if let Some(conn) = conn {
            let line = format!(
                "{}\n",
                json!({"conn": conn, "event": "recording_stopped", "time": now(), "why": why})
            );
            let fits = state.tally.bytes + line.len() as u64 <= self.bounds.bytes;
            if fits && state.file.write_all(line.as_bytes()).is_ok() {
                state.tally.bytes += line.len() as u64;
            }
        }
        eprintln!("wsbench record: {why}: recording stopped, still forwarding");
        state.tally.stopped = Some(why);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal(name: &str, bounds: JournalBounds) -> (Journal, PathBuf) {
        let path = std::env::temp_dir().join(format!("wsbench-journal-{name}-{}.jsonl", std::process::id()));
        (Journal::create(&path, bounds).unwrap(), path)
    }

    #[test]
    fn past_the_message_bound_one_line_says_why_and_nothing_more_is_written() {
        let (journal, path) = journal("messages", JournalBounds { messages: 2, bytes: 1 << 20 });
        let conn = journal.next_connection().unwrap();
        for n in 0..5 {
            journal.write(
                conn,
                json!({"event": "message", "dir": "send", "opcode": 1, "data": n.to_string()}),
                true,
            );
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[2].contains("recording_stopped") && lines[2].contains("--max-messages"), "{text}");
        let tally = journal.close();
        assert_eq!((tally.messages, tally.connections), (2, 1));
        assert!(journal.next_connection().is_none());
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn the_byte_bound_holds_with_the_last_line_and_a_closed_journal_writes_nothing() {
        let (journal, path) = journal("bytes", JournalBounds { messages: 1000, bytes: 2000 });
        for _ in 0..100 {
            journal.write(
                0,
                json!({"event": "message", "dir": "send", "opcode": 1, "data": "x".repeat(100)}),
                true,
            );
        }
        let written = std::fs::metadata(&path).unwrap().len();
        assert!(written <= 2000, "{written}");
        assert!(std::fs::read_to_string(&path).unwrap().contains("--max-bytes"));
        let (journal, path2) = journal_closed();
        assert!(!journal.write(0, json!({"event": "close"}), false));
        assert_eq!(std::fs::metadata(&path2).unwrap().len(), 0);
        let _ = (std::fs::remove_file(path), std::fs::remove_file(path2));
    }

    fn journal_closed() -> (Journal, PathBuf) {
        let (journal, path) = journal("closed", JournalBounds { messages: 10, bytes: 1 << 20 });
        journal.close();
        (journal, path)
    }
}

//! Recorded WebSocket sessions read into one model ([`Recording`]): a browser's HAR export
//! (Chromium's `_webSocketMessages`) or a JSONL file with an event a line. Both are hostile
//! input: the file's size, its entries, messages and each message's bytes are bounded, and
//! a file past a bound is refused with the file, the entry or line, and the bound named.
//! `import` turns a recording into a flow scenario file a person can read ([`to_flow`]).

mod flow_file;
mod har;
mod jsonl;

use std::path::{Path, PathBuf};

use crate::input_file::{InputFileError, InputKind, read_text};
use crate::units::format::group;

pub use flow_file::{Imported, to_flow};

/// Connections (HAR entries, JSONL connection numbers) a recording may hold.
pub const MAX_CONNECTIONS: usize = 10_000;
/// Messages over every connection of a recording.
pub const MAX_MESSAGES: usize = 100_000;
/// Bytes of one recorded message.
pub const MAX_MESSAGE_BYTES: usize = 1 << 20;

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Sent,
    Received,
}

/// One recorded message: its time (seconds, any origin), direction, and payload (text, or
/// binary as the bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub time: f64,
    pub direction: Direction,
    pub binary: bool,
    pub data: Vec<u8>,
}

impl Recorded {
    /// A message as recordings give it: `opcode` 2 is binary (its data base64), else text.
    fn new(time: f64, direction: Direction, opcode: u8, data: String) -> Recorded {
        Recorded { time, direction, binary: opcode == 2, data: data.into_bytes() }
    }
}

/// One recorded connection: its URL, handshake headers and messages in time order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Connection {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub subprotocol: Option<String>,
    pub messages: Vec<Recorded>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recording {
    pub connections: Vec<Connection>,
}

#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    #[error(transparent)]
    Read(#[from] InputFileError),
    /// Past a bound, or not a recording: `place` is the entry or line.
    #[error("recording {}: {place}{problem}", file.display())]
    Refused { file: PathBuf, place: String, problem: String },
    #[error("cannot write {}", file.display())]
    Write {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl crate::exit::ExitCode for RecordingError {
    /// A recording that cannot be read or imported is bad input (usage); a file that cannot
    /// be written is a failure.
    fn exit_code(&self) -> u8 {
        match self {
            RecordingError::Write { .. } => crate::exit::FAILED,
            _ => crate::exit::USAGE,
        }
    }
}

/// `wsbench import`: recorded connection `connection` (from 1) of `file` as a flow scenario
/// file, its pauses divided by `speed`; written to `output` when given.
pub fn import(
    file: &Path,
    connection: usize,
    speed: f64,
    output: Option<&Path>,
) -> Result<Imported, RecordingError> {
    let recording = read(file)?;
    let source = file.display().to_string();
    let imported = to_flow(&recording, connection.saturating_sub(1), speed, &source)
        .map_err(|problem| RecordingError::refused(file, "", problem))?;
    if let Some(output) = output {
        std::fs::write(output, &imported.toml)
            .map_err(|source| RecordingError::Write { file: output.to_owned(), source })?;
    }
    Ok(imported)
}

impl RecordingError {
    fn refused(file: &Path, place: impl Into<String>, problem: impl Into<String>) -> RecordingError {
        let place = place.into();
        let place = if place.is_empty() { place } else { format!("{place}: ") };
        RecordingError::Refused { file: file.to_owned(), place, problem: problem.into() }
    }
}

/// Reads `file` (`.har` as a HAR export, anything else as JSONL), every bound checked.
pub fn read(file: &Path) -> Result<Recording, RecordingError> {
    let text = read_text(file, InputKind::Recording)?;
    let recording = match file.extension().and_then(|e| e.to_str()) {
        Some("har") => har::parse(file, &text)?,
        _ => jsonl::parse(file, &text)?,
    };
    if recording.connections.iter().all(|c| c.messages.is_empty()) {
        return Err(RecordingError::refused(file, "", "no WebSocket messages in it"));
    }
    Ok(recording)
}

/// Counts messages over the recording so far against [`MAX_MESSAGES`] and checks one's size.
fn check_message(file: &Path, place: &str, total: usize, bytes: usize) -> Result<(), RecordingError> {
    if total > MAX_MESSAGES {
        return Err(RecordingError::refused(
            file,
            place,
            format!("more than {} messages: at most that many in a recording", group(MAX_MESSAGES as u64)),
        ));
    }
    if bytes > MAX_MESSAGE_BYTES {
        return Err(RecordingError::refused(
            file,
            place,
            format!(
                "a message of {} bytes: at most {}",
                group(bytes as u64),
                group(MAX_MESSAGE_BYTES as u64)
            ),
        ));
    }
    Ok(())
}

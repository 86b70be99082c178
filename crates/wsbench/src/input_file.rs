//! Every file a user names for wsbench to read (a scenario file, a `text:` payload file, a
//! `--header-file`, TLS certificates and keys, the result, rtt and search files `report`
//! and `merge` read) is read through [`read`]: at most a limit per kind of file,
//! whatever the file is. A regular file's length is no promise (`/dev/zero`, a FIFO fed
//! without end, `/proc` files all say 0), so the limit is on the bytes actually read: one
//! past it and the file is refused with one line naming it, the limit and what to do. A file
//! whose length is not known before it is read (a device, a pipe, a `/proc` file) is read to
//! [`MAX_UNSIZED_BYTES`] at most whatever its kind may hold, so an endless one is refused
//! after a moment and a few MiB, not after a payload file's whole 1 GiB; a bigger input goes
//! in a regular file, whose length is checked before it is read. Nothing here may read a
//! user's file without a limit.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::units::format::bytes;

/// Bytes of a TOML scenario file (`--scenario FILE`).
pub const MAX_SCENARIO_FILE_BYTES: u64 = 1 << 20;
/// Bytes of a `--header-file`.
pub const MAX_HEADER_FILE_BYTES: u64 = 1 << 20;
/// Bytes of a PEM file (`--cacert`, `--client-cert`, `--client-key`).
pub const MAX_PEM_FILE_BYTES: u64 = 16 << 20;
/// Bytes of a `text:FILE` payload file (read whole before the run, its lines the messages).
pub const MAX_PAYLOAD_FILE_BYTES: u64 = 1 << 30;
/// Bytes of a result, rtt or search file read back (`report`, `merge`): a week's
/// run keeps a per-second timeline of under 100 MB, pretty-printed.
pub const MAX_RESULT_FILE_BYTES: u64 = 256 << 20;

/// Bytes of a `--data` CSV file (read whole before the run, a row per connection).
pub const MAX_DATA_FILE_BYTES: u64 = 64 << 20;

/// Bytes of a recorded session (`wsbench import`: a HAR export or a JSONL recording).
pub const MAX_RECORDING_FILE_BYTES: u64 = 256 << 20;

/// Bytes read of a file whose length is not known before reading (a pipe, a device, a
/// `/proc` file), whatever its kind may hold: what can be refused in a moment.
pub const MAX_UNSIZED_BYTES: u64 = 16 << 20;

/// What a file is to wsbench: its limit and what to say when it is past it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    Scenario,
    HeaderFile,
    Pem,
    PayloadText,
    Result,
    Data,
    Recording,
}

impl InputKind {
    /// The most this kind of file may hold.
    pub fn limit(self) -> u64 {
        match self {
            InputKind::Scenario => MAX_SCENARIO_FILE_BYTES,
            InputKind::HeaderFile => MAX_HEADER_FILE_BYTES,
            InputKind::Pem => MAX_PEM_FILE_BYTES,
            InputKind::PayloadText => MAX_PAYLOAD_FILE_BYTES,
            InputKind::Result => MAX_RESULT_FILE_BYTES,
            InputKind::Data => MAX_DATA_FILE_BYTES,
            InputKind::Recording => MAX_RECORDING_FILE_BYTES,
        }
    }

    /// The kind in words, for messages.
    fn what(self) -> &'static str {
        match self {
            InputKind::Scenario => "a scenario file",
            InputKind::HeaderFile => "a header file",
            InputKind::Pem => "a PEM file",
            InputKind::PayloadText => "a text: payload file",
            InputKind::Result => "a wsbench result, rtt or search file",
            InputKind::Data => "a --data CSV file",
            InputKind::Recording => "a recorded session (HAR or JSONL)",
        }
    }

    /// What to do about a file past the limit.
    fn advice(self) -> &'static str {
        match self {
            InputKind::Scenario => "give a TOML scenario file",
            InputKind::HeaderFile => "give a file of `Name: value` lines",
            InputKind::Pem => "give a PEM file of certificates or a key",
            InputKind::PayloadText => "give a smaller file of messages, one a line",
            InputKind::Result => "give a file wsbench wrote",
            InputKind::Data => "give fewer rows (row i mod rows goes to connection i)",
            InputKind::Recording => "record a shorter session, or keep only the connections to replay",
        }
    }
}

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputFileError {
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{} holds more than {}, the most {} may hold (whatever the file is): {}",
        path.display(),
        limit_text(kind.limit()),
        kind.what(),
        kind.advice()
    )]
    TooBig { path: PathBuf, kind: InputKind },
    #[error(
        "{} is not a regular file and gave more than {}, the most wsbench reads of a pipe or device: \
         write it to a regular file ({} may hold {})",
        path.display(),
        limit_text(MAX_UNSIZED_BYTES),
        kind.what(),
        limit_text(kind.limit())
    )]
    TooBigUnsized { path: PathBuf, kind: InputKind },
}

impl InputFileError {
    /// The file at fault.
    pub fn path(&self) -> &Path {
        match self {
            InputFileError::Read { path, .. }
            | InputFileError::TooBig { path, .. }
            | InputFileError::TooBigUnsized { path, .. } => path,
        }
    }
}

/// A limit in its own unit (`4 MiB`, not `4.00 MiB`).
fn limit_text(limit: u64) -> String {
    match limit.trailing_zeros() {
        30.. => format!("{} GiB", limit >> 30),
        20.. => format!("{} MiB", limit >> 20),
        _ => bytes(limit),
    }
}

/// The bytes of `path`, refused past the limit of its `kind`: at most one byte more than
/// the limit is ever read, whatever the file is (regular, FIFO, device).
pub fn read(path: &Path, kind: InputKind) -> Result<Vec<u8>, InputFileError> {
    read_limited(path, kind, kind.limit())
}

/// [`read`] as UTF-8 text; a file that is not is a read error of kind `InvalidData`.
pub fn read_text(path: &Path, kind: InputKind) -> Result<String, InputFileError> {
    let bytes = read(path, kind)?;
    String::from_utf8(bytes).map_err(|e| InputFileError::Read {
        path: path.to_owned(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
    })
}

fn read_limited(path: &Path, kind: InputKind, limit: u64) -> Result<Vec<u8>, InputFileError> {
    let failed = |source| InputFileError::Read { path: path.to_owned(), source };
    let file = std::fs::File::open(path).map_err(failed)?;
    let meta = file.metadata().ok();
    // A regular file that says it is too big is refused before it is read.
    if meta.as_ref().is_some_and(|meta| meta.is_file() && meta.len() > limit) {
        return Err(InputFileError::TooBig { path: path.to_owned(), kind });
    }
    // One that says nothing (0 bytes, not a regular file) is read to a bound of its own.
    let sized = meta.is_some_and(|meta| meta.is_file() && meta.len() > 0);
    let bound = if sized { limit } else { limit.min(MAX_UNSIZED_BYTES) };
    let mut bytes = Vec::new();
    file.take(bound.saturating_add(1)).read_to_end(&mut bytes).map_err(failed)?;
    match bytes.len() as u64 {
        read if read <= bound => Ok(bytes),
        _ if bound < limit => Err(InputFileError::TooBigUnsized { path: path.to_owned(), kind }),
        _ => Err(InputFileError::TooBig { path: path.to_owned(), kind }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of its own in a folder of this test process.
    fn temp_file(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("wsbench-input-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn a_device_is_read_up_to_the_limit_and_refused() {
        let error = read_limited(Path::new("/dev/zero"), InputKind::Scenario, 1000).unwrap_err();
        assert!(matches!(error, InputFileError::TooBig { .. }), "{error}");
        let text = error.to_string();
        assert!(
            text.starts_with("/dev/zero holds more than 1 MiB, the most a scenario file may hold"),
            "{text}"
        );
        assert!(text.ends_with("give a TOML scenario file"), "{text}");
    }

    #[test]
    fn a_device_is_read_only_to_the_bound_of_a_file_of_unknown_length() {
        let error = read(Path::new("/dev/zero"), InputKind::PayloadText).unwrap_err();
        assert!(matches!(error, InputFileError::TooBigUnsized { .. }), "{error}");
        assert_eq!(
            error.to_string(),
            "/dev/zero is not a regular file and gave more than 16 MiB, the most wsbench reads of a pipe or \
             device: write it to a regular file (a text: payload file may hold 1 GiB)"
        );
        assert_eq!(error.path(), Path::new("/dev/zero"));
        let empty = read(Path::new("/dev/null"), InputKind::PayloadText).unwrap();
        assert!(empty.is_empty(), "a device that ends is read as it is");
    }

    #[test]
    fn a_file_at_the_limit_is_read_whole() {
        let path = temp_file("f");
        std::fs::write(&path, b"12345").unwrap();
        assert_eq!(read_limited(&path, InputKind::HeaderFile, 5).unwrap(), b"12345");
        assert!(matches!(read_limited(&path, InputKind::HeaderFile, 4), Err(InputFileError::TooBig { .. })));
    }

    #[test]
    fn a_sparse_regular_file_past_the_limit_is_refused_unread() {
        let path = temp_file("big");
        std::fs::File::create(&path).unwrap().set_len(MAX_HEADER_FILE_BYTES + 1).unwrap();
        let error = read(&path, InputKind::HeaderFile).unwrap_err();
        assert!(error.to_string().contains("more than 1 MiB, the most a header file may hold"), "{error}");
    }

    #[test]
    fn a_missing_file_is_a_read_error_naming_it() {
        let error = read(Path::new("/nonexistent/x.toml"), InputKind::Scenario).unwrap_err();
        assert_eq!(error.to_string(), "cannot read /nonexistent/x.toml");
        assert_eq!(error.path(), Path::new("/nonexistent/x.toml"));
    }

    #[test]
    fn text_that_is_not_utf8_is_a_read_error() {
        let path = temp_file("bin");
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        let error = read_text(&path, InputKind::Scenario).unwrap_err();
        assert!(matches!(error, InputFileError::Read { .. }));
    }
}

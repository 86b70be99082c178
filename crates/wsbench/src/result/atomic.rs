//! Atomic file replacement for result files and reports: write `PATH.tmp-PID`, fsync,
//! rename over `PATH`. A full disk, a crash or a kill mid-write therefore never leaves a
//! truncated file where scripts expect a complete one; on error the temporary file is removed.
//! A symlink's target is what is replaced (the link stays), and a FIFO or a device is written
//! in place, never replaced ([`crate::output_path`]).

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::ResultError;
use crate::output_path::OutputPath;

/// The temporary file written next to `path` before the rename.
pub(crate) fn temp_path(path: &Path) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(format!(".tmp-{}", std::process::id()));
    PathBuf::from(name)
}

/// Replaces `path` (a symlink's target) with what `contents` writes, or leaves it untouched
/// and returns an error naming `path`; a FIFO or a device is written in place.
pub(crate) fn write_atomically(
    path: &Path,
    contents: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), ResultError> {
    let error = |source| ResultError::Write { path: path.to_owned(), source };
    let path = match crate::output_path::resolve(path) {
        Ok(OutputPath::Replace(file)) => file,
        Ok(OutputPath::InPlace(special)) => return write_in_place(&special, contents).map_err(error),
        Err(not_a_file) => return Err(error(io::Error::other(not_a_file))),
    };
    let path = path.as_path();
    let temp = temp_path(path);
    let written = write_then_rename(path, &temp, contents);
    match written {
        Ok(()) => {
            sync_parent_dir(path);
            Ok(())
        }
        Err(source) => {
            // The temporary file may not exist (open failed); nothing else to clean up then.
            let _ = fs::remove_file(&temp);
            Err(ResultError::Write { path: path.to_owned(), source })
        }
    }
}

/// A FIFO or a device: opened as it is (no truncation, no rename) and written.
fn write_in_place(path: &Path, contents: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    let file = OpenOptions::new().write(true).open(path)?;
    let mut writer = BufWriter::new(file);
    contents(&mut writer)?;
    writer.flush()
}

fn write_then_rename(
    path: &Path,
    temp: &Path,
    contents: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let file = OpenOptions::new().write(true).create(true).truncate(true).open(temp)?;
    let mut writer = BufWriter::new(file);
    contents(&mut writer)?;
    let file: File = writer.into_inner().map_err(|e| e.into_error())?;
    // Data must be on disk before the rename makes it visible under the real name.
    file.sync_all()?;
    drop(file);
    fs::rename(temp, path)
}

/// Makes the rename itself durable. Best effort: some file systems refuse to fsync a
/// directory, and the file's contents are already safe.
fn sync_parent_dir(path: &Path) {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    if let Ok(dir) = File::open(parent) {
        let _ = dir.sync_all();
    }
}

//! Atomic file replacement for result files and interval logs: write `PATH.tmp-PID`, fsync,
//! rename over `PATH`. A full disk, a crash or a kill mid-write therefore never leaves a
//! truncated file where scripts expect a complete one; on error the temporary file is removed.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::ResultError;

/// The temporary file written next to `path` before the rename.
pub(crate) fn temp_path(path: &Path) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(format!(".tmp-{}", std::process::id()));
    PathBuf::from(name)
}

/// Replaces `path` with what `contents` writes, or leaves it untouched and returns an error
/// naming `path`.
pub(crate) fn write_atomically(
    path: &Path,
    contents: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), ResultError> {
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

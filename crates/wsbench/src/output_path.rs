//! What a path given for output (`--json`, `--hlog`, `--stream`, `merge -o`, `report
//! --html`, …) is, and so how it is written. A regular file, or a path that does not exist
//! yet, is replaced atomically (a temporary file renamed over it). A symlink is followed: its
//! target is written that way and the link stays. A FIFO or a character or block device
//! (`/dev/stdout`, `/dev/null`, a pipe a script reads) is opened and written in place: a
//! rename would replace it with a regular file, `/dev/null` included. A socket cannot be
//! opened at all, and a folder is not a file: both are refused. The config checks use the
//! same answer before any load is sent that the writers use after the run.

use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// Symlinks followed before a path counts as a loop (as the kernel's `ELOOP`).
const MAX_LINKS: usize = 40;

/// Where and how a file given for output is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputPath {
    /// A regular file, or none yet: replaced atomically. The path is the symlinks' target
    /// when the given path was a symlink.
    Replace(PathBuf),
    /// A FIFO or a device: opened for writing and written in place, never replaced.
    InPlace(PathBuf),
}

impl OutputPath {
    /// The file actually written.
    pub fn path(&self) -> &Path {
        match self {
            OutputPath::Replace(path) | OutputPath::InPlace(path) => path,
        }
    }
}

/// Why a path cannot be written as a file.
#[derive(Debug, thiserror::Error)]
pub enum NotAFile {
    #[error("is a folder")]
    Folder,
    #[error("is a socket, which cannot be opened as a file")]
    Socket,
    #[error("has more than {MAX_LINKS} symlinks in a row (a loop?)")]
    LinkLoop,
    #[error("cannot be looked at")]
    Unreadable(#[source] io::Error),
}

/// Follows `path`'s symlinks (a dangling one names the file to create) and says how the
/// file at the end is written.
pub fn resolve(path: &Path) -> Result<OutputPath, NotAFile> {
    let mut current = path.to_owned();
    for _ in 0..=MAX_LINKS {
        let meta = match std::fs::symlink_metadata(&current) {
            Ok(meta) => meta,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(OutputPath::Replace(current)),
            Err(error) => return Err(NotAFile::Unreadable(error)),
        };
        let kind = meta.file_type();
        if kind.is_symlink() {
            let target = std::fs::read_link(&current).map_err(NotAFile::Unreadable)?;
            current = match current.parent() {
                Some(parent) if target.is_relative() => parent.join(target),
                _ => target,
            };
        } else if kind.is_dir() {
            return Err(NotAFile::Folder);
        } else if kind.is_socket() {
            return Err(NotAFile::Socket);
        } else if kind.is_fifo() || kind.is_char_device() || kind.is_block_device() {
            return Ok(OutputPath::InPlace(current));
        } else {
            return Ok(OutputPath::Replace(current));
        }
    }
    Err(NotAFile::LinkLoop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("wsbench-output-path-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn files_and_new_paths_are_replaced_devices_written_in_place() {
        let dir = scratch("kinds");
        let file = dir.join("r.json");
        assert_eq!(resolve(&file).unwrap(), OutputPath::Replace(file.clone()));
        std::fs::write(&file, "{}").unwrap();
        assert_eq!(resolve(&file).unwrap(), OutputPath::Replace(file.clone()));
        let null = Path::new("/dev/null");
        assert_eq!(resolve(null).unwrap(), OutputPath::InPlace(null.to_owned()));
        assert!(matches!(resolve(&dir), Err(NotAFile::Folder)));
    }

    #[test]
    fn symlinks_are_followed_to_their_target_even_a_dangling_one() {
        let dir = scratch("links");
        let target = dir.join("real.json");
        let link = dir.join("link.json");
        std::os::unix::fs::symlink("real.json", &link).unwrap();
        assert_eq!(resolve(&link).unwrap(), OutputPath::Replace(target.clone()));
        let chained = dir.join("chained.json");
        std::os::unix::fs::symlink(&link, &chained).unwrap();
        assert_eq!(resolve(&chained).unwrap(), OutputPath::Replace(target));
        let to_null = dir.join("null.json");
        std::os::unix::fs::symlink("/dev/null", &to_null).unwrap();
        assert_eq!(resolve(&to_null).unwrap(), OutputPath::InPlace("/dev/null".into()));
        let looped = dir.join("loop.json");
        std::os::unix::fs::symlink("loop.json", &looped).unwrap();
        assert!(matches!(resolve(&looped), Err(NotAFile::LinkLoop)));
    }

    #[test]
    fn a_socket_is_refused() {
        let dir = scratch("socket");
        let path = dir.join("s.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        assert_eq!(resolve(&path).unwrap_err().to_string(), "is a socket, which cannot be opened as a file");
    }
}

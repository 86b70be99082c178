//! Output files are checked before any load is sent: a run of minutes must not end with
//! "cannot write" because its folder was mistyped. The path is looked at as the writer will
//! write it ([`crate::output_path`]): a file (a symlink's target) is replaced through a new
//! file in its folder, which must exist, be a folder and take a new file (one is created and
//! removed there); a FIFO or a device is written in place and must be writable; a folder or a
//! socket is refused. Failing is a [`ConfigError`] (exit 2) naming the flag, the path and
//! what to do. The `--dashboard` address is read here too: like a file, it is taken
//! before any load.

use std::path::{Path, PathBuf};

use super::error::{ConfigError, invalid};
use super::settings::{DEFAULT_DASHBOARD_ADDR, RunSettings};
use crate::output_path::{NotAFile, OutputPath};

impl RunSettings {
    /// `--dashboard`: where its page listens, when asked for (the command binds it before
    /// any load).
    pub fn dashboard_addr(&self) -> Result<Option<std::net::SocketAddr>, ConfigError> {
        let Some(text) = self.dashboard.as_deref() else { return Ok(None) };
        let problem = match text.parse() {
            Ok(addr) => return Ok(Some(addr)),
            Err(_) if text.contains("://") => format!(
                "`{text}` is a URL, not an address and port: give the server's URL before --dashboard, \
                 or write --dashboard=ADDR"
            ),
            Err(_) => {
                format!("`{text}` is not an address and port: give one such as {DEFAULT_DASHBOARD_ADDR}")
            }
        };
        Err(invalid("dashboard", problem))
    }
}

/// Checks that a file can be written at `path`, given with `--{setting}`.
pub fn check_output_file(setting: &'static str, path: &Path) -> Result<(), ConfigError> {
    let file = match crate::output_path::resolve(path) {
        Ok(OutputPath::Replace(file)) => file,
        Ok(OutputPath::InPlace(special)) => return check_writable_in_place(setting, path, &special),
        Err(NotAFile::Folder) => return Err(folder_given(setting, path)),
        Err(NotAFile::Unreadable(source)) => {
            return Err(refused(setting, path, format!("cannot be looked at ({source}): check the path")));
        }
        Err(other) => return Err(refused(setting, path, format!("{other}: give a file name"))),
    };
    let folder = match file.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    check_folder(setting, path, folder)
}

/// A FIFO or a device: written in place, so this process must be allowed to open it for
/// writing (checked without opening it: opening a FIFO waits for its reader).
fn check_writable_in_place(setting: &'static str, path: &Path, special: &Path) -> Result<(), ConfigError> {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c_path) = std::ffi::CString::new(special.as_os_str().as_bytes()) else {
        return Err(refused(setting, path, "has a NUL byte in its name".to_owned()));
    };
    // SAFETY: `c_path` is a valid NUL-terminated string for the duration of the call.
    if unsafe { libc::access(c_path.as_ptr(), libc::W_OK) } == 0 {
        return Ok(());
    }
    let source = std::io::Error::last_os_error();
    Err(refused(setting, path, format!("cannot be opened for writing ({source}): give a file you may write")))
}

/// The path is a folder: name a file in it instead.
fn folder_given(setting: &'static str, path: &Path) -> ConfigError {
    let example = path.join(match setting {
        "hlog" => "run.hlog",
        "html" => "report.html",
        "stream" => "live.jsonl",
        _ => "result.json",
    });
    refused(setting, path, format!("is a folder: give a file name, e.g. {}", example.display()))
}

/// Checks that files can be written into the folder `path` given with `--{setting}`: it is
/// a writable folder, or does not exist yet and its nearest existing ancestor is one.
pub fn check_output_folder(setting: &'static str, path: &Path) -> Result<(), ConfigError> {
    if path.exists() && !path.is_dir() {
        return Err(refused(setting, path, "is a file, not a folder: give a folder".to_owned()));
    }
    let existing = path.ancestors().find(|a| a.as_os_str().is_empty() || a.exists()).unwrap_or(path);
    let existing = if existing.as_os_str().is_empty() { Path::new(".") } else { existing };
    check_folder(setting, path, existing)
}

/// `folder` exists, is a folder and takes a new file.
fn check_folder(setting: &'static str, path: &Path, folder: &Path) -> Result<(), ConfigError> {
    if !folder.exists() {
        let problem = format!(
            "the folder {} does not exist: create it (mkdir -p {}) or write elsewhere",
            folder.display(),
            folder.display()
        );
        return Err(refused(setting, path, problem));
    }
    if !folder.is_dir() {
        return Err(refused(setting, path, format!("{} is not a folder", folder.display())));
    }
    let probe = folder.join(format!(".wsbench-write-check-{}", std::process::id()));
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(file) => {
            drop(file);
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(source) => {
            Err(ConfigError::Unwritable { setting, path: path.to_owned(), folder: folder.to_owned(), source })
        }
    }
}

fn refused(setting: &'static str, path: &Path, problem: String) -> ConfigError {
    ConfigError::Output { setting, path: PathBuf::from(path), problem }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_names_the_flag_the_path_and_what_to_do() {
        let dir = std::env::temp_dir();
        let missing = dir.join("wsbench-no-such-folder-xyz").join("r.json");
        let message = check_output_file("json", &missing).unwrap_err().to_string();
        assert!(message.starts_with("--json ") && message.contains("does not exist: create it"), "{message}");
        let message = check_output_file("hlog", &dir).unwrap_err().to_string();
        assert!(message.starts_with("--hlog ") && message.contains("is a folder"), "{message}");
        assert!(check_output_file("json", &dir.join("fine.json")).is_ok());
        assert!(check_output_file("json", Path::new("relative.json")).is_ok());
        assert!(check_output_folder("out", &dir.join("wsbench-new-folder-xyz/a")).is_ok());
    }

    #[test]
    fn devices_and_symlinks_are_checked_as_they_are_written() {
        // Written in place: the folder /dev need not take a new file.
        assert!(check_output_file("json", Path::new("/dev/null")).is_ok());
        let dir = std::env::temp_dir().join(format!("wsbench-outputs-links-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // A link into a folder that does not exist: that folder is the one named.
        let link = dir.join("r.json");
        std::os::unix::fs::symlink(dir.join("missing/real.json"), &link).unwrap();
        let message = check_output_file("json", &link).unwrap_err().to_string();
        assert!(message.contains("missing does not exist"), "{message}");
        let to_folder = dir.join("folder.json");
        std::os::unix::fs::symlink(&dir, &to_folder).unwrap();
        let message = check_output_file("json", &to_folder).unwrap_err().to_string();
        assert!(message.contains("is a folder: give a file name"), "{message}");
        let socket = dir.join("s.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let message = check_output_file("stream", &socket).unwrap_err().to_string();
        assert!(
            message.ends_with("is a socket, which cannot be opened as a file: give a file name"),
            "{message}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_folder_that_takes_no_file_is_refused_with_its_cause() {
        let error = check_output_file("json", Path::new("/proc/wsbench.json")).unwrap_err();
        assert!(error.to_string().starts_with("--json /proc/wsbench.json: cannot create a file in /proc"));
        assert!(std::error::Error::source(&error).is_some());
    }
}

//! Output files are checked before any load is sent: a run of minutes must not end with
//! "cannot write" because its folder was mistyped. A file's folder must exist, be a folder
//! and take a new file (one is created and removed there); the path must not be a folder.
//! Failing is a [`ConfigError`] (exit 2) naming the flag, the path and what to do.

use std::path::{Path, PathBuf};

use super::error::ConfigError;

/// Checks that a file can be written at `path`, given with `--{setting}`.
pub fn check_output_file(setting: &'static str, path: &Path) -> Result<(), ConfigError> {
    if path.is_dir() {
        let example = path.join(match setting {
            "hlog" => "run.hlog",
            "html" => "report.html",
            "stream" => "live.jsonl",
            _ => "result.json",
        });
        return Err(refused(
            setting,
            path,
            format!("is a folder: give a file name, e.g. {}", example.display()),
        ));
    }
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    check_folder(setting, path, folder)
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
    fn a_folder_that_takes_no_file_is_refused_with_its_cause() {
        let error = check_output_file("json", Path::new("/proc/wsbench.json")).unwrap_err();
        assert!(error.to_string().starts_with("--json /proc/wsbench.json: cannot create a file in /proc"));
        assert!(std::error::Error::source(&error).is_some());
    }
}

//! What to start, before it runs: a program and its arguments, the settings it reads on
//! stdin, its grace period, and whether it leads a process group of its own. Only
//! [`Launch::start`] turns one into a process; callers never start a `Command` themselves.

use std::ffi::OsStr;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use serde::Serialize;

use crate::{Error, SETTINGS_FLAG, Supervised, encode_settings};

/// How long a stopped child has after SIGTERM before SIGKILL, unless [`Launch::grace`] says.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(3);

/// A child process to be started.
#[derive(Debug)]
pub struct Launch {
    name: String,
    command: Command,
    /// Written to the child's stdin, which is then closed.
    settings: Option<Vec<u8>>,
    grace: Duration,
    own_group: bool,
}

impl Launch {
    /// `program`, without arguments yet; `name` says what it is in messages (`shard 1/4`).
    pub fn new(name: impl Into<String>, program: impl AsRef<OsStr>) -> Launch {
        Launch {
            name: name.into(),
            command: Command::new(program),
            settings: None,
            grace: DEFAULT_GRACE,
            own_group: true,
        }
    }

    /// `sh -c SCRIPT`: a manifest's start or install command.
    pub fn shell(name: impl Into<String>, script: &str) -> Launch {
        Launch::new(name, "sh").arg("-c").arg(script)
    }

    /// This very program, re-executed as `SUBCOMMAND --settings-from-stdin`, with `settings`
    /// written to its stdin as JSON for it to read with [`crate::read_settings`].
    pub fn this_program<T: Serialize>(
        name: impl Into<String>,
        subcommand: &str,
        settings: &T,
    ) -> Result<Launch, Error> {
        let name = name.into();
        let exe = match std::env::current_exe() {
            Ok(exe) => exe,
            Err(source) => return Err(Error::ThisProgram { name, source }),
        };
        let settings = match encode_settings(settings) {
            Ok(bytes) => bytes,
            Err(source) => return Err(Error::EncodeSettings { name, source }),
        };
        let mut launch = Launch::new(name, exe).arg(subcommand).arg(format!("--{SETTINGS_FLAG}"));
        launch.settings = Some(settings);
        Ok(launch)
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Launch {
        self.command.arg(arg);
        self
    }

    /// How long [`Supervised::stop`] waits after SIGTERM before SIGKILL.
    pub fn grace(mut self, grace: Duration) -> Launch {
        self.grace = grace;
        self
    }

    /// Keeps the child in this process's group, so that a terminal's Ctrl-C reaches it as it
    /// reaches this process: for commands the user waits for in the foreground (an install
    /// step). Stopping it then signals the child alone.
    pub fn foreground(mut self) -> Launch {
        self.own_group = false;
        self
    }

    /// The command, to set its directory, environment, standard output and error, and CPU
    /// pinning. Never to start it: [`Launch::start`] does.
    pub fn command_mut(&mut self) -> &mut Command {
        &mut self.command
    }

    /// Starts the child, tied to this process's life, and hands it its settings.
    pub fn start(mut self) -> Result<Supervised, Error> {
        if self.own_group {
            self.command.process_group(0);
        }
        // SAFETY: prctl is async-signal-safe, and nothing else runs between fork and exec.
        unsafe {
            self.command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        if self.settings.is_some() {
            self.command.stdin(Stdio::piped());
        }
        let child = match self.command.spawn() {
            Ok(child) => child,
            Err(source) => return Err(Error::Spawn { name: self.name, source }),
        };
        let mut supervised = Supervised::new(self.name, child, self.grace, self.own_group);
        if let Some(settings) = self.settings {
            supervised.hand_settings(&settings)?;
        }
        Ok(supervised)
    }

    /// Starts the child and waits for it to finish, at most `timeout`: past it the child is
    /// stopped and the error says so. A failed command is an `Ok` status for the caller to
    /// judge.
    pub fn run_to_completion(self, timeout: Duration) -> Result<ExitStatus, Error> {
        let name = self.name.clone();
        let mut child = self.start()?;
        match child.exited_within(timeout) {
            Some(status) => Ok(status),
            None => {
                child.stop();
                Err(Error::TimedOut { name, timeout })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    #[test]
    fn a_command_runs_to_completion_with_its_status() {
        let status = Launch::shell("check", "exit 3").run_to_completion(Duration::from_secs(10)).unwrap();
        assert_eq!(status.code(), Some(3));
    }

    #[test]
    fn a_command_past_its_timeout_is_stopped_and_named() {
        let started = Instant::now();
        let launch = Launch::shell("install step 1/1", "sleep 30").grace(Duration::from_millis(200));
        let error = launch.foreground().run_to_completion(Duration::from_millis(300)).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(error.to_string(), "install step 1/1 did not finish within 300ms and was stopped");
    }

    #[test]
    fn a_program_that_cannot_start_is_named() {
        let error = Launch::new("fleet server x", "/nonexistent/wsbench-x").start().unwrap_err();
        assert_eq!(error.to_string(), "cannot start fleet server x");
        assert!(std::error::Error::source(&error).is_some());
    }

    #[test]
    fn settings_reach_the_child_on_its_stdin() {
        let mut launch = Launch::shell("cat", "cat");
        launch.settings = Some(encode_settings(&("secret", 7)).unwrap());
        launch.command_mut().stdout(Stdio::piped());
        let mut child = launch.start().unwrap();
        let line = child.wait_for_line("[", Duration::from_secs(5)).unwrap();
        assert_eq!(line, "[\"secret\",7]");
    }
}

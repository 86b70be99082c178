//! One started child: its pid, its exit status (reaped once, remembered after), its first
//! line of output, and how it is stopped: SIGTERM to its process group, SIGKILL to the
//! group after the grace period, so that a start script's server goes with the script.
//! Dropping one stops it.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ChildStderr, ChildStdout, ExitStatus};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::{Error, describe};

/// How often a wait checks whether the child has exited.
pub(crate) const POLL: Duration = Duration::from_millis(20);

/// A running child process (see [`crate::Launch`]), stopped when dropped.
#[derive(Debug)]
pub struct Supervised {
    name: String,
    child: Child,
    /// How long a SIGTERM may take before SIGKILL.
    grace: Duration,
    status: Option<ExitStatus>,
    /// Whether it leads a process group of its own (signals go to the whole group).
    own_group: bool,
}

impl Supervised {
    pub(crate) fn new(name: String, child: Child, grace: Duration, own_group: bool) -> Supervised {
        Supervised { name, child, grace, status: None, own_group }
    }

    /// Writes `settings` to the child's stdin and closes it, so the child reads to the end.
    pub(crate) fn hand_settings(&mut self, settings: &[u8]) -> Result<(), Error> {
        let Some(mut stdin) = self.child.stdin.take() else { return Ok(()) };
        if let Err(source) = stdin.write_all(settings) {
            drop(stdin);
            let status = describe(self.stop());
            return Err(Error::HandSettings { name: self.name.clone(), pid: self.pid(), status, source });
        }
        Ok(())
    }

    /// What the child is, as its launch named it (`shard 1/4`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How long [`Supervised::stop`] waits after SIGTERM before SIGKILL.
    pub fn grace(&self) -> Duration {
        self.grace
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The child's standard error, when the launch piped it, for the caller to read.
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// The child's standard output, when the launch piped it, for the caller to read.
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    /// Waits up to `timeout` for the child's first line on stdout (which its launch piped)
    /// and returns it; the rest is read and dropped, so the child never blocks on a full
    /// pipe. A first line that does not start with `prefix`, or none (the child exited, or
    /// the time ran out), stops the child and is the error.
    pub fn wait_for_line(&mut self, prefix: &str, timeout: Duration) -> Result<String, Error> {
        let Some(stdout) = self.child.stdout.take() else {
            return Err(Error::NoStdout { name: self.name.clone() });
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let _ = tx.send(lines.next());
            for _ in lines {}
        });
        let (name, pid, prefix_owned) = (self.name.clone(), self.pid(), prefix.to_owned());
        match rx.recv_timeout(timeout) {
            Ok(Some(Ok(line))) if line.starts_with(prefix) => Ok(line),
            Ok(Some(Ok(line))) => {
                self.stop();
                Err(Error::UnexpectedLine { name, pid, prefix: prefix_owned, line })
            }
            _ => {
                let status = describe(self.stop());
                Err(Error::NotReady { name, pid, prefix: prefix_owned, status })
            }
        }
    }

    /// The exit status, if the child has exited (reaped once, remembered after).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = match self.child.try_wait() {
                Ok(status) => status,
                // Not our child any more (reaped elsewhere): treat as killed.
                Err(_) => Some(ExitStatus::from_raw(libc::SIGKILL)),
            };
        }
        self.status
    }

    /// The exit status, waiting up to `timeout` for the child to exit.
    pub fn exited_within(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.exited() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(POLL);
        }
    }

    /// Sends `signal` to the child alone (not its group), if it still runs.
    pub fn signal(&mut self, signal: libc::c_int) {
        if self.exited().is_none() {
            // SAFETY: signalling our own child, which has not been reaped.
            unsafe { libc::kill(self.pid() as libc::pid_t, signal) };
        }
    }

    /// SIGTERM to the whole group, SIGKILL after the grace period; waits for the child.
    /// Whatever of the group is left once the child is gone (a start script's server) is
    /// killed too. A child in its parent's group is signalled alone.
    pub fn stop(&mut self) -> ExitStatus {
        self.signal_group(libc::SIGTERM);
        self.exited_within(self.grace);
        self.kill()
    }

    /// SIGKILL to what is left of the group (the child alone if it has none), then reaps it.
    pub fn kill(&mut self) -> ExitStatus {
        self.signal_group(libc::SIGKILL);
        if let Some(status) = self.exited() {
            return status;
        }
        let status = self.child.wait().unwrap_or_else(|_| ExitStatus::from_raw(libc::SIGKILL));
        self.status = Some(status);
        status
    }

    fn signal_group(&mut self, signal: libc::c_int) {
        if self.own_group {
            // SAFETY: signalling the process group this child leads; it may already be gone.
            unsafe { libc::kill(-(self.pid() as libc::pid_t), signal) };
        } else {
            self.signal(signal);
        }
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        if self.exited().is_none() {
            self.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::process::Stdio;

    use super::*;
    use crate::Launch;

    #[test]
    fn stop_ends_a_child_that_ignores_sigterm_and_its_group() {
        // The shell ignores SIGTERM and starts a grandchild in the same group, then says so
        // (stopping it before the trap is set would test nothing).
        let mut launch = Launch::shell("stubborn", "trap '' TERM; sleep 30 & echo ready; wait")
            .grace(Duration::from_millis(200));
        launch.command_mut().stdout(Stdio::piped());
        let mut child = launch.start().unwrap();
        assert_eq!(child.wait_for_line("ready", Duration::from_secs(10)).unwrap(), "ready");
        let group = child.pid() as libc::pid_t;
        let started = Instant::now();
        let status = child.stop();
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        // A killed process lives on until the kernel runs its exit, then lingers as a zombie
        // until its reaper gets to it: wait for the SIGKILL to land on the whole group.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !living_members(group).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(living_members(group), Vec::<u32>::new(), "the group is gone");
    }

    /// Processes of group `group` that are not zombies.
    pub(crate) fn living_members(group: libc::pid_t) -> Vec<u32> {
        let entries = std::fs::read_dir("/proc").unwrap().flatten();
        entries
            .filter_map(|entry| {
                let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
                // After the `(comm)`: state, ppid, pgrp.
                let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
                (fields.get(2)?.parse::<libc::pid_t>().ok()? == group && fields[0] != "Z").then_some(pid)
            })
            .collect()
    }

    #[test]
    fn exit_status_is_remembered() {
        let mut child = Launch::new("true", "true").start().unwrap();
        let status = child.exited_within(Duration::from_secs(5)).unwrap();
        assert!(status.success());
        assert_eq!(child.exited(), Some(status));
        assert!(child.stop().success());
    }

    /// Starts `script` as `name` and waits for its `listening on` line; returns the error
    /// with the child's pid in it written as PID, and whether the child was stopped.
    fn not_listening(name: &str, script: &str) -> (String, bool) {
        let mut launch = Launch::shell(name, script);
        launch.command_mut().stdout(Stdio::piped());
        let mut child = launch.start().unwrap();
        let error = child.wait_for_line("listening on ", Duration::from_secs(5)).unwrap_err();
        let pid = format!("(pid {})", child.pid());
        (error.to_string().replace(&pid, "(pid PID)"), child.exited().is_some())
    }

    #[test]
    fn a_child_that_prints_the_wrong_first_line_is_stopped_and_named() {
        let (error, stopped) = not_listening("the built-in server", "echo hello; sleep 30");
        assert_eq!(error, "the built-in server (pid PID) printed \"hello\" instead of `listening on …`");
        assert!(stopped);
    }

    #[test]
    fn a_child_that_exits_before_its_first_line_says_how() {
        let (error, _) = not_listening("server process 0/2", "exit 4");
        assert_eq!(error, "server process 0/2 (pid PID) printed no `listening on …` line (exit status 4)");
    }
}

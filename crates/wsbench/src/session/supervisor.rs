//! Every child process wsbench starts (the built-in server, a fleet server, the shards of a
//! `--processes` run) is a [`Supervised`]: spawned in a process group of its own (Ctrl-C in
//! a terminal reaches wsbench only, which decides what the children get), with
//! `PR_SET_PDEATHSIG` so that none outlives a wsbench killed outright, and stopped with
//! SIGTERM to the whole group, then SIGKILL after a grace period. Dropping one stops it.
//! This is the only place that spawns, signals or reaps a child.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// How often a wait checks whether the child has exited.
const POLL: Duration = Duration::from_millis(20);

/// A child process in a process group of its own, stopped when dropped.
#[derive(Debug)]
pub struct Supervised {
    child: Child,
    /// How long a SIGTERM may take before SIGKILL.
    grace: Duration,
    status: Option<ExitStatus>,
}

impl Supervised {
    /// Spawns `command` (whose stdio the caller has set up) in a new process group, tied to
    /// this process's life; [`Supervised::stop`] waits `grace` after SIGTERM.
    pub fn spawn(mut command: Command, grace: Duration) -> io::Result<Supervised> {
        command.process_group(0);
        // SAFETY: prctl is async-signal-safe, and nothing else runs between fork and exec.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        Ok(Supervised { child: command.spawn()?, grace, status: None })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The child's standard handles, for the caller to read.
    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// The exit status, if the child has exited (reaped once, remembered after).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = match self.child.try_wait() {
                Ok(status) => status,
                // Not our child any more (reaped elsewhere): treat as killed.
                Err(_) => Some(std::os::unix::process::ExitStatusExt::from_raw(libc::SIGKILL)),
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
    /// killed too.
    pub fn stop(&mut self) -> ExitStatus {
        let group = -(self.pid() as libc::pid_t);
        // SAFETY: signalling the process group this child leads.
        unsafe { libc::kill(group, libc::SIGTERM) };
        let status = self.exited_within(self.grace);
        // SAFETY: as above; the group may already be gone.
        unsafe { libc::kill(group, libc::SIGKILL) };
        match status {
            Some(status) => status,
            None => {
                let status = self
                    .child
                    .wait()
                    .unwrap_or_else(|_| std::os::unix::process::ExitStatusExt::from_raw(libc::SIGKILL));
                self.status = Some(status);
                status
            }
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
    use super::*;

    #[test]
    fn stop_ends_a_child_that_ignores_sigterm_and_its_group() {
        let mut command = Command::new("sh");
        // The shell ignores SIGTERM and starts a grandchild in the same group, then says so
        // (stopping it before the trap is set would test nothing).
        command
            .args(["-c", "trap '' TERM; sleep 30 & echo ready; wait"])
            .stdout(std::process::Stdio::piped());
        let mut child = Supervised::spawn(command, Duration::from_millis(200)).unwrap();
        let mut ready = String::new();
        let stdout = child.child_mut().stdout.take().unwrap();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut ready).unwrap();
        assert_eq!(ready, "ready\n");
        let group = child.pid() as libc::pid_t;
        let started = Instant::now();
        let status = child.stop();
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL));
        // A killed process lives on until the kernel runs its exit, then lingers as a zombie
        // until its reaper gets to it: wait for the SIGKILL to land on the whole group.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !living_members(group).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(living_members(group), Vec::<u32>::new(), "the group is gone");
    }

    /// Processes of group `group` that are not zombies.
    fn living_members(group: libc::pid_t) -> Vec<u32> {
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
        let mut child = Supervised::spawn(Command::new("true"), Duration::from_secs(1)).unwrap();
        let status = child.exited_within(Duration::from_secs(5)).unwrap();
        assert!(status.success());
        assert_eq!(child.exited(), Some(status));
        assert!(child.stop().success());
    }
}

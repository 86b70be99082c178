//! Children started together and stopped together: the processes of `serve --processes N`
//! and the shards of `run --processes N`. Signals that reach the parent are forwarded: the
//! children run in process groups of their own, so a terminal's Ctrl-C reaches the parent
//! only, and the parent decides what each child gets. A member that exits on its own is
//! named; stopping the group gives every member the same time to exit, together.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use crate::child::POLL;
use crate::{Error, Supervised, describe};

/// SIGINT, SIGTERM and SIGHUP, caught instead of ending this process, to be forwarded.
#[derive(Debug)]
pub struct TermSignals(signal_hook::iterator::Signals);

impl TermSignals {
    /// Catches SIGINT, SIGTERM and SIGHUP from now on: install it before anyone may signal (before a
    /// `listening on` line is printed, say).
    pub fn catch() -> Result<TermSignals, Error> {
        signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
            .map(TermSignals)
            .map_err(Error::Signals)
    }

    /// A signal caught since the last call, if any.
    pub fn pending(&mut self) -> Option<libc::c_int> {
        self.0.pending().next()
    }
}

/// Children that run together; stopped together when dropped.
#[derive(Debug, Default)]
pub struct Group {
    members: Vec<Supervised>,
}

impl Group {
    pub fn new() -> Group {
        Group::default()
    }

    pub fn push(&mut self, member: Supervised) {
        self.members.push(member);
    }

    /// The members, in the order they were pushed.
    pub fn members_mut(&mut self) -> &mut [Supervised] {
        &mut self.members
    }

    pub fn all_exited(&mut self) -> bool {
        self.members.iter_mut().all(|member| member.exited().is_some())
    }

    /// Sends `signal` to every member still running (each alone, not its group).
    pub fn signal(&mut self, signal: libc::c_int) {
        for member in &mut self.members {
            member.signal(signal);
        }
    }

    /// Sends `signal` to every member, gives them `timeout` to exit, all together, then kills
    /// whatever is left of their groups. Every member is reaped.
    pub fn stop(&mut self, signal: libc::c_int, timeout: Duration) {
        self.signal(signal);
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline && !self.all_exited() {
            std::thread::sleep(POLL);
        }
        for member in &mut self.members {
            member.kill();
        }
    }

    /// Runs until SIGINT, SIGTERM or SIGHUP reaches this process: the signal is forwarded to every
    /// member, which get `timeout` to exit. A member that exits first is the error, naming it;
    /// the others are then stopped with SIGTERM.
    pub fn supervise(&mut self, signals: &mut TermSignals, timeout: Duration) -> Result<(), Error> {
        loop {
            if let Some(signal) = signals.pending() {
                self.stop(signal, timeout);
                return Ok(());
            }
            let exited =
                self.members.iter_mut().find_map(|member| member.exited().map(|status| (member, status)));
            if let Some((member, status)) = exited {
                let error = Error::Exited {
                    name: member.name().to_owned(),
                    pid: member.pid(),
                    status: describe(status),
                };
                self.stop(SIGTERM, timeout);
                return Err(error);
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits for every member to exit. Once `interrupt` is set (the caller caught SIGINT,
    /// SIGTERM or SIGHUP), it forwards SIGINT to the members still running, once: each stops
    /// and writes what it has. Returns whether it forwarded.
    pub fn wait_all(&mut self, interrupt: &AtomicBool) -> bool {
        let mut forwarded = false;
        while !self.all_exited() {
            if !forwarded && interrupt.load(Ordering::Relaxed) {
                forwarded = true;
                self.signal(SIGINT);
            }
            std::thread::sleep(POLL);
        }
        forwarded
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if !self.all_exited() {
            let grace = self.members.iter().map(Supervised::grace).max().unwrap_or_default();
            self.stop(SIGTERM, grace);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;
    use crate::Launch;

    fn sleeper(name: &str, script: &str) -> Supervised {
        Launch::shell(name, script).grace(Duration::from_millis(300)).start().unwrap()
    }

    #[test]
    fn a_member_that_exits_on_its_own_is_named_and_the_others_stopped() {
        let mut group = Group::new();
        group.push(sleeper("server process 0/2", "sleep 30"));
        group.push(sleeper("server process 1/2", "sleep 0.2; exit 5"));
        let pid = group.members_mut()[1].pid();
        let mut signals = TermSignals::catch().unwrap();
        let error = group.supervise(&mut signals, Duration::from_secs(2)).unwrap_err();
        assert_eq!(error.to_string(), format!("server process 1/2 (pid {pid}) exited: exit status 5"));
        let first = group.members_mut()[0].exited().expect("the other member was stopped");
        assert_eq!(first.signal(), Some(libc::SIGTERM));
    }

    #[test]
    fn stopping_kills_members_that_outlast_the_timeout() {
        let mut group = Group::new();
        group.push(sleeper("polite", "exec sleep 30"));
        group.push(sleeper("stubborn", "trap '' INT; sleep 30 & wait"));
        // Until the shell has set its trap, SIGINT would end it.
        std::thread::sleep(Duration::from_millis(200));
        let started = Instant::now();
        group.stop(SIGINT, Duration::from_millis(300));
        assert!(started.elapsed() < Duration::from_secs(3));
        let statuses: Vec<_> = group.members_mut().iter_mut().map(|m| m.exited().unwrap().signal()).collect();
        assert_eq!(statuses, [Some(SIGINT), Some(libc::SIGKILL)]);
    }

    #[test]
    fn an_interrupt_is_forwarded_once_and_the_group_waited_for() {
        let mut group = Group::new();
        // Exits on the first SIGINT, after a moment, as a shard writing its result would.
        group.push(sleeper("shard 0/1", "trap 'kill $!; sleep 0.2; exit 130' INT; sleep 30 & wait"));
        std::thread::sleep(Duration::from_millis(200));
        let interrupt = AtomicBool::new(true);
        assert!(group.wait_all(&interrupt));
        assert_eq!(group.members_mut()[0].exited().unwrap().code(), Some(130));
        let mut quiet = Group::new();
        quiet.push(sleeper("done", "true"));
        assert!(!quiet.wait_all(&AtomicBool::new(false)));
    }
}

//! The disruptions of a recovery run (`--disrupt`), carried out on time: a thread waits for
//! the load to begin, then, at each planned instant, says on the engine's board that a
//! disruption begins, does it (restarts or kills and starts again the server this session
//! owns, has it close every connection, runs the operator's command; a `drop` is the
//! workers' own act) and says when it is over and how it went. The run never waits for it:
//! stopped at the run's end, it abandons what is left (a command still running is stopped
//! as its process group).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::config::{DisruptionKind, RecoveryPlan};
use crate::engine::disruption::{DisruptionEvent, Disruptions};

/// How often the thread looks whether it should stop (while it waits, and while a command
/// runs).
const POLL: Duration = Duration::from_millis(10);

/// A server this session started and may restart (the built-in server; a fleet member).
pub trait OwnedServer: Send + std::fmt::Debug {
    /// Stops it (SIGTERM; `kill`: SIGKILL): how long it took to exit.
    fn stop_for_restart(&mut self, kill: bool) -> Duration;
    /// Starts it again where it listened: how long it took from its start to listening.
    fn start_again(&mut self) -> Result<Duration, String>;
    /// Has it close every connection and go on (as a graceful restart's closes).
    fn close_every_connection(&mut self) -> Result<(), String>;
}

impl OwnedServer for crate::builtin::BuiltinServer {
    fn stop_for_restart(&mut self, kill: bool) -> Duration {
        crate::builtin::BuiltinServer::stop_for_restart(self, kill)
    }

    fn start_again(&mut self) -> Result<Duration, String> {
        crate::builtin::BuiltinServer::start_again(self).map_err(|e| crate::causes::with_causes(&e))
    }

    fn close_every_connection(&mut self) -> Result<(), String> {
        crate::builtin::BuiltinServer::close_every_connection(self);
        Ok(())
    }
}

/// A server shared between the session and its disruptor.
pub type SharedServer = Arc<Mutex<dyn OwnedServer>>;

/// The thread carrying out a run's disruptions.
#[derive(Debug)]
pub struct Disruptor {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Disruptor {
    /// Starts carrying out `plan` over a load of `load` (warm-up and window), on `board`,
    /// against `server` when the session owns one; `None` when the plan is empty.
    pub fn start(
        plan: &RecoveryPlan,
        load: Duration,
        board: Arc<Disruptions>,
        server: Option<SharedServer>,
    ) -> Option<Disruptor> {
        if plan.is_empty() {
            return None;
        }
        let schedule = plan.schedule(load);
        let down = plan.down();
        let command = plan.command.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("wsbench-disrupt".into())
            .spawn(move || {
                let acts = Acts { board: &board, server, command, down, stop: &stopping };
                acts.carry_out(&schedule);
            })
            .ok();
        Some(Disruptor { stop, thread })
    }

    /// The run is over: what is left is abandoned; waits for the thread.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A task for [`on_a_lasting_thread`].
type Task = Box<dyn FnOnce() + Send>;

/// Runs `task` on a thread that never ends (one for the process), and waits for its answer.
fn on_a_lasting_thread<T: Send + 'static>(task: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    use std::sync::OnceLock;
    use std::sync::mpsc::{Sender, channel};
    static TASKS: OnceLock<Mutex<Sender<Task>>> = OnceLock::new();
    let tasks = TASKS.get_or_init(|| {
        let (tasks, received) = channel::<Task>();
        let _ = std::thread::Builder::new().name("wsbench-starter".into()).spawn(move || {
            // The sender lives in a static: this loop never ends, nor the thread.
            for task in received {
                task();
            }
        });
        Mutex::new(tasks)
    });
    let (answer, answered) = channel();
    let task: Task = Box::new(move || {
        let _ = answer.send(task());
    });
    let gone = || "the starting thread is gone".to_owned();
    tasks.lock().unwrap_or_else(PoisonError::into_inner).send(task).map_err(|_| gone())?;
    answered.recv().map_err(|_| gone())
}

/// How long a disruption's action took: in all (a restart: from its signal until the new
/// server listens; a command: its run), and a restarted server's own start.
#[derive(Debug, Default)]
struct Acted {
    took: Option<Duration>,
    start: Option<Duration>,
}

/// The server, locked for one act.
fn lock(server: &SharedServer) -> std::sync::MutexGuard<'_, dyn OwnedServer + 'static> {
    server.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the thread acts with.
struct Acts<'a> {
    board: &'a Disruptions,
    server: Option<SharedServer>,
    command: Option<String>,
    /// How long a restarted server stays down before it starts again.
    down: Duration,
    stop: &'a AtomicBool,
}

impl Acts<'_> {
    fn carry_out(&self, schedule: &[(DisruptionKind, Duration)]) {
        let Some((run, load)) = self.wait_for(|| self.board.started()) else { return };
        for &(kind, at) in schedule {
            if self.sleep_until(load + at).is_none() {
                return;
            }
            let began = Instant::now();
            let at_us = began.saturating_duration_since(run).as_micros() as u64;
            let epoch = self.board.begin(kind, at_us);
            let (took, failed) = match self.act(kind) {
                Ok(took) => (took, None),
                Err(why) => (Acted::default(), Some(why)),
            };
            let event = DisruptionEvent {
                kind: kind.name().to_owned(),
                at_s: at_us as f64 / 1e6,
                took_s: took.took.map(|took| took.as_secs_f64()),
                start_s: took.start.map(|start| start.as_secs_f64()),
                failed,
            };
            self.board.end(epoch, event);
        }
    }

    /// Does one disruption: how long its action took, when it takes time.
    fn act(&self, kind: DisruptionKind) -> Result<Acted, String> {
        let server = || self.server.as_ref().ok_or_else(|| "no server of this session's own".to_owned());
        match kind {
            DisruptionKind::Restart => self.restart(server()?, false),
            DisruptionKind::Kill => self.restart(server()?, true),
            DisruptionKind::Close => lock(server()?).close_every_connection().map(|()| Acted::default()),
            // The workers cut their connections when they see its epoch.
            DisruptionKind::Drop => Ok(Acted::default()),
            DisruptionKind::Command => self.run_command().map(|took| Acted { took: Some(took), start: None }),
        }
    }

    /// Stops the server, keeps it down for `down` (less if the run ends), starts it again:
    /// from a thread that lives as long as the process (a child dies with the thread that
    /// started it, `PR_SET_PDEATHSIG`, and this one ends with the run).
    fn restart(&self, server: &SharedServer, kill: bool) -> Result<Acted, String> {
        let began = Instant::now();
        lock(server).stop_for_restart(kill);
        self.sleep_until(Instant::now() + self.down);
        let server = server.clone();
        let start = on_a_lasting_thread(move || lock(&server).start_again())??;
        Ok(Acted { took: Some(began.elapsed()), start: Some(start) })
    }

    /// Runs the operator's command to its end (or the run's): how long it took.
    fn run_command(&self) -> Result<Duration, String> {
        let command = self.command.as_deref().ok_or_else(|| "no --disrupt-command".to_owned())?;
        let started = Instant::now();
        let mut launch = wsbench_supervisor::Launch::shell("the --disrupt-command", command);
        // Its output must not mix with the report on stdout; its errors are shown.
        launch.command_mut().stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null());
        let mut child = launch.start().map_err(|e| crate::causes::with_causes(&e))?;
        loop {
            if let Some(status) = child.exited() {
                return match status.success() {
                    true => Ok(started.elapsed()),
                    false => Err(format!("--disrupt-command {}", wsbench_supervisor::describe(status))),
                };
            }
            if self.stop.load(Ordering::Relaxed) {
                // Dropping the child stops its process group.
                return Err("the run ended before --disrupt-command did".to_owned());
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits until `ready` gives something (or the run stops: `None`).
    fn wait_for<T>(&self, ready: impl Fn() -> Option<T>) -> Option<T> {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return None;
            }
            if let Some(value) = ready() {
                return Some(value);
            }
            std::thread::sleep(POLL);
        }
    }

    /// Sleeps until `at` (or the run stops: `None`).
    fn sleep_until(&self, at: Instant) -> Option<()> {
        self.wait_for(|| {
            let now = Instant::now();
            if now >= at {
                return Some(());
            }
            std::thread::sleep((at - now).min(POLL));
            (Instant::now() >= at).then_some(())
        })
    }
}

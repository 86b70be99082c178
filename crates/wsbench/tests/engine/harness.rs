//! Running the `wsbench` binary from the engine tests: bounded in time, output captured,
//! result files read back and checked against `schema/result.schema.json`, and a small
//! semaphore so that no more than two load-generating runs share this machine's CPUs: every
//! `wsbench run` started here must hold a slot of it (a run without one fails the test).

use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Condvar, Mutex, OnceLock, mpsc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A fresh, empty scratch directory for one test (under Cargo's per-target tmp dir).
pub fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("engine-tests").join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    dir
}

/// A path as a `&str` argument.
pub fn arg(path: &Path) -> &str {
    path.to_str().expect("scratch paths are UTF-8")
}

// ---------------------------------------------------------------------------------------
// Load slots.

/// Load-generating runs allowed at once (this suite is meant to pass on a 2-CPU machine).
const SLOT_CAPACITY: u32 = 2;

static SLOTS_USED: Mutex<u32> = Mutex::new(0);
static SLOT_FREED: Condvar = Condvar::new();

thread_local! {
    /// The slots the test on this thread holds: every `wsbench run` it starts needs one.
    static HELD: Cell<u32> = const { Cell::new(0) };
}

/// Held while a test drives load; dropped when it is done.
#[derive(Debug)]
pub struct Slot(u32);

/// Waits for `weight` slots: 1 for a load run, 2 (the whole machine) for a run whose
/// latencies are asserted and must not share the CPUs. A test that already holds enough
/// (a helper taking a slot inside a test that took one) gets an empty slot.
pub fn heavy(weight: u32) -> Slot {
    assert!(weight <= SLOT_CAPACITY);
    let held = HELD.get();
    if held > 0 {
        assert!(held >= weight, "this test holds {held} slot(s) and asks for {weight}: take {weight} first");
        return Slot(0);
    }
    let mut used = SLOTS_USED.lock().unwrap_or_else(|e| e.into_inner());
    while *used + weight > SLOT_CAPACITY {
        used = SLOT_FREED.wait(used).unwrap_or_else(|e| e.into_inner());
    }
    *used += weight;
    HELD.set(weight);
    Slot(weight)
}

impl Drop for Slot {
    fn drop(&mut self) {
        if self.0 == 0 {
            return;
        }
        HELD.set(0);
        let mut used = SLOTS_USED.lock().unwrap_or_else(|e| e.into_inner());
        *used -= self.0;
        SLOT_FREED.notify_all();
    }
}

/// Every `wsbench run` loads the machine, even one refused at once: the test that starts it
/// must hold a slot, or a run whose latencies are asserted (holding both) would share the
/// CPUs with it.
fn assert_slot_held(args: &[&str]) {
    if args.first() == Some(&"run") {
        assert!(
            HELD.get() > 0,
            "`wsbench {}` started without a load slot: take harness::heavy(1)",
            args.join(" ")
        );
    }
}

// ---------------------------------------------------------------------------------------
// Running wsbench.

/// A running `wsbench` in its own process group (so a built-in server it started can be
/// signalled and killed with it). Killed, with its group, on drop if still running.
#[derive(Debug)]
pub struct Wsbench {
    child: Option<Child>,
    args: Vec<String>,
    started: Instant,
    stdout: Option<JoinHandle<String>>,
    stderr: Option<JoinHandle<String>>,
}

/// A finished `wsbench`.
#[derive(Debug)]
pub struct Finished {
    pub args: Vec<String>,
    /// Exit code, None when killed by a signal.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// From spawn to exit.
    pub elapsed: Duration,
}

impl Wsbench {
    pub fn spawn(args: &[&str]) -> Wsbench {
        Wsbench::spawn_with_env(args, &[])
    }

    /// As [`Wsbench::spawn`], with these environment variables set (a secret's
    /// `--NAME-env VAR`).
    pub fn spawn_with_env(args: &[&str], env: &[(&str, &str)]) -> Wsbench {
        assert_slot_held(args);
        let mut command = Command::new(env!("CARGO_BIN_EXE_wsbench"));
        command
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let started = Instant::now();
        let mut child = command.spawn().unwrap_or_else(|e| panic!("spawn wsbench {args:?}: {e}"));
        let stdout = collect(child.stdout.take().expect("piped stdout"));
        let stderr = collect(child.stderr.take().expect("piped stderr"));
        Wsbench {
            child: Some(child),
            args: args.iter().map(|s| s.to_string()).collect(),
            started,
            stdout: Some(stdout),
            stderr: Some(stderr),
        }
    }

    /// The child's process id (while it runs), e.g. to read its memory from /proc.
    #[allow(dead_code)]
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Sends `signal` to the whole process group, as a terminal's Ctrl-C does.
    pub fn signal_group(&self, signal: libc::c_int) {
        let pid = self.child.as_ref().expect("running").id() as libc::pid_t;
        // SAFETY: signalling the process group of a child we started (its pid is the pgid).
        unsafe {
            libc::kill(-pid, signal);
        }
    }

    /// Waits up to `timeout` for the exit; past it the group is killed and the test fails.
    pub fn finish(mut self, timeout: Duration) -> Finished {
        let mut child = self.child.take().expect("running");
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for wsbench") {
                break Some(status);
            }
            if self.started.elapsed() > timeout {
                kill_group(&mut child);
                break None;
            }
            thread::sleep(Duration::from_millis(10));
        };
        let elapsed = self.started.elapsed();
        let finished = Finished {
            args: std::mem::take(&mut self.args),
            code: status.and_then(|s| s.code()),
            stdout: self.stdout.take().expect("stdout reader").join().unwrap_or_default(),
            stderr: self.stderr.take().expect("stderr reader").join().unwrap_or_default(),
            elapsed,
        };
        if status.is_none() {
            panic!("wsbench did not exit within {timeout:?}; killed\n{}", finished.describe());
        }
        finished
    }
}

impl Drop for Wsbench {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut()
            && let Ok(None) = child.try_wait()
        {
            kill_group(child);
        }
    }
}

fn kill_group(child: &mut Child) {
    // SAFETY: killing the process group of a child we started (its pid is the pgid).
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
    }
    let _ = child.wait();
}

fn collect(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    thread::spawn(move || {
        let mut out = Vec::new();
        let _ = pipe.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    })
}

/// Runs `wsbench ARGS` to its end, failing the test past `timeout`.
pub fn wsbench(args: &[&str], timeout: Duration) -> Finished {
    Wsbench::spawn(args).finish(timeout)
}

impl Finished {
    /// The command line and what it printed, for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "wsbench {}\nexit code: {:?}, after {:.2?}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.args.join(" "),
            self.code,
            self.elapsed,
            self.stdout,
            self.stderr
        )
    }

    pub fn assert_success(&self) {
        assert_eq!(self.code, Some(0), "wsbench failed\n{}", self.describe());
    }

    /// Exit status 3: the run completed, its result is written, and it counted failures
    /// (docs/exit-codes.md).
    pub fn assert_completed_with_failures(&self) {
        assert_eq!(self.code, Some(3), "want exit 3 (completed, failures counted)\n{}", self.describe());
    }
}

// ---------------------------------------------------------------------------------------
// Result files.

/// Reads a result file as JSON.
pub fn read_result(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// The unsigned integer at a JSON pointer (e.g. `/summary/connections/established`).
pub fn uint(result: &Value, pointer: &str) -> u64 {
    result.pointer(pointer).and_then(Value::as_u64).unwrap_or_else(|| {
        panic!("{pointer} is not an unsigned integer in the result: {:?}", result.pointer(pointer))
    })
}

/// The number at a JSON pointer.
pub fn float(result: &Value, pointer: &str) -> f64 {
    result
        .pointer(pointer)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{pointer} is not a number in the result: {:?}", result.pointer(pointer)))
}

/// `summary.errors`, by kind.
pub fn errors(result: &Value) -> BTreeMap<String, u64> {
    let errors =
        result.pointer("/summary/errors").and_then(Value::as_object).expect("summary.errors is an object");
    errors.iter().map(|(kind, n)| (kind.clone(), n.as_u64().expect("error counts are integers"))).collect()
}

/// The figures a failing assertion should show.
pub fn summary_of(result: &Value) -> String {
    let pick = |pointer: &str| result.pointer(pointer).cloned().unwrap_or(Value::Null);
    let summary = serde_json::json!({
        "interrupted": pick("/interrupted"),
        "elapsed_s": pick("/elapsed_s"),
        "measured_s": pick("/measured_s"),
        "echoes_per_sec": pick("/summary/echoes_per_sec"),
        "latency_us": pick("/summary/latency_us"),
        "connections": pick("/summary/connections"),
        "disconnections": pick("/summary/disconnections"),
        "errors": pick("/summary/errors"),
        "messages": pick("/summary/messages"),
        "server.probed": pick("/server/probed"),
        "server.pids": pick("/server/pids"),
        "server.unprobed_reason": pick("/server/unprobed_reason"),
    });
    serde_json::to_string_pretty(&summary).unwrap_or_default()
}

fn schema_validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema/result.schema.json");
        let schema = read_result(&path);
        jsonschema::validator_for(&schema)
            .unwrap_or_else(|e| panic!("{} is not a valid schema: {e}", path.display()))
    })
}

/// Fails the test, listing every violation, unless `result` validates against the schema.
pub fn assert_matches_schema(result: &Value) {
    let problems: Vec<String> =
        schema_validator().iter_errors(result).map(|e| format!("{}: {e}", e.instance_path)).collect();
    assert!(
        problems.is_empty(),
        "the result file does not match schema/result.schema.json:\n{}",
        problems.join("\n")
    );
}

// ---------------------------------------------------------------------------------------
// Third-party peers.

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repo root")
}

/// The peer's script and interpreter, or why it cannot run. Same rule as `interop.rs`:
/// missing peers skip the test with a message, unless `WSBENCH_REQUIRE_PEERS=1`.
fn node_ws() -> Result<PathBuf, String> {
    let root = repo_root();
    let ws = root.join("tests/interop/node_modules/ws/package.json");
    if !ws.exists() {
        return Err(format!("{} does not exist", ws.display()));
    }
    match Command::new("node").arg("--version").stdin(Stdio::null()).output() {
        Ok(out) if out.status.success() => Ok(root.join("tests/interop/echo_server.js")),
        Ok(_) => Err("`node --version` failed".to_owned()),
        Err(e) => Err(format!("cannot run `node`: {e}")),
    }
}

/// A running `node tests/interop/echo_server.js` on a free port; killed on drop.
#[derive(Debug)]
pub struct NodeEchoServer {
    child: Child,
    /// Held open: the script exits when its stdin closes.
    _stdin: ChildStdin,
    pub url: String,
}

impl NodeEchoServer {
    /// The server, or None (after saying why) when node `ws` is not installed and peers
    /// are optional.
    pub fn start() -> Option<NodeEchoServer> {
        NodeEchoServer::start_with(&[])
    }

    /// The node server with extra arguments (e.g. `--deflate`).
    pub fn start_with(args: &[&str]) -> Option<NodeEchoServer> {
        let script = match node_ws() {
            Ok(script) => script,
            Err(why) => {
                crate::support::peer_missing(&format!("peer node ws not installed ({why})"));
                return None;
            }
        };
        let mut command = Command::new("node");
        command.arg(&script).args(args);
        Some(NodeEchoServer::spawn(command, "node echo_server.js"))
    }

    /// Starts `command` (a peer echo server printing `listening on URL`) and waits for it.
    pub fn spawn(command: Command, what: &str) -> NodeEchoServer {
        let (child, stdin, url) = spawn_listening(command, what);
        NodeEchoServer { child, _stdin: stdin, url }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// Starts a peer server that prints `listening on URL` first and exits when its stdin
/// closes: the child, its stdin (hold it open), and the URL.
pub fn spawn_listening(mut command: Command, what: &str) -> (Child, ChildStdin, String) {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {what}: {e}"));
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        let _ = tx.send(lines.next());
        for _ in lines {}
    });
    let line = match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(Some(Ok(line))) => line,
        other => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} printed no `listening on` line: {other:?}");
        }
    };
    let url = line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line from {what}: {line:?}"))
        .trim()
        .to_owned();
    (child, stdin, url)
}

impl Drop for NodeEchoServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `wsbench run echo URL --connections 50 TRANSPORT_ARGS… --json` against a server that
/// must be refused before any load: exit `code` (3 when the server refused, 1 when wsbench
/// could not ask it), one line on stderr naming `expected`, no result file, no panic.
pub fn refused_before_load(test: &str, url: &str, transport_args: &[&str], expected: &str, code: i32) {
    let json = scratch(test).join("r.json");
    let mut args = vec!["run", "echo", url, "--connections", "50", "--json", arg(&json)];
    args.extend_from_slice(transport_args);
    let run = wsbench(&args, Duration::from_secs(30));
    assert_eq!(run.code, Some(code), "{}", run.describe());
    let lines: Vec<&str> = run.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line\n{}", run.describe());
    assert!(lines[0].starts_with("wsbench: ") && lines[0].contains(expected), "{}", run.describe());
    assert!(!run.stderr.contains("panicked"), "{}", run.describe());
    assert!(!json.exists(), "no load, so no result\n{}", run.describe());
}

//! Test support shared by the integration tests: starts the real `wsbench serve` binary on
//! port 0 and hands out its address. Tests never use fixed ports.
//!
//! A server shared by many tests (see [`shared_server`]) is spawned from a thread that never
//! exits, with `PR_SET_PDEATHSIG`, so it dies with the test process instead of outliving it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::Duration;

pub mod hostile_server;
pub mod raw_server;
pub mod recorder;
pub mod recording_proxy;
pub mod scripted_server;
pub mod silent_server;
pub mod stream_server;
pub mod unsolicited_server;
pub mod user_check_server;

/// Path of the `wsbench` binary built for this test run.
pub fn wsbench_bin() -> &'static str {
    env!("CARGO_BIN_EXE_wsbench")
}

/// A running `wsbench serve` child process; killed on drop.
#[derive(Debug)]
pub struct Server {
    pub child: Child,
    /// The WebSocket listener (first URL on the `listening on` line).
    pub addr: SocketAddr,
    /// Every URL printed on the `listening on` line, e.g. `ws://127.0.0.1:4000`.
    pub urls: Vec<String>,
    /// The lines it printed on stdout after the `listening on` line.
    pub lines: mpsc::Receiver<String>,
}

impl Server {
    /// Starts `wsbench serve --port 0 ARGS…` and waits for its `listening on` line.
    pub fn spawn(args: &[&str]) -> Server {
        let (child, urls, lines) = spawn_serve(args);
        let addr = addr_of(&urls[0]);
        Server { child, addr, urls, lines }
    }

    /// The address of the listener whose URL has `scheme` (`ws`, `wss`, `tcp`).
    pub fn addr_for(&self, scheme: &str) -> SocketAddr {
        let url = self
            .urls
            .iter()
            .find(|u| u.starts_with(&format!("{scheme}://")))
            .unwrap_or_else(|| panic!("no {scheme} listener in {:?}", self.urls));
        addr_of(url)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn addr_of(url: &str) -> SocketAddr {
    let rest = url.split("://").nth(1).expect("url has a scheme");
    let host_port = rest.split('/').next().unwrap();
    host_port.parse().unwrap_or_else(|e| panic!("bad address in {url}: {e}"))
}

fn spawn_serve(args: &[&str]) -> (Child, Vec<String>, mpsc::Receiver<String>) {
    let mut cmd = Command::new(wsbench_bin());
    cmd.arg("serve").arg("--port").arg("0").args(args);
    cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
    // SAFETY: prctl is async-signal-safe; it only asks the kernel to kill the child when the
    // thread that forked it exits.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("spawn wsbench serve");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // Keep draining so the server never blocks on a full stdout pipe.
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let first = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("wsbench serve printed no `listening on` line within 20 s");
    let urls: Vec<String> = first
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {first:?}"))
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    (child, urls, rx)
}

/// Shared servers by argument list, with their addresses.
type SharedServers = Mutex<Vec<(Vec<String>, SocketAddr)>>;

/// One server per distinct argument list, shared by every test in this test binary and
/// killed when the test process exits.
pub fn shared_server(args: &[&str]) -> SocketAddr {
    static SERVERS: OnceLock<SharedServers> = OnceLock::new();
    let key: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let servers = SERVERS.get_or_init(|| Mutex::new(Vec::new()));
    let mut servers = servers.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, addr)) = servers.iter().find(|(k, _)| *k == key) {
        return *addr;
    }
    // PDEATHSIG fires when the forking *thread* exits, so fork from a thread that never does.
    let (tx, rx) = mpsc::channel();
    let owned = key.clone();
    std::thread::spawn(move || {
        let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
        let (child, urls, _) = spawn_serve(&refs);
        let _ = tx.send(addr_of(&urls[0]));
        let _keep_alive = child;
        loop {
            std::thread::park();
        }
    });
    let addr = rx.recv().expect("shared server started");
    servers.push((key, addr));
    addr
}

/// Starts `wsbench run ARGS…` with stdin closed and both outputs piped.
pub fn spawn_run(args: &[&str]) -> Child {
    Command::new(wsbench_bin())
        .arg("run")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn wsbench run")
}

/// A child process that ran to its end or was killed at its time limit.
#[derive(Debug)]
pub struct Finished {
    /// `None` when it was killed at the time limit.
    pub status: Option<std::process::ExitStatus>,
    pub stdout: String,
    pub stderr: String,
}

impl Finished {
    /// `what`, then both outputs, for failure messages.
    pub fn describe(&self, what: &str) -> String {
        format!("{what}\n--- stdout ---\n{}--- stderr ---\n{}", self.stdout, self.stderr)
    }
}

/// Runs `command` with stdin closed, collecting its output, and kills it after `timeout`.
pub fn run_with_timeout(command: &mut Command, timeout: Duration) -> Finished {
    let shown = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {shown}: {e}"));
    let collect = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = pipe.read_to_end(&mut out);
            String::from_utf8_lossy(&out).into_owned()
        })
    };
    let stdout = collect(Box::new(child.stdout.take().expect("stdout is piped")));
    let stderr = collect(Box::new(child.stderr.take().expect("stderr is piped")));
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for child") {
            break Some(status);
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Finished { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() }
}

/// `wsbench ARGS…` exits with `code` and prints exactly one line on stderr, starting
/// `wsbench: ` and containing `expected` (no panic); returns the line.
pub fn refused(args: &[&str], code: i32, expected: &str) -> String {
    let finished = run_with_timeout(Command::new(wsbench_bin()).args(args), Duration::from_secs(30));
    let what = finished.describe(&format!("wsbench {}", args.join(" ")));
    assert_eq!(finished.status.and_then(|s| s.code()), Some(code), "{what}");
    assert_eq!(finished.stderr.lines().count(), 1, "{what}");
    assert!(finished.stderr.starts_with("wsbench: ") && finished.stderr.contains(expected), "{what}");
    assert!(!finished.stderr.contains("panicked"), "{what}");
    finished.stderr
}

/// What a test does when a third-party peer is not installed: skips with a message, or
/// fails when `WSBENCH_REQUIRE_PEERS=1` (as `scripts/test.sh` sets it).
pub fn peer_missing(message: &str) {
    requirement_missing(&format!("{message}: run scripts/install-test-peers.sh"));
}

/// What a test does when the machine lacks something it needs (a peer, root, network
/// namespaces): skips with a message, or fails when `WSBENCH_REQUIRE_PEERS=1` (as
/// `scripts/test.sh` sets it), so the project's test command never passes without running it.
pub fn requirement_missing(message: &str) {
    if std::env::var("WSBENCH_REQUIRE_PEERS").as_deref() == Ok("1") {
        panic!("{message} (required: WSBENCH_REQUIRE_PEERS=1)");
    }
    eprintln!("skipping: {message}");
}

/// Whether the golden-file tests rewrite their files instead of comparing: only
/// `WSBENCH_UPDATE_GOLDEN=1` does; any other value, `0` or empty included, compares.
pub fn update_golden() -> bool {
    std::env::var("WSBENCH_UPDATE_GOLDEN").as_deref() == Ok("1")
}

/// A fresh, empty scratch directory for `test` (removed first if a previous run left it).
pub fn fresh_dir(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("wsbench-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every validation error of the result file at `path` against `schema/result.schema.json`.
pub fn result_schema_errors(path: &std::path::Path) -> Vec<String> {
    let schema_path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema/result.schema.json");
    let schema: serde_json::Value = serde_json::from_slice(&std::fs::read(schema_path).unwrap()).unwrap();
    let instance: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    validator.iter_errors(&instance).map(|e| format!("{}: {e}", e.instance_path)).collect()
}

/// Output bytes as text, for assertions.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A finished command's status and what it printed, for assertion messages.
pub fn describe(output: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        text(&output.stdout),
        text(&output.stderr)
    )
}

/// Connects `count` clients to the live page at `addr` (retrying until it listens, for at
/// most two minutes), each asking for the events and never reading them; returns once each
/// has been answered or ended (peeked at, not read: what it was sent stays unread in its
/// buffer, as for a client that never reads).
pub fn pages_that_never_read(addr: &str, count: usize) -> Vec<std::net::TcpStream> {
    use std::io::Write;
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let mut pages = Vec::new();
    while pages.len() < count {
        match std::net::TcpStream::connect(addr) {
            Ok(mut page) => {
                page.write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
                pages.push(page);
            }
            Err(e) if std::time::Instant::now() > deadline => panic!("nothing listens at {addr}: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    for page in &pages {
        page.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
        // Bytes, or the end of a page that gave its place to a later one.
        page.peek(&mut [0u8; 12]).unwrap();
    }
    pages
}

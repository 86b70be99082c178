//! Inputs cannot grow wsbench: every file a user names is read within a limit whatever the
//! file is, and a flow's steps, repeats and queued sends are bounded. The real binary is
//! given a FIFO fed without end or `/dev/zero` as its scenario, header file or CA file (each
//! once grew it to 1–2 GiB within seconds), a payload file past its limit, flows with too
//! many steps or rounds (a million steps took 2.8 GiB before the run started), and a flow
//! that sends without end to a server that never reads (it queued 75 MB/s), and a result
//! file whose histogram inflates to 1 GiB (`merge` and `report --html` took 1 GiB). Each
//! must end with its exit code and one line naming the file or bound, and its peak resident
//! memory (the kernel's `ru_maxrss` of the child) must stay small. A device or a pipe is read
//! to a bound of its own, far below a payload file's 1 GiB (`text:/dev/zero` once read it all).

mod support;

use std::ffi::CString;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::scripted_server::Script;
use support::{fresh_dir, wsbench_bin};

/// A generous ceiling for a wsbench that refuses its input: far below what reading the
/// input whole would take.
const SMALL_RSS_KIB: u64 = 96 * 1024;

/// A child that ran to its end: its exit code, outputs and peak resident memory.
struct Measured {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    peak_rss_kib: u64,
    took: Duration,
}

impl Measured {
    fn describe(&self, what: &str) -> String {
        format!(
            "{what}: exit {:?}, peak RSS {} KiB, {:?}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.code, self.peak_rss_kib, self.took, self.stdout, self.stderr
        )
    }
}

/// Runs `wsbench ARGS…` to its end (killed after `timeout`), with its peak RSS from
/// `wait4`.
#[allow(clippy::zombie_processes, reason = "the child is reaped by wait4, for its rusage")]
fn measured(args: &[&str], timeout: Duration) -> Measured {
    let mut child = Command::new(wsbench_bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn wsbench");
    let collect = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = pipe.read_to_end(&mut out);
            String::from_utf8_lossy(&out).into_owned()
        })
    };
    let stdout = collect(Box::new(child.stdout.take().unwrap()));
    let stderr = collect(Box::new(child.stderr.take().unwrap()));
    let pid = child.id() as libc::pid_t;
    let start = Instant::now();
    let (status, usage) = loop {
        let mut status = 0;
        // SAFETY: rusage is plain data that wait4 fills in.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: waits for our own child only.
        let waited = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if waited == pid {
            break (status, usage);
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            panic!("wsbench {} did not end within {timeout:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let status = std::process::ExitStatus::from_raw(status);
    Measured {
        code: status.code(),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
        peak_rss_kib: usage.ru_maxrss as u64,
        took: start.elapsed(),
    }
}

/// `wsbench ARGS…` ends with exit 2 and one line containing `expected`, within a small
/// peak RSS.
fn refused_small(args: &[&str], expected: &str) -> Measured {
    let run = measured(args, Duration::from_secs(60));
    let what = run.describe(&format!("wsbench {}", args.join(" ")));
    assert_eq!(run.code, Some(2), "{what}");
    assert_eq!(run.stderr.lines().count(), 1, "{what}");
    assert!(run.stderr.starts_with("wsbench: ") && run.stderr.contains(expected), "{what}");
    assert!(run.peak_rss_kib < SMALL_RSS_KIB, "{what}");
    run
}

/// A FIFO at `path` fed `line` over and over, until its reader goes away.
fn endless_fifo(path: &Path, line: &'static [u8]) -> std::thread::JoinHandle<()> {
    let name = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
    let path = path.to_owned();
    std::thread::spawn(move || {
        // Blocks until wsbench opens the FIFO for reading.
        let Ok(mut fifo) = std::fs::OpenOptions::new().write(true).open(&path) else { return };
        let chunk = line.repeat(64 * 1024 / line.len());
        // Ends when wsbench closes its end (EPIPE: Rust ignores SIGPIPE).
        while fifo.write_all(&chunk).is_ok() {}
    })
}

/// A URL nothing listens on: these runs must be refused before any connection.
const NOWHERE: &str = "ws://127.0.0.1:9/";

#[test]
fn a_scenario_of_dev_zero_is_refused_promptly_within_bounded_memory() {
    let run = refused_small(
        &["run", "--scenario", "/dev/zero"],
        "/dev/zero holds more than 1 MiB, the most a scenario file may hold (whatever the file is): \
         give a TOML scenario file",
    );
    assert!(run.took < Duration::from_secs(30), "{:?}", run.took);
}

#[test]
fn a_scenario_fifo_fed_without_end_is_refused_within_bounded_memory() {
    let dir = fresh_dir("input-bounds-scenario-fifo");
    let fifo = dir.join("scenario.toml");
    let writer = endless_fifo(&fifo, b"# a comment line, again and again\n");
    let shown = fifo.display().to_string();
    refused_small(&["run", "--scenario", &shown], &format!("{shown} holds more than 1 MiB"));
    writer.join().unwrap();
}

#[test]
fn a_header_file_fifo_fed_without_end_is_refused_within_bounded_memory() {
    let dir = fresh_dir("input-bounds-header-fifo");
    let fifo = dir.join("headers");
    let writer = endless_fifo(&fifo, b"X-Filler: again\n");
    let shown = fifo.display().to_string();
    refused_small(
        &["run", NOWHERE, "--header-file", &shown],
        &format!("--header-file: {shown} holds more than 1 MiB, the most a header file may hold"),
    );
    writer.join().unwrap();
}

#[test]
fn a_cacert_fifo_fed_without_end_is_refused_within_bounded_memory() {
    let dir = fresh_dir("input-bounds-cacert-fifo");
    let fifo = dir.join("ca.pem");
    let writer = endless_fifo(&fifo, b"not a certificate, again and again\n");
    let shown = fifo.display().to_string();
    refused_small(
        &["run", "wss://127.0.0.1:9/", "--cacert", &shown],
        &format!("--cacert: {shown} holds more than 16 MiB, the most a PEM file may hold"),
    );
    writer.join().unwrap();
}

#[test]
fn a_payload_file_past_its_limit_is_refused_unread() {
    let dir = fresh_dir("input-bounds-payload");
    let path = dir.join("messages.txt");
    std::fs::File::create(&path).unwrap().set_len((1 << 30) + 1).unwrap();
    let payload = format!("text:{}", path.display());
    refused_small(
        &["run", "echo", NOWHERE, "--payload", &payload],
        &format!(
            "--payload: text:{} holds more than 1 GiB, the most a text: payload file may hold",
            path.display()
        ),
    );
}

/// A file whose length is not known before it is read (a device, a pipe) is read to 16 MiB
/// at most, whatever its kind may hold: `text:/dev/zero` once read its whole 1 GiB bound
/// (1 GiB resident) before it was refused, a `--data` of it 64 MiB, and a pipe fed without end
/// as much. Each is refused promptly, naming the bound and saying to use a regular file.
#[test]
fn an_endless_device_or_pipe_is_refused_at_the_bound_of_an_unsized_file_not_its_kinds() {
    let not_sized = "is not a regular file and gave more than 16 MiB, the most wsbench reads of a pipe or device: \
                   write it to a regular file";
    let run = refused_small(
        &["run", "echo", NOWHERE, "--payload", "text:/dev/zero"],
        &format!("--payload: text:/dev/zero {not_sized} (a text: payload file may hold 1 GiB)"),
    );
    assert!(run.peak_rss_kib < 64 * 1024, "{}", run.describe("text:/dev/zero"));
    refused_small(
        &["run", NOWHERE, "--data", "/dev/zero"],
        &format!("--data: /dev/zero {not_sized} (a --data CSV file may hold 64 MiB)"),
    );
    let dir = fresh_dir("input-bounds-payload-fifo");
    let fifo = dir.join("messages.txt");
    let writer = endless_fifo(&fifo, b"{\"a message\":\"again and again\"}\n");
    let payload = format!("text:{}", fifo.display());
    refused_small(
        &["run", "echo", NOWHERE, "--payload", &payload],
        &format!("--payload: {payload} {not_sized}"),
    );
    writer.join().unwrap();
}

/// A flow scenario file of `steps` (TOML) against `url`, in `dir`.
fn flow_file(dir: &Path, url: &str, steps: &str) -> PathBuf {
    let path = dir.join("flow.toml");
    let text =
        format!("scenario = \"flow\"\ntarget = \"{url}\"\nconnections = 1\nduration = \"3s\"\n{steps}");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_flow_of_too_many_steps_is_refused_before_it_starts() {
    let dir = fresh_dir("input-bounds-flow-steps");
    let file = flow_file(&dir, NOWHERE, &"[[flow.steps]]\nsend = 'x'\n".repeat(1_500));
    refused_small(
        &["run", "--scenario", file.to_str().unwrap()],
        "scenario file [[flow.steps]]: 1,500 steps (counting those inside repeats): at most 1,000",
    );
    // Far too many are refused before the file is parsed (a million took 2.8 GiB).
    let inline = "{ send = 'x' },".repeat(50_000);
    let file = flow_file(&dir, NOWHERE, &format!("[[flow.steps]]\nrepeat = 2\nsteps = [{inline}]\n"));
    refused_small(
        &["run", "--scenario", file.to_str().unwrap()],
        "scenario file [[flow.steps]]: about 50,001 steps (counting those inside repeats): at most 1,000",
    );
}

#[test]
fn a_flow_repeat_past_its_bound_is_refused_naming_it() {
    let dir = fresh_dir("input-bounds-flow-repeat");
    let file = flow_file(&dir, NOWHERE, "[[flow.steps]]\nrepeat = 1000000000000\nsteps = [{ send = 'x' }]\n");
    refused_small(
        &["run", "--scenario", file.to_str().unwrap()],
        "step 1: repeat = 1,000,000,000,000 is too many rounds: at most 1,000,000,000; to loop until \
         the run ends, write repeat = \"until-end\"",
    );
}

#[test]
fn a_flow_piling_up_sends_before_their_expect_is_refused_naming_it() {
    let dir = fresh_dir("input-bounds-flow-awaited");
    let steps = "[[flow.steps]]\nrepeat = 1000000\nsteps = [{ name = \"call\", send = '{\"id\":{seq}}' }]\n\
                 [[flow.steps]]\nexpect = \"call\"\nmatch-field = \"id\"\n";
    let file = flow_file(&dir, NOWHERE, steps);
    refused_small(
        &["run", "--scenario", file.to_str().unwrap()],
        "send `call` is repeated 1,000,000 times before this expect waits for its replies: at most \
         65,536 sends may await replies at once",
    );
}

#[test]
fn a_flow_sending_without_end_to_a_server_that_never_reads_waits_for_the_socket() {
    // The server upgrades every connection, then reads nothing for an hour.
    let server = Script::echo().stall(Duration::ZERO, Duration::from_secs(3600)).start();
    let dir = fresh_dir("input-bounds-flow-send-waits");
    let message = "x".repeat(4096);
    let steps = format!("[[flow.steps]]\nrepeat = \"until-end\"\nsteps = [{{ send = '{message}' }}]\n");
    let file = flow_file(&dir, &server.url(), &steps);
    let run = measured(&["run", "--scenario", file.to_str().unwrap()], Duration::from_secs(120));
    let what = run.describe("a flow sending without end to a server that never reads");
    assert_eq!(run.code, Some(0), "{what}");
    // Queued without bound, 3 s of sends took hundreds of MiB.
    assert!(run.peak_rss_kib < SMALL_RSS_KIB, "{what}");
}

/// A result file whose latency histogram inflates to 1 GiB (about 1 MB on disk), at `path`.
fn histogram_bomb(path: &Path) {
    use base64::Engine as _;
    let payload: u32 = 1 << 30;
    let mut deflater = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    // An uncompressed V2 header of wsbench's bounds (cookie with word size, payload length,
    // normalizing offset, digits, lowest, highest, ratio), then 1 GiB of empty counts.
    deflater.write_all(&0x1c84_9313u32.to_be_bytes()).unwrap();
    deflater.write_all(&payload.to_be_bytes()).unwrap();
    deflater.write_all(&0u32.to_be_bytes()).unwrap();
    deflater.write_all(&3u32.to_be_bytes()).unwrap();
    deflater.write_all(&1u64.to_be_bytes()).unwrap();
    deflater.write_all(&wsbench::metrics::HISTOGRAM_MAX_US.to_be_bytes()).unwrap();
    deflater.write_all(&1f64.to_be_bytes()).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..(payload >> 20) {
        deflater.write_all(&zeros).unwrap();
    }
    let zlib = deflater.finish().unwrap();
    let mut bytes = 0x1c84_9314u32.to_be_bytes().to_vec();
    bytes.extend_from_slice(&(zlib.len() as u32).to_be_bytes());
    bytes.extend_from_slice(&zlib);
    let mut outcome = wsbench::fixture::closed_loop();
    outcome.config["shard"] = serde_json::json!({ "index": 1, "count": 2 });
    let mut result = wsbench::result::RunResult::from_outcome(&outcome);
    result.histograms.latency = base64::engine::general_purpose::STANDARD.encode(bytes);
    result.write_json(path).unwrap();
}

#[test]
fn a_result_histogram_inflating_to_a_gib_is_refused_by_merge_and_report_within_bounded_memory() {
    let dir = fresh_dir("input-bounds-histogram-bomb");
    let bomb = dir.join("shard-1.json");
    histogram_bomb(&bomb);
    let mut outcome = wsbench::fixture::closed_loop();
    outcome.config["shard"] = serde_json::json!({ "index": 0, "count": 2 });
    outcome.started_at_unix_ms -= 1;
    let good = dir.join("shard-0.json");
    wsbench::result::RunResult::from_outcome(&outcome).write_json(&good).unwrap();
    let (bomb, good) = (bomb.to_str().unwrap(), good.to_str().unwrap());
    let why = format!(
        "{bomb} is damaged or was edited: its `histograms.latency` cannot be decoded: inflates to \
         more than 4 MiB, the most a histogram may take"
    );
    refused_small(&["merge", good, bomb], &why);
    refused_small(&["report", bomb, "--html", dir.join("r.html").to_str().unwrap()], &why);
}

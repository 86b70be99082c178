//! `--io uring` and `--io epoll` against real servers (`wsbench serve` on port 0, and the
//! scripted server for closes): the same scenario gives the same accounting on both, every
//! echo checked, and each worker records the backend it ran on. A wss:// target runs on
//! epoll whatever `--io` says (TLS stays on the epoll path).

use std::time::Duration;

use serde_json::Value;

use crate::harness::{arg, errors, heavy, read_result, scratch, summary_of, uint, wsbench};
use crate::support::Server;
use crate::support::scripted_server::Script;

/// The backend each worker of a result ran on (`client.workers[].io`).
fn worker_io(result: &Value) -> Vec<String> {
    let workers = result["client"]["workers"].as_array().expect("client.workers is a list");
    workers.iter().map(|w| w["io"].as_str().expect("each worker names its io").to_owned()).collect()
}

/// At least one worker ran, and every one ran on `io`: where the kernel refuses io_uring a
/// `--io uring` run falls back to epoll, and a uring test must fail then, not pass on epoll.
fn assert_ran_on(result: &Value, io: &str, context: &str) {
    let ran = worker_io(result);
    assert!(
        !ran.is_empty() && ran.iter().all(|w| w == io),
        "want every worker on {io}, ran on {ran:?}\n{context}"
    );
}

/// Runs `args` (after `run`) on `io`; the result.
fn run_on(io: &str, test: &str, args: &[&str]) -> (Value, String) {
    let json = scratch(&format!("io-{test}-{io}")).join("r.json");
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--io", io, "--json", arg(&json)]);
    let run = wsbench(&all, Duration::from_secs(40));
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    (result, context)
}

/// Every message sent is answered or counted unanswered; nothing went wrong.
fn assert_clean_echo(result: &Value, context: &str) {
    let (sent, received, unanswered) = (
        uint(result, "/summary/messages/sent"),
        uint(result, "/summary/messages/received"),
        uint(result, "/summary/messages/unanswered"),
    );
    assert!(received > 1000, "only {received} echoes\n{context}");
    assert_eq!(sent, received + unanswered, "{context}");
    assert!(errors(result).is_empty(), "{context}");
    assert_eq!(uint(result, "/summary/connections/established"), 100, "{context}");
}

#[test]
fn echo_runs_the_same_on_uring_and_epoll_against_wsbench_serve() {
    let _slot = heavy(1);
    let server = Server::spawn(&[]);
    let url = format!("ws://{}/", server.addr);
    for io in ["uring", "epoll"] {
        // json-ts: every echo's sequence number is checked, so a byte out of order fails.
        let args = [
            "echo",
            url.as_str(),
            "--connections",
            "100",
            "--in-flight",
            "4",
            "--payload",
            "json-ts",
            "--duration",
            "2s",
            "--warmup",
            "500ms",
        ];
        let (result, context) = run_on(io, "echo", &args);
        assert_clean_echo(&result, &context);
        assert_eq!(result["config"]["io"], io, "{context}");
        assert_ran_on(&result, io, &context);
        assert!(result["client"]["cpu_us_per_round_trip"].as_f64().is_some_and(|us| us > 0.0), "{context}");
    }
}

#[test]
fn uring_sends_batches_larger_than_a_receive_buffer_intact() {
    let _slot = heavy(1);
    let server = Server::spawn(&[]);
    let url = format!("ws://{}/", server.addr);
    // 10 frames of 100 kB per send: each send and each echo spans many 16 KiB buffers.
    let args = [
        "throughput",
        url.as_str(),
        "--connections",
        "100",
        "--payload-bytes",
        "100000",
        "--frames-per-send",
        "10",
        "--duration",
        "2s",
    ];
    let (result, context) = run_on("uring", "large", &args);
    let (sent, received, unanswered) = (
        uint(&result, "/summary/messages/sent"),
        uint(&result, "/summary/messages/received"),
        uint(&result, "/summary/messages/unanswered"),
    );
    assert!(received >= 100, "{context}");
    assert_eq!(sent, received + unanswered, "{context}");
    assert!(errors(&result).is_empty(), "a 100 kB echo came back altered or broken\n{context}");
    assert_ran_on(&result, "uring", &context);
}

#[test]
fn uring_counts_server_closes_and_reconnects_like_epoll() {
    let _slot = heavy(1);
    let server = Script::echo().close_every_nth_connection(10, 1001).start();
    let url = server.url();
    let args = ["echo", url.as_str(), "--connections", "100", "--duration", "2s"];
    let (result, context) = run_on("uring", "closes", &args);
    assert_eq!(server.closes_sent(), 10, "{context}");
    assert_eq!(errors(&result).get("closed_1001").copied(), Some(10), "{context}");
    assert_eq!(uint(&result, "/summary/disconnections"), 10, "{context}");
    assert!(uint(&result, "/summary/messages/received") > 0, "{context}");
    assert_ran_on(&result, "uring", &context);
}

#[test]
fn a_wss_target_runs_on_epoll_whatever_io_says() {
    let _slot = heavy(1);
    let server = Server::spawn(&["--tls"]);
    let url = format!("wss://{}/", server.addr_for("wss"));
    let args = ["echo", url.as_str(), "--insecure", "--connections", "10", "--duration", "1s"];
    let (result, context) = run_on("uring", "wss", &args);
    assert!(uint(&result, "/summary/messages/received") > 0, "{context}");
    assert!(errors(&result).is_empty(), "{context}");
    assert_ran_on(&result, "epoll", &context);
}

/// The kernel refusing io_uring (as `kernel.io_uring_disabled=2` or an old kernel does):
/// the run says so once and measures on epoll. The refusal is real: a seccomp filter in the
/// child makes `io_uring_setup` fail with ENOSYS.
#[cfg(target_arch = "x86_64")]
#[test]
fn without_io_uring_the_run_says_so_once_and_uses_epoll() {
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    let _slot = heavy(1);
    let server = Server::spawn(&[]);
    let json = scratch("io-refused").join("r.json");
    let url = format!("ws://{}/", server.addr);
    let mut command = Command::new(crate::support::wsbench_bin());
    command.args(["run", "echo", &url, "--connections", "20", "--duration", "1s", "--io", "uring"]);
    command.args(["--client-cpus", "0,1", "--quiet", "--json", arg(&json)]);
    // SAFETY: only async-signal-safe prctl calls between fork and exec.
    unsafe { command.pre_exec(refuse_io_uring_setup) };
    let finished = crate::support::run_with_timeout(&mut command, Duration::from_secs(30));
    let what = finished.describe("wsbench run --io uring, io_uring_setup refused");
    assert_eq!(finished.status.and_then(|s| s.code()), Some(0), "{what}");
    let notes = finished.stderr.matches("io_uring is unavailable here").count();
    assert_eq!(notes, 1, "one note for the whole run, not one per worker\n{what}");
    assert!(finished.stderr.contains("using epoll"), "{what}");
    let result = read_result(&json);
    assert!(uint(&result, "/summary/messages/received") > 0, "{what}");
    assert_ran_on(&result, "epoll", &what);
}

/// Installs a seccomp filter: `io_uring_setup` fails with ENOSYS, everything else is allowed.
#[cfg(target_arch = "x86_64")]
fn refuse_io_uring_setup() -> std::io::Result<()> {
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    const IO_URING_SETUP: u32 = 425;
    let op = |code: u16, k: u32, jt: u8, jf: u8| libc::sock_filter { code, jt, jf, k };
    let load = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    let jump_eq = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    let ret = (libc::BPF_RET | libc::BPF_K) as u16;
    let filter = [
        op(load, 4, 0, 0),                    // seccomp_data.arch
        op(jump_eq, AUDIT_ARCH_X86_64, 1, 0), // another ABI: allow
        op(ret, libc::SECCOMP_RET_ALLOW, 0, 0),
        op(load, 0, 0, 0), // seccomp_data.nr
        op(jump_eq, IO_URING_SETUP, 0, 1),
        op(ret, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32, 0, 0),
        op(ret, libc::SECCOMP_RET_ALLOW, 0, 0),
    ];
    let program = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_ptr().cast_mut() };
    // SAFETY: prctl with a valid filter program that outlives the call.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &program as *const libc::sock_fprog,
            ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

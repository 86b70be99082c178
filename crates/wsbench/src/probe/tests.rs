//! Tests of the probe against real processes, all ordinary programs started for the
//! purpose: `sleep` (which also inherits a listening socket this test opened), a busy `sh`
//! loop, `sh` that becomes `dd` holding a buffer it filled, and sleepers that become zombies.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use super::*;

/// A `sleep` that holds a listening socket: this process binds it, the child inherits it,
/// and this process closes its own copy, so the child is the port's only listener.
fn listening_sleeper() -> (Child, u16) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let fd = listener.as_raw_fd();
    let mut command = Command::new("sleep");
    command.arg("30");
    // SAFETY: only fcntl, async-signal-safe, between fork and exec; `fd` stays open in the
    // parent until after the spawn.
    unsafe {
        command.pre_exec(move || match libc::fcntl(fd, libc::F_SETFD, 0) {
            -1 => Err(std::io::Error::last_os_error()),
            _ => Ok(()),
        });
    }
    let child = command.spawn().expect("spawn sleep");
    drop(listener);
    (child, port)
}

/// `sh` waiting for a line on stdin, which then becomes (same pid) `dd` reading 64 MiB of
/// /dev/zero into one buffer, with one more file open, blocked writing that buffer to a
/// pipe this test does not drain: a process whose memory and open files grow on request.
struct Grower {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Grower {
    fn spawn() -> Grower {
        let script = "echo ready; read go; exec dd if=/dev/zero bs=64M count=1 status=none 3</dev/null";
        let mut child = Command::new("sh")
            .args(["-c", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn sh");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut ready = String::new();
        stdout.read_line(&mut ready).unwrap();
        assert_eq!(ready, "ready\n", "sh did not start");
        Grower { child, stdin, stdout }
    }

    /// Lets `sh` become `dd`; returns once dd has filled its buffer (its first byte arrived).
    fn grow(&mut self) {
        writeln!(self.stdin, "go").unwrap();
        self.stdin.flush().unwrap();
        let mut first = [1u8; 1];
        self.stdout.read_exact(&mut first).expect("dd wrote nothing");
        assert_eq!(first, [0]);
    }
}

impl Drop for Grower {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A process that spins on a CPU until killed.
fn spinner() -> Child {
    Command::new("sh").args(["-c", "while :; do :; done"]).spawn().expect("spawn sh")
}

fn sleeper() -> Child {
    Command::new("sleep").arg("30").spawn().expect("spawn sleep")
}

#[test]
fn stat_parser_takes_fields_after_the_last_parenthesis() {
    let line = "1234 (a) b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 7 0 \
                12345 1000000 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
    let stat = parse_stat(line).expect("parses");
    assert_eq!(stat.comm, "a) b) c");
    assert_eq!(stat.state, 'S');
    assert_eq!(stat.cpu_ticks, 300);
    assert_eq!(stat.threads, 7);

    let spaces = "42 (web server (x)) R 1 42 42 0 -1 0 0 0 0 0 3 4 0 0 20 0 2 0 1 1 1";
    let stat = parse_stat(spaces).expect("parses");
    assert_eq!((stat.comm.as_str(), stat.state, stat.cpu_ticks, stat.threads), ("web server (x)", 'R', 7, 2));

    assert_eq!(parse_stat("1 (short) S 1 2"), None);
    assert_eq!(parse_stat("no parentheses at all"), None);
}

#[test]
fn stat_parser_reads_this_process() {
    let text = fs::read_to_string("/proc/self/stat").unwrap();
    let stat = parse_stat(&text).expect("parses /proc/self/stat");
    assert!(stat.threads >= 1);
    assert!(matches!(stat.state, 'R' | 'S' | 'D'));
}

#[test]
fn listen_rows_are_picked_by_state_and_port() {
    let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 2222 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3333 1 0000000000000000 100 0 0 10 0
   3: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4444 1 0000000000000000 100 0 0 10 0
";
    let at = |text: &str| -> SocketAddr { text.parse().unwrap() };
    assert_eq!(parse_listen_inodes(tcp, at("127.0.0.1:8080"), false), [1111, 4444]);
    assert_eq!(parse_listen_inodes(tcp, at("127.0.0.2:8080"), false), [1111], "the wildcard only");
    assert_eq!(parse_listen_inodes(tcp, at("127.0.0.1:8081"), false), [3333]);
    assert!(parse_listen_inodes(tcp, at("127.0.0.1:80"), false).is_empty());
    // An IPv6 target reaches no IPv4 listener, whatever its port.
    assert!(parse_listen_inodes(tcp, at("[::1]:8080"), false).is_empty());
    assert_eq!(parse_listen_inodes(tcp, at("[::ffff:127.0.0.1]:8080"), false), [1111, 4444]);

    let tcp6 = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5555 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:1F90 00000000000000000000000001000000:9C40 01 00000000:00000000 00:00000000 00000000     0        0 6666 1 0000000000000000 20 4 30 10 -1
";
    // The IPv6 wildcard takes both families (dual stack); ::1 only IPv6 loopback.
    assert_eq!(parse_listen_inodes(tcp6, at("[::1]:8080"), true), [5555]);
    assert_eq!(parse_listen_inodes(tcp6, at("127.0.0.1:8080"), true), [5555]);
    let loopback6 = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7777 1 0000000000000000 100 0 0 10 0
";
    assert_eq!(parse_listen_inodes(loopback6, at("[::1]:8080"), true), [7777]);
    assert!(parse_listen_inodes(loopback6, at("127.0.0.1:8080"), true).is_empty());
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// An IPv4-only server on a port: what a run against `[::1]` on that port does not reach.
#[test]
fn a_listener_on_the_same_port_of_the_other_family_is_not_the_target() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    assert!(settles_to(port, &[std::process::id()]));
    let v6: SocketAddr = format!("[::1]:{port}").parse().unwrap();
    assert_eq!(pids_listening_on(v6).unwrap(), Vec::<u32>::new());
}

/// Whether `port`'s listeners become exactly `expected` within a few looks. Another test
/// forking at that very moment briefly shares a socket of this process (close-on-exec acts
/// only at exec), so one look is not enough to decide.
fn settles_to(port: u16, expected: &[u32]) -> bool {
    (0..20).any(|_| {
        let found = pids_listening_on(loopback(port)).unwrap() == expected;
        if !found {
            thread::sleep(Duration::from_millis(10));
        }
        found
    })
}

#[test]
fn finds_this_process_by_its_listening_port() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    assert!(settles_to(port, &[std::process::id()]), "{:?}", pids_listening_on(loopback(port)));
    drop(listener);
    assert!(settles_to(port, &[]), "{:?}", pids_listening_on(loopback(port)));
}

#[test]
fn finds_a_child_process_by_its_listening_port() {
    let (mut child, port) = listening_sleeper();
    assert!(
        settles_to(port, &[child.id()]),
        "{:?} (child {})",
        pids_listening_on(loopback(port)),
        child.id()
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn sample_sees_memory_grow_and_fds_open() {
    let mut grower = Grower::spawn();
    let pid = grower.child.id();
    let before = sample(&[pid], 1).unwrap();
    assert_eq!(before.t_ms, 1);
    assert!(before.rss_bytes > 0 && before.threads >= 1 && before.fds >= 3, "{before:?}");

    grower.grow();
    let after = sample(&[pid], 2).unwrap();
    let grown = after.rss_bytes.saturating_sub(before.rss_bytes);
    assert!(grown >= 60 << 20, "RSS grew by only {grown} bytes: {before:?} → {after:?}");
    assert!(grown < 200 << 20, "RSS grew by {grown} bytes for 64 MiB");
    assert!(after.fds > before.fds, "{before:?} → {after:?}");
    assert!(after.cpu_seconds >= before.cpu_seconds);
}

#[test]
fn sample_sums_over_pids() {
    let (mut a, mut b) = (sleeper(), sleeper());
    let one = sample(&[a.id()], 0).unwrap();
    let two = sample(&[a.id(), b.id()], 0).unwrap();
    assert_eq!(two.threads, 2 * one.threads);
    assert!(two.rss_bytes > one.rss_bytes);
    assert!(two.fds > one.fds);
    for child in [&mut a, &mut b] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

#[test]
fn exited_and_zombie_processes_are_gone() {
    let mut child = sleeper();
    let pid = child.id();
    assert!(sample(&[pid], 0).is_ok());
    child.kill().unwrap();
    // Not reaped yet: a zombie, which is as good as gone. Wait for the kill to land.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match sample(&[pid], 0) {
            Err(ProbeError::Gone(p)) => {
                assert_eq!(p, pid);
                break;
            }
            other => assert!(Instant::now() < deadline, "still sampled after kill: {other:?}"),
        }
        thread::sleep(Duration::from_millis(5));
    }
    child.wait().unwrap();
    assert!(matches!(sample(&[pid], 0), Err(ProbeError::Gone(p)) if p == pid));
    assert!(matches!(sample(&[], 0), Err(ProbeError::NoPids)));
}

#[test]
fn probe_samples_from_baseline_to_stop() {
    let mut child = spinner();
    let run_start = Instant::now();
    let probe = ServerProbe::start(vec![child.id()], "spawned", Duration::from_millis(20), run_start);
    // Taken after the baseline, so at least its CPU time: the spinner's CPU time then grows
    // by 20 ms, however long a loaded machine makes that take.
    let at_start = sample(&[child.id()], 0).unwrap().cpu_seconds;
    thread::sleep(Duration::from_millis(200));
    let deadline = Instant::now() + Duration::from_secs(20);
    while sample(&[child.id()], 0).unwrap().cpu_seconds < at_start + 0.02 {
        assert!(Instant::now() < deadline, "the spinner got no CPU for 20 s");
        thread::sleep(Duration::from_millis(10));
    }
    let (report, ended_by) = probe.stop_with_reason();
    child.kill().unwrap();
    child.wait().unwrap();

    assert!(ended_by.is_none(), "{ended_by:?}");
    assert_eq!(report.pids, [child.id()]);
    assert_eq!(report.found_by.as_deref(), Some("spawned"));
    assert_eq!(report.unprobed_reason, None);
    // 200 ms at 20 ms: about 10 periodic samples; allow a slow machine plenty of slack.
    assert!(report.samples.len() >= 4, "only {} samples", report.samples.len());
    assert!(report.samples[0].t_ms < 100, "baseline at {} ms", report.samples[0].t_ms);
    assert!(report.samples.last().unwrap().t_ms >= 200);
    assert!(report.samples.windows(2).all(|w| w[0].t_ms <= w[1].t_ms));
    assert!(report.samples.windows(2).all(|w| w[0].cpu_seconds <= w[1].cpu_seconds));
    assert!(report.rss_baseline_bytes().unwrap() > 0);
    let (first, last) = (report.samples[0].cpu_seconds, report.samples.last().unwrap().cpu_seconds);
    let used = report.cpu_seconds().unwrap();
    assert!(used >= 0.02, "the spinner used {used} s of CPU from the baseline ({first}) to the end ({last})");
    assert!((used - (last - first)).abs() < 1e-9, "{used} s, want {last} − {first}");
}

#[test]
fn probe_keeps_samples_when_the_server_dies() {
    let mut child = sleeper();
    let probe =
        ServerProbe::start(vec![child.id()], "--server-pid", Duration::from_millis(10), Instant::now());
    thread::sleep(Duration::from_millis(100));
    child.kill().unwrap();
    child.wait().unwrap();
    thread::sleep(Duration::from_millis(100));
    let (report, ended_by) = probe.stop_with_reason();
    assert!(matches!(ended_by, Some(ProbeError::Gone(_))), "{ended_by:?}");
    assert!(report.samples.len() >= 2, "only {} samples", report.samples.len());
    assert_eq!(report.unprobed_reason, None);
}

#[test]
fn probe_of_a_missing_process_reports_why() {
    let mut child = sleeper();
    let pid = child.id();
    child.kill().unwrap();
    child.wait().unwrap();
    let report = ServerProbe::start(vec![pid], "--server-pid", SAMPLE_INTERVAL, Instant::now()).stop();
    assert!(report.samples.is_empty());
    let reason = report.unprobed_reason.expect("a reason");
    assert!(reason.contains("exited"), "{reason}");

    let remote = ServerProbe::unprobed("remote target");
    assert_eq!(remote.unprobed_reason.as_deref(), Some("remote target"));
    assert!(remote.samples.is_empty() && remote.pids.is_empty());
    assert_eq!(remote.cpu_seconds(), None);
    assert_eq!(remote.connections_per_mb(10), None);
}

fn at(t_ms: u64, rss_mib: u64, cpu_seconds: f64, threads: u64, fds: u64) -> ServerSample {
    ServerSample { t_ms, rss_bytes: rss_mib << 20, cpu_seconds, threads, fds, slab_bytes: 0 }
}

#[test]
fn memory_per_connection_of_the_server_and_the_kernel() {
    let slab = |sample: ServerSample, mib: u64| ServerSample { slab_bytes: mib << 20, ..sample };
    let report = ServerReport {
        pids: vec![1],
        found_by: Some("spawned".into()),
        unprobed_reason: None,
        samples: vec![
            slab(at(0, 10, 0.0, 1, 1), 100),
            slab(at(250, 30, 0.0, 1, 1), 104),
            slab(at(500, 20, 0.0, 1, 1), 103),
        ],
        tls_handshakes: None,
    };
    // 20 MiB of RSS and 4 MiB of slab over 1,024 connections.
    assert_eq!(report.bytes_per_connection(1024), Some(20_480.0));
    assert_eq!(report.kernel_slab_delta_bytes(), Some(4 << 20));
    assert_eq!(report.kernel_bytes_per_connection(1024), Some(4_096.0));
    assert_eq!(report.bytes_per_connection(0), None);
    assert_eq!(report.kernel_bytes_per_connection(0), None);
    // Slab that shrank grew by nothing; a file without slab samples has no kernel figure.
    let shrank = ServerReport {
        samples: vec![slab(at(0, 10, 0.0, 1, 1), 100), slab(at(250, 10, 0.0, 1, 1), 90)],
        ..report.clone()
    };
    assert_eq!(shrank.kernel_slab_delta_bytes(), Some(0));
    let older = ServerReport { samples: vec![at(0, 10, 0.0, 1, 1), at(250, 30, 0.0, 1, 1)], ..report };
    assert_eq!(older.kernel_slab_delta_bytes(), None);
    assert_eq!(older.bytes_per_connection(1024), Some(20_480.0));
}

#[test]
fn meminfo_fields_are_read_in_bytes() {
    let text = "MemTotal:       24576000 kB\nSlab:             812344 kB\nSReclaimable:     500000 kB\nHugePages_Total:       0\n";
    assert_eq!(parse_meminfo_bytes(text, "Slab"), Some(812_344 * 1024));
    assert_eq!(parse_meminfo_bytes(text, "HugePages_Total"), Some(0));
    assert_eq!(parse_meminfo_bytes(text, "SUnreclaim"), None);
    // The machine's own: present and above zero; and this process is resident somewhere.
    assert!(slab_bytes() > 0);
    assert!(own_rss_bytes().is_some_and(|rss| rss > 0));
}

#[test]
fn derived_figures() {
    let report = ServerReport {
        pids: vec![1],
        found_by: Some("spawned".into()),
        unprobed_reason: None,
        samples: vec![at(0, 10, 1.5, 4, 10), at(250, 30, 2.0, 8, 1010), at(500, 20, 3.5, 6, 900)],
        tls_handshakes: None,
    };
    assert_eq!(report.rss_baseline_bytes(), Some(10 << 20));
    assert_eq!(report.rss_peak_bytes(), Some(30 << 20));
    assert_eq!(report.cpu_seconds(), Some(2.0));
    assert_eq!(report.threads_peak(), Some(8));
    assert_eq!(report.fds_peak(), Some(1010));
    assert_eq!(report.connections_per_mb(1000), Some(50.0));
    assert_eq!(report.exchanges_per_cpu_second(1000), Some(500.0));

    let flat = ServerReport { samples: vec![at(0, 10, 1.0, 1, 1), at(250, 10, 1.0, 1, 1)], ..report };
    assert_eq!(flat.connections_per_mb(1000), None);
    assert_eq!(flat.exchanges_per_cpu_second(1000), None);
    // One process of a multi-process server exited: the sum went down, not the CPU used.
    let shrunk = ServerReport { samples: vec![at(0, 10, 3.0, 2, 10), at(250, 10, 1.0, 1, 5)], ..flat };
    assert_eq!(shrunk.cpu_seconds(), Some(0.0));
    let one = ServerReport { samples: vec![at(0, 10, 1.0, 1, 1)], ..shrunk };
    assert_eq!(one.cpu_seconds(), None);
    assert_eq!(one.rss_peak_bytes(), Some(10 << 20));
}

#[test]
fn the_open_file_count_is_the_fd_directory_s_entries() {
    let mut child = sleeper();
    let fd_path = Path::new("/proc").join(child.id().to_string()).join("fd");
    let listed = std::fs::read_dir(&fd_path).unwrap().count() as u64;
    assert_eq!(super::open_files(child.id(), &fd_path).unwrap(), listed);
    child.kill().unwrap();
    child.wait().unwrap();
}

//! `wsbench fleet` and `wsbench compare` against a fleet made up for the test: a healthy
//! server, one whose start command fails, and one that dies in the middle of its run. The
//! healthy rows are measured; the broken ones get a row that says what happened, and the
//! comparison exits 3 (RUN_FAILURES) when any row failed, 0 when none did.

mod support;
#[path = "compare/transports.rs"]
mod transports;

use std::path::{Path, PathBuf};
use std::process::Command;

fn fleet_dir(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("compare-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    let bin = env!("CARGO_BIN_EXE_wsbench");
    let servers = [
        ("healthy", format!("exec {bin} serve --port {{port}}"), "true"),
        ("never-starts", "echo 'no such library' >&2; exit 3 # {port}".to_owned(), "true"),
        ("dies-early", format!("exec timeout 2 {bin} serve --port {{port}}"), "true"),
        ("not-installed", format!("exec {bin} serve --port {{port}}"), "false"),
    ];
    for (name, start, installed) in servers {
        add_member(&dir, name, &start, &format!("installed = \"{installed}\"\n"));
    }
    dir
}

/// Writes the manifest of a test server `name` into the fleet `dir`: started by `start`,
/// in Rust unless `extra` says otherwise, installed unless it says so, with the manifest
/// lines of `extra` (`transports = …`).
fn add_member(dir: &Path, name: &str, start: &str, extra: &str) {
    std::fs::create_dir_all(dir.join(name)).unwrap();
    let mut text = format!(
        "name = \"{name}\"\nlibrary = \"test\"\nversion = \"0\"\ndescription = \"test\"\n\
         requires = [\"sh\"]\ninstall = []\nstart = \"{start}\"\nthreads = 1\nhttp = true\n{extra}"
    );
    for (key, default) in [("language", "\"Rust\""), ("installed", "\"true\"")] {
        if !extra.contains(&format!("{key} = ")) {
            text.push_str(&format!("{key} = {default}\n"));
        }
    }
    std::fs::write(dir.join(name).join("server.toml"), text).unwrap();
}

fn wsbench(args: &[&str], dir: &Path) -> (Option<i32>, String, String) {
    let output =
        Command::new(env!("CARGO_BIN_EXE_wsbench")).args(args).arg("--fleet-dir").arg(dir).output().unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn fleet_list_shows_each_server_and_whether_it_is_installed() {
    let dir = fleet_dir("list");
    let (code, stdout, stderr) = wsbench(&["fleet", "list"], &dir);
    assert_eq!(code, Some(0), "{stderr}");
    for name in ["builtin", "healthy", "never-starts", "dies-early"] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} missing:\n{stdout}"));
        assert!(line.ends_with("installed"), "{line}");
    }
    let line = stdout.lines().find(|l| l.starts_with("not-installed")).unwrap();
    assert!(line.contains("not installed"), "{line}");
}

#[test]
fn broken_servers_get_a_row_that_says_so_and_the_others_are_measured() {
    let dir = fleet_dir("broken");
    let out = dir.join("results");
    let (code, stdout, stderr) = wsbench(
        &[
            "compare",
            "--servers",
            "builtin,healthy,never-starts,dies-early,not-installed",
            "--connections",
            "20",
            "--warmup",
            "0s",
            "--duration",
            "4s",
            "--out",
            out.to_str().unwrap(),
            "--html",
            dir.join("compare.html").to_str().unwrap(),
            "--markdown",
        ],
        &dir,
    );
    // The table is printed, and the exit status says that some servers failed.
    assert_eq!(code, Some(3), "{stdout}\n{stderr}");
    let row = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{stdout}"))
            .to_owned()
    };
    for healthy in ["builtin", "healthy"] {
        assert!(row(healthy).contains("20/20"), "{}\n{stderr}", row(healthy));
        assert!(out.join(format!("{healthy}-1.json")).is_file(), "result file kept");
    }
    assert!(row("never-starts").contains("failed to start"), "{}", row("never-starts"));
    assert!(
        row("never-starts").contains("no such library"),
        "the server's own words: {}",
        row("never-starts")
    );
    assert!(row("dies-early").contains("died mid-run"), "{}\n{stderr}", row("dies-early"));
    assert!(row("not-installed").contains("not installed"), "{}", row("not-installed"));
    let page = std::fs::read_to_string(dir.join("compare.html"))
        .unwrap_or_else(|e| panic!("--html writes the page: {e}\n{stderr}"));
    assert!(page.contains("data-chart=\"compare-echoes-per-sec\""), "comparison bars in the page");
    assert!(
        stdout.contains("| healthy |") || stdout.contains("| healthy"),
        "--markdown prints the table\n{stdout}"
    );
}

#[test]
fn a_comparison_where_nothing_failed_exits_0_and_a_missing_server_alone_exits_3() {
    let dir = fleet_dir("clean");
    let args = ["compare", "--connections", "5", "--warmup", "0s", "--duration", "1s", "--servers"];
    let (code, stdout, stderr) = wsbench(&[&args[..], &["healthy"]].concat(), &dir);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.lines().any(|l| l.starts_with("healthy") && l.contains("5/5")), "{stdout}");
    let (code, stdout, stderr) = wsbench(&[&args[..], &["not-installed"]].concat(), &dir);
    assert_eq!(code, Some(3), "{stdout}\n{stderr}");
    assert!(
        stdout.lines().any(|l| l.starts_with("not-installed") && l.contains("not installed")),
        "{stdout}"
    );
}

/// `--processes 2` measures each run as two client processes whose results are merged, as
/// `wsbench run` does (the comparison ran one process, however many were asked for).
#[test]
fn a_comparison_over_two_processes_merges_two_shards_per_run() {
    let dir = fleet_dir("processes");
    let out = dir.join("results");
    let args = ["compare", "--servers", "healthy", "--connections", "4", "--processes", "2"];
    let timing = ["--warmup", "0s", "--duration", "1s", "--out", out.to_str().unwrap()];
    let (code, stdout, stderr) = wsbench(&[&args[..], &timing[..]].concat(), &dir);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("healthy-1.json")).unwrap()).unwrap();
    let shards: Vec<&str> =
        result["shards"].as_array().unwrap().iter().map(|s| s["shard"].as_str().unwrap()).collect();
    assert_eq!(shards, ["0/2", "1/2"], "{stdout}\n{stderr}");
    assert_eq!(result["summary"]["connections"]["established"], 4);
    assert_eq!(result["server"]["probed"], true, "the parent samples the fleet server: {}", result["server"]);
}

#[test]
fn unknown_server_names_the_known_ones() {
    let dir = fleet_dir("unknown");
    let (code, _, stderr) = wsbench(&["compare", "--servers", "nginx-9000"], &dir);
    assert_ne!(code, Some(0));
    assert!(stderr.contains("unknown server `nginx-9000`") && stderr.contains("healthy"), "{stderr}");
}

#[test]
fn a_bad_flag_is_a_usage_error_before_any_server_starts() {
    let dir = fleet_dir("usage");
    let output = Command::new(env!("CARGO_BIN_EXE_wsbench"))
        .args(["compare", "--servers", "builtin", "--connections", "0", "--fleet-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim(), "wsbench: --connections: must be at least 1");
}

/// Flags of `wsbench run` that a comparison has no use for are refused, each with what to do
/// instead, before any server starts (taken silently, they did nothing or kept only the
/// last run's output).
#[test]
fn run_flags_a_comparison_cannot_use_are_refused_with_what_to_do() {
    let dir = fleet_dir("refused");
    let cases: [(&[&str], &str); 9] = [
        (&["--find-max-rate", "--slo", "p99<10ms"], "--find-max-rate: does not apply to compare: "),
        (&["--json", "r.json"], "--json: does not apply to compare: compare writes a result file per server"),
        (&["--print-result"], "--print-result: does not apply to compare: the result files are in --out"),
        (&["--hlog", "r.hlog"], "--hlog: does not apply to compare: give --out DIR"),
        (&["--stream", "live.jsonl"], "--stream: does not apply to compare: follows one run"),
        (&["--metrics-addr", "127.0.0.1:0"], "--metrics-addr: does not apply to compare: follows one run"),
        (&["--shard", "0/2"], "--shard: does not apply to compare: compare splits each run itself"),
        (&["--start-at", "1"], "--start-at: does not apply to compare: "),
        (&["--server-pid", "1"], "--server-pid: does not apply to compare: "),
    ];
    for (flags, expected) in cases {
        let args = [&["compare", "--servers", "healthy", "--duration", "1s"][..], flags].concat();
        let (code, stdout, stderr) = wsbench(&args, &dir);
        assert_eq!(code, Some(2), "{flags:?}\n{stdout}\n{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{flags:?}: {stderr}");
        assert!(stderr.starts_with(&format!("wsbench: {expected}")), "{flags:?}: {stderr}");
        assert!(!stdout.contains("repeat 1"), "no server was measured: {stdout}");
    }
}

#[test]
fn timeout_sigterm_and_sighup_end_the_comparison_with_its_table_and_results() {
    // timeout signals compare, then its whole process group: one request to stop. The fleet
    // server runs in a group of its own and is stopped by compare, after its run is written.
    for signal in ["TERM", "HUP"] {
        let dir = fleet_dir(&format!("timeout-{signal}"));
        let out = dir.join("results");
        let html = out.join("compare.html");
        let output = Command::new("timeout")
            .args(["--preserve-status", "-s", signal, "3", env!("CARGO_BIN_EXE_wsbench")])
            .args(["compare", "--servers", "healthy,builtin", "--connections", "10", "--duration", "30s"])
            .arg("--out")
            .arg(&out)
            .arg("--html")
            .arg(&html)
            .arg("--fleet-dir")
            .arg(&dir)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let what = format!("SIG{signal}\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        assert_eq!(output.status.code(), Some(130), "{what}");
        let row = stdout.lines().find(|l| l.starts_with("healthy")).unwrap_or_else(|| panic!("{what}"));
        let cut_short =
            format!("(interrupted (SIG{signal}): its run was cut short, the figures cover what ran)");
        assert!(row.ends_with(&cut_short), "{what}");
        assert!(!stdout.contains("Ctrl-C"), "{what}");
        let result = wsbench::result::RunResult::read_json(&out.join("healthy-1.json")).unwrap();
        assert!(result.interrupted, "{what}");
        assert!(html.exists(), "{what}");
    }
}

#[test]
fn ctrl_c_ends_the_comparison_with_130_and_keeps_what_was_measured() {
    let dir = fleet_dir("ctrl-c");
    let out = dir.join("results");
    let child = Command::new(env!("CARGO_BIN_EXE_wsbench"))
        .args(["compare", "--servers", "healthy,builtin", "--connections", "10", "--duration", "30s"])
        .arg("--out")
        .arg(&out)
        .arg("--fleet-dir")
        .arg(&dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The first server is measuring by then (its start takes well under a second).
    std::thread::sleep(std::time::Duration::from_secs(3));
    // SAFETY: signalling the child started above.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let started = std::time::Instant::now();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(started.elapsed() < std::time::Duration::from_secs(15), "Ctrl-C took too long");
    assert_eq!(output.status.code(), Some(130), "{}", String::from_utf8_lossy(&output.stderr));
    // The interrupted run is in the table and its result file was written; the next
    // server was never started.
    let row = stdout.lines().find(|l| l.starts_with("healthy")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(row.contains("10/10"), "{row}");
    // Cut short, and it says so: it does not read like a complete row.
    assert!(
        row.ends_with("(interrupted (SIGINT): its run was cut short, the figures cover what ran)"),
        "{row}"
    );
    let row = stdout.lines().find(|l| l.starts_with("builtin")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(row.contains("not measured: interrupted (SIGINT) before its turn"), "{row}");
    let result = wsbench::result::RunResult::read_json(&out.join("healthy-1.json")).unwrap();
    assert!(result.interrupted);
    assert!(!out.join("builtin-1.json").exists());
}

#[test]
fn the_html_page_may_go_into_the_out_folder_the_same_command_creates() {
    let dir = fleet_dir("html-into-out");
    let out = dir.join("results");
    let html = out.join("compare.html");
    let (code, _, stderr) = wsbench(
        &[
            "compare",
            "--servers",
            "builtin",
            "--connections",
            "5",
            "--warmup",
            "0s",
            "--duration",
            "1s",
            "--out",
            out.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
        &dir,
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(html.exists() && out.join("builtin-1.json").exists(), "{stderr}");
    // A folder the command does not create is still refused at once.
    let elsewhere = dir.join("nowhere").join("compare.html");
    let (code, _, stderr) = wsbench(
        &[
            "compare",
            "--servers",
            "builtin",
            "--out",
            out.to_str().unwrap(),
            "--html",
            elsewhere.to_str().unwrap(),
        ],
        &dir,
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("the folder") && stderr.contains("does not exist"), "{stderr}");
}

#[test]
fn a_pubsub_comparison_runs_the_servers_that_speak_it_and_skips_the_rest() {
    let dir = fleet_dir("pubsub");
    let out = dir.join("results");
    let flags = "--subscribers 20 --topics 2 --publishers 2 --rate 100/s --warmup 0s --duration 1s";
    let mut args = vec!["compare", "--scenario", "pubsub", "--servers", "builtin,healthy", "--out"];
    args.push(out.to_str().unwrap());
    args.extend(flags.split_whitespace());
    let (code, stdout, stderr) = wsbench(&args, &dir);
    assert_eq!(code, Some(0), "a skipped server is no failure\n{stdout}\n{stderr}");
    assert!(stdout.contains("deliveries/s (min–max)"), "{stdout}");
    let builtin = stdout.lines().find(|l| l.starts_with("builtin")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(builtin.contains("22/22"), "{builtin}");
    let healthy = stdout.lines().find(|l| l.starts_with("healthy")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(healthy.contains("skipped: no pub/sub"), "{healthy}");
    // The built-in server was started with --pubsub: every subscriber got every publish.
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("builtin-1.json")).unwrap()).unwrap();
    assert_eq!(result["pubsub"]["subscribed"], 20, "{stdout}\n{stderr}");
    assert_eq!(result["pubsub"]["lost"], 0, "{stdout}\n{stderr}");
    assert_eq!(result["pubsub"]["delivered"], result["pubsub"]["expected_deliveries"], "{stdout}\n{stderr}");
}

#[test]
fn a_ping_comparison_measures_every_server_on_its_heartbeat_path() {
    let dir = fleet_dir("ping");
    let out = dir.join("results");
    let flags = "--connections 10 --rate 100/s --warmup 0s --duration 1s";
    let mut args = vec!["compare", "--scenario", "ping", "--servers", "builtin,healthy", "--out"];
    args.push(out.to_str().unwrap());
    args.extend(flags.split_whitespace());
    let (code, stdout, stderr) = wsbench(&args, &dir);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("ping round trips/s (min–max)"), "{stdout}");
    for server in ["builtin", "healthy"] {
        let row = stdout.lines().find(|l| l.starts_with(server)).unwrap_or_else(|| panic!("{stdout}"));
        assert!(row.contains("10/10"), "{row}");
        let result: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join(format!("{server}-1.json"))).unwrap())
                .unwrap();
        assert_eq!(result["scenario"], "ping", "{stdout}\n{stderr}");
        assert_eq!(result["ping"]["pongs"], result["ping"]["pings"], "{stdout}\n{stderr}");
        assert_eq!(result["ping"]["unanswered"], 0, "{stdout}\n{stderr}");
    }
}

#[test]
fn a_protocol_comparison_runs_the_servers_that_speak_it_and_skips_the_rest() {
    let peers = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers");
    if !peers.join("node_modules/rpc-websockets").is_dir() {
        support::peer_missing("peer rpc-websockets not installed");
        return;
    }
    let dir = fleet_dir("protocol");
    // A JSON-RPC server as a fleet member: it speaks jsonrpc only, on the path `/`.
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../servers/node-rpc-websockets/server.js");
    std::fs::create_dir_all(dir.join("rpc")).unwrap();
    std::fs::write(
        dir.join("rpc").join("server.toml"),
        format!(
            "name = \"rpc\"\nlanguage = \"JavaScript\"\nlibrary = \"rpc-websockets\"\nversion = \"10\"\n\
             description = \"test\"\nrequires = [\"node\"]\ninstall = []\ninstalled = \"true\"\n\
             start = \"exec env NODE_PATH={} node {} {{port}}\"\nthreads = 1\nhttp = false\nprotocols = [\"jsonrpc\"]\n",
            peers.join("node_modules").display(),
            script.display()
        ),
    )
    .unwrap();
    let out = dir.join("results");
    let flags = "--protocol jsonrpc --connections 10 --warmup 0s --duration 1s";
    let mut args = vec!["compare", "--servers", "builtin,rpc", "--out"];
    args.push(out.to_str().unwrap());
    args.extend(flags.split_whitespace());
    let (code, stdout, stderr) = wsbench(&args, &dir);
    assert_eq!(code, Some(0), "a skipped server is no failure\n{stdout}\n{stderr}");
    let builtin = stdout.lines().find(|l| l.starts_with("builtin")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(builtin.contains("skipped: does not speak --protocol jsonrpc (it speaks raw)"), "{builtin}");
    let rpc = stdout.lines().find(|l| l.starts_with("rpc")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(rpc.contains("10/10"), "{rpc}");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("rpc-1.json")).unwrap()).unwrap();
    assert_eq!(result["config"]["protocol"], "jsonrpc", "{stdout}\n{stderr}");
    assert!(result["summary"]["errors"].as_object().is_some_and(|e| e.is_empty()), "{stdout}\n{stderr}");
    assert!(result["summary"]["latency_us"]["count"].as_u64() > Some(10), "{stdout}\n{stderr}");
}

#[test]
fn a_manifest_naming_an_unknown_protocol_is_refused_with_the_known_ones() {
    let dir = fleet_dir("unknown-protocol");
    let manifest = dir.join("healthy").join("server.toml");
    let text = std::fs::read_to_string(&manifest).unwrap() + "protocols = [\"amqp\"]\n";
    std::fs::write(&manifest, text).unwrap();
    let (code, _, stderr) = wsbench(&["fleet", "list"], &dir);
    assert_ne!(code, Some(0), "{stderr}");
    assert!(stderr.contains("protocol `amqp` is not one wsbench speaks: use raw"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

#[test]
fn a_manifest_naming_an_unknown_transport_is_refused_with_the_known_ones() {
    let dir = fleet_dir("unknown-transport");
    let manifest = dir.join("healthy").join("server.toml");
    let text = std::fs::read_to_string(&manifest).unwrap() + "transports = [\"http9\"]\n";
    std::fs::write(&manifest, text).unwrap();
    let (code, _, stderr) = wsbench(&["fleet", "list"], &dir);
    assert_ne!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("transport `http9` is not one wsbench opens: use http1, http2, http3"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

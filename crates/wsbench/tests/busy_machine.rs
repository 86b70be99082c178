//! The report is honest about the machine: a run with a busy loop on the client's CPU
//! records what the loop used and warns; a run's machine figures agree with its warning
//! whatever else the machine is doing (this machine may be busy with other work, so a
//! quiet run is checked for consistency, not for the absence of a warning); a server and a
//! client pinned to the same CPU are called out.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::{fresh_dir, result_schema_errors, run_with_timeout, wsbench_bin};

/// The CPUs this test may use, from its affinity.
fn allowed_cpus() -> Vec<usize> {
    wsbench::affinity::allowed_cpus()
}

/// `wsbench run` of the built-in server, pinned as given, with its result file; the report
/// and the result's `client.machine_load`.
fn run(dir: &Path, name: &str, server_cpu: usize, client_cpu: usize) -> (String, serde_json::Value) {
    let json = dir.join(format!("{name}.json"));
    let (server, client) = (server_cpu.to_string(), client_cpu.to_string());
    let args = [
        "run",
        "--duration",
        "2s",
        "--warmup",
        "0s",
        "--connections",
        "10",
        "--quiet",
        "--server-cpus",
        &server,
        "--client-cpus",
        &client,
        "--json",
        json.to_str().unwrap(),
    ];
    let finished = run_with_timeout(Command::new(wsbench_bin()).args(args), Duration::from_secs(120));
    assert_eq!(finished.status.and_then(|s| s.code()), Some(0), "{}", finished.describe(name));
    assert_eq!(result_schema_errors(&json), Vec::<String>::new());
    let result: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (finished.stdout, result["client"]["machine_load"].clone())
}

/// The recorded figures agree with each other and with the warning the report printed.
fn assert_consistent(report: &str, load: &serde_json::Value) {
    let number = |key: &str| load[key].as_f64().unwrap_or_else(|| panic!("machine_load.{key}: {load}"));
    let (others, steal, window) = (number("others_cores"), number("steal_share"), number("window_s"));
    assert!(window >= 1.9, "the window covers the 2 s run: {load}");
    assert!((0.0..=1.0).contains(&steal), "{load}");
    let cpus = number("cpus");
    assert!(others >= 0.0 && others <= cpus + 0.2, "others used at most every CPU: {load}");
    assert!((number("others_cpu_seconds") - others * window).abs() < 0.01, "{load}");
    let busy = others > wsbench::machine_load::BUSY_CORES || steal > wsbench::machine_load::BUSY_STEAL;
    assert_eq!(load["busy"].is_string(), busy, "{load}");
    assert_eq!(report.contains("WARNING: the machine was busy"), busy, "{report}");
}

#[test]
fn a_busy_loop_on_the_clients_cpu_is_recorded_and_warned_about() {
    let cpus = allowed_cpus();
    let (server_cpu, client_cpu) = (cpus[0], *cpus.last().unwrap());
    let dir = fresh_dir("busy-loop");
    let mut busy_loop = Command::new("taskset")
        .args(["-c", &client_cpu.to_string(), "yes"])
        .stdout(Stdio::null())
        .spawn()
        .expect("taskset and yes (util-linux, coreutils)");
    let (report, load) = run(&dir, "busy", server_cpu, client_cpu);
    busy_loop.kill().unwrap();
    busy_loop.wait().unwrap();
    assert_consistent(&report, &load);
    // The loop alone had a share of its CPU all along: above the bound whatever else ran.
    assert!(load["others_cores"].as_f64().unwrap() > wsbench::machine_load::BUSY_CORES, "{load}");
    assert!(report.contains("WARNING: the machine was busy: other processes used"), "{report}");
}

#[test]
fn a_run_records_the_machine_consistently_with_its_warning() {
    let cpus = allowed_cpus();
    if cpus.len() < 2 {
        eprintln!("one CPU: the server and the client cannot be pinned apart here");
        return;
    }
    let dir = fresh_dir("quiet-run");
    let (report, load) = run(&dir, "quiet", cpus[0], cpus[1]);
    assert_consistent(&report, &load);
    assert!(load["shared_cpus"].is_null(), "pinned apart: {load}");
    assert!(!report.contains("shared CPU"), "{report}");
}

#[test]
fn a_server_and_client_on_one_cpu_are_called_out() {
    let cpu = allowed_cpus()[0];
    let (report, load) = run(&fresh_dir("shared-cpu"), "shared", cpu, cpu);
    let shared = load["shared_cpus"].as_str().unwrap_or_else(|| panic!("{load}"));
    assert!(shared.starts_with(&format!("the server and the client shared CPU {cpu}:")), "{shared}");
    assert!(report.contains("WARNING: the server and the client shared CPU"), "{report}");
}

//! The probe samples the server the run reaches, and no other: a process found by the port
//! alone may listen on another address of it (`127.0.0.1:P` when the run goes to `[::1]:P`),
//! and its memory and CPU would pass for those of a server the run never reached. Real
//! binary, real `wsbench serve` on IPv4 only.

mod support;

use std::process::Command;
use std::time::Duration;

use support::{Server, fresh_dir, requirement_missing, run_with_timeout, wsbench_bin};

#[test]
fn a_server_on_the_same_port_of_the_other_family_is_not_probed() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        return requirement_missing("IPv6 loopback (::1) is not available on this machine");
    }
    let server = Server::spawn(&[]);
    let port = server.addr.port();
    let dir = fresh_dir("probe-other-family");
    let json = dir.join("r.json");
    let url = format!("ws://[::1]:{port}/");
    let finished = run_with_timeout(
        Command::new(wsbench_bin())
            .args(["run", &url, "--connections", "5", "--duration", "2s", "--quiet"])
            .args(["--json", json.to_str().unwrap()]),
        Duration::from_secs(60),
    );
    let what = finished.describe(&format!("wsbench run {url}"));
    assert_eq!(finished.status.and_then(|s| s.code()), Some(3), "nothing was reached: {what}");
    let line = finished.stdout.lines().find(|l| l.starts_with("server:")).unwrap_or_else(|| panic!("{what}"));
    assert_eq!(
        line,
        format!(
            "server: not probed (no process of this machine visibly listens on [::1]:{port} (give --server-pid))"
        )
    );
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(result["server"]["probed"], false);
    assert!(result["server"]["pids"].as_array().unwrap().is_empty(), "{}", result["server"]);
    // The same server over the address it listens on is found and sampled.
    let url = format!("ws://127.0.0.1:{port}/");
    let finished = run_with_timeout(
        Command::new(wsbench_bin())
            .args(["run", &url, "--connections", "5", "--duration", "1s", "--quiet"])
            .args(["--json", json.to_str().unwrap()]),
        Duration::from_secs(60),
    );
    assert_eq!(finished.status.and_then(|s| s.code()), Some(0), "{}", finished.describe(&url));
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(result["server"]["pids"], serde_json::json!([server.pid()]));
}

//! `wsbench run` against separately started servers: a `wsbench serve` that is killed in the
//! middle of the run, and the node `ws` echo server with 2000 connections.

use std::thread;
use std::time::Duration;

use serde_json::Value;

use crate::harness::{
    NodeEchoServer, Wsbench, arg, assert_matches_schema, errors, heavy, read_result, scratch, summary_of,
    uint, wsbench,
};
use crate::support::Server;

#[test]
fn killing_the_server_mid_run_counts_disconnections_and_writes_the_result() {
    let _slot = heavy(1);
    let mut server = Server::spawn(&[]);
    let url = server.urls[0].clone();
    let json = scratch("killed-server").join("r.json");
    let child = Wsbench::spawn(&[
        "run",
        "echo",
        &url,
        "--connections",
        "200",
        "--duration",
        "5s",
        "--json",
        arg(&json),
    ]);
    thread::sleep(Duration::from_millis(1500));
    server.child.kill().expect("SIGKILL the server");
    let _ = server.child.wait();
    let run = child.finish(Duration::from_secs(10));
    // Documented behaviour (docs/exit-codes.md): a run that lost its server still completes
    // its schedule, writes its result and exits 3; the losses are in the counters.
    run.assert_completed_with_failures();
    assert!(
        run.elapsed < Duration::from_secs(10),
        "the run overstayed: {:.2?}\n{}",
        run.elapsed,
        run.describe()
    );
    assert!(json.exists(), "no result file\n{}", run.describe());
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert_eq!(uint(&result, "/summary/connections/established"), 200, "{context}");
    assert!(errors(&result).get("reset").copied().unwrap_or(0) >= 1, "no reset counted\n{context}");
    assert_eq!(uint(&result, "/summary/disconnections"), 200, "every connection was lost\n{context}");
    assert_eq!(result["interrupted"], Value::Bool(false), "{context}");
    assert_matches_schema(&result);
}

#[test]
fn node_ws_server_2000_connections_all_established() {
    let Some(node) = NodeEchoServer::start() else {
        return;
    };
    // 2000 connections' handshakes against a single-threaded node server: take the machine.
    let _slot = heavy(2);
    let json = scratch("node-ws-2000").join("r.json");
    let run = wsbench(
        &["run", "echo", &node.url, "--connections", "2000", "--duration", "3s", "--json", arg(&json)],
        Duration::from_secs(40),
    );
    run.assert_success();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert_eq!(uint(&result, "/summary/connections/established"), 2000, "{context}");
    assert_eq!(uint(&result, "/summary/connections/failed"), 0, "{context}");
    assert!(errors(&result).is_empty(), "{context}");
    assert!(uint(&result, "/summary/messages/received") > 0, "{context}");
    assert_matches_schema(&result);
    assert_eq!(result["server"]["found_by"], "listening-port", "{context}");
    let pids: Vec<u64> =
        result["server"]["pids"].as_array().into_iter().flatten().filter_map(Value::as_u64).collect();
    assert!(
        pids.contains(&u64::from(node.pid())),
        "the probe found {pids:?}, node is {}\n{context}",
        node.pid()
    );
    assert_eq!(result["server"]["probed"], Value::Bool(true), "{context}");
}

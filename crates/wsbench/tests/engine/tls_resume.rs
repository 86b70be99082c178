//! TLS session resumption (`--tls-resume`) against real TLS servers, counted from the
//! server's side: `wsbench serve --tls` (its own counts, read by the probe from its counts
//! socket) and HAProxy in front of it (its `show stat` counters `ssl_sess` and
//! `ssl_reused_sess`). Churn drives the handshakes: one per cycle.

use serde_json::Value;
use std::time::Duration;
use wsbench_testpeers::{haproxy_show_stat, or_skip, start_haproxy};

use crate::harness::{arg, assert_matches_schema, heavy, read_result, scratch, summary_of, uint, wsbench};
use crate::support::Server;

/// Runs churn against `url` at 100 cycles/s for 2 s, no warm-up, with `extra` flags; the
/// result, once every cycle connected.
fn churn(test: &str, url: &str, extra: &[&str]) -> Value {
    let json = scratch(test).join("r.json");
    let mut args =
        vec!["run", "churn", url, "--insecure", "--rate", "100/s", "--duration", "2s", "--warmup", "0s"];
    args.extend_from_slice(extra);
    args.extend(["--json", arg(&json), "--quiet"]);
    let run = wsbench(&args, Duration::from_secs(60));
    run.assert_success();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    let established = uint(&result, "/summary/connections/established");
    assert!(established >= 100, "{context}");
    assert_eq!(
        uint(&result, "/counters/tls_handshakes/full") + uint(&result, "/counters/tls_handshakes/resumed"),
        established,
        "the client counted every connection's handshake\n{context}"
    );
    assert_matches_schema(&result);
    result
}

#[test]
fn serve_tls_resumes_the_sessions_the_client_offers_and_counts_them_itself() {
    let _slot = heavy(1);
    let server = Server::spawn(&["--tls"]);
    let url = format!("wss://{}/", server.addr);
    let resumed = churn("tls-resume-serve", &url, &["--tls-resume"]);
    let context = summary_of(&resumed);
    let (client, served) = (&resumed["counters"]["tls_handshakes"], &resumed["server"]["tls_handshakes"]);
    assert_eq!(served["full"], client["full"], "the server did as many full handshakes\n{context}");
    assert_eq!(served["resumed"], client["resumed"], "and resumed as many\n{context}");
    // The first connection finds no session stored; every later one has one to offer.
    assert!(uint(&resumed, "/server/tls_handshakes/resumed") >= 90, "{context}");
    assert_eq!(client["tried"], resumed["summary"]["connections"]["established"], "{context}");
    for side in [client, served] {
        assert!(
            side["full_cpu_ns"].as_u64() > Some(0) && side["resumed_cpu_ns"].as_u64() > Some(0),
            "{context}"
        );
    }
    let full = churn("tls-full-serve", &url, &[]);
    let context = summary_of(&full);
    assert_eq!(
        uint(&full, "/server/tls_handshakes/resumed"),
        0,
        "no session offered, none resumed\n{context}"
    );
    assert_eq!(uint(&full, "/counters/tls_handshakes/resumed"), 0, "{context}");
    assert_eq!(uint(&full, "/counters/tls_handshakes/tried"), 0, "{context}");
}

/// HAProxy's counters for its `tls` frontend: `(ssl_sess, ssl_reused_sess)`.
fn haproxy_sessions(haproxy: &wsbench_testpeers::Peer) -> (u64, u64) {
    let stat = haproxy_show_stat(haproxy).expect("haproxy stats socket");
    let mut lines = stat.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().trim_start_matches("# ").split(',').collect();
    let frontend =
        lines.map(|l| l.split(',').collect::<Vec<_>>()).find(|r| r[0] == "tls" && r[1] == "FRONTEND");
    let frontend = frontend.unwrap_or_else(|| panic!("no tls frontend in:\n{stat}"));
    let field = |name| {
        let at = header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no {name} in:\n{stat}"));
        frontend[at].parse::<u64>().unwrap_or_else(|_| panic!("{name} is no count in:\n{stat}"))
    };
    (field("ssl_sess"), field("ssl_reused_sess"))
}

#[test]
fn haproxy_resumes_the_sessions_the_client_offers_by_its_own_stats() {
    let _slot = heavy(1);
    let server = Server::spawn(&[]);
    let Some(haproxy) = or_skip(start_haproxy(server.addr)) else { return };
    let url = format!("wss://127.0.0.1:{}/", haproxy.port_of("tls").expect("haproxy tls port"));
    let before = haproxy_sessions(&haproxy);
    let result = churn("tls-resume-haproxy", &url, &["--tls-resume"]);
    let after = haproxy_sessions(&haproxy);
    let context = format!("{}\nhaproxy before {before:?} after {after:?}", summary_of(&result));
    let (full, resumed) = (after.0 - before.0, after.1 - before.1);
    assert_eq!(full + resumed, uint(&result, "/summary/connections/established"), "{context}");
    assert_eq!(
        resumed,
        uint(&result, "/counters/tls_handshakes/resumed"),
        "as the client counted\n{context}"
    );
    assert!(resumed >= 90, "HAProxy resumed nearly every handshake\n{context}");
    let before = after;
    let result = churn("tls-full-haproxy", &url, &[]);
    let after = haproxy_sessions(&haproxy);
    let context = format!("{}\nhaproxy before {before:?} after {after:?}", summary_of(&result));
    assert_eq!(after.1, before.1, "without --tls-resume HAProxy resumed nothing\n{context}");
    assert_eq!(after.0 - before.0, uint(&result, "/summary/connections/established"), "{context}");
}

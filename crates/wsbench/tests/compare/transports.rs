//! `wsbench compare --transport`: every server measured over each transport listed, beside
//! its default (HTTP/1.1) row: natively when its manifest lists the transport, through an
//! HAProxy front for HTTP/2 when it does not, and skipped with a row saying so for HTTP/3,
//! which no front takes. Rows over QUIC are served with the certificate compare makes and
//! verified against it; a list that is not one is refused before any server starts.

use std::path::{Path, PathBuf};

use super::support;
use super::{add_member, fleet_dir, wsbench};

/// A result file of `out`, parsed.
fn result(out: &Path, name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(out.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// The table's row that starts with `label` and a space.
fn row<'a>(stdout: &'a str, label: &str) -> &'a str {
    let start = format!("{label} ");
    stdout.lines().find(|l| l.starts_with(&start)).unwrap_or_else(|| panic!("no row {label}\n{stdout}"))
}

/// A measured row's two CPU-per-round-trip cells (server, client), from the end of the row.
fn cpu_cells(line: &str) -> (f64, f64) {
    let cells: Vec<&str> = line.split_whitespace().collect();
    let number = |cell: &str| cell.parse::<f64>().unwrap_or_else(|_| panic!("`{cell}` in {line}"));
    (number(cells[cells.len() - 3]), number(cells[cells.len() - 2]))
}

/// A run that counted no error, made round trips and measured both sides' CPU per round trip.
fn assert_clean_run(run: &serde_json::Value, context: &str) {
    let summary = &run["summary"];
    assert!(summary["errors"].as_object().is_some_and(|e| e.is_empty()), "{}\n{context}", summary["errors"]);
    assert!(summary["echoes_per_sec"].as_f64() > Some(0.0), "{context}");
    assert!(run["server"]["cpu_us_per_round_trip"].as_f64() > Some(0.0), "{}\n{context}", run["server"]);
    assert!(run["client"]["cpu_us_per_round_trip"].as_f64() > Some(0.0), "{context}");
}

/// `compare` of `servers` over `transports` at 20 connections (10 to a shared connection)
/// for a second, which must exit 0: the `--out` folder, stdout, and both outputs for messages.
fn compare_twenty(dir: &Path, servers: &str, transports: &str) -> (PathBuf, String, String) {
    let out = dir.join("results");
    let mut args =
        vec!["compare", "--servers", servers, "--transport", transports, "--out", out.to_str().unwrap()];
    args.extend("--connections 20 --streams-per-connection 10 --warmup 0s --duration 1s".split_whitespace());
    let (code, stdout, stderr) = wsbench(&args, dir);
    let context = format!("{stdout}\n{stderr}");
    assert_eq!(code, Some(0), "{context}");
    (out, stdout, context)
}

#[test]
fn builtin_over_h1_h2_and_h3_is_three_rows_of_one_table() {
    let dir = fleet_dir("h1-h2-h3");
    let (out, stdout, context) = compare_twenty(&dir, "builtin", "h2,h3");
    assert!(stdout.lines().next().unwrap_or_default().contains("srv µs/rt cli µs/rt"), "{context}");
    let labels = ["builtin", "builtin/h2", "builtin/h3"];
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("builtin")).collect();
    assert_eq!(rows.len(), 3, "{context}");
    for (label, (file, transport)) in labels.iter().zip([
        ("builtin-1.json", "http1"),
        ("builtin-h2-1.json", "http2"),
        ("builtin-h3-1.json", "http3"),
    ]) {
        let line = row(&stdout, label);
        assert!(line.contains("20/20"), "{line}\n{context}");
        let (server_us, client_us) = cpu_cells(line);
        assert!(server_us > 0.0 && client_us > 0.0, "{line}");
        let run = result(&out, file);
        assert_eq!(run["summary"]["transport"]["name"], transport, "{file}\n{context}");
        assert_clean_run(&run, &format!("{file}\n{context}"));
    }
    // The row over QUIC trusted compare's certificate alone, which is gone with the comparison.
    let h3 = result(&out, "builtin-h3-1.json");
    assert_eq!(h3["summary"]["transport"]["quic_connections"], 2, "{context}");
    assert!(h3["config"]["target"]["url"].as_str().is_some_and(|url| url.starts_with("wss://")), "{context}");
    assert_eq!(h3["config"]["insecure"], false, "{context}");
    let cacert = h3["config"]["tls"]["cacert"].as_str().unwrap_or_else(|| panic!("no cacert\n{context}"));
    assert!(!Path::new(cacert).exists(), "the certificate's folder is removed: {cacert}");
}

#[test]
fn a_server_without_h3_gets_a_row_saying_so_and_the_comparison_succeeds() {
    let dir = fleet_dir("no-h3");
    let args = ["compare", "--servers", "healthy", "--transport", "h3", "--connections", "5"];
    let (code, stdout, stderr) =
        wsbench(&[&args[..], &["--warmup", "0s", "--duration", "1s"]].concat(), &dir);
    assert_eq!(code, Some(0), "a skipped row is no failure\n{stdout}\n{stderr}");
    assert!(row(&stdout, "healthy").contains("5/5"), "{stdout}");
    let skipped = row(&stdout, "healthy/h3");
    assert!(skipped.contains("skipped: does not serve h3"), "{skipped}");
    assert!(skipped.contains("an HAProxy front takes h2 only"), "{skipped}");
}

/// The client verifies what a row over QUIC serves: a server that ignores compare's
/// certificate and serves one of its own is refused, with the cause in its row.
#[test]
fn a_server_serving_h3_with_a_certificate_of_its_own_is_not_trusted() {
    let dir = fleet_dir("own-certificate");
    let bin = env!("CARGO_BIN_EXE_wsbench");
    let start = format!("exec {bin} serve --port {{port}} --h3");
    add_member(&dir, "own", &start, "transports = [\"http3\"]\n");
    let args = ["compare", "--servers", "own", "--transport", "h3", "--connections", "5"];
    let (code, stdout, stderr) =
        wsbench(&[&args[..], &["--warmup", "0s", "--duration", "1s"]].concat(), &dir);
    assert_eq!(code, Some(3), "{stdout}\n{stderr}");
    assert!(row(&stdout, "own").contains("5/5"), "{stdout}");
    let refused = row(&stdout, "own/h3");
    assert!(refused.contains("refused HTTP/3"), "{refused}\n{stderr}");
}

#[test]
fn a_transport_list_with_an_unknown_a_repeated_or_an_empty_name_is_refused_before_any_server_starts() {
    let dir = fleet_dir("bad-lists");
    let cases = [
        ("h2,h4", "--transport: `h4` is not a transport: use h1, h2 or h3"),
        ("h3,h2,h3", "--transport: h3 is named twice in `h3,h2,h3`: name each transport once"),
        ("h2,http2", "--transport: h2 is named twice in `h2,http2`: name each transport once"),
        ("h2,,h3", "--transport: `h2,,h3` has an empty name: give transports separated by commas"),
    ];
    for (list, expected) in cases {
        let args = ["compare", "--servers", "builtin,healthy", "--transport", list, "--duration", "1s"];
        let (code, stdout, stderr) = wsbench(&args, &dir);
        assert_eq!(code, Some(2), "{list}\n{stdout}\n{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{list}: {stderr}");
        assert!(stderr.starts_with(&format!("wsbench: {expected}")), "{list}: {stderr}");
        assert!(stdout.is_empty(), "no server was measured: {stdout}");
    }
    let (code, _, stderr) = wsbench(
        &["compare", "--servers", "builtin", "--transport", "h3", "--http2", "--duration", "1s"],
        &dir,
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("contradict each other"), "{stderr}");
}

/// The fleet's real HTTP/3 servers, Caddy before node's `ws` and hypercorn with aioquic, as
/// members made from the repository's installed peers (`.tools/caddy`, `.venv`).
fn real_h3_members(dir: &Path) -> Option<()> {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let caddy = repo.join(".tools/caddy");
    let python = repo.join(".venv/bin/python");
    let node_ws = repo.join("servers/node-ws/node_modules/ws/package.json");
    let hypercorn = python.is_file()
        && std::process::Command::new(&python)
            .args(["-c", "import hypercorn, aioquic"])
            .status()
            .is_ok_and(|status| status.success());
    if !caddy.is_file() || !node_ws.is_file() || !hypercorn {
        support::peer_missing("Caddy (.tools/caddy, with servers/node-ws installed) or hypercorn (.venv)");
        return None;
    }
    let members = [
        (
            "caddy",
            "Go",
            format!(
                "cd {} && CADDY={} GOMAXPROCS=1 exec sh ./start.sh {{port}}",
                repo.join("servers/caddy-h3").display(),
                caddy.display()
            ),
        ),
        (
            "hypercorn",
            "Python",
            format!(
                "exec {} {} {{port}}",
                python.display(),
                repo.join("servers/python-hypercorn-h3/server.py").display()
            ),
        ),
    ];
    for (name, language, start) in members {
        add_member(dir, name, &start, &format!("language = \"{language}\"\ntransports = [\"http3\"]\n"));
    }
    Some(())
}

#[test]
fn caddy_and_hypercorn_are_compared_over_h3_with_compare_s_certificate() {
    let dir = fleet_dir("real-h3");
    if real_h3_members(&dir).is_none() {
        return;
    }
    let (out, stdout, context) = compare_twenty(&dir, "caddy,hypercorn", "h3");
    for name in ["caddy", "hypercorn"] {
        for (label, file) in
            [(name.to_owned(), format!("{name}-1.json")), (format!("{name}/h3"), format!("{name}-h3-1.json"))]
        {
            assert!(row(&stdout, &label).contains("20/20"), "{context}");
            assert_clean_run(&result(&out, &file), &format!("{file}\n{context}"));
        }
        let h3 = result(&out, &format!("{name}-h3-1.json"));
        assert_eq!(h3["summary"]["transport"]["name"], "http3", "{context}");
        assert_eq!(h3["config"]["insecure"], false, "verified against compare's certificate\n{context}");
    }
}

#[test]
fn a_server_whose_manifest_lists_the_transport_is_measured_over_it_natively() {
    let dir = fleet_dir("native-transport");
    let manifest = dir.join("healthy").join("server.toml");
    let text = std::fs::read_to_string(&manifest).unwrap() + "transports = [\"http2\"]\n";
    std::fs::write(&manifest, text).unwrap();
    let out = dir.join("results");
    let mut args =
        vec!["compare", "--transport", "h2", "--servers", "healthy", "--out", out.to_str().unwrap()];
    args.extend("--connections 20 --streams-per-connection 10 --warmup 0s --duration 1s".split_whitespace());
    let (code, stdout, stderr) = wsbench(&args, &dir);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    for row in ["healthy ", "healthy/h2 "] {
        let line =
            stdout.lines().find(|l| l.starts_with(row)).unwrap_or_else(|| panic!("no {row}row\n{stdout}"));
        assert!(line.contains("20/20"), "{line}");
    }
    assert!(!stdout.contains("haproxy"), "served natively, no front\n{stdout}");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("healthy-h2-1.json")).unwrap()).unwrap();
    assert_eq!(result["summary"]["transport"]["name"], "http2", "{stdout}");
    assert_eq!(result["summary"]["transport"]["tcp_connections"], 2, "{stdout}");
}

#[test]
fn an_http2_comparison_measures_each_server_over_both_and_fronts_the_h1_only_ones_with_haproxy() {
    if !Path::new("/usr/sbin/haproxy").is_file() {
        support::peer_missing("haproxy is not installed");
        return;
    }
    let dir = fleet_dir("http2");
    let out = dir.join("results");
    let mut args = vec!["compare", "--http2", "--servers", "builtin,healthy", "--out", out.to_str().unwrap()];
    args.extend("--connections 20 --streams-per-connection 10 --warmup 0s --duration 1s".split_whitespace());
    let (code, stdout, stderr) = wsbench(&args, &dir);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    for row in ["builtin ", "builtin/h2 ", "healthy ", "healthy/h2+haproxy "] {
        let line =
            stdout.lines().find(|l| l.starts_with(row)).unwrap_or_else(|| panic!("no {row}row\n{stdout}"));
        assert!(line.contains("20/20"), "{line}");
    }
    assert!(stdout.contains("/h2+haproxy: WebSockets over HTTP/2 to an HAProxy front"), "{stdout}");
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(out.join(name)).unwrap()).unwrap()
    };
    for (file, transport, tcp) in [
        ("builtin-1.json", "http1", 20),
        ("builtin-h2-1.json", "http2", 2),
        ("healthy-h2+haproxy-1.json", "http2", 2),
    ] {
        let result = read(file);
        assert_eq!(result["summary"]["transport"]["name"], transport, "{file}");
        assert_eq!(result["summary"]["transport"]["tcp_connections"], tcp, "{file}");
    }
}

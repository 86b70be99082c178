//! Bad input ends in one line naming the problem and what to do, with exit code 2 for
//! usage errors, before any load is sent: the real `wsbench` binary with unwritable output
//! paths, out-of-range durations and CPUs, a URL without its scheme, unknown scenarios and
//! mistyped scenario-file keys. Each cause is printed once.

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use support::{Finished, refused, run_with_timeout, wsbench_bin};

fn wsbench(args: &[&str]) -> Finished {
    run_with_timeout(Command::new(wsbench_bin()).args(args), Duration::from_secs(20))
}

fn scratch(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("usage-errors-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn an_unwritable_json_path_is_refused_at_once_without_starting_a_server() {
    let start = Instant::now();
    let message = refused(&["run", "--json", "/nonexistent/x.json"], 2, "--json /nonexistent/x.json: ");
    assert!(start.elapsed() < Duration::from_secs(1), "took {:?}", start.elapsed());
    assert!(message.contains("the folder /nonexistent does not exist: create it"), "{message}");
}

#[test]
fn every_output_flag_is_checked_before_its_command_works() {
    let dir = scratch("outputs");
    let folder = dir.to_str().unwrap();
    refused(&["run", "--hlog", folder], 2, &format!("--hlog {folder}: is a folder: give a file name"));
    refused(&["rtt", "--json", "/nonexistent/rtt.json"], 2, "--json /nonexistent/rtt.json: the folder");
    refused(&["merge", "-o", "/nonexistent/m.json", "a.json"], 2, "--output /nonexistent/m.json: the folder");
    refused(
        &["report", "--html", "/nonexistent/r.html", "a.json"],
        2,
        "--html /nonexistent/r.html: the folder",
    );
    refused(&["compare", "--html", "/nonexistent/c.html"], 2, "--html /nonexistent/c.html: the folder");
    refused(&["run", "--html", folder], 2, &format!("--html {folder}: is a folder: give a file name, e.g."));
    refused(
        &["run", "--find-max-rate", "--slo", "p99<10ms", "--html", "r.html"],
        2,
        "--html: does not combine with --find-max-rate",
    );
}

#[test]
fn durations_must_be_positive_and_at_most_a_week() {
    refused(&["run", "--duration", "0s"], 2, "--duration: must be longer than zero");
    refused(&["run", "--duration", "999999999999h"], 2, "--duration: must be at most 7 days");
    refused(&["run", "--connect-timeout", "0ms"], 2, "--connect-timeout: must be longer than zero");
    refused(&["run", "--reply-timeout", "0s"], 2, "--reply-timeout: must be longer than zero");
    refused(&["run", "--reply-timeout", "8d"], 2, "--reply-timeout: `8d`: `d` is not a unit of time");
    refused(&["run", "--reply-timeout", "169h"], 2, "--reply-timeout: must be at most 7 days");
    refused(
        &["run", "--rate", "10/s", "--max-send-lag", "0s"],
        2,
        "--max-send-lag: must be longer than zero",
    );
}

#[test]
fn cpus_that_are_not_online_are_named() {
    refused(&["run", "--client-cpus", "4095"], 2, "--client-cpus: CPU 4095 is not online here (CPUs ");
    refused(&["run", "--server-cpus", "0,4095"], 2, "--server-cpus: CPU 4095 is not online here");
}

#[test]
fn an_unknown_io_backend_is_named_with_the_choices() {
    refused(&["run", "--io", "kqueue"], 2, "--io: `kqueue` is not an I/O backend: use uring or epoll");
}

#[test]
fn a_server_address_without_scheme_gets_a_suggestion() {
    refused(&["run", "localhost:8080"], 2, "did you mean ws://localhost:8080?");
}

#[test]
fn scenario_names_presets_and_files() {
    // The preset is built in: its scenario (scalability) is what the flag then conflicts with.
    refused(
        &["run", "--scenario", "uws-scalability", "--rate", "10/s"],
        2,
        "the scalability scenario sends no messages",
    );
    refused(&["run", "--scenario", "c10k", "--arrival", "0s"], 2, "--arrival: must be longer than zero");
    let message = refused(
        &["run", "--scenario", "nosuch"],
        2,
        "--scenario nosuch: not a built-in scenario or preset (",
    );
    assert_eq!(message.matches("No such file or directory").count(), 1, "{message}");
    assert!(
        message.contains("uws-throughput") && message.contains("cannot read the file nosuch"),
        "{message}"
    );
}

#[test]
fn scenario_file_errors_say_where_and_what_was_meant() {
    let dir = scratch("toml");
    let file = dir.join("typo.toml");
    std::fs::write(&file, "duration = \"2s\"\nconections = 5\n").unwrap();
    refused(
        &["run", "--scenario", file.to_str().unwrap()],
        2,
        &format!(
            "scenario file {}:2:1: unknown key `conections`: did you mean `connections`?",
            file.display()
        ),
    );
}

#[test]
fn a_missing_result_file_names_its_cause_once() {
    let message = refused(&["report", "/nonexistent.json"], 2, "cannot read /nonexistent.json");
    assert_eq!(message.matches("No such file or directory").count(), 1, "{message}");
}

#[test]
fn serve_pubsub_refuses_several_threads_or_processes() {
    for (flag, value) in [("--threads", "2"), ("--processes", "2")] {
        let finished = wsbench(&["serve", "--port", "0", "--pubsub", flag, value]);
        let what = finished.describe(&format!("wsbench serve --pubsub {flag} {value}"));
        assert_eq!(finished.status.and_then(|s| s.code()), Some(2), "{what}");
        assert!(finished.stderr.contains(&format!("'--pubsub' cannot be used with '{flag}")), "{what}");
    }
}

#[test]
fn bad_values_name_their_flag_and_the_rule() {
    for (args, expected) in [
        (
            &["run", "--duration", "8d"][..],
            "--duration: `8d`: `d` is not a unit of time: use ns, us, ms, s, m or h",
        ),
        (&["run", "--connect-timeout", "1x"][..], "--connect-timeout: `1x`: `x` is not a unit of time"),
        (&["run", "--warmup=-1s"][..], "--warmup: `-1s` is negative"),
        (&["run", "--duration", "-1s"][..], "--duration: `-1s` is negative"),
        (&["run", "--rate", "0/s"][..], "--rate: `0/s` is zero"),
        (&["run", "--ramp", "0/s"][..], "--ramp: `0/s` is zero"),
        (&["run", "--duration", "10"][..], "--duration: `10` has no unit: write 10s"),
        (&["run", "--bearer", ""][..], "--bearer: is empty: give the token"),
        (&["run", "--connections", "-5"][..], "invalid value '-5' for '--connections <CONNECTIONS>'"),
        (&["run", "--conections", "5"][..], "did you mean '--connections'"),
        (&["run", "--protocol", "mqt"][..], "`mqt` (did you mean `mqtt`?) is not a protocol"),
        (
            &["run", "churn", "ws://127.0.0.1:1/", "--tls-resume"][..],
            "--tls-resume: only applies to a wss:// URL",
        ),
        (
            &["run", "churn", "wss://127.0.0.1:1/", "--tls-resume", "1.5"][..],
            "--tls-resume: `1.5`: give the share of new connections that may resume, from 0 to 1",
        ),
        (
            &["run", "--scenario", "uws-thruput"][..],
            "--scenario uws-thruput (did you mean `uws-throughput`?): not a built-in",
        ),
    ] {
        let message = refused(args, 2, expected);
        assert!(!message.contains("tip:") && !message.contains("-- -1"), "{message}");
    }
}

/// A mistyped scenario word is named as the word it is, not as a `--scenario` that was never
/// given: what it is not, what it may have meant, and the scenarios there are.
#[test]
fn a_mistyped_scenario_word_is_named_as_a_word_not_as_a_flag() {
    let message = refused(
        &["run", "ehco"],
        2,
        "wsbench: `ehco` is not a scenario (did you mean `echo`?): the scenarios are echo, throughput, ",
    );
    assert!(!message.contains("--scenario:"), "{message}");
    assert!(message.contains("a preset or a scenario file goes after --scenario"), "{message}");
    refused(
        &["run", "uws-throughput"],
        2,
        "`uws-throughput` is not a scenario but a preset: give --scenario uws-throughput",
    );
    refused(
        &["run", "localhost:8080"],
        2,
        "`localhost:8080` is not a scenario: did you mean ws://localhost:8080?",
    );
}

/// A secret read from an unset variable is refused before anything connects, naming the
/// variable; a secret given both ways too; neither error shows a secret.
#[test]
fn a_secret_from_an_unset_variable_or_given_twice_is_refused_by_name() {
    let mqtt = ["run", "ws://127.0.0.1:1/", "--protocol", "mqtt", "--username", "u"];
    let unset = [&mqtt[..], &["--password-env", "WSBENCH_TEST_SURELY_UNSET"]].concat();
    refused(
        &unset,
        2,
        "--password-env: the environment variable WSBENCH_TEST_SURELY_UNSET is not set: export it \
         holding the value of --password, or give --password",
    );
    let twice = [&mqtt[..], &["--password", "hunter2", "--password-env", "P"]].concat();
    let message = refused(&twice, 2, "--password");
    assert!(!message.contains("hunter2"), "{message}");
}

#[test]
fn a_url_that_is_no_websocket_is_named_without_a_flag_run_does_not_have() {
    let message = refused(
        &["run", "http://127.0.0.1:1/"],
        2,
        "`http://127.0.0.1:1/`: a server URL starts with ws:// or wss:// (a WebSocket on that server: \
         ws://127.0.0.1:1/)",
    );
    assert!(!message.contains("--target"), "{message}");
}

#[test]
fn scenario_file_type_errors_and_nested_flow_steps_are_named_where_they_are() {
    let dir = scratch("toml-places");
    let typed = dir.join("typed.toml");
    std::fs::write(&typed, "duration = \"2s\"\nconnections = \"many\"\n").unwrap();
    refused(
        &["run", "--scenario", typed.to_str().unwrap()],
        2,
        &format!(
            "scenario file {}:2:15: key `connections`: invalid type: string \"many\", expected a whole number",
            typed.display()
        ),
    );
    let flow = dir.join("flow.toml");
    std::fs::write(
        &flow,
        "scenario = \"flow\"\n[[flow.steps]]\nsend = \"x\"\n[[flow.steps]]\nrepeat = 2\n\
         steps = [ { send = \"a\" }, { expect-regex = \"(\" } ]\n",
    )
    .unwrap();
    refused(
        &["run", "--scenario", flow.to_str().unwrap()],
        2,
        "scenario file [[flow.steps]]: step 2: in its steps, step 2: bad regex",
    );
}

#[test]
fn streams_per_connection_is_bounded_and_needs_http2() {
    refused(
        &["run", "--http2", "--streams-per-connection", "0"],
        2,
        "--streams-per-connection: 0 is out of range: use 1 to 10000",
    );
    refused(
        &["run", "--http2", "--streams-per-connection", "10001"],
        2,
        "--streams-per-connection: 10001 is out of range: use 1 to 10000",
    );
    refused(
        &["run", "--streams-per-connection", "10"],
        2,
        "applies to --transport h2 or --transport h3 only (this run uses h1)",
    );
}

#[test]
fn protocol_templates_and_batches_are_checked_before_the_load() {
    let target = "ws://127.0.0.1:1/";
    for (args, expected) in [
        (
            &["run", target, "--protocol", "graphql-ws", "--init-payload", r#"{"token":"s3cret""#][..],
            "--init-payload is not JSON (EOF while parsing",
        ),
        (
            &["run", target, "--protocol", "graphql-ws", "--init-payload", "[]"][..],
            "--init-payload is not a JSON object",
        ),
        (
            &["run", "pubsub", target, "--protocol", "graphql-ws", "--subscription", r#"{"variables":{}}"#][..],
            "--subscription has no \"query\"",
        ),
        (
            &[
                "run",
                "pubsub",
                target,
                "--protocol",
                "graphql-ws",
                "--mutation",
                r#"{"query":"m","b":{payload}"#,
            ][..],
            "--mutation is not JSON once {topic} and {payload} are filled in",
        ),
        (&["run", target, "--protocol", "jsonrpc", "--params", "x"][..], "--params \"x\" is not JSON"),
        (
            &["run", target, "--protocol", "jsonrpc", "--batch", "0"][..],
            "--batch 0: a batch holds at least 1 call",
        ),
        (
            &["run", target, "--protocol", "jsonrpc", "--batch", "1001"][..],
            "--batch 1001 is more than 1000 calls",
        ),
    ] {
        let message = refused(args, 2, expected);
        assert!(!message.contains("s3cret"), "the init payload may be a secret: {message}");
    }
}

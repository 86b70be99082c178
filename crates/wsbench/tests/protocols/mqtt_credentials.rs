//! `--protocol mqtt` against a mosquitto that checks a password file (`mosquitto_passwd`):
//! the right user and password, read from the environment by `--password-env`, connect a
//! run with client ids of a `--client-id` template with no error; a wrong password fails
//! every connection as `mqtt_connack_not_authorized` (3.1.1 and 5) and exits 3; and a
//! pub/sub run at QoS 2 on topics of the user's naming, with the password given as it is and
//! split over two processes, delivers every publish exactly once and writes the password
//! nowhere: not in its result, its shards' files, its stream, its interval log, its HTML
//! report, nor what it prints.

use std::path::Path;
use std::time::Duration;

use wsbench_testpeers::{Peer, or_skip, start_mosquitto_with_password};

use crate::harness::{Finished, arg, errors, scratch, summary_of, uint};
use crate::{run, run_with_env};

const USER: &str = "bench-user";

/// A password no test output would hold by chance.
fn password() -> String {
    format!("right-secret-{}", std::process::id())
}

fn broker() -> Option<Peer> {
    or_skip(start_mosquitto_with_password(USER, &password()))
}

#[test]
fn the_right_password_read_from_the_environment_connects_every_connection() {
    let Some(broker) = broker() else { return };
    let url = broker.url("/");
    let secret = password();
    let load = ["--protocol", "mqtt", "--connections", "200", "--warmup", "1s", "--duration", "4s"];
    let credentials = [
        "--username",
        USER,
        "--password-env",
        "WSBENCH_TEST_MQTT_PASSWORD",
        "--client-id",
        "bench-{run}-c{conn}",
    ];
    let args = [&[url.as_str()], &load[..], &credentials, &["--threshold", "errors==0"]].concat();
    let env = [("WSBENCH_TEST_MQTT_PASSWORD", secret.as_str())];
    let (finished, result) = run_with_env("mqtt-password-env", &args, &env, Duration::from_secs(90));
    finished.assert_success();
    assert_eq!(uint(&result, "/summary/connections/established"), 200, "{}", summary_of(&result));
    // Every connection echoed in the measured window (not a rate: a busy machine is slower).
    assert_eq!(uint(&result, "/counters/connections_in_window"), 200, "{}", summary_of(&result));
    let options = &result["config"]["protocol_options"];
    assert_eq!(options["password_env"], "WSBENCH_TEST_MQTT_PASSWORD", "{options}");
    assert_eq!(options["username"], USER, "{options}");
    assert_eq!(options["client_id"], "bench-{run}-c{conn}", "{options}");
    assert!(!result.to_string().contains(&secret) && !printed(&finished).contains(&secret));
}

/// mosquitto 2.0.11 answers a wrong password with 3.1.1's return code 5 and MQTT 5's reason
/// code 0x87, both "not authorized" (not 4 or 0x86, "bad user name or password").
#[test]
fn a_wrong_password_fails_every_connection_as_not_authorized_under_3_1_1_and_5_and_exits_3() {
    let Some(broker) = broker() else { return };
    let url = broker.url("/");
    let wrong = format!("wrong-secret-{}", std::process::id());
    for (version, detail) in [
        ("3.1.1", "CONNACK return code 0x05 (not_authorized)"),
        ("5", "CONNACK reason code 0x87 (not_authorized)"),
    ] {
        let load = ["--protocol", "mqtt", "--mqtt-version", version, "--connections", "20", "--warmup", "0s"];
        let credentials = ["--username", USER, "--password", &wrong, "--duration", "1s"];
        let test = format!("mqtt-password-wrong-{version}");
        let (finished, result) =
            run(&test, &[&[url.as_str()], &load[..], &credentials].concat(), Duration::from_secs(60));
        let context = || format!("{}\n{}", summary_of(&result), finished.describe());
        finished.assert_completed_with_failures();
        assert_eq!(uint(&result, "/summary/connections/established"), 0, "{}", context());
        let errors = errors(&result);
        assert_eq!(errors.get("mqtt_connack_not_authorized"), Some(&20), "{}", context());
        let details = &result["counters"]["protocol_error_details"];
        assert_eq!(details["mqtt_connack_not_authorized"], detail, "{}", context());
        assert_eq!(errors.len(), 1, "no other cause: {errors:?}");
        assert_eq!(result["config"]["protocol_options"]["password"], "<redacted>");
        assert!(
            !result.to_string().contains(&wrong) && !printed(&finished).contains(&wrong),
            "{}",
            context()
        );
    }
}

#[test]
fn a_qos_2_fan_out_over_two_processes_is_exact_and_writes_the_password_nowhere() {
    let Some(broker) = broker() else { return };
    let url = broker.url("/");
    let secret = password();
    let dir = scratch("mqtt-password-nowhere-files");
    let (stream, hlog, html) = (dir.join("live.jsonl"), dir.join("run.hlog"), dir.join("report.html"));
    let template = format!("wsbench-test/{}/{{topic}}/secured", std::process::id());
    let shape = ["pubsub", "--subscribers", "100", "--topics", "10", "--publishers", "10", "--rate", "100/s"];
    let load =
        ["--protocol", "mqtt", "--qos", "2", "--topic", &template, "--warmup", "1s", "--duration", "2s"];
    let outputs = ["--processes", "2", "--stream", arg(&stream), "--hlog", arg(&hlog), "--html", arg(&html)];
    let credentials = ["--username", USER, "--password", &secret, "--threshold", "errors==0"];
    let args = [&[shape[0], url.as_str()], &shape[1..], &load, &outputs, &credentials].concat();
    let (finished, result) = run("mqtt-password-nowhere", &args, Duration::from_secs(120));
    finished.assert_success();
    let context = || format!("{}\n{}", result["pubsub"], finished.describe());
    // 10 topics of 10 subscribers each: a publish is expected 10 times.
    let by_topic = &result["counters"]["pubsub"]["published"];
    let published: u64 = (0..10).map(|t| by_topic[t.to_string()].as_u64().unwrap_or(0)).sum();
    assert!(published > 0, "{}", context());
    assert_eq!(uint(&result, "/pubsub/subscribed"), 100, "{}", context());
    assert_eq!(uint(&result, "/pubsub/expected_deliveries"), published * 10, "{}", context());
    assert_eq!(uint(&result, "/pubsub/delivered"), published * 10, "{}", context());
    for key in ["lost", "duplicated", "unexpected", "subscribe_failures"] {
        assert_eq!(uint(&result, &format!("/pubsub/{key}")), 0, "{key}\n{}", context());
    }
    assert_eq!(result["config"]["protocol_options"]["topic"], template.as_str());
    assert_eq!(result["config"]["protocol_options"]["qos"], 2);
    // `run` writes the result, and the shards' files beside it, in the test's scratch folder.
    let mut written =
        files_under(&Path::new(env!("CARGO_TARGET_TMPDIR")).join("engine-tests/mqtt-password-nowhere"));
    written.extend(files_under(&dir));
    assert!(written.iter().any(|path| path.ends_with("shard-1.json")), "the shards' files: {written:?}");
    for path in [&stream, &hlog, &html] {
        assert!(written.contains(path), "{} was written: {written:?}", path.display());
    }
    for path in &written {
        let text = String::from_utf8_lossy(&std::fs::read(path).expect("a written file")).into_owned();
        assert!(!text.contains(&secret), "{} holds the password", path.display());
    }
    assert!(!printed(&finished).contains(&secret), "{}", finished.describe());
    assert_eq!(result["config"]["protocol_options"]["password"], "<redacted>", "{}", result["config"]);
}

/// What the run printed, both streams.
fn printed(finished: &Finished) -> String {
    format!("{}{}", finished.stdout, finished.stderr)
}

/// Every file under `dir`, in its subfolders too.
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

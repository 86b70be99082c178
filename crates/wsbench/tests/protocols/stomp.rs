//! `--protocol stomp` against RabbitMQ 3.10 web-stomp (path `/ws`): echo through each
//! connection's own topic and pub/sub fan-out over `/topic/tK` complete and error-free, and
//! pub/sub through queues a `--destination` template names; an
//! ERROR frame (a virtual host RabbitMQ does not have, `--vhost`) an error by its cause with
//! the broker's message; heart-beats of a second keep idle connections alive; an echo server
//! is told apart as not STOMP at once; a user of its own, added with rabbitmqctl, logs in
//! with its passcode read from the environment and fans out through queues exactly, and a
//! wrong passcode is the broker's ERROR ("Bad CONNECT"). RabbitMQ takes ~11 s to start, so
//! these tests share one broker, started by the first that needs it and stopped when the
//! test binary exits.

use std::sync::{Mutex, MutexGuard, PoisonError, mpsc};
use std::time::Duration;

use wsbench_testpeers::{Peer, add_rabbitmq_user, or_skip, start_rabbitmq};

use crate::harness::{errors, summary_of, uint};
use crate::support::shared_server;
use crate::{run, run_with_env};

/// The shared broker: not yet started, skipped (not installed), or running.
static BROKER: Mutex<Option<Option<Peer>>> = Mutex::new(None);

/// The web-stomp URL of the shared RabbitMQ, started on first use; None when it is not
/// installed (the test is skipped).
/// Held by the test using the broker: one test at a time, so that a test of heart-beat timing
/// or of exact deliveries never shares the broker with another's thousand connections (on a
/// busy machine the broker then falls seconds behind).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The broker's URL, started on first use, and the turn of the test that uses it.
fn broker_url() -> Option<(String, MutexGuard<'static, ()>)> {
    let alone = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let mut broker = BROKER.lock().unwrap_or_else(PoisonError::into_inner);
    if broker.is_none() {
        // The broker dies with the thread that started it (PR_SET_PDEATHSIG), so it is
        // started from one that never ends, not from this test's.
        let (started_tx, started_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = started_tx.send(start_rabbitmq());
            loop {
                std::thread::park();
            }
        });
        // A broker that fails to start panics here; the next test tries again.
        let started = or_skip(started_rx.recv().expect("the broker's thread answers"));
        if started.is_some() {
            // SAFETY: registers a function taking nothing, run once as the process exits.
            unsafe { libc::atexit(stop_broker) };
        }
        *broker = Some(started);
    }
    broker.as_ref().and_then(Option::as_ref).map(|peer| (peer.url("/ws"), alone))
}

/// Adds the user `name` with `password` to the shared broker (started by [`broker_url`]).
fn add_user(name: &str, password: &str) {
    let broker = BROKER.lock().unwrap_or_else(PoisonError::into_inner);
    let peer = broker.as_ref().and_then(Option::as_ref).expect("the broker is started");
    add_rabbitmq_user(peer, name, password).unwrap_or_else(|e| panic!("adding {name}: {e}"));
}

/// Stops the shared broker (rabbitmqctl stop, then its epmd) as the test binary exits.
extern "C" fn stop_broker() {
    let taken = BROKER.lock().unwrap_or_else(PoisonError::into_inner).take();
    drop(taken);
}

#[test]
fn a_thousand_connections_echo_through_rabbitmq_without_an_error() {
    let Some((url, _alone)) = broker_url() else { return };
    let load = ["--protocol", "stomp", "--connections", "1000", "--warmup", "1s", "--duration", "4s"];
    let (finished, result) = run(
        "stomp-echo",
        &[&[url.as_str()], &load[..], &["--threshold", "errors==0"]].concat(),
        Duration::from_secs(90),
    );
    finished.assert_success();
    assert_eq!(uint(&result, "/summary/connections/established"), 1000, "{}", summary_of(&result));
    // Every connection echoed in the measured window (not a rate: a busy machine is slower).
    assert_eq!(uint(&result, "/counters/connections_in_window"), 1000, "{}", summary_of(&result));
    assert_eq!(uint(&result, "/counters/payload_mismatches"), 0, "{}", summary_of(&result));
    assert_eq!(result["counters"]["subprotocols_chosen"]["v12.stomp"], 1000, "{}", summary_of(&result));
    // DISCONNECT at the end: RabbitMQ closes 1000 "STOMP died", the answer to our close.
    assert_eq!(result["counters"]["closed_by_server"], serde_json::json!({}), "{}", summary_of(&result));
}

#[test]
fn pubsub_through_rabbitmq_topics_delivers_every_publish_to_a_thousand_subscribers_once() {
    let Some((url, _alone)) = broker_url() else { return };
    let shape = ["--subscribers", "1000", "--topics", "10", "--publishers", "10", "--rate", "50/s"];
    let gates = ["--threshold", "errors==0", "--threshold", "lost==0", "--threshold", "duplicated==0"];
    let (finished, result) = run(
        "stomp-pubsub",
        &[&["pubsub", url.as_str(), "--protocol", "stomp"], &shape[..], &gates[..]].concat(),
        Duration::from_secs(90),
    );
    finished.assert_success();
    let context = || summary_of(&result);
    assert_eq!(uint(&result, "/pubsub/subscribed"), 1000, "{}", context());
    let published = uint(&result, "/pubsub/published");
    assert!(published > 0, "nothing published\n{}", context());
    // Every topic has one publisher and 100 subscribers: each publish is due 100 times.
    assert_eq!(uint(&result, "/pubsub/expected_deliveries"), published * 100, "{}", context());
    assert_eq!(uint(&result, "/pubsub/delivered"), published * 100, "{}", context());
    for key in ["lost", "duplicated", "out_of_order", "unexpected", "subscribe_failures"] {
        assert_eq!(uint(&result, &format!("/pubsub/{key}")), 0, "{key}\n{}", context());
    }
    assert!(errors(&result).is_empty(), "{}", context());
}

#[test]
fn pubsub_through_queues_named_by_a_destination_template_delivers_every_publish() {
    let Some((url, _alone)) = broker_url() else { return };
    // One subscriber a queue: a RabbitMQ queue hands each message to one of its consumers.
    // The queues are this run's own (they outlive it in the broker).
    let template = format!("/queue/wsbench-test-{}-q{{topic}}", std::process::id());
    let shape = ["--subscribers", "10", "--topics", "10", "--publishers", "10", "--rate", "100/s"];
    let gates = ["--threshold", "errors==0", "--threshold", "lost==0", "--threshold", "duplicated==0"];
    let (finished, result) = run(
        "stomp-queues",
        &[
            &["pubsub", url.as_str(), "--protocol", "stomp", "--destination", &template],
            &shape[..],
            &gates[..],
        ]
        .concat(),
        Duration::from_secs(90),
    );
    finished.assert_success();
    let context = || summary_of(&result);
    assert_eq!(result["config"]["protocol_options"]["destination"], template.as_str(), "{}", context());
    assert_eq!(uint(&result, "/pubsub/subscribed"), 10, "{}", context());
    let published = uint(&result, "/pubsub/published");
    assert!(published > 0, "nothing published\n{}", context());
    assert_eq!(uint(&result, "/pubsub/expected_deliveries"), published, "{}", context());
    assert_eq!(uint(&result, "/pubsub/delivered"), published, "{}", context());
    assert!(errors(&result).is_empty(), "{}", context());
}

#[test]
fn an_error_frame_is_an_error_by_its_cause_with_rabbitmqs_message() {
    let Some((url, _alone)) = broker_url() else { return };
    let load = ["--protocol", "stomp", "--vhost", "no-such-vhost", "--connections", "10", "--warmup", "0s"];
    let (finished, result) = run(
        "stomp-error",
        &[&[url.as_str()], &load[..], &["--duration", "1s"]].concat(),
        Duration::from_secs(30),
    );
    finished.assert_completed_with_failures();
    assert_eq!(errors(&result), [("stomp_error".to_owned(), 10)].into(), "{}", summary_of(&result));
    assert_eq!(uint(&result, "/summary/connections/established"), 0, "{}", summary_of(&result));
    let details = &result["counters"]["protocol_error_details"];
    assert_eq!(details["stomp_error"], "Bad CONNECT", "{details}");
}

/// RabbitMQ closes a client silent for 2 to 3 of its intervals ("STOMP died"), and the
/// session ends a connection whose broker is silent for two: idle connections over six
/// seconds of one-second heart-beats stay up only if both directions beat.
#[test]
fn heart_beats_of_a_second_keep_idle_connections_alive() {
    let Some((url, _alone)) = broker_url() else { return };
    // 20 connections sharing 2 messages/s: each sends one every 10 s.
    let load = ["--protocol", "stomp", "--heartbeat", "1s", "--connections", "20", "--rate", "2/s"];
    let (finished, result) = run(
        "stomp-heartbeat",
        &[&[url.as_str()], &load[..], &["--warmup", "0s", "--duration", "6s", "--threshold", "errors==0"]]
            .concat(),
        Duration::from_secs(60),
    );
    finished.assert_success();
    assert_eq!(uint(&result, "/summary/connections/established"), 20, "{}", summary_of(&result));
    assert!(errors(&result).is_empty(), "{}", summary_of(&result));
    assert_eq!(result["counters"]["closed_by_server"], serde_json::json!({}), "{}", summary_of(&result));
    assert!(uint(&result, "/summary/latency_us/count") > 0, "{}", summary_of(&result));
}

#[test]
fn an_echo_server_is_not_stomp_and_fails_each_connection_at_once() {
    let addr = shared_server(&[]);
    let url = format!("ws://{addr}/");
    let load = ["--protocol", "stomp", "--connections", "5", "--warmup", "0s", "--duration", "1s"];
    let (finished, result) =
        run("stomp-not-stomp", &[&[url.as_str()], &load[..]].concat(), Duration::from_secs(30));
    finished.assert_completed_with_failures();
    // The echo of CONNECT is a frame no broker sends, not a wait for the open timeout.
    assert_eq!(errors(&result), [("stomp_unexpected_frame".to_owned(), 5)].into(), "{}", summary_of(&result));
    let details = &result["counters"]["protocol_error_details"];
    assert_eq!(details["stomp_unexpected_frame"], "a client does not expect a CONNECT frame from a broker");
}

#[test]
fn a_user_of_its_own_fans_out_through_queues_exactly_and_a_wrong_passcode_is_refused() {
    let Some((url, _alone)) = broker_url() else { return };
    let (user, passcode) = ("wsbench-stomp-user", format!("stomp-secret-{}", std::process::id()));
    add_user(user, &passcode);
    let template = format!("/queue/wsbench-test-{}-user-q{{topic}}", std::process::id());
    let shape = ["--subscribers", "10", "--topics", "10", "--publishers", "10", "--rate", "100/s"];
    let login =
        ["--login", user, "--passcode-env", "WSBENCH_TEST_STOMP_PASSCODE", "--threshold", "errors==0"];
    let args =
        [&["pubsub", url.as_str(), "--protocol", "stomp", "--destination", &template], &shape[..], &login]
            .concat();
    let env = [("WSBENCH_TEST_STOMP_PASSCODE", passcode.as_str())];
    let (finished, result) = run_with_env("stomp-own-user", &args, &env, Duration::from_secs(90));
    finished.assert_success();
    let context = || format!("{}\n{}", summary_of(&result), finished.describe());
    let published = uint(&result, "/pubsub/published");
    assert!(published > 0, "nothing published\n{}", context());
    assert_eq!(uint(&result, "/pubsub/expected_deliveries"), published, "{}", context());
    assert_eq!(uint(&result, "/pubsub/delivered"), published, "{}", context());
    for key in ["lost", "duplicated", "unexpected", "subscribe_failures"] {
        assert_eq!(uint(&result, &format!("/pubsub/{key}")), 0, "{key}\n{}", context());
    }
    let options = &result["config"]["protocol_options"];
    assert_eq!((options["login"].as_str(), options["passcode_env"].as_str()), (Some(user), Some(env[0].0)));
    assert!(!result.to_string().contains(&passcode) && !finished.stdout.contains(&passcode));

    let wrong = ["--protocol", "stomp", "--login", user, "--passcode", "wrong", "--connections", "5"];
    let (finished, result) = run(
        "stomp-wrong-passcode",
        &[&[url.as_str()], &wrong[..], &["--warmup", "0s", "--duration", "1s"]].concat(),
        Duration::from_secs(30),
    );
    finished.assert_completed_with_failures();
    assert_eq!(errors(&result), [("stomp_error".to_owned(), 5)].into(), "{}", summary_of(&result));
    let details = &result["counters"]["protocol_error_details"];
    // RabbitMQ names a refused login as it names a refused virtual host.
    assert_eq!(details["stomp_error"], "Bad CONNECT", "{details}");
    assert_eq!(result["config"]["protocol_options"]["passcode"], "<redacted>");
}

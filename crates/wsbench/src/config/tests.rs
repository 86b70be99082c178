//! Unit tests of the validated run configuration: flags and TOML onto one `LoadSpec`.

use super::*;

fn settings(f: impl FnOnce(&mut RunSettings)) -> RunSettings {
    let mut s = RunSettings::default();
    f(&mut s);
    s
}

#[test]
fn defaults_are_the_seed_echo_loop() {
    let config = RunSettings::default().validate().unwrap();
    assert_eq!(config.load.scenario, "echo");
    assert_eq!(config.load.connections, DEFAULT_CONNECTIONS);
    assert_eq!(config.load.payload, Payload::JsonTs);
    assert_eq!(config.load.message, MessageKind::Text);
    assert_eq!(config.load.in_flight, 1);
    assert!(config.target.is_none());
}

#[test]
fn throughput_defaults_follow_the_uws_benchmark() {
    let config = settings(|s| s.scenario = Some("throughput".into())).validate().unwrap();
    assert_eq!(config.load.payload, Payload::Bytes(20));
    assert_eq!(config.load.frames_per_send, 10);
    assert_eq!(config.load.in_flight, 10);
    assert_eq!(config.load.message, MessageKind::Binary);
}

#[test]
fn flags_override_the_scenario_file() {
    let file: RunSettings =
        toml::from_str("scenario = \"echo\"\nconnections = 25000\nramp = \"75/s\"\n").unwrap();
    let flags = settings(|s| s.connections = Some(10));
    let config = flags.over(file).unwrap().validate().unwrap();
    assert_eq!(config.load.connections, 10);
    assert_eq!(config.load.ramp_per_sec, Some(75.0));
}

#[test]
fn bad_values_name_the_setting() {
    let cases: Vec<(RunSettings, &str)> = vec![
        (settings(|s| s.connections = Some(0)), "--connections"),
        (settings(|s| s.payload = Some("words".into())), "--payload"),
        (settings(|s| s.duration = Some("soon".into())), "duration"),
        (settings(|s| s.scenario = Some("c1m".into())), "--scenario"),
        (settings(|s| s.scenario = Some("localhost:8080".into())), "did you mean ws://localhost:8080?"),
        (settings(|s| s.duration = Some("0s".into())), "--duration: must be longer than zero"),
        (settings(|s| s.duration = Some("999999999999h".into())), "--duration: must be at most 7 days"),
        (
            settings(|s| {
                s.scenario = Some("scalability".into());
                _ = s.options.0.insert("hold".into(), "0s".into());
            }),
            "--hold: must be longer than zero",
        ),
        (
            settings(|s| _ = s.options.0.insert("hold".into(), "5s".into())),
            "--hold: applies to the scalability scenario only",
        ),
        (settings(|s| s.connect_timeout = Some("0s".into())), "--connect-timeout: must be longer"),
        (settings(|s| s.reply_timeout = Some("0s".into())), "--reply-timeout: must be longer than zero"),
        (settings(|s| s.reply_timeout = Some("169h".into())), "--reply-timeout: must be at most 7 days"),
        (settings(|s| s.reply_timeout = Some("10".into())), "--reply-timeout"),
        (settings(|s| s.interval = Some("0s".into())), "--interval: must be longer than zero"),
        (settings(|s| s.arrival = Some("0s".into())), "--arrival: must be longer than zero"),
        (settings(|s| s.max_send_lag = Some("8d".into())), "--max-send-lag: `8d`: `d` is not a unit of time"),
        (settings(|s| s.duration = Some("10".into())), "--duration: `10` has no unit: write 10s"),
        (settings(|s| s.rate = Some("0/s".into())), "--rate: `0/s` is zero"),
        (settings(|s| s.ramp = Some("0/s".into())), "--ramp: `0/s` is zero"),
        (settings(|s| s.bearer = Some(String::new())), "--bearer: is empty"),
        (
            settings(|s| {
                s.find_max_rate = true;
                s.slo = Some("p99<10ms".into());
                s.hlog = Some(std::env::temp_dir().join("wsbench-search.hlog"));
            }),
            "--hlog: does not combine with --find-max-rate",
        ),
        (
            settings(|s| s.in_flight = Some(99_999_999_999)),
            "--in-flight: 99,999,999,999 messages is too many",
        ),
        (settings(|s| s.max_send_lag = Some("169h".into())), "--max-send-lag: must be at most 7 days"),
        (settings(|s| s.warmup = Some("200h".into())), "--warmup: must be at most 7 days"),
        (
            settings(|s| s.client_cpus = Some("4095".into())),
            "--client-cpus: CPU 4095 is not online here (CPUs ",
        ),
        (
            settings(|s| s.json = Some("/nonexistent-wsbench/r.json".into())),
            "--json /nonexistent-wsbench/r.json: the folder",
        ),
        (settings(|s| s.frames_per_send = Some(3)), "--frames-per-send"),
        (settings(|s| s.source_addrs = Some("127.0.0.9-127.0.0.2".into())), "--source-addrs"),
        (settings(|s| s.target = Some("http://x".into())), "`http://x`: a server URL starts with ws://"),
        (settings(|s| s.print_result = true), "--print-result: needs --json FILE"),
    ];
    for (settings, expected) in cases {
        let message = settings.validate().unwrap_err().to_string();
        assert!(message.contains(expected), "{message:?} should mention {expected}");
    }
}

#[test]
fn wait_for_target_is_bounded_and_needs_a_url() {
    let with_url = |wait: &str| {
        settings(|s| {
            s.target = Some("ws://127.0.0.1:9/".into());
            s.wait_for_target = Some(wait.into());
        })
        .validate()
    };
    assert_eq!(with_url("90s").unwrap().wait_for_target, Some(Duration::from_secs(90)));
    assert_eq!(RunSettings::default().validate().unwrap().wait_for_target, None);
    let cases = [
        (with_url("2h"), "--wait-for-target: `2h` is too long: at most 1h"),
        (with_url("0s"), "--wait-for-target: must be longer than zero"),
        (with_url("60"), "--wait-for-target: `60` has no unit: write 60s"),
        (
            settings(|s| s.wait_for_target = Some("60s".into())).validate(),
            "--wait-for-target: needs a target URL",
        ),
    ];
    for (outcome, expected) in cases {
        let message = outcome.unwrap_err().to_string();
        assert!(message.starts_with(expected), "{message:?} should start with {expected}");
        assert!(!message.contains('\n'), "one line: {message:?}");
    }
}

#[test]
fn unknown_keys_in_a_scenario_file_are_rejected() {
    let error = RunSettings::parse_toml("conections = 5\n", std::path::Path::new("s.toml")).unwrap_err();
    assert!(error.to_string().contains("conections"));
}

#[test]
fn warmup_zero_stays_allowed() {
    let config = settings(|s| s.warmup = Some("0s".into())).validate().unwrap();
    assert_eq!(config.load.warmup, Duration::ZERO);
}

#[test]
fn c10k_defaults_are_the_seed_setup() {
    let config = settings(|s| s.scenario = Some("c10k".into())).validate().unwrap();
    assert_eq!(config.load.ramp_per_sec, Some(1000.0));
    assert_eq!(config.load.message_interval, Some(Duration::from_secs(1)));
    assert_eq!(config.load.duration, Duration::from_secs(300));
    assert_eq!(config.load.in_flight, u64::MAX);
    assert_eq!(config.load.warmup, Duration::ZERO);
}

#[test]
fn rate_spreads_over_the_connections() {
    let config = settings(|s| {
        s.connections = Some(100);
        s.rate = Some("1000/s".into());
        s.in_flight = Some(1);
    })
    .validate()
    .unwrap();
    assert_eq!(config.load.message_interval, Some(Duration::from_millis(100)));
    assert_eq!(config.load.in_flight, 1);
}

#[test]
fn shards_divide_the_connections_exactly() {
    for (connections, count) in [(25_000u64, 5u64), (10, 3), (7, 7), (1000, 6)] {
        let shards: Vec<Shard> =
            (0..count).map(|i| Shard::parse(&format!("{i}/{count}"), connections).unwrap()).collect();
        let total: u64 = shards.iter().map(|s| s.share_of(connections)).sum();
        assert_eq!(total, connections);
        for i in 0..connections {
            assert_eq!(shards.iter().filter(|s| s.owns(i)).count(), 1, "connection {i} owned once");
        }
        for shard in &shards {
            assert_eq!(
                (0..connections).filter(|&i| shard.owns(i)).count() as u64,
                shard.share_of(connections)
            );
        }
    }
    for bad in ["5/5", "1", "a/2", "0/0", "0/20"] {
        assert!(Shard::parse(bad, 10).is_err(), "{bad}");
    }
}

/// Churn's connections live for one cycle each: 500/s for 60 s is 30,000 connections,
/// but at most 500 × (3 s + the 2 s connect timeout) = 2,500 of them at once.
#[test]
fn churn_plans_descriptors_for_the_connections_open_at_once() {
    let churn = settings(|s| {
        s.scenario = Some("churn".into());
        s.rate = Some("500/s".into());
        s.duration = Some("60s".into());
    })
    .validate()
    .unwrap();
    assert_eq!(churn.load.connections, 30_000);
    assert_eq!((churn.connections_open_at_once(), churn.connections_per_process()), (2_500, 2_500));
    let echo = settings(|s| s.connections = Some(30_000)).validate().unwrap();
    assert_eq!(echo.connections_open_at_once(), 30_000);
}

#[test]
fn processes_are_checked() {
    let config = settings(|s| s.processes = Some(5)).validate().unwrap();
    assert_eq!((config.placement.processes, config.placement.server_processes), (5, 1));
    let big = settings(|s| {
        s.connections = Some(25_000);
        s.processes = Some(5);
    })
    .validate()
    .unwrap();
    assert_eq!(big.connections_per_process(), 5_000);
    let shard = settings(|s| {
        s.connections = Some(10);
        s.shard = Some("0/3".into());
    })
    .validate()
    .unwrap();
    assert_eq!(shard.connections_per_process(), 4);
    let cases: Vec<(RunSettings, &str)> = vec![
        (settings(|s| s.processes = Some(0)), "--processes: must be at least 1"),
        (settings(|s| s.server_processes = Some(0)), "--server-processes: must be at least 1"),
        (
            settings(|s| {
                s.processes = Some(2);
                s.shard = Some("0/2".into());
            }),
            "--processes: give either --processes or --shard",
        ),
        (
            settings(|s| {
                s.connections = Some(3);
                s.processes = Some(4);
            }),
            "--processes: 4 processes for 3 connections",
        ),
        (
            settings(|s| {
                s.target = Some("ws://127.0.0.1:9/".into());
                s.server_processes = Some(2);
            }),
            "--server-processes: only applies to the built-in server",
        ),
    ];
    for (settings, expected) in cases {
        let message = settings.validate().unwrap_err().to_string();
        assert!(message.starts_with(expected), "{message:?} should start with {expected:?}");
    }
    let file: RunSettings = toml::from_str("processes = 5\nserver-processes = 2\n").unwrap();
    assert_eq!((file.processes, file.server_processes), (Some(5), Some(2)));
}

#[test]
fn source_address_ranges() {
    let addrs = parse_addr_range("127.0.0.2-127.0.0.4").unwrap();
    assert_eq!(addrs.len(), 3);
    assert_eq!(addrs[2], IpAddr::from([127, 0, 0, 4]));
}

#[test]
fn the_send_window_defaults_to_half_a_millisecond_and_is_bounded() {
    let config = RunSettings::default().validate().unwrap();
    assert_eq!(config.load.send_window, DEFAULT_SEND_WINDOW);
    let zero = RunSettings { send_window: Some("0s".into()), ..RunSettings::default() }.validate().unwrap();
    assert_eq!(zero.load.send_window, Duration::ZERO);
    let wide = RunSettings { send_window: Some("11ms".into()), ..RunSettings::default() }.validate();
    let message = wide.unwrap_err().to_string();
    assert!(message.contains("--send-window") && message.contains("at most 10ms"), "{message}");
}

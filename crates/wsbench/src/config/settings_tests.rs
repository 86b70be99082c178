//! Tests of settings.rs.
use super::*;

#[test]
fn every_setting_survives_the_toml_file() {
    let some = |text: &str| Some(text.to_owned());
    let every = RunSettings {
        scenario: some("throughput"),
        target: some("ws://127.0.0.1:9/path"),
        connections: Some(100),
        clients: Some(101),
        arrival: some("1ms"),
        interval: some("1s"),
        rate: some("10/s"),
        max_send_lag: some("5ms"),
        send_window: some("100us"),
        find_max_rate: true,
        slo: some("p99<10ms,p999<50ms"),
        threshold: vec!["p99<10ms".into(), "errors==0".into()],
        stages: Some("10s:100c,5s:0c".parse().unwrap()),
        shard: some("1/3"),
        run_id: some("r-1"),
        start_at: Some(1_700_000_000_000),
        wait_for_target: some("30s"),
        ramp: some("75/s"),
        duration: some("2s"),
        warmup: some("0s"),
        in_flight: Some(4),
        payload: some("bytes:20"),
        payload_bytes: some("1KiB"),
        frames_per_send: Some(2),
        binary: true,
        text: false,
        connect_timeout: some("2s"),
        reply_timeout: some("3s"),
        client_cpus: some("1-3"),
        server_cpus: some("0"),
        source_addrs: some("127.0.0.2-127.0.0.6"),
        insecure: true,
        reconnect: Some("exponential:base=50ms,cap=2s".into()),
        disrupt: vec!["drop@1s,every=2s".into()],
        disrupt_command: Some("true".into()),
        // Set by compare, never from a file.
        server_owned: false,
        server_pid: Some(42),
        json: Some("out dir/r.json".into()),
        print_result: true,
        hlog: Some("r.hlog".into()),
        processes: Some(5),
        server_processes: Some(2),
        no_probe: true,
        header: vec!["X-Id: u-{conn}".into()],
        header_file: Some("h.txt".into()),
        data: Some("users.csv".into()),
        subprotocol: some("chat,v2"),
        origin: some("https://example.com"),
        bearer: some("t0k"),
        cookie: some("a=b"),
        cacert: Some("ca.pem".into()),
        client_cert: Some("c.pem".into()),
        client_key: Some("k.pem".into()),
        sni: some("api.example.com"),
        tls_version: some("1.3"),
        tls_resume: some("0.5"),
        compression: some("deflate; server_no_context_takeover"),
        max_message: some("16MiB"),
        max_message_memory: some("256MiB"),
        quiet: true,
        metrics_addr: some("127.0.0.1:9464"),
        stream: Some("live.jsonl".into()),
        dashboard: some("127.0.0.1:5665"),
        html: Some("r.html".into()),
        progress_to_parent: true,
        io: some("epoll"),
        protocol: some("jsonrpc"),
        transport: some("h2"),
        // Every member's options, of each kind.
        options: crate::options::OptionValues(
            [
                ("hold", toml::Value::from("3s")),
                ("messages-per-connection", toml::Value::from(3)),
                ("subscribers", toml::Value::from(500)),
                ("http2", toml::Value::from(true)),
                ("streams-per-connection", toml::Value::from(50)),
                ("mqtt-version", toml::Value::from("5")),
                ("qos", toml::Value::from(1)),
                ("flow", toml::Value::Table(toml::from_str("[[steps]]\nsend = \"x\"\n").unwrap())),
            ]
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value))
            .collect(),
        ),
    };
    let back: RunSettings = toml::from_str(&every.to_toml().unwrap()).unwrap();
    assert_eq!(back, every);
    // And through the pipe a shard of `--processes N` reads them from (JSON on stdin).
    let bytes = wsbench_supervisor::encode_settings(&every).unwrap();
    assert_eq!(wsbench_supervisor::read_settings::<RunSettings>(bytes.as_slice()).unwrap(), every);
    assert_eq!(RunSettings::default().to_toml().unwrap(), "");
}

#[test]
fn toml_errors_say_where_and_suggest_the_meant_key() {
    let path = Path::new("s.toml");
    let error = RunSettings::parse_toml("duration = \"5s\"\nconections = 5\n", path).unwrap_err();
    assert_eq!(
        error.to_string(),
        "scenario file s.toml:2:1: unknown key `conections`: did you mean `connections`?"
    );
    let error = RunSettings::parse_toml("colour = 1\n", path).unwrap_err().to_string();
    assert!(error.starts_with("scenario file s.toml:1:1: unknown key `colour`: the keys are"), "{error}");
    let error = RunSettings::parse_toml("connections = \"many\"\n", path).unwrap_err().to_string();
    assert_eq!(
        error,
        "scenario file s.toml:1:15: key `connections`: invalid type: string \"many\", expected a whole number"
    );
    let text = "[[flow.steps]]\nsend = \"x\"\n[[flow.steps]]\nrepeat = 2\nsteps = [ { send = \"a\", count = \"x\" } ]\n";
    let error = RunSettings::parse_toml(text, path).unwrap_err().to_string();
    assert!(error.contains("key `count`: invalid type: string \"x\""), "{error}");
}

#[test]
fn flags_override_the_file_where_they_are_given() {
    let file = RunSettings {
        connections: Some(25_000),
        ramp: Some("75/s".into()),
        binary: true,
        reconnect: Some("phoenix".into()),
        ..RunSettings::default()
    };
    let flags = RunSettings { connections: Some(10), text: true, ..RunSettings::default() };
    let merged = flags.over(file).unwrap();
    assert_eq!(merged.connections, Some(10));
    assert_eq!(merged.ramp.as_deref(), Some("75/s"));
    assert!(merged.text && !merged.binary);
    assert_eq!(merged.reconnect.as_deref(), Some("phoenix"));
}

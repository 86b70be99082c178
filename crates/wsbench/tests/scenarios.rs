//! Every preset in `scenarios/` is a valid scenario file: it parses, validates, and says
//! what its comment says (the seeds' setups, and the scale presets' processes, source
//! addresses and ramp).

use std::path::PathBuf;

use wsbench::config::{Payload, RunSettings};

fn preset(name: &str) -> wsbench::config::RunConfig {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(name);
    RunSettings::from_file(&path).and_then(|s| s.validate()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn every_preset_validates() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let mut settings = RunSettings::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
            // A preset in a message protocol runs against a server that speaks it: given here,
            // as on the command line.
            if settings.protocol.is_some() && settings.target.is_none() {
                settings.target = Some("ws://127.0.0.1:9/".to_owned());
            }
            settings.validate().unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            count += 1;
        }
    }
    assert!(count >= 4, "expected the seeds' presets in {}", dir.display());
}

#[test]
fn includeos_preset_is_the_seed_setup() {
    let config = preset("includeos-25k.toml");
    assert_eq!(config.load.scenario, "echo");
    assert_eq!(config.load.connections, 25_000);
    assert_eq!(config.load.ramp_per_sec, Some(375.0));
    assert_eq!(config.load.payload, Payload::JsonTs);
    // Five client processes, as the seed ran, and a server of two processes: each within
    // one process's 20,000 open files.
    assert_eq!((config.placement.processes, config.placement.server_processes), (5, 2));
    assert_eq!(config.connections_per_process(), 5_000);
}

#[test]
fn uws_presets_are_the_seed_arguments() {
    let throughput = preset("uws-throughput.toml");
    assert_eq!(
        (throughput.load.connections, throughput.load.payload, throughput.load.frames_per_send),
        (10_000, Payload::Bytes(20), 10)
    );
    let huge = preset("uws-huge.toml");
    assert_eq!(
        (huge.load.connections, huge.load.payload, huge.load.frames_per_send),
        (1, Payload::Bytes(104_857_600), 1)
    );
    assert_eq!(preset("uws-scalability.toml").load.scenario, "scalability");
}

/// Ports one source address has towards one server address and port (32768-60999).
const PORTS_PER_SOURCE_ADDR: u64 = 28_232;
/// Open files one process may have here (a hard limit), a few kept for its own use.
const CONNECTIONS_PER_PROCESS: u64 = 19_900;

/// Each process within its open files, each source address within its ports.
fn assert_fits_one_machine(config: &wsbench::config::RunConfig) {
    let connections = config.load.connections;
    assert!(
        config.connections_per_process() <= CONNECTIONS_PER_PROCESS,
        "{}",
        config.connections_per_process()
    );
    // The same check the run makes before it starts the server (10% for SO_REUSEPORT's spread).
    let server_processes = config.placement.server_processes;
    wsbench::session::cpus::check_server_processes(connections, server_processes, 20_000).unwrap();
    let addrs = config.load.source_addrs.len() as u64;
    // Past half of an address's ports the kernel's search for a free one (every other port
    // first) turns slow: a million over 40 addresses stalled at 560,000.
    let per_addr = connections.div_ceil(addrs.max(1));
    assert!(addrs > 0 && per_addr <= PORTS_PER_SOURCE_ADDR / 2, "{addrs} source addresses");
}

#[test]
fn scale_presets_fit_one_machine_with_a_paced_ramp() {
    let forty = preset("scale-40k.toml");
    assert_eq!((forty.load.scenario, forty.load.connections), ("echo", 40_000));
    assert!(forty.placement.processes >= 3 && forty.placement.server_processes >= 3);
    assert_eq!(forty.load.ramp_per_sec, Some(10_000.0));
    assert_fits_one_machine(&forty);

    let million = preset("scale-1m.toml");
    assert_eq!((million.load.scenario, million.load.connections), ("scalability", 1_000_000));
    assert_eq!((million.placement.processes, million.placement.server_processes), (55, 60));
    assert_eq!(million.load.source_addrs.len(), 100);
    assert_eq!(million.load.ramp_per_sec, Some(5_000.0));
    assert_eq!(serde_json::to_value(&million).unwrap()["hold"], 60.0);
    assert_fits_one_machine(&million);

    // Scaled down by a flag, as it is tried before the real run.
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/scale-1m.toml");
    let flags = RunSettings { connections: Some(100_000), ..RunSettings::default() };
    let scaled = flags.over(RunSettings::from_file(&path).unwrap()).unwrap().validate().unwrap();
    assert_eq!((scaled.load.connections, scaled.placement.processes), (100_000, 55));
}

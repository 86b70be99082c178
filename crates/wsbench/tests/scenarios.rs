//! Every preset in `scenarios/` is a valid scenario file: it parses, validates, and says
//! what its comment says (the seeds' setups).

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

//! wsbench: measures WebSocket servers the way the classic published benchmarks did, with
//! numbers that can be trusted. The binary (`main.rs`, with its flag model in `cli.rs`)
//! parses flags and calls this library, which is laid out as the data path (drawn in
//! docs/architecture.md):
//!
//! `config` (flags and TOML → one validated [`config::RunConfig`]) → `session` (the built-in
//! server, the probe, shards: everything around one measurement) → `engine` (connections,
//! pacing, workers; `engine::dial` how a connection becomes a WebSocket, `engine::io` epoll or
//! io_uring) → `metrics` → `result` (files with a schema) → `report` (every renderer). Each
//! scenario is a folder of `scenario` behind one interface and a registry line, and each
//! message protocol one of `protocol`: the layers above reach them only through their
//! registries. Beside them: `fleet` and `compare` (competitor servers), `rtt` (the HTTP/WS client round-trip benchmark),
//! `merge` (shards into one result), `live` (the live view, `--metrics-addr`, `--stream`),
//! `find_rate` (the rate search), `sweep` (one scenario at a series of loads) and `curve`
//! (its knee and Universal Scalability Law fit), `probe` (the server process in /proc), `builtin` (the
//! built-in server as a child), `units` (parsing and formatting units), `input_file` (every
//! file a user names, read within a limit), `exit` (what each outcome means as an exit
//! code), `error` (the error a command ends with) and `causes` (an error and its causes as
//! one line).

pub mod affinity;
pub mod allocator;
pub mod builtin;
pub mod causes;
pub mod client_cpu;
pub mod compare;
pub mod config;
pub mod curve;
pub mod diff;
pub mod engine;
pub mod error;
pub mod exit;
pub mod find_rate;
#[doc(hidden)]
pub mod fixture;
pub mod fleet;
pub mod hlog;
pub mod input_file;
pub mod live;
pub mod machine;
pub mod machine_load;
pub mod machine_net;
pub mod members;
pub mod merge;
pub mod metrics;
pub mod options;
pub mod output_path;
pub mod presets;
pub mod probe;
pub mod protocol;
pub mod recording;
pub mod report;
pub mod result;
pub mod rtt;
pub mod samples;
pub mod scenario;
pub mod session;
pub mod sweep;
pub mod thresholds;
pub mod units;

#[cfg(test)]
mod test_heap;

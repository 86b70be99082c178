//! wsbench: measures WebSocket servers the way the classic published benchmarks did, with
//! numbers that can be trusted. The binary (`main.rs`) only parses flags; everything else
//! lives here: the command-line model, the built-in server's front end, and (growing) the
//! load engine, metrics, result files and reports.

pub mod affinity;
pub mod cli;
pub mod client_cpu;
pub mod compare;
pub mod config;
pub mod engine;
pub mod find_rate;
pub mod fleet;
pub mod hlog;
pub mod machine;
pub mod merge;
pub mod metrics;
pub mod probe;
pub mod processes;
pub mod report;
pub mod result;
pub mod rtt;
pub mod run;
pub mod samples;
pub mod target;
pub mod units;

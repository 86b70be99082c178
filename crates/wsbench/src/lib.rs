//! wsbench: measures WebSocket servers the way the classic published benchmarks did, with
//! numbers that can be trusted. The binary (`main.rs`) only parses flags; everything else
//! lives here: the command-line model, the built-in server's front end, and (growing) the
//! load engine, metrics, result files and reports.

pub mod cli;
pub mod metrics;
pub mod samples;
pub mod units;

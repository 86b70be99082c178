//! Units, both ways, in one leaf module that every layer may use and that uses none:
//! [`parse`] reads what users type (durations, sizes, rates) and [`format`] writes numbers
//! for people (µs/ms/s, thousands separators, binary sizes, rates, chart ticks). The report,
//! the live view, the rate search and the client check all format through [`format`], so a
//! latency reads the same wherever it is shown.

pub mod format;
pub mod parse;

pub use parse::{UnitError, format_duration, parse_bytes, parse_duration, parse_rate};

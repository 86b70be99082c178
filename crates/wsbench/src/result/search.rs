//! What `run --find-max-rate` found, as data: each step's measured rate, latency, errors and
//! verdict, the rate that held and the one that broke, and the search's `--json` file, which
//! carries `kind: "wsbench-search"` and a schema version (see `schema/search.schema.json`) so
//! `wsbench report` can read it back. It sits beside the run's result so that the report
//! reads a search without the algorithm that ran it (`find_rate`), which judges steps and
//! fills these in.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::Slo;

use super::{LatencyStats, ResultError, write_atomically};

/// Bisection stops when the bracket is narrower than this fraction of the rate that held (the
/// search's precision, which the report prints beside its answer).
pub const PRECISION: f64 = 0.05;

/// What one step measured and whether the objective held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub offered_per_sec: f64,
    pub achieved_per_sec: f64,
    pub latency_us: LatencyStats,
    pub errors: BTreeMap<String, u64>,
    pub held: bool,
    /// Why the step failed, in words.
    pub broken_by: Option<String>,
}

/// The whole search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Search {
    pub slo: Slo,
    pub steps: Vec<Step>,
    /// The highest rate that held; `None` if even the lowest tried broke the objective.
    pub max_rate_per_sec: Option<f64>,
    /// The lowest rate that broke it (the bracket's top), if any did.
    pub broke_at_per_sec: Option<f64>,
    pub interrupted: bool,
}

/// Why a step cut short by Ctrl-C was not judged: what it measured is kept, but it held
/// and broke nothing.
pub const CUT_SHORT: &str = "cut short by an interruption";

/// Version of the search file's layout.
pub const SEARCH_SCHEMA_VERSION: u32 = 1;
/// The search file's `kind`, which tells it apart from result and rtt files.
pub const SEARCH_KIND: &str = "wsbench-search";

/// The `--json` file of `--find-max-rate`: the search, headed by its kind and version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchFile {
    pub kind: String,
    pub schema_version: u32,
    #[serde(flatten)]
    pub search: Search,
}

impl SearchFile {
    /// The file of one search.
    pub fn new(search: &Search) -> SearchFile {
        SearchFile {
            kind: SEARCH_KIND.to_owned(),
            schema_version: SEARCH_SCHEMA_VERSION,
            search: search.clone(),
        }
    }
}

/// Writes the search as pretty JSON to `path` (atomically).
pub fn write_search_json(search: &Search, path: &Path) -> Result<(), ResultError> {
    let file = SearchFile::new(search);
    write_atomically(path, |out| serde_json::to_writer_pretty(out, &file).map_err(std::io::Error::other))
}

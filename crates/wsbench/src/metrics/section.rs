//! A scenario's own measurements (a fan-out's deliveries per subscriber, a flow's latency per
//! step, churn's cycles …) behind one interface, so that workers, shards and processes merge
//! them the way they merge everything else, the result file carries them under the keys the
//! scenario chooses, and nothing outside the scenario names them.

use std::any::Any;
use std::collections::BTreeMap;

use hdrhistogram::Histogram;

/// One scenario's measurements. Implemented in the scenario's own folder; the engine, the
/// merge and the result file see only this.
pub trait Section: std::fmt::Debug + Send + Sync {
    /// Adds `other`, a section of the same scenario, into this one losslessly (counters
    /// `+=`, histograms `add`). A section of another kind is ignored.
    fn merge(&mut self, other: &dyn Section);
    /// Adds its non-zero error counts, by kind, into `errors`.
    fn errors(&self, errors: &mut BTreeMap<String, u64>);
    /// Its counters, as the keys it adds to the result file's `counters`.
    fn counters(&self) -> BTreeMap<String, serde_json::Value>;
    /// Its histograms, as the keys it adds to the result file's `histograms`.
    fn histograms(&self) -> Vec<(&'static str, SectionHistograms<'_>)>;
    /// Called once the workers of one process are merged, before anything is read: for
    /// figures that need every worker's share (e.g. the spread of a publish over its
    /// subscribers, which may sit on different workers).
    fn complete(&mut self) {}
    fn boxed(&self) -> Box<dyn Section>;
    fn as_any(&self) -> &dyn Any;
}

/// What a section keeps under one key of `histograms`.
#[derive(Debug)]
pub enum SectionHistograms<'a> {
    One(&'a Histogram<u64>),
    /// One histogram per name (e.g. per flow step).
    Named(Vec<(&'a str, &'a Histogram<u64>)>),
}

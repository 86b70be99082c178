//! A flow's own measurements: the latency of each named step (send → matched reply, or
//! expect start → regex match), the replies that matched nothing by the step the
//! connection was at (with the first one's opening), the replies that failed their checks,
//! the error replies, and the expectations that timed out, by step. Written into the result
//! under `counters.flow_*` and `histograms.flow_steps`, and read back from them.

use std::any::Any;
use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde_json::Value;

use crate::metrics::{Section, SectionHistograms, new_histogram};
use crate::result::{ResultError, decode_histogram};

#[derive(Debug, Clone, Default)]
pub struct FlowSection {
    pub steps: BTreeMap<String, Histogram<u64>>,
    pub unmatched: BTreeMap<String, u64>,
    pub late: BTreeMap<String, u64>,
    /// Replies that failed their `check-json`/`check-regex`.
    pub mismatched: BTreeMap<String, u64>,
    /// Replies the message protocol read as errors (counted by their cause as errors; here
    /// by the step they answered).
    pub refused: BTreeMap<String, u64>,
    /// Matched messages in which a capture found nothing, and sends that lacked a variable.
    pub capture_missing: BTreeMap<String, u64>,
    /// Matched messages whose captured value was longer than the bound.
    pub capture_too_long: BTreeMap<String, u64>,
    /// The opening of the first unmatched message, by step.
    pub unmatched_samples: BTreeMap<String, String>,
}

/// The counters a flow writes, by their key in `counters`.
const COUNTS: [&str; 6] = [
    "flow_unmatched",
    "flow_late",
    "flow_mismatched",
    "flow_refused",
    "flow_capture_missing",
    "flow_capture_too_long",
];

impl FlowSection {
    /// The latency histogram of step `name`, made on first use.
    pub fn step(&mut self, name: &str) -> &mut Histogram<u64> {
        if !self.steps.contains_key(name) {
            self.steps.insert(name.to_owned(), new_histogram());
        }
        self.steps.get_mut(name).expect("just inserted")
    }

    /// The counts it writes, in the order of [`COUNTS`].
    fn counts(&self) -> [&BTreeMap<String, u64>; 6] {
        [
            &self.unmatched,
            &self.late,
            &self.mismatched,
            &self.refused,
            &self.capture_missing,
            &self.capture_too_long,
        ]
    }

    /// Read back from a result file's `counters` and `histograms`.
    pub fn read(
        counters: &BTreeMap<String, Value>,
        histograms: &BTreeMap<String, Value>,
    ) -> Result<FlowSection, ResultError> {
        let counts = |key: &str| -> BTreeMap<String, u64> {
            counters.get(key).and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default()
        };
        let mut steps = BTreeMap::new();
        if let Some(Value::Object(encoded)) = histograms.get("flow_steps") {
            for (step, text) in encoded {
                let field = format!("histograms.flow_steps.{step}");
                let text = text.as_str().ok_or_else(|| ResultError::Histogram {
                    field: field.clone(),
                    reason: "it is not a string".to_owned(),
                })?;
                steps.insert(step.clone(), decode_histogram(&field, text)?);
            }
        }
        let unmatched_samples =
            counters.get("flow_unmatched_samples").and_then(|v| serde_json::from_value(v.clone()).ok());
        Ok(FlowSection {
            steps,
            unmatched: counts(COUNTS[0]),
            late: counts(COUNTS[1]),
            mismatched: counts(COUNTS[2]),
            refused: counts(COUNTS[3]),
            capture_missing: counts(COUNTS[4]),
            capture_too_long: counts(COUNTS[5]),
            unmatched_samples: unmatched_samples.unwrap_or_default(),
        })
    }
}

impl Section for FlowSection {
    fn merge(&mut self, other: &dyn Section) {
        let Some(other) = other.as_any().downcast_ref::<FlowSection>() else { return };
        for (step, histogram) in &other.steps {
            self.step(step).add(histogram).expect("histograms share bounds");
        }
        for (mine, theirs) in [
            (&mut self.unmatched, &other.unmatched),
            (&mut self.late, &other.late),
            (&mut self.mismatched, &other.mismatched),
            (&mut self.refused, &other.refused),
            (&mut self.capture_missing, &other.capture_missing),
            (&mut self.capture_too_long, &other.capture_too_long),
        ] {
            for (step, count) in theirs {
                *mine.entry(step.clone()).or_default() += count;
            }
        }
        for (step, sample) in &other.unmatched_samples {
            self.unmatched_samples.entry(step.clone()).or_insert_with(|| sample.clone());
        }
    }

    /// Unmatched, late and wrong replies; error replies are already errors by their cause.
    fn errors(&self, errors: &mut BTreeMap<String, u64>) {
        let kinds = [
            ("flow_unmatched", &self.unmatched),
            ("flow_late", &self.late),
            ("flow_mismatch", &self.mismatched),
            ("flow_capture_missing", &self.capture_missing),
            ("flow_capture_too_long", &self.capture_too_long),
        ];
        for (kind, counts) in kinds {
            let total: u64 = counts.values().sum();
            if total > 0 {
                *errors.entry(kind.to_owned()).or_default() += total;
            }
        }
    }

    fn counters(&self) -> BTreeMap<String, Value> {
        let mut counters = BTreeMap::new();
        for (key, counts) in COUNTS.iter().zip(self.counts()) {
            if !counts.is_empty() {
                counters.insert((*key).to_owned(), serde_json::to_value(counts).unwrap_or_default());
            }
        }
        if !self.unmatched_samples.is_empty() {
            let samples = serde_json::to_value(&self.unmatched_samples).unwrap_or_default();
            counters.insert("flow_unmatched_samples".to_owned(), samples);
        }
        counters
    }

    fn histograms(&self) -> Vec<(&'static str, SectionHistograms<'_>)> {
        if self.steps.is_empty() {
            return Vec::new();
        }
        let named = self.steps.iter().map(|(step, histogram)| (step.as_str(), histogram)).collect();
        vec![("flow_steps", SectionHistograms::Named(named))]
    }

    fn boxed(&self) -> Box<dyn Section> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

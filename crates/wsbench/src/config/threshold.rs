//! Pass/fail criteria for CI, as k6 users write them (`--threshold 'p99<10ms'`,
//! `errors==0`, `echoes_per_sec>5000`): which figure of the result, which comparison, which
//! bound. Parsed and checked here with the rest of the configuration, so a typo is a usage
//! error before anything starts; judged on the finished result by `crate::thresholds`.
//! Latency names and limits are read exactly as `--slo` reads them (`slo.rs`).

use super::error::{ConfigError, invalid};
use super::slo::{Statistic, latency_limit_us};

/// Which figure of a result a threshold bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Metric {
    /// Round-trip latency (`summary.latency_us`), in µs.
    Latency(Statistic),
    /// Connect time (`summary.connect_us`), in µs.
    Connect(Statistic),
    /// The total of `summary.errors`.
    Errors,
    /// Measured round trips per second (`summary.echoes_per_sec`).
    RoundTripsPerSec,
    /// Stalls (`summary.stalls.count`): runs of whole seconds with requests awaited and no
    /// reply.
    Stalls,
    /// The longest stall (`summary.stalls.longest`), in µs.
    LongestStall,
    /// A recovery's figure (`recovery`): the time after the disruption until a share of the
    /// lost connections was back (µs), attempts per connection, connections not back.
    Recovery(RecoveryFigure),
    /// A figure of the scenario's own (a fan-out's `lost`, ping's `unanswered`): which ones
    /// a scenario has is checked with the rest of its settings.
    Scenario(String),
}

/// The figures of a recovery a threshold can bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryFigure {
    /// `back_first`, `back_p50`, `back_p90`, `back_p99`, `back_all`: a time.
    BackAfter(BackShare),
    /// `attempts_per_connection`.
    AttemptsPerConnection,
    /// `not_back`: connections lost after a disruption and not back at the end.
    NotBack,
}

/// Which share of the lost connections back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackShare {
    First,
    P50,
    P90,
    P99,
    All,
}

/// How the measured value is compared with the bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
    Equal,
}

impl Comparison {
    /// The comparison `rest` starts with and the bound after it, trimmed (`<=10ms` →
    /// `LessOrEqual`, `10ms`); `None` when it starts with none.
    pub fn split(rest: &str) -> Option<(Comparison, &str)> {
        [
            ("<=", Comparison::LessOrEqual),
            (">=", Comparison::GreaterOrEqual),
            ("==", Comparison::Equal),
            ("<", Comparison::Less),
            (">", Comparison::Greater),
        ]
        .into_iter()
        .find_map(|(op, comparison)| rest.strip_prefix(op).map(|bound| (comparison, bound.trim())))
    }

    /// Whether `value` compared with `bound` holds.
    pub fn holds(self, value: f64, bound: f64) -> bool {
        match self {
            Comparison::Less => value < bound,
            Comparison::LessOrEqual => value <= bound,
            Comparison::Greater => value > bound,
            Comparison::GreaterOrEqual => value >= bound,
            Comparison::Equal => value == bound,
        }
    }
}

/// One threshold, e.g. `p99<10ms`: the figure, the comparison, the bound in the figure's
/// unit (µs for times), and the text as the user wrote it.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    pub expression: String,
    pub metric: Metric,
    pub comparison: Comparison,
    pub bound: f64,
    /// `stage2.p99<10ms`: the figure of one stage of a `--stages` run (0-based), not the
    /// whole run's.
    pub stage: Option<usize>,
}

const FORMS: &str = "write e.g. 'p99<10ms', 'connect_p99<50ms', 'errors==0', 'stalls==0', 'longest_stall<1s' or 'echoes_per_sec>5000'";
/// Connect times keep fewer percentiles than round trips (`summary.connect_us`).
const CONNECT_NAMES: &str = "connect_mean, connect_p50, connect_p90, connect_p99, connect_max";

impl std::str::FromStr for Threshold {
    type Err = ConfigError;
    fn from_str(text: &str) -> Result<Threshold, ConfigError> {
        let bad = |why: String| invalid("threshold", format!("`{text}`: {why}; {FORMS}"));
        let expression = text.trim();
        let at =
            expression.find(['<', '>', '=']).ok_or_else(|| bad("no comparison (<, <=, >, >=, ==)".into()))?;
        let (name, rest) = (expression[..at].trim(), &expression[at..]);
        let (stage, name) = stage_of(name).map_err(bad)?;
        let (comparison, bound) = Comparison::split(rest)
            .ok_or_else(|| bad(format!("`{rest}` does not start with <, <=, >, >= or ==")))?;
        let metric = metric(name).ok_or_else(|| {
            bad(format!(
                "unknown figure `{name}` (latency: {}; {CONNECT_NAMES}; errors; stalls; longest_stall; echoes_per_sec; or one of the scenario's)",
                Statistic::NAMES
            ))
        })?;
        if stage.is_some()
            && matches!(
                metric,
                Metric::Connect(_)
                    | Metric::Scenario(_)
                    | Metric::Stalls
                    | Metric::LongestStall
                    | Metric::Recovery(_)
            )
        {
            return Err(bad(format!("a stage has latency, errors and echoes_per_sec figures, not `{name}`")));
        }
        let bound = match metric {
            Metric::Latency(_)
            | Metric::Connect(_)
            | Metric::LongestStall
            | Metric::Recovery(RecoveryFigure::BackAfter(_)) => latency_limit_us(bound).map_err(bad)?,
            Metric::Errors
            | Metric::RoundTripsPerSec
            | Metric::Stalls
            | Metric::Scenario(_)
            | Metric::Recovery(_) => bound
                .parse::<f64>()
                .ok()
                .filter(|n| n.is_finite() && *n >= 0.0)
                .ok_or_else(|| bad(format!("`{bound}` is not a number")))?,
        };
        Ok(Threshold { expression: expression.to_owned(), metric, comparison, bound, stage })
    }
}

/// `stageN.FIGURE`: stage N (1-based, given back 0-based) and the figure; a name without a
/// stage is the whole run's.
fn stage_of(name: &str) -> Result<(Option<usize>, &str), String> {
    let Some((head, figure)) = name.split_once('.') else { return Ok((None, name)) };
    match head.strip_prefix("stage").and_then(|n| n.parse::<usize>().ok()).filter(|n| *n >= 1) {
        Some(n) => Ok((Some(n - 1), figure.trim())),
        None => Err(format!("`{head}` is not a stage: name one as stage1, stage2, …")),
    }
}

/// The figure a threshold names: `p99`, `connect_p99`, `errors`, `echoes_per_sec`
/// (or its synonyms `round_trips_per_sec` and, for pubsub, `deliveries_per_sec`).
fn metric(name: &str) -> Option<Metric> {
    match name {
        "errors" => Some(Metric::Errors),
        "stalls" => Some(Metric::Stalls),
        "longest_stall" => Some(Metric::LongestStall),
        "back_first" => Some(Metric::Recovery(RecoveryFigure::BackAfter(BackShare::First))),
        "back_p50" => Some(Metric::Recovery(RecoveryFigure::BackAfter(BackShare::P50))),
        "back_p90" => Some(Metric::Recovery(RecoveryFigure::BackAfter(BackShare::P90))),
        "back_p99" => Some(Metric::Recovery(RecoveryFigure::BackAfter(BackShare::P99))),
        "back_all" => Some(Metric::Recovery(RecoveryFigure::BackAfter(BackShare::All))),
        "attempts_per_connection" => Some(Metric::Recovery(RecoveryFigure::AttemptsPerConnection)),
        "not_back" => Some(Metric::Recovery(RecoveryFigure::NotBack)),
        // pubsub's headline counts deliveries in the same field.
        "echoes_per_sec" | "round_trips_per_sec" | "deliveries_per_sec" => Some(Metric::RoundTripsPerSec),
        _ => match name.strip_prefix("connect_") {
            Some(statistic) => match Statistic::from_name(statistic)? {
                kept @ (Statistic::Mean
                | Statistic::P50
                | Statistic::P90
                | Statistic::P99
                | Statistic::Max) => Some(Metric::Connect(kept)),
                _ => None,
            },
            None => Statistic::from_name(name).map(Metric::Latency).or_else(|| scenario_figure(name)),
        },
    }
}

/// Any other word of lowercase letters, digits and `_` may be a figure of the scenario's,
/// but not one that reads as a latency statistic (`p42`) or a connect time.
fn scenario_figure(name: &str) -> Option<Metric> {
    let word =
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    let statistic_like = name.strip_prefix('p').is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_digit()));
    (word && !statistic_like && !name.starts_with("connect_")).then(|| Metric::Scenario(name.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Threshold {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn every_form_parses_to_its_figure_comparison_and_bound() {
        let cases = [
            ("p99<10ms", Metric::Latency(Statistic::P99), Comparison::Less, 10_000.0),
            ("p999 <= 1.5s", Metric::Latency(Statistic::P999), Comparison::LessOrEqual, 1_500_000.0),
            ("mean<800us", Metric::Latency(Statistic::Mean), Comparison::Less, 800.0),
            ("connect_p99<50ms", Metric::Connect(Statistic::P99), Comparison::Less, 50_000.0),
            ("errors==0", Metric::Errors, Comparison::Equal, 0.0),
            ("errors<10", Metric::Errors, Comparison::Less, 10.0),
            ("echoes_per_sec>5000", Metric::RoundTripsPerSec, Comparison::Greater, 5000.0),
            ("round_trips_per_sec>=1e3", Metric::RoundTripsPerSec, Comparison::GreaterOrEqual, 1000.0),
            ("out_of_order==0", Metric::Scenario("out_of_order".to_owned()), Comparison::Equal, 0.0),
            ("stalls==0", Metric::Stalls, Comparison::Equal, 0.0),
            ("longest_stall<1s", Metric::LongestStall, Comparison::Less, 1_000_000.0),
            (
                "back_p99<5s",
                Metric::Recovery(RecoveryFigure::BackAfter(BackShare::P99)),
                Comparison::Less,
                5_000_000.0,
            ),
            (
                "attempts_per_connection<=3",
                Metric::Recovery(RecoveryFigure::AttemptsPerConnection),
                Comparison::LessOrEqual,
                3.0,
            ),
            ("not_back==0", Metric::Recovery(RecoveryFigure::NotBack), Comparison::Equal, 0.0),
        ];
        for (text, metric, comparison, bound) in cases {
            let threshold = parse(text);
            assert_eq!(
                (threshold.metric, threshold.comparison, threshold.bound),
                (metric, comparison, bound)
            );
            assert_eq!(threshold.expression, text);
            assert_eq!(threshold.stage, None);
        }
        let staged = parse("stage2.p99<10ms");
        assert_eq!(
            (staged.stage, staged.metric, staged.bound),
            (Some(1), Metric::Latency(Statistic::P99), 10_000.0)
        );
        assert_eq!(parse("stage12.errors==0").stage, Some(11));
    }

    #[test]
    fn bad_thresholds_say_what_is_wrong_and_how_to_write_one() {
        let cases = [
            ("p99<10", "`10` has no unit: add one, e.g. 10ms"),
            ("p42<1ms", "unknown figure `p42`"),
            ("connect_p75<1ms", "unknown figure `connect_p75`"),
            ("p99", "no comparison"),
            ("errors=0", "`=0` does not start with"),
            ("errors==none", "`none` is not a number"),
            ("p99<soon", "`soon` is not a duration"),
            ("stage0.p99<1ms", "`stage0` is not a stage"),
            ("phase2.p99<1ms", "`phase2` is not a stage"),
            ("stage2.connect_p99<1ms", "a stage has latency, errors and echoes_per_sec"),
            ("stage2.stalls==0", "a stage has latency, errors and echoes_per_sec"),
            ("longest_stall<1", "`1` has no unit"),
        ];
        for (text, why) in cases {
            let error = text.parse::<Threshold>().unwrap_err().to_string();
            assert!(error.starts_with(&format!("--threshold: `{text}`: ")), "{error}");
            assert!(error.contains(why), "{error} should say {why:?}");
            assert!(error.contains("'p99<10ms'"), "{error}");
        }
    }
}

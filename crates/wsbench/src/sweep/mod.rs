//! `wsbench sweep`: one scenario at a series of loads, connections (each a closed loop) or
//! an open loop's offered rate, each step its own warm-up and measured window against
//! one server. This module turns what the user gave into a checked plan (every step's
//! configuration validated, the outputs and the thresholds checked, the series checked
//! by [`series`]) before any load, and makes the analysis of the steps measured: the
//! knees and the Universal Scalability Law fit of `crate::curve`, on the steps that the
//! client did not limit. The session runs the plan (`session::sweep`); the result keeps
//! it (`result::sweep`); the report shows it.

pub mod series;
pub mod thresholds;

use std::path::PathBuf;
use std::time::Duration;

use crate::config::{ConfigError, MAX_DURATION, RunConfig, RunSettings, check_output_file, invalid_setting};
use crate::curve::{knee, usl};
use crate::result::sweep::{Analysis, SweepStep, Varied};
use series::{Given, Unit};
pub use thresholds::SweepThreshold;

/// An open-loop step must offer at least this many messages in its window: a p99 of
/// fewer says nothing.
pub const MIN_STEP_MESSAGES: f64 = 100.0;

/// A sweep as given: the run's settings (without the loads), the loads as typed and the
/// sweep's own options.
#[derive(Debug, Clone, Default)]
pub struct SweepSettings {
    /// Every setting of `wsbench run`; `json` and `html` are the sweep's files.
    pub settings: RunSettings,
    /// `--connections`: one count, a list or a range.
    pub connections: Option<String>,
    /// `--rate`: one rate, a list or a range.
    pub rate: Option<String>,
    /// `--steps`: how many steps a range is spread over.
    pub steps: Option<usize>,
    /// `--holdout K`.
    pub holdout: Option<usize>,
    /// `--threshold` on the sweep's figures.
    pub thresholds: Vec<String>,
}

/// A checked sweep: every step's settings and configuration, in order.
#[derive(Debug, Clone)]
pub struct SweepPlan {
    pub varied: Varied,
    pub closed_loop: bool,
    pub loads: Vec<f64>,
    /// Each step's settings (for shards) and its validated configuration.
    pub steps: Vec<(RunSettings, RunConfig)>,
    pub holdout: Option<usize>,
    pub thresholds: Vec<SweepThreshold>,
    pub json: Option<PathBuf>,
    pub html: Option<PathBuf>,
    pub warmup: Duration,
    pub duration: Duration,
}

/// The settings of `wsbench run` a sweep refuses (`sweep --help` does not list them).
pub const REFUSED_SETTINGS: [&str; 8] =
    ["find-max-rate", "slo", "stages", "shard", "start-at", "hlog", "print-result", "dashboard"];

/// The settings of `wsbench run` a sweep has no use for, with what to do instead.
const REFUSED: [(&str, &str); REFUSED_SETTINGS.len()] = [
    (
        "find-max-rate",
        "a sweep measures every step it is given: search one rate with `wsbench run --find-max-rate`",
    ),
    ("slo", "--slo is for --find-max-rate; bound the sweep with --threshold 'knee_rate>N'"),
    ("stages", "a sweep is its own series of loads: give --connections or --rate as a list or range"),
    ("shard", "a sweep runs whole steps: give --processes N to split each step"),
    ("start-at", "a sweep starts each step when the last one ends"),
    ("hlog", "each step's histograms are in the sweep's --json file"),
    ("print-result", "the sweep's --json file holds every step's result"),
    ("dashboard", "each step is a run of its own: follow the progress lines, or give --metrics-addr"),
];

impl SweepSettings {
    /// Checks everything and validates every step, before any load.
    pub fn plan(&self) -> Result<SweepPlan, ConfigError> {
        let s = &self.settings;
        let given = [
            s.find_max_rate,
            s.slo.is_some(),
            s.stages.is_some(),
            s.shard.is_some(),
            s.start_at.is_some(),
            s.hlog.is_some(),
            s.print_result,
            s.dashboard.is_some(),
        ];
        if let Some((setting, what)) =
            REFUSED.iter().zip(given).find_map(|(refused, given)| given.then_some(refused))
        {
            return Err(invalid_setting(setting, format!("does not apply to sweep: {what}")));
        }
        let connections = self
            .connections
            .as_deref()
            .map(|text| series::parse(Unit::Connections, text, self.steps))
            .transpose()?;
        let rate =
            self.rate.as_deref().map(|text| series::parse(Unit::Rate, text, self.steps)).transpose()?;
        let (varied, loads) = match (&connections, &rate) {
            (Some(Given::Series(_)), Some(Given::Series(_))) => {
                return Err(invalid_setting("rate", "a sweep varies one load: give a series to --connections or to --rate, and one value to the other".to_owned()));
            }
            (Some(Given::Series(loads)), _) => (Varied::Connections, loads.clone()),
            (_, Some(Given::Series(loads))) => (Varied::Rate, loads.clone()),
            _ => {
                return Err(invalid_setting("connections", "a sweep needs a series of loads: give --connections 1..10000 (closed loop) or --rate 1000/s..200000/s (open loop), or a list such as 1,10,100".to_owned()));
            }
        };
        for (setting, path) in [("json", &s.json), ("html", &s.html)] {
            if let Some(path) = path {
                check_output_file(setting, path)?;
            }
        }
        let steps = self.steps_of(varied, &loads, [&connections, &rate])?;
        let first = &steps[0].1;
        let closed_loop = first.load.message_interval.is_none();
        let (warmup, duration) = (first.load.warmup, first.load.duration);
        check_length(&steps, varied, &loads)?;
        let holdout = self.holdout.map(|k| check_holdout(k, varied, closed_loop, loads.len())).transpose()?;
        let thresholds = thresholds::parse_all(&self.thresholds, varied, closed_loop, holdout.is_some())?;
        Ok(SweepPlan {
            varied,
            closed_loop,
            loads,
            steps,
            holdout,
            thresholds,
            json: s.json.clone(),
            html: s.html.clone(),
            warmup,
            duration,
        })
    }
}

impl SweepSettings {
    /// Each step's settings and validated configuration: the run's settings with the
    /// step's load, the held value of the other flag (`held`: connections, rate), and no
    /// files or thresholds of their own.
    fn steps_of(
        &self,
        varied: Varied,
        loads: &[f64],
        held: [&Option<Given>; 2],
    ) -> Result<Vec<(RunSettings, RunConfig)>, ConfigError> {
        let value = |given: &Option<Given>| match given {
            Some(Given::One(value)) => Some(*value),
            _ => None,
        };
        let (connections, rate) = (value(held[0]), value(held[1]));
        loads
            .iter()
            .map(|&load| {
                let mut step =
                    RunSettings { json: None, html: None, threshold: Vec::new(), ..self.settings.clone() };
                let (connections, rate) = match varied {
                    Varied::Connections => (Some(load), rate),
                    Varied::Rate => (connections, Some(load)),
                };
                step.connections = connections.map(|n| n as u64).or(step.connections);
                step.rate = rate.map(|r| format!("{r}/s")).or(step.rate);
                let config = step.validate()?;
                Ok((step, config))
            })
            .collect()
    }
}

/// The whole sweep within a run's longest (7 days), and every open-loop step offering
/// enough messages for its percentiles.
fn check_length(
    steps: &[(RunSettings, RunConfig)],
    varied: Varied,
    loads: &[f64],
) -> Result<(), ConfigError> {
    let mut total = Duration::ZERO;
    for (_, config) in steps {
        let ramp = config.load.ramp_per_sec.map_or(0.0, |per_sec| config.load.connections as f64 / per_sec);
        total += config.load.warmup
            + config.load.duration
            + Duration::from_secs_f64(ramp.min(MAX_DURATION.as_secs_f64()));
    }
    if total > MAX_DURATION {
        return Err(invalid_setting(
            "duration",
            format!(
                "{} steps of warm-up and measured window take {:.0} h, more than a run may (7 days): give fewer steps or a shorter --duration",
                steps.len(),
                total.as_secs_f64() / 3600.0
            ),
        ));
    }
    for (index, (_, config)) in steps.iter().enumerate() {
        let Some(interval) = config.load.message_interval else { continue };
        let offered =
            config.load.connections as f64 / interval.as_secs_f64() * config.load.duration.as_secs_f64();
        if offered < MIN_STEP_MESSAGES {
            let what = match varied {
                Varied::Rate => format!("{}/s", loads[index]),
                Varied::Connections => format!("{} connections", loads[index]),
            };
            return Err(invalid_setting(
                "duration",
                format!(
                    "step {} ({what}) offers {offered:.0} messages in its {}s window, too few for its percentiles (at least {MIN_STEP_MESSAGES:.0}): give a longer --duration or a higher load",
                    index + 1,
                    config.load.duration.as_secs_f64()
                ),
            ));
        }
    }
    Ok(())
}

/// `--holdout K`: for a closed-loop connections sweep, leaving enough steps to fit.
fn check_holdout(k: usize, varied: Varied, closed_loop: bool, steps: usize) -> Result<usize, ConfigError> {
    if varied != Varied::Connections || !closed_loop {
        return Err(invalid_setting("holdout", "applies to a closed-loop connections sweep, whose steps the USL is fitted to (not to --rate or --interval)".to_owned()));
    }
    if k == 0 || steps < k + usl::MIN_POINTS {
        return Err(invalid_setting(
            "holdout",
            format!(
                "{k} of {steps} steps leaves {} to fit, and the fit needs {}: sweep more steps or hold out fewer (1 to {})",
                steps.saturating_sub(k),
                usl::MIN_POINTS,
                steps.saturating_sub(usl::MIN_POINTS)
            ),
        ));
    }
    Ok(k)
}

/// Why the USL is not fitted to a sweep that is not a closed-loop connections sweep.
pub const NOT_A_CLOSED_LOOP: &str = "not fitted: the Universal Scalability Law takes connections in a closed loop as N, and this sweep's load was offered (an open loop's rate)";

/// The knees and the fit of `steps`, from those not excluded.
pub fn analyse(steps: &[SweepStep], varied: Varied, closed_loop: bool, holdout: Option<usize>) -> Analysis {
    let usable: Vec<(usize, &SweepStep)> =
        steps.iter().enumerate().filter(|(_, s)| s.excluded.is_none()).collect();
    let knee_of = |latency: fn(&SweepStep) -> u64| {
        let points: Vec<knee::Point> = usable
            .iter()
            .map(|&(step, s)| knee::Point {
                step,
                throughput: s.throughput_per_sec,
                latency_us: latency(s) as f64,
            })
            .collect();
        knee::find(&points)
    };
    let points: Vec<usl::Point> = usable
        .iter()
        .map(|(_, s)| usl::Point { n: s.connections as f64, throughput: s.throughput_per_sec })
        .collect();
    let fitted = varied == Varied::Connections && closed_loop;
    Analysis {
        knee_p99: knee_of(|s| s.latency_us.p99),
        knee_p50: knee_of(|s| s.latency_us.p50),
        usl: if fitted {
            usl::fit(&points)
        } else {
            usl::Fit::Refused { reason: NOT_A_CLOSED_LOOP.to_owned() }
        },
        holdout: holdout.filter(|_| fitted).map(|k| usl::holdout(&points, k)),
    }
}

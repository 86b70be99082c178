//! `--stages` (TOML `[[stages]]`): load that changes over the run, as k6 stages and
//! Artillery phases do. Each stage lasts a whole number of seconds and moves toward a target:
//! connections (`30s:1000c`: opened or closed linearly toward 1,000 over the stage) or the
//! open loop's message rate (`1m:5000/s`, held for the stage; `1m:5000/s:ramp`, moved
//! linearly from the previous stage's rate). A stage marked `warmup` is run but not
//! measured (only leading stages may be). The checked [`StagePlan`] is also the pure
//! arithmetic the engine's pacer reads: when connection `k` opens and closes, and when the
//! `m`-th send of the whole run is due. Whole seconds let each stage's figures be the exact
//! sum of the run's per-second histograms.

use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::bounds::{MAX_CONNECTIONS, MAX_DURATION, MAX_RATE};
use super::error::{ConfigError, invalid};
use crate::units::{parse_duration, parse_rate};

/// The most stages a run takes.
pub const MAX_STAGES: usize = 100;

/// One stage as given: `DURATION:TARGET[:ramp][:warmup]` on the command line, or a
/// `[[stages]]` table (`duration`, `target`, `ramp`, `warmup`) in a scenario file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageSettings {
    pub duration: String,
    /// `1000c` (connections) or `5000/s` (messages per second).
    pub target: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub ramp: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub warmup: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// `--stages` as given: the stages in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StageList(pub Vec<StageSettings>);

impl FromStr for StageList {
    type Err = String;
    /// `30s:1000c,2m:1000c,30s:0c` or `1m:1000/s,1m:5000/s:ramp`: split only; the values
    /// are checked by [`StageList::validate`]. An empty stage (`1s:10c,,1s:0c`, a comma at
    /// either end) is refused: what was meant there cannot be known.
    fn from_str(text: &str) -> Result<StageList, String> {
        if text.trim().is_empty() {
            return Ok(StageList(Vec::new()));
        }
        let stages = text
            .split(',')
            .map(str::trim)
            .enumerate()
            .map(|(n, entry)| {
                if entry.is_empty() {
                    return Err(format!(
                        "stage{} of `{text}` is empty: give DURATION:TARGET between commas, e.g. \
                         30s:1000c,2m:1000c,30s:0c",
                        n + 1
                    ));
                }
                let mut parts = entry.split(':').map(str::trim);
                let (Some(duration), Some(target)) = (parts.next(), parts.next()) else {
                    return Err(format!(
                        "stage `{entry}` is not DURATION:TARGET, e.g. 30s:1000c or 1m:5000/s[:ramp][:warmup]"
                    ));
                };
                let mut stage =
                    StageSettings { duration: duration.into(), target: target.into(), ..Default::default() };
                for marker in parts {
                    match marker {
                        "ramp" => stage.ramp = true,
                        "warmup" => stage.warmup = true,
                        other => {
                            return Err(format!(
                                "stage `{entry}`: unknown marker `{other}` (use ramp or warmup)"
                            ));
                        }
                    }
                }
                Ok(stage)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(StageList(stages))
    }
}

/// What the stages' targets count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StageKind {
    /// Open connections.
    Connections,
    /// Open-loop messages per second over the run's senders.
    Rate,
}

/// One checked stage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stage {
    pub duration_s: u64,
    /// Connections or messages per second at the stage's end.
    pub target: f64,
    /// Rate stages: moved linearly from the previous stage's rate (held otherwise).
    /// Connection stages always move linearly.
    pub ramp: bool,
    /// False for a warm-up stage.
    pub measured: bool,
}

/// The checked stages, and the arithmetic of their schedule (seconds since the run's start).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StagePlan {
    pub kind: StageKind,
    pub stages: Vec<Stage>,
}

impl StageList {
    /// Checks every stage: at most [`MAX_STAGES`], whole seconds (1 s to 7 days in all), one
    /// kind of target within its bound, warm-up stages only first, connections that rise,
    /// hold, then fall (a connection is opened once and closed once).
    pub fn validate(&self) -> Result<StagePlan, ConfigError> {
        let bad = |why: String| invalid("stages", why);
        if self.0.is_empty() {
            return Err(bad("no stage: give e.g. --stages 30s:1000c,2m:1000c,30s:0c".into()));
        }
        if self.0.len() > MAX_STAGES {
            return Err(bad(format!("{} stages: at most {MAX_STAGES}", self.0.len())));
        }
        let mut stages = Vec::with_capacity(self.0.len());
        let mut kind = None;
        for (n, given) in self.0.iter().enumerate() {
            let name = format!("stage{}", n + 1);
            let (stage_kind, target) = target(&given.target).map_err(|why| bad(format!("{name}: {why}")))?;
            if kind.is_some_and(|kind| kind != stage_kind) {
                return Err(bad(format!("{name}: mixes connection and rate targets: give one kind")));
            }
            kind = Some(stage_kind);
            if stage_kind == StageKind::Connections && given.ramp {
                return Err(bad(format!(
                    "{name}: connection stages always move linearly toward their target; `ramp` is for rate stages"
                )));
            }
            if given.warmup && stages.last().is_some_and(|s: &Stage| s.measured) {
                return Err(bad(format!("{name}: only the first stages may be warm-up stages")));
            }
            stages.push(Stage {
                duration_s: whole_seconds(&name, &given.duration)?,
                target,
                ramp: given.ramp,
                measured: !given.warmup,
            });
        }
        let plan = StagePlan { kind: kind.unwrap_or(StageKind::Connections), stages };
        if plan.total_s() > MAX_DURATION.as_secs() {
            return Err(bad(format!("the stages last {} s: at most 7 days in all", plan.total_s())));
        }
        if plan.stages.iter().all(|s| !s.measured) {
            return Err(bad("every stage is a warm-up: measure at least one".into()));
        }
        plan.check_connections_shape()?;
        Ok(plan)
    }
}

/// A `--threshold` on a stage names one the plan has.
pub(super) fn check_thresholds(
    thresholds: &[super::Threshold],
    plan: Option<&StagePlan>,
) -> Result<(), ConfigError> {
    let stages = plan.map_or(0, |plan| plan.stages.len());
    match thresholds.iter().find(|t| t.stage.is_some_and(|stage| stage >= stages)) {
        Some(t) if plan.is_none() => {
            Err(invalid("threshold", format!("`{}` names a stage: give --stages", t.expression)))
        }
        Some(t) => Err(invalid("threshold", format!("`{}`: the run has {stages} stages", t.expression))),
        None => Ok(()),
    }
}

fn whole_seconds(name: &str, text: &str) -> Result<u64, ConfigError> {
    let duration = parse_duration(text).map_err(|e| invalid("stages", format!("{name}: {}", e.problem)))?;
    if duration < Duration::from_secs(1) || duration.subsec_nanos() != 0 || duration > MAX_DURATION {
        return Err(invalid(
            "stages",
            format!("{name}: `{text}`: a stage lasts whole seconds, 1s to 7 days"),
        ));
    }
    Ok(duration.as_secs())
}

/// `1000c` or `5000/s`, within the bounds every run has. The unit is required: a bare
/// number could mean either.
fn target(text: &str) -> Result<(StageKind, f64), String> {
    if !text.is_empty() && text.trim().parse::<f64>().is_ok() {
        return Err(format!(
            "`{text}` has no unit: write {n}c for {n} connections or {n}/s for {n} messages per second",
            n = text.trim()
        ));
    }
    if let Some(count) = text.strip_suffix('c') {
        let count: u64 =
            count.trim().parse().map_err(|_| format!("`{text}` is not a count of connections like 1000c"))?;
        if count > MAX_CONNECTIONS {
            return Err(format!("{count} connections: at most {MAX_CONNECTIONS}"));
        }
        return Ok((StageKind::Connections, count as f64));
    }
    let rate =
        parse_rate(text).map_err(|e| format!("`{text}`: {} (targets are 1000c or 5000/s)", e.problem))?;
    if !(rate > 0.0 && rate <= MAX_RATE) {
        return Err(format!("`{text}`: a rate stage's target is above zero and at most {MAX_RATE}/s"));
    }
    Ok((StageKind::Rate, rate))
}

impl StagePlan {
    /// Seconds from the run's start to stage `i`'s start.
    pub fn start_s(&self, i: usize) -> u64 {
        self.stages[..i].iter().map(|s| s.duration_s).sum()
    }

    pub fn total_s(&self) -> u64 {
        self.stages.iter().map(|s| s.duration_s).sum()
    }

    /// The leading warm-up stages' length: when the measured window opens.
    pub fn warmup_s(&self) -> u64 {
        self.stages.iter().take_while(|s| !s.measured).map(|s| s.duration_s).sum()
    }

    /// The stage second `second` of the run belongs to (`None` past the last).
    pub fn stage_of(&self, second: u64) -> Option<usize> {
        let mut end = 0;
        self.stages.iter().position(|s| {
            end += s.duration_s;
            second < end
        })
    }

    /// The most connections the stages ask for (0 for rate stages).
    pub fn peak_connections(&self) -> u64 {
        match self.kind {
            StageKind::Connections => self.stages.iter().map(|s| s.target as u64).max().unwrap_or(0),
            StageKind::Rate => 0,
        }
    }

    /// The highest rate the stages ask for (0 for connection stages).
    pub fn peak_rate(&self) -> f64 {
        match self.kind {
            StageKind::Rate => self.stages.iter().map(|s| s.target).fold(0.0, f64::max),
            StageKind::Connections => 0.0,
        }
    }

    /// The stage as the user would write it (`30s:1000c`, `1m:5000/s:ramp`).
    pub fn label(&self, i: usize) -> String {
        let stage = &self.stages[i];
        let target = match self.kind {
            StageKind::Connections => format!("{}c", stage.target),
            StageKind::Rate => format!("{}/s", stage.target),
        };
        let ramp = if stage.ramp { ":ramp" } else { "" };
        let warmup = if stage.measured { "" } else { ":warmup" };
        format!("{}s:{target}{ramp}{warmup}", stage.duration_s)
    }

    /// Each stage as (start s, end s, level at its start, level at its end).
    fn segments(&self) -> impl Iterator<Item = (f64, f64, f64, f64)> + '_ {
        let mut start = 0.0;
        let mut level = 0.0;
        self.stages.iter().map(move |stage| {
            let end = start + stage.duration_s as f64;
            let from = match (self.kind, stage.ramp) {
                (StageKind::Rate, false) => stage.target,
                _ => level,
            };
            let segment = (start, end, from, stage.target);
            (start, level) = (end, stage.target);
            segment
        })
    }

    /// Connections rise, hold and then fall: once they fell, they never rise again.
    fn check_connections_shape(&self) -> Result<(), ConfigError> {
        if self.kind != StageKind::Connections {
            return Ok(());
        }
        let mut fell = false;
        for (n, (_, _, from, to)) in self.segments().enumerate() {
            if fell && to > from {
                return Err(invalid(
                    "stages",
                    format!(
                        "stage{}: connections rise again after falling: a connection opens once and closes once",
                        n + 1
                    ),
                ));
            }
            fell |= to < from;
        }
        if self.peak_connections() == 0 {
            return Err(invalid("stages", "no stage opens a connection: give a target above 0c".to_owned()));
        }
        Ok(())
    }

    /// Connection stages: when connection `k` (0-based) opens, s since start: when the level
    /// rises to `k`.
    pub fn open_s(&self, k: u64) -> Option<f64> {
        let k = k as f64;
        self.segments()
            .find(|&(_, _, from, to)| from <= k && k < to)
            .map(|(start, end, from, to)| start + (k - from) / (to - from) * (end - start))
    }

    /// Connection stages: when connection `k` closes: when the level falls to `k`; `None`
    /// when it stays open to the end.
    pub fn close_s(&self, k: u64) -> Option<f64> {
        let k = k as f64;
        self.segments()
            .find(|&(_, _, from, to)| to <= k && k < from)
            .map(|(start, end, from, to)| start + (from - k) / (from - to) * (end - start))
    }

    /// Rate stages: sends due by `t` s since start, over the whole run (the rate's integral).
    pub fn sends_by(&self, t: f64) -> f64 {
        let mut sends = 0.0;
        for (start, end, from, to) in self.segments() {
            let x = (t.min(end) - start).max(0.0);
            let slope = (to - from) / (end - start);
            sends += from * x + slope * x * x / 2.0;
            if t <= end {
                break;
            }
        }
        sends
    }

    /// Rate stages: when the `m`-th send of the run is due, s since start; `None` past the
    /// last stage.
    pub fn send_due_s(&self, m: f64) -> Option<f64> {
        let mut before = 0.0;
        for (start, end, from, to) in self.segments() {
            let d = end - start;
            let during = (from + to) / 2.0 * d;
            if m < before + during {
                let c = m - before;
                let k = (to - from) / d;
                // The root of k/2 x² + from x - c = 0, in the form that stays exact when k is
                // near zero (a held stage) or `from` is zero (a ramp from nothing).
                let root = (from * from + 2.0 * k * c).max(0.0).sqrt();
                let x = if c <= 0.0 { 0.0 } else { 2.0 * c / (from + root) };
                return Some(start + x.min(d));
            }
            before += during;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> Result<StagePlan, String> {
        text.parse::<StageList>()?.validate().map_err(|e| e.to_string())
    }

    #[test]
    fn connection_stages_open_and_close_linearly_toward_their_targets() {
        let plan = plan("10s:100c, 20s:100c, 10s:0c").unwrap();
        assert_eq!((plan.kind, plan.total_s(), plan.peak_connections()), (StageKind::Connections, 40, 100));
        assert_eq!(plan.open_s(0), Some(0.0));
        assert_eq!(plan.open_s(50), Some(5.0));
        assert_eq!(plan.open_s(100), None, "only 100 connections");
        assert_eq!(plan.close_s(99), Some(30.1));
        assert_eq!(plan.close_s(0), Some(40.0));
        assert_eq!(plan.close_s(50), Some(35.0));
        let held = self::plan("10s:100c, 20s:100c").unwrap();
        assert_eq!(held.close_s(0), None, "open to the end");
        assert_eq!(
            (plan.stage_of(0), plan.stage_of(10), plan.stage_of(39), plan.stage_of(40)),
            (Some(0), Some(1), Some(2), None)
        );
        assert_eq!(plan.label(2), "10s:0c");
    }

    #[test]
    fn rate_stages_schedule_the_runs_sends_by_the_integral_of_the_rate() {
        let plan = plan("2s:100/s, 2s:300/s:ramp, 1s:50/s").unwrap();
        assert_eq!(plan.kind, StageKind::Rate);
        assert_eq!(plan.sends_by(2.0), 200.0);
        // A ramp 100 → 300 over 2 s sends 400.
        assert_eq!(plan.sends_by(4.0), 600.0);
        assert_eq!(plan.sends_by(5.0), 650.0);
        for m in [0.0, 1.0, 199.0, 200.0, 350.0, 599.0, 600.0, 649.0] {
            let due = plan.send_due_s(m).unwrap();
            assert!((plan.sends_by(due) - m).abs() < 1e-6, "send {m} due at {due}");
        }
        assert_eq!(plan.send_due_s(650.0), None, "past the last stage");
        assert_eq!(plan.send_due_s(100.0), Some(1.0));
        // A first stage ramped from nothing.
        let from_zero = self::plan("10s:1000/s:ramp").unwrap();
        assert_eq!(from_zero.send_due_s(0.0), Some(0.0));
        assert!((from_zero.send_due_s(5000.0 - 1e-9).unwrap() - 10.0).abs() < 1e-6);
        assert!((from_zero.send_due_s(1250.0).unwrap() - 5.0).abs() < 1e-9);
    }

    #[test]
    fn warmup_stages_lead_and_are_not_measured() {
        let plan = plan("5s:100/s:warmup,10s:200/s").unwrap();
        assert_eq!((plan.warmup_s(), plan.total_s()), (5, 15));
        assert_eq!(plan.label(0), "5s:100/s:warmup");
    }

    #[test]
    fn bad_stages_are_refused_naming_the_stage_and_the_fix() {
        let cases = [
            ("", "no stage"),
            ("30s", "is not DURATION:TARGET"),
            ("30s:10c:slow", "unknown marker `slow`"),
            ("1500ms:10c", "stage1: `1500ms`: a stage lasts whole seconds"),
            ("169h:10c", "a stage lasts whole seconds, 1s to 7 days"),
            ("5y:10c", "stage1: `5y`: `y` is not a unit of time"),
            ("10s:10c,10s:5/s", "stage2: mixes connection and rate targets"),
            ("10s:10c:ramp", "`ramp` is for rate stages"),
            ("10s:0/s", "above zero"),
            ("10s:100000001c", "at most 10000000"),
            ("10s:10c,10s:0c,10s:5c", "stage3: connections rise again after falling"),
            ("10s:0c", "no stage opens a connection"),
            ("10s:5/s,10s:6/s:warmup", "stage2: only the first stages may be warm-up"),
            ("10s:5/s:warmup", "every stage is a warm-up"),
            ("10s:many", "targets are 1000c or 5000/s"),
            (
                "1s:10",
                "stage1: `10` has no unit: write 10c for 10 connections or 10/s for 10 messages per second",
            ),
            ("1s:10c,1s:2.5", "stage2: `2.5` has no unit"),
            ("1s:10c,,1s:0c", "stage2 of `1s:10c,,1s:0c` is empty: give DURATION:TARGET between commas"),
            ("1s:10c,", "stage2 of `1s:10c,` is empty"),
            (",1s:10c", "stage1 of `,1s:10c` is empty"),
        ];
        for (text, expected) in cases {
            let error = plan(text).unwrap_err();
            assert!(error.contains(expected), "{text}: {error}");
        }
        let many = vec!["1s:1c"; MAX_STAGES + 1].join(",");
        assert!(plan(&many).unwrap_err().contains("at most 100"));
        let week: Vec<&str> = vec!["144h:1c", "48h:1c"];
        assert!(plan(&week.join(",")).unwrap_err().contains("at most 7 days in all"));
    }
}

//! A flow's `[[flow.steps]]` (as the settings give them, [`FlowSettings`]) checked and
//! compiled into a flat program ([`FlowProgram`]) that every connection runs: `send` a text
//! template; `expect` its replies (the JSON field of a reply equal to the one sent: one, a
//! `count`, or every one `until` a regex matches) within a timeout, each checked by content
//! (`check-json`, `check-regex`); wait for a message matching a regex (`expect-regex`, its
//! latency from the wait or `since` a send); `sleep`; `repeat` a block N times or until the
//! run ends. Templates (`{conn}`, `{seq}`, `{now_us}`, `{rand_u32}`, and `{data.NAME}` from
//! the connection's `--data` row) are filled in sends,
//! and in patterns and checks with the values of the send they answer. A bad step is a
//! one-line error naming it (exit 2).

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::capture::{Capture, check_variables};
use super::steps::{FlowSettings, MAX_FLOW_STEPS, StepSettings};
use super::template::template;
pub use super::template::{Captured, Pattern, Piece, Vars, render_with};
use crate::config::{ConfigError, DataTable};
use crate::units::format::group;
use crate::units::parse_duration;

/// How long an `expect` waits when the step gives no `timeout`.
pub const DEFAULT_EXPECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Nesting of `repeat` blocks allowed.
const MAX_DEPTH: usize = 8;
/// Replies one `expect` may count (`count`).
const MAX_COUNT: u64 = 1_000_000;
/// Rounds of one `repeat` block; a loop for the whole run is `repeat = "until-end"`.
pub const MAX_REPEAT: u64 = 1_000_000_000;
/// Sends one connection may await replies to at once: a send repeated before the
/// `expect` that waits for it piles up this many at most (as `--in-flight` is bounded).
pub const MAX_AWAITED_SENDS: u64 = 65_536;
/// What a matched message must say.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Checks {
    /// JSON pointer → the value there (strings with template fields filled in).
    pub json: Vec<(String, Value)>,
    pub regex: Option<Pattern>,
    /// What the message gives the connection's variables (`capture`, `capture-regex`).
    pub captures: Vec<Capture>,
}

impl Checks {
    fn compile(step: &StepSettings) -> Result<Checks, String> {
        let mut json = Vec::new();
        for (pointer, expected) in step.check_json.iter().flatten() {
            if !pointer.is_empty() && !pointer.starts_with('/') {
                return Err(format!(
                    "check-json key `{pointer}` is not a JSON pointer: write it like \"/result/0\""
                ));
            }
            let value = serde_json::to_value(expected).map_err(|e| format!("check-json `{pointer}`: {e}"))?;
            json.push((pointer.clone(), value));
        }
        let regex = step.check_regex.as_deref().map(Pattern::compile).transpose()?;
        Ok(Checks { json, regex, captures: Capture::compile(step)? })
    }

    /// Whether `message` (parsed once as JSON when there are JSON checks) passes every check.
    /// `data`: the `--data` table, whose row of `vars.conn` fills `{data.NAME}`; `captured`:
    /// the connection's variables.
    pub fn pass(&self, message: &str, vars: &Vars, data: Option<&DataTable>, captured: &Captured) -> bool {
        if let Some(pattern) = &self.regex
            && !pattern.regex(vars, data, captured).is_match(message)
        {
            return false;
        }
        if self.json.is_empty() {
            return true;
        }
        let Ok(parsed) = serde_json::from_str::<Value>(message) else { return false };
        self.json.iter().all(|(pointer, expected)| {
            let found = parsed.pointer(pointer);
            match expected {
                // A string with fields may stand for a number (`"{conn}"`).
                Value::String(text) => {
                    let filled = template(text)
                        .map(|pieces| render_with(&pieces, vars, data, captured, false))
                        .unwrap_or_default();
                    match found {
                        Some(Value::String(found)) => *found == filled,
                        Some(Value::Number(found)) => found.to_string() == filled,
                        _ => false,
                    }
                }
                other => found == Some(other),
            }
        })
    }
}

/// How many replies a send gets.
#[derive(Debug, Clone, Serialize)]
pub enum Replies {
    Count(u64),
    /// Every reply until one matches the pattern (which ends them and is no reply itself).
    Until(Pattern),
    /// `count` with `until`: replies until the count is reached or one matches the pattern,
    /// whichever comes first (later replies to the send are then its own, ignored).
    UpTo(u64, Pattern),
}

/// One instruction of the compiled flow.
#[derive(Debug, Clone, Serialize)]
pub enum Op {
    /// `track`: the JSON field its replies are matched on, how many there are and what each
    /// must say (from the `expect` of this send).
    Send {
        name: String,
        template: Vec<Piece>,
        track: Option<String>,
        replies: Replies,
        checks: Checks,
    },
    /// Wait until the latest message of send `send` has had its replies.
    ExpectReply {
        send: String,
        timeout: Duration,
    },
    /// Wait for a message matching `pattern`; its latency (from the wait's start, or from
    /// the latest send named `since`) is recorded under `name`.
    ExpectRegex {
        name: String,
        pattern: Pattern,
        timeout: Duration,
        since: Option<String>,
        checks: Checks,
    },
    Sleep(Duration),
    /// Start of a block run `times` times (`None`: until the run ends); `end` is the index
    /// of its [`Op::RepeatEnd`].
    Repeat {
        times: Option<u64>,
        end: usize,
    },
    RepeatEnd {
        start: usize,
    },
}

/// The flow every connection runs.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FlowProgram {
    pub ops: Vec<Op>,
}

impl PartialEq for FlowProgram {
    fn eq(&self, other: &Self) -> bool {
        serde_json::to_value(self).ok() == serde_json::to_value(other).ok()
    }
}

impl FlowProgram {
    /// Checks every step of `settings` and compiles the program.
    pub fn compile(settings: &FlowSettings) -> Result<FlowProgram, ConfigError> {
        if settings.steps.is_empty() {
            return Err(ConfigError::Table {
                table: "flow.steps",
                problem: "no steps: add [[flow.steps]] tables".into(),
            });
        }
        let steps = count_steps(&settings.steps, 0);
        if steps > MAX_FLOW_STEPS {
            return Err(ConfigError::Table {
                table: "flow.steps",
                problem: format!(
                    "{} steps (counting those inside repeats): at most {}; loop with repeat = N \
                     rather than writing steps out",
                    group(steps as u64),
                    group(MAX_FLOW_STEPS as u64)
                ),
            });
        }
        check_variables(&settings.steps)
            .map_err(|problem| ConfigError::Table { table: "flow.steps", problem })?;
        let mut compiler = Compiler { ops: Vec::new(), sends: Vec::new(), counter: 0, loops: Vec::new() };
        compiler
            .block(&settings.steps, 0, "")
            .map_err(|problem| ConfigError::Table { table: "flow.steps", problem })?;
        Ok(FlowProgram { ops: compiler.ops })
    }

    /// The send named `name`: its tracked field, replies and checks.
    pub fn send(&self, name: &str) -> Option<(&str, &Replies, &Checks)> {
        self.ops.iter().find_map(|op| match op {
            Op::Send { name: send, track: Some(field), replies, checks, .. } if send == name => {
                Some((field.as_str(), replies, checks))
            }
            _ => None,
        })
    }
}

/// Steps in `steps` and every block inside them, counted no deeper than [`MAX_DEPTH`]
/// (deeper is refused when compiled).
fn count_steps(steps: &[StepSettings], depth: usize) -> usize {
    steps
        .iter()
        .map(|step| match (&step.steps, depth < MAX_DEPTH) {
            (Some(inner), true) => 1 + count_steps(inner, depth + 1),
            _ => 1,
        })
        .sum()
}

/// A repeat block being compiled: where it starts and its rounds (`None`: until the end).
type OpenLoop = (usize, Option<u64>);

struct Compiler {
    ops: Vec<Op>,
    /// Names of the sends so far, the index of each in `ops`, where the step that expects
    /// it is (`step 2`, `step 1, in its steps, step 2`), and the repeat blocks it is in.
    sends: Vec<(String, usize, Option<String>, Vec<OpenLoop>)>,
    /// The repeat blocks the step being compiled is in, outermost first.
    loops: Vec<OpenLoop>,
    /// Steps compiled so far, over every block: what default names are made of.
    counter: usize,
}

impl Compiler {
    /// The error names the step by its place in its block (`step 3 `call`: …`; in a
    /// repeat, `step 1: in its steps, step 2: …`); `within` is where the block is
    /// (`step 1, in its steps, `; empty at the top).
    fn block(&mut self, steps: &[StepSettings], depth: usize, within: &str) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("repeat blocks nest deeper than {MAX_DEPTH}"));
        }
        for (n, step) in steps.iter().enumerate() {
            self.counter += 1;
            let label = match &step.name {
                Some(name) => format!("step {} `{name}`", n + 1),
                None => format!("step {}", n + 1),
            };
            let place = format!("{within}step {}", n + 1);
            self.step(step, depth, &place).map_err(|problem| format!("{label}: {problem}"))?;
        }
        Ok(())
    }

    /// Errors from a nested block already name their step; `place` is where this one is.
    fn step(&mut self, step: &StepSettings, depth: usize, place: &str) -> Result<(), String> {
        let kinds = [
            step.send.is_some(),
            step.expect.is_some(),
            step.expect_regex.is_some(),
            step.sleep.is_some(),
            step.repeat.is_some(),
        ];
        if kinds.iter().filter(|&&k| k).count() != 1 {
            return Err("give exactly one of send, expect, expect-regex, sleep, repeat".to_owned());
        }
        let timeout = || match &step.timeout {
            Some(text) => bounded_duration("timeout", text),
            None => Ok(DEFAULT_EXPECT_TIMEOUT),
        };
        let only = |given: bool, what: &str| match given {
            true => Err(format!("{what} does not apply to this step")),
            false => Ok(()),
        };
        let expecting = step.expect.is_some() || step.expect_regex.is_some();
        only(step.steps.is_some() && step.repeat.is_none(), "steps")?;
        only(step.match_field.is_some() && step.expect.is_none(), "match-field")?;
        only((step.count.is_some() || step.until.is_some()) && step.expect.is_none(), "count/until")?;
        only(step.since.is_some() && step.expect_regex.is_none(), "since")?;
        only(step.timeout.is_some() && !expecting, "timeout")?;
        only(
            (step.check_json.is_some() || step.check_regex.is_some()) && !expecting,
            "check-json/check-regex",
        )?;
        only(
            (step.capture.is_some() || step.capture_regex.is_some()) && !expecting,
            "capture/capture-regex",
        )?;
        if let Some(text) = &step.send {
            let name = step.name.clone().unwrap_or_else(|| format!("send{}", self.counter));
            if self.sends.iter().any(|(known, ..)| *known == name) {
                return Err(format!("a send named `{name}` comes earlier: names must differ"));
            }
            self.sends.push((name.clone(), self.ops.len(), None, self.loops.clone()));
            let send = Op::Send {
                name,
                template: template(text)?,
                track: None,
                replies: Replies::Count(1),
                checks: Checks::default(),
            };
            self.ops.push(send);
        } else if let Some(send) = &step.expect {
            self.expect(step, send, timeout()?, place)?;
        } else if let Some(pattern) = &step.expect_regex {
            self.expect_regex(step, pattern, timeout()?)?;
        } else if let Some(text) = &step.sleep {
            self.ops.push(Op::Sleep(bounded_duration("sleep", text)?));
        } else if let Some(repeat) = &step.repeat {
            self.repeat(step, repeat, depth, place)?;
        }
        Ok(())
    }

    /// An `expect-regex`: its pattern, what the message must say, and the send its latency
    /// counts from (if not from the wait).
    fn expect_regex(&mut self, step: &StepSettings, pattern: &str, timeout: Duration) -> Result<(), String> {
        let name = step.name.clone().unwrap_or_else(|| format!("expect{}", self.counter));
        if let Some(since) = &step.since
            && !self.sends.iter().any(|(known, ..)| known == since)
        {
            return Err(format!("since `{since}`, but no send of that name comes before it"));
        }
        self.ops.push(Op::ExpectRegex {
            name,
            pattern: Pattern::compile(pattern)?,
            timeout,
            since: step.since.clone(),
            checks: Checks::compile(step)?,
        });
        Ok(())
    }

    /// A `repeat` block: its count (or `until-end`) and its steps, compiled in place.
    fn repeat(
        &mut self,
        step: &StepSettings,
        repeat: &toml::Value,
        depth: usize,
        place: &str,
    ) -> Result<(), String> {
        let times = match repeat {
            toml::Value::Integer(n) if *n as u64 > MAX_REPEAT => {
                return Err(format!(
                    "repeat = {} is too many rounds: at most {}; to loop until the run ends, write \
                     repeat = \"until-end\"",
                    group(*n as u64),
                    group(MAX_REPEAT)
                ));
            }
            toml::Value::Integer(n) if *n > 0 => Some(*n as u64),
            toml::Value::String(text) if text == "until-end" => None,
            _ => return Err("repeat is a count above 0 or \"until-end\"".to_owned()),
        };
        let steps = step.steps.as_deref().unwrap_or_default();
        if steps.is_empty() {
            return Err("a repeat needs steps = [ … ]".to_owned());
        }
        let start = self.ops.len();
        self.ops.push(Op::Repeat { times, end: 0 });
        self.loops.push((start, times));
        let compiled = self.block(steps, depth + 1, &format!("{place}, in its steps, "));
        self.loops.pop();
        if let Err(nested) = compiled {
            return Err(format!("in its steps, {nested}"));
        }
        let end = self.ops.len();
        self.ops.push(Op::RepeatEnd { start });
        self.ops[start] = Op::Repeat { times, end };
        Ok(())
    }

    /// An `expect` of send `send`: the send learns how its replies are matched, how many
    /// there are and what each must say. One expect per send.
    fn expect(
        &mut self,
        step: &StepSettings,
        send: &str,
        timeout: Duration,
        place: &str,
    ) -> Result<(), String> {
        let field =
            step.match_field.clone().ok_or("an expect needs match-field, e.g. match-field = \"id\"")?;
        let Some((_, at, expected_by, send_loops)) = self.sends.iter_mut().find(|(name, ..)| name == send)
        else {
            return Err(format!("expects `{send}`, but no send of that name comes before it"));
        };
        // The rounds of the blocks the send is in and its expect is not: that many sends
        // await their replies before the expect waits for them.
        let shared = send_loops.iter().zip(&self.loops).take_while(|(a, b)| a == b).count();
        let piled = send_loops[shared..]
            .iter()
            .try_fold(1u64, |product, (_, times)| times.and_then(|times| product.checked_mul(times)));
        if piled.is_none_or(|piled| piled > MAX_AWAITED_SENDS) {
            let rounds = piled.map_or_else(|| "without end".to_owned(), |n| format!("{} times", group(n)));
            return Err(format!(
                "send `{send}` is repeated {rounds} before this expect waits for its replies: at \
                 most {} sends may await replies at once; put the expect in the send's repeat",
                group(MAX_AWAITED_SENDS)
            ));
        }
        if let Some(earlier) = expected_by {
            return Err(format!(
                "send `{send}` is already expected by {earlier}: one expect per send (count = N \
                 waits for N replies)"
            ));
        }
        *expected_by = Some(place.to_owned());
        let replies = match (step.count, &step.until) {
            (Some(count), _) if !(1..=MAX_COUNT).contains(&count) => {
                return Err(format!("count is 1 to {MAX_COUNT}"));
            }
            (Some(count), Some(until)) => Replies::UpTo(count, Pattern::compile(until)?),
            (Some(count), None) => Replies::Count(count),
            (None, Some(until)) => Replies::Until(Pattern::compile(until)?),
            (None, None) => Replies::Count(1),
        };
        let checks = Checks::compile(step)?;
        if let Op::Send { track, replies: send_replies, checks: send_checks, .. } = &mut self.ops[*at] {
            *track = Some(field);
            *send_replies = replies;
            *send_checks = checks;
        }
        self.ops.push(Op::ExpectReply { send: send.to_owned(), timeout });
        Ok(())
    }
}

/// A step's `key = "…"` duration, at most a week like every duration setting.
fn bounded_duration(key: &str, text: &str) -> Result<Duration, String> {
    let duration = parse_duration(text).map_err(|e| format!("{key} {}", e.problem))?;
    if duration > crate::config::MAX_DURATION {
        return Err(format!("{key} `{text}` is longer than 7 days (168h)"));
    }
    Ok(duration)
}

#[cfg(test)]
#[path = "program_tests.rs"]
mod tests;

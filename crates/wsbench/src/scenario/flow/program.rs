//! A flow's `[[flow.steps]]` (as the settings give them, [`FlowSettings`]) checked and
//! compiled into a flat program ([`FlowProgram`]) that every connection runs: `send` a text
//! template, `expect` a reply (the JSON field of a reply equal to the one sent, or a regex)
//! within a timeout, `sleep`, `repeat` a block N times or until the run ends. A bad step is
//! a one-line error naming it (exit 2).

use std::time::Duration;

use serde::Serialize;

use crate::config::{ConfigError, FlowSettings, StepSettings, invalid_setting as invalid};
use crate::units::parse_duration;

/// How long an `expect` waits when the step gives no `timeout`.
pub const DEFAULT_EXPECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Nesting of `repeat` blocks allowed.
const MAX_DEPTH: usize = 8;

/// A piece of a send template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Piece {
    Text(String),
    Conn,
    Seq,
    NowUs,
    RandU32,
}

/// One instruction of the compiled flow.
#[derive(Debug, Clone, Serialize)]
pub enum Op {
    /// `track`: the JSON field an `expect` of this send matches on.
    Send {
        name: String,
        template: Vec<Piece>,
        track: Option<String>,
    },
    /// Wait until the latest message of send `send` has its reply.
    ExpectReply {
        send: String,
        timeout: Duration,
    },
    /// Wait for a message matching `regex`; its latency is recorded under `name`.
    ExpectRegex {
        name: String,
        #[serde(serialize_with = "as_str")]
        regex: regex::Regex,
        timeout: Duration,
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

fn as_str<S: serde::Serializer>(regex: &regex::Regex, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(regex.as_str())
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
            return Err(invalid("flow.steps", "[flow] has no steps: add [[flow.steps]] tables"));
        }
        let mut compiler = Compiler { ops: Vec::new(), sends: Vec::new(), counter: 0 };
        compiler.block(&settings.steps, 0).map_err(|problem| invalid("flow.steps", problem))?;
        Ok(FlowProgram { ops: compiler.ops })
    }
}

struct Compiler {
    ops: Vec<Op>,
    /// Names of the sends so far, and the index of each in `ops`.
    sends: Vec<(String, usize)>,
    counter: usize,
}

impl Compiler {
    /// The error names the step (`step 3 `call`: …`).
    fn block(&mut self, steps: &[StepSettings], depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("repeat blocks nest deeper than {MAX_DEPTH}"));
        }
        for step in steps {
            self.counter += 1;
            let label = match &step.name {
                Some(name) => format!("step {} `{name}`", self.counter),
                None => format!("step {}", self.counter),
            };
            self.step(step, depth).map_err(|problem| format!("{label}: {problem}"))?;
        }
        Ok(())
    }

    /// Errors from a nested block already name their step.
    fn step(&mut self, step: &StepSettings, depth: usize) -> Result<(), String> {
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
            Some(text) => parse_duration(text).map_err(|e| e.to_string()),
            None => Ok(DEFAULT_EXPECT_TIMEOUT),
        };
        let only = |given: bool, what: &str| match given {
            true => Err(format!("{what} does not apply to this step")),
            false => Ok(()),
        };
        only(step.steps.is_some() && step.repeat.is_none(), "steps")?;
        only(step.match_field.is_some() && step.expect.is_none(), "match-field")?;
        only(step.timeout.is_some() && step.expect.is_none() && step.expect_regex.is_none(), "timeout")?;
        if let Some(text) = &step.send {
            let name = step.name.clone().unwrap_or_else(|| format!("send{}", self.counter));
            if self.sends.iter().any(|(known, _)| *known == name) {
                return Err(format!("a send named `{name}` comes earlier: names must differ"));
            }
            self.sends.push((name.clone(), self.ops.len()));
            self.ops.push(Op::Send { name, template: template(text)?, track: None });
        } else if let Some(send) = &step.expect {
            let field =
                step.match_field.clone().ok_or("an expect needs match-field, e.g. match-field = \"id\"")?;
            let Some(&(_, at)) = self.sends.iter().find(|(name, _)| name == send) else {
                return Err(format!("expects `{send}`, but no send of that name comes before it"));
            };
            if let Op::Send { track, .. } = &mut self.ops[at] {
                match track {
                    Some(other) if *other != field => {
                        return Err(format!("send `{send}` is already matched on `{other}`"));
                    }
                    _ => *track = Some(field),
                }
            }
            self.ops.push(Op::ExpectReply { send: send.clone(), timeout: timeout()? });
        } else if let Some(pattern) = &step.expect_regex {
            let regex = regex::Regex::new(pattern).map_err(|e| format!("bad regex: {}", first_line(&e)))?;
            let name = step.name.clone().unwrap_or_else(|| format!("expect{}", self.counter));
            self.ops.push(Op::ExpectRegex { name, regex, timeout: timeout()? });
        } else if let Some(text) = &step.sleep {
            self.ops.push(Op::Sleep(parse_duration(text).map_err(|e| e.to_string())?));
        } else if let Some(repeat) = &step.repeat {
            let times = match repeat {
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
            if let Err(nested) = self.block(steps, depth + 1) {
                return Err(format!("in its steps, {nested}"));
            }
            let end = self.ops.len();
            self.ops.push(Op::RepeatEnd { start });
            self.ops[start] = Op::Repeat { times, end };
        }
        Ok(())
    }
}

fn first_line(error: &dyn std::fmt::Display) -> String {
    error.to_string().lines().last().unwrap_or("").trim().to_owned()
}

/// Splits `{conn}`, `{seq}`, `{now_us}`, `{rand_u32}` out of `text`; other braces (JSON) stay.
fn template(text: &str) -> Result<Vec<Piece>, String> {
    let fields = [
        ("{conn}", Piece::Conn),
        ("{seq}", Piece::Seq),
        ("{now_us}", Piece::NowUs),
        ("{rand_u32}", Piece::RandU32),
    ];
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        match fields.iter().find(|(field, _)| rest.starts_with(field)) {
            Some((field, piece)) => {
                if !literal.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut literal)));
                }
                pieces.push(piece.clone());
                rest = &rest[field.len()..];
            }
            None => {
                let c = rest.chars().next().unwrap_or_default();
                literal.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    if !literal.is_empty() {
        pieces.push(Piece::Text(literal));
    }
    if pieces.is_empty() {
        return Err("send is empty".to_owned());
    }
    Ok(pieces)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(text: &str) -> Result<FlowProgram, String> {
        let settings: FlowSettings = toml::from_str(text).map_err(|e| e.to_string())?;
        FlowProgram::compile(&settings).map_err(|e| e.to_string())
    }

    #[test]
    fn a_send_and_its_expect_compile_with_the_field_tracked() {
        let program = compile(
            "[[steps]]\nname = \"call\"\nsend = '{\"id\":{seq}}'\n[[steps]]\nexpect = \"call\"\nmatch-field = \"id\"\ntimeout = \"1s\"\n",
        )
        .unwrap();
        match &program.ops[..] {
            [Op::Send { name, template, track }, Op::ExpectReply { send, timeout }] => {
                assert_eq!((name.as_str(), track.as_deref(), send.as_str()), ("call", Some("id"), "call"));
                assert_eq!(template, &[Piece::Text("{\"id\":".into()), Piece::Seq, Piece::Text("}".into())]);
                assert_eq!(*timeout, Duration::from_secs(1));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn repeat_blocks_point_at_their_ends() {
        let program =
            compile("[[steps]]\nrepeat = 3\nsteps = [ { sleep = \"1ms\" }, { send = \"x\" } ]\n").unwrap();
        assert!(matches!(program.ops[0], Op::Repeat { times: Some(3), end: 3 }));
        assert!(matches!(program.ops[3], Op::RepeatEnd { start: 0 }));
    }

    #[test]
    fn bad_steps_are_named() {
        let cases = [
            (
                "[[steps]]\nname = \"a\"\nexpect = \"nope\"\nmatch-field = \"id\"\n",
                "step 1 `a`: expects `nope`",
            ),
            ("[[steps]]\nsend = \"x\"\nsleep = \"1s\"\n", "step 1: give exactly one"),
            ("[[steps]]\nsend = \"x\"\n[[steps]]\nexpect-regex = \"(\"\n", "step 2: bad regex"),
            ("[[steps]]\nrepeat = 0\nsteps = [ { send = \"x\" } ]\n", "repeat is a count above 0"),
            ("[[steps]]\nsleep = \"soon\"\n", "step 1:"),
            ("steps = []\n", "no steps"),
        ];
        for (text, wanted) in cases {
            let error = compile(text).unwrap_err();
            assert!(error.contains(wanted), "{text}: {error}");
            assert_eq!(error.lines().count(), 1, "{error}");
        }
    }
}

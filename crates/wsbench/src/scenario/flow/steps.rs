//! The `[[flow.steps]]` of a TOML scenario file as given ([`FlowSettings`]): the flow
//! scenario's one option ([`FLOW`]), a table with no flag. The scenario reads it from the
//! file's text itself ([`check_text`]): too many steps are refused before the text is
//! parsed, and a mistyped value is named at its line. The compiler (`program`) checks and
//! compiles the steps.

use serde::{Deserialize, Serialize};

use crate::options::{Kind, OptionSpec, TableRefusal};
use crate::units::format::group;

/// `[[flow.steps]]`: the steps each connection runs.
pub const FLOW: OptionSpec = OptionSpec {
    flag: "flow",
    key: "flow",
    kind: Kind::Table(check_text),
    value_name: "",
    default: "",
    bound: "",
    help: "the [[flow.steps]] of a scenario file (no flag)",
    scenarios: &[],
};

/// The table of a scenario file's text the flow reads (the rest is other settings').
#[derive(Deserialize)]
struct FileSteps {
    flow: Option<FlowSettings>,
}

/// The flow's check of a scenario file's text: the step estimate, then its `[flow]` read as
/// [`FlowSettings`], an error pointing where it is in the text.
fn check_text(text: &str) -> Result<(), TableRefusal> {
    check_step_estimate(text)?;
    toml::from_str::<FileSteps>(text).map(|file| drop(file.flow)).map_err(TableRefusal::Toml)
}

/// Steps of a flow, counting those inside `repeat` blocks (each costs every connection
/// its compiled form, and every named step a histogram).
pub const MAX_FLOW_STEPS: usize = 1_000;

/// Refuses, before the TOML text of a scenario file is parsed (parsing takes a few KB a
/// step), a text with far more than [`MAX_FLOW_STEPS`] steps. It counts the keys a step is
/// made by (`send`, `expect`, `expect-regex`, `sleep`, `repeat`) where a key may stand (a
/// line's start, after `{` or `,`): each step has one, and text inside a template rarely
/// looks like one, so twice the bound is left before the text is refused. The exact count
/// is the flow compiler's.
fn check_step_estimate(text: &str) -> Result<(), TableRefusal> {
    let estimate = step_keys(text);
    if estimate > 2 * MAX_FLOW_STEPS {
        return Err(TableRefusal::Bound {
            table: "flow.steps",
            problem: format!(
                "about {} steps (counting those inside repeats): at most {}; loop with repeat = N \
                 rather than writing steps out",
                group(estimate as u64),
                group(MAX_FLOW_STEPS as u64)
            ),
        });
    }
    Ok(())
}

/// How many step keys stand where a key may in `text`.
fn step_keys(text: &str) -> usize {
    const KEYS: [&str; 5] = ["send", "expect-regex", "expect", "sleep", "repeat"];
    let bytes = text.as_bytes();
    let mut count = 0;
    for (at, _) in text.match_indices(['s', 'e', 'r']) {
        let before = bytes[..at].iter().rev().find(|b| !matches!(b, b' ' | b'\t'));
        if !matches!(before, None | Some(b'\n' | b'{' | b',')) {
            continue;
        }
        let Some(key) = KEYS.iter().find(|key| text[at..].starts_with(*key)) else { continue };
        if text[at + key.len()..].trim_start_matches([' ', '\t']).starts_with('=') {
            count += 1;
        }
    }
    count
}

/// `[flow]` as written in the scenario file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSettings {
    pub steps: Vec<StepSettings>,
}

/// One `[[flow.steps]]` table: exactly one of `send`, `expect`, `expect-regex`, `sleep`,
/// `repeat` says what it is. (TOML leaves the unset ones out when it writes a step back.)
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct StepSettings {
    pub name: Option<String>,
    /// A text message: `{conn}`, `{seq}`, `{now_us}`, `{rand_u32}` are filled in.
    pub send: Option<String>,
    /// The name of an earlier `send` whose replies to wait for (matched by `match-field`).
    pub expect: Option<String>,
    /// The JSON field (top level) whose value the reply must repeat, e.g. `id`.
    pub match_field: Option<String>,
    /// `expect`: how many replies the send gets (default 1), e.g. a subscription's `next`s.
    pub count: Option<u64>,
    /// `expect`: replies keep coming until one matches this regex (e.g. a `complete`).
    pub until: Option<String>,
    /// Wait for a message matching this regex (the latest send's `{conn}`, `{seq}`, … filled in).
    pub expect_regex: Option<String>,
    /// `expect-regex`: its latency counts from the latest send of this name, not from the
    /// moment the flow began waiting.
    pub since: Option<String>,
    /// `expect`, `expect-regex`: what the matched message must say, by JSON pointer
    /// (`"/result/0" = "hello {conn}"`); strings have the send's templates filled in.
    pub check_json: Option<toml::Table>,
    /// `expect`, `expect-regex`: a regex the matched message must match (templates filled in).
    pub check_regex: Option<String>,
    /// `expect`, `expect-regex`: variables kept from the matched message by JSON pointer
    /// (`sub = "/id"`), used later as `{var.sub}`.
    pub capture: Option<toml::Table>,
    /// `expect`, `expect-regex`: variables kept by a regex's first group.
    pub capture_regex: Option<toml::Table>,
    pub timeout: Option<String>,
    pub sleep: Option<String>,
    /// A count, or `"until-end"`.
    pub repeat: Option<toml::Value>,
    pub steps: Option<Vec<StepSettings>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_keys_count_keys_where_keys_stand_and_not_inside_templates() {
        let text = "scenario = \"flow\"\n[[flow.steps]]\nsend = '{\"send\": \"x\", \"sleep\" : 1}'\n\
                    [[flow.steps]]\nrepeat = 2\nsteps = [{ sleep = \"1s\" }, { expect-regex = 'a' },\n  { expect = \"x\" }]\n";
        assert_eq!(step_keys(text), 5);
    }

    #[test]
    fn far_too_many_steps_are_refused_before_parsing() {
        check_step_estimate(&"[[flow.steps]]\nsend = 'x'\n".repeat(2 * MAX_FLOW_STEPS)).unwrap();
        match check_step_estimate(&"[[flow.steps]]\nsend = 'x'\n".repeat(100_000)) {
            Err(TableRefusal::Bound { table, problem }) => {
                assert_eq!(table, "flow.steps");
                assert!(problem.contains("about 100,000 steps"), "{problem}");
            }
            other => panic!("not refused by its bound: {other:?}"),
        }
    }

    #[test]
    fn a_mistyped_step_value_is_refused_where_it_stands() {
        check_text("scenario = \"flow\"\nconnections = 3\n[[flow.steps]]\nsend = \"x\"\n").unwrap();
        let text = "[[flow.steps]]\nsend = \"x\"\n[[flow.steps]]\nrepeat = 2\nsteps = [ { send = \"a\", count = \"x\" } ]\n";
        match check_text(text) {
            Err(TableRefusal::Toml(error)) => {
                assert!(error.message().contains("invalid type: string \"x\""), "{error}");
                assert_eq!(&text[error.span().unwrap().start..][..3], "\"x\"");
            }
            other => panic!("not refused: {other:?}"),
        }
    }
}

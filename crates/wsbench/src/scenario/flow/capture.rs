//! Captures: an `expect` or `expect-regex` step keeps values of the message it matched as
//! the connection's variables (`capture = { sub = "/id" }` by JSON pointer, `capture-regex
//! = { sub = '"id":"(\w+)"' }` by a regex's first group), and later sends, patterns and
//! checks use them as `{var.NAME}`. A capture that finds nothing is counted by its step
//! (never an empty string). Bounded: [`MAX_VARIABLES`] names per flow (so per connection),
//! [`MAX_VALUE_BYTES`] per value; a `{var.NAME}` that no step captures is refused at load.
//! Variables go only into message bodies: the handshake's headers are sent before any reply.

use serde::Serialize;
use serde_json::Value;

use super::steps::StepSettings;
use super::template::{Captured, Pattern, Vars, var_names};
use crate::config::DataTable;

/// Variables a flow may capture (names over every step): what each connection keeps.
pub const MAX_VARIABLES: usize = 16;
/// Bytes a captured value may take (a token, an id); a longer one is counted, not kept.
pub const MAX_VALUE_BYTES: usize = 4096;
/// Bytes a variable's name may take.
const MAX_NAME_BYTES: usize = 64;

/// Where a captured value is found in the matched message.
#[derive(Debug, Clone, Serialize)]
pub enum Source {
    /// A JSON pointer (RFC 6901): a string as it is, anything else as JSON text.
    Pointer(String),
    /// A regex: its first group, or the whole match when it has none.
    Regex(Pattern),
}

#[derive(Debug, Clone, Serialize)]
pub struct Capture {
    pub name: String,
    pub source: Source,
}

/// Why a capture kept nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Missing,
    TooLong,
}

impl Capture {
    /// The captures of `step` (`capture`, `capture-regex`), checked.
    pub fn compile(step: &StepSettings) -> Result<Vec<Capture>, String> {
        let mut captures = Vec::new();
        let tables = [("capture", &step.capture), ("capture-regex", &step.capture_regex)];
        for (key, table) in tables {
            for (name, source) in table.iter().flatten() {
                check_name(name)?;
                let Some(text) = source.as_str() else {
                    return Err(format!("{key} `{name}` is a string (a JSON pointer or a regex)"));
                };
                let source = match key {
                    "capture" if !text.is_empty() && !text.starts_with('/') => {
                        return Err(format!(
                            "capture `{name}` = `{text}` is not a JSON pointer: write it like \"/id\""
                        ));
                    }
                    "capture" => Source::Pointer(text.to_owned()),
                    _ => Source::Regex(Pattern::compile(text)?),
                };
                captures.push(Capture { name: name.clone(), source });
            }
        }
        Ok(captures)
    }

    /// The value this capture finds in `message` (`parsed`: it as JSON, when it is).
    fn find(
        &self,
        message: &str,
        parsed: Option<&Value>,
        fill: (&Vars, Option<&DataTable>, &Captured),
    ) -> Option<String> {
        match &self.source {
            Source::Pointer(pointer) => match parsed?.pointer(pointer)? {
                Value::Null => None,
                Value::String(text) => Some(text.clone()),
                other => Some(other.to_string()),
            },
            Source::Regex(pattern) => {
                let regex = pattern.regex(fill.0, fill.1, fill.2);
                let found = regex.captures(message)?;
                let group = found.get(1).or_else(|| found.get(0))?;
                Some(group.as_str().to_owned())
            }
        }
    }
}

/// Applies `captures` to `message` into `captured`: all kept, or the first failure (then
/// none is kept, so a step's variables come from one message).
pub fn apply(
    captures: &[Capture],
    message: &str,
    vars: &Vars,
    data: Option<&DataTable>,
    captured: &mut Captured,
) -> Result<(), Failure> {
    if captures.is_empty() {
        return Ok(());
    }
    let parsed: Option<Value> = match captures.iter().any(|c| matches!(c.source, Source::Pointer(_))) {
        true => serde_json::from_str(message).ok(),
        false => None,
    };
    let mut found = Vec::with_capacity(captures.len());
    for capture in captures {
        let value = capture.find(message, parsed.as_ref(), (vars, data, captured)).ok_or(Failure::Missing)?;
        if value.len() > MAX_VALUE_BYTES {
            return Err(Failure::TooLong);
        }
        found.push((capture.name.as_str(), value));
    }
    for (name, value) in found {
        captured.set(name, value);
    }
    Ok(())
}

fn check_name(name: &str) -> Result<(), String> {
    let fine = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if name.is_empty() || name.len() > MAX_NAME_BYTES || !name.chars().all(fine) {
        return Err(format!("capture name `{name}`: 1 to {MAX_NAME_BYTES} letters, digits, `_` or `-`"));
    }
    Ok(())
}

/// Every `{var.NAME}` in the steps' templates (sends, patterns, checks, capture regexes)
/// names a variable some step captures, and at most [`MAX_VARIABLES`] names are captured.
pub fn check_variables(steps: &[StepSettings]) -> Result<(), String> {
    let mut captured = Vec::new();
    let mut used = Vec::new();
    collect(steps, &mut captured, &mut used);
    captured.sort();
    captured.dedup();
    if captured.len() > MAX_VARIABLES {
        return Err(format!(
            "the steps capture {} variables: at most {MAX_VARIABLES} per connection; capture only \
             the values later messages use",
            captured.len()
        ));
    }
    match used.into_iter().find(|name| !captured.contains(name)) {
        Some(name) => Err(format!(
            "`{{var.{name}}}` is captured by no step: add capture = {{ {name} = \"/pointer\" }} to the \
             expect whose reply carries it"
        )),
        None => Ok(()),
    }
}

/// The names `steps` (and the blocks inside them) capture, and those their templates use.
fn collect(steps: &[StepSettings], captured: &mut Vec<String>, used: &mut Vec<String>) {
    for step in steps {
        for table in [&step.capture, &step.capture_regex].into_iter().flatten() {
            captured.extend(table.keys().cloned());
        }
        let regexes = step.capture_regex.iter().flatten().filter_map(|(_, value)| value.as_str());
        let checked = step.check_json.iter().flatten().filter_map(|(_, value)| value.as_str());
        let texts = [&step.send, &step.until, &step.expect_regex, &step.check_regex];
        for text in texts.into_iter().flatten().map(String::as_str).chain(checked).chain(regexes) {
            used.extend(var_names(text));
        }
        collect(step.steps.as_deref().unwrap_or_default(), captured, used);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(text: &str) -> StepSettings {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn a_pointer_and_a_regex_group_are_captured_and_nothing_found_is_missing() {
        let captures =
            Capture::compile(&step("expect-regex = 'x'\ncapture = { sub = \"/sub\", n = \"/n\" }\ncapture-regex = { t = 't=(\\w+)' }"))
                .unwrap();
        let mut captured = Captured::default();
        let message = r#"{"sub":"ab12","n":7,"s":"t=tok"}"#;
        apply(&captures, message, &Vars::default(), None, &mut captured).unwrap();
        assert_eq!(
            (captured.get("sub"), captured.get("n"), captured.get("t")),
            (Some("ab12"), Some("7"), Some("tok"))
        );
        let missing = apply(&captures, r#"{"sub":"zz","s":"t=x"}"#, &Vars::default(), None, &mut captured);
        assert_eq!(missing, Err(Failure::Missing));
        assert_eq!(captured.get("sub"), Some("ab12"), "a failed step keeps none of its values");
        let long = format!(r#"{{"sub":"{}","n":1,"s":"t=x"}}"#, "a".repeat(MAX_VALUE_BYTES + 1));
        assert_eq!(apply(&captures, &long, &Vars::default(), None, &mut captured), Err(Failure::TooLong));
    }

    #[test]
    fn bad_captures_and_uncaptured_variables_are_refused_naming_the_bound() {
        let bad = Capture::compile(&step("expect-regex = 'x'\ncapture = { sub = \"id\" }")).unwrap_err();
        assert!(bad.contains("not a JSON pointer"), "{bad}");
        let name =
            Capture::compile(&step("expect-regex = 'x'\ncapture = { \"a b\" = \"/id\" }")).unwrap_err();
        assert!(name.contains("capture name `a b`"), "{name}");
        let unknown = check_variables(&[step("send = '{\"s\":\"{var.sub}\"}'")]).unwrap_err();
        assert!(unknown.contains("`{var.sub}` is captured by no step"), "{unknown}");
        let names: Vec<String> = (0..=MAX_VARIABLES).map(|n| format!("v{n} = \"/v\"")).collect();
        let many = step(&format!("expect-regex = 'x'\ncapture = {{ {} }}", names.join(", ")));
        let too_many = check_variables(&[many]).unwrap_err();
        assert!(too_many.contains("17 variables: at most 16 per connection"), "{too_many}");
    }
}

//! A message template of a protocol's option (a JSON-RPC call's params, a GraphQL
//! operation): text with named placeholders (`{payload}`, `{topic}`) filled on every
//! message. The text is split at its placeholders once, when the session is made, so that
//! writing a message copies its parts into a reused buffer and allocates nothing. A
//! template that must be JSON is checked once before the load, with each placeholder
//! standing for a sample value of its kind, so a typo is a one-line error before any
//! connection opens, not an error from the server on every message.

/// A template split at its placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    /// The placeholder at this index of the names the template was split with.
    Field(usize),
}

impl Template {
    /// `text` split at each of `names` (`{payload}`, …) wherever it occurs; other braces
    /// are text (JSON).
    pub fn split(text: &str, names: &[&str]) -> Template {
        let mut parts = Vec::new();
        let mut rest = text;
        loop {
            let next = names
                .iter()
                .enumerate()
                .filter_map(|(field, name)| rest.find(name).map(|at| (at, field, name.len())))
                .min();
            let Some((at, field, len)) = next else { break };
            if at > 0 {
                parts.push(Part::Text(rest[..at].to_owned()));
            }
            parts.push(Part::Field(field));
            rest = &rest[at + len..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_owned()));
        }
        Template { parts }
    }

    /// Appends the template to `out`, placeholder `i` written by `field(i, out)`.
    pub fn write(&self, out: &mut Vec<u8>, mut field: impl FnMut(usize, &mut Vec<u8>)) {
        for part in &self.parts {
            match part {
                Part::Text(text) => out.extend_from_slice(text.as_bytes()),
                Part::Field(index) => field(*index, out),
            }
        }
    }

    /// Whether placeholder `index` occurs in it.
    pub fn uses(&self, index: usize) -> bool {
        self.parts.contains(&Part::Field(index))
    }
}

/// `text` with each of `names` replaced by its sample (`samples[i]` for `names[i]`) and each
/// `{data.NAME}` by `0`, parsed as JSON: what a filled template would be, or why it is not
/// JSON (serde's words, with the line and column in the sample).
pub fn sample_json(text: &str, names: &[&str], samples: &[&str]) -> Result<serde_json::Value, String> {
    let mut filled = text.to_owned();
    for (name, sample) in names.iter().zip(samples) {
        filled = filled.replace(name, sample);
    }
    const DATA: &str = "{data.";
    while let Some(at) = filled.find(DATA) {
        let Some(end) = filled[at..].find('}') else { break };
        filled.replace_range(at..at + end + 1, "0");
    }
    serde_json::from_str(&filled).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(template: &Template, values: &[&str]) -> String {
        let mut out = Vec::new();
        template.write(&mut out, |index, out| out.extend_from_slice(values[index].as_bytes()));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn placeholders_are_filled_where_they_stand_and_other_braces_kept() {
        let template =
            Template::split(r#"{"t":"t{topic}","p":{payload},"again":{payload}}"#, &["{topic}", "{payload}"]);
        assert_eq!(filled(&template, &["3", r#""x""#]), r#"{"t":"t3","p":"x","again":"x"}"#);
        assert!(template.uses(0) && template.uses(1));
        let plain = Template::split("[]", &["{payload}"]);
        assert_eq!(filled(&plain, &[]), "[]");
        assert!(!plain.uses(0));
    }

    #[test]
    fn a_template_is_checked_as_json_with_samples() {
        let names = ["{payload}"];
        let value = sample_json(r#"[{payload}, "{data.user}", {data.n}]"#, &names, &[r#""x""#]).unwrap();
        assert_eq!(value, serde_json::json!(["x", "0", 0]));
        let error = sample_json(r#"[{payload}"#, &names, &[r#""x""#]).unwrap_err();
        assert!(error.contains("EOF"), "{error}");
    }
}

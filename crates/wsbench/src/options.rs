//! The options of a member (a scenario, a protocol, a transport), declared in the member's own
//! folder as [`OptionSpec`]s: the flag, the TOML key, the kind of value, the default and the
//! bound `--help` shows, the help text, and the scenarios it applies to. The values given
//! travel as [`OptionValues`] (flags and scenario files alike) until the member reads them
//! into its own typed settings once, before the run. Shared code collects the declarations
//! through the registries and never names one; this module imports nothing of the crate, so
//! every layer can use it. An option may also be a whole table of a scenario file (no flag):
//! its member reads it from the file's text itself, so that an error points at its line.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One option of a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionSpec {
    /// The flag, without `--`.
    pub flag: &'static str,
    /// The key of a TOML scenario file (the flag's name, by the files' convention).
    pub key: &'static str,
    pub kind: Kind,
    /// What `--help` shows for VALUE.
    pub value_name: &'static str,
    /// The value used when none is given, as `--help` shows it.
    pub default: &'static str,
    /// Which values are accepted, as `--help` shows it (the member checks them).
    pub bound: &'static str,
    /// One sentence for `--help`.
    pub help: &'static str,
    /// The scenarios it applies to (empty: any its member runs in).
    pub scenarios: &'static [&'static str],
}

/// The kind of value an option takes.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// A whole number.
    Count,
    /// Text (a name, a template, a duration such as `10s`).
    Text,
    /// A flag without value: given means on.
    Switch,
    /// A table of a scenario file, no flag (`[[NAME.steps]]`): the member checks the file's
    /// text with this function before the settings are parsed, so that a table too large is
    /// refused before parsing and a mistyped value is named at its line.
    Table(fn(&str) -> Result<(), TableRefusal>),
}

/// Why a member refuses its table in a scenario file's text.
#[derive(Debug)]
pub enum TableRefusal {
    /// Past a bound, counted before parsing: the table (`NAME.steps`) and the problem.
    Bound { table: &'static str, problem: String },
    /// The table is not what the member reads (its position is in the error's span).
    Toml(toml::de::Error),
}

/// Kinds are alike when they take the same kind of value (two tables: each read by its own
/// member's function).
impl PartialEq for Kind {
    fn eq(&self, other: &Kind) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

impl Eq for Kind {}

impl Kind {
    /// What a value of this kind is, in words (for an error).
    pub fn expected(&self) -> &'static str {
        match self {
            Kind::Count => "a whole number",
            Kind::Text => "a string",
            Kind::Switch => "true or false",
            Kind::Table(_) => "a table",
        }
    }

    /// Whether `value` (from a scenario file or a shard's settings) is of this kind.
    pub fn fits(&self, value: &toml::Value) -> bool {
        match (self, value) {
            (Kind::Count, toml::Value::Integer(n)) => *n >= 0,
            (Kind::Text, toml::Value::String(_))
            | (Kind::Switch, toml::Value::Boolean(_))
            | (Kind::Table(_), toml::Value::Table(_)) => true,
            _ => false,
        }
    }
}

/// The member options given, by TOML key, as given (a whole number, a string, a switch or a
/// table):
/// what flags and scenario files set besides the shared settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OptionValues(pub BTreeMap<String, toml::Value>);

impl OptionValues {
    /// The text given for `spec`.
    pub fn text(&self, spec: &OptionSpec) -> Option<&str> {
        self.0.get(spec.key).and_then(toml::Value::as_str)
    }

    /// The whole number given for `spec` (a negative one reads as none; kinds are checked
    /// before any member reads them).
    pub fn count(&self, spec: &OptionSpec) -> Option<u64> {
        self.0.get(spec.key).and_then(toml::Value::as_integer).and_then(|n| u64::try_from(n).ok())
    }

    /// Whether the switch `spec` is on.
    pub fn switch(&self, spec: &OptionSpec) -> bool {
        self.0.get(spec.key).and_then(toml::Value::as_bool).unwrap_or(false)
    }

    /// The table given for `spec`.
    pub fn table(&self, spec: &OptionSpec) -> Option<&toml::Value> {
        self.0.get(spec.key).filter(|value| value.is_table())
    }

    /// Whether `spec` was given at all.
    pub fn given(&self, spec: &OptionSpec) -> bool {
        self.0.contains_key(spec.key)
    }

    /// Only the values of `specs`, the rest left out (a member's own, for its settings).
    pub fn of(&self, specs: &[OptionSpec]) -> OptionValues {
        OptionValues(
            self.0
                .iter()
                .filter(|(key, _)| specs.iter().any(|spec| spec.key == key.as_str()))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: OptionSpec = OptionSpec {
        flag: "topics",
        key: "topics",
        kind: Kind::Count,
        value_name: "T",
        default: "1",
        bound: "1 to 1,000,000",
        help: "topics",
        scenarios: &[],
    };

    #[test]
    fn values_read_by_their_kind() {
        let mut values = OptionValues::default();
        assert_eq!(values.count(&SPEC), None);
        assert!(!values.given(&SPEC));
        values.0.insert("topics".into(), toml::Value::Integer(5));
        values.0.insert("other".into(), toml::Value::Boolean(true));
        assert_eq!(values.count(&SPEC), Some(5));
        assert_eq!(values.text(&SPEC), None);
        assert_eq!(values.of(&[SPEC]).0.len(), 1);
        assert!(Kind::Count.fits(&toml::Value::Integer(0)) && !Kind::Count.fits(&toml::Value::Integer(-1)));
        assert!(
            !Kind::Text.fits(&toml::Value::Integer(1)) && Kind::Switch.fits(&toml::Value::Boolean(false))
        );
    }
}

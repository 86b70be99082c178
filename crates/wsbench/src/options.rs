//! The options of a member (a scenario, a protocol, a transport), declared in the member's own
//! folder as [`OptionSpec`]s: the flag, the TOML key, the kind of value, the default and the
//! bound `--help` shows, the help text, and the scenarios it applies to. The values given
//! travel as [`OptionValues`] (flags and scenario files alike) until the member reads them
//! into its own typed settings once, before the run. Shared code collects the declarations
//! through the registries and never names one; this module imports nothing of the crate, so
//! every layer can use it. An option may also be a whole table of a scenario file (no flag):
//! its member reads it from the file's text itself, so that an error points at its line.
//! An option may also hold a secret (a password): given as it is or read from an environment
//! variable another flag names, it is then taken out of the values ([`Secrets`]), so that
//! what the values are written as (result files, a shard's settings) never holds it.

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
    /// Text that is a secret: `--NAME VALUE` (key `NAME`), or `--NAME-env VAR` (key
    /// `NAME-env`, the flag `env`) naming the environment variable it is read from when the
    /// run starts. Wherever the values are shown or written it is [`REDACTED`].
    Secret { env: &'static str },
}

/// Shown instead of a secret wherever one would be written or printed.
pub const REDACTED: &str = "<redacted>";

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
            Kind::Text | Kind::Secret { .. } => "a string",
            Kind::Switch => "true or false",
            Kind::Table(_) => "a table",
        }
    }

    /// Whether `value` (from a scenario file or a shard's settings) is of this kind.
    pub fn fits(&self, value: &toml::Value) -> bool {
        match (self, value) {
            (Kind::Count, toml::Value::Integer(n)) => *n >= 0,
            (Kind::Text | Kind::Secret { .. }, toml::Value::String(_))
            | (Kind::Switch, toml::Value::Boolean(_))
            | (Kind::Table(_), toml::Value::Table(_)) => true,
            _ => false,
        }
    }

    /// The flag (and key) naming the environment variable a secret is read from.
    pub fn env_flag(&self) -> Option<&'static str> {
        match self {
            Kind::Secret { env } => Some(env),
            _ => None,
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
                .filter(|(key, _)| {
                    specs
                        .iter()
                        .any(|spec| spec.key == key.as_str() || spec.kind.env_flag() == Some(key.as_str()))
                })
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Takes the secrets of `specs` out of these values: a secret given as it is is left
    /// here as [`REDACTED`], one given by `--NAME-env VAR` keeps the variable's name, and the
    /// secrets themselves are read (`env` looks a variable up) into what is returned. A
    /// variable unset or empty, or a secret given both ways, is refused naming the flags.
    pub fn take_secrets(
        &mut self,
        specs: &[OptionSpec],
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Secrets, SecretRefusal> {
        let mut secrets = Secrets::default();
        for spec in specs {
            let Some(env_flag) = spec.kind.env_flag() else { continue };
            let literal = self.0.get_mut(spec.key).and_then(|value| match value {
                toml::Value::String(text) => Some(std::mem::replace(text, REDACTED.to_owned())),
                _ => None,
            });
            let variable = self.0.get(env_flag).and_then(toml::Value::as_str);
            let secret = match (literal, variable) {
                (Some(_), Some(_)) => {
                    return Err(SecretRefusal {
                        flag: spec.flag,
                        problem: format!("--{} and --{env_flag} both given: give one", spec.flag),
                    });
                }
                (Some(literal), None) => literal,
                (None, Some(variable)) => match env(variable) {
                    Some(value) if !value.is_empty() => value,
                    unset_or_empty => {
                        let state = if unset_or_empty.is_some() { "is empty" } else { "is not set" };
                        return Err(SecretRefusal {
                            flag: env_flag,
                            problem: format!(
                                "the environment variable {variable} {state}: export it holding the \
                                 value of --{flag}, or give --{flag}",
                                flag = spec.flag
                            ),
                        });
                    }
                },
                (None, None) => continue,
            };
            secrets.0.insert(spec.key, secret);
        }
        Ok(secrets)
    }
}

/// A secret a member holds (a session's password): `Debug` shows it as [`REDACTED`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(REDACTED)
    }
}

/// Why a secret could not be read: the flag at fault and the problem (never the secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretRefusal {
    pub flag: &'static str,
    pub problem: String,
}

/// The secrets a member was given, by TOML key, read once before the run: what its
/// sessions send. `Debug` shows each as [`REDACTED`], and they are never serialized.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets(BTreeMap<&'static str, String>);

impl Secrets {
    /// The secret given for `spec`.
    pub fn get(&self, spec: &OptionSpec) -> Option<&str> {
        self.0.get(spec.key).map(String::as_str)
    }

    /// Sets the secret of `spec` (a template filled in, to check what a session would send).
    pub fn set(&mut self, spec: &OptionSpec, value: String) {
        self.0.insert(spec.key, value);
    }

    /// Secrets with these values, by key (for tests and for members that build options).
    pub fn of(secrets: impl IntoIterator<Item = (&'static str, String)>) -> Secrets {
        Secrets(secrets.into_iter().collect())
    }
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.0.keys().map(|key| (key, REDACTED))).finish()
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

    const PASSWORD: OptionSpec = OptionSpec {
        flag: "password",
        key: "password",
        kind: Kind::Secret { env: "password-env" },
        value_name: "PASSWORD",
        default: "",
        bound: "",
        help: "password",
        scenarios: &[],
    };

    fn given(key: &str, text: &str) -> OptionValues {
        OptionValues([(key.to_owned(), toml::Value::String(text.into()))].into_iter().collect())
    }

    #[test]
    fn a_secret_given_as_it_is_is_taken_out_and_left_redacted() {
        let mut values = given("password", "hunter2");
        let secrets = values.take_secrets(&[PASSWORD], |_| None).unwrap();
        assert_eq!(secrets.get(&PASSWORD), Some("hunter2"));
        assert_eq!(values.text(&PASSWORD), Some(REDACTED));
        assert_eq!(format!("{secrets:?}"), "{\"password\": \"<redacted>\"}");
        assert_eq!(values.of(&[PASSWORD]), values, "its -env key is one of its member's too");
    }

    #[test]
    fn a_secret_is_read_from_the_variable_its_env_flag_names() {
        let mut values = given("password-env", "MQTT_PASS");
        let env = |name: &str| (name == "MQTT_PASS").then(|| "s3cret".to_owned());
        let secrets = values.take_secrets(&[PASSWORD], env).unwrap();
        assert_eq!(secrets.get(&PASSWORD), Some("s3cret"));
        assert_eq!(values, given("password-env", "MQTT_PASS"), "the variable's name alone is kept");
        assert_eq!(values.of(&[PASSWORD]).0.len(), 1);
    }

    #[test]
    fn a_variable_unset_or_empty_and_a_secret_given_twice_are_refused_by_name() {
        let refusal = |mut values: OptionValues, env: Option<&str>| {
            values.take_secrets(&[PASSWORD], |_| env.map(str::to_owned)).unwrap_err()
        };
        let unset = refusal(given("password-env", "NOPE"), None);
        assert_eq!(unset.flag, "password-env");
        assert_eq!(
            unset.problem,
            "the environment variable NOPE is not set: export it holding the value of --password, or give --password"
        );
        let empty = refusal(given("password-env", "NOPE"), Some(""));
        assert!(empty.problem.starts_with("the environment variable NOPE is empty:"), "{}", empty.problem);
        let mut both = given("password", "hunter2");
        both.0.insert("password-env".into(), toml::Value::String("P".into()));
        let twice = refusal(both.clone(), Some("x"));
        assert_eq!(twice.problem, "--password and --password-env both given: give one");
        assert!(!format!("{twice:?}").contains("hunter2"));
    }
}

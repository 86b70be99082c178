//! Where the three registries meet the settings: every option a scenario, a protocol or a
//! transport declares in its own folder ([`OptionSpec`]) becomes a flag of `wsbench run`
//! (with its default and bound in `--help`) and a key of scenario files, and a value given is
//! checked against the members the run uses: an option of another member is a usage error
//! naming the member it belongs to. Nothing here names a member; it reads the registries.
//! A protocol's secret option ([`Kind::Secret`]) is also a `--NAME-env VAR` flag and key; it
//! is read when the settings are validated and kept out of everything written
//! ([`OptionValues::take_secrets`]), and a shard process gets it through its environment
//! ([`secrets_to_environment`]). The flags themselves are made in `flags.rs`; `--transport`
//! read as compare's list of transports in `transports.rs`.

mod flags;
mod transports;

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::{ConfigError, Members, RunConfig, RunSettings, ScenarioRules, invalid_setting};
use crate::engine::dial::{DIALS, Dial};
use crate::input_file::{InputFileError, InputKind};
use crate::options::{Kind, OptionSpec, OptionValues};
use crate::presets::PRESETS;
use crate::protocol::{PROTOCOLS, Protocol};
use crate::scenario::{self, Descriptor, SCENARIOS};

/// What declares an option.
#[derive(Debug, Clone, Copy)]
pub enum Owner {
    Scenario(&'static dyn Descriptor),
    Protocol(&'static dyn Protocol),
    Transport(&'static dyn Dial),
}

impl Owner {
    pub fn name(&self) -> &'static str {
        match self {
            Owner::Scenario(scenario) => scenario.name(),
            Owner::Protocol(protocol) => protocol.name(),
            Owner::Transport(dial) => dial.flag_name(),
        }
    }

    /// How a user picks this member, for an error: `the pubsub scenario`, `--protocol mqtt`.
    fn chosen_by(&self) -> String {
        match self {
            Owner::Scenario(scenario) => format!("the {} scenario", scenario.name()),
            Owner::Protocol(protocol) => format!("--protocol {}", protocol.name()),
            Owner::Transport(dial) => format!("--transport {}", dial.flag_name()),
        }
    }
}

/// Every member option that is a flag (a table of a scenario file is none), by TOML key.
fn flags() -> impl Iterator<Item = (&'static str, (&'static OptionSpec, Vec<Owner>))> {
    by_key().into_iter().filter(|(_, (spec, _))| !matches!(spec.kind, Kind::Table(_)))
}

/// Every option of every member, with its owner, in the registries' order (scenarios,
/// protocols, transports).
pub fn declared() -> Vec<(&'static OptionSpec, Owner)> {
    let scenarios = SCENARIOS.iter().flat_map(|s| s.options().iter().map(|o| (o, Owner::Scenario(*s))));
    let protocols = PROTOCOLS.iter().flat_map(|p| p.options().iter().map(|o| (o, Owner::Protocol(*p))));
    let transports = DIALS.iter().flat_map(|d| d.options().iter().map(|o| (o, Owner::Transport(*d))));
    scenarios.chain(protocols).chain(transports).collect()
}

/// The members that declare the option with TOML key `key`.
pub fn owners_of(key: &str) -> Vec<Owner> {
    declared().into_iter().filter(|(spec, _)| spec.key == key).map(|(_, owner)| owner).collect()
}

/// Every member option once, by TOML key: its declaration and its owners.
fn by_key() -> BTreeMap<&'static str, (&'static OptionSpec, Vec<Owner>)> {
    let mut options: BTreeMap<&str, (&OptionSpec, Vec<Owner>)> = BTreeMap::new();
    for (spec, owner) in declared() {
        options.entry(spec.key).or_insert((spec, Vec::new())).1.push(owner);
    }
    options
}

/// The kind of value of every member option, by TOML key (what a scenario file is read with);
/// a secret's `NAME-env` is text.
pub fn kinds() -> BTreeMap<&'static str, Kind> {
    let options = by_key();
    let env_flags =
        options.values().filter_map(|(spec, _)| spec.kind.env_flag()).map(|env| (env, Kind::Text));
    let mut kinds: BTreeMap<&'static str, Kind> = env_flags.collect();
    kinds.extend(options.into_iter().map(|(key, (spec, _))| (key, spec.kind)));
    kinds
}

/// The environment variable a shard process reads the secret of key `key` from.
fn shard_variable(key: &str) -> String {
    format!("WSBENCH_SECRET_{}", key.to_uppercase().replace('-', "_"))
}

/// Moves each secret given as it is in `options` into the environment a shard process is
/// started with: the value is replaced by `NAME-env = WSBENCH_SECRET_NAME`, and the variables
/// to set are returned, so that the secret is in neither the shard's arguments nor its
/// settings.
pub fn secrets_to_environment(options: &mut OptionValues) -> Vec<(String, String)> {
    let mut environment = Vec::new();
    for (key, (spec, _)) in by_key() {
        let Some(env_flag) = spec.kind.env_flag() else { continue };
        if let Some(toml::Value::String(secret)) = options.0.remove(key) {
            let variable = shard_variable(key);
            options.0.insert(env_flag.to_owned(), toml::Value::String(variable.clone()));
            environment.push((variable, secret));
        }
    }
    environment
}

/// A secret the flags give, as it is or by variable, replaces the scenario file's either way:
/// the settings merge key by key, and a file's `password-env` would otherwise meet the
/// flag's `password` (two ways of one secret, refused).
pub fn secrets_over(flags: &OptionValues, file: &mut OptionValues) {
    for (key, (spec, _)) in by_key() {
        let Some(env) = spec.kind.env_flag() else { continue };
        if flags.0.contains_key(key) || flags.0.contains_key(env) {
            file.0.remove(key);
            file.0.remove(env);
        }
    }
}

/// The flags whose value is a secret (`--password`), as typed (`--NAME`).
pub fn secret_flags() -> Vec<String> {
    by_key()
        .into_values()
        .filter(|(spec, _)| spec.kind.env_flag().is_some())
        .map(|(spec, _)| format!("--{}", spec.flag))
        .collect()
}

/// The declaration of the option of TOML key `key` (a secret's for its `NAME-env`), and its
/// owners.
fn declaration<'o>(
    options: &'o BTreeMap<&'static str, (&'static OptionSpec, Vec<Owner>)>,
    key: &str,
) -> Option<&'o (&'static OptionSpec, Vec<Owner>)> {
    options.get(key).or_else(|| options.values().find(|(spec, _)| spec.kind.env_flag() == Some(key)))
}

impl RunSettings {
    /// Applies defaults and checks every value, by the rules of the scenario the settings
    /// name (`echo` when none), with the protocol and the transport they name and the
    /// options each declares.
    pub fn validate(&self) -> Result<RunConfig, ConfigError> {
        let name = self.scenario.as_deref().unwrap_or(scenario::DEFAULT);
        let scenario = scenario::by_name(name).ok_or_else(|| {
            match PRESETS.iter().any(|(preset, _)| *preset == name) {
                true => ConfigError::NotAScenario {
                    word: name.to_owned(),
                    hint: format!(" but a preset: give --scenario {name}"),
                },
                false => scenario::unknown_scenario(name),
            }
        })?;
        let protocol = self.protocol()?;
        let transport = self.transport_chosen()?;
        check_applies(&self.options, scenario.name(), protocol.name(), transport)?;
        let mut protocol_options = self.options.of(protocol.options());
        let protocol_secrets = protocol_options
            .take_secrets(protocol.options(), |name| std::env::var(name).ok())
            .map_err(|refusal| invalid_setting(refusal.flag, refusal.problem))?;
        let members = Members {
            protocol: protocol.name(),
            protocol_options,
            protocol_secrets,
            transport: transport.spec(&self.options.of(transport.options()))?,
        };
        let all: Vec<&dyn ScenarioRules> = SCENARIOS.iter().map(|s| *s as &dyn ScenarioRules).collect();
        let mut config = self.validate_for(scenario, &all, members)?;
        scenario::check_thresholds(scenario, &config.thresholds)?;
        scenario::settle_protocol(scenario, &mut config)?;
        Ok(config)
    }

    /// `--protocol`: one the registry has (its default when none is given).
    fn protocol(&self) -> Result<&'static dyn Protocol, ConfigError> {
        let name = self.protocol.as_deref().unwrap_or(crate::protocol::DEFAULT);
        crate::protocol::by_name(name).ok_or_else(|| {
            let known = crate::protocol::names();
            invalid_setting(
                "protocol",
                format!(
                    "`{name}`{} is not a protocol wsbench speaks: use {}",
                    crate::config::suggest::did_you_mean(name, known.iter().copied()),
                    known.join(", ")
                ),
            )
        })
    }

    /// The registry's first transport, none of the others' options left (compare's rows
    /// over the default transport).
    pub fn without_transport(&mut self) {
        self.transport = None;
        for dial in &DIALS[1..] {
            for option in dial.options() {
                self.options.0.remove(option.key);
            }
        }
    }

    /// `--transport`, or a transport's switch (`--http2`); the registry's first when neither
    /// is given.
    pub fn transport_chosen(&self) -> Result<&'static dyn Dial, ConfigError> {
        let switched = DIALS.iter().copied().find(|dial| {
            dial.options().iter().any(|option| option.kind == Kind::Switch && self.options.switch(option))
        });
        let Some(name) = self.transport.as_deref() else { return Ok(switched.unwrap_or(DIALS[0])) };
        let named = crate::engine::dial::by_flag_name(name).ok_or_else(|| {
            let known: Vec<&str> = DIALS.iter().map(|dial| dial.flag_name()).collect();
            invalid_setting(
                "transport",
                format!("`{name}` is not a transport: use {}", scenario::or_list(&known)),
            )
        })?;
        match switched {
            Some(other) if other.name() != named.name() => Err(invalid_setting(
                "transport",
                format!(
                    "{name} and the switch of --transport {} contradict each other: give one",
                    other.flag_name()
                ),
            )),
            _ => Ok(named),
        }
    }

    /// The settings `--scenario NAME` stands for: the file NAME when there is one, else the
    /// built-in preset NAME (`scenarios/NAME.toml`), else the scenario NAME (`echo`, …); a
    /// recorded session (`.har`, `.jsonl`) is imported as a flow in memory.
    /// When none exists the error names both the file and the names it looked for.
    pub fn from_scenario(name: &Path) -> Result<RunSettings, ConfigError> {
        let recorded = matches!(name.extension().and_then(|e| e.to_str()), Some("har" | "jsonl"));
        if recorded && name.is_file() {
            // A recorded session runs as the flow `wsbench import` would write of it.
            let imported = crate::recording::import(name, None, 1.0, None)
                .map_err(|e| crate::config::invalid_setting("scenario", e.to_string()))?;
            return RunSettings::parse_toml(&imported.toml, name);
        }
        if name.is_file() {
            return RunSettings::from_file(name);
        }
        let word = name.to_string_lossy();
        if let Some((preset, text)) = PRESETS.iter().find(|(preset, _)| *preset == word) {
            return RunSettings::parse_toml(text, Path::new(&format!("scenarios/{preset}.toml")));
        }
        if scenario::by_name(&word).is_some() {
            return Ok(RunSettings { scenario: Some(word.into_owned()), ..RunSettings::default() });
        }
        match crate::input_file::read_text(name, InputKind::Scenario) {
            Ok(text) => RunSettings::parse_toml(&text, name),
            Err(too_big @ (InputFileError::TooBig { .. } | InputFileError::TooBigUnsized { .. })) => {
                Err(ConfigError::InputFile(too_big))
            }
            Err(InputFileError::Read { source, .. }) => Err(ConfigError::UnknownScenario {
                meant: crate::config::suggest::did_you_mean(
                    &word,
                    scenario::names().chain(PRESETS.iter().map(|(preset, _)| *preset)),
                ),
                name: word.into_owned(),
                known: scenario::names()
                    .chain(PRESETS.iter().map(|(preset, _)| *preset))
                    .collect::<Vec<_>>()
                    .join(", "),
                path: name.to_owned(),
                source,
            }),
        }
    }

    /// Reads a TOML scenario file (the same keys as the flags, kebab-case).
    pub fn from_file(path: &Path) -> Result<RunSettings, ConfigError> {
        RunSettings::parse_toml(&RunSettings::read_file(path)?, path)
    }

    /// Parses the TOML text of the scenario file `path`, every member's option a key of it;
    /// an error says where (line:column) and, for a mistyped key, which key was meant.
    pub fn parse_toml(text: &str, path: &Path) -> Result<RunSettings, ConfigError> {
        RunSettings::parse_toml_with(text, path, &kinds())
    }
}

/// Checks that each member option given applies to the members the run uses (its
/// `scenario`, `protocol` and `transport`, by name): one of another is refused naming
/// whose it is.
pub fn check_applies(
    given: &OptionValues,
    scenario: &str,
    protocol: &str,
    transport: &dyn Dial,
) -> Result<(), ConfigError> {
    let options = by_key();
    for key in given.0.keys() {
        let Some((spec, owners)) = declaration(&options, key) else {
            return Err(invalid_setting("scenario", format!("`{key}` is no option of wsbench run")));
        };
        let used = |owner: &Owner| match owner {
            Owner::Scenario(s) => s.name() == scenario,
            Owner::Protocol(p) => p.name() == protocol,
            Owner::Transport(d) => d.name() == transport.name(),
        };
        if !owners.iter().any(used) {
            let whose: Vec<String> = owners.iter().map(Owner::chosen_by).collect();
            let this_run = match owners[0] {
                Owner::Scenario(_) => String::new(),
                Owner::Protocol(_) => format!(" (this run speaks {protocol})"),
                Owner::Transport(_) => format!(" (this run uses {})", transport.flag_name()),
            };
            return Err(invalid_setting(
                spec.flag,
                format!("applies to {} only{this_run}", whose.join(" or ")),
            ));
        }
        if !spec.scenarios.is_empty() && !spec.scenarios.contains(&scenario) {
            return Err(invalid_setting(
                spec.flag,
                format!("applies to the {} scenario only", spec.scenarios.join(" or ")),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Command;

    use super::*;

    #[test]
    fn an_option_declared_twice_is_declared_alike() {
        for (spec, _) in declared() {
            for (other, _) in declared() {
                if spec.key == other.key {
                    assert_eq!((spec.flag, spec.kind), (other.flag, other.kind), "{}", spec.key);
                }
            }
            assert!(!spec.help.is_empty(), "--{} has no help", spec.flag);
        }
    }

    fn settings(args: &[&str]) -> Result<RunSettings, clap::Error> {
        use clap::FromArgMatches;
        let command = <RunSettings as clap::Args>::augment_args(Command::new("run").no_binary_name(true));
        RunSettings::from_arg_matches(&command.try_get_matches_from(args)?)
    }

    fn refusal(args: &[&str]) -> String {
        let settings = settings(args).unwrap();
        RunSettings { target: Some("ws://127.0.0.1:1/".into()), ..settings }
            .validate()
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn the_transport_is_named_by_flag_or_by_its_switch() {
        let transport = |args: &[&str]| settings(args).unwrap().validate().map(|c| c.load.transport);
        let h2 = transport(&["--transport", "h2"]).unwrap();
        assert_eq!((h2.name, h2.streams_per_connection, h2.default), (DIALS[1].name(), 100, false));
        assert_eq!(transport(&["--http2"]).unwrap(), h2);
        assert_eq!(transport(&["--transport", "http2", "--http2"]).unwrap(), h2);
        let h1 = transport(&[]).unwrap();
        assert_eq!((h1.name, h1.default), (DIALS[0].name(), true));
        assert_eq!(transport(&["--transport", "h1"]).unwrap(), h1);
        let h3 = transport(&["--transport", "h3"]).unwrap();
        assert_eq!((h3.name, h3.streams_per_connection, h3.default), (DIALS[2].name(), 100, false));
        let error = transport(&["--transport", "h4"]).unwrap_err().to_string();
        assert_eq!(error, "--transport: `h4` is not a transport: use h1, h2 or h3");
        let error = transport(&["--transport", "h1", "--http2"]).unwrap_err().to_string();
        assert!(error.starts_with("--transport: h1 and the switch of --transport h2 contradict"), "{error}");
    }

    #[test]
    fn an_option_of_a_member_not_in_the_run_is_refused_naming_whose_it_is() {
        let error = refusal(&["--protocol", "stomp", "--qos", "1"]);
        assert_eq!(error, "--qos: applies to --protocol mqtt only (this run speaks stomp)");
        let error = refusal(&["--topics", "3"]);
        assert_eq!(error, "--topics: applies to the pubsub scenario only");
        let error = refusal(&["--streams-per-connection", "3", "--transport", "h1"]);
        assert_eq!(
            error,
            "--streams-per-connection: applies to --transport h2 or --transport h3 only (this run uses h1)"
        );
        let error = refusal(&["--protocol", "mqtt", "--topic", "a/{topic}"]);
        assert_eq!(error, "--topic: applies to the pubsub scenario only");
        assert!(settings(&["--qos", "x"]).is_err(), "a whole number is parsed as one");
    }

    #[test]
    fn scenario_files_take_member_options_by_key_and_check_their_kind() {
        let path = Path::new("s.toml");
        let parsed = RunSettings::parse_toml("protocol = \"mqtt\"\nqos = 1\nhttp2 = true\n", path).unwrap();
        assert_eq!(parsed.options.count(&crate::protocol::mqtt::QOS), Some(1));
        let error = RunSettings::parse_toml("\nqos = \"1\"\n", path).unwrap_err().to_string();
        assert_eq!(
            error,
            "scenario file s.toml:2:1: key `qos`: invalid type: string \"1\", expected a whole number"
        );
        let error = RunSettings::parse_toml("subscriber = 4\n", path).unwrap_err().to_string();
        assert_eq!(error, "scenario file s.toml:1:1: unknown key `subscriber`: did you mean `subscribers`?");
    }

    #[test]
    fn a_table_option_is_a_scenario_file_key_and_no_flag() {
        let command = <OptionValues as clap::Args>::augment_args(Command::new("run"));
        let tables: Vec<_> =
            by_key().into_values().filter(|(spec, _)| matches!(spec.kind, Kind::Table(_))).collect();
        assert!(!tables.is_empty(), "no member declares a table");
        for (spec, _) in tables {
            assert!(command.get_arguments().all(|arg| arg.get_long() != Some(spec.flag)), "--{}", spec.flag);
        }
        let path = Path::new("s.toml");
        let text = "target = \"ws://127.0.0.1:1/\"\n[[flow.steps]]\nsend = \"x\"\n";
        let parsed = RunSettings::parse_toml(&format!("scenario = \"flow\"\n{text}"), path).unwrap();
        parsed.validate().unwrap();
        let echo = RunSettings::parse_toml(&format!("scenario = \"echo\"\n{text}"), path).unwrap();
        assert_eq!(echo.validate().unwrap_err().to_string(), "--flow: applies to the flow scenario only");
    }

    #[test]
    fn a_secret_is_a_flag_and_an_env_flag_of_one_protocol_declared_by_its_name() {
        for (spec, owner) in declared() {
            if let Some(env) = spec.kind.env_flag() {
                assert_eq!(env, format!("{}-env", spec.flag), "--{}", spec.flag);
                // Scenario and transport options are not taken out of their values.
                assert!(
                    matches!(owner, Owner::Protocol(_)),
                    "--{} is a secret of {}",
                    spec.flag,
                    owner.name()
                );
            }
        }
        let error = refusal(&["--protocol", "stomp", "--password-env", "P"]);
        assert_eq!(error, "--password: applies to --protocol mqtt only (this run speaks stomp)");
        assert!(settings(&["--password", "a", "--password-env", "P"]).is_err(), "one or the other");
        let path = Path::new("s.toml");
        let parsed = RunSettings::parse_toml("password-env = \"P\"\n", path).unwrap();
        assert_eq!(parsed.options, settings(&["--password-env", "P"]).unwrap().options);
        let error = RunSettings::parse_toml("password = 12345\n", path).unwrap_err().to_string();
        assert_eq!(
            error,
            "scenario file s.toml:1:1: key `password`: invalid type: integer, expected a string"
        );
    }

    fn mqtt_with_password(more: &[&str]) -> RunSettings {
        let args = [&["--protocol", "mqtt", "--username", "u", "--password", "hunter2"], more].concat();
        RunSettings { target: Some("ws://127.0.0.1:1/".into()), ..settings(&args).unwrap() }
    }

    #[test]
    fn a_secret_is_read_at_validation_and_written_nowhere() {
        let config = mqtt_with_password(&[]).validate().unwrap();
        let options = &config.load.protocol_options;
        assert_eq!(options.secrets.get(&crate::protocol::mqtt::PASSWORD), Some("hunter2"));
        let written = serde_json::to_value(&config).unwrap();
        assert_eq!(written["protocol_options"]["password"], "<redacted>");
        assert!(!written.to_string().contains("hunter2") && !format!("{config:?}").contains("hunter2"));
        let mut unset = mqtt_with_password(&[]);
        unset.options.0.remove("password");
        unset.options.0.insert("password-env".into(), toml::Value::String("WSBENCH_TEST_UNSET".into()));
        assert_eq!(
            unset.validate().unwrap_err().to_string(),
            "--password-env: the environment variable WSBENCH_TEST_UNSET is not set: export it holding \
             the value of --password, or give --password"
        );
    }

    #[test]
    fn a_shard_gets_a_secret_through_its_environment_not_its_settings() {
        let mut shard = mqtt_with_password(&[]);
        let environment = secrets_to_environment(&mut shard.options);
        assert_eq!(environment, [("WSBENCH_SECRET_PASSWORD".to_owned(), "hunter2".to_owned())]);
        let handed = wsbench_supervisor::encode_settings(&shard).unwrap();
        assert!(!String::from_utf8_lossy(&handed).contains("hunter2"));
        let mut given = shard.options.of(crate::protocol::mqtt::Mqtt.options());
        let secrets = given
            .take_secrets(crate::protocol::mqtt::Mqtt.options(), |name| {
                environment.iter().find(|(variable, _)| variable == name).map(|(_, value)| value.clone())
            })
            .unwrap();
        assert_eq!(secrets.get(&crate::protocol::mqtt::PASSWORD), Some("hunter2"));
        let mut by_variable = mqtt_with_password(&[]);
        by_variable.options.0.remove("password");
        by_variable.options.0.insert("password-env".into(), toml::Value::String("MY_PASS".into()));
        assert!(secrets_to_environment(&mut by_variable.options).is_empty(), "the child inherits MY_PASS");
    }

    #[test]
    fn a_secret_flag_replaces_the_scenario_files_either_way() {
        let path = Path::new("s.toml");
        let mut file = RunSettings::parse_toml("password-env = \"P\"\nqos = 1\n", path).unwrap();
        let flags = settings(&["--password", "hunter2"]).unwrap();
        secrets_over(&flags.options, &mut file.options);
        let merged = flags.over(file).unwrap();
        assert_eq!(merged.options.0.get("password"), Some(&toml::Value::String("hunter2".into())));
        assert!(!merged.options.0.contains_key("password-env"));
        assert_eq!(merged.options.0.get("qos"), Some(&toml::Value::Integer(1)), "the rest is the file's");
    }
}

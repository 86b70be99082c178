//! The scenario presets of the repository's `scenarios/` folder, built into the binary so
//! `--scenario uws-throughput` works from any folder, and the one place that turns a
//! `--scenario` word into settings: a file, a preset, or a scenario name.

use std::path::Path;

use super::error::ConfigError;
use super::settings::RunSettings;

/// Each preset's name (its file name without `.toml`) and its text.
pub const PRESETS: &[(&str, &str)] = &[
    ("includeos-25k", include_str!("../../../../scenarios/includeos-25k.toml")),
    ("jsonrpc-flow", include_str!("../../../../scenarios/jsonrpc-flow.toml")),
    ("graphql-subscription-flow", include_str!("../../../../scenarios/graphql-subscription-flow.toml")),
    ("uws-huge", include_str!("../../../../scenarios/uws-huge.toml")),
    ("uws-scalability", include_str!("../../../../scenarios/uws-scalability.toml")),
    ("uws-throughput", include_str!("../../../../scenarios/uws-throughput.toml")),
];

/// The scenarios of `wsbench run`, also accepted by `--scenario`.
const SCENARIO_NAMES: [&str; 5] = ["echo", "throughput", "scalability", "c10k", "churn"];

impl RunSettings {
    /// The settings `--scenario NAME` stands for: the file NAME when there is one, else the
    /// built-in preset NAME (`scenarios/NAME.toml`), else the scenario NAME (`echo`, …).
    /// When none exists the error names both the file and the names it looked for.
    pub fn from_scenario(name: &Path) -> Result<RunSettings, ConfigError> {
        if name.is_file() {
            return RunSettings::from_file(name);
        }
        let word = name.to_string_lossy();
        if let Some((preset, text)) = PRESETS.iter().find(|(preset, _)| *preset == word) {
            return RunSettings::parse_toml(text, Path::new(&format!("scenarios/{preset}.toml")));
        }
        if SCENARIO_NAMES.contains(&word.as_ref()) {
            return Ok(RunSettings { scenario: Some(word.into_owned()), ..RunSettings::default() });
        }
        match std::fs::read_to_string(name) {
            Ok(text) => RunSettings::parse_toml(&text, name),
            Err(source) => {
                let known = SCENARIO_NAMES.iter().chain(PRESETS.iter().map(|(preset, _)| preset));
                Err(ConfigError::UnknownScenario {
                    name: word.into_owned(),
                    known: known.copied().collect::<Vec<_>>().join(", "),
                    path: name.to_owned(),
                    source,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_validates_and_names_resolve() {
        for (name, _) in PRESETS {
            let settings = RunSettings::from_scenario(Path::new(name)).unwrap();
            assert!(settings.scenario.is_some(), "{name}");
        }
        let c10k = RunSettings::from_scenario(Path::new("c10k")).unwrap();
        assert_eq!(c10k.scenario.as_deref(), Some("c10k"));
        let error = RunSettings::from_scenario(Path::new("no-such-scenario")).unwrap_err();
        let message = crate::causes::with_causes(&error);
        assert!(
            message.starts_with("--scenario no-such-scenario: not a built-in scenario (echo, "),
            "{message}"
        );
        assert_eq!(message.matches("no-such-scenario").count(), 2, "{message}");
        assert_eq!(message.matches("No such file").count(), 1, "{message}");
    }

    #[test]
    fn every_file_of_the_scenarios_folder_is_a_preset() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            let (_, text) = PRESETS.iter().find(|(name, _)| *name == stem).expect("listed in PRESETS");
            assert_eq!(*text, std::fs::read_to_string(&path).unwrap());
        }
    }
}

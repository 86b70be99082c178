//! The scenario presets of the repository's `scenarios/` folder, built into the binary so
//! `--scenario uws-throughput` works from any folder (`RunSettings::from_scenario`, beside
//! the scenario registry, turns a `--scenario` word into settings: a file, a preset, or a
//! scenario name).

/// Each preset's name (its file name without `.toml`) and its text.
pub const PRESETS: &[(&str, &str)] = &[
    ("includeos-25k", include_str!("../../../scenarios/includeos-25k.toml")),
    ("jsonrpc-flow", include_str!("../../../scenarios/jsonrpc-flow.toml")),
    ("graphql-subscription-flow", include_str!("../../../scenarios/graphql-subscription-flow.toml")),
    ("scale-40k", include_str!("../../../scenarios/scale-40k.toml")),
    ("scale-1m", include_str!("../../../scenarios/scale-1m.toml")),
    ("uws-huge", include_str!("../../../scenarios/uws-huge.toml")),
    ("uws-scalability", include_str!("../../../scenarios/uws-scalability.toml")),
    ("uws-throughput", include_str!("../../../scenarios/uws-throughput.toml")),
];

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::RunSettings;

    #[test]
    fn every_preset_validates_and_names_resolve() {
        for (name, _) in PRESETS {
            let settings = RunSettings::from_scenario(Path::new(name)).unwrap();
            assert!(settings.scenario.is_some(), "{name}");
        }
        for name in crate::scenario::names() {
            let settings = RunSettings::from_scenario(Path::new(name)).unwrap();
            assert_eq!(settings.scenario.as_deref(), Some(name), "every scenario name works as --scenario");
        }
        let error = RunSettings::from_scenario(Path::new("no-such-scenario")).unwrap_err();
        let message = crate::causes::with_causes(&error);
        assert!(
            message.starts_with("--scenario no-such-scenario: not a built-in scenario or preset (echo, "),
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

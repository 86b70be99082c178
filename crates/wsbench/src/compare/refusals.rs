//! The flags of `wsbench run` that `compare` takes but has no use for (each of its runs is
//! one server's, started by the comparison, with its result file in `--out`), refused with
//! what to do instead before any server starts; `compare --help` leaves them out.

use crate::config::{ConfigError, RunSettings};

/// The flags of `wsbench run` that a comparison takes but has no use for, refused before
/// any server starts: each of its runs is one server's, started by the comparison, with its
/// result file in `--out`. Taken silently, they did nothing (`--find-max-rate`, `--json`)
/// or kept only the last run's (`--stream`).
pub fn refuse_what_does_not_apply(settings: &RunSettings) -> Result<(), ConfigError> {
    match refusals(settings).into_iter().find(|(given, ..)| *given) {
        Some((_, setting, what_to_do)) => {
            Err(crate::config::invalid_setting(setting, format!("does not apply to compare: {what_to_do}")))
        }
        None => Ok(()),
    }
}

/// The settings of `wsbench run` that compare refuses (`compare --help` does not list them).
pub const REFUSED_SETTINGS: [&str; 9] = [
    "find-max-rate",
    "json",
    "print-result",
    "hlog",
    "stream",
    "metrics-addr",
    "shard",
    "start-at",
    "server-pid",
];

/// Each refused setting: whether `settings` give it, its name, and what to do instead.
fn refusals(settings: &RunSettings) -> [(bool, &'static str, &'static str); REFUSED_SETTINGS.len()] {
    const ONE_RUN: &str = "follows one run, and compare makes one per server and repeat: watch its progress \
                           lines, or give each server its own `wsbench run`";
    [
        (
            settings.find_max_rate,
            "find-max-rate",
            "compare measures every server at the same load: search one server with `wsbench run URL \
             --find-max-rate`",
        ),
        (
            settings.json.is_some(),
            "json",
            "compare writes a result file per server and repeat: give --out DIR",
        ),
        (
            settings.print_result,
            "print-result",
            "the result files are in --out DIR; compare prints its table",
        ),
        (
            settings.hlog.is_some(),
            "hlog",
            "give --out DIR: each run's result file there holds its histograms",
        ),
        (settings.stream.is_some(), "stream", ONE_RUN),
        (settings.metrics_addr.is_some(), "metrics-addr", ONE_RUN),
        (settings.shard.is_some(), "shard", "compare splits each run itself: give --processes N"),
        (settings.start_at.is_some(), "start-at", "compare starts each run once its server is up"),
        (
            settings.server_pid.is_some(),
            "server-pid",
            "compare starts each server and samples the process it started",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refused_settings_listed_are_the_ones_refused() {
        let named: Vec<&str> = refusals(&RunSettings::default()).iter().map(|(_, name, _)| *name).collect();
        assert_eq!(named, REFUSED_SETTINGS);
        assert!(refusals(&RunSettings::default()).iter().all(|(given, ..)| !given));
    }
}

//! Whether the runs of a diff can be compared at all: a difference in the scenario, its
//! settings, the wsbench that measured, the machine or the transport would be taken for a
//! difference of the server, and a client-bound run measured the client. Each finding is one
//! sentence naming the two files; `diff` refuses on any unless given `--force`.

use std::path::Path;

use crate::result::RunResult;

/// Settings that differ between runs of the same comparison without changing what is
/// measured: where outputs go, where the target is, when the run started, which process
/// was probed.
const IGNORED_SETTINGS: &[&str] = &[
    "json",
    "hlog",
    "stream",
    "metrics_addr",
    "html",
    "dashboard",
    "target",
    "server_pid",
    "start_at_unix_ms",
];

/// Every reason the runs cannot be compared, comparing each run with the first base run.
pub fn mismatches(runs: &[(&Path, &RunResult)]) -> Vec<String> {
    let Some(&(first_path, first)) = runs.first() else { return Vec::new() };
    let mut found = Vec::new();
    for &(path, run) in runs {
        if run.client.bound {
            let why = run.client.bound_reason.as_deref().unwrap_or("the client was saturated");
            found.push(format!(
                "{} was client-bound ({why}): it measured the client, not the server",
                path.display()
            ));
        }
        if run.interrupted {
            found.push(format!("{} is of a run cut short", path.display()));
        }
        let differ = |what: &str, a: &str, b: &str| {
            format!("{} and {} differ in {what}: {a} vs {b}", first_path.display(), path.display())
        };
        if run.scenario != first.scenario {
            found.push(differ("scenario", &first.scenario, &run.scenario));
        }
        if run.wsbench_version != first.wsbench_version {
            found.push(differ("wsbench version", &first.wsbench_version, &run.wsbench_version));
        }
        let machine = |r: &RunResult| {
            let m = &r.machine;
            format!("{} ({} cores, kernel {}, host {})", m.cpu_model, m.cores, m.kernel, m.hostname)
        };
        if machine(run) != machine(first) {
            found.push(differ("machine", &machine(first), &machine(run)));
        }
        if run.summary.transport.name != first.summary.transport.name {
            found.push(differ("transport", &first.summary.transport.name, &run.summary.transport.name));
        }
        if let Some(settings) = settings_difference(&first.config, &run.config) {
            found.push(differ("settings", &settings.0, &settings.1));
        }
    }
    found.dedup();
    found
}

/// The first setting (by name) whose values differ, as `name = value` on each side.
fn settings_difference(a: &serde_json::Value, b: &serde_json::Value) -> Option<(String, String)> {
    let empty = serde_json::Map::new();
    let (a, b) = (a.as_object().unwrap_or(&empty), b.as_object().unwrap_or(&empty));
    let mut names: Vec<&String> = a.keys().chain(b.keys()).collect();
    names.sort();
    names.dedup();
    names.into_iter().filter(|name| !IGNORED_SETTINGS.contains(&name.as_str())).find_map(|name| {
        let (x, y) = (a.get(name), b.get(name));
        let shown = |v: Option<&serde_json::Value>| {
            format!("{name} = {}", v.map_or("(unset)".into(), ToString::to_string))
        };
        (x != y).then(|| (shown(x), shown(y)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    fn run() -> RunResult {
        RunResult::from_outcome(&fixture::closed_loop())
    }

    #[test]
    fn runs_that_differ_only_in_outputs_and_target_compare() {
        let (a, mut b) = (run(), run());
        b.config["json"] = "elsewhere.json".into();
        b.config["target"] = "ws://127.0.0.1:9/".into();
        assert_eq!(mismatches(&[(Path::new("a"), &a), (Path::new("b"), &b)]), Vec::<String>::new());
    }

    #[test]
    fn each_difference_is_named_with_both_files() {
        let (a, mut b) = (run(), run());
        b.config["connections"] = 999.into();
        b.wsbench_version = "9.9.9".into();
        b.machine.cores = 64;
        b.client.bound = true;
        let found = mismatches(&[(Path::new("a.json"), &a), (Path::new("b.json"), &b)]);
        let joined = found.join("\n");
        assert_eq!(found.len(), 4, "{joined}");
        assert!(joined.contains("b.json was client-bound"), "{joined}");
        assert!(joined.contains("a.json and b.json differ in wsbench version"), "{joined}");
        assert!(joined.contains("differ in machine"), "{joined}");
        assert!(joined.contains("differ in settings: connections = "), "{joined}");
        assert!(joined.contains("vs connections = 999"), "{joined}");
    }
}

//! The rtt and search files are contracts like the result file: what `wsbench rtt --json`
//! and `wsbench run --find-max-rate --json` write must validate against
//! `schema/rtt.schema.json` and `schema/search.schema.json`, the schemas must reject files
//! missing what scripts rely on, and `wsbench report FILE` must read each kind back and
//! render it as the command that wrote it did.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use support::wsbench_bin;
use wsbench::config::Slo;
use wsbench::find_rate::search;
use wsbench::fixture;
use wsbench::result::RunResult;
use wsbench::result::search::Step;

fn schema(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema").join(name);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Every validation error of `instance` against `schema/NAME`, one per line.
fn errors(name: &str, instance: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(&schema(name)).expect("the schema is a valid JSON Schema");
    validator.iter_errors(instance).map(|e| format!("{}: {e}", e.instance_path)).collect()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wsbench-output-schemas-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn wsbench(args: &[&str]) -> Output {
    Command::new(wsbench_bin()).args(args).output().expect("run wsbench")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// `json` validates against `schema/NAME`, and no longer does without any of `required`
/// (each a list of keys).
fn assert_contract(name: &str, json: &Value, required: &[&[&str]]) {
    let problems = errors(name, json);
    assert!(problems.is_empty(), "the file does not validate against {name}:\n{}", problems.join("\n"));
    for path in required {
        let mut without = json.clone();
        let (last, parents) = path.split_last().unwrap();
        let parent = parents.iter().fold(&mut without, |value, key| &mut value[*key]);
        assert!(parent.as_object_mut().unwrap().remove(*last).is_some(), "{path:?} is not in the file");
        assert!(!errors(name, &without).is_empty(), "{name} accepts a file without {}", path.join("."));
    }
}

/// A search judged by the real objective on fixture runs, written as `--json` writes it.
fn written_search(dir: &Path) -> (PathBuf, wsbench::result::search::Search) {
    let slo: Slo = "p99<1h,p99.9<2h".parse().unwrap();
    let run = RunResult::from_outcome(&fixture::closed_loop());
    let troubled = RunResult::from_outcome(&fixture::open_loop_troubled());
    let capacity = run.summary.exchanges_per_sec;
    let found = search(slo.clone(), capacity / 4.0, |rate| {
        let measured = if rate <= capacity { &run } else { &troubled };
        Ok::<_, ()>((Step::judge(rate, measured, &slo), false))
    })
    .unwrap();
    let path = dir.join("search.json");
    wsbench::result::search::write_search_json(&found, &path).unwrap();
    (path, found)
}

#[test]
fn schemas_declare_draft_2020_12_an_id_a_kind_and_version_1() {
    for (name, kind) in [("rtt.schema.json", "wsbench-rtt"), ("search.schema.json", "wsbench-search")] {
        let schema = schema(name);
        assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema", "{name}");
        assert!(schema["$id"].as_str().is_some_and(|id| id.ends_with(name)), "{name}");
        assert_eq!(schema["properties"]["schema_version"]["const"], 1, "{name}");
        assert_eq!(schema["properties"]["kind"]["const"], kind, "{name}");
    }
}

#[test]
fn a_real_rtt_file_validates_and_reports_as_the_rtt_table() {
    let dir = temp_dir("rtt");
    let path = dir.join("rtt.json");
    let output = wsbench(&["rtt", "--repeats", "2", "--iterations", "50", "--json", path.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let json = read_json(&path);
    let required: &[&[&str]] = &[
        &["kind"],
        &["schema_version"],
        &["machine", "cpu_model"],
        &["config", "repeats"],
        &["protocols", "tcp", "mean_us"],
        &["protocols", "wss", "ratio_to_tcp"],
    ];
    assert_contract("rtt.schema.json", &json, required);
    let mut other_kind = json.clone();
    other_kind["kind"] = "wsbench-search".into();
    assert!(!errors("rtt.schema.json", &other_kind).is_empty());

    // `wsbench report` renders the file as `wsbench rtt` printed it, byte for byte.
    let report = wsbench(&["report", path.to_str().unwrap()]);
    assert!(report.status.success(), "{}", text(&report.stderr));
    assert_eq!(text(&report.stdout), text(&output.stdout));
    // `--format json` gives the file back as it was written, protocols in table order.
    let passed = wsbench(&["report", "--format", "json", path.to_str().unwrap()]);
    assert!(passed.status.success(), "{}", text(&passed.stderr));
    assert_eq!(text(&passed.stdout), std::fs::read_to_string(&path).unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_written_search_file_validates_and_reports_as_the_search_table() {
    let dir = temp_dir("search");
    let (path, found) = written_search(&dir);
    assert!(found.steps.len() > 2 && found.max_rate_per_sec.is_some(), "{found:?}");
    let json = read_json(&path);
    assert_eq!(json["kind"], "wsbench-search");
    let required: &[&[&str]] = &[
        &["kind"],
        &["schema_version"],
        &["slo", "text"],
        &["steps"],
        &["max_rate_per_sec"],
        &["interrupted"],
    ];
    assert_contract("search.schema.json", &json, required);
    let mut step = json.clone();
    step["steps"][0].as_object_mut().unwrap().remove("held");
    assert!(!errors("search.schema.json", &step).is_empty());

    let report = wsbench(&["report", path.to_str().unwrap()]);
    assert!(report.status.success(), "{}", text(&report.stderr));
    assert_eq!(text(&report.stdout), wsbench::report::render_search(&found));
    let passed = wsbench(&["report", "--format", "json", path.to_str().unwrap()]);
    assert_eq!(serde_json::from_slice::<Value>(&passed.stdout).unwrap(), json);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_refuses_a_mix_of_kinds_and_tables_of_non_results_in_one_line() {
    let dir = temp_dir("mixed");
    let (search_path, _) = written_search(&dir);
    let result_path = dir.join("run.json");
    RunResult::from_outcome(&fixture::closed_loop()).write_json(&result_path).unwrap();
    let (search_arg, result_arg) = (search_path.to_str().unwrap(), result_path.to_str().unwrap());

    let mixed = wsbench(&["report", result_arg, search_arg]);
    assert_eq!(mixed.status.code(), Some(2), "a usage error");
    let message = text(&mixed.stderr);
    assert_eq!(
        message,
        format!(
            "wsbench: cannot report {result_arg} (a result) together with {search_arg} (a search): give \
             files of one kind\n"
        )
    );
    let csv = wsbench(&["report", "--format", "csv", search_arg]);
    assert_eq!(csv.status.code(), Some(2), "a usage error");
    assert_eq!(
        text(&csv.stderr),
        format!(
            "wsbench: {search_arg} is a search file: --format csv is for result files; use --format text or json\n"
        )
    );
    // Two of one kind are fine, each under its heading.
    let two = wsbench(&["report", search_arg, search_arg]);
    assert!(two.status.success(), "{}", text(&two.stderr));
    assert_eq!(text(&two.stdout).matches(&format!("==> {search_arg} <==\n")).count(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

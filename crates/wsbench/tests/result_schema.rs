//! The result file is a contract with users' scripts: every file wsbench writes must validate
//! against `schema/result.schema.json`, and the schema must actually reject files missing the
//! fields scripts rely on.

use std::path::{Path, PathBuf};

use serde_json::Value;
use wsbench::fixture;
use wsbench::result::RunResult;

fn schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema/result.schema.json");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&schema()).expect("the schema is a valid JSON Schema")
}

/// Every validation error, one per line, with where it is.
fn errors(instance: &Value) -> Vec<String> {
    validator().iter_errors(instance).map(|e| format!("{}: {e}", e.instance_path)).collect()
}

fn temp_file(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wsbench-schema-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The file as `wsbench run` would write it, parsed back as plain JSON.
fn written(name: &str, result: &RunResult) -> Value {
    let path = temp_file(name);
    result.write_json(&path).unwrap();
    let value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    value
}

#[test]
fn schema_declares_draft_2020_12_with_an_id_and_the_versions_it_describes() {
    let schema = schema();
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert!(schema["$id"].as_str().is_some_and(|id| id.ends_with("result.schema.json")));
    let versions = schema["properties"]["schema_version"]["enum"].as_array().unwrap();
    assert_eq!(versions.last(), Some(&Value::from(wsbench::result::SCHEMA_VERSION)));
}

#[test]
fn written_result_files_validate_against_the_schema() {
    for (name, outcome) in fixture::all() {
        let json = written(&format!("{name}.json"), &RunResult::from_outcome(&outcome));
        let errors = errors(&json);
        assert!(errors.is_empty(), "{name} does not validate:\n{}", errors.join("\n"));
    }
}

#[test]
fn run_id_and_judged_thresholds_validate_and_a_bad_threshold_entry_does_not() {
    let mut result = RunResult::from_outcome(&fixture::closed_loop());
    result.run_id = Some("18f-2a".into());
    result.summary.thresholds = vec![
        wsbench::result::ThresholdOutcome { expression: "p99<10ms".into(), value: Some(900.0), passed: true },
        wsbench::result::ThresholdOutcome { expression: "p99<1us".into(), value: None, passed: false },
    ];
    let mut json = written("thresholds.json", &result);
    assert_eq!(json["summary"]["thresholds"][1]["value"], Value::Null);
    assert_eq!(json["run_id"], "18f-2a");
    assert!(errors(&json).is_empty(), "{:?}", errors(&json));
    json["summary"]["thresholds"][0].as_object_mut().unwrap().remove("passed");
    assert!(errors(&json).iter().any(|e| e.contains("passed")), "{:?}", errors(&json));
    // Files without either (older wsbench, or no --threshold) still read back.
    let mut old = written("old.json", &RunResult::from_outcome(&fixture::closed_loop()));
    assert!(old.get("run_id").is_none() && old["summary"].get("thresholds").is_none());
    old["summary"]["thresholds"] = serde_json::json!([]);
    let back = RunResult::from_json_bytes(Path::new("old.json"), old.to_string().as_bytes()).unwrap();
    assert!(back.run_id.is_none() && back.summary.thresholds.is_empty());
}

#[test]
fn missing_echoes_per_sec_fails_validation() {
    let mut json = written("no-eps.json", &RunResult::from_outcome(&fixture::closed_loop()));
    json["summary"].as_object_mut().unwrap().remove("echoes_per_sec");
    let errors = errors(&json);
    assert!(errors.iter().any(|e| e.contains("echoes_per_sec")), "{errors:?}");
}

#[test]
fn every_documented_field_is_required() {
    let base = written("required.json", &RunResult::from_outcome(&fixture::open_loop_troubled()));
    let required: &[&[&str]] = &[
        &["schema_version"],
        &["wsbench_version"],
        &["scenario"],
        &["target", "url"],
        &["target", "builtin"],
        &["config"],
        &["machine"],
        &["started_at_unix_ms"],
        &["elapsed_s"],
        &["measured_s"],
        &["interrupted"],
        &["summary", "latency_us", "p9999"],
        &["summary", "latency_uncorrected_us", "p50"],
        &["summary", "connect_us", "p99"],
        &["summary", "send_lag_us", "max"],
        &["summary", "connections", "failed"],
        &["summary", "disconnections"],
        &["summary", "errors"],
        &["summary", "messages", "unanswered"],
        &["summary", "bytes", "received"],
        &["summary", "littles_law", "ratio"],
        &["server", "rss_peak_bytes"],
        &["server", "cpu_seconds"],
        &["server", "connections_per_mb"],
        &["server", "echoes_per_cpu_second"],
        &["client", "bound"],
        &["client", "bound_reason"],
        &["client", "workers"],
        &["timeline"],
        &["histograms", "latency"],
        &["histograms", "send_lag"],
    ];
    for path in required {
        let mut json = base.clone();
        let (last, parents) = path.split_last().unwrap();
        let parent = parents.iter().fold(&mut json, |value, key| &mut value[*key]);
        assert!(parent.as_object_mut().unwrap().remove(*last).is_some(), "{path:?} is not in the file");
        assert!(!validator().is_valid(&json), "the schema accepts a file without {}", path.join("."));
    }
}

#[test]
fn timeline_entries_require_their_fields() {
    let mut json = written("timeline.json", &RunResult::from_outcome(&fixture::closed_loop()));
    json["timeline"][0].as_object_mut().unwrap().remove("p99_us");
    assert!(!validator().is_valid(&json));
}

#[test]
fn unprobed_server_must_have_null_rss_and_cpu() {
    let mut json = written("unprobed.json", &RunResult::from_outcome(&fixture::open_loop_troubled()));
    assert!(validator().is_valid(&json));
    json["server"]["rss_peak_bytes"] = 1024.into();
    assert!(!validator().is_valid(&json));
}

#[test]
fn unknown_top_level_fields_are_allowed() {
    let mut json = written("extra.json", &RunResult::from_outcome(&fixture::nothing_answered()));
    json["annotations"] = serde_json::json!({ "note": "added by a script" });
    assert!(validator().is_valid(&json));
}

#[test]
fn histograms_must_be_v2_compressed_base64() {
    let mut json = written("histogram.json", &RunResult::from_outcome(&fixture::nothing_answered()));
    json["histograms"]["latency"] = "not a histogram".into();
    assert!(!validator().is_valid(&json));
}

#[test]
fn newer_schema_version_fails_validation() {
    let mut json = written("v3.json", &RunResult::from_outcome(&fixture::nothing_answered()));
    json["schema_version"] = (wsbench::result::SCHEMA_VERSION + 1).into();
    assert!(!validator().is_valid(&json));
}

/// Lists that every run fills must not validate empty: a script iterating over them (or a
/// test asserting something of each entry) would otherwise be satisfied by nothing.
#[test]
fn lists_every_run_fills_must_not_be_empty() {
    let base = written("non-empty.json", &RunResult::from_outcome(&fixture::closed_loop()));
    assert!(base["client"]["workers"].as_array().is_some_and(|w| !w.is_empty()), "{}", base["client"]);
    assert!(validator().is_valid(&base), "{:?}", errors(&base));
    for (pointer, empty) in [("/client/workers", "[]"), ("/summary/thresholds", "[]"), ("/shards", "[]")] {
        let mut json = base.clone();
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let parent = if parent.is_empty() { &mut json } else { json.pointer_mut(parent).unwrap() };
        parent[key] = serde_json::from_str(empty).unwrap();
        assert!(!validator().is_valid(&json), "the schema accepts an empty {pointer}");
    }
}

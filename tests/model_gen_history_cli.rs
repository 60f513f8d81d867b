//! `faultline gen-history --mode zset|queue|objects` end to end: every anomaly it injects,
//! written as JSON Lines and judged by `faultline analyze`, is found by name by its
//! checker (exit 1), a clean history is valid (exit 0), and every `results.json` matches
//! `docs/results.schema.json`.

mod cli_support;
mod schema_support;

use cli_support::faultline;
use schema_support::{assert_matches_schema, read_results};

fn judged(mode: &str, anomaly: &str) -> (Option<i32>, serde_json::Value) {
    judged_as(mode, anomaly, "auto")
}

/// The history `gen-history --mode mode --anomaly anomaly` writes, judged by `faultline
/// analyze --model model`: its exit code and `results.json`.
fn judged_as(mode: &str, anomaly: &str, model: &str) -> (Option<i32>, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("h.jsonl");
    let gen = faultline()
        .args(["gen-history", "--mode", mode, "--ops", "300", "--keys", "3"])
        .args([
            "--concurrency",
            "4",
            "--indeterminate",
            "0.05",
            "--seed",
            "5",
        ])
        .args(["--anomaly", anomaly])
        .arg("--out")
        .arg(&history)
        .output()
        .unwrap();
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    let out = dir.path().join("out");
    let analyze = faultline()
        .args(["analyze", "--model", model, "--summary", "--out"])
        .arg(&out)
        .arg(&history)
        .output()
        .unwrap();
    let results = read_results(&out.join("results.json"));
    assert_matches_schema(&results, &format!("{mode} {anomaly}"));
    (analyze.status.code(), results)
}

#[test]
fn every_injected_anomaly_is_found_by_name_and_clean_is_valid() {
    let modes: [(&str, &[&str]); 2] = [
        ("zset", analysis::checkers::zset::KINDS),
        ("queue", analysis::checkers::queue::KINDS),
    ];
    for (mode, kinds) in modes {
        let (code, results) = judged(mode, "none");
        assert_eq!(code, Some(0), "{mode} clean: {results}");
        for kind in kinds {
            let (code, results) = judged(mode, kind);
            assert_eq!(code, Some(1), "{mode} {kind}: {results}");
            let found = results["checkers"][mode]["anomalies"]
                .as_array()
                .is_some_and(|a| a.iter().any(|w| w["kind"] == *kind));
            assert!(
                found,
                "{mode} {kind} not found: {}",
                results["checkers"][mode]
            );
        }
    }
}

#[test]
fn an_unknown_anomaly_is_refused_with_exit_254() {
    let out = faultline()
        .args([
            "gen-history",
            "--mode",
            "zset",
            "--ops",
            "10",
            "--anomaly",
            "bogus",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(254));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing-member"));
}

#[test]
fn a_torn_object_is_found_by_name_and_clean_objects_are_valid() {
    let (code, results) = judged_as("objects", "none", "objects");
    assert_eq!(code, Some(0), "objects clean: {results}");
    let (code, results) = judged_as("objects", "torn-object", "objects");
    assert_eq!(code, Some(1), "objects torn-object: {results}");
    let objects = &results["checkers"]["objects"];
    assert_eq!(objects["anomalies"][0]["kind"], "torn-object", "{objects}");
    assert_eq!(objects["anomalies"][0]["reason"], "mixed", "{objects}");
    // Under --model auto the same file is judged as registers: the torn read is a value
    // no write wrote, so it is not valid either.
    let (code, results) = judged_as("objects", "torn-object", "auto");
    assert_eq!(code, Some(1), "objects torn-object, auto: {results}");
}

//! The results contract: every shape of `results.json` that `faultline analyze --out`
//! writes — one verdict, several inputs, an input that could not be read, the run-level
//! checkers of a plain history, the pseudo-checker of an empty history — matches
//! `docs/results.schema.json`, and the schema really rejects what the format excludes.
//! (The end-to-end tests check every run's `results.json` too, through `test_support`.)

mod cli_support;
mod schema_support;

use cli_support::{faultline, testdata, write};
use schema_support::{assert_matches_schema, read_results, schema_errors};
use serde_json::json;
use std::path::Path;

fn analyze_out(args: &[&Path]) -> (Option<i32>, serde_json::Value) {
    let out_dir = tempfile::tempdir().expect("temp dir");
    let out = faultline()
        .arg("analyze")
        .arg("--summary")
        .arg("--out")
        .arg(out_dir.path())
        .args(args)
        .output()
        .expect("faultline runs");
    let path = out_dir.path().join("results.json");
    assert!(
        path.is_file(),
        "no results.json: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), read_results(&path))
}

#[test]
fn every_labelled_history_verdict_matches_the_schema() {
    let (code, doc) = analyze_out(&[&testdata()]);
    assert_eq!(code, Some(1));
    let inputs = doc["inputs"].as_array().expect("the multi-input shape");
    assert_eq!(inputs.len(), 118);
    // Each input's verdict on its own is a verdict document too.
    for input in inputs {
        assert_matches_schema(&input["verdict"], input["path"].as_str().unwrap_or("?"));
    }
}

#[test]
fn single_inputs_errors_and_run_level_checkers_match_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    let stale = write(
        dir.path(),
        "stale.jsonl",
        r#"{"type":"invoke","process":0,"f":"write","key":"k","value":1}
{"type":"ok","process":0,"f":"write","key":"k","value":1,"meta":{"group":1,"term":1,"log_index":1,"route_id":1,"route_epoch":1}}
{"type":"info","process":"watcher","f":"catalog","value":{"version":1,"routes":[{"id":1,"start":"","end":"","group":1,"state":"ACTIVE","epoch":1,"parent":null}]}}
{"type":"info","process":"nemesis","f":"start-partition","value":{"targets":["n1"],"effective":false}}
{"type":"invoke","process":1,"f":"read","key":"k"}
{"type":"ok","process":1,"f":"read","key":"k","value":null}
"#,
    );
    let (code, doc) = analyze_out(&[&stale]);
    assert_eq!(code, Some(1));
    for checker in ["linearizable", "epoch-authority", "vacuity"] {
        assert!(
            doc["checkers"].get(checker).is_some(),
            "{checker} in {doc:#}"
        );
    }
    let empty = write(dir.path(), "empty.jsonl", "");
    let (code, doc) = analyze_out(&[&empty]);
    assert_eq!(code, Some(2));
    assert_eq!(doc["checkers"]["history"]["valid"], "unknown");
    let broken = write(
        dir.path(),
        "broken.jsonl",
        "{\"type\":\"okay\",\"process\":0,\"f\":\"read\"}\n",
    );
    let (code, doc) = analyze_out(&[&broken]);
    assert_eq!(code, Some(254));
    assert!(
        doc["inputs"][0]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("broken.jsonl:1:"),
        "{doc:#}"
    );
    let (_, doc) = analyze_out(&[&stale, &broken, &empty]);
    assert_eq!(doc["valid"], json!(false));
}

#[test]
fn the_schema_rejects_what_the_format_excludes() {
    let ok = json!({"valid": true, "checkers": {"crashes": {"valid": true, "counts": {"n": 1}}}});
    assert!(
        schema_errors(&ok).is_empty(),
        "any checker name is allowed: {:?}",
        schema_errors(&ok)
    );
    let bad = [
        json!({"valid": "not-applicable", "checkers": {}}),
        json!({"valid": true}),
        json!({"valid": 1, "checkers": {}}),
        json!({"valid": false, "checkers": {"linearizable": {"valid": false}}}),
        json!({"valid": true, "checkers": {"linearizable": {"valid": true, "count": {}}}}),
        json!({"valid": true, "checkers": {"linearizable": {"valid": true, "counts": {"ops": -1}}}}),
        json!({"valid": true, "checkers": {"linearizable": {"valid": true, "anomalies": [3]}}}),
        json!({"valid": "unknown", "inputs": [{"path": "a"}]}),
        json!({"valid": "unknown", "inputs": [{"path": "a", "error": "x", "verdict": {"valid": true, "checkers": {}}}]}),
    ];
    for doc in bad {
        assert!(!schema_errors(&doc).is_empty(), "accepted: {doc}");
    }
}

#[test]
fn the_schema_accepts_the_stale_write_summary_and_rejects_a_partial_one() {
    let counts = json!({"attempted": 20, "rejected": 0, "acknowledged": 20, "indeterminate": 0, "witnesses": 20});
    let ok = json!({"valid": false, "checkers": {}, "stale_writes": counts});
    assert!(schema_errors(&ok).is_empty(), "{:?}", schema_errors(&ok));
    let bad = [
        json!({"valid": true, "checkers": {}, "stale_writes": {"attempted": 1}}),
        json!({"valid": true, "checkers": {}, "stale_writes": {"attempted": 1, "rejected": 1, "acknowledged": 0, "indeterminate": 0, "witnesses": -1}}),
        json!({"valid": true, "checkers": {}, "stale_writes": {"attempted": 0, "rejected": 0, "acknowledged": 0, "indeterminate": 0, "witnesses": 0, "lost": 0}}),
    ];
    for doc in bad {
        assert!(!schema_errors(&doc).is_empty(), "accepted: {doc}");
    }
}

#[test]
fn isolation_verdicts_match_the_schema_which_requires_their_fields() {
    let dir = tempfile::tempdir().unwrap();
    for (mode, anomaly) in [
        ("list-append", "G-single"),
        ("list-append", "G1a"),
        ("rw-register", "internal"),
        ("list-append", "none"),
    ] {
        let file = dir.path().join(format!("{mode}-{anomaly}.jsonl"));
        let out = faultline()
            .args([
                "gen-history",
                "--mode",
                mode,
                "--ops",
                "200",
                "--keys",
                "6",
                "--seed",
                "5",
                "--final-reads",
                "--anomaly",
                anomaly,
                "--out",
            ])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (_, doc) = analyze_out(&[&file]);
        assert!(
            doc["checkers"]["isolation"]["details"]["anomaly_types"].is_array(),
            "{doc}"
        );
        assert_matches_schema(&doc, &format!("{mode} {anomaly}"));
    }
    let witness = json!({"type": "G0", "cycle": [{"txn": 3, "process": 0}], "steps": [{"from": 3, "to": 3, "kind": "ww"}]});
    let details = json!({"model": "list-append", "consistency_model": "serializable", "anomaly_types": ["G0"], "not": ["read-uncommitted"], "also_not": []});
    let verdict = |details: serde_json::Value, witness: serde_json::Value| json!({"valid": false, "checkers": {"isolation": {"valid": false, "reason": "G0", "details": details, "anomalies": [witness]}}});
    assert!(
        schema_errors(&verdict(details.clone(), witness.clone())).is_empty(),
        "{:?}",
        schema_errors(&verdict(details.clone(), witness.clone()))
    );
    let mut without_not = details.clone();
    without_not.as_object_mut().unwrap().remove("not");
    assert!(
        !schema_errors(&verdict(without_not, witness.clone())).is_empty(),
        "details without `not` accepted"
    );
    assert!(
        !schema_errors(&verdict(details, json!({"cycle": []}))).is_empty(),
        "a witness without its type accepted"
    );
}

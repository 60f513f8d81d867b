//! `faultline analyze` of a plain history file (not a run directory) adds the run-level
//! checkers whose evidence the history holds: epoch-authority with commit metadata or
//! catalog observations, split when the catalog changed, vacuity for the faults started.

mod schema_support;

use std::process::Command;

fn analyze(history: &str) -> (Option<i32>, serde_json::Value) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("h.jsonl");
    std::fs::write(&path, history).expect("history written");
    let out_dir = dir.path().join("out");
    let out = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .arg("analyze")
        .arg("--out")
        .arg(&out_dir)
        .arg(&path)
        .output()
        .expect("faultline runs");
    assert!(
        out_dir.join("results.json").is_file(),
        "no results.json: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        out.status.code(),
        schema_support::read_results(&out_dir.join("results.json")),
    )
}

const REGISTER_ONLY: &str = r#"{"index":0,"type":"invoke","process":1,"f":"write","key":"k","value":1,"time":10}
{"index":1,"type":"ok","process":1,"f":"write","key":"k","value":1,"time":20}
{"index":2,"type":"invoke","process":2,"f":"read","key":"k","value":null,"time":30}
{"index":3,"type":"ok","process":2,"f":"read","key":"k","value":1,"time":40}
"#;

#[test]
fn a_history_without_run_evidence_gets_only_the_core_checkers() {
    let (code, v) = analyze(REGISTER_ONLY);
    assert_eq!(code, Some(0), "{v:#}");
    let names: Vec<&String> = v["checkers"]
        .as_object()
        .expect("checkers")
        .keys()
        .collect();
    assert_eq!(names, vec!["linearizable"]);
}

/// Two catalog versions (route 1 split into 2 and 3) and a write acknowledged by group 1
/// under route 1 epoch 1 after the watcher had seen the split moving its key to route 3
/// in group 2: the no-fence symptom. Plus a kill that took effect and one that did not.
const STALE_EPOCH: &str = r#"{"index":0,"type":"info","process":"watcher","f":"catalog","value":{"version":1,"routes":[{"id":1,"start":"","end":"","group":1,"state":"ACTIVE","epoch":1,"parent":null}],"jobs":[]},"time":5}
{"index":1,"type":"invoke","process":1,"f":"write","key":"m","value":1,"time":10}
{"index":2,"type":"ok","process":1,"f":"write","key":"m","value":1,"time":20,"meta":{"group":1,"term":1,"log_index":5,"route_id":1,"route_epoch":1}}
{"index":3,"type":"info","process":"nemesis","f":"start-kill","value":{"targets":["n1"],"effective":true},"time":25}
{"index":4,"type":"info","process":"nemesis","f":"stop-kill","value":{"targets":["n1"]},"time":26}
{"index":5,"type":"info","process":"watcher","f":"catalog","value":{"version":2,"routes":[{"id":2,"start":"","end":"k","group":1,"state":"ACTIVE","epoch":1,"parent":1},{"id":3,"start":"k","end":"","group":2,"state":"ACTIVE","epoch":2,"parent":1}],"jobs":[]},"time":30}
{"index":6,"type":"invoke","process":1,"f":"write","key":"m","value":2,"time":40}
{"index":7,"type":"ok","process":1,"f":"write","key":"m","value":2,"time":50,"meta":{"group":1,"term":1,"log_index":6,"route_id":1,"route_epoch":1}}
"#;

#[test]
fn metadata_catalog_and_nemesis_events_bring_their_checkers() {
    let (code, v) = analyze(STALE_EPOCH);
    let checkers = v["checkers"].as_object().expect("checkers");
    for name in ["linearizable", "epoch-authority", "split", "vacuity"] {
        assert!(checkers.contains_key(name), "{name} missing: {v:#}");
    }
    let epoch = &v["checkers"]["epoch-authority"];
    assert_eq!(epoch["valid"], serde_json::json!(false), "{epoch:#}");
    let kinds: Vec<&str> = epoch["anomalies"]
        .as_array()
        .expect("anomalies")
        .iter()
        .filter_map(|a| a["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"stale-epoch-write"), "{kinds:?}");
    assert_eq!(
        v["checkers"]["vacuity"]["valid"],
        serde_json::json!(true),
        "the kill took effect: {:#}",
        v["checkers"]["vacuity"]
    );
    assert_eq!(code, Some(1), "invalid");
}

//! The streamed check of a large run history ([`analysis::partitioned`]) gives the results
//! the registry gives the whole history in memory, whatever the number of parts: on
//! generated hotspot-like histories with every finding set-full and linearizability report
//! (lost, duplicated, unexpected, failed-add-observed, stale elements, stale register reads,
//! route changes, indeterminate and unfinished ops), and on the labelled histories.

mod partitioned_support;

use analysis::checkers::registry::{self, RunFacts};
use analysis::formats;
use analysis::history::{History, Op, OpType, Process};
use analysis::partitioned::{check_file, Options, Streamed};
use analysis::verdict::CheckerResult;
use partitioned_support::{facts, hotspot_history, write_jsonl};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// The first place two JSON values differ, as a path and both sides.
fn difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| {
                let (l, r) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                difference(l, r, &format!("{path}/{k}"))
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (l, r))| difference(l, r, &format!("{path}/{i}"))),
        _ if a == b => None,
        _ => Some(format!("{path}: streamed {a} vs whole {b}")),
    }
}

fn assert_same(
    got: &BTreeMap<String, CheckerResult>,
    expected: &BTreeMap<String, CheckerResult>,
    what: &str,
) {
    if let Some(d) = difference(&untimed(got), &untimed(expected), "") {
        panic!("{what}: {d}");
    }
}

/// Results without the timings, which differ run to run.
fn untimed(checkers: &BTreeMap<String, CheckerResult>) -> Value {
    let mut v = serde_json::to_value(checkers).expect("results serialize");
    strip(&mut v, &["check_ms", "ms"]);
    v
}

fn strip(v: &mut Value, names: &[&str]) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| !names.contains(&k.as_str()));
            m.values_mut().for_each(|x| strip(x, names));
        }
        Value::Array(a) => a.iter_mut().for_each(|x| strip(x, names)),
        _ => {}
    }
}

fn whole(history: &History, facts: &RunFacts) -> BTreeMap<String, CheckerResult> {
    let mut checkers = BTreeMap::new();
    registry::run_into(history, facts, &mut checkers);
    checkers
}

fn streamed(path: &Path, facts: &RunFacts, part_bytes: u64) -> BTreeMap<String, CheckerResult> {
    let spill = tempfile::tempdir().expect("temp dir");
    let opts = Options {
        part_bytes,
        spill_dir: Some(spill.path().to_path_buf()),
        ..Options::default()
    };
    let out = match check_file(path, facts, &opts).expect("readable") {
        Streamed::Judged {
            checkers, stats, ..
        } => {
            let expected_parts =
                std::fs::metadata(path).unwrap().len().div_ceil(part_bytes) as usize;
            assert_eq!(stats.parts, expected_parts.max(1));
            checkers
        }
        Streamed::NeedsWhole(why) => panic!("not streamed: {why}"),
    };
    let left: Vec<_> = std::fs::read_dir(spill.path()).unwrap().collect();
    assert!(left.is_empty(), "part files are removed: {left:?}");
    out
}

#[test]
fn a_generated_hotspot_history_streams_to_the_whole_results_in_any_number_of_parts() {
    let facts = facts(&["linearizable", "set-full"], &["partition", "split"]);
    for seed in [7, 99, 2024] {
        let history = hotspot_history(seed, 12);
        let dir = tempfile::tempdir().unwrap();
        let path = write_jsonl(&history, dir.path());
        let expected = whole(&history, &facts);
        for c in ["linearizable", "set-full"] {
            assert_eq!(
                expected[c].valid.as_str(),
                "invalid",
                "seed {seed}: {c} finds the injected bugs"
            );
        }
        let size = std::fs::metadata(&path).unwrap().len();
        for parts in [1, 2, 5, 13] {
            let got = streamed(&path, &facts, size.div_ceil(parts));
            assert_same(&got, &expected, &format!("seed {seed}, {parts} parts"));
        }
    }
}

#[test]
fn every_finding_kind_survives_the_cut() {
    let facts = facts(&["linearizable", "set-full"], &["partition", "split"]);
    let history = hotspot_history(5, 9);
    let dir = tempfile::tempdir().unwrap();
    let path = write_jsonl(&history, dir.path());
    let got = streamed(&path, &facts, 4096);
    let set = &got["set-full"];
    for count in [
        "lost-count",
        "duplicated-count",
        "unexpected-count",
        "failed-add-observed-count",
    ] {
        assert!(set.counts[count] >= 1, "{count}: {:?}", set.counts);
    }
    let annotated = set
        .anomalies
        .iter()
        .filter(|a| a["kind"] == "lost" && a.get("after-route-change").is_some());
    assert!(
        annotated.count() >= 1,
        "a lost element after the split is annotated with it"
    );
    let lin = &got["linearizable"];
    assert_eq!(lin.counts["keys-invalid"], 1);
    assert_eq!(
        lin.anomalies[0]["cause"], "stale-read",
        "{}",
        lin.anomalies[0]
    );
    assert_eq!(got["vacuity"].valid.as_str(), "valid");
}

#[test]
fn a_plan_needing_the_whole_history_or_a_read_of_every_key_is_not_streamed() {
    let history = hotspot_history(3, 4);
    let dir = tempfile::tempdir().unwrap();
    let path = write_jsonl(&history, dir.path());
    let isolation = facts(&["isolation"], &[]);
    match check_file(&path, &isolation, &Options::default()).unwrap() {
        Streamed::NeedsWhole(why) => assert!(why.contains("isolation"), "{why}"),
        Streamed::Judged { .. } => panic!("isolation needs the whole history"),
    }
    let mut ops = history.ops.clone();
    let next = ops.len() as u64;
    for (i, kind) in [OpType::Invoke, OpType::Ok].into_iter().enumerate() {
        ops.push(Op {
            index: next + i as u64,
            kind,
            process: Process::Client(30),
            f: "read-set".into(),
            key: None,
            value: json!([]),
            time: u64::MAX / 2,
            node: None,
            error: None,
            meta: None,
        });
    }
    let path = write_jsonl(&History::new(ops), dir.path());
    match check_file(&path, &facts(&["set-full"], &[]), &Options::default()).unwrap() {
        Streamed::NeedsWhole(why) => assert!(why.contains("read-set"), "{why}"),
        Streamed::Judged { .. } => panic!("a read-set spans every key"),
    }
}

#[test]
fn the_labelled_register_histories_stream_to_their_whole_results() {
    let facts = facts(&["linearizable"], &[]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/histories");
    let mut checked = 0;
    for sub in ["elastickv", "kv", "etcd-jepsen", "knossos-cas"] {
        for entry in std::fs::read_dir(root.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            let Ok(loaded) = formats::load_file(&path, None) else {
                continue;
            };
            let dir = tempfile::tempdir().unwrap();
            let copy = write_jsonl(&loaded.history, dir.path());
            let size = std::fs::metadata(&copy).unwrap().len();
            let expected = whole(&loaded.history, &facts);
            let got = streamed(&copy, &facts, size.div_ceil(4).max(1));
            assert_same(&got, &expected, &path.display().to_string());
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked} labelled histories");
}

//! The stale-read witness (`analysis::checkers::stale_read`): on elastickv's labelled real
//! histories it names the node, the missed write, the staleness and the fault state; on
//! hand-made histories it claims a stale read only when the history proves one, and names
//! the other provable causes.

use analysis::analyze::{analyze, AnalyzeOptions, ModelChoice};
use analysis::checkers::linearizable::Model;
use analysis::checkers::stale_read::annotate;
use analysis::formats::load_file;
use analysis::history::{History, Op, OpType, Process};
use analysis::verdict::{CheckerResult, Validity};
use serde_json::{json, Value};
use std::path::Path;

fn elastickv(file: &str) -> History {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/histories/elastickv")
        .join(file);
    load_file(&path, None).expect("parses").history
}

fn linearizable(history: &History) -> CheckerResult {
    let opts = AnalyzeOptions {
        model: Some(ModelChoice::Linearizable(Model::CasRegister)),
        ..Default::default()
    };
    analyze(history, Value::Null, &opts)
        .expect("analyzable")
        .checkers
        .remove("linearizable")
        .expect("linearizable ran")
}

fn anomaly<'r>(result: &'r CheckerResult, key: &str) -> &'r Value {
    result
        .anomalies
        .iter()
        .find(|a| a["key"] == key)
        .unwrap_or_else(|| panic!("no anomaly for {key}: {:?}", result.anomalies))
}

#[test]
fn fault_free_three_group_run_names_node_missed_write_and_staleness() {
    let result = linearizable(&elastickv("register-3groups-nofaults-nodereads.jsonl"));
    assert_eq!(result.valid, Validity::Invalid);
    let a = anomaly(&result, "reg/00003");
    assert_eq!(a["cause"], "stale-read", "{a:#}");
    let s = &a["stale_read"];
    // The read named is the anomaly's culprit (which read the engine reports depends on the
    // engine: the search's first failure is read 2929, the fast path's read 2987); both are
    // reads through n3 of 728 after write 2915 of 729 was acknowledged.
    assert_eq!(s["read"]["index"], a["op"]["index"], "the culprit is named");
    assert_eq!(s["read"]["node"], "n3");
    assert_eq!(s["read"]["value"], 728);
    assert_eq!(s["missed_write"]["index"], 2915);
    assert_eq!(s["missed_write"]["value"], 729);
    assert_eq!(s["missed_write"]["ack_s"], 10.113);
    assert_eq!(s["value_written_by"]["write"], 2913);
    let invoke_s = s["read"]["invoke_s"].as_f64().unwrap();
    let stale_ms = s["stale_ms"].as_f64().unwrap();
    assert!(
        stale_ms >= 32.0,
        "at least read 2929's 32.27 ms: {stale_ms}"
    );
    assert!(
        (stale_ms - (invoke_s - 10.113446279) * 1000.0).abs() < 1.0,
        "stale_ms is the read's invoke minus 729's ack: {stale_ms} vs {invoke_s}"
    );
    assert_eq!(s["writes_acked_since"], 1);
    assert_eq!(s["faults"]["active"], json!([]));
    assert_eq!(s["faults"]["last_heal"], Value::Null);
    let summary = s["summary"].as_str().unwrap();
    assert!(
        summary.contains("through n3") && summary.contains("no fault active and none before"),
        "{summary}"
    );
    assert_eq!(
        result.counts["keys-stale-read"],
        result.counts["keys-invalid"]
    );
}

#[test]
fn every_invalid_key_of_the_one_group_fault_run_is_a_stale_read_with_its_fault_state() {
    let history = elastickv("register-1group-partition-kill-pause-nodereads.jsonl");
    let result = linearizable(&history);
    assert_eq!(result.valid, Validity::Invalid);
    assert!(!result.anomalies.is_empty());
    for a in &result.anomalies {
        assert_eq!(a["cause"], "stale-read", "key {}: {a:#}", a["key"]);
        let s = &a["stale_read"];
        let read_invoke = s["read"]["invoke_s"].as_f64().unwrap();
        let missed_ack = s["missed_write"]["ack_s"].as_f64().unwrap();
        assert!(
            missed_ack < read_invoke,
            "the missed write was acknowledged before the read: {s:#}"
        );
        assert!(s["writes_acked_since"].as_u64().unwrap() >= 1);
        assert!(s["faults"]["active"].is_array() && s["faults"].get("last_heal").is_some());
    }
    assert_eq!(
        result.counts["keys-stale-read"],
        result.anomalies.len() as u64
    );
    // The run paused n2 (the leader) from 53.30 s to 63.30 s: a read served by n2 right after
    // the resume sees the pause as the last heal and n2 as its target.
    let after_pause = result
        .anomalies
        .iter()
        .map(|a| &a["stale_read"])
        .find(|s| s["faults"]["last_heal"]["kind"] == "pause" && s["read"]["node"] == "n2");
    let s = after_pause.expect("a stale read through n2 after the pause healed");
    assert_eq!(s["faults"]["last_heal"]["node_targeted"], true);
    assert_eq!(s["faults"]["last_heal"]["event"], 20959);
}

#[test]
fn leader_read_run_has_nothing_to_annotate() {
    let result = linearizable(&elastickv(
        "register-1group-partition-kill-pause-leaderreads.jsonl",
    ));
    assert_eq!(result.valid, Validity::Valid);
    assert!(result.anomalies.is_empty() && !result.counts.contains_key("keys-stale-read"));
}

/// Builds a one-key history from `(process, type, f, value, time_ms)` rows; nemesis rows
/// use process `u64::MAX`.
fn history(rows: &[(u64, OpType, &str, Value, u64)]) -> History {
    let ops = rows
        .iter()
        .enumerate()
        .map(|(i, (p, kind, f, value, t))| Op {
            index: i as u64,
            kind: *kind,
            process: if *p == u64::MAX {
                Process::Nemesis
            } else {
                Process::Client(*p)
            },
            f: (*f).into(),
            key: (*p != u64::MAX).then(|| "k".into()),
            value: value.clone(),
            time: t * 1_000_000,
            node: (*p != u64::MAX)
                .then(|| format!("n{}", p % 3 + 1))
                .map(Into::into),
            error: None,
            meta: None,
        })
        .collect();
    History::new(ops)
}

const NEMESIS: u64 = u64::MAX;
use OpType::{Fail, Info, Invoke, Ok};

/// A non-linearizable anomaly for key `k` whose culprit is op `culprit`, as the checker
/// reports it; `annotate` only reads `type`, `key` and `op.index`.
fn flagged(culprit: u64) -> CheckerResult {
    let mut r = CheckerResult::new(Validity::Invalid);
    r.anomalies
        .push(json!({ "type": "not-linearizable", "key": "k", "op": { "index": culprit } }));
    r
}

#[test]
fn a_read_of_an_overwritten_acknowledged_value_is_a_stale_read() {
    let h = history(&[
        (0, Invoke, "write", json!(1), 0),
        (0, Ok, "write", json!(1), 5),
        (1, Invoke, "write", json!(2), 10),
        (1, Ok, "write", json!(2), 15),
        (0, Invoke, "write", json!(3), 20),
        (0, Ok, "write", json!(3), 25),
        (2, Invoke, "read", Value::Null, 40),
        (2, Ok, "read", json!(1), 41),
    ]);
    let result = linearizable(&h);
    let s = &anomaly(&result, "k")["stale_read"];
    assert_eq!(s["read"]["index"], 6);
    assert_eq!(
        s["missed_write"]["index"], 2,
        "the first acknowledged overwrite of 1"
    );
    assert_eq!(
        s["stale_ms"], 25.0,
        "read invoked at 40 ms, overwrite acknowledged at 15 ms"
    );
    assert_eq!(s["writes_acked_since"], 2);
    assert_eq!(s["latest_acked_before_read"]["value"], 3);
}

#[test]
fn a_read_of_the_initial_value_after_an_acknowledged_write_is_a_stale_read() {
    let h = history(&[
        (0, Invoke, "write", json!(1), 0),
        (0, Ok, "write", json!(1), 5),
        (1, Invoke, "read", Value::Null, 9),
        (1, Ok, "read", Value::Null, 10),
    ]);
    let result = linearizable(&h);
    let s = &anomaly(&result, "k")["stale_read"];
    assert_eq!(s["value_written_by"], "initial");
    assert_eq!(s["stale_ms"], 4.0);
}

#[test]
fn an_inversion_during_a_concurrent_write_is_not_claimed_stale() {
    // r1 sees 2 while w(2) is still running, then r2 sees 1 again: not linearizable, but no
    // write of another value was acknowledged before r2, so nothing proves r2 stale.
    let h = history(&[
        (0, Invoke, "write", json!(1), 0),
        (0, Ok, "write", json!(1), 5),
        (0, Invoke, "write", json!(2), 10),
        (1, Invoke, "read", Value::Null, 11),
        (1, Ok, "read", json!(2), 12),
        (2, Invoke, "read", Value::Null, 13),
        (2, Ok, "read", json!(1), 14),
        (0, Ok, "write", json!(2), 20),
    ]);
    let result = linearizable(&h);
    assert_eq!(result.valid, Validity::Invalid);
    let a = anomaly(&result, "k");
    assert!(
        a.get("cause").is_none() && a.get("stale_read").is_none(),
        "{a:#}"
    );
    assert_eq!(result.counts["keys-stale-read"], 0);
}

#[test]
fn an_unacknowledged_write_of_the_value_read_prevents_the_claim() {
    // A second write of 1 ended `info`: it may have taken effect just before the read.
    let h = history(&[
        (0, Invoke, "write", json!(1), 0),
        (0, Ok, "write", json!(1), 5),
        (1, Invoke, "write", json!(2), 10),
        (1, Ok, "write", json!(2), 15),
        (0, Invoke, "write", json!(1), 20),
        (0, Info, "write", json!(1), 25),
        (2, Invoke, "read", Value::Null, 40),
        (2, Ok, "read", json!(1), 41),
    ]);
    let mut result = flagged(6);
    annotate(&h, &mut result);
    assert!(
        result.anomalies[0].get("cause").is_none(),
        "{:#}",
        result.anomalies[0]
    );
}

#[test]
fn an_overwrite_concurrent_with_the_value_read_proves_nothing() {
    // w(2) was invoked before w(1) was acknowledged: it may be ordered first.
    let h = history(&[
        (0, Invoke, "write", json!(1), 0),
        (1, Invoke, "write", json!(2), 2),
        (0, Ok, "write", json!(1), 5),
        (1, Ok, "write", json!(2), 6),
        (2, Invoke, "read", Value::Null, 40),
        (2, Ok, "read", json!(1), 41),
    ]);
    let mut result = flagged(4);
    annotate(&h, &mut result);
    assert!(
        result.anomalies[0].get("cause").is_none(),
        "{:#}",
        result.anomalies[0]
    );
}

#[test]
fn reads_of_failed_and_unwritten_values_are_named_and_not_stale() {
    let failed = history(&[
        (0, Invoke, "write", json!(7), 0),
        (0, Fail, "write", json!(7), 5),
        (1, Invoke, "read", Value::Null, 9),
        (1, Ok, "read", json!(7), 10),
    ]);
    let result = linearizable(&failed);
    let a = anomaly(&result, "k");
    assert_eq!(a["cause"], "read-of-failed-write", "{a:#}");
    assert_eq!(a["read_of_failed_write"]["failed_write"]["index"], 0);
    assert!(a.get("stale_read").is_none());

    let unwritten = history(&[
        (0, Invoke, "write", json!(7), 0),
        (0, Ok, "write", json!(7), 5),
        (1, Invoke, "read", Value::Null, 9),
        (1, Ok, "read", json!(8), 10),
    ]);
    let a = anomaly(&linearizable(&unwritten), "k").clone();
    assert_eq!(a["cause"], "read-of-unwritten-value", "{a:#}");
}

#[test]
fn the_fault_state_names_active_faults_and_the_last_heal() {
    let h = history(&[
        (0, Invoke, "write", json!(1), 0),
        (0, Ok, "write", json!(1), 5),
        (
            NEMESIS,
            Info,
            "start-kill",
            json!({"targets": ["n3"], "effective": true}),
            6,
        ),
        (1, Invoke, "write", json!(2), 10),
        (1, Ok, "write", json!(2), 15),
        (
            NEMESIS,
            Info,
            "stop-kill",
            json!({"targets": ["n3"], "healed": true}),
            20,
        ),
        (
            NEMESIS,
            Info,
            "start-partition",
            json!({"targets": ["n1", "n2"], "effective": true}),
            30,
        ),
        (2, Invoke, "read", Value::Null, 50),
        (2, Ok, "read", json!(1), 51),
    ]);
    let result = linearizable(&h);
    let s = &anomaly(&result, "k")["stale_read"];
    assert_eq!(s["read"]["node"], "n3");
    let f = &s["faults"];
    assert_eq!(f["last_heal"]["kind"], "kill");
    assert_eq!(f["last_heal"]["ms_before"], 30.0);
    assert_eq!(f["last_heal"]["node_targeted"], true);
    assert_eq!(f["active"][0]["kind"], "partition");
    assert_eq!(f["active"][0]["ms_before"], 20.0);
    assert_eq!(f["active"][0]["node_targeted"], false);
    let summary = s["summary"].as_str().unwrap();
    assert!(
        summary.contains("during partition of n1,n2")
            && summary.contains("after the kill of n3 healed"),
        "{summary}"
    );
}

#[test]
fn a_huge_key_names_its_culprit_without_scanning_every_read() {
    // 5,000 writes and 5,000 reads (25 M read × write pairs, past MAX_SCAN_WORK), all in
    // order, then one read of the first value: the only op that cannot be linearized.
    let n = 5_000u64;
    let mut rows = Vec::new();
    for i in 0..n {
        let t = 10 * i;
        rows.push((0, Invoke, "write", json!(i), t));
        rows.push((0, Ok, "write", json!(i), t + 1));
        rows.push((1, Invoke, "read", Value::Null, t + 2));
        rows.push((1, Ok, "read", json!(i), t + 3));
    }
    rows.push((2, Invoke, "read", Value::Null, 10 * n));
    rows.push((2, Ok, "read", json!(0), 10 * n + 1));
    let result = linearizable(&history(&rows));
    assert_eq!(result.valid, Validity::Invalid);
    let a = anomaly(&result, "k");
    assert_eq!(a["cause"], "stale-read", "{a}");
    let s = &a["stale_read"];
    assert_eq!(s["read"]["index"], 4 * n, "the culprit is examined");
    assert_eq!(s["missed_write"]["value"], 1);
    assert_eq!(
        s["stale_reads_of_key"],
        Value::Null,
        "not every read was examined"
    );
}

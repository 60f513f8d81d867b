//! The isolation checker names the faults under way in each witness (`faults`, and in
//! `why` the turns that held one of its transactions or acted at one of its keys), and the
//! annotation never changes the verdict.

mod isolation_support;

use analysis::checkers::isolation::{ConsistencyModel, TxnModel};
use analysis::history::{History, Op};
use isolation_support::{anomaly_types, run};
use serde_json::{json, Value};

const S: u64 = 1_000_000_000;

fn op(index: u64, entry: Value) -> Op {
    let mut e = entry;
    e["index"] = json!(index);
    serde_json::from_value(e).expect("a history entry of docs/history-format.md")
}

fn client(p: u64, kind: &str, value: Value, time: u64) -> Value {
    json!({"type": kind, "process": p, "f": "txn", "value": value, "time": time})
}

fn nemesis(f: &str, value: Value, time: u64) -> Value {
    json!({"type": "info", "process": "nemesis", "f": f, "value": value, "time": time})
}

/// A txn-move turn that held the transaction appending to `a` and `b` and moved `a`.
fn txn_move_start(time: u64) -> Value {
    nemesis(
        "start-txn-move",
        json!({"effective": true, "targets": ["n1"], "aim": "primary-cutover", "moved_key": "a", "route_id": 7,
               "target_group": 2, "job_id": 3, "release_at": "CUTOVER", "phase_seen": "CUTOVER",
               "txn": {"start_ts": 5, "commit_ts": 6, "primary": "a", "secondary_writes": ["b"], "held": true}}),
        time,
    )
}

/// A transaction appending to `a` and `b`, acknowledged; a later read sees `b`'s element
/// and not `a`'s: half of it lost.
fn half_lost(with_faults: bool) -> History {
    history_of(half_lost_entries(with_faults))
}

fn half_lost_entries(with_faults: bool) -> Vec<Value> {
    let write = json!([["append", "a", 1], ["append", "b", 1]]);
    let mut entries = vec![
        client(0, "invoke", write.clone(), S),
        client(0, "ok", write, 3 * S),
        client(
            1,
            "invoke",
            json!([["r", "a", null], ["r", "b", null]]),
            5 * S,
        ),
        client(1, "ok", json!([["r", "a", []], ["r", "b", [1]]]), 6 * S),
    ];
    if with_faults {
        entries.push(nemesis(
            "start-partition",
            json!({"effective": true, "targets": ["n2"]}),
            S / 5,
        ));
        entries.push(nemesis(
            "stop-partition",
            json!({"healed": true}),
            4 * S / 5,
        ));
        entries.push(txn_move_start(2_500_000_000));
        entries.push(nemesis(
            "stop-txn-move",
            json!({"job_id": 3, "job_phase": "DONE"}),
            4 * S,
        ));
        entries.push(nemesis(
            "start-kill",
            json!({"effective": true, "targets": ["n3"]}),
            10 * S,
        ));
        entries.push(nemesis("stop-kill", json!({"healed": true}), 11 * S));
    }
    entries
}

/// `entries` in time order, indexed.
fn history_of(mut entries: Vec<Value>) -> History {
    entries.sort_by_key(|e| e["time"].as_u64());
    History::new(
        entries
            .into_iter()
            .enumerate()
            .map(|(i, e)| op(i as u64, e))
            .collect(),
    )
}

fn check(h: &History) -> analysis::verdict::CheckerResult {
    run(
        h,
        TxnModel::ListAppend,
        ConsistencyModel::StrictSerializable,
    )
}

fn witness<'a>(r: &'a analysis::verdict::CheckerResult, kind: &str) -> &'a Value {
    r.anomalies
        .iter()
        .find(|a| a["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} witness: {:#?}", r.anomalies))
}

#[test]
fn a_lost_append_names_the_txn_move_turn_that_held_its_writer_and_the_range_it_moved() {
    let h = half_lost(true);
    let r = check(&h);
    let lost = witness(&r, "lost-append");
    let writer = lost["writer"]["txn"].as_u64().expect("writer");
    let faults = lost["faults"].as_array().expect("faults listed");
    assert_eq!(faults[0]["f"], "start-txn-move", "{faults:#?}");
    assert_eq!(faults[0]["held_txn"], json!(writer));
    assert_eq!(
        (
            faults[0]["moved_key"].clone(),
            faults[0]["route_id"].clone(),
            faults[0]["target_group"].clone()
        ),
        (json!("a"), json!(7), json!(2))
    );
    let why = lost["why"].as_str().unwrap();
    let turn = faults[0]["index"].as_u64().unwrap();
    let expected = format!("txn-move (op {turn}) held T{writer} at its commit point, moved key a (route 7) to group 2, released in CUTOVER");
    assert!(why.contains(&expected), "{why}");
}

#[test]
fn a_coordinator_kill_turn_is_named_as_the_kill_of_the_held_transaction_s_coordinator() {
    let mut h = half_lost(true);
    for o in h.ops.iter_mut().filter(|o| o.f == "start-txn-move") {
        let txn = o.value["txn"].clone();
        o.value = json!({"effective": true, "targets": ["n2"], "aim": "coordinator-kill", "killed": true, "txn": txn});
    }
    let r = check(&h);
    let lost = witness(&r, "lost-append");
    let writer = lost["writer"]["txn"].as_u64().expect("writer");
    let faults = lost["faults"].as_array().expect("faults listed");
    assert_eq!(
        (faults[0]["held_txn"].clone(), faults[0]["killed"].clone()),
        (json!(writer), json!(true)),
        "{faults:#?}"
    );
    let turn = faults[0]["index"].as_u64().unwrap();
    let expected = format!("txn-move (op {turn}) held T{writer} after its primary's commit and killed its coordinator n2");
    assert!(
        lost["why"].as_str().unwrap().contains(&expected),
        "{lost:#}"
    );
}

#[test]
fn faults_overlapping_the_writer_are_listed_and_later_ones_are_not() {
    let r = check(&half_lost(true));
    let lost = witness(&r, "lost-append");
    let fs: Vec<&str> = lost["faults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["f"].as_str().unwrap())
        .collect();
    assert_eq!(
        fs,
        ["start-txn-move"],
        "the partition ended before the writer was invoked; the kill came after the read"
    );
    let cycle = witness(&r, "G-single-item");
    let fs: Vec<&str> = cycle["faults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["f"].as_str().unwrap())
        .collect();
    assert_eq!(fs, ["start-txn-move"], "{cycle:#}");
}

#[test]
fn a_turn_s_mode_and_what_it_killed_are_named_as_the_event_records_them() {
    let mut entries = half_lost_entries(false);
    entries.push(nemesis(
        "start-kill",
        json!({"effective": true, "targets": ["n3"], "mode": "one", "killed": ["n3"]}),
        2 * S,
    ));
    entries.push(nemesis("stop-kill", json!({"healed": true}), 5 * S / 2));
    let r = check(&history_of(entries));
    let lost = witness(&r, "lost-append");
    let kill = &lost["faults"][0];
    assert_eq!(kill["f"], "start-kill", "{lost:#}");
    assert_eq!(kill["mode"], "one", "{kill:#}");
    assert_eq!(kill["killed"], json!(["n3"]), "{kill:#}");
    let r = check(&half_lost(true));
    let turn = &witness(&r, "lost-append")["faults"][0];
    assert_eq!(turn["f"], "start-txn-move", "{turn:#}");
    assert!(
        turn.get("mode").is_none(),
        "the txn-move event names no mode: {turn:#}"
    );
}

#[test]
fn the_annotation_changes_no_verdict_and_a_history_without_faults_gets_none() {
    let with = check(&half_lost(true));
    let without = check(&half_lost(false));
    assert_eq!(with.valid, without.valid);
    assert_eq!(anomaly_types(&with), anomaly_types(&without));
    // The evidence of exercise counts the transactions in flight across a move, which the
    // nemesis events are: the annotation must change every other count not at all.
    let judged = |r: &analysis::verdict::CheckerResult| {
        let mut c = r.counts.clone();
        c.remove("in_flight_across_split");
        c
    };
    assert_eq!(judged(&with), judged(&without));
    assert_eq!(without.counts.get("in_flight_across_split"), Some(&0));
    assert_eq!(with.anomalies.len(), without.anomalies.len());
    assert!(
        without.anomalies.iter().all(|a| a.get("faults").is_none()),
        "{:#?}",
        without.anomalies
    );
}

#[test]
fn a_transaction_invoked_after_the_turn_s_event_is_not_claimed_as_the_one_it_held() {
    let mut h = half_lost(true);
    for o in h.ops.iter_mut().filter(|o| o.f == "start-txn-move") {
        o.time = S / 2;
    }
    h.ops.sort_by_key(|o| o.time);
    let r = check(&h);
    let lost = witness(&r, "lost-append");
    let turn = lost["faults"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["f"] == "start-txn-move")
        .expect("the turn overlaps the writer");
    assert!(
        turn.get("held_txn").is_none(),
        "the writer was invoked at 1 s, after the event at 0.5 s: {turn:#}"
    );
}

#[test]
fn a_turn_that_held_other_keys_is_listed_without_claiming_the_transaction() {
    let mut h = half_lost(true);
    for o in h.ops.iter_mut().filter(|o| o.f == "start-txn-move") {
        o.value["txn"]["secondary_writes"] = json!(["c"]);
        o.value["moved_key"] = json!("z");
    }
    let r = check(&h);
    let lost = witness(&r, "lost-append");
    let faults = lost["faults"].as_array().unwrap();
    let turn = faults
        .iter()
        .find(|f| f["f"] == "start-txn-move")
        .expect("the turn overlapping the writer is listed");
    assert!(turn.get("held_txn").is_none(), "{turn:#}");
    assert!(
        !lost["why"].as_str().unwrap().contains("Under way"),
        "{lost:#}"
    );
}

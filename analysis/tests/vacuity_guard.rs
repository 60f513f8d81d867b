//! Vacuity guard: requested faults that never took effect, a kill that never hit a leader,
//! and a workload below its throughput floor make the run `unknown`; never `invalid`.

mod epoch_support;

use analysis::checkers::vacuity::{check, requested_kinds, VacuityOptions};
use analysis::verdict::Validity;
use epoch_support::*;
use serde_json::json;

/// 10 s of 50 acknowledged ops/s, then the given nemesis events from t = 10 s.
fn run_with(events: &[(&str, serde_json::Value)]) -> HistoryBuilder {
    let mut h = HistoryBuilder::new();
    for i in 0..500u64 {
        h.at_ms(i * 20);
        h.acked(i % 4, "put", &format!("k{}", i % 10), json!(i), None);
    }
    h.at_ms(10_000);
    for (f, v) in events {
        h.nemesis(f, v.clone());
    }
    h
}

fn opts(kinds: &[&str], floor: f64) -> VacuityOptions {
    VacuityOptions {
        nemesis: kinds.iter().map(|k| k.to_string()).collect(),
        min_ok_ops_per_s: floor,
        ..Default::default()
    }
}

#[test]
fn effective_faults_and_enough_throughput_are_valid() {
    let h = run_with(&[
        (
            "start-partition",
            json!({"targets": ["n1"], "effective": true, "mode": "leader"}),
        ),
        (
            "stop-partition",
            json!({"targets": ["n1"], "effective": true}),
        ),
        (
            "start-kill",
            json!({"targets": ["n2"], "effective": true, "leader": true}),
        ),
        ("stop-kill", json!({"targets": ["n2"], "effective": true})),
    ]);
    let r = check(&h.build(), &opts(&["partition", "kill"], 40.0));
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.reason);
    let rate = r.details["pre_fault_ok_ops_per_s"].as_f64().unwrap();
    assert!((rate - 50.0).abs() < 1.0, "{rate}");
    assert_eq!(r.counts["kinds-took-effect"], 2);
    assert_eq!(r.details["kinds"]["partition"]["stops"], 1);
}

#[test]
fn a_fault_that_never_took_effect_is_unknown() {
    let h = run_with(&[(
        "start-partition",
        json!({"targets": ["n1"], "effective": false}),
    )]);
    let r = check(&h.build(), &opts(&["partition"], 0.0));
    assert_eq!(r.valid, Validity::Unknown);
    assert!(r
        .reason
        .unwrap()
        .contains("partition started 1 time(s) but never took effect"));
}

#[test]
fn a_requested_kind_that_never_started_is_unknown() {
    let h = run_with(&[(
        "start-partition",
        json!({"targets": ["n1"], "effective": true}),
    )]);
    let r = check(&h.build(), &opts(&["partition", "pause"], 0.0));
    assert_eq!(r.valid, Validity::Unknown);
    assert_eq!(
        r.reason.as_deref(),
        Some("nemesis pause was requested but never started")
    );
}

#[test]
fn kills_that_never_hit_a_leader_are_unknown_when_the_nemesis_reports_leadership() {
    let h = run_with(&[(
        "start-kill",
        json!({"targets": ["n3"], "effective": true, "leader": false}),
    )]);
    let r = check(&h.build(), &opts(&["kill"], 0.0));
    assert_eq!(r.valid, Validity::Unknown);
    assert!(r.reason.unwrap().contains("never killed a leader"));
    // A nemesis that does not report leadership: an effective kill is enough...
    let h = run_with(&[("start-kill", json!({"targets": ["n3"], "effective": true}))]);
    assert_eq!(
        check(&h.build(), &opts(&["kill"], 0.0)).valid,
        Validity::Valid
    );
    // ...unless a leader kill is explicitly required.
    let strict = VacuityOptions {
        require_leader_kill: Some(true),
        ..opts(&["kill"], 0.0)
    };
    assert_eq!(check(&h.build(), &strict).valid, Validity::Unknown);
}

#[test]
fn throughput_below_the_floor_is_unknown() {
    let h = run_with(&[("start-pause", json!({"targets": ["n1"], "effective": true}))]);
    let r = check(&h.build(), &opts(&["pause"], 100.0));
    assert_eq!(r.valid, Validity::Unknown);
    assert!(r.reason.unwrap().contains("below the floor of 100.0"));
}

#[test]
fn a_fault_before_any_workload_leaves_nothing_to_measure() {
    let mut h = HistoryBuilder::new();
    h.nemesis("start-loss", json!({"targets": ["n1"], "effective": true}));
    h.at_ms(5000).acked(0, "put", "k", json!(1), None);
    let r = check(&h.build(), &opts(&["loss"], 1.0));
    assert_eq!(r.valid, Validity::Unknown);
    assert!(r.reason.unwrap().contains("fault-free workload"));
}

#[test]
fn empty_history_is_unknown_and_all_expands_to_every_kind() {
    let r = check(&HistoryBuilder::new().build(), &opts(&[], 0.0));
    assert_eq!(r.valid, Validity::Unknown);
    assert_eq!(
        requested_kinds(&["all".into()]),
        ["partition", "kill", "pause", "loss", "split"]
    );
    assert_eq!(
        requested_kinds(&["kill,partition".into(), "kill".into()]),
        ["kill", "partition"]
    );
}

#[test]
fn a_run_with_no_acknowledged_op_tested_nothing() {
    let mut h = HistoryBuilder::new();
    for i in 0..20u64 {
        h.at_ms(i * 10);
        h.invoke(i % 3, "write", "k", json!(i));
        h.complete(
            analysis::history::OpType::Fail,
            i % 3,
            "write",
            "k",
            json!(i),
            None,
        );
    }
    let r = check(&h.build(), &opts(&[], 0.0));
    assert_eq!(r.valid, Validity::Unknown);
    assert!(
        r.reason
            .as_deref()
            .unwrap_or_default()
            .contains("no client operation was acknowledged"),
        "{:?}",
        r.reason
    );
    assert_eq!(r.counts["ok-ops"], 0);
    // One acknowledged op is enough.
    h.at_ms(500);
    h.acked(0, "write", "k", json!(99), None);
    assert_eq!(check(&h.build(), &opts(&[], 0.0)).valid, Validity::Valid);
}

#[test]
fn a_run_whose_reads_succeeded_but_no_write_was_acknowledged_is_unknown() {
    let mut h = HistoryBuilder::new();
    for i in 0..200u64 {
        h.at_ms(i * 20);
        if i % 2 == 0 {
            h.acked(i % 4, "read", "k1", json!(null), None);
        } else {
            h.invoke(i % 4, "write", "k1", json!(i));
            h.complete(
                analysis::history::OpType::Fail,
                i % 4,
                "write",
                "k1",
                json!(i),
                None,
            );
        }
    }
    let r = check(&h.build(), &opts(&[], 0.0));
    assert_eq!(r.valid, Validity::Unknown, "{:?}", r.reason);
    assert!(
        r.reason
            .as_deref()
            .unwrap()
            .contains("none of the 100 attempted writes was acknowledged"),
        "{:?}",
        r.reason
    );
    assert_eq!(r.counts["ok-writes"], 0);
}

#[test]
fn transactions_that_append_count_as_writes_and_none_acknowledged_is_unknown() {
    let mut h = HistoryBuilder::new();
    for i in 0..40u64 {
        h.at_ms(i * 20);
        let f = if i % 2 == 0 { "r" } else { "append" };
        let mop = json!([[f, "la/1", if f == "r" { json!(null) } else { json!(i) }]]);
        h.invoke_txn(i % 4, mop.clone());
        if f == "r" {
            h.complete_txn(
                analysis::history::OpType::Ok,
                i % 4,
                json!([["r", "la/1", []]]),
            );
        } else {
            h.complete_txn(analysis::history::OpType::Info, i % 4, mop);
        }
    }
    let r = check(&h.build(), &opts(&[], 0.0));
    assert_eq!(r.valid, Validity::Unknown, "{:?}", r.reason);
    assert!(
        r.reason
            .as_deref()
            .unwrap()
            .contains("none of the 20 attempted writes was acknowledged"),
        "{:?}",
        r.reason
    );
    // One acknowledged append makes it valid.
    h.at_ms(900);
    h.invoke_txn(0, json!([["append", "la/1", 99]]));
    h.complete_txn(
        analysis::history::OpType::Ok,
        0,
        json!([["append", "la/1", 99]]),
    );
    let r = check(&h.build(), &opts(&[], 0.0));
    assert_eq!(
        (r.valid, r.counts["ok-writes"]),
        (Validity::Valid, 1),
        "{:?}",
        r.reason
    );
}

#[test]
fn a_read_only_history_is_not_held_to_the_write_rule() {
    let mut h = HistoryBuilder::new();
    for i in 0..50u64 {
        h.at_ms(i * 20);
        h.acked(i % 4, "read", "k1", json!(null), None);
    }
    let r = check(&h.build(), &opts(&[], 0.0));
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.reason);
}

#[test]
fn a_writing_transaction_counts_when_the_history_is_read_in_compact_form() {
    // `faultline analyze` reads txn micro-ops into the history's compact table and leaves each
    // op's `value` null; the write rule must still see the acknowledged append.
    let text = concat!(
        r#"{"index":0,"time":0,"process":0,"type":"invoke","f":"txn","value":[["append","la/1",1]]}"#,
        "\n",
        r#"{"index":1,"time":1000,"process":0,"type":"ok","f":"txn","value":[["append","la/1",1]]}"#,
        "\n",
        r#"{"index":2,"time":2000,"process":1,"type":"invoke","f":"txn","value":[["r","la/1",null]]}"#,
        "\n",
        r#"{"index":3,"time":3000,"process":1,"type":"ok","f":"txn","value":[["r","la/1",[1]]]}"#,
        "\n",
    );
    let form = analysis::formats::TxnForm::Compact;
    let (history, _) =
        analysis::formats::jsonl::read_history_parallel_as(text.as_bytes(), "t.jsonl", form)
            .unwrap();
    assert!(history.txn_table.is_some() && history.ops.iter().all(|op| op.value.is_null()));
    let r = check(&history, &opts(&[], 0.0));
    assert_eq!(
        (r.valid, r.counts["ok-writes"]),
        (Validity::Valid, 1),
        "{:?}",
        r.reason
    );
}

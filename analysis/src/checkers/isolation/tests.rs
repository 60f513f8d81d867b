//! Hand-written histories, one per anomaly class: each must be found and named exactly,
//! and the near misses (an anomaly a weaker model allows, an info append that is read)
//! must not make the verdict invalid.

use super::*;
use crate::history::{Op, OpType};
use serde_json::json;

/// Builds a history op by op; `index` and `time` follow the order of calls.
#[derive(Default)]
struct H {
    ops: Vec<Op>,
}

impl H {
    fn push(&mut self, kind: OpType, p: u64, value: Value) -> &mut Self {
        self.ops.push(super::test_gen::txn_op(
            self.ops.len() as u64,
            kind,
            p,
            value,
        ));
        self
    }
    fn invoke(&mut self, p: u64, v: Value) -> &mut Self {
        self.push(OpType::Invoke, p, v)
    }
    fn ok(&mut self, p: u64, v: Value) -> &mut Self {
        self.push(OpType::Ok, p, v)
    }
    fn fail(&mut self, p: u64, v: Value) -> &mut Self {
        self.push(OpType::Fail, p, v)
    }
    fn info(&mut self, p: u64, v: Value) -> &mut Self {
        self.push(OpType::Info, p, v)
    }
    /// A txn invoked and completed `ok` at once, with `v` as its completed value (reads
    /// in the invoke are `null`).
    fn txn(&mut self, p: u64, v: Value) -> &mut Self {
        self.invoke(p, blank_reads(&v)).ok(p, v)
    }
    fn history(&self) -> History {
        History::new(self.ops.clone())
    }
}

fn blank_reads(v: &Value) -> Value {
    Value::Array(
        v.as_array()
            .unwrap()
            .iter()
            .map(|m| {
                if m[0] == "r" {
                    json!(["r", m[1], null])
                } else {
                    m.clone()
                }
            })
            .collect(),
    )
}

fn run(h: &H, model: TxnModel, consistency: ConsistencyModel) -> CheckerResult {
    check(
        &h.history(),
        &Opts {
            model,
            consistency,
            time_budget: None,
        },
    )
}

fn la(h: &H, c: ConsistencyModel) -> CheckerResult {
    run(h, TxnModel::ListAppend, c)
}

fn types(r: &CheckerResult) -> Vec<String> {
    r.details["anomaly_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

fn witness<'a>(r: &'a CheckerResult, ty: &str) -> &'a Value {
    r.anomalies
        .iter()
        .find(|a| a["type"] == ty)
        .unwrap_or_else(|| panic!("no {ty} witness in {:#?}", r.anomalies))
}

use ConsistencyModel as C;

/// T1 and T2 run concurrently (so no realtime edge relates them), `a` on process 0 and
/// `b` on process 1; then process 2 reads `finals` serially.
fn concurrent(a: Value, b: Value, finals: Value) -> H {
    let mut h = H::default();
    h.invoke(0, blank_reads(&a))
        .invoke(1, blank_reads(&b))
        .ok(0, a)
        .ok(1, b);
    h.txn(2, finals);
    h
}

#[test]
fn serial_history_is_valid() {
    let mut h = H::default();
    h.txn(0, json!([["append", 1, 1], ["r", 2, []]]))
        .txn(1, json!([["r", 1, [1]], ["append", 2, 5]]))
        .txn(0, json!([["append", 1, 2], ["r", 1, [1, 2]]]))
        .txn(1, json!([["r", 1, [1, 2]], ["r", 2, [5]]]));
    let r = la(&h, C::StrictSerializable);
    assert_eq!(r.valid, Validity::Valid, "{r:#?}");
    assert!(types(&r).is_empty());
    assert_eq!(r.counts["committed"], 4);
    assert_eq!(r.details["not"], json!([]));
}

#[test]
fn g0_write_cycle_is_named_g0() {
    let h = concurrent(
        json!([["append", "x", 1], ["append", "y", 1]]),
        json!([["append", "x", 2], ["append", "y", 2]]),
        json!([["r", "x", [1, 2]], ["r", "y", [2, 1]]]),
    );
    let r = la(&h, C::ReadUncommitted);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert_eq!(types(&r), ["G0"]);
    assert_eq!(r.details["not"], json!(["read-uncommitted"]));
    let w = witness(&r, "G0");
    assert_eq!(w["steps"].as_array().unwrap().len(), 2);
    assert!(w["steps"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["kind"] == "ww"));
    let why = w["steps"][0]["why"].as_str().unwrap();
    assert!(why.contains("appended") && why.ends_with(": ww"), "{why}");
}

#[test]
fn g1c_read_cycle_is_named_g1c() {
    let h = concurrent(
        json!([["append", "x", 1], ["r", "y", [1]]]),
        json!([["append", "y", 1], ["r", "x", [1]]]),
        json!([["r", "x", [1]], ["r", "y", [1]]]),
    );
    let r = la(&h, C::ReadCommitted);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert_eq!(types(&r), ["G1c"]);
    assert!(witness(&r, "G1c")["steps"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["kind"] == "wr"));
}

fn g_single() -> H {
    concurrent(
        json!([["r", "x", []], ["r", "y", [1]]]),
        json!([["append", "x", 1], ["append", "y", 1]]),
        json!([["r", "x", [1]], ["r", "y", [1]]]),
    )
}

#[test]
fn g_single_is_found_and_proscribed_by_snapshot_isolation() {
    let r = la(&g_single(), C::SnapshotIsolation);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert_eq!(types(&r), ["G-single-item"]);
    let w = witness(&r, "G-single-item");
    let kinds: Vec<&str> = w["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.iter().filter(|k| **k == "rw").count(), 1);
    assert_eq!(kinds.len(), 2);
    let rw = w["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["kind"] == "rw")
        .unwrap();
    assert_eq!(
        rw["why"],
        "T2 read key \"x\" = [] and T3 appended 1, the first element: rw"
    );
    assert_eq!(
        r.details["not"],
        json!(["consistent-view", "repeatable-read"])
    );
}

#[test]
fn g_single_is_allowed_and_valid_under_read_committed() {
    let r = la(&g_single(), C::ReadCommitted);
    assert_eq!(r.valid, Validity::Valid, "{r:#?}");
    assert!(
        types(&r).is_empty(),
        "as Elle, only proscribed anomalies are reported: {r:#?}"
    );
    assert_eq!(r.details["allowed_anomaly_types"], json!(["G-single-item"]));
    assert!(
        r.anomalies.is_empty(),
        "no witness of an allowed anomaly: {r:#?}"
    );
    assert!(
        r.details["not"].as_array().is_some_and(|n| !n.is_empty()),
        "the boundary still counts it: {r:#?}"
    );
}

#[test]
fn a_nil_read_in_a_committed_list_append_txn_is_the_empty_list() {
    // T2 read key x as nil (the empty list) after T1's append of 1 was acknowledged:
    // a stale read, G-single-item-realtime, exactly as the same read of [] would be.
    let (mut nil, mut empty) = (H::default(), H::default());
    nil.txn(0, json!([["append", "x", 1]]))
        .txn(1, json!([["r", "x", null]]));
    empty
        .txn(0, json!([["append", "x", 1]]))
        .txn(1, json!([["r", "x", []]]));
    let (a, b) = (
        la(&nil, C::StrictSerializable),
        la(&empty, C::StrictSerializable),
    );
    assert_eq!(a.valid, Validity::Invalid, "{a:#?}");
    assert_eq!(types(&a), types(&b));
}

#[test]
fn write_skew_is_g2_item() {
    let h = concurrent(
        json!([["r", "x", []], ["append", "y", 1]]),
        json!([["r", "y", []], ["append", "x", 1]]),
        json!([["r", "x", [1]], ["r", "y", [1]]]),
    );
    let r = la(&h, C::Serializable);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert_eq!(types(&r), ["G2-item"]);
    // Snapshot isolation allows write skew.
    assert_eq!(la(&h, C::SnapshotIsolation).valid, Validity::Valid);
}

#[test]
fn two_separated_anti_dependencies_are_g_nonadjacent_item() {
    // T1 -rw-> T2 -wr-> T3 -rw-> T4 -wr-> T1, all four concurrent.
    let txns = [
        json!([["r", "x", []], ["r", "v", [1]]]),
        json!([["append", "x", 1], ["append", "z", 1]]),
        json!([["r", "z", [1]], ["r", "w", []]]),
        json!([["append", "w", 1], ["append", "v", 1]]),
    ];
    let mut h = H::default();
    for (p, t) in txns.iter().enumerate() {
        h.invoke(p as u64, blank_reads(t));
    }
    for (p, t) in txns.iter().enumerate() {
        h.ok(p as u64, t.clone());
    }
    h.txn(
        9,
        json!([
            ["r", "x", [1]],
            ["r", "z", [1]],
            ["r", "w", [1]],
            ["r", "v", [1]]
        ]),
    );
    let r = la(&h, C::SnapshotIsolation);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert_eq!(types(&r), ["G-nonadjacent-item"]);
    let kinds: Vec<&str> = witness(&r, "G-nonadjacent-item")["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.len(), 4);
    assert_eq!(kinds.iter().filter(|k| **k == "rw").count(), 2);
    assert_eq!(la(&h, C::ReadCommitted).valid, Validity::Valid);
}

#[test]
fn aborted_read_is_g1a() {
    let mut h = H::default();
    h.invoke(0, json!([["append", "x", 1]]))
        .fail(0, json!([["append", "x", 1]]));
    h.txn(1, json!([["r", "x", [1]]]));
    let r = la(&h, C::ReadCommitted);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert_eq!(types(&r), ["G1a"]);
    assert_eq!(witness(&r, "G1a")["element"], 1);
    // read-uncommitted allows it: listed among the allowed anomalies, and with no
    // dependency between committed transactions, nothing else was tested: unknown.
    let r = la(&h, C::ReadUncommitted);
    assert_eq!(r.valid, Validity::Unknown, "{r:#?}");
    assert!(types(&r).is_empty());
    assert_eq!(r.details["allowed_anomaly_types"], json!(["G1a"]));
}

#[test]
fn an_element_appended_twice_makes_it_unknown_never_invalid() {
    // The failed and the acknowledged txn both append 1 to x: the read of [1] may be the
    // acknowledged one's, so it is no proof of an aborted read.
    let mut h = H::default();
    h.invoke(0, json!([["append", "x", 1]]))
        .fail(0, json!([["append", "x", 1]]));
    h.txn(1, json!([["append", "x", 1]]));
    h.txn(2, json!([["r", "x", [1]]]));
    let r = la(&h, C::StrictSerializable);
    assert_eq!(r.valid, Validity::Unknown, "{r:#?}");
    assert!(
        r.reason
            .as_deref()
            .unwrap_or_default()
            .contains("appended elements must be unique"),
        "{r:#?}"
    );
}

#[test]
fn a_read_info_append_is_committed_not_g1a() {
    let mut h = H::default();
    h.invoke(0, json!([["append", "x", 1]]))
        .info(0, json!([["append", "x", 1]]));
    h.txn(1, json!([["r", "x", [1]]]));
    let r = la(&h, C::StrictSerializable);
    assert_eq!(r.valid, Validity::Valid, "{r:#?}");
    assert!(types(&r).is_empty());
    assert_eq!(r.counts["info"], 1);
}

#[test]
fn intermediate_read_is_g1b() {
    let mut h = H::default();
    h.invoke(0, json!([["append", "x", 1], ["append", "x", 2]]));
    h.txn(1, json!([["r", "x", [1]]]));
    h.ok(0, json!([["append", "x", 1], ["append", "x", 2]]));
    h.txn(1, json!([["r", "x", [1, 2]]]));
    let r = la(&h, C::ReadCommitted);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    // The read of the intermediate state also closes a wr/rw cycle with its writer, a
    // G-single-item read-committed allows.
    assert_eq!(types(&r), ["G1b"]);
    assert_eq!(r.details["allowed_anomaly_types"], json!(["G-single-item"]));
    assert_eq!(witness(&r, "G1b")["element"], 1);
}

#[test]
fn own_append_unseen_is_internal() {
    let mut h = H::default();
    h.txn(0, json!([["append", "x", 1], ["r", "x", []]]));
    h.txn(0, json!([["r", "x", [1]]]));
    let r = la(&h, C::Serializable);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert_eq!(types(&r), ["internal"]);
    assert_eq!(witness(&r, "internal")["expected"], "[... 1]");
}

#[test]
fn committed_append_after_failed_one_is_dirty_update() {
    let mut h = H::default();
    h.invoke(0, json!([["append", "x", 1]]))
        .fail(0, json!([["append", "x", 1]]));
    h.txn(1, json!([["append", "x", 2]]));
    h.txn(1, json!([["r", "x", [1, 2]]]));
    let r = la(&h, C::ReadCommitted);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert_eq!(types(&r), ["G1a", "dirty-update"]);
}

#[test]
fn two_read_modify_writes_of_one_state_are_lost_update() {
    let mut h = H::default();
    h.txn(0, json!([["append", "x", 0]]));
    let mut c = concurrent(
        json!([["r", "x", [0]], ["append", "x", 1]]),
        json!([["r", "x", [0]], ["append", "x", 2]]),
        json!([["r", "x", [0, 1, 2]]]),
    );
    h.ops.append(&mut c.ops);
    let h = renumber(h);
    let r = la(&h, C::RepeatableRead);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert!(
        types(&r).contains(&"lost-update".to_string()),
        "{:?}",
        types(&r)
    );
    assert_eq!(
        witness(&r, "lost-update")["txns"].as_array().unwrap().len(),
        2
    );
}

fn renumber(mut h: H) -> H {
    for (i, op) in h.ops.iter_mut().enumerate() {
        op.index = i as u64;
        op.time = i as u64 * 1000;
    }
    h
}

#[test]
fn an_incompatible_order_witness_names_each_read_with_its_own_transaction() {
    let mut h = H::default();
    h.txn(0, json!([["append", "x", 1]]))
        .txn(0, json!([["append", "x", 2]]))
        .txn(0, json!([["append", "x", 3]]));
    h.txn(1, json!([["r", "x", [1, 2]]]))
        .txn(2, json!([["r", "x", [1, 3]]]));
    let r = la(&h, C::ReadCommitted);
    let w = r
        .anomalies
        .iter()
        .find(|a| a["type"] == "incompatible-order")
        .expect("incompatible-order");
    let pairs: Vec<(Value, Value)> = w["txns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["process"].clone(), t["value"][0][2].clone()))
        .collect();
    assert_ne!(
        w["txns"][0]["txn"], w["txns"][1]["txn"],
        "two reads, two transactions: {w:#}"
    );
    for (i, (process, read)) in pairs.iter().enumerate() {
        assert_eq!(
            read, &w["values"][i],
            "the transaction shown read the list shown: {w:#}"
        );
        assert_eq!(
            process,
            &json!(if read == &json!([1, 2]) { 1 } else { 2 }),
            "{w:#}"
        );
    }
}

#[test]
fn diverging_reads_are_incompatible_order() {
    let mut h = H::default();
    h.txn(0, json!([["append", "x", 1]]))
        .txn(0, json!([["append", "x", 2]]))
        .txn(0, json!([["append", "x", 3]]));
    h.txn(1, json!([["r", "x", [1, 2]]]))
        .txn(1, json!([["r", "x", [1, 3]]]));
    let r = la(&h, C::ReadCommitted);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert!(
        types(&r).contains(&"incompatible-order".to_string()),
        "{:?}",
        types(&r)
    );
}

#[test]
fn repeated_element_is_duplicate_elements() {
    let mut h = H::default();
    h.txn(0, json!([["append", "x", 1]]));
    h.txn(1, json!([["r", "x", [1, 1]]]));
    let r = la(&h, C::ReadUncommitted);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert_eq!(types(&r), ["duplicate-elements"]);
}

#[test]
fn element_nobody_appended_is_garbage_read() {
    let mut h = H::default();
    h.txn(0, json!([["append", "x", 1]]));
    h.txn(1, json!([["r", "x", [1, 7]]]));
    let r = la(&h, C::ReadUncommitted);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert_eq!(types(&r), ["garbage-read"]);
    assert_eq!(witness(&r, "garbage-read")["element"], 7);
}

#[test]
fn reading_own_later_append_is_future_read() {
    let mut h = H::default();
    h.txn(0, json!([["r", "x", [1]], ["append", "x", 1]]));
    let r = la(&h, C::ReadAtomic);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert!(
        types(&r).contains(&"future-read".to_string()),
        "{:?}",
        types(&r)
    );
}

#[test]
fn unobserved_acknowledged_append_with_final_read_is_lost_append() {
    let mut h = H::default();
    h.txn(0, json!([["append", "x", 1]]))
        .txn(1, json!([["append", "x", 2]]));
    h.txn(2, json!([["r", "x", [2]]]));
    let r = la(&h, C::StrictSerializable);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert!(
        types(&r).contains(&"lost-append".to_string()),
        "{:?}",
        types(&r)
    );
    assert_eq!(witness(&r, "lost-append")["element"], 1);
    // Serializable may order the final read first: allowed, not a violation.
    let r = la(&h, C::Serializable);
    assert!(types(&r).is_empty());
    assert_eq!(r.details["allowed_anomaly_types"], json!(["lost-append"]));
    assert_eq!(r.valid, Validity::Valid, "{r:#?}");
}

#[test]
fn an_append_seen_after_an_aborted_element_of_an_incompatible_read_is_not_lost() {
    // T3's read [1 9 3] is incompatible with the final, longest [1 4 5 6] and shows the failed T1's 9
    // (G1a); it also shows T2's 3, so 3 was observed: not a lost-append, whatever else
    // the read shows.
    let mut h = H::default();
    h.txn(0, json!([["append", "x", 1]]))
        .txn(4, json!([["append", "x", 4], ["append", "x", 5], ["append", "x", 6]]));
    h.invoke(1, json!([["append", "x", 9]]))
        .fail(1, json!([["append", "x", 9]]));
    h.txn(2, json!([["append", "x", 3]]));
    h.txn(3, json!([["r", "x", [1, 9, 3]]]));
    h.txn(5, json!([["r", "x", [1, 4, 5, 6]]]));
    let r = la(&h, C::StrictSerializable);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    let lost: Vec<&Value> = r
        .anomalies
        .iter()
        .filter(|a| a["type"] == "lost-append")
        .map(|a| &a["element"])
        .collect();
    assert!(!lost.contains(&&json!(3)), "3 was read by T3: {r:#?}");
    assert!(types(&r).contains(&"G1a".to_string()), "{:?}", types(&r));
}

#[test]
fn stale_read_after_completion_is_g_single_realtime() {
    let mut h = H::default();
    h.txn(0, json!([["append", "x", 1]]));
    h.txn(1, json!([["r", "x", []]]));
    h.txn(2, json!([["r", "x", [1]]]));
    let r = la(&h, C::StrictSerializable);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert_eq!(types(&r), ["G-single-item-realtime"]);
    let w = witness(&r, "G-single-item-realtime");
    let kinds: Vec<&str> = w["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["rw", "realtime"]);
    assert_eq!(la(&h, C::Serializable).valid, Validity::Valid);
}

#[test]
fn stale_read_on_the_same_process_is_g_single_process() {
    let mut h = H::default();
    h.txn(0, json!([["append", "x", 1]]));
    h.txn(0, json!([["r", "x", []]]));
    h.txn(2, json!([["r", "x", [1]]]));
    let r = la(&h, C::StrongSessionSerializable);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert_eq!(types(&r), ["G-single-item-process"]);
}

#[test]
fn a_key_never_read_is_noted_and_does_not_make_it_unknown() {
    let mut h = H::default();
    h.txn(0, json!([["append", "x", 1], ["append", "y", 1]]));
    h.txn(1, json!([["r", "x", [1]]]));
    let r = la(&h, C::StrictSerializable);
    assert_eq!(r.valid, Validity::Valid, "{r:#?}");
    assert_eq!(r.details["unread_keys"], json!(["y"]));
    let notes = r.details["notes"].to_string();
    assert!(
        notes.contains("never read") && notes.contains("cannot be seen"),
        "{notes}"
    );
    // The same shape in rw-register: T1 [w 0 1] [w 1 1]; T2 [r 1 1].
    let mut h = H::default();
    h.txn(0, json!([["w", 0, 1], ["w", 1, 1]]));
    h.txn(1, json!([["r", 1, 1]]));
    let r = run(&h, TxnModel::RwRegister, C::Serializable);
    assert_eq!(r.valid, Validity::Valid, "{r:#?}");
    assert_eq!(r.details["unread_keys"], json!([0]));
}

#[test]
fn no_inferred_edge_at_all_is_unknown() {
    let mut h = H::default();
    h.txn(0, json!([["append", "x", 1]]));
    h.txn(1, json!([["r", "y", []]]));
    let r = la(&h, C::StrictSerializable);
    assert_eq!(r.valid, Validity::Unknown, "{r:#?}");
    assert!(
        r.reason.as_deref().unwrap().contains("no dependency"),
        "{:?}",
        r.reason
    );
}

/// Fix for reads that are not a key's first micro-op in their transaction: each is judged.
#[test]
fn rw_register_judges_every_external_read_not_only_the_first() {
    // T1 [w 0 1] fails; T2 [r 0 nil] [r 0 1]: G1a (Adya, Elle).
    let mut h = H::default();
    h.invoke(0, json!([["w", 0, 1]]))
        .fail(0, json!([["w", 0, 1]]));
    h.txn(1, json!([["r", 0, null], ["r", 0, 1]]));
    let r = run(&h, TxnModel::RwRegister, C::ReadCommitted);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert_eq!(types(&r), ["G1a"]);
    // T1 [w 0 1] [w 0 2]; T2 [w 0 3] [r 0 1]: G1b, a read of an intermediate version after
    // the reader's own write.
    let mut h = H::default();
    h.txn(0, json!([["w", 0, 1], ["w", 0, 2]]));
    h.txn(1, json!([["w", 0, 3], ["r", 0, 1]]));
    let r = run(&h, TxnModel::RwRegister, C::ReadCommitted);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert_eq!(types(&r), ["G1b"]);
    // A second read of a committed value gives its wr edge: T2 [r 0 nil] [r 0 1] after T1
    // [w 0 1] is a read skew within one transaction (rw T2 -> T1, wr T1 -> T2).
    let mut h = H::default();
    h.invoke(0, json!([["w", 0, 1]]))
        .invoke(1, json!([["r", 0, null], ["r", 0, null]]))
        .ok(0, json!([["w", 0, 1]]))
        .ok(1, json!([["r", 0, null], ["r", 0, 1]]));
    let r = run(&h, TxnModel::RwRegister, C::RepeatableRead);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert!(
        types(&r).contains(&"G-single-item".to_string()),
        "{:?}",
        types(&r)
    );
}

/// Two equally long reads of a key that differ: the order between them is a guess, so a
/// cycle needing it is not reported, whichever read comes first; incompatible-order is.
#[test]
fn a_cycle_needing_the_guessed_order_of_incompatible_reads_is_not_reported() {
    for swapped in [false, true] {
        let mut h = H::default();
        h.invoke(0, json!([["append", "x", 1], ["append", "y", 3]]))
            .invoke(1, json!([["append", "x", 2], ["append", "y", 4]]))
            .ok(0, json!([["append", "x", 1], ["append", "y", 3]]))
            .ok(1, json!([["append", "x", 2], ["append", "y", 4]]));
        let (a, b) = if swapped {
            (json!([2, 1]), json!([1, 2]))
        } else {
            (json!([1, 2]), json!([2, 1]))
        };
        h.txn(2, json!([["r", "x", a]]))
            .txn(3, json!([["r", "x", b]]))
            .txn(2, json!([["r", "y", [4, 3]]]));
        let r = la(&h, C::ReadUncommitted);
        assert_eq!(r.valid, Validity::Unknown, "swapped {swapped}: {r:#?}");
        assert!(types(&r).is_empty(), "swapped {swapped}: {:?}", types(&r));
        assert!(
            r.reason.as_deref().unwrap().contains("incompatible"),
            "{:?}",
            r.reason
        );
        let r = la(&h, C::ReadCommitted);
        assert_eq!(r.valid, Validity::Invalid, "swapped {swapped}: {r:#?}");
        assert_eq!(types(&r), ["incompatible-order"], "swapped {swapped}");
    }
}

/// Where the incompatible reads agree (their common prefix), their edges stay: a G0 on it
/// is still found.
#[test]
fn a_cycle_on_the_common_prefix_of_incompatible_reads_is_reported() {
    let mut h = H::default();
    h.invoke(0, json!([["append", "x", 1], ["append", "y", 4]]))
        .invoke(1, json!([["append", "x", 2], ["append", "y", 5]]))
        .ok(0, json!([["append", "x", 1], ["append", "y", 4]]))
        .ok(1, json!([["append", "x", 2], ["append", "y", 5]]));
    h.txn(0, json!([["append", "x", 3]]));
    h.txn(2, json!([["r", "x", [1, 2, 3]]]))
        .txn(3, json!([["r", "x", [1, 2]]]))
        .txn(3, json!([["r", "x", [1, 3]]]))
        .txn(2, json!([["r", "y", [5, 4]]]));
    let r = la(&h, C::ReadUncommitted);
    // [1 2 3] and [1 3] disagree past [1]; ww 1 -> ... is agreed, 1 -> 2 is not: x's
    // agreed order is [1], so the only x edge from T0 is ww to every later appender.
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert_eq!(types(&r), ["G0"]);
}

#[test]
fn no_committed_transaction_is_unknown() {
    let mut h = H::default();
    h.invoke(0, json!([["append", "x", 1]]))
        .fail(0, json!([["append", "x", 1]]));
    assert_eq!(la(&h, C::StrictSerializable).valid, Validity::Unknown);
}

#[test]
fn exhausted_time_budget_is_unknown_not_invalid() {
    let r = check(
        &g_single().history(),
        &Opts {
            model: TxnModel::ListAppend,
            consistency: C::SnapshotIsolation,
            time_budget: Some(Duration::ZERO),
        },
    );
    assert_eq!(r.valid, Validity::Unknown, "{r:#?}");
    assert!(r.reason.as_deref().unwrap().contains("time budget"));
}

#[test]
fn malformed_transaction_is_unknown_naming_the_op() {
    let mut h = H::default();
    h.txn(0, json!([["incr", "x", 1]]));
    let r = la(&h, C::StrictSerializable);
    assert_eq!(r.valid, Validity::Unknown);
    let why = r.reason.unwrap();
    assert!(
        why.contains("op 1: micro-op 1: unknown function \"incr\""),
        "{why}"
    );
    let mut h = H::default();
    h.ok(3, json!([["r", "x", [1]]]));
    let why = la(&h, C::StrictSerializable).reason.unwrap();
    assert!(
        why.contains("op 0: a transaction completion without a pending invoke of process 3"),
        "{why}"
    );
}

#[test]
fn rw_register_g_single_and_write_skew() {
    let h = concurrent(
        json!([["r", "x", null], ["r", "y", 1]]),
        json!([["w", "x", 1], ["w", "y", 1]]),
        json!([["r", "x", 1], ["r", "y", 1]]),
    );
    let r = run(&h, TxnModel::RwRegister, C::SnapshotIsolation);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert_eq!(types(&r), ["G-single-item"]);
    let h = concurrent(
        json!([["r", "x", null], ["w", "y", 1]]),
        json!([["r", "y", null], ["w", "x", 1]]),
        json!([["r", "x", 1], ["r", "y", 1]]),
    );
    let r = run(&h, TxnModel::RwRegister, C::Serializable);
    assert_eq!(r.valid, Validity::Invalid, "{r:#?}");
    assert_eq!(types(&r), ["G2-item"]);
    assert!(r.details["notes"][0]
        .as_str()
        .unwrap()
        .contains("not inferred"));
}

#[test]
fn rw_register_g1a_g1b_internal() {
    let mut h = H::default();
    h.invoke(0, json!([["w", "x", 1]]))
        .fail(0, json!([["w", "x", 1]]));
    h.txn(1, json!([["r", "x", 1]]));
    let r = run(&h, TxnModel::RwRegister, C::ReadCommitted);
    assert_eq!(types(&r), ["G1a"]);
    assert_eq!(r.valid, Validity::Invalid);

    let mut h = H::default();
    h.txn(0, json!([["w", "x", 1], ["w", "x", 2]]));
    h.txn(1, json!([["r", "x", 1]]));
    let r = run(&h, TxnModel::RwRegister, C::ReadCommitted);
    assert_eq!(types(&r), ["G1b"]);

    let mut h = H::default();
    h.txn(0, json!([["w", "x", 1], ["r", "x", 2]]));
    h.txn(0, json!([["w", "x", 2]]));
    let r = run(&h, TxnModel::RwRegister, C::Serializable);
    assert!(
        types(&r).contains(&"internal".to_string()),
        "{:?}",
        types(&r)
    );
}

use super::test_gen::{generate, GenConfig};

fn gen(txns: usize, inject: bool, seed: u64) -> History {
    generate(&GenConfig {
        txns,
        keys: 10,
        processes: 8,
        info: 0.05,
        max_appends: 16,
        inject_g_single: inject,
        seed,
    })
}

#[test]
fn generated_serial_histories_are_valid_under_strict_serializable() {
    for seed in 0..5 {
        let r = check(&gen(2000, false, seed), &Opts::default());
        assert_eq!(
            r.valid,
            Validity::Valid,
            "seed {seed}: {:?} {:?}",
            r.reason,
            types(&r)
        );
    }
}

#[test]
fn injected_g_single_in_a_generated_history_is_found_and_named() {
    for seed in 0..5 {
        let r = check(&gen(2000, true, seed), &Opts::default());
        assert_eq!(r.valid, Validity::Invalid, "seed {seed}");
        assert_eq!(types(&r), ["G-single-item"], "seed {seed}");
    }
}

#[test]
fn a_history_read_compact_is_judged_exactly_as_the_same_history_read_as_json() {
    use crate::formats::{jsonl, TxnForm};
    let mut h = H::default();
    h.txn(0, json!([["append", "x", 1], ["append", "y", 1]]));
    h.txn(
        1,
        json!([["r", "x", [1]], ["append", "x", 2], ["r", "y", ["e\"é", 1]]]),
    );
    h.invoke(2, json!([["append", "x", 3]]))
        .fail(2, json!([["append", "x", 3]]));
    h.txn(3, json!([["r", "x", [1, 3]], ["r", "y", [1]]]));
    for history in [h.history(), gen(2000, true, 3)] {
        let mut text = Vec::new();
        let mut w = jsonl::JsonlWriter::new(&mut text);
        history.ops.iter().for_each(|op| w.write_op(op).unwrap());
        let read = |form| {
            jsonl::read_history_parallel_as(&text[..], "h.jsonl", form)
                .unwrap()
                .0
        };
        let (as_json, compact) = (read(TxnForm::Json), read(TxnForm::Compact));
        assert_eq!(as_json.ops, history.ops, "the JSON form is the file's");
        assert!(compact.txn_table.is_some() && compact.ops.iter().all(|op| op.value.is_null()));
        for (p, op) in history.ops.iter().enumerate() {
            assert_eq!(*compact.txn_value(p), op.value, "op {p}");
        }
        for model in [C::StrictSerializable, C::ReadCommitted] {
            let opts = Opts {
                consistency: model,
                ..Opts::default()
            };
            let (a, b) = (check(&as_json, &opts), check(&compact, &opts));
            if model == C::StrictSerializable {
                assert_eq!(a.valid, Validity::Invalid, "the histories hold anomalies");
            }
            assert_eq!(
                serde_json::to_string(&a).unwrap(),
                serde_json::to_string(&b).unwrap()
            );
        }
    }
}

/// Measurement, not a test of speed: `cargo test --release -p analysis measure_isolation
/// -- --ignored --nocapture` generates (ISO_TXNS, default 100,000) a valid and a G-single
/// history, writes each as JSONL, reads it back and checks it, printing the times and the
/// RSS. With ISO_HISTORY=<file> it only reads and checks that file (the whole-process cost
/// of analysing a history); ISO_KEEP=<dir> keeps the generated files there.
#[test]
#[ignore]
fn measure_isolation_list_append() {
    if let Ok(path) = std::env::var("ISO_HISTORY") {
        let expect = if path.contains("gsingle") {
            Validity::Invalid
        } else {
            Validity::Valid
        };
        measure_file(std::path::Path::new(&path), expect);
        return;
    }
    let n: usize = std::env::var("ISO_TXNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    let out = std::env::var("ISO_KEEP")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| dir.path().to_path_buf());
    for inject in [false, true] {
        let t0 = Instant::now();
        let h = generate(&GenConfig {
            txns: n,
            keys: 100,
            processes: 50,
            info: 0.01,
            max_appends: 32,
            inject_g_single: inject,
            seed: 7,
        });
        let path = out.join(format!(
            "la-{n}-{}.jsonl",
            if inject { "gsingle" } else { "valid" }
        ));
        crate::formats::jsonl::write_history(&path, &h).unwrap();
        println!("generated {} in {:?}", path.display(), t0.elapsed());
        drop(h);
        measure_file(
            &path,
            if inject {
                Validity::Invalid
            } else {
                Validity::Valid
            },
        );
    }
}

fn measure_file(path: &std::path::Path, expect: Validity) {
    let t0 = Instant::now();
    let bytes = std::fs::read(path).unwrap();
    let (h, _) = crate::formats::jsonl::read_history_bytes(&bytes, "history.jsonl").unwrap();
    let file_mb = bytes.len() / 1_000_000;
    drop(bytes);
    let t1 = Instant::now();
    let rss_before = proc_status_kb("VmRSS");
    let r = check(&h, &Opts::default());
    let t2 = Instant::now();
    println!(
        "{}: file={file_mb}MB read={:?} check={:?} rss_before_check={}MB peak_rss={}MB valid={:?} types={:?} edges={}",
        path.file_name().unwrap().to_string_lossy(),
        t1 - t0,
        t2 - t1,
        rss_before / 1024,
        proc_status_kb("VmHWM") / 1024,
        r.valid,
        types(&r),
        r.counts["edges"]
    );
    assert_eq!(r.valid, expect);
}

/// A `/proc/self/status` field in kB (0 where there is none).
fn proc_status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Measurement of a broken history with one giant component: a generated history (ISO_TXNS,
/// default 20,000) whose reads lose a random tail 30 % of the time. `cargo test --release
/// -p analysis --lib measure_isolation_stale -- --ignored --nocapture`.
#[test]
#[ignore]
fn measure_isolation_stale_reads_everywhere() {
    use rand::{RngExt, SeedableRng};
    let n: usize = std::env::var("ISO_TXNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let mut h = generate(&GenConfig {
        txns: n,
        keys: 20,
        processes: 20,
        info: 0.01,
        max_appends: 32,
        inject_g_single: false,
        seed: 3,
    });
    let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(1);
    for op in h.ops.iter_mut() {
        if op.kind != OpType::Ok {
            continue;
        }
        for m in op.value.as_array_mut().unwrap() {
            if m[0] == "r" {
                if let Some(l) = m[2].as_array_mut() {
                    if !l.is_empty() && rng.random_bool(0.3) {
                        let cut = rng.random_range(0..l.len());
                        l.truncate(cut);
                    }
                }
            }
        }
    }
    let t = Instant::now();
    let r = check(&h, &Opts::default());
    println!(
        "stale n={n}: {:?} {:?} {:?} {}",
        t.elapsed(),
        r.valid,
        types(&r),
        r.details["cycle_search"]
    );
    assert!(types(&r).contains(&"G-single-item".to_string()));
}

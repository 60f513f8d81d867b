//! Evidence that a transactional run exercised what it claims: how many committed
//! transactions touched keys of two groups or more, and how many were in flight across a
//! split or a move. Recorded in the isolation checker's `counts` (`multi_group_committed`,
//! `in_flight_across_split`) and `details.exercise`; docs/results-format.md § isolation.
//!
//! - A transaction's groups are those the catalog the watcher recorded last before its
//!   invocation (`process` `"watcher"`, `f` `"catalog"`) assigns to its keys (the history's
//!   keys, compared with the routes' `start`/`end` as strings). Without any recorded
//!   catalog the count is unknown (`null`, and no count), never 0.
//! - A committed transaction was in flight across a split or move when a `start-split`,
//!   `start-move` or `start-txn-move` event not marked ineffective lies between its
//!   invocation and its completion in the history.
//!
//! Invariant: this only adds evidence — it never changes a verdict, a witness or another
//! count.

use crate::history::{FaultEdge, FaultEvent, History, Op, OpType, Process};
use crate::verdict::CheckerResult;
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};

/// The faults that change which group serves a key, or a route under a transaction.
const ROUTE_FAULTS: [&str; 3] = ["split", "move", "txn-move"];

/// What the history shows of a run's exercise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exercise {
    /// `None`: the history records no catalog.
    pub multi_group_committed: Option<u64>,
    pub in_flight_across_split: u64,
    pub catalogs: u64,
    pub route_fault_starts: u64,
}

/// The routes of a catalog snapshot: (start, end, group); an empty end is unbounded.
fn routes(catalog: &Value) -> Vec<(String, String, u64)> {
    let Some(list) = catalog["routes"].as_array() else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|r| {
            Some((
                r["start"].as_str()?.to_string(),
                r["end"].as_str()?.to_string(),
                r["group"].as_u64()?,
            ))
        })
        .collect()
}

fn group_of(routes: &[(String, String, u64)], key: &str) -> Option<u64> {
    routes
        .iter()
        .find(|(s, e, _)| s.as_str() <= key && (e.is_empty() || key < e.as_str()))
        .map(|(_, _, g)| *g)
}

/// The string keys of a transaction's micro-ops (`[f, key, value]`).
fn txn_keys(value: &Value) -> impl Iterator<Item = &str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m.get(1).and_then(Value::as_str))
}

fn is_route_fault_start(op: &Op) -> bool {
    FaultEvent::from_op(op).is_some_and(|e| {
        e.edge == FaultEdge::Start
            && ROUTE_FAULTS.contains(&e.fault.as_str())
            && e.value.effective != Some(false)
    })
}

/// A transaction in flight: the groups of its keys at invocation, and the route-fault
/// starts seen at its invocation.
struct Pending {
    groups: usize,
    faults_before: u64,
}

/// Reads the evidence off `history`.
pub fn of(history: &History) -> Exercise {
    let mut routes_now: Option<Vec<(String, String, u64)>> = None;
    let mut pending: HashMap<u64, Pending> = HashMap::new();
    let mut ex = Exercise {
        multi_group_committed: None,
        in_flight_across_split: 0,
        catalogs: 0,
        route_fault_starts: 0,
    };
    let mut multi = 0;
    for (position, op) in history.ops.iter().enumerate() {
        match op.process {
            Process::Watcher if op.f == "catalog" => {
                ex.catalogs += 1;
                routes_now = Some(routes(&op.value));
            }
            Process::Nemesis if is_route_fault_start(op) => ex.route_fault_starts += 1,
            Process::Client(p) if op.f == crate::ops::TXN => match op.kind {
                OpType::Invoke => {
                    // The value (from the compact table when the reader built one: the
                    // op's own `value` is `null` then) only once a catalog says where keys
                    // live: building it for every transaction is most of this pass.
                    let groups = routes_now.as_deref().map_or(0, |r| {
                        let value = history.txn_value(position);
                        let g: BTreeSet<u64> =
                            txn_keys(&value).filter_map(|k| group_of(r, k)).collect();
                        g.len()
                    });
                    pending.insert(
                        p,
                        Pending {
                            groups,
                            faults_before: ex.route_fault_starts,
                        },
                    );
                }
                OpType::Ok => {
                    if let Some(t) = pending.remove(&p) {
                        multi += u64::from(t.groups >= 2);
                        ex.in_flight_across_split +=
                            u64::from(ex.route_fault_starts > t.faults_before);
                    }
                }
                _ => {
                    pending.remove(&p);
                }
            },
            _ => {}
        }
    }
    ex.multi_group_committed = (ex.catalogs > 0).then_some(multi);
    ex
}

/// Adds the evidence of `history` to an isolation result.
pub fn record(history: &History, result: &mut CheckerResult) {
    let ex = of(history);
    if let Some(n) = ex.multi_group_committed {
        result.counts.insert("multi_group_committed".into(), n);
    }
    result
        .counts
        .insert("in_flight_across_split".into(), ex.in_flight_across_split);
    if let Value::Object(details) = &mut result.details {
        details.insert(
            "exercise".into(),
            json!({
                "multi_group_committed": ex.multi_group_committed,
                "in_flight_across_split": ex.in_flight_across_split,
                "catalogs": ex.catalogs,
                "route_fault_starts": ex.route_fault_starts,
            }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(index: u64, process: Process, kind: OpType, f: &str, value: Value) -> Op {
        Op {
            index,
            kind,
            process,
            f: f.into(),
            key: None,
            value,
            time: index,
            node: None,
            error: None,
            meta: None,
        }
    }

    fn catalog(i: u64) -> Op {
        let routes = json!({"routes": [
            {"start": "", "end": "m", "group": 1},
            {"start": "m", "end": "", "group": 2}
        ]});
        op(i, Process::Watcher, OpType::Info, "catalog", routes)
    }

    fn txn(i: u64, p: u64, kind: OpType, keys: &[&str]) -> Op {
        let mops: Vec<Value> = keys.iter().map(|k| json!(["append", k, i])).collect();
        op(i, Process::Client(p), kind, "txn", Value::Array(mops))
    }

    fn split(i: u64, effective: bool) -> Op {
        op(
            i,
            Process::Nemesis,
            OpType::Info,
            "start-split",
            json!({"targets": [], "effective": effective}),
        )
    }

    #[test]
    fn a_committed_transaction_over_two_groups_counts_once() {
        let h = History::new(vec![
            catalog(0),
            txn(1, 0, OpType::Invoke, &["a", "x"]),
            txn(2, 1, OpType::Invoke, &["a", "b"]),
            txn(3, 0, OpType::Ok, &["a", "x"]),
            txn(4, 1, OpType::Ok, &["a", "b"]),
            txn(5, 2, OpType::Invoke, &["c", "z"]),
            txn(6, 2, OpType::Fail, &["c", "z"]),
        ]);
        let ex = of(&h);
        assert_eq!(
            ex.multi_group_committed,
            Some(1),
            "a+x spans groups 1 and 2; a+b does not; a failed one never counts"
        );
    }

    #[test]
    fn a_history_read_into_the_compact_table_counts_the_same() {
        let ops = vec![
            catalog(0),
            txn(1, 0, OpType::Invoke, &["a", "x"]),
            txn(2, 0, OpType::Ok, &["a", "x"]),
        ];
        let table = crate::history::txn_table::TxnTable::from_ops(&ops);
        let bare: Vec<Op> = ops
            .into_iter()
            .map(|mut o| {
                if o.f == "txn" {
                    o.value = Value::Null;
                }
                o
            })
            .collect();
        let h = History::with_txn_table(bare, table);
        assert_eq!(
            of(&h).multi_group_committed,
            Some(1),
            "keys read from the table"
        );
    }

    #[test]
    fn without_a_catalog_the_count_is_unknown_not_zero() {
        let h = History::new(vec![
            txn(0, 0, OpType::Invoke, &["a", "x"]),
            txn(1, 0, OpType::Ok, &["a", "x"]),
        ]);
        let mut r = CheckerResult::new(crate::verdict::Validity::Valid);
        r.details = json!({});
        record(&h, &mut r);
        assert_eq!(of(&h).multi_group_committed, None);
        assert!(!r.counts.contains_key("multi_group_committed"));
        assert_eq!(r.details["exercise"]["multi_group_committed"], Value::Null);
    }

    #[test]
    fn only_commits_spanning_an_effective_split_are_in_flight_across_it() {
        let h = History::new(vec![
            txn(0, 0, OpType::Invoke, &["a"]),
            txn(1, 1, OpType::Invoke, &["b"]),
            split(2, false),
            txn(3, 1, OpType::Ok, &["b"]),
            split(4, true),
            txn(5, 0, OpType::Ok, &["a"]),
            txn(6, 1, OpType::Invoke, &["b"]),
            txn(7, 1, OpType::Ok, &["b"]),
        ]);
        let ex = of(&h);
        assert_eq!((ex.in_flight_across_split, ex.route_fault_starts), (1, 1));
    }
}

//! Evidence that a transactional run exercised what it claims: how many committed
//! transactions touched keys of two groups or more, how many were in flight across a split
//! or a move, and how many route faults cut a route holding a key of a transaction in
//! flight. Recorded in the isolation checker's `counts` (`multi_group_committed`,
//! `in_flight_across_split`, `in_flight_across_own_split`, `route_faults_on_in_flight_keys`)
//! and `details.exercise`; docs/results-format.md § isolation.
//!
//! - Keys are compared with the catalog as the store routes them: the run's
//!   [`StoreKeys`] event maps each client key to its store key (a history without one: the
//!   client's keys themselves). Where the mapping is unknown, the counts that need it are
//!   left out (`null`), never guessed.
//! - A transaction's groups are those the catalog the watcher recorded last before its
//!   invocation (`process` `"watcher"`, `f` `"catalog"`) assigns to its store keys (compared
//!   with the routes' `start`/`end` as strings). Without any recorded catalog the count is
//!   unknown (`null`, and no count), never 0.
//! - A committed transaction was in flight across a split or move when a `start-split`,
//!   `start-move` or `start-txn-move` event not marked ineffective lies between its
//!   invocation and its completion in the history; across its *own* split when that event's
//!   key (`split_key`, else `key`) lay, in the catalog recorded last before it, in a route
//!   holding one of the transaction's store keys. Such an event counts once in
//!   `route_faults_on_in_flight_keys` when any transaction in flight then had a store key
//!   in that route.
//!
//! Invariant: this only adds evidence — it never changes a verdict, a witness or another
//! count.

use crate::history::events::STORE_KEYS;
use crate::history::store_keys::StoreKeys;
use crate::history::{FaultEdge, FaultEvent, History, Op, OpType, Process};
use crate::verdict::CheckerResult;
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};

/// The faults that change which group serves a key, or a route under a transaction.
const ROUTE_FAULTS: [&str; 3] = ["split", "move", "txn-move"];

/// What the history shows of a run's exercise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exercise {
    /// `None`: the history records no catalog, or its store keys are unknown.
    pub multi_group_committed: Option<u64>,
    pub in_flight_across_split: u64,
    /// `None`: the store keys are unknown.
    pub in_flight_across_own_split: Option<u64>,
    /// `None`: the store keys are unknown.
    pub route_faults_on_in_flight_keys: Option<u64>,
    pub catalogs: u64,
    pub route_fault_starts: u64,
}

type Routes = Vec<(String, String, u64)>;

/// The routes of a catalog snapshot: (start, end, group); an empty end is unbounded.
fn routes(catalog: &Value) -> Routes {
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

fn route_of<'a>(
    routes: &'a [(String, String, u64)],
    key: &str,
) -> Option<&'a (String, String, u64)> {
    routes
        .iter()
        .find(|(s, e, _)| s.as_str() <= key && (e.is_empty() || key < e.as_str()))
}

fn group_of(routes: &[(String, String, u64)], key: &str) -> Option<u64> {
    route_of(routes, key).map(|(_, _, g)| *g)
}

/// The string keys of a transaction's micro-ops (`[f, key, value]`).
fn txn_keys(value: &Value) -> impl Iterator<Item = &str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m.get(1).and_then(Value::as_str))
}

/// The key an effective route fault's start event was aimed at; `None` for any other op.
/// `Some(None)`: an effective route fault that names no key.
fn route_fault_start(op: &Op) -> Option<Option<String>> {
    let e = FaultEvent::from_op(op)?;
    let counts = e.edge == FaultEdge::Start
        && ROUTE_FAULTS.contains(&e.fault.as_str())
        && e.value.effective != Some(false);
    counts.then(|| e.value.split_key().map(str::to_string))
}

/// A transaction in flight: the groups of its keys at invocation, its store keys, the
/// route-fault starts seen at its invocation, and whether one cut a route of its own.
struct Pending {
    groups: usize,
    store_keys: Option<Vec<String>>,
    faults_before: u64,
    own_fault: bool,
}

/// The counts as they are built.
#[derive(Default)]
struct Tally {
    multi: u64,
    own: u64,
    aimed: u64,
}

/// Marks the transactions in flight with a store key in the route holding `key` (in
/// `routes`); whether there was one.
fn mark_in_route(pending: &mut HashMap<u64, Pending>, routes: &Routes, key: &str) -> bool {
    let Some((start, end, _)) = route_of(routes, key) else {
        return false;
    };
    let inside = |k: &str| start.as_str() <= k && (end.is_empty() || k < end.as_str());
    let mut any = false;
    for t in pending.values_mut() {
        if t.store_keys.iter().flatten().any(|k| inside(k)) {
            t.own_fault = true;
            any = true;
        }
    }
    any
}

/// Reads the evidence off `history`.
pub fn of(history: &History) -> Exercise {
    let mut layout = StoreKeys::Identity;
    let mut routes_now: Option<Routes> = None;
    let mut pending: HashMap<u64, Pending> = HashMap::new();
    let mut ex = Exercise {
        multi_group_committed: None,
        in_flight_across_split: 0,
        in_flight_across_own_split: None,
        route_faults_on_in_flight_keys: None,
        catalogs: 0,
        route_fault_starts: 0,
    };
    let mut tally = Tally::default();
    for (position, op) in history.ops.iter().enumerate() {
        match op.process {
            Process::Watcher if op.f == crate::history::events::CATALOG => {
                ex.catalogs += 1;
                routes_now = Some(routes(&op.value));
            }
            Process::Watcher if op.f == STORE_KEYS => {
                layout = serde_json::from_value(op.value.clone()).unwrap_or(StoreKeys::Unknown);
            }
            Process::Nemesis => {
                let Some(key) = route_fault_start(op) else {
                    continue;
                };
                ex.route_fault_starts += 1;
                if let (Some(key), Some(r)) = (key, routes_now.as_ref()) {
                    tally.aimed += u64::from(mark_in_route(&mut pending, r, &key));
                }
            }
            Process::Client(p) if op.f == crate::ops::TXN => match op.kind {
                OpType::Invoke => {
                    // The value (from the compact table when the reader built one: the
                    // op's own `value` is `null` then) only once a catalog says where keys
                    // live: building it for every transaction is most of this pass.
                    let store_keys: Option<Vec<String>> = routes_now.as_ref().and_then(|_| {
                        let value = history.txn_value(position);
                        txn_keys(&value).map(|k| layout.route_key(k)).collect()
                    });
                    let groups = match (routes_now.as_deref(), &store_keys) {
                        (Some(r), Some(keys)) => {
                            let g: BTreeSet<u64> =
                                keys.iter().filter_map(|k| group_of(r, k)).collect();
                            g.len()
                        }
                        _ => 0,
                    };
                    pending.insert(
                        p,
                        Pending {
                            groups,
                            store_keys,
                            faults_before: ex.route_fault_starts,
                            own_fault: false,
                        },
                    );
                }
                OpType::Ok => {
                    if let Some(t) = pending.remove(&p) {
                        tally.multi += u64::from(t.groups >= 2);
                        tally.own += u64::from(t.own_fault);
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
    let known = layout != StoreKeys::Unknown;
    ex.multi_group_committed = (ex.catalogs > 0 && known).then_some(tally.multi);
    ex.in_flight_across_own_split = known.then_some(tally.own);
    ex.route_faults_on_in_flight_keys = known.then_some(tally.aimed);
    ex
}

/// Adds the evidence of `history` to an isolation result.
pub fn record(history: &History, result: &mut CheckerResult) {
    let ex = of(history);
    let optional = [
        ("multi_group_committed", ex.multi_group_committed),
        ("in_flight_across_own_split", ex.in_flight_across_own_split),
        (
            "route_faults_on_in_flight_keys",
            ex.route_faults_on_in_flight_keys,
        ),
    ];
    for (name, n) in optional {
        if let Some(n) = n {
            result.counts.insert(name.into(), n);
        }
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
                "in_flight_across_own_split": ex.in_flight_across_own_split,
                "route_faults_on_in_flight_keys": ex.route_faults_on_in_flight_keys,
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

    fn store_keys(layout: &StoreKeys) -> Op {
        let value = serde_json::to_value(layout).unwrap();
        op(0, Process::Watcher, OpType::Info, STORE_KEYS, value)
    }

    fn catalog_at(i: u64, cut: &str) -> Op {
        let routes = json!({"routes": [
            {"start": "", "end": cut, "group": 1},
            {"start": cut, "end": "", "group": 2}
        ]});
        op(i, Process::Watcher, OpType::Info, "catalog", routes)
    }

    fn split_at(i: u64, key: &str) -> Op {
        let value = json!({"targets": [], "effective": true, "key": key});
        op(i, Process::Nemesis, OpType::Info, "start-split", value)
    }

    fn two_tables() -> Vec<String> {
        vec!["t1".into(), "t2".into()]
    }

    #[test]
    fn groups_are_those_of_the_keys_the_store_routes_not_the_clients() {
        // t1's route key sorts before t2's (base64 "dDE" < "dDI"): cut between them.
        let layout = StoreKeys::DynamoTableRoute {
            tables: two_tables(),
        };
        let t2 = layout.route_key("k/1").unwrap();
        let ops = |layout: &StoreKeys| {
            History::new(vec![
                store_keys(layout),
                catalog_at(1, &t2),
                // Keys 0 and 1: tables t1 and t2; client keys in one group ("k/…" ≥ cut).
                txn(2, 0, OpType::Invoke, &["k/0", "k/1"]),
                txn(3, 0, OpType::Ok, &["k/0", "k/1"]),
                txn(4, 0, OpType::Invoke, &["k/0", "k/2"]),
                txn(5, 0, OpType::Ok, &["k/0", "k/2"]),
            ])
        };
        assert_eq!(
            of(&ops(&layout)).multi_group_committed,
            Some(1),
            "t1 + t2 only"
        );
        assert_eq!(
            of(&ops(&StoreKeys::Identity)).multi_group_committed,
            Some(0)
        );
        let unknown = of(&ops(&StoreKeys::Unknown));
        assert_eq!(unknown.multi_group_committed, None, "never guessed");
        assert_eq!(unknown.route_faults_on_in_flight_keys, None);
    }

    #[test]
    fn a_split_counts_against_the_transactions_whose_store_keys_its_route_held() {
        let layout = StoreKeys::DynamoItemKey {
            tables: vec!["t".into()],
        };
        let h = History::new(vec![
            store_keys(&layout),
            catalog_at(1, "m"),
            txn(2, 0, OpType::Invoke, &["a/1"]),
            txn(3, 1, OpType::Invoke, &["x/2"]),
            // Split at a point of the route [m, ∞): only x/2's item is there.
            split_at(4, "x/2\0t\0"),
            txn(5, 0, OpType::Ok, &["a/1"]),
            txn(6, 1, OpType::Ok, &["x/2"]),
            // Nothing in flight: the next split lands on no transaction.
            split_at(7, "b"),
        ]);
        let ex = of(&h);
        assert_eq!(ex.in_flight_across_split, 2, "both were in flight");
        assert_eq!(
            ex.in_flight_across_own_split,
            Some(1),
            "only x/2's route was cut"
        );
        assert_eq!(ex.route_faults_on_in_flight_keys, Some(1));
    }
}

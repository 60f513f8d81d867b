//! Where a lost element stands relative to the route changes around it: for each `lost`
//! anomaly, the latest route change at or before its add's completion, added to the
//! anomaly as `after-route-change` (fields in `docs/checkers.md`), and a count of the lost
//! elements whose add was invoked within [`NEAR_MS`] after one.
//!
//! A route change is an effective `start-split` of the nemesis (the store accepted the
//! split) or a catalog version the watcher saw for the first time (a split the store made
//! itself, or one whose nemesis event is missing). Writes acknowledged and then lost just
//! after a catalog change point at the store's handling of the new catalog (on elastickv, an
//! apply that depends on when each replica learned it: `docs/elastickv.md`).
//!
//! Invariants: this only annotates — it never changes a verdict or a count the checker
//! judged by, and a history without route changes gets no annotation.

use crate::history::{events, fault_events, FaultEdge, History, Process, SplitDetail};
use crate::verdict::CheckerResult;
use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde_json::{json, Value};

/// Count added to the result: lost elements whose add was invoked at most [`NEAR_MS`]
/// after a route change.
pub const COUNT_NEAR: &str = "lost-within-1s-of-route-change";
/// How soon after a route change an add counts as "near" it, in milliseconds.
pub const NEAR_MS: f64 = 1000.0;

/// One change of the route catalog.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct RouteChange {
    index: u64,
    time: u64,
    /// `start-split` or `catalog`.
    f: &'static str,
    catalog_version: Option<u64>,
}

/// What a `start-split` records of the store's answer (`detail`), the only fact read here.
#[derive(Deserialize)]
struct SplitFacts {
    detail: Option<SplitDetail>,
}

/// Every route change of `history`, in time order.
pub(super) fn route_changes(history: &History) -> Vec<RouteChange> {
    let mut out: Vec<RouteChange> = fault_events(&history.ops)
        .filter(|(_, e)| {
            e.edge == FaultEdge::Start && e.fault == "split" && e.value.effective == Some(true)
        })
        .map(|(op, e)| RouteChange {
            index: op.index,
            time: op.time,
            f: "start-split",
            catalog_version: e
                .value
                .facts_as::<SplitFacts>()
                .and_then(|f| f.detail?.catalog_version()),
        })
        .collect();
    let mut newest_seen: Option<u64> = None;
    for op in history
        .ops
        .iter()
        .filter(|op| op.process == Process::Watcher && op.f == events::CATALOG)
    {
        let Some(version) = op.value.get("version").and_then(Value::as_u64) else {
            continue;
        };
        if newest_seen.is_some_and(|v| version <= v) {
            continue;
        }
        if newest_seen.is_some() {
            out.push(RouteChange {
                index: op.index,
                time: op.time,
                f: "catalog",
                catalog_version: Some(version),
            });
        }
        newest_seen = Some(version);
    }
    out.sort_by_key(|c| (c.time, c.index));
    out
}

fn ms(ns: i128) -> f64 {
    (ns as f64 / 1e3).round() / 1e3
}

/// Adds `after-route-change` to each `lost` anomaly of `result` and the [`COUNT_NEAR`]
/// count, when `history` has route changes.
#[cfg(test)]
pub fn annotate(history: &History, result: &mut CheckerResult) {
    let time_of: FxHashMap<u64, u64> = history.ops.iter().map(|op| (op.index, op.time)).collect();
    annotate_with(&route_changes(history), &time_of, result);
}

/// [`annotate`] with the history's route changes and the times of (at least) the ops the
/// lost anomalies name.
pub(super) fn annotate_with(
    changes: &[RouteChange],
    time_of: &FxHashMap<u64, u64>,
    result: &mut CheckerResult,
) {
    if changes.is_empty() || !result.anomalies.iter().any(is_lost) {
        return;
    }
    let mut near = 0u64;
    for anomaly in result.anomalies.iter_mut().filter(|a| is_lost(a)) {
        let Some(invoked) = anomaly
            .get("add")
            .and_then(Value::as_u64)
            .and_then(|i| time_of.get(&i).copied())
        else {
            continue;
        };
        let completed = anomaly
            .pointer("/add-completion/index")
            .and_then(Value::as_u64)
            .and_then(|i| time_of.get(&i).copied())
            .unwrap_or(invoked);
        let Some(change) = changes.iter().rev().find(|c| c.time <= completed) else {
            continue;
        };
        let after_ms = ms(invoked as i128 - change.time as i128);
        if (0.0..=NEAR_MS).contains(&after_ms) {
            near += 1;
        }
        anomaly["after-route-change"] = json!({
            "index": change.index,
            "f": change.f,
            "catalog-version": change.catalog_version,
            "add-invoked-after-ms": after_ms,
        });
    }
    result.counts.insert(COUNT_NEAR.to_string(), near);
}

fn is_lost(anomaly: &Value) -> bool {
    anomaly.get("kind").and_then(Value::as_str) == Some("lost")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::set_full::{check, SetFullOptions};

    fn history(lines: &[String]) -> History {
        let text = lines.join("\n") + "\n";
        crate::formats::parse_str(&text, crate::formats::Format::Jsonl, "test")
            .expect("valid history")
            .history
    }

    fn op(index: u64, time_ms: u64, body: &str) -> String {
        format!(
            r#"{{"index":{index},"time":{},{body}}}"#,
            time_ms * 1_000_000
        )
    }

    /// Two acked adds, a split between them, a final read that has only the first.
    fn lost_after_split(split_effective: bool) -> History {
        history(&[
            op(
                0,
                0,
                r#""type":"invoke","process":0,"f":"add","key":"k1","value":1"#,
            ),
            op(
                1,
                5,
                r#""type":"ok","process":0,"f":"add","key":"k1","value":1"#,
            ),
            op(
                2,
                100,
                &format!(
                    r#""type":"info","process":"nemesis","f":"start-split","value":{{"effective":{split_effective},"key":"k","targets":[],"detail":{{"catalog_version":2}}}}"#
                ),
            ),
            op(
                3,
                104,
                r#""type":"invoke","process":1,"f":"add","key":"k2","value":2"#,
            ),
            op(
                4,
                130,
                r#""type":"ok","process":1,"f":"add","key":"k2","value":2"#,
            ),
            op(
                5,
                2000,
                r#""type":"invoke","process":2,"f":"read-set","value":null"#,
            ),
            op(
                6,
                2010,
                r#""type":"ok","process":2,"f":"read-set","value":["k1"]"#,
            ),
        ])
    }

    fn checked(h: &History) -> CheckerResult {
        check(h, &SetFullOptions::default())
    }

    #[test]
    fn a_lost_add_invoked_just_after_an_effective_split_names_it() {
        let r = checked(&lost_after_split(true));
        let lost = r.anomalies.iter().find(|a| is_lost(a)).expect("k2 is lost");
        let at = &lost["after-route-change"];
        assert_eq!(at["index"], 2);
        assert_eq!(at["f"], "start-split");
        assert_eq!(at["catalog-version"], 2);
        assert_eq!(at["add-invoked-after-ms"], 4.0);
        assert_eq!(r.counts[COUNT_NEAR], 1);
    }

    #[test]
    fn a_refused_split_is_not_a_route_change() {
        let r = checked(&lost_after_split(false));
        let lost = r.anomalies.iter().find(|a| is_lost(a)).expect("k2 is lost");
        assert!(lost.get("after-route-change").is_none());
        assert!(!r.counts.contains_key(COUNT_NEAR));
    }

    #[test]
    fn a_new_catalog_version_seen_by_the_watcher_is_a_route_change_but_the_first_is_not() {
        let catalog = |v: u64| {
            format!(
                r#""type":"info","process":"watcher","f":"catalog","value":{{"version":{v},"routes":[]}}"#
            )
        };
        let h = history(&[
            op(0, 0, &catalog(1)),
            op(
                1,
                10,
                r#""type":"invoke","process":0,"f":"add","key":"k1","value":1"#,
            ),
            op(
                2,
                20,
                r#""type":"ok","process":0,"f":"add","key":"k1","value":1"#,
            ),
            op(3, 3000, &catalog(3)),
            op(4, 3100, &catalog(3)),
            op(
                5,
                4000,
                r#""type":"invoke","process":2,"f":"read-set","value":null"#,
            ),
            op(
                6,
                4010,
                r#""type":"ok","process":2,"f":"read-set","value":[]"#,
            ),
        ]);
        let r = checked(&h);
        let lost = r.anomalies.iter().find(|a| is_lost(a)).expect("k1 is lost");
        assert!(
            lost.get("after-route-change").is_none(),
            "no route change before the add completed (v3 came after it)"
        );
        let h2 = history(&[
            op(0, 0, &catalog(1)),
            op(1, 5, &catalog(2)),
            op(
                2,
                10,
                r#""type":"invoke","process":0,"f":"add","key":"k1","value":1"#,
            ),
            op(
                3,
                2020,
                r#""type":"ok","process":0,"f":"add","key":"k1","value":1"#,
            ),
            op(
                4,
                4000,
                r#""type":"invoke","process":2,"f":"read-set","value":null"#,
            ),
            op(
                5,
                4010,
                r#""type":"ok","process":2,"f":"read-set","value":[]"#,
            ),
        ]);
        let r2 = checked(&h2);
        let at = &r2
            .anomalies
            .iter()
            .find(|a| is_lost(a))
            .expect("k1 is lost")["after-route-change"];
        assert_eq!(at["f"], "catalog");
        assert_eq!(at["catalog-version"], 2);
        assert_eq!(r2.counts[COUNT_NEAR], 1);
    }

    #[test]
    fn annotating_never_changes_the_verdict() {
        let h = lost_after_split(true);
        let without_split = History::new(
            h.ops
                .iter()
                .filter(|op| op.process != Process::Nemesis)
                .cloned()
                .collect(),
        );
        let plain = checked(&without_split);
        let r = checked(&h);
        assert!(plain
            .anomalies
            .iter()
            .all(|a| a.get("after-route-change").is_none()));
        assert_eq!(plain.valid, r.valid);
        assert_eq!(plain.reason, r.reason);
    }
}

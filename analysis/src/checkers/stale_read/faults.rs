//! The fault state at one moment of a history, from the nemesis's bracketed events
//! (`start-<kind>` … `stop-<kind>`, see `docs/history-format.md`): which faults were active
//! and what the last heal before that moment was.
//!
//! Invariants: only events strictly before the moment count; a `start-<kind>` stays
//! active until the next `stop-<kind>`; times in the output are milliseconds before the
//! moment, so the numbers read as "how long ago".

use crate::history::{History, Op, Process};
use serde_json::{json, Value};

fn ms(ns: u64) -> f64 {
    (ns as f64 / 1e4).round() / 100.0
}

fn targets(op: &Op) -> Vec<String> {
    let list = op.value.get("targets").and_then(Value::as_array);
    list.map(|a| a.iter().filter_map(|t| t.as_str().map(str::to_string)).collect()).unwrap_or_default()
}

fn event_json(op: &Op, kind: &str, at: u64, node: Option<&str>) -> Value {
    let targets = targets(op);
    let mut v = json!({
        "kind": kind,
        "event": op.index,
        "ms_before": ms(at - op.time),
        "targets": targets,
        "node_targeted": node.is_some_and(|n| targets.iter().any(|t| t == n)),
    });
    if let Some(effective) = op.value.get("effective") {
        v["effective"] = effective.clone();
    }
    v
}

/// The faults active at `at` and the last heal before it. `node` (the node that served the
/// read) is marked in each event whose targets include it.
pub fn fault_state(history: &History, at: u64, node: Option<&str>) -> Value {
    let mut active: Vec<(&str, &Op)> = Vec::new();
    let mut last_heal: Option<(&str, &Op)> = None;
    for op in history.ops.iter().filter(|o| o.process == Process::Nemesis && o.time < at) {
        if let Some(kind) = op.f.strip_prefix("start-") {
            active.retain(|(k, _)| *k != kind);
            active.push((kind, op));
        } else if let Some(kind) = op.f.strip_prefix("stop-") {
            active.retain(|(k, _)| *k != kind);
            last_heal = Some((kind, op));
        }
    }
    json!({
        "active": active.iter().map(|(k, op)| event_json(op, k, at, node)).collect::<Vec<_>>(),
        "last_heal": last_heal.map(|(k, op)| event_json(op, k, at, node)),
    })
}

/// One phrase for the summary: "no fault active, none before" / "3012 ms after the
/// kill of n1 healed" / "during a partition".
pub fn describe(state: &Value) -> String {
    let names =
        |v: &Value| v["targets"].as_array().map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(",")).unwrap_or_default();
    let active: Vec<String> = state["active"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| format!("{} of {} (started {} ms before)", f["kind"].as_str().unwrap_or("?"), names(f), f["ms_before"]))
                .collect()
        })
        .unwrap_or_default();
    let heal = &state["last_heal"];
    let heal = (!heal.is_null())
        .then(|| format!("{} ms after the {} of {} healed", heal["ms_before"], heal["kind"].as_str().unwrap_or("?"), names(heal)));
    match (active.is_empty(), heal) {
        (true, None) => "with no fault active and none before".into(),
        (true, Some(h)) => format!("with no fault active, {h}"),
        (false, None) => format!("during {}", active.join(", ")),
        (false, Some(h)) => format!("during {}, {h}", active.join(", ")),
    }
}

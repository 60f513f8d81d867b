//! The fault state at one moment of a history, from the nemesis's bracketed events
//! (`start-<kind>` … `stop-<kind>`, see `docs/history-format.md`): which faults were active
//! and what the last heal before that moment was.
//!
//! Invariants: only events strictly before the moment count; a `start-<kind>` stays
//! active until the next `stop-<kind>`; times in the output are milliseconds before the
//! moment, so the numbers read as "how long ago".

use crate::history::{fault_events, FaultEdge, FaultEvent, History, Op};
use serde_json::{json, Value};

fn ms(ns: u64) -> f64 {
    (ns as f64 / 1e4).round() / 100.0
}

fn event_json(op: &Op, event: &FaultEvent, at: u64, node: Option<&str>) -> Value {
    let targets = &event.value.targets;
    let mut v = json!({
        "kind": event.fault,
        "event": op.index,
        "ms_before": ms(at - op.time),
        "targets": targets,
        "node_targeted": node.is_some_and(|n| targets.iter().any(|t| t == n)),
    });
    if let Some(effective) = event.value.effective {
        v["effective"] = json!(effective);
    }
    v
}

/// The faults active at `at` and the last heal before it. `node` (the node that served the
/// read) is marked in each event whose targets include it.
pub fn fault_state(history: &History, at: u64, node: Option<&str>) -> Value {
    let mut active: Vec<(&Op, FaultEvent)> = Vec::new();
    let mut last_heal: Option<(&Op, FaultEvent)> = None;
    for (op, event) in fault_events(history.ops.iter().filter(|o| o.time < at)) {
        active.retain(|(_, e)| e.fault != event.fault);
        match event.edge {
            FaultEdge::Start => active.push((op, event)),
            FaultEdge::Stop => last_heal = Some((op, event)),
        }
    }
    json!({
        "active": active.iter().map(|(op, e)| event_json(op, e, at, node)).collect::<Vec<_>>(),
        "last_heal": last_heal.map(|(op, e)| event_json(op, &e, at, node)),
    })
}

/// One phrase for the summary: "no fault active, none before" / "3012 ms after the
/// kill of n1 healed" / "during a partition".
pub fn describe(state: &Value) -> String {
    let names = |v: &Value| {
        v["targets"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default()
    };
    let active: Vec<String> = state["active"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| {
                    format!(
                        "{} of {} (started {} ms before)",
                        f["kind"].as_str().unwrap_or("?"),
                        names(f),
                        f["ms_before"]
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let heal = &state["last_heal"];
    let heal = (!heal.is_null()).then(|| {
        format!(
            "{} ms after the {} of {} healed",
            heal["ms_before"],
            heal["kind"].as_str().unwrap_or("?"),
            names(heal)
        )
    });
    match (active.is_empty(), heal) {
        (true, None) => "with no fault active and none before".into(),
        (true, Some(h)) => format!("with no fault active, {h}"),
        (false, None) => format!("during {}", active.join(", ")),
        (false, Some(h)) => format!("during {}, {h}", active.join(", ")),
    }
}

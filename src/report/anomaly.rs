//! Finding the history ops an anomaly refers to, and the timeline windows around them.
//!
//! Checkers describe anomalies as free-form JSON objects. The report treats as an op
//! reference: a non-negative integer (or array of them) under a key named `op`, `ops`,
//! `index`, `indices`, `witness`, or ending in `_op`, `_ops`, `_index`, `_indices` (also
//! with `-`); and any embedded op object (one with `index`, `type` and `process`). This
//! convention is documented in `docs/report.md` for checker authors.

use serde_json::Value;
use std::ops::RangeInclusive;

/// Ops shown before the first and after the last referenced op of an anomaly.
const WINDOW_PAD: u64 = 30;
/// Most history entries one window spans (by index).
const WINDOW_MAX: u64 = 240;
/// The window shown when no checker reported an anomaly.
pub const DEFAULT_WINDOW: u64 = 160;

/// The history indices an anomaly refers to, sorted and deduplicated.
pub fn op_refs(anomaly: &Value) -> Vec<u64> {
    let mut out = Vec::new();
    collect(anomaly, false, &mut out);
    out.sort_unstable();
    out.dedup();
    out
}

fn is_ref_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase().replace('-', "_");
    matches!(
        key.as_str(),
        "op" | "ops" | "index" | "indices" | "witness" | "op_index" | "op_indices"
    ) || ["_op", "_ops", "_index", "_indices"]
        .iter()
        .any(|s| key.ends_with(s))
}

fn looks_like_op(map: &serde_json::Map<String, Value>) -> bool {
    map.contains_key("index") && map.contains_key("type") && map.contains_key("process")
}

fn collect(value: &Value, under_ref_key: bool, out: &mut Vec<u64>) {
    match value {
        Value::Number(n) if under_ref_key => out.extend(n.as_u64()),
        Value::Array(items) => items.iter().for_each(|v| collect(v, under_ref_key, out)),
        Value::Object(map) => {
            if looks_like_op(map) {
                out.extend(map.get("index").and_then(Value::as_u64));
            }
            for (key, v) in map {
                // An embedded op's own fields (its value, time) are not references.
                if looks_like_op(map) && key != "index" {
                    continue;
                }
                collect(v, is_ref_key(key), out);
            }
        }
        _ => {}
    }
}

/// The range of history indices a timeline shows for an anomaly with these references,
/// bounded to [`WINDOW_MAX`] entries; `None` if it references nothing.
pub fn window_for(refs: &[u64]) -> Option<RangeInclusive<u64>> {
    let first = *refs.first()?;
    let last = *refs.last()?;
    let lo = first.saturating_sub(WINDOW_PAD);
    let hi = last.saturating_add(WINDOW_PAD).min(lo + WINDOW_MAX - 1);
    Some(lo..=hi)
}

/// The ops a stale-read witness (`stale_read`, see `docs/checkers.md`) is about: the
/// acknowledged write the read missed and the read itself, invoke and completion of each.
pub fn stale_read_refs(anomaly: &Value) -> Option<Vec<u64>> {
    let s = anomaly.get("stale_read")?;
    let mut refs: Vec<u64> = ["missed_write", "read"]
        .iter()
        .flat_map(|k| ["index", "completion_index"].map(|f| s[k][f].as_u64()))
        .flatten()
        .collect();
    refs.sort_unstable();
    (!refs.is_empty()).then_some(refs)
}

/// The window for a stale read: all of `refs` when they fit, else the entries leading up
/// to the read (its last ref), which is where the missed write should have been visible.
pub fn window_ending_at_last(refs: &[u64]) -> Option<RangeInclusive<u64>> {
    let window = window_for(refs)?;
    let last = *refs.last()?;
    if window.contains(&last) {
        return Some(window);
    }
    let hi = last.saturating_add(WINDOW_PAD);
    Some(hi.saturating_sub(WINDOW_MAX - 1)..=hi)
}

/// A short title for an anomaly: its `type`/`kind`/`anomaly` field, else "anomaly".
pub fn kind_of(anomaly: &Value) -> String {
    ["type", "kind", "anomaly", "name"]
        .iter()
        .find_map(|k| anomaly.get(k).and_then(Value::as_str))
        .unwrap_or("anomaly")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_references_under_op_like_keys_and_embedded_ops() {
        let a = json!({
            "type": "lost",
            "op": 12,
            "ops": [3, 4],
            "write_index": 40,
            "read-indices": [41, 42],
            "witness": {"op": {"index": 7, "type": "ok", "process": 1, "value": 99, "time": 5}},
            "key": "k1",
            "value": 1000,
            "count": 8
        });
        assert_eq!(op_refs(&a), vec![3, 4, 7, 12, 40, 41, 42]);
    }

    #[test]
    fn a_stale_read_window_keeps_the_read_when_the_missed_write_is_far_back() {
        let a = json!({"op": {"index": 10}, "stale_read": {
            "missed_write": {"index": 100, "completion_index": 101}, "read": {"index": 5000, "completion_index": 5003}}});
        let refs = stale_read_refs(&a).unwrap();
        assert_eq!(refs, vec![100, 101, 5000, 5003]);
        let w = window_ending_at_last(&refs).unwrap();
        assert_eq!((*w.start(), *w.end()), (5033 - (WINDOW_MAX - 1), 5033));
        assert_eq!(
            window_ending_at_last(&[100, 120]),
            window_for(&[100, 120]),
            "a short one is the usual window"
        );
        assert_eq!(stale_read_refs(&json!({"op": 3})), None);
    }

    #[test]
    fn window_is_padded_and_bounded() {
        assert_eq!(window_for(&[]), None);
        assert_eq!(window_for(&[5, 10]), Some(0..=40));
        let w = window_for(&[1000, 50_000]).unwrap();
        assert_eq!(*w.start(), 970);
        assert_eq!(w.end() - w.start() + 1, WINDOW_MAX);
    }
}

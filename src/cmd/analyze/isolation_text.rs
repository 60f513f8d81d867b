//! The readable account of the isolation checker's result: the anomaly types, the
//! consistency models the history is not, and each witness as sentences — a cycle as the
//! transactions it runs through and one line per edge, any other anomaly as its sentence.
//!
//! Reads only the documented fields of the result (`docs/results-format.md`, § isolation);
//! a field that is missing is left out, never guessed.

use serde_json::Value;
use std::io::Write;

/// Witnesses printed in full (all are in results.json).
const SHOWN_WITNESSES: usize = 3;
/// Edges of one cycle printed before the rest is summarised.
const SHOWN_STEPS: usize = 12;

/// Prints the isolation summary after the checker's verdict line.
pub fn print(out: &mut impl Write, details: &Value, anomalies: &[Value]) {
    let names = |field: &str| -> Vec<String> {
        details[field]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    if let Some(model) = details["consistency_model"].as_str() {
        let _ = writeln!(out, "    checked under {model}");
    }
    let types = names("anomaly_types");
    if !types.is_empty() {
        let _ = writeln!(out, "    anomaly types: {}", types.join(", "));
    }
    let not = names("not");
    if !not.is_empty() {
        let _ = writeln!(out, "    not: {}", not.join(", "));
    }
    let also_not = names("also_not");
    if !also_not.is_empty() {
        let _ = writeln!(out, "    also not: {}", also_not.join(", "));
    }
    for a in anomalies.iter().take(SHOWN_WITNESSES) {
        print_witness(out, a);
    }
    if anomalies.len() > SHOWN_WITNESSES {
        let _ = writeln!(
            out,
            "    ... {} more witnesses in results.json (--out DIR)",
            anomalies.len() - SHOWN_WITNESSES
        );
    }
}

/// The isolation witnesses of a result: `details.anomalies`, else the result's anomalies.
pub fn witnesses<'a>(details: &'a Value, anomalies: &'a [Value]) -> &'a [Value] {
    match details["anomalies"].as_array() {
        Some(a) if !a.is_empty() => a,
        _ => anomalies,
    }
}

fn print_witness(out: &mut impl Write, a: &Value) {
    let kind = a["type"]
        .as_str()
        .or_else(|| a["kind"].as_str())
        .unwrap_or("anomaly");
    let _ = writeln!(out, "    - {kind}");
    if let Some(cycle) = a["cycle"].as_array() {
        let txns: Vec<String> = cycle.iter().map(txn_label).collect();
        let _ = writeln!(out, "      cycle: {}", txns.join(" -> "));
    }
    match a["steps"].as_array() {
        Some(steps) if !steps.is_empty() => {
            for step in steps.iter().take(SHOWN_STEPS) {
                let _ = writeln!(out, "      {}", step_sentence(step));
            }
            if steps.len() > SHOWN_STEPS {
                let _ = writeln!(
                    out,
                    "      ... {} more edges in results.json",
                    steps.len() - SHOWN_STEPS
                );
            }
        }
        // Not a cycle (or a cycle without its edges): the witness' own sentence.
        _ => {
            if let Some(s) = ["why", "explanation", "sentence"]
                .iter()
                .find_map(|f| a[*f].as_str())
            {
                let _ = writeln!(out, "      {s}");
            }
        }
    }
}

/// `T12 (process 3)`: a transaction by the op index of its completion.
fn txn_label(t: &Value) -> String {
    let id = t["txn"]
        .as_u64()
        .map(|i| format!("T{i}"))
        .unwrap_or_else(|| "T?".into());
    match t["process"].as_u64() {
        Some(p) => format!("{id} (process {p})"),
        None => id,
    }
}

/// One edge as a sentence: its own `why`, else `Ti -kind on key k-> Tj`.
fn step_sentence(step: &Value) -> String {
    let end = |field: &str| {
        step[field]
            .as_u64()
            .map(|i| format!("T{i}"))
            .unwrap_or_else(|| "T?".into())
    };
    let kind = step["kind"].as_str().unwrap_or("edge");
    let head = format!("{} -> {} ({kind})", end("from"), end("to"));
    match step["why"].as_str() {
        Some(why) => format!("{head}: {why}"),
        None => head,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_cycle_prints_its_types_models_and_one_sentence_per_edge() {
        let details = json!({"consistency_model": "serializable", "anomaly_types": ["G-single-item"], "not": ["consistent-view"], "also_not": ["serializable"]});
        let witness = json!({"type": "G-single-item",
            "cycle": [{"txn": 3, "process": 0}, {"txn": 5, "process": 1}],
            "steps": [{"from": 3, "to": 5, "kind": "rw", "key": 1, "why": "T3 read key 1 = [] and T5 appended 2 to it: rw"},
                      {"from": 5, "to": 3, "kind": "wr", "key": 2}]});
        let mut out = Vec::new();
        print(&mut out, &details, &[witness]);
        let text = String::from_utf8(out).unwrap();
        for want in [
            "checked under serializable",
            "anomaly types: G-single-item",
            "not: consistent-view",
            "also not: serializable",
            "cycle: T3 (process 0) -> T5 (process 1)",
            "T3 -> T5 (rw): T3 read key 1 = [] and T5 appended 2 to it: rw",
            "T5 -> T3 (wr)",
        ] {
            assert!(text.contains(want), "{want:?} missing from:\n{text}");
        }
    }
}

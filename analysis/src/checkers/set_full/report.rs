//! Turning the per-element states of a set-full pass into a `CheckerResult`: outcome
//! counts, anomalies naming elements and op indices, latency quantiles.

use super::element::{AddStatus, Element, Outcome};
use super::{Scan, SetFullOptions};
use crate::verdict::{CheckerResult, Validity};
use hdrhistogram::Histogram;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Anomalies listed per kind (the counts are always complete).
const MAX_LISTED: usize = 1000;
/// Jepsen's quantile points.
const QUANTILES: [f64; 5] = [0.0, 0.5, 0.95, 0.99, 1.0];
/// Stale elements described in detail, worst first.
const WORST_STALE: usize = 8;

pub(super) fn assemble(scan: Scan, opts: &SetFullOptions) -> CheckerResult {
    let mut r = CheckerResult::new(Validity::Valid);
    let outcomes: Vec<Outcome> = scan.elements.iter().map(Element::outcome).collect();
    let found = Findings::of(&scan, &outcomes);
    r.counts = counts(&scan, &outcomes, &found);
    (r.valid, r.reason) = validity(&scan, &found, opts, r.counts["stable-count"]);
    r.anomalies = anomalies(&scan, &found, opts);
    r.details = details(&scan.elements, &outcomes, &found.stale, &found.recovered);
    r
}

/// The elements (and unexpected reads) each finding names.
struct Findings<'a> {
    lost: Vec<&'a Element>,
    stale: Vec<&'a Element>,
    recovered: Vec<&'a Element>,
    failed_observed: Vec<&'a Element>,
    unexpected: Vec<Value>,
}

impl<'a> Findings<'a> {
    fn of(scan: &'a Scan, outcomes: &'a [Outcome]) -> Findings<'a> {
        let elements = &scan.elements;
        Findings {
            lost: with_outcome(elements, outcomes, Outcome::Lost).collect(),
            stale: with_outcome(elements, outcomes, Outcome::Stable)
                .filter(|e| e.is_stale())
                .collect(),
            recovered: elements.iter().filter(|e| e.is_recovered()).collect(),
            failed_observed: elements
                .iter()
                .filter(|e| e.failed_but_observed())
                .collect(),
            unexpected: unexpected_anomalies(scan),
        }
    }
}

/// The elements whose outcome is `o`.
fn with_outcome<'a>(
    elements: &'a [Element],
    outcomes: &'a [Outcome],
    o: Outcome,
) -> impl Iterator<Item = &'a Element> + 'a {
    elements
        .iter()
        .zip(outcomes)
        .filter(move |(_, &x)| x == o)
        .map(|(e, _)| e)
}

/// Every anomaly, at most [`MAX_LISTED`] of each kind; stale elements only when the store
/// promises linearizable reads.
fn anomalies(scan: &Scan, found: &Findings, opts: &SetFullOptions) -> Vec<Value> {
    let elements = &scan.elements;
    let mut anomalies = Vec::new();
    list(
        &mut anomalies,
        found.lost.iter().map(|e| element_anomaly("lost", e)),
    );
    list(&mut anomalies, scan.duplicates.iter().map(|d| {
        json!({"kind": "duplicated", "element": elements[d.element].display(),
               "read": d.read_index, "copies": d.copies, "add": elements[d.element].add_invoke.index})
    }));
    list(&mut anomalies, found.unexpected.iter().cloned());
    list(
        &mut anomalies,
        found
            .failed_observed
            .iter()
            .map(|e| element_anomaly("failed-add-observed", e)),
    );
    list(
        &mut anomalies,
        scan.out_of_range
            .iter()
            .map(|(read, key)| json!({"kind": "scan-out-of-range", "element": key, "read": read})),
    );
    if opts.linearizable {
        list(
            &mut anomalies,
            found.stale.iter().map(|e| element_anomaly("stale", e)),
        );
    }
    anomalies
}

fn counts(scan: &Scan, outcomes: &[Outcome], found: &Findings) -> BTreeMap<String, u64> {
    let elements = &scan.elements;
    let acknowledged = elements
        .iter()
        .filter(|e| e.add_status() == AddStatus::Acknowledged)
        .count();
    let of = |o| with_outcome(elements, outcomes, o).count();
    [
        ("attempt-count", elements.len()),
        ("acknowledged-count", acknowledged),
        ("stable-count", of(Outcome::Stable)),
        ("lost-count", found.lost.len()),
        ("never-read-count", of(Outcome::NeverRead)),
        ("stale-count", found.stale.len()),
        ("duplicated-count", scan.duplicates.len()),
        ("unexpected-count", found.unexpected.len()),
        ("recovered-count", found.recovered.len()),
        ("failed-add-observed-count", found.failed_observed.len()),
        ("scan-out-of-range-count", scan.out_of_range.len()),
        ("read-count", scan.reads as usize),
        ("re-add-count", scan.readds as usize),
    ]
    .into_iter()
    .map(|(name, n)| (name.to_string(), n as u64))
    .collect()
}

/// Invalid on any finding (stale ones only under [`SetFullOptions::linearizable`]);
/// unknown when no element was ever stably read.
fn validity(
    scan: &Scan,
    found: &Findings,
    opts: &SetFullOptions,
    stable_count: u64,
) -> (Validity, Option<String>) {
    let problems: Vec<String> = [
        ("lost", found.lost.len()),
        ("duplicated", scan.duplicates.len()),
        ("unexpected", found.unexpected.len()),
        ("failed-add-observed", found.failed_observed.len()),
        ("scan-out-of-range", scan.out_of_range.len()),
        ("stale", if opts.linearizable { found.stale.len() } else { 0 }),
    ]
    .into_iter()
    .filter(|&(_, n)| n > 0)
    .map(|(name, n)| format!("{n} {name}"))
    .collect();
    if !problems.is_empty() {
        return (Validity::Invalid, Some(format!("set-full: {}", problems.join(", "))));
    }
    if stable_count > 0 {
        return (Validity::Valid, None);
    }
    let why = if scan.reads == 0 {
        "set-full: no successful read-set or scan, so no element could be checked"
    } else {
        "set-full: no element was ever stably read (nothing added, or every add crashed)"
    };
    (Validity::Unknown, Some(why.to_string()))
}

fn list(out: &mut Vec<Value>, items: impl Iterator<Item = Value>) {
    out.extend(items.take(MAX_LISTED));
}

fn element_anomaly(kind: &str, e: &Element) -> Value {
    json!({
        "kind": kind,
        "element": e.display(),
        "add": e.add_invoke.index,
        "add-completion": e.add_completion().map(|(t, i)| json!({"type": type_name(t), "index": i})),
        "known": e.known.map(|p| p.index),
        "last-present-read": e.last_present.map(|p| p.index),
        "last-absent-read": e.last_absent.map(|p| p.index),
        "lost-latency-ms": e.lost_latency().map(ms),
        "stable-latency-ms": e.stable_latency().map(ms),
    })
}

fn unexpected_anomalies(scan: &Scan) -> Vec<Value> {
    let mut out: Vec<Value> = scan
        .unmatched
        .values()
        .filter(|u| !u.display.as_str().is_some_and(|k| scan.register_keys.contains(k)))
        .map(|u| {
            let added_later = scan.identity_lookup(&u.display).map(|id| scan.elements[id].add_invoke.index);
            match added_later {
                Some(add) => json!({"kind": "unexpected", "element": u.display, "read": u.read_index, "add": add,
                                    "why": "read before its add was invoked"}),
                None => json!({"kind": "unexpected", "element": u.display, "read": u.read_index,
                               "why": "never added"}),
            }
        })
        .collect();
    out.sort_by_key(|v| v["read"].as_u64());
    out
}

fn details(
    elements: &[Element],
    outcomes: &[Outcome],
    stale: &[&Element],
    recovered: &[&Element],
) -> Value {
    let displays = |o: Outcome| -> Vec<Value> {
        elements
            .iter()
            .zip(outcomes)
            .filter(|(_, &x)| x == o)
            .map(|(e, _)| e.display())
            .take(MAX_LISTED)
            .collect()
    };
    let mut worst: Vec<&&Element> = stale.iter().collect();
    worst.sort_by_key(|e| std::cmp::Reverse(e.stable_latency()));
    let worst: Vec<Value> = worst
        .into_iter()
        .take(WORST_STALE)
        .map(|e| element_anomaly("stale", e))
        .collect();
    let mut d = json!({
        "lost": displays(Outcome::Lost),
        "never-read": displays(Outcome::NeverRead),
        "stale": stale.iter().take(MAX_LISTED).map(|e| e.display()).collect::<Vec<_>>(),
        "worst-stale": worst,
        "recovered": recovered.iter().take(MAX_LISTED).map(|e| e.display()).collect::<Vec<_>>(),
    });
    if let Some(q) = quantiles_ms(elements.iter().filter_map(Element::stable_latency)) {
        d["stable-latencies-ms"] = q;
    }
    if let Some(q) = quantiles_ms(elements.iter().filter_map(Element::lost_latency)) {
        d["lost-latencies-ms"] = q;
    }
    d
}

/// Latency quantiles (milliseconds, 3 significant digits) at Jepsen's points.
fn quantiles_ms(latencies_ns: impl Iterator<Item = u64>) -> Option<Value> {
    let mut h = Histogram::<u64>::new(3).ok()?;
    for l in latencies_ns {
        h.saturating_record(l);
    }
    if h.is_empty() {
        return None;
    }
    let mut m = serde_json::Map::new();
    for q in QUANTILES {
        let v = if q <= 0.0 {
            h.min()
        } else if q >= 1.0 {
            h.max()
        } else {
            h.value_at_quantile(q)
        };
        m.insert(q.to_string(), json!(ms(v)));
    }
    Some(Value::Object(m))
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn type_name(t: crate::history::OpType) -> &'static str {
    use crate::history::OpType::*;
    match t {
        Invoke => "invoke",
        Ok => "ok",
        Fail => "fail",
        Info => "info",
    }
}

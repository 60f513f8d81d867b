//! Turning a set-full [`Summary`] into a `CheckerResult`: outcome counts, anomalies naming
//! elements and op indices, latency quantiles.

use super::listed::Listed;
use super::summary::{ms, Counts, Listing, Summary};
use super::SetFullOptions;
use crate::verdict::{CheckerResult, Validity};
use hdrhistogram::Histogram;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Jepsen's quantile points.
const QUANTILES: [f64; 5] = [0.0, 0.5, 0.95, 0.99, 1.0];

pub(super) fn assemble(s: Summary, opts: &SetFullOptions) -> CheckerResult {
    let mut r = CheckerResult::new(Validity::Valid);
    r.counts = counts(&s.counts);
    (r.valid, r.reason) = validity(&s.counts, opts);
    let details = details(&s);
    let Summary {
        lost,
        stale,
        failed_observed,
        duplicated,
        unexpected,
        out_of_range,
        ..
    } = s;
    let (lost, stale) = (lost.into_sorted(), stale.into_sorted());
    let mut anomalies: Vec<Value> = lost.into_iter().map(|l| l.anomaly).collect();
    anomalies.extend(duplicated.into_sorted());
    anomalies.extend(unexpected.into_sorted());
    anomalies.extend(failed_observed.into_sorted());
    anomalies.extend(out_of_range.into_sorted());
    if opts.linearizable {
        anomalies.extend(stale.into_iter().map(|l| l.anomaly));
    }
    r.anomalies = anomalies;
    r.details = details;
    r
}

fn counts(c: &Counts) -> BTreeMap<String, u64> {
    [
        ("attempt-count", c.attempts),
        ("acknowledged-count", c.acknowledged),
        ("stable-count", c.stable),
        ("lost-count", c.lost),
        ("never-read-count", c.never_read),
        ("stale-count", c.stale),
        ("duplicated-count", c.duplicated),
        ("unexpected-count", c.unexpected),
        ("recovered-count", c.recovered),
        ("failed-add-observed-count", c.failed_observed),
        ("scan-out-of-range-count", c.out_of_range),
        ("read-count", c.reads),
        ("re-add-count", c.readds),
    ]
    .into_iter()
    .map(|(name, n)| (name.to_string(), n))
    .collect()
}

/// Invalid on any finding (stale ones only under [`SetFullOptions::linearizable`]);
/// unknown when no element was ever stably read.
fn validity(c: &Counts, opts: &SetFullOptions) -> (Validity, Option<String>) {
    let problems: Vec<String> = [
        ("lost", c.lost),
        ("duplicated", c.duplicated),
        ("unexpected", c.unexpected),
        ("failed-add-observed", c.failed_observed),
        ("scan-out-of-range", c.out_of_range),
        ("stale", if opts.linearizable { c.stale } else { 0 }),
    ]
    .into_iter()
    .filter(|&(_, n)| n > 0)
    .map(|(name, n)| format!("{n} {name}"))
    .collect();
    if !problems.is_empty() {
        return (Validity::Invalid, Some(format!("set-full: {}", problems.join(", "))));
    }
    if c.stable > 0 {
        return (Validity::Valid, None);
    }
    let why = if c.reads == 0 {
        "set-full: no successful read-set or scan, so no element could be checked"
    } else {
        "set-full: no element was ever stably read (nothing added, or every add crashed)"
    };
    (Validity::Unknown, Some(why.to_string()))
}

fn displays(listed: &Listed<u64, Listing>) -> Vec<Value> {
    listed.first_sorted().into_iter().map(|l| l.display.clone()).collect()
}

fn cloned<K: Ord>(listed: &Listed<K, Value>) -> Vec<Value> {
    listed.first_sorted().into_iter().cloned().collect()
}

fn details(s: &Summary) -> Value {
    let mut d = json!({
        "lost": displays(&s.lost),
        "never-read": cloned(&s.never_read),
        "stale": displays(&s.stale),
        "worst-stale": cloned(&s.worst_stale),
        "recovered": cloned(&s.recovered),
    });
    if let Some(q) = quantiles_ms(&s.stable_latencies) {
        d["stable-latencies-ms"] = q;
    }
    if let Some(q) = quantiles_ms(&s.lost_latencies) {
        d["lost-latencies-ms"] = q;
    }
    d
}

/// Latency quantiles (milliseconds, 3 significant digits) at Jepsen's points.
fn quantiles_ms(h: &Histogram<u64>) -> Option<Value> {
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

//! A set-full pass reduced to what its result needs — outcome counts, the first
//! [`MAX_LISTED`] elements of each finding, latency histograms — in a form that merges: the
//! summaries of parts of a history cut by key group merge into the summary of the whole
//! ([`super::parts`]), and [`super::report`] turns one into the `CheckerResult`.
//!
//! Invariants: memory is bounded by the lists' caps whatever the history; every list is
//! ordered by a key unique to its item (an element's first add, a read's index and the
//! entry's place in it), so a merged summary equals the whole history's.

use super::element::{AddStatus, Element, Outcome};
use super::listed::Listed;
use super::{Scan, Unmatched};
use crate::history::History;
use hdrhistogram::Histogram;
use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::{json, Value};
use std::cmp::Reverse;

/// Anomalies listed per kind (the counts are always complete).
pub(super) const MAX_LISTED: usize = 1000;
/// Stale elements described in detail, worst first.
pub(super) const WORST_STALE: usize = 8;

/// The complete counts.
#[derive(Default, Clone, Copy)]
pub(super) struct Counts {
    pub attempts: u64,
    pub acknowledged: u64,
    pub stable: u64,
    pub lost: u64,
    pub never_read: u64,
    pub stale: u64,
    pub duplicated: u64,
    pub unexpected: u64,
    pub recovered: u64,
    pub failed_observed: u64,
    pub out_of_range: u64,
    pub reads: u64,
    pub readds: u64,
}

impl Counts {
    fn add(&mut self, o: Counts) {
        self.attempts += o.attempts;
        self.acknowledged += o.acknowledged;
        self.stable += o.stable;
        self.lost += o.lost;
        self.never_read += o.never_read;
        self.stale += o.stale;
        self.duplicated += o.duplicated;
        self.unexpected += o.unexpected;
        self.recovered += o.recovered;
        self.failed_observed += o.failed_observed;
        self.out_of_range += o.out_of_range;
        self.reads += o.reads;
        self.readds += o.readds;
    }
}

/// A listed element: how results show it and its anomaly.
pub(super) struct Listing {
    pub display: Value,
    pub anomaly: Value,
}

/// A pass's findings, bounded.
pub(super) struct Summary {
    pub counts: Counts,
    /// Keyed by the element's first add (the order elements appear in).
    pub lost: Listed<u64, Listing>,
    pub stale: Listed<u64, Listing>,
    pub failed_observed: Listed<u64, Value>,
    pub recovered: Listed<u64, Value>,
    pub never_read: Listed<u64, Value>,
    /// Keyed by (read, element's first add).
    pub duplicated: Listed<(u64, u64), Value>,
    /// Keyed by (read, the entry's JSON text).
    pub unexpected: Listed<(u64, String), Value>,
    /// Keyed by (read, place in the read).
    pub out_of_range: Listed<(u64, u64), Value>,
    /// Keyed by (longest stable latency first, first add).
    pub worst_stale: Listed<(Reverse<Option<u64>>, u64), Value>,
    pub stable_latencies: Histogram<u64>,
    pub lost_latencies: Histogram<u64>,
    /// The time of each listed lost element's add invoke and completion (route changes).
    pub times: FxHashMap<u64, u64>,
}

fn histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant digits is a valid precision")
}

impl Summary {
    fn empty() -> Summary {
        Summary {
            counts: Counts::default(),
            lost: Listed::new(MAX_LISTED),
            stale: Listed::new(MAX_LISTED),
            failed_observed: Listed::new(MAX_LISTED),
            recovered: Listed::new(MAX_LISTED),
            never_read: Listed::new(MAX_LISTED),
            duplicated: Listed::new(MAX_LISTED),
            unexpected: Listed::new(MAX_LISTED),
            out_of_range: Listed::new(MAX_LISTED),
            worst_stale: Listed::new(WORST_STALE),
            stable_latencies: histogram(),
            lost_latencies: histogram(),
            times: FxHashMap::default(),
        }
    }

    /// The summary of one finished pass over `history`.
    pub fn of(scan: &Scan, history: &History) -> Summary {
        let mut s = Summary::empty();
        for e in &scan.elements {
            s.note_element(e);
        }
        s.note_reads(scan);
        s.times = listed_times(&s.lost, history);
        s
    }

    fn note_element(&mut self, e: &Element) {
        let c = &mut self.counts;
        let first_add = e.add_invoke.index;
        c.attempts += 1;
        c.acknowledged += u64::from(e.add_status() == AddStatus::Acknowledged);
        match e.outcome() {
            Outcome::Stable => {
                c.stable += 1;
                if e.is_stale() {
                    c.stale += 1;
                    self.stale.push(first_add, listing("stale", e));
                    let worst = (Reverse(e.stable_latency()), first_add);
                    self.worst_stale.push(worst, element_anomaly("stale", e));
                }
            }
            Outcome::Lost => {
                c.lost += 1;
                self.lost.push(first_add, listing("lost", e));
            }
            Outcome::NeverRead => {
                c.never_read += 1;
                self.never_read.push(first_add, e.display());
            }
        }
        if e.is_recovered() {
            c.recovered += 1;
            self.recovered.push(first_add, e.display());
        }
        if e.failed_but_observed() {
            c.failed_observed += 1;
            let anomaly = element_anomaly("failed-add-observed", e);
            self.failed_observed.push(first_add, anomaly);
        }
        if let Some(l) = e.stable_latency() {
            self.stable_latencies.saturating_record(l);
        }
        if let Some(l) = e.lost_latency() {
            self.lost_latencies.saturating_record(l);
        }
    }

    fn note_reads(&mut self, scan: &Scan) {
        let c = &mut self.counts;
        c.reads += scan.reads;
        c.readds += scan.readds;
        c.duplicated += scan.duplicates.len() as u64;
        for d in &scan.duplicates {
            let e = &scan.elements[d.element];
            let anomaly = json!({"kind": "duplicated", "element": e.display(),
                "read": d.read_index, "copies": d.copies, "add": e.add_invoke.index});
            self.duplicated.push((d.read_index, e.add_invoke.index), anomaly);
        }
        c.out_of_range += scan.out_of_range.len() as u64;
        for (place, (read, key)) in scan.out_of_range.iter().enumerate() {
            let anomaly = json!({"kind": "scan-out-of-range", "element": key, "read": read});
            self.out_of_range.push((*read, place as u64), anomaly);
        }
        for u in scan.unmatched.values().filter(|u| !is_register_key(scan, u)) {
            self.counts.unexpected += 1;
            self.unexpected
                .push((u.read_index, u.display.to_string()), unexpected_anomaly(scan, u));
        }
    }

    /// Adds `other`'s findings (a disjoint set of key groups of the same history).
    pub fn merge(&mut self, other: Summary) {
        self.counts.add(other.counts);
        self.lost.merge(other.lost);
        self.stale.merge(other.stale);
        self.failed_observed.merge(other.failed_observed);
        self.recovered.merge(other.recovered);
        self.never_read.merge(other.never_read);
        self.duplicated.merge(other.duplicated);
        self.unexpected.merge(other.unexpected);
        self.out_of_range.merge(other.out_of_range);
        self.worst_stale.merge(other.worst_stale);
        // Both are created with the same bounds, so adding cannot fail.
        let _ = self.stable_latencies.add(&other.stable_latencies);
        let _ = self.lost_latencies.add(&other.lost_latencies);
        self.times.extend(other.times);
    }
}

/// A merged summary of no part yet.
impl Default for Summary {
    fn default() -> Self {
        Summary::empty()
    }
}

fn listing(kind: &str, e: &Element) -> Listing {
    Listing {
        display: e.display(),
        anomaly: element_anomaly(kind, e),
    }
}

/// A read returned a register key (a non-set op addressed it): not unexpected.
fn is_register_key(scan: &Scan, u: &Unmatched) -> bool {
    u.display
        .as_str()
        .is_some_and(|k| scan.register_keys.contains(k))
}

fn unexpected_anomaly(scan: &Scan, u: &Unmatched) -> Value {
    let added_later = scan
        .identity_lookup(&u.display)
        .map(|id| scan.elements[id].add_invoke.index);
    match added_later {
        Some(add) => json!({"kind": "unexpected", "element": u.display, "read": u.read_index,
                            "add": add, "why": "read before its add was invoked"}),
        None => json!({"kind": "unexpected", "element": u.display, "read": u.read_index,
                       "why": "never added"}),
    }
}

pub(super) fn element_anomaly(kind: &str, e: &Element) -> Value {
    json!({
        "kind": kind,
        "element": e.display(),
        "add": e.add_invoke.index,
        "add-completion": e.add_completion().map(|(t, i)| json!({"type": t.name(), "index": i})),
        "known": e.known.map(|p| p.index),
        "last-present-read": e.last_present.map(|p| p.index),
        "last-absent-read": e.last_absent.map(|p| p.index),
        "lost-latency-ms": e.lost_latency().map(ms),
        "stable-latency-ms": e.stable_latency().map(ms),
    })
}

/// The times of the ops the listed lost elements name (their add and its completion).
fn listed_times(lost: &Listed<u64, Listing>, history: &History) -> FxHashMap<u64, u64> {
    let wanted: FxHashSet<u64> = lost
        .iter()
        .flat_map(|(_, l)| {
            let add = l.anomaly["add"].as_u64();
            let done = l.anomaly.pointer("/add-completion/index").and_then(Value::as_u64);
            add.into_iter().chain(done)
        })
        .collect();
    if wanted.is_empty() {
        return FxHashMap::default();
    }
    history
        .ops
        .iter()
        .filter(|op| wanted.contains(&op.index))
        .map(|op| (op.index, op.time))
        .collect()
}

pub(super) fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}


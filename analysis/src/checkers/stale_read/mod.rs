//! The stale-read witness: for each key the linearizability checker found invalid, what
//! the history alone proves about its cause, added to the key's anomaly as `cause` and,
//! for a stale read, `stale_read` (fields in `docs/checkers.md`).
//!
//! This only annotates: it never changes a verdict, and a key whose cause the history does
//! not prove (see [`proof`]) gets no `cause` at all — the search's witness stands alone.
//! It reads the whole history (nemesis events included), so callers pass the history the
//! run recorded, not the client-only one the search may have been given.
//!
//! The read named is the anomaly's own culprit when that is a proven stale read, else the
//! earliest proven stale read of the key.
//!
//! Proving one read costs a pass over the key's writes, so scans over *every* read of a key
//! (the fallback search, `stale_reads_of_key`) run only while reads × writes stays within
//! [`MAX_SCAN_WORK`]; past it (a million-op hot key) only the culprit is examined and
//! `stale_reads_of_key` is `null`. That only leaves out an annotation, never a verdict.

mod faults;
mod key_ops;
mod proof;

use crate::history::{History, Op};
use crate::verdict::CheckerResult;
use key_ops::{all_keys, key_ops, KeyOps, Read, Write};
use proof::{acked_between, cause_of, last_acked_before, Cause, Source, Stale};
use serde_json::{json, Value};

/// Count added to the linearizable result: keys whose anomaly is a proven stale read.
pub const COUNT_KEYS: &str = "keys-stale-read";

/// Largest reads × writes product of a key for which every read is examined.
pub const MAX_SCAN_WORK: usize = 20_000_000;

/// Whether examining every read of `ops` stays within [`MAX_SCAN_WORK`].
fn may_scan_every_read(ops: &KeyOps) -> bool {
    ops.reads.len().saturating_mul(ops.writes.len()) <= MAX_SCAN_WORK
}

fn secs(ns: u64) -> f64 {
    (ns as f64 / 1e6).round() / 1e3
}

fn ms(ns: u64) -> f64 {
    (ns as f64 / 1e4).round() / 100.0
}

/// Adds `cause` / `stale_read` to every not-linearizable anomaly of `result` whose key's
/// history proves one, and counts the stale-read keys.
pub fn annotate(history: &History, result: &mut CheckerResult) {
    let initial = result
        .details
        .get("initial")
        .cloned()
        .unwrap_or(Value::Null);
    annotate_each(history, &initial, result.anomalies.iter_mut());
    count_stale_keys(result);
}

/// Adds `cause` / `stale_read` to each of `anomalies` that is a not-linearizable witness
/// whose key's history (in `history`, keys starting at `initial`) proves one.
pub fn annotate_each<'a>(
    history: &History,
    initial: &Value,
    anomalies: impl Iterator<Item = &'a mut Value>,
) {
    for anomaly in anomalies.filter(|a| a["type"] == "not-linearizable") {
        let key = anomaly["key"].as_str().map(str::to_string);
        let ops = key_ops(history, key.as_deref());
        let culprit = anomaly["op"]["index"].as_u64();
        let Some(cause) = key_cause(&ops, initial, culprit) else {
            continue;
        };
        anomaly["cause"] = cause.name().into();
        match &cause {
            Cause::StaleRead(stale) => {
                let stale_reads = may_scan_every_read(&ops).then(|| {
                    ops.reads
                        .iter()
                        .filter(|r| matches!(cause_of(&ops, initial, r), Some(Cause::StaleRead(_))))
                        .count()
                });
                anomaly["stale_read"] = stale_json(history, &ops, stale, stale_reads);
            }
            Cause::ReadOfFailedWrite { read, failed } => {
                anomaly["read_of_failed_write"] =
                    json!({ "read": read_json(read), "failed_write": write_json(failed) });
            }
            Cause::ReadOfUnwrittenValue { read } => {
                anomaly["read_of_unwritten_value"] = json!({ "read": read_json(read) })
            }
        }
    }
}

/// Counts the anomalies of `result` annotated as stale reads ([`COUNT_KEYS`]), when it has
/// any anomaly.
pub fn count_stale_keys(result: &mut CheckerResult) {
    if result.anomalies.is_empty() {
        return;
    }
    let stale = result
        .anomalies
        .iter()
        .filter(|a| a["cause"] == STALE_READ_CAUSE)
        .count();
    result.counts.insert(COUNT_KEYS.into(), stale as u64);
}

/// The `cause` of an anomaly proven a stale read.
const STALE_READ_CAUSE: &str = "stale-read";

/// A proven stale read reduced to what a store probe after the run looks for: the value
/// read and the value of the acknowledged write it missed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvenStaleRead {
    pub key: Option<String>,
    pub read_value: Value,
    pub missed_value: Value,
}

/// The first proven stale read of each key (by read invoke), for at most `max_keys` keys.
pub fn first_stale_reads(
    history: &History,
    initial: &Value,
    max_keys: usize,
) -> Vec<ProvenStaleRead> {
    all_keys(history)
        .into_iter()
        .filter(|(_, ops)| may_scan_every_read(ops))
        .filter_map(|(key, ops)| {
            let (read_value, missed_value) =
                ops.reads
                    .iter()
                    .find_map(|r| match cause_of(&ops, initial, r) {
                        Some(Cause::StaleRead(s)) => {
                            Some((s.read.value().clone(), s.missed.value.clone()))
                        }
                        _ => None,
                    })?;
            Some(ProvenStaleRead {
                key: key.map(str::to_string),
                read_value,
                missed_value,
            })
        })
        .take(max_keys)
        .collect()
}

/// The culprit's cause if proven, else the first proven stale read of the key.
fn key_cause<'k, 'h>(
    ops: &'k KeyOps<'h>,
    initial: &Value,
    culprit: Option<u64>,
) -> Option<Cause<'k, 'h>> {
    let culprit_read = ops.reads.iter().find(|r| Some(r.invoke.index) == culprit);
    if let Some(cause) = culprit_read.and_then(|r| cause_of(ops, initial, r)) {
        return Some(cause);
    }
    if !may_scan_every_read(ops) {
        return None;
    }
    ops.reads
        .iter()
        .find_map(|r| cause_of(ops, initial, r).filter(|c| matches!(c, Cause::StaleRead(_))))
}

fn read_json(read: &Read) -> Value {
    json!({
        "index": read.invoke.index,
        "completion_index": read.done.index,
        "process": read.invoke.process,
        "node": read.served_by(),
        "value": read.value(),
        "invoke_s": secs(read.invoke.time),
        "completion_s": secs(read.done.time),
    })
}

fn commit_index(op: Option<&Op>) -> Option<u64> {
    op.and_then(|o| o.meta.as_ref()).and_then(|m| m.log_index)
}

fn write_json(write: &Write) -> Value {
    let mut v = json!({
        "index": write.invoke.index,
        "process": write.invoke.process,
        "node": write.invoke.node,
        "value": write.value,
        "invoke_s": secs(write.invoke.time),
    });
    if let Some(done) = write.done {
        v["completion_index"] = done.index.into();
        v["ack_s"] = write.ack_time().map(secs).into();
    }
    if let Some(ci) = commit_index(write.done) {
        v["commit_index"] = ci.into();
    }
    v
}

fn stale_json(history: &History, ops: &KeyOps, stale: &Stale, stale_reads: Option<usize>) -> Value {
    let read = stale.read;
    let missed_ack = stale.missed.ack_time().unwrap_or(read.invoke.time);
    let stale_ns = read.invoke.time.saturating_sub(missed_ack);
    let since = acked_between(ops, missed_ack, read.invoke.time);
    let node = read.served_by();
    let fault_state = faults::fault_state(history, read.invoke.time, node);
    let summary = format!(
        "read {} through {} at {:.3} s returned {}, a value overwritten by acknowledged write {} (value {}, acknowledged at {:.3} s): \
         {:.1} ms stale, {since} acknowledged write(s) missed, {}",
        read.invoke.index,
        node.unwrap_or("an unknown node"),
        secs(read.invoke.time),
        read.value(),
        stale.missed.invoke.index,
        stale.missed.value,
        secs(missed_ack),
        ms(stale_ns),
        faults::describe(&fault_state),
    );
    json!({
        "summary": summary,
        "read": read_json(read),
        "missed_write": write_json(stale.missed),
        "value_written_by": match stale.source {
            Source::Initial => json!("initial"),
            Source::Write(w) => json!({ "write": w.invoke.index, "value": w.value, "ack_s": w.ack_time().map(secs) }),
        },
        "latest_acked_before_read": last_acked_before(ops, read.invoke.time).map(write_json),
        "stale_ms": ms(stale_ns),
        "writes_acked_since": since,
        "stale_reads_of_key": stale_reads,
        "faults": fault_state,
    })
}

//! Adya's G1a and G1b read straight off a small history, every read included, independent
//! of the checker under test (it parses the ops' JSON itself through [`super::oracle`]).
//!
//! - G1a (aborted read): a committed transaction read a value (list-append: any element of a
//!   list it read) that a failed transaction wrote.
//! - G1b (intermediate read): a committed transaction read a value that another
//!   transaction, which did not fail, wrote and then overwrote in the same transaction
//!   (list-append: a read whose last element another transaction appended and then
//!   appended to the key again).
//!
//! Written values are unique per key, so the writer of a value is known.

use super::oracle::{Fate, OMop, OTxn};
use serde_json::Value;

/// Who wrote `value` to `key`, and whether it wrote the key again afterwards.
fn writer<'a>(txns: &'a [OTxn], key: &str, value: &Value) -> Option<(usize, &'a OTxn, bool)> {
    txns.iter().enumerate().find_map(|(i, t)| {
        let at = t.mops.iter().position(|m| match m {
            OMop::Append(k, v) | OMop::Write(k, v) => k == key && v == value,
            _ => false,
        })?;
        let again = t.mops[at + 1..]
            .iter()
            .any(|m| matches!(m, OMop::Append(k, _) | OMop::Write(k, _) if k == key));
        Some((i, t, again))
    })
}

/// Every committed read: (reader, key, what it returned), `null` results skipped.
fn committed_reads(txns: &[OTxn]) -> impl Iterator<Item = (usize, &String, &Value)> {
    txns.iter()
        .enumerate()
        .filter(|(_, t)| t.fate == Fate::Committed)
        .flat_map(|(i, t)| {
            t.mops.iter().filter_map(move |m| match m {
                OMop::Read(k, Some(v)) if !v.is_null() => Some((i, k, v)),
                _ => None,
            })
        })
}

/// The values a read returned: a list's elements, or the register's value.
fn values(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(list) => list.iter().collect(),
        other => vec![other],
    }
}

/// Whether the history holds Adya's G1a.
pub fn g1a(txns: &[OTxn]) -> bool {
    committed_reads(txns).any(|(r, k, v)| {
        values(v)
            .into_iter()
            .any(|x| writer(txns, k, x).is_some_and(|(w, t, _)| w != r && t.fate == Fate::Failed))
    })
}

/// Whether the history holds Adya's G1b; `failed_writers`: also count intermediate values
/// of failed transactions (those reads are G1a already).
pub fn g1b(txns: &[OTxn], failed_writers: bool) -> bool {
    committed_reads(txns).any(|(r, k, v)| {
        let last = match v {
            Value::Array(list) => list.last(),
            other => Some(other),
        };
        last.and_then(|x| writer(txns, k, x))
            .is_some_and(|(w, t, again)| {
                w != r && again && (failed_writers || t.fate != Fate::Failed)
            })
    })
}

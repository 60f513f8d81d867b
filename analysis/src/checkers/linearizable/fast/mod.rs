//! The exact fast path for one key whose written values are unique: O(n log n) instead of
//! a search that is exponential in concurrency.
//!
//! With unique values every read names the write it saw and every successful cas names
//! the version it replaced, so the version structure is known up front ([`versions`]);
//! what remains is whether the chains of versions can be laid out in real time
//! ([`chains`]) without overlapping ([`zones`]). Keys of appends take [`append`], where a
//! text may be written more than once as long as real time leaves one op that can have
//! written each text a read shows ([`kv_roots`], [`kv_text`]). The verdict is the one the
//! search would give (the argument is in `docs/checkers.md`, "Unique values: the fast
//! path"); keys the argument does not cover (a register value written twice, a kv read
//! whose texts more than one op could have written) are reported
//! [`FastOutcome::NotEligible`] and go to the search.
//!
//! Semantics shared with the search: `fail`ed ops and indeterminate reads were dropped by
//! preparation; an indeterminate write or cas may take effect at any point after its call
//! or never; the initial value is a virtual write before everything.

pub mod append;
pub mod chains;
pub mod kv_roots;
pub mod kv_text;
pub mod versions;
mod witness;
pub mod zones;

use super::prepare::KeyHistory;
use crate::history::History;
use serde_json::Value;
use versions::{Built, NONE};

/// Why a key with unique values has no linearization. Op ids index `KeyHistory::ops`.
#[derive(Debug, Clone, Copy)]
pub enum Violation {
    /// A read returned (or a cas expected) a value no kept op wrote.
    Unwritten { op: u32 },
    /// Two successful cas ops replaced the same version.
    SecondSuccessor { op: u32, first: u32 },
    /// A cas whose chain of expected values never reaches a plain write or the initial
    /// value (the cas ops expect each other's values in a cycle).
    Unrooted { op: u32 },
    /// `op` returned before `after` was invoked, but the version order puts `after`
    /// first.
    TooLate { op: u32, after: u32 },
    /// Two reads of an append-only key whose strings are not prefixes of one another.
    Diverged { op: u32, other: u32 },
    /// A kv read whose string begins with `root`'s text (`NONE`: the initial value), but
    /// the put `by` was acknowledged after `root` completed and before the read was
    /// invoked, and no other put or appends can have produced the string.
    StaleRoot { op: u32, root: u32, by: u32 },
    /// A kv read holds a text at a place where none of the appends of that text (one of
    /// them is `text_op`) fits in real time.
    NoAppend { op: u32, text_op: u32 },
    /// Two chains whose zones no linearization can honour together.
    Zones(zones::Conflict),
}

pub enum FastOutcome {
    Linearizable,
    /// Not linearizable; the witness in the shape of [`super::witness::witness`].
    NotLinearizable(Value),
    /// The fast path does not apply; the reason, for the report.
    NotEligible(String),
}

/// Decides `key` if its written values are unique.
pub fn check_key(history: &History, key: &KeyHistory) -> FastOutcome {
    match decide(key) {
        Ok(None) => FastOutcome::Linearizable,
        Ok(Some(v)) => FastOutcome::NotLinearizable(witness::witness(history, key, &v)),
        Err(why) => FastOutcome::NotEligible(why),
    }
}

/// `Ok(None)` if linearizable, `Ok(Some(_))` with the first violation found, `Err` if
/// not eligible.
pub fn decide(key: &KeyHistory) -> Result<Option<Violation>, String> {
    if key
        .ops
        .iter()
        .any(|o| matches!(o.action, super::model::Action::Append(_)))
    {
        return append::decide(key);
    }
    let versions = match versions::build(key) {
        Built::Versions(v) => v,
        Built::NotEligible(why) => return Err(why),
        Built::Violation(v) => return Ok(Some(v)),
    };
    let mut visited = vec![false; key.values.len()];
    let mut zones = Vec::new();
    let roots =
        std::iter::once(key.initial).chain(key.ops.iter().enumerate().filter_map(|(i, o)| {
            match o.action {
                super::model::Action::Write(v) if versions.writer[v as usize] == i as u32 => {
                    Some(v)
                }
                _ => None,
            }
        }));
    for root in roots {
        match chains::place(key, &versions, root, &mut visited) {
            Ok(zone) if zone.min_ret_op != NONE || zone.max_call_op != NONE => zones.push(zone),
            Ok(_) => {}
            Err(v) => return Ok(Some(v)),
        }
    }
    if let Some(op) = versions
        .writer
        .iter()
        .enumerate()
        .find_map(|(v, &w)| (w != NONE && !visited[v]).then_some(w))
    {
        return Ok(Some(Violation::Unrooted { op }));
    }
    zones.extend(versions.blind.iter().map(|&op| chains::single(key, op)));
    Ok(zones::find_conflict(&zones).map(Violation::Zones))
}

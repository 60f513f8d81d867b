//! Removal of operations that provably cannot change the verdict.
//!
//! An indeterminate write (or indeterminate cas) of a value that no read returned and no
//! cas expected is irrelevant: had it taken effect, nothing could have observed the
//! value before the next write replaced it, so any linearization with it is one without
//! it, and "never took effect" is always allowed for it. Removing such ops keeps the
//! search from trying them at every step. Appends are never pruned (their effect shows
//! up inside later strings), and with appends present on a key, neither are writes.

use super::model::Action;
use super::prepare::KeyHistory;
use fixedbitset::FixedBitSet;

/// The values some op observes: returned by a read, or expected by a cas (of any
/// outcome). `None` if the key has appends, whose effects show up inside other values.
pub fn observed_values(key: &KeyHistory) -> Option<FixedBitSet> {
    if key
        .ops
        .iter()
        .any(|op| matches!(op.action, Action::Append(_)))
    {
        return None;
    }
    let mut observed = FixedBitSet::with_capacity(key.values.len());
    for op in &key.ops {
        match op.action {
            Action::Read(v) => observed.insert(v as usize),
            Action::Cas { expected, .. } | Action::CasMaybe { expected, .. } => {
                observed.insert(expected as usize)
            }
            Action::Write(_) | Action::Append(_) => {}
        }
    }
    Some(observed)
}

/// Drops irrelevant indeterminate ops from `key`; returns how many were dropped.
pub fn prune_unobserved_writes(key: &mut KeyHistory) -> u64 {
    let Some(observed) = observed_values(key) else {
        return 0;
    };
    let before = key.ops.len();
    key.ops.retain(|op| {
        let written = match op.action {
            Action::Write(v) | Action::CasMaybe { new: v, .. } => v,
            _ => return true,
        };
        op.is_determinate() || observed.contains(written as usize)
    });
    (before - key.ops.len()) as u64
}

#[cfg(test)]
mod tests {
    use super::super::prepare::{PreparedOp, NO_RETURN};
    use super::super::values::ValueTable;
    use super::*;
    use serde_json::json;

    fn key_with(ops: Vec<PreparedOp>, values: ValueTable) -> KeyHistory {
        KeyHistory {
            key: None,
            ops,
            values,
            initial: ValueTable::NULL,
        }
    }

    #[test]
    fn drops_only_indeterminate_writes_nobody_observed() {
        let mut t = ValueTable::new();
        let (a, b, c) = (
            t.intern(&json!(1)).unwrap(),
            t.intern(&json!(2)).unwrap(),
            t.intern(&json!(3)).unwrap(),
        );
        let op = |call, ret, action| PreparedOp { call, ret, action };
        let mut key = key_with(
            vec![
                op(0, NO_RETURN, Action::Write(a)), // unobserved, indeterminate: pruned
                op(1, NO_RETURN, Action::Write(b)), // read later: kept
                op(2, 5, Action::Write(c)),         // determinate: kept
                op(3, 4, Action::Read(b)),
                op(
                    6,
                    NO_RETURN,
                    Action::CasMaybe {
                        expected: b,
                        new: a,
                    },
                ), // new value unobserved: pruned
            ],
            t,
        );
        assert_eq!(prune_unobserved_writes(&mut key), 2);
        let calls: Vec<u32> = key.ops.iter().map(|o| o.call).collect();
        assert_eq!(calls, vec![1, 2, 3]);
    }
}

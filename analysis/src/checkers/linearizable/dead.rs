//! Dead writes: determinate writes of a value nobody observes (no read returns it, no
//! cas expects it; see [`super::prune::observed_values`]). Unlike indeterminate ones they
//! must be linearized, but where exactly hardly matters, and trying each of them at every
//! point is what makes highly concurrent histories explode.
//!
//! After a dead write, nothing but a write can come next (nothing can observe its value),
//! and a write overwrites it. So a dead write can be moved, in any linearization, to
//! just before *any* later write that comes after all the ops that must precede it — the
//! states everyone else sees do not change. Hence the canonical linearizations the search
//! restricts itself to, without losing any verdict:
//! - when it linearizes a write that is not dead, it first linearizes every dead write
//!   that is a candidate at that point ("sweeps" them, as one step);
//! - otherwise it linearizes a dead write only when forced: its return is the first
//!   pending one (this covers dead writes after the last live write).

use super::model::Action;
use super::prepare::KeyHistory;
use super::prune::observed_values;
use fixedbitset::FixedBitSet;

/// The dead writes of `key`, by op id.
pub fn dead_writes(key: &KeyHistory) -> FixedBitSet {
    let mut dead = FixedBitSet::with_capacity(key.ops.len());
    let Some(observed) = observed_values(key) else {
        return dead;
    };
    for (i, op) in key.ops.iter().enumerate() {
        if let Action::Write(v) = op.action {
            if op.is_determinate() && !observed.contains(v as usize) {
                dead.insert(i);
            }
        }
    }
    dead
}

#[cfg(test)]
mod tests {
    use super::super::prepare::{PreparedOp, NO_RETURN};
    use super::super::values::ValueTable;
    use super::*;
    use serde_json::json;

    #[test]
    fn only_determinate_writes_of_unobserved_values_are_dead() {
        let mut t = ValueTable::new();
        let (a, b, c) = (
            t.intern(&json!(1)).unwrap(),
            t.intern(&json!(2)).unwrap(),
            t.intern(&json!(3)).unwrap(),
        );
        let op = |call, ret, action| PreparedOp { call, ret, action };
        let ops = vec![
            op(0, 1, Action::Write(a)),         // dead
            op(2, 3, Action::Write(b)),         // read later
            op(4, NO_RETURN, Action::Write(a)), // indeterminate: pruning's business
            op(5, 6, Action::Read(b)),
            op(
                7,
                8,
                Action::Cas {
                    expected: c,
                    new: a,
                },
            ), // a cas is never dead
            op(9, 10, Action::Write(c)), // expected by the cas
        ];
        let key = KeyHistory {
            key: None,
            ops,
            values: t,
            initial: ValueTable::NULL,
        };
        assert_eq!(dead_writes(&key).ones().collect::<Vec<_>>(), vec![0]);
    }
}

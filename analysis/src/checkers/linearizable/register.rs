//! The register and compare-and-set register models (Jepsen's `register` and
//! `cas-register`). The two share one specification: a plain register simply never sees a
//! `cas` action, because preparation rejects `cas` for the `register` model.

use super::model::{Action, SequentialModel};
use super::values::ValueTable;

/// A single register holding one interned value (`null` = absent).
pub struct RegisterModel<'a> {
    initial: u32,
    values: &'a ValueTable,
}

impl<'a> RegisterModel<'a> {
    pub fn new(initial: u32, values: &'a ValueTable) -> Self {
        RegisterModel { initial, values }
    }
}

impl SequentialModel for RegisterModel<'_> {
    fn initial(&self) -> u32 {
        self.initial
    }

    #[inline]
    fn step(&mut self, state: u32, action: Action) -> Option<u32> {
        match action {
            Action::Read(v) => (v == state).then_some(state),
            Action::Write(v) => Some(v),
            Action::Cas { expected, new } => (expected == state).then_some(new),
            Action::CasMaybe { expected, new } => Some(if expected == state { new } else { state }),
            // Preparation never gives an append to a register.
            Action::Append(_) => None,
        }
    }

    fn describe(&self, state: u32) -> serde_json::Value {
        self.values.json(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_must_match_and_cas_must_match_expected() {
        let mut t = ValueTable::new();
        let (one, two) = (t.intern(&json!(1)).unwrap(), t.intern(&json!(2)).unwrap());
        let mut m = RegisterModel::new(ValueTable::NULL, &t);
        assert_eq!(
            m.step(ValueTable::NULL, Action::Read(ValueTable::NULL)),
            Some(ValueTable::NULL)
        );
        assert_eq!(m.step(ValueTable::NULL, Action::Read(one)), None);
        assert_eq!(m.step(ValueTable::NULL, Action::Write(one)), Some(one));
        assert_eq!(
            m.step(
                one,
                Action::Cas {
                    expected: one,
                    new: two
                }
            ),
            Some(two)
        );
        assert_eq!(
            m.step(
                two,
                Action::Cas {
                    expected: one,
                    new: two
                }
            ),
            None
        );
        assert_eq!(
            m.step(
                two,
                Action::CasMaybe {
                    expected: one,
                    new: one
                }
            ),
            Some(two)
        );
        assert_eq!(
            m.step(
                one,
                Action::CasMaybe {
                    expected: one,
                    new: two
                }
            ),
            Some(two)
        );
    }
}

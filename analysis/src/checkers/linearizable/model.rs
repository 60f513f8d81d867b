//! The sequential specifications the search checks against.
//!
//! Every operation is reduced, before the search starts, to an [`Action`] over interned
//! values (`u32` ids, see [`super::values`]), and every model state is a `u32` too, so the
//! search and its cache never touch `serde_json::Value`. A model only has to say whether an
//! action may happen in a state and what state it leaves behind.

/// One operation of one key, with its values interned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// A read (`read`/`get`) that returned this value; only completed reads are kept.
    Read(u32),
    /// A write (`write`/`put`) of this value.
    Write(u32),
    /// A compare-and-set that is known to have succeeded (`ok`).
    Cas { expected: u32, new: u32 },
    /// A compare-and-set of unknown outcome (`info` or never completed): at its
    /// linearization point it succeeds if the register holds `expected` and is a no-op
    /// otherwise (a failed cas). Not taking effect at all is covered by the search, which
    /// never has to linearize an indeterminate op.
    CasMaybe { expected: u32, new: u32 },
    /// A string append (kv model).
    Append(u32),
}

/// A sequential specification over interned states.
pub trait SequentialModel {
    /// The state before any operation.
    fn initial(&self) -> u32;
    /// The state after `action` in `state`, or `None` if the action cannot happen there.
    /// Takes `&mut self` so that a model may intern states it creates (kv appends).
    fn step(&mut self, state: u32, action: Action) -> Option<u32>;
    /// Heap bytes the model holds beyond its input (counted against the memory budget).
    fn extra_bytes(&self) -> u64 {
        0
    }
    /// A state as JSON, for witnesses.
    fn describe(&self, state: u32) -> serde_json::Value;
}

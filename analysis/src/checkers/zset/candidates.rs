//! Which states a member can be in at one point of the history, without a search: the
//! state right after whichever of its mutations was the last to take effect before that
//! point (or the initial absence, when nothing had to).
//!
//! Every mutation's post-state is pinned by its own call — ZADD's score, an `ok`
//! ZINCRBY's reply, ZREM's absence — except an indeterminate ZINCRBY's (present, score
//! unknown). A mutation `p` can be the last before an observer iff it did not fail, was
//! invoked before the observer completed, and no mutation that surely took effect before
//! the observer began (`ok` and completed before `must_before`) surely began after `p`
//! ended. That over-approximates the states of every linearization, so a rule built on
//! it never calls a linearizable history invalid.

use super::model::{Key, State};

/// The candidates for a member's last mutation before an observer.
#[derive(Debug, Clone, Default)]
pub struct Candidates {
    /// No mutation had to take effect before the observer: the initial absence is possible.
    pub initial: bool,
    /// Mutation ids that can be the last one.
    pub last: Vec<usize>,
}

impl Candidates {
    /// Every possible state.
    pub fn states<'k>(&'k self, key: &'k Key) -> impl Iterator<Item = State> + 'k {
        self.initial
            .then_some(State::Absent)
            .into_iter()
            .chain(self.last.iter().map(|&id| key.mutations[id].post()))
    }
}

/// The candidates for `member` before an observer that began after every `ok` completion
/// below `must_before` and completed at `observer_complete`; `exclude` is the observer
/// itself when it is a mutation.
pub fn before(
    key: &Key,
    member: usize,
    must_before: u64,
    observer_complete: u64,
    exclude: Option<usize>,
) -> Candidates {
    let ids = key.by_member.get(member).map_or(&[][..], Vec::as_slice);
    let live = || {
        ids.iter()
            .copied()
            .filter(move |&id| Some(id) != exclude && key.mutations[id].effective())
    };
    let forced_invoke = live()
        .map(|id| &key.mutations[id])
        .filter(|m| m.done_by < must_before)
        .map(|m| m.invoke)
        .max();
    let last = live()
        .filter(|&id| {
            let m = &key.mutations[id];
            m.invoke < observer_complete && forced_invoke.is_none_or(|f| m.done_by > f)
        })
        .collect();
    Candidates {
        initial: forced_invoke.is_none(),
        last,
    }
}

//! Whole-read linearizability of one sorted set: a depth-first search for an order of the
//! key's calls that respects real time (a call that completed before another was invoked
//! comes first) in which every read returns exactly the set's contents (a range read: its
//! members whose score is in the bounds) and every `ok` reply is what the set would answer.
//! `ok` calls must all be placed; an indeterminate mutation may be placed anywhere after
//! its invoke, or never; failed mutations and reads that did not end `ok` are left out.
//!
//! Explored configurations (placed calls, set contents) are remembered by a 128-bit hash,
//! and the search stops after `budget` of them: beyond it the key's linearizability is
//! unknown, never assumed.

use super::model::{same_score, Key, MutKind, Read};
use crate::checkers::calls::Outcome;
use fixedbitset::FixedBitSet;
use rustc_hash::FxHashSet;
use std::hash::{BuildHasher, RandomState};

/// What the search concluded for one key.
#[derive(Debug, Clone, PartialEq)]
pub enum Linearizable {
    Yes,
    /// No order exists; `stuck_at` is the history index of the first call that could not
    /// be placed in the deepest order found.
    No {
        stuck_at: u64,
    },
    /// The budget ran out first.
    Unknown,
}

#[derive(Clone, Copy)]
enum Entry {
    Mut(usize),
    Read(usize),
}

struct Call {
    entry: Entry,
    invoke: u64,
    done_by: u64,
    required: bool,
    index: u64,
}

type Contents = Vec<Option<f64>>;

/// Searches `key` within `budget` explored configurations.
pub fn linearizable(key: &Key, budget: u64) -> Linearizable {
    let mut calls: Vec<Call> = key
        .mutations
        .iter()
        .enumerate()
        .filter(|(_, m)| m.effective())
        .map(|(i, m)| Call {
            entry: Entry::Mut(i),
            invoke: m.invoke,
            done_by: m.done_by,
            required: m.outcome == Outcome::Ok,
            index: m.index,
        })
        .chain(key.reads.iter().enumerate().map(|(i, r)| Call {
            entry: Entry::Read(i),
            invoke: r.invoke,
            done_by: r.complete,
            required: true,
            index: r.complete,
        }))
        .collect();
    calls.sort_by_key(|c| c.invoke);
    Search {
        key,
        calls: &calls,
        seen: FxHashSet::default(),
        hashers: (RandomState::new(), RandomState::new()),
        budget,
        deepest: (0, None),
    }
    .run()
}

struct Search<'a> {
    key: &'a Key,
    calls: &'a [Call],
    seen: FxHashSet<u128>,
    /// Two independently keyed hashers: a configuration is known by both hashes.
    hashers: (RandomState, RandomState),
    budget: u64,
    /// (required calls placed, first unplaced required call) of the deepest order.
    deepest: (usize, Option<u64>),
}

impl Search<'_> {
    fn run(mut self) -> Linearizable {
        let required = self.calls.iter().filter(|c| c.required).count();
        let start = (
            FixedBitSet::with_capacity(self.calls.len()),
            vec![None; self.key.members.len()],
            0usize,
        );
        let mut stack = vec![start];
        while let Some((placed, contents, done)) = stack.pop() {
            if done == required {
                return Linearizable::Yes;
            }
            if self.seen.len() as u64 >= self.budget {
                return Linearizable::Unknown;
            }
            self.note_depth(&placed, done);
            let calls = self.calls;
            for i in self.placeable(&placed) {
                let next = &calls[i];
                let Some(after) = self.apply(next.entry, &contents) else {
                    continue;
                };
                if !next.required && after == contents {
                    // Placing an indeterminate call that changes nothing only takes
                    // options away: leaving it unplaced covers every order it allows.
                    continue;
                }
                let mut p = placed.clone();
                p.insert(i);
                let fp = self.fingerprint(&p, &after);
                if self.seen.insert(fp) {
                    stack.push((p, after, done + usize::from(next.required)));
                }
            }
        }
        Linearizable::No {
            stuck_at: self.deepest.1.unwrap_or(0),
        }
    }

    fn note_depth(&mut self, placed: &FixedBitSet, done: usize) {
        if done >= self.deepest.0 {
            let first = placed
                .zeroes()
                .map(|i| &self.calls[i])
                .find(|c| c.required)
                .map(|c| c.index);
            self.deepest = (done, first);
        }
    }

    /// The calls that can come next: unplaced, and invoked before every unplaced `ok`
    /// call completed.
    fn placeable(&self, placed: &FixedBitSet) -> Vec<usize> {
        let mut horizon = u64::MAX;
        let mut out = Vec::new();
        for i in placed.zeroes() {
            let c = &self.calls[i];
            if c.invoke >= horizon {
                break;
            }
            if c.required {
                horizon = horizon.min(c.done_by);
            }
            out.push(i);
        }
        out.retain(|&i| self.calls[i].invoke < horizon);
        out
    }

    fn fingerprint(&self, placed: &FixedBitSet, contents: &Contents) -> u128 {
        let words: Vec<u64> = placed
            .as_slice()
            .iter()
            .map(|&w| w as u64)
            .chain(contents.iter().map(|c| c.map_or(u64::MAX, f64::to_bits)))
            .collect();
        (u128::from(self.hashers.0.hash_one(&words)) << 64)
            | u128::from(self.hashers.1.hash_one(&words))
    }

    /// The contents after `entry`, or `None` when its reply (or a read's result) cannot
    /// follow `contents`.
    fn apply(&self, entry: Entry, contents: &Contents) -> Option<Contents> {
        match entry {
            Entry::Read(r) => reads_as(&self.key.reads[r], contents).then(|| contents.clone()),
            Entry::Mut(m) => {
                let m = &self.key.mutations[m];
                let prev = contents[m.member];
                let next = match m.kind {
                    MutKind::Add(s) => Some(s),
                    MutKind::Incr { delta, reply } => {
                        let sum = prev.unwrap_or(0.0) + delta;
                        match reply {
                            Some(r) if !same_score(sum, r) => return None,
                            Some(r) => Some(r),
                            None => Some(sum),
                        }
                    }
                    MutKind::Rem { removed } => {
                        if removed.is_some_and(|r| r != prev.is_some()) {
                            return None;
                        }
                        None
                    }
                };
                let mut after = contents.clone();
                after[m.member] = next;
                Some(after)
            }
        }
    }
}

/// Whether `read` returns exactly what `contents` holds (within its bounds).
fn reads_as(read: &Read, contents: &Contents) -> bool {
    let expected = contents
        .iter()
        .filter(|s| s.is_some_and(|s| read.covers(s)))
        .count();
    expected == read.entries.len()
        && read.entries.iter().enumerate().all(|(i, &(m, s))| {
            contents[m].is_some_and(|c| read.covers(c) && same_score(c, s))
                && !read.entries[..i].iter().any(|(o, _)| *o == m)
        })
}

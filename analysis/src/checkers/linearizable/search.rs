//! The linearizability search of one key: Wing & Gong's backtracking over the history
//! list with Lowe's configuration cache, as Porcupine does it.
//!
//! Walk the list from the head. At a call entry, try to linearize its op now: if the
//! model allows it and the resulting (linearized set, state) was never reached before,
//! lift the op out of the list, remember how to undo it, and restart from the head. At a
//! return entry, the op it belongs to can no longer be linearized in this branch: undo the
//! last linearization and try the entry after it. Indeterminate ops have no return entry,
//! so nothing ever forces them; the search succeeds once every determinate op is
//! linearized, the indeterminate ones left over having "never taken effect".

use super::budget::{Budget, Exceeded};
use super::cache::{ConfigCache, Zobrist};
use super::entries::EntryList;
use super::model::SequentialModel;
use super::prepare::KeyHistory;
use fixedbitset::FixedBitSet;
use std::time::Duration;

/// How often (in loop iterations) the clock is read.
const TIME_CHECK_EVERY: u64 = 4096;

pub enum SearchOutcome {
    Linearizable,
    NotLinearizable(Failure),
    OutOfBudget(Exceeded),
}

/// Where the search got furthest before failing.
pub struct Failure {
    /// The longest linearizable prefix found, as op ids in linearization order.
    pub best: Vec<u32>,
    /// The state after `best`.
    pub state_after_best: u32,
    /// The first op (by return) that no extension of `best` could linearize.
    pub stuck_op: u32,
}

#[derive(Debug, Clone, Default)]
pub struct SearchStats {
    pub configurations: u64,
    pub steps: u64,
    pub backtracks: u64,
    pub cache_bytes: u64,
    pub cache_kind: &'static str,
    pub elapsed: Duration,
}

/// One linearization on the stack: the call entry lifted and the state before it.
struct Frame {
    entry: u32,
    state_before: u32,
}

/// The deepest stack seen so far, maintained with amortised O(1) work per push.
struct Deepest {
    ops: Vec<u32>,
    /// Length of the common prefix of `ops` and the current stack.
    common: usize,
}

impl Deepest {
    fn on_push(&mut self, stack_ops: impl Fn(usize) -> u32, depth_after: usize) {
        let at = depth_after - 1;
        if self.common == at && self.ops.get(at) == Some(&stack_ops(at)) {
            self.common += 1;
        }
        if depth_after > self.ops.len() {
            self.ops.truncate(self.common);
            self.ops.extend((self.common..depth_after).map(&stack_ops));
            self.common = depth_after;
        }
    }

    fn on_pop(&mut self, depth_after: usize) {
        self.common = self.common.min(depth_after);
    }
}

pub fn search<M: SequentialModel>(
    key: &KeyHistory,
    model: &mut M,
    budget: &Budget,
    exact_max_ops: usize,
) -> (SearchOutcome, SearchStats) {
    let ops = &key.ops;
    let mut list = EntryList::new(ops);
    let zobrist = Zobrist::new(ops.len());
    let mut cache = ConfigCache::for_ops(ops.len(), exact_max_ops);
    let fixed_bytes = list.bytes() + ops.len() as u64 * 40;
    let mut linearized = FixedBitSet::with_capacity(ops.len());
    let mut hash = (0u64, 0u64);
    let mut state = model.initial();
    let mut stack: Vec<Frame> = Vec::new();
    let mut deepest = Deepest { ops: Vec::new(), common: 0 };
    let mut remaining = ops.iter().filter(|o| o.is_determinate()).count();
    let mut stats = SearchStats { cache_kind: cache.kind(), ..Default::default() };
    let mut entry = list.first();

    let outcome = loop {
        if remaining == 0 {
            break SearchOutcome::Linearizable;
        }
        stats.steps += 1;
        if stats.steps % TIME_CHECK_EVERY == 0 {
            if let Err(e) = budget.check_time() {
                break SearchOutcome::OutOfBudget(e);
            }
        }
        if !list.is_tail(entry) && list.is_call(entry) {
            let op = list.op(entry) as usize;
            if let Some(next_state) = model.step(state, ops[op].action) {
                let k = zobrist.key(op);
                let next_hash = (hash.0 ^ k.0, hash.1 ^ k.1);
                linearized.insert(op);
                if cache.insert(next_hash, &linearized, next_state) {
                    stats.configurations += 1;
                    if stats.configurations % 1024 == 0 {
                        if let Err(e) = budget.check_memory(fixed_bytes + cache.bytes() + model.extra_bytes()) {
                            break SearchOutcome::OutOfBudget(e);
                        }
                    }
                    stack.push(Frame { entry, state_before: state });
                    deepest.on_push(|i| list.op(stack[i].entry), stack.len());
                    state = next_state;
                    hash = next_hash;
                    list.lift(entry);
                    if list.has_return(entry) {
                        remaining -= 1;
                    }
                    entry = list.first();
                    continue;
                }
                linearized.set(op, false);
            }
            entry = list.next(entry);
        } else {
            // A return entry (or, defensively, the end of the list): backtrack.
            let Some(frame) = stack.pop() else {
                break SearchOutcome::NotLinearizable(failure(key, model, &deepest.ops));
            };
            stats.backtracks += 1;
            deepest.on_pop(stack.len());
            let op = list.op(frame.entry) as usize;
            let k = zobrist.key(op);
            hash = (hash.0 ^ k.0, hash.1 ^ k.1);
            linearized.set(op, false);
            state = frame.state_before;
            list.unlift(frame.entry);
            if list.has_return(frame.entry) {
                remaining += 1;
            }
            entry = list.next(frame.entry);
        }
    };
    stats.cache_bytes = cache.bytes();
    stats.elapsed = budget.elapsed();
    (outcome, stats)
}

/// Describes the failure from the deepest prefix: its final state and the first op by
/// return time that it leaves out.
fn failure<M: SequentialModel>(key: &KeyHistory, model: &mut M, best: &[u32]) -> Failure {
    let mut state = model.initial();
    let mut in_best = FixedBitSet::with_capacity(key.ops.len());
    for &op in best {
        in_best.insert(op as usize);
        // Replaying a prefix the search accepted cannot fail; keep the state if it did.
        state = model.step(state, key.ops[op as usize].action).unwrap_or(state);
    }
    let stuck_op = key
        .ops
        .iter()
        .enumerate()
        .filter(|(i, o)| o.is_determinate() && !in_best.contains(*i))
        .min_by_key(|(_, o)| o.ret)
        .map(|(i, _)| i as u32)
        .unwrap_or(0);
    Failure { best: best.to_vec(), state_after_best: state, stuck_op }
}

//! The linearizability search of one key: Wing & Gong's backtracking over the history
//! list with Lowe's configuration cache, as Porcupine does it.
//!
//! The candidates of a configuration are the ops called before the first pending return.
//! Try them in order: determinate ones walking the entry list from the head, then the
//! indeterminate ones (kept apart in the [`Pool`], since they have no return). If the
//! model allows a candidate and the resulting (linearized set, state) was never reached
//! before, lift it out, push a frame to undo it, and start over with the new
//! configuration. When every candidate has failed, undo the last linearization and go on
//! with the candidates after it. The search succeeds once every determinate op is
//! linearized, the indeterminate ones left over having "never taken effect". Trying
//! indeterminate ops last means they are linearized lazily, only where the determinate
//! ones need them, which keeps histories with many crashed writes cheap. Before all
//! that, a determinate read of the current value is taken without branching (see
//! [`safe_move`]).
//!
//! Two reductions for indeterminate ops, both sound because such an op may take effect at
//! any point after its call or never: an indeterminate op whose effect would leave the
//! state unchanged is not tried (dropping it from any linearization leaves a
//! linearization), and of several indeterminate ops with the same action only the
//! earliest-called not yet linearized one is tried (any linearization using a later twin
//! works with the earlier one in its place).

use super::budget::{Budget, Exceeded};
use super::cache::{ConfigCache, Zobrist};
use super::entries::{EntryList, HEAD};
use super::dead::dead_writes;
use super::model::{Action, SequentialModel};
use super::pool::{Pool, NIL};
use super::prepare::KeyHistory;
use fixedbitset::FixedBitSet;
use rustc_hash::FxHashMap;
use std::time::Duration;

const NO_TWIN: u32 = u32::MAX;

/// For each indeterminate op, the previous indeterminate op (in call order) with the same
/// action, or [`NO_TWIN`].
fn earlier_twins(key: &KeyHistory) -> Vec<u32> {
    let mut last: FxHashMap<super::model::Action, u32> = FxHashMap::default();
    key.ops
        .iter()
        .enumerate()
        .map(|(i, o)| if o.is_determinate() { NO_TWIN } else { last.insert(o.action, i as u32).unwrap_or(NO_TWIN) })
        .collect()
}

/// How often (in loop iterations, a power of two) the clock is read.
const TIME_CHECK_EVERY: u64 = 4096;
/// How often (in new configurations, a power of two) memory is measured.
const MEMORY_CHECK_EVERY: u64 = 1024;

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

/// The longest linearization path seen so far, maintained with amortised O(1) work per
/// linearized op.
struct Deepest {
    ops: Vec<u32>,
    /// Length of the common prefix of `ops` and the current path.
    common: usize,
}

impl Deepest {
    /// The path grew from `before` ops to `path.len()`.
    fn on_push(&mut self, path: &[u32], before: usize) {
        for (i, op) in path.iter().enumerate().skip(before) {
            if self.common == i && self.ops.get(i) == Some(op) {
                self.common += 1;
            }
        }
        if path.len() > self.ops.len() {
            self.ops.truncate(self.common);
            self.ops.extend_from_slice(&path[self.common..]);
            self.common = path.len();
        }
    }

    fn on_pop(&mut self, len_after: usize) {
        self.common = self.common.min(len_after);
    }
}

/// Where the search is in the order of candidates of the current configuration: first
/// a safe move if there is one, then the determinate calls before the first pending
/// return (main list), then the indeterminate ops called before that return (pool).
#[derive(Clone, Copy)]
enum Cursor {
    /// A new configuration: look for a safe move first.
    Fresh,
    Main(u32),
    /// A pool slot, and the call position candidates must precede.
    Pool(u32, u32),
    /// No candidate left: backtrack.
    Exhausted,
}

/// One step on the stack: the op linearized, where it was found, the state before it,
/// whether it was a safe move (then its configuration has no other option worth trying),
/// and how many dead writes were swept in just before it (see [`super::dead`]).
struct Frame {
    op: u32,
    at: Cursor,
    state_before: u32,
    safe: bool,
    swept: u32,
}

/// A determinate candidate that only observes the state — a read, or a cas from a value
/// to itself — and succeeds in the current state. Linearizing it right away is safe:
/// such an op succeeds only where the state equals its value and changes nothing, so in
/// any linearization from here it can be taken out of its place (no state changes) and
/// put first (it succeeds there, and nothing pending must precede it). Hence if the
/// configuration after it fails, so does this one, and there is no need to branch.
/// (A write of the current value is *not* safe: where the linearization had it, it may
/// have changed the state.) This keeps read-heavy, highly concurrent histories linear.
fn safe_move<M: SequentialModel>(list: &EntryList, key: &KeyHistory, model: &mut M, state: u32) -> Option<u32> {
    let mut e = list.first();
    while list.is_call(e) {
        let action = key.ops[list.op(e) as usize].action;
        let observes_only = match action {
            Action::Read(_) => true,
            Action::Cas { expected, new } => expected == new,
            _ => false,
        };
        if observes_only && model.step(state, action) == Some(state) {
            return Some(e);
        }
        e = list.next(e);
    }
    None
}

/// The first pending return entry of the list.
fn first_return(list: &EntryList) -> u32 {
    let mut e = list.first();
    while list.is_call(e) {
        e = list.next(e);
    }
    e
}

pub fn search<M: SequentialModel>(
    key: &KeyHistory,
    model: &mut M,
    budget: &Budget,
    exact_max_ops: usize,
) -> (SearchOutcome, SearchStats) {
    let ops = &key.ops;
    let mut list = EntryList::new(ops);
    let mut pool = Pool::new(ops);
    let twins = earlier_twins(key);
    let dead = dead_writes(key);
    let zobrist = Zobrist::new(ops.len());
    let mut cache = ConfigCache::for_ops(ops.len(), exact_max_ops);
    let fixed_bytes = list.bytes() + pool.bytes() + ops.len() as u64 * 48;
    let mut linearized = FixedBitSet::with_capacity(ops.len());
    let mut hash = (0u64, 0u64);
    let mut state = model.initial();
    let mut stack: Vec<Frame> = Vec::new();
    // The linearized ops in order, and the list entries of swept dead writes.
    let mut path: Vec<u32> = Vec::new();
    let mut swept: Vec<u32> = Vec::new();
    let mut deepest = Deepest { ops: Vec::new(), common: 0 };
    let mut remaining = ops.iter().filter(|o| o.is_determinate()).count();
    let mut stats = SearchStats { cache_kind: cache.kind(), ..Default::default() };
    let mut cursor = Cursor::Fresh;
    let toggle = |hash: &mut (u64, u64), op: u32| {
        let k = zobrist.key(op as usize);
        *hash = (hash.0 ^ k.0, hash.1 ^ k.1);
    };

    let outcome = loop {
        if remaining == 0 {
            break SearchOutcome::Linearizable;
        }
        stats.steps += 1;
        if stats.steps & (TIME_CHECK_EVERY - 1) == 0 {
            if let Err(e) = budget.check_time() {
                break SearchOutcome::OutOfBudget(e);
            }
        }
        // The candidate under the cursor, if any (op, where, safe?); advance the cursor.
        let candidate = match cursor {
            Cursor::Fresh => {
                cursor = Cursor::Main(list.first());
                safe_move(&list, key, model, state).map(|e| {
                    // If the configuration after it was already explored, this one fails.
                    cursor = Cursor::Exhausted;
                    (list.op(e), Cursor::Main(e), true)
                })
            }
            Cursor::Main(e) if list.is_call(e) => {
                cursor = Cursor::Main(list.next(e));
                let op = list.op(e);
                // A dead write goes alone only when its return is the first pending one.
                let allowed = !dead.contains(op as usize) || first_return(&list) == list.return_of(e);
                allowed.then_some((op, Cursor::Main(e), false))
            }
            // The first pending return: the pool's turn, for ops called before it.
            Cursor::Main(e) => {
                cursor = Cursor::Pool(pool.first(), list.position(e));
                None
            }
            Cursor::Pool(slot, bound) if slot != NIL && pool.call(slot) < bound => {
                cursor = Cursor::Pool(pool.next(slot), bound);
                let op = pool.op(slot);
                let twin = twins[op as usize];
                (twin == NO_TWIN || linearized.contains(twin as usize)).then_some((op, Cursor::Pool(slot, bound), false))
            }
            Cursor::Pool(..) | Cursor::Exhausted => {
                // Every candidate of this configuration failed: backtrack.
                let Some(frame) = stack.pop() else {
                    break SearchOutcome::NotLinearizable(failure(key, model, &deepest.ops));
                };
                stats.backtracks += 1;
                toggle(&mut hash, frame.op);
                linearized.set(frame.op as usize, false);
                state = frame.state_before;
                match frame.at {
                    Cursor::Main(e) => {
                        list.unlift(e);
                        remaining += 1;
                    }
                    Cursor::Pool(slot, _) => pool.unlift(slot),
                    Cursor::Fresh | Cursor::Exhausted => {}
                }
                path.pop();
                unsweep(frame.swept, &mut swept, &mut list, &mut linearized, &mut hash, &mut remaining, &mut path, &toggle);
                deepest.on_pop(path.len());
                // Resume after the op, in the list as it was before the step.
                cursor = match frame.at {
                    Cursor::Main(e) => Cursor::Main(list.next(e)),
                    Cursor::Pool(slot, bound) => Cursor::Pool(pool.next(slot), bound),
                    Cursor::Fresh | Cursor::Exhausted => Cursor::Exhausted,
                };
                if frame.safe {
                    cursor = Cursor::Exhausted;
                }
                None
            }
        };
        let Some((op, at, safe)) = candidate else { continue };
        let action = ops[op as usize].action;
        let determinate = ops[op as usize].is_determinate();
        // An indeterminate op that would change nothing is never needed.
        let Some(next_state) = model.step(state, action).filter(|s| determinate || *s != state) else {
            continue;
        };
        let path_before = path.len();
        let swept_now = if matches!(action, Action::Write(_)) && !dead.contains(op as usize) {
            sweep(&dead, &mut swept, &mut list, &mut linearized, &mut hash, &mut remaining, &mut path, &toggle)
        } else {
            0
        };
        toggle(&mut hash, op);
        linearized.insert(op as usize);
        if !cache.insert(hash, &linearized, next_state) {
            toggle(&mut hash, op);
            linearized.set(op as usize, false);
            unsweep(swept_now, &mut swept, &mut list, &mut linearized, &mut hash, &mut remaining, &mut path, &toggle);
            continue;
        }
        stats.configurations += 1;
        if stats.configurations & (MEMORY_CHECK_EVERY - 1) == 0 {
            if let Err(e) = budget.check_memory(fixed_bytes + cache.bytes() + model.extra_bytes()) {
                break SearchOutcome::OutOfBudget(e);
            }
        }
        match at {
            Cursor::Main(e) => {
                list.lift(e);
                remaining -= 1;
            }
            Cursor::Pool(slot, _) => pool.lift(slot),
            Cursor::Fresh | Cursor::Exhausted => unreachable!("candidates are in the list or the pool"),
        }
        stack.push(Frame { op, at, state_before: state, safe, swept: swept_now });
        path.push(op);
        deepest.on_push(&path, path_before);
        state = next_state;
        cursor = Cursor::Fresh;
    };
    stats.cache_bytes = cache.bytes();
    stats.elapsed = budget.elapsed();
    (outcome, stats)
}

/// Linearizes every dead write that is a candidate now (one pass suffices: lifting a
/// dead write's return only makes entries further on reachable). Returns how many.
#[allow(clippy::too_many_arguments)]
fn sweep(
    dead: &FixedBitSet,
    swept: &mut Vec<u32>,
    list: &mut EntryList,
    linearized: &mut FixedBitSet,
    hash: &mut (u64, u64),
    remaining: &mut usize,
    path: &mut Vec<u32>,
    toggle: &impl Fn(&mut (u64, u64), u32),
) -> u32 {
    let mut count = 0;
    let mut before = HEAD;
    let mut e = list.first();
    while list.is_call(e) {
        let op = list.op(e);
        if dead.contains(op as usize) {
            list.lift(e);
            linearized.insert(op as usize);
            toggle(hash, op);
            *remaining -= 1;
            swept.push(e);
            path.push(op);
            count += 1;
        } else {
            before = e;
        }
        // After a lift, the entry after `before` is the next one still in the list.
        e = list.next(before);
    }
    count
}

/// Undoes the last `count` sweeps, in reverse order.
#[allow(clippy::too_many_arguments)]
fn unsweep(
    count: u32,
    swept: &mut Vec<u32>,
    list: &mut EntryList,
    linearized: &mut FixedBitSet,
    hash: &mut (u64, u64),
    remaining: &mut usize,
    path: &mut Vec<u32>,
    toggle: &impl Fn(&mut (u64, u64), u32),
) {
    for _ in 0..count {
        let Some(e) = swept.pop() else { return };
        let op = list.op(e);
        list.unlift(e);
        linearized.set(op as usize, false);
        toggle(hash, op);
        *remaining += 1;
        path.pop();
    }
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

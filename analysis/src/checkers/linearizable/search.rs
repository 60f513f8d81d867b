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
use super::dead::dead_writes;
use super::entries::{EntryList, HEAD};
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
        .map(|(i, o)| {
            if o.is_determinate() {
                NO_TWIN
            } else {
                last.insert(o.action, i as u32).unwrap_or(NO_TWIN)
            }
        })
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
fn safe_move<M: SequentialModel>(
    list: &EntryList,
    key: &KeyHistory,
    model: &mut M,
    state: u32,
) -> Option<u32> {
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
    let mut search = Search::new(key, model, budget, exact_max_ops);
    let outcome = search.run();
    let mut stats = search.stats;
    stats.cache_bytes = search.cache.bytes();
    stats.elapsed = budget.elapsed();
    (outcome, stats)
}

/// An op to try: where it was found and whether it is a safe move.
#[derive(Clone, Copy)]
struct Candidate {
    op: u32,
    at: Cursor,
    safe: bool,
}

/// What the cursor yields next.
enum Next {
    Try(Candidate),
    /// Nothing to try at this position; move on.
    Skip,
    /// Every candidate of this configuration failed.
    Backtrack,
}

/// The state of one key's search: the configuration (what is linearized, in which order,
/// the model state and the configuration's hash), the structures listing the candidates,
/// and the stack that undoes each step.
struct Search<'a, M: SequentialModel> {
    key: &'a KeyHistory,
    model: &'a mut M,
    budget: &'a Budget,
    list: EntryList,
    pool: Pool,
    twins: Vec<u32>,
    dead: FixedBitSet,
    zobrist: Zobrist,
    cache: ConfigCache,
    /// Memory of everything but the cache and the model, which do not grow.
    fixed_bytes: u64,
    linearized: FixedBitSet,
    hash: (u64, u64),
    state: u32,
    stack: Vec<Frame>,
    /// The linearized ops in order.
    path: Vec<u32>,
    /// The list entries of swept dead writes.
    swept: Vec<u32>,
    deepest: Deepest,
    /// Determinate ops not linearized yet.
    remaining: usize,
    stats: SearchStats,
    cursor: Cursor,
}

impl<'a, M: SequentialModel> Search<'a, M> {
    fn new(
        key: &'a KeyHistory,
        model: &'a mut M,
        budget: &'a Budget,
        exact_max_ops: usize,
    ) -> Self {
        let ops = &key.ops;
        let list = EntryList::new(ops);
        let pool = Pool::new(ops);
        let cache = ConfigCache::for_ops(ops.len(), exact_max_ops);
        let fixed_bytes = list.bytes() + pool.bytes() + ops.len() as u64 * 48;
        let state = model.initial();
        Search {
            key,
            model,
            budget,
            twins: earlier_twins(key),
            dead: dead_writes(key),
            zobrist: Zobrist::new(ops.len()),
            stats: SearchStats {
                cache_kind: cache.kind(),
                ..Default::default()
            },
            list,
            pool,
            cache,
            fixed_bytes,
            linearized: FixedBitSet::with_capacity(ops.len()),
            hash: (0, 0),
            state,
            stack: Vec::new(),
            path: Vec::new(),
            swept: Vec::new(),
            deepest: Deepest {
                ops: Vec::new(),
                common: 0,
            },
            remaining: ops.iter().filter(|o| o.is_determinate()).count(),
            cursor: Cursor::Fresh,
        }
    }

    fn run(&mut self) -> SearchOutcome {
        loop {
            if self.remaining == 0 {
                return SearchOutcome::Linearizable;
            }
            self.stats.steps += 1;
            if self.stats.steps & (TIME_CHECK_EVERY - 1) == 0 {
                if let Err(e) = self.budget.check_time() {
                    return SearchOutcome::OutOfBudget(e);
                }
            }
            match self.next() {
                Next::Try(c) => {
                    if let Err(e) = self.try_candidate(c) {
                        return SearchOutcome::OutOfBudget(e);
                    }
                }
                Next::Skip => {}
                Next::Backtrack => {
                    if !self.backtrack() {
                        return SearchOutcome::NotLinearizable(failure(
                            self.key,
                            self.model,
                            &self.deepest.ops,
                        ));
                    }
                }
            }
        }
    }

    /// The candidate under the cursor, if any; advances the cursor.
    fn next(&mut self) -> Next {
        let list = &self.list;
        match self.cursor {
            Cursor::Fresh => {
                self.cursor = Cursor::Main(list.first());
                match safe_move(list, self.key, self.model, self.state) {
                    Some(e) => {
                        // If the configuration after it was already explored, this one fails.
                        self.cursor = Cursor::Exhausted;
                        Next::Try(Candidate {
                            op: list.op(e),
                            at: Cursor::Main(e),
                            safe: true,
                        })
                    }
                    None => Next::Skip,
                }
            }
            Cursor::Main(e) if list.is_call(e) => {
                self.cursor = Cursor::Main(list.next(e));
                let op = list.op(e);
                // A dead write goes alone only when its return is the first pending one.
                let allowed =
                    !self.dead.contains(op as usize) || first_return(list) == list.return_of(e);
                self.try_if(
                    allowed,
                    Candidate {
                        op,
                        at: Cursor::Main(e),
                        safe: false,
                    },
                )
            }
            // The first pending return: the pool's turn, for ops called before it.
            Cursor::Main(e) => {
                self.cursor = Cursor::Pool(self.pool.first(), list.position(e));
                Next::Skip
            }
            Cursor::Pool(slot, bound) if slot != NIL && self.pool.call(slot) < bound => {
                self.cursor = Cursor::Pool(self.pool.next(slot), bound);
                let op = self.pool.op(slot);
                let twin = self.twins[op as usize];
                let first_of_twins = twin == NO_TWIN || self.linearized.contains(twin as usize);
                self.try_if(
                    first_of_twins,
                    Candidate {
                        op,
                        at: Cursor::Pool(slot, bound),
                        safe: false,
                    },
                )
            }
            Cursor::Pool(..) | Cursor::Exhausted => Next::Backtrack,
        }
    }

    fn try_if(&self, allowed: bool, candidate: Candidate) -> Next {
        if allowed {
            Next::Try(candidate)
        } else {
            Next::Skip
        }
    }

    /// Linearizes the candidate if the model allows it and the configuration it leads to
    /// is new; then the search goes on from that configuration.
    fn try_candidate(&mut self, Candidate { op, at, safe }: Candidate) -> Result<(), Exceeded> {
        let entry = &self.key.ops[op as usize];
        let (action, determinate) = (entry.action, entry.is_determinate());
        // An indeterminate op that would change nothing is never needed.
        let state = self.state;
        let Some(next_state) = self
            .model
            .step(state, action)
            .filter(|s| determinate || *s != state)
        else {
            return Ok(());
        };
        let path_before = self.path.len();
        let swept_now = if matches!(action, Action::Write(_)) && !self.dead.contains(op as usize) {
            self.sweep()
        } else {
            0
        };
        self.toggle(op);
        self.linearized.insert(op as usize);
        if !self.cache.insert(self.hash, &self.linearized, next_state) {
            self.toggle(op);
            self.linearized.set(op as usize, false);
            self.unsweep(swept_now);
            return Ok(());
        }
        self.stats.configurations += 1;
        if self.stats.configurations & (MEMORY_CHECK_EVERY - 1) == 0 {
            self.budget
                .check_memory(self.fixed_bytes + self.cache.bytes() + self.model.extra_bytes())?;
        }
        match at {
            Cursor::Main(e) => {
                self.list.lift(e);
                self.remaining -= 1;
            }
            Cursor::Pool(slot, _) => self.pool.lift(slot),
            Cursor::Fresh | Cursor::Exhausted => {
                unreachable!("candidates are in the list or the pool")
            }
        }
        self.stack.push(Frame {
            op,
            at,
            state_before: state,
            safe,
            swept: swept_now,
        });
        self.path.push(op);
        self.deepest.on_push(&self.path, path_before);
        self.state = next_state;
        self.cursor = Cursor::Fresh;
        Ok(())
    }

    /// Undoes the last linearization and resumes with the candidates after it; false when
    /// there is none to undo (the history is not linearizable).
    fn backtrack(&mut self) -> bool {
        let Some(frame) = self.stack.pop() else {
            return false;
        };
        self.stats.backtracks += 1;
        self.toggle(frame.op);
        self.linearized.set(frame.op as usize, false);
        self.state = frame.state_before;
        match frame.at {
            Cursor::Main(e) => {
                self.list.unlift(e);
                self.remaining += 1;
            }
            Cursor::Pool(slot, _) => self.pool.unlift(slot),
            Cursor::Fresh | Cursor::Exhausted => {}
        }
        self.path.pop();
        self.unsweep(frame.swept);
        self.deepest.on_pop(self.path.len());
        // Resume after the op, in the list as it was before the step.
        self.cursor = match frame.at {
            _ if frame.safe => Cursor::Exhausted,
            Cursor::Main(e) => Cursor::Main(self.list.next(e)),
            Cursor::Pool(slot, bound) => Cursor::Pool(self.pool.next(slot), bound),
            Cursor::Fresh | Cursor::Exhausted => Cursor::Exhausted,
        };
        true
    }

    /// Flips `op` in the configuration's hash.
    fn toggle(&mut self, op: u32) {
        let k = self.zobrist.key(op as usize);
        self.hash = (self.hash.0 ^ k.0, self.hash.1 ^ k.1);
    }

    /// Linearizes every dead write that is a candidate now (one pass suffices: lifting a
    /// dead write's return only makes entries further on reachable). Returns how many.
    fn sweep(&mut self) -> u32 {
        let mut count = 0;
        let mut before = HEAD;
        let mut e = self.list.first();
        while self.list.is_call(e) {
            let op = self.list.op(e);
            if self.dead.contains(op as usize) {
                self.list.lift(e);
                self.linearized.insert(op as usize);
                self.toggle(op);
                self.remaining -= 1;
                self.swept.push(e);
                self.path.push(op);
                count += 1;
            } else {
                before = e;
            }
            // After a lift, the entry after `before` is the next one still in the list.
            e = self.list.next(before);
        }
        count
    }

    /// Undoes the last `count` sweeps, in reverse order.
    fn unsweep(&mut self, count: u32) {
        for _ in 0..count {
            let Some(e) = self.swept.pop() else { return };
            let op = self.list.op(e);
            self.list.unlift(e);
            self.linearized.set(op as usize, false);
            self.toggle(op);
            self.remaining += 1;
            self.path.pop();
        }
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
        state = model
            .step(state, key.ops[op as usize].action)
            .unwrap_or(state);
    }
    let stuck_op = key
        .ops
        .iter()
        .enumerate()
        .filter(|(i, o)| o.is_determinate() && !in_best.contains(*i))
        .min_by_key(|(_, o)| o.ret)
        .map(|(i, _)| i as u32)
        .unwrap_or(0);
    Failure {
        best: best.to_vec(),
        state_after_best: state,
        stuck_op,
    }
}

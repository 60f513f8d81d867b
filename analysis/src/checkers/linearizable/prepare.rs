//! From a [`History`] to per-key arrays of compact operations.
//!
//! Pairs every client invoke with its completion (the next completion of the same
//! process), splits the pairs by key, and reduces each pair to an [`Action`] with interned
//! values, or drops it: a `fail` took no effect, a read that did not complete returned
//! nothing to check. Ops whose `f` the model does not handle are counted, not checked.
//! Times are history positions: an op's call is the position of its invoke, its return
//! the position of its completion, and an op that ended `info` (or never completed) has
//! no return at all — it may take effect at any point after its call, or never.

use super::model::Action;
use super::values::ValueTable;
use super::{Model, NullReads};
use crate::history::{History, Op, OpType};
use crate::ops;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde_json::Value;
use std::collections::BTreeMap;

/// `ret` of an operation whose outcome is unknown.
pub const NO_RETURN: u32 = u32::MAX;

/// One checkable operation of one key.
#[derive(Debug, Clone, Copy)]
pub struct PreparedOp {
    /// Position of the invoke in `History::ops`.
    pub call: u32,
    /// Position of the `ok` completion, or [`NO_RETURN`] if indeterminate.
    pub ret: u32,
    pub action: Action,
}

impl PreparedOp {
    pub fn is_determinate(&self) -> bool {
        self.ret != NO_RETURN
    }
}

/// The checkable operations of one key, in call order.
pub struct KeyHistory {
    pub key: Option<String>,
    pub ops: Vec<PreparedOp>,
    pub values: ValueTable,
    pub initial: u32,
}

/// What preparation counted while dropping or keeping operations.
#[derive(Debug, Default, Clone)]
pub struct PrepCounts {
    /// Client operations (invoke/completion pairs, or invokes that never completed).
    pub client_ops: u64,
    /// Entries of other processes (nemesis, watcher).
    pub non_client_events: u64,
    /// Client ops that ended `fail` (took no effect).
    pub failed_dropped: u64,
    /// Reads that ended `info`/never completed (nothing to check).
    pub indeterminate_reads_dropped: u64,
    /// Non-read ops of unknown outcome that were kept.
    pub indeterminate: u64,
    /// Ops that did not complete before the history ended.
    pub never_completed: u64,
    /// Ops kept for the search (before pruning).
    pub kept: u64,
    /// Reads that returned `null` on a key that can never be absent, dropped as reads of
    /// unknown value (Knossos' convention; see [`drop_unknown_null_reads`]).
    pub null_reads_dropped: u64,
    /// Unsupported `f` → count.
    pub unsupported: BTreeMap<String, u64>,
    /// Ops or entries that could not be understood; the verdict cannot be trusted.
    pub malformed: u64,
    /// The first few malformed entries, described.
    pub malformed_examples: Vec<String>,
}

impl PrepCounts {
    pub(crate) fn absorb(&mut self, o: PrepCounts) {
        self.client_ops += o.client_ops;
        self.non_client_events += o.non_client_events;
        self.failed_dropped += o.failed_dropped;
        self.indeterminate_reads_dropped += o.indeterminate_reads_dropped;
        self.indeterminate += o.indeterminate;
        self.never_completed += o.never_completed;
        self.kept += o.kept;
        self.null_reads_dropped += o.null_reads_dropped;
        for (f, n) in o.unsupported {
            *self.unsupported.entry(f).or_default() += n;
        }
        self.malformed += o.malformed;
        let room = 5usize.saturating_sub(self.malformed_examples.len());
        self.malformed_examples
            .extend(o.malformed_examples.into_iter().take(room));
    }

    fn note_malformed(&mut self, what: String) {
        self.malformed += 1;
        if self.malformed_examples.len() < 5 {
            self.malformed_examples.push(what);
        }
    }
}

/// The whole history, split by key.
pub struct Prepared {
    pub keys: Vec<KeyHistory>,
    pub counts: PrepCounts,
    /// Keys the model cannot follow (an op it does not check may have changed them), with
    /// the reason; they are not in `keys`.
    pub unfollowed: Vec<UnfollowedKey>,
}

/// A key set aside because the model cannot follow every change to it.
pub struct UnfollowedKey {
    pub key: Option<String>,
    pub reason: String,
}

/// An invoke and its completion, as positions in the history.
#[derive(Clone, Copy)]
struct Pair {
    invoke: u32,
    completion: u32,
}

/// Splits and reduces `history` for `model`. `initial` is the value every key starts at.
///
/// With `only`, just the client ops of those functions are seen (nothing else is counted):
/// a run's register ops among its other entries, without copying them out.
pub fn prepare(
    history: &History,
    model: Model,
    initial: &Value,
    null_reads: NullReads,
    only: Option<&[&str]>,
) -> Result<Prepared, String> {
    if history.ops.len() >= NO_RETURN as usize {
        return Err(format!(
            "history has {} entries; at most {} are supported",
            history.ops.len(),
            NO_RETURN - 1
        ));
    }
    let (groups, mut counts) = pair_by_key(history, only);
    let per_key: Vec<(KeyHistory, PrepCounts, Option<String>)> = groups
        .into_par_iter()
        .map(|(key, pairs)| reduce_key(history, model, initial, null_reads, key, &pairs))
        .collect::<Result<_, String>>()?;
    let mut keys = Vec::with_capacity(per_key.len());
    let mut unfollowed = Vec::new();
    for (k, c, why) in per_key {
        counts.absorb(c);
        match why {
            Some(reason) => {
                counts.kept -= k.ops.len() as u64;
                unfollowed.push(UnfollowedKey { key: k.key, reason });
            }
            None => keys.push(k),
        }
    }
    Ok(Prepared {
        keys,
        counts,
        unfollowed,
    })
}

/// Pass 1 (sequential): pair invokes with completions and group the pairs by key, in
/// call order.
/// The pairs of one key, in call order.
type KeyPairs = (Option<String>, Vec<Pair>);

fn pair_by_key(history: &History, only: Option<&[&str]>) -> (Vec<KeyPairs>, PrepCounts) {
    let mut counts = PrepCounts::default();
    let mut group_of: FxHashMap<Option<&str>, usize> = FxHashMap::default();
    let mut groups: Vec<KeyPairs> = Vec::new();
    let mut pending: FxHashMap<u64, (usize, usize)> = FxHashMap::default();
    for (pos, op) in history.ops.iter().enumerate() {
        let seen = only.is_none_or(|fs| fs.contains(&op.f.as_str()));
        let Some(process) = op.process.client().filter(|_| seen) else {
            counts.non_client_events += u64::from(only.is_none());
            continue;
        };
        let pos = pos as u32;
        if op.kind == OpType::Invoke {
            let g = *group_of.entry(op.key.as_deref()).or_insert_with(|| {
                groups.push((op.key.as_deref().map(str::to_string), Vec::new()));
                groups.len() - 1
            });
            groups[g].1.push(Pair {
                invoke: pos,
                completion: NO_RETURN,
            });
            // A process that invokes again without completing leaves the earlier op
            // indeterminate; it simply keeps no completion.
            pending.insert(process, (g, groups[g].1.len() - 1));
        } else {
            match pending.remove(&process) {
                Some((g, i)) => groups[g].1[i].completion = pos,
                None => counts.note_malformed(format!(
                    "entry index {} ({:?} {} by process {process}) completes nothing: the process has no pending invoke",
                    op.index, op.kind, op.f
                )),
            }
        }
    }
    (groups, counts)
}

/// The operation kinds the models know, by `f`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Write,
    Cas,
    Append,
}

fn kind_of(f: &str) -> Option<Kind> {
    match f {
        ops::READ | ops::GET => Some(Kind::Read),
        ops::WRITE | ops::PUT => Some(Kind::Write),
        ops::CAS | ops::COMPARE_AND_SET => Some(Kind::Cas),
        ops::APPEND => Some(Kind::Append),
        _ => None,
    }
}

fn model_handles(model: Model, kind: Kind) -> bool {
    match model {
        Model::Register => matches!(kind, Kind::Read | Kind::Write),
        Model::CasRegister => matches!(kind, Kind::Read | Kind::Write | Kind::Cas),
        Model::Kv => matches!(kind, Kind::Read | Kind::Write | Kind::Append),
    }
}

/// Functions of the set-full workload: they address a set, not a register — except a
/// keyed `add`, which creates its key.
fn is_set_function(f: &str) -> bool {
    matches!(f, ops::ADD | ops::READ_SET | ops::SCAN)
}

/// Ops of one key the model does not check but that may have changed its value.
#[derive(Default)]
struct Unchecked {
    /// Non-set functions the model does not handle (`cas` under `register`, ...), by `f`.
    register_changes: BTreeMap<String, u64>,
    /// Keyed `add`s that may have taken effect.
    keyed_adds: u64,
}

impl Unchecked {
    fn note(&mut self, invoke: &Op, completion: Option<&Op>) {
        if completion.is_some_and(|c| c.kind == OpType::Fail)
            || matches!(invoke.f.as_str(), ops::READ_SET | ops::SCAN)
        {
            return; // took no effect, or only read
        }
        if !is_set_function(&invoke.f) {
            *self.register_changes.entry(invoke.f.to_string()).or_default() += 1;
        } else if invoke.f == ops::ADD && invoke.key.is_some() {
            self.keyed_adds += 1;
        }
    }

    /// Why the key cannot be judged, if it cannot. A key that only set ops address is a set
    /// element, not a register, and is simply not judged by this checker.
    fn reason(&self, model: Model, key: &Option<String>, register_ops: usize) -> Option<String> {
        let mut changes: Vec<String> = self
            .register_changes
            .iter()
            .map(|(f, n)| format!("{f}×{n}"))
            .collect();
        if self.keyed_adds > 0 && register_ops > 0 {
            changes.push(format!("add×{}", self.keyed_adds));
        }
        (!changes.is_empty()).then(|| {
            format!(
                "key {}: model {} cannot follow {} (it checks {}), and judging the key without them could \
                 manufacture a violation",
                super::report::key_name(key),
                model.name(),
                changes.join(", "),
                model.functions()
            )
        })
    }
}

/// Pass 2 (per key, in parallel): reduce each pair to a [`PreparedOp`] or drop it; the
/// reason is set when the key must not be judged (see [`Unchecked`]).
fn reduce_key(
    history: &History,
    model: Model,
    initial: &Value,
    null_reads: NullReads,
    key: Option<String>,
    pairs: &[Pair],
) -> Result<(KeyHistory, PrepCounts, Option<String>), String> {
    let mut counts = PrepCounts::default();
    let mut unchecked = Unchecked::default();
    let mut register_ops = 0usize;
    let mut values = ValueTable::new();
    let initial = values.intern(initial).ok_or("too many distinct values")?;
    let mut ops = Vec::with_capacity(pairs.len());
    for pair in pairs {
        counts.client_ops += 1;
        let invoke = &history.ops[pair.invoke as usize];
        let completion =
            (pair.completion != NO_RETURN).then(|| &history.ops[pair.completion as usize]);
        let reduced = reduce_pair(model, invoke, completion, &mut values);
        if !matches!(reduced, Reduced::Unsupported) {
            register_ops += 1;
        }
        match reduced {
            Reduced::Keep(action, determinate) => {
                counts.kept += 1;
                if !determinate {
                    counts.indeterminate += 1;
                }
                if completion.is_none() {
                    counts.never_completed += 1;
                }
                let ret = if determinate {
                    pair.completion
                } else {
                    NO_RETURN
                };
                ops.push(PreparedOp {
                    call: pair.invoke,
                    ret,
                    action,
                });
            }
            Reduced::Failed => counts.failed_dropped += 1,
            Reduced::IndeterminateRead => {
                counts.indeterminate_reads_dropped += 1;
                if completion.is_none() {
                    counts.never_completed += 1;
                }
            }
            Reduced::Unsupported => {
                *counts.unsupported.entry(invoke.f.to_string()).or_default() += 1;
                unchecked.note(invoke, completion);
            }
            Reduced::Malformed(why) => {
                counts.note_malformed(format!("op at index {}: {why}", invoke.index))
            }
        }
    }
    if null_reads == NullReads::Auto {
        let dropped = drop_unknown_null_reads(&mut ops, initial);
        counts.null_reads_dropped += dropped;
        counts.kept -= dropped;
    }
    let unfollowed = unchecked.reason(model, &key, register_ops);
    Ok((
        KeyHistory {
            key,
            ops,
            values,
            initial,
        },
        counts,
        unfollowed,
    ))
}

/// If a key starts with a value and nothing ever writes `null`, the key can never be
/// absent, so a read that "returned null" cannot mean absent: Knossos reads it as a read
/// whose value the client did not learn, and so does this checker — such reads are
/// dropped (and counted). With a `null` initial value (faultline's stores, Jepsen's etcd
/// runs) `null` means absent and is checked like any value.
fn drop_unknown_null_reads(ops: &mut Vec<PreparedOp>, initial: u32) -> u64 {
    let writes_null = ops.iter().any(|o| match o.action {
        Action::Write(v) | Action::Cas { new: v, .. } | Action::CasMaybe { new: v, .. } => {
            v == ValueTable::NULL
        }
        Action::Read(_) | Action::Append(_) => false,
    });
    if initial == ValueTable::NULL || writes_null {
        return 0;
    }
    let before = ops.len();
    ops.retain(|o| o.action != Action::Read(ValueTable::NULL));
    (before - ops.len()) as u64
}

enum Reduced {
    /// The action, and whether the op is determinate (`ok`).
    Keep(Action, bool),
    Failed,
    IndeterminateRead,
    Unsupported,
    Malformed(String),
}

fn reduce_pair(
    model: Model,
    invoke: &Op,
    completion: Option<&Op>,
    values: &mut ValueTable,
) -> Reduced {
    let Some(kind) = kind_of(&invoke.f) else {
        return Reduced::Unsupported;
    };
    if !model_handles(model, kind) {
        return Reduced::Unsupported;
    }
    if let Some(c) = completion {
        if c.f != invoke.f {
            return Reduced::Malformed(format!(
                "invoked as {:?} but completed (index {}) as {:?}",
                invoke.f, c.index, c.f
            ));
        }
    }
    let outcome = completion.map(|c| c.kind).unwrap_or(OpType::Info);
    if outcome == OpType::Fail {
        return Reduced::Failed;
    }
    let determinate = outcome == OpType::Ok;
    // The value an op carries: the completion's for reads, else the invoke's (falling
    // back to the completion's when the invoke left it out).
    let argument = || match (&invoke.value, completion) {
        (Value::Null, Some(c)) => &c.value,
        (v, _) => v,
    };
    let mut intern = |v: &Value| {
        values
            .intern(v)
            .ok_or_else(|| "too many distinct values".to_string())
    };
    let action = match kind {
        Kind::Read if !determinate => return Reduced::IndeterminateRead,
        Kind::Read => completion.map(|c| intern(&c.value).map(Action::Read)),
        Kind::Write => Some(intern(argument()).map(Action::Write)),
        Kind::Cas => Some(match argument() {
            Value::Array(pair) if pair.len() == 2 => intern(&pair[0]).and_then(|expected| {
                let new = intern(&pair[1])?;
                Ok(if determinate {
                    Action::Cas { expected, new }
                } else {
                    Action::CasMaybe { expected, new }
                })
            }),
            other => Err(format!("cas value must be [expected, new], got {other}")),
        }),
        Kind::Append => Some(match argument() {
            v @ Value::String(_) => intern(v).map(Action::Append),
            other => Err(format!("append value must be a string, got {other}")),
        }),
    };
    match action {
        Some(Ok(a)) => Reduced::Keep(a, determinate),
        Some(Err(why)) => Reduced::Malformed(why),
        None => Reduced::Malformed("read without completion".into()),
    }
}

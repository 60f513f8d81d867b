//! Collects a history's transactions into flat vectors the analysis can index cheaply.
//!
//! Every client op with `f` = `"txn"` becomes one [`Txn`], in invoke order: committed
//! (`ok`), aborted (`fail`) or indeterminate (`info`, or an invoke never completed). Its
//! micro-ops live in [`Txns::mops`], keys interned to `u32` ids, scalars and read lists
//! borrowed from the history (no copies). A txn's micro-ops come from its completion when
//! that carries a list (an `ok` must: it holds what reads returned), else from its invoke.
//! Invariant: `Txns::txns[t].mops` ranges index `Txns::mops`; every `Mop::key` indexes
//! `Txns::keys`; a read's `Arg` is `Null`, a scalar (rw-register) or a list of scalars
//! (list-append) whose elements were all checked to be integers or strings.

use super::TxnModel;
use crate::history::txn::{parse_txn_as, MopKind, TXN};
use crate::history::{History, Op, OpType, Process};
use rustc_hash::FxHashMap;
use serde_json::Value;
use std::fmt;
use std::ops::Range;

/// A key or a written/read scalar, borrowed from the history. `I(1)` and `S("1")` differ,
/// as their JSON forms do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Sc<'a> {
    I(i64),
    S(&'a str),
}

impl<'a> Sc<'a> {
    pub fn of(v: &'a Value) -> Option<Sc<'a>> {
        match v {
            Value::Number(n) => n.as_i64().map(Sc::I),
            Value::String(s) => Some(Sc::S(s)),
            _ => None,
        }
    }

    pub fn to_json(self) -> Value {
        match self {
            Sc::I(i) => Value::from(i),
            Sc::S(s) => Value::from(s),
        }
    }
}

impl fmt::Display for Sc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sc::I(i) => write!(f, "{i}"),
            Sc::S(s) => write!(f, "{s:?}"),
        }
    }
}

/// How a transaction ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    Fail,
    /// `info`, or never completed: it may or may not have taken effect.
    Info,
}

/// The argument of a micro-op.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg<'a> {
    /// A read whose result is unknown (invoke / info) or, rw-register, read nothing.
    Null,
    /// The written value, or what an rw-register read returned.
    Scalar(Sc<'a>),
    /// What a list-append read returned; every element is an integer or a string.
    List(&'a [Value]),
}

#[derive(Clone, Copy, Debug)]
pub struct Mop<'a> {
    pub kind: MopKind,
    pub key: u32,
    pub arg: Arg<'a>,
}

#[derive(Clone, Debug)]
pub struct Txn {
    pub status: Status,
    pub process: u64,
    /// History `index` of the invoke.
    pub invoke: u64,
    /// History `index` of the completion, if any.
    pub complete: Option<u64>,
    pub mops: Range<u32>,
}

impl Txn {
    /// The op index that names this txn in witnesses: its completion, else its invoke.
    pub fn index(&self) -> u64 {
        self.complete.unwrap_or(self.invoke)
    }
}

pub struct Txns<'a> {
    pub txns: Vec<Txn>,
    pub mops: Vec<Mop<'a>>,
    pub keys: Vec<Sc<'a>>,
    /// The JSON value each txn's micro-ops were read from (for witnesses).
    pub values: Vec<&'a Value>,
}

impl<'a> Txns<'a> {
    pub fn mops_of(&self, t: u32) -> &[Mop<'a>] {
        let r = &self.txns[t as usize].mops;
        &self.mops[r.start as usize..r.end as usize]
    }

    pub fn count(&self, status: Status) -> u64 {
        self.txns.iter().filter(|t| t.status == status).count() as u64
    }
}

/// Collects the transactions of `history`; an error names the op (by index) whose value or
/// pairing is malformed.
pub fn collect<'a>(history: &'a History, model: TxnModel) -> Result<Txns<'a>, String> {
    let mut c = Collector {
        model,
        out: Txns {
            txns: vec![],
            mops: vec![],
            keys: vec![],
            values: vec![],
        },
        keys: FxHashMap::default(),
        pending: FxHashMap::default(),
    };
    for op in &history.ops {
        if op.f != TXN {
            continue;
        }
        let Process::Client(p) = op.process else {
            continue;
        };
        c.op(op, p)?;
    }
    c.finish()
}

struct Collector<'a> {
    model: TxnModel,
    out: Txns<'a>,
    keys: FxHashMap<Sc<'a>, u32>,
    /// process -> (txn id, invoke op)
    pending: FxHashMap<u64, (u32, &'a Op)>,
}

impl<'a> Collector<'a> {
    fn op(&mut self, op: &'a Op, p: u64) -> Result<(), String> {
        if op.kind == OpType::Invoke {
            if self.pending.contains_key(&p) {
                return Err(format!(
                    "op {}: process {p} invoked a transaction while one was pending",
                    op.index
                ));
            }
            let id = self.out.txns.len() as u32;
            self.out.txns.push(Txn {
                status: Status::Info,
                process: p,
                invoke: op.index,
                complete: None,
                mops: 0..0,
            });
            self.out.values.push(&op.value);
            self.pending.insert(p, (id, op));
            return Ok(());
        }
        let Some((id, invoke)) = self.pending.remove(&p) else {
            return Err(format!(
                "op {}: a transaction completion without a pending invoke of process {p}",
                op.index
            ));
        };
        let status = match op.kind {
            OpType::Ok => Status::Ok,
            OpType::Fail => Status::Fail,
            _ => Status::Info,
        };
        // An ok carries what reads returned; other completions usually repeat the invoke.
        let source = if status == Status::Ok || op.value.is_array() {
            op
        } else {
            invoke
        };
        let mops = self.mops(source, &source.value)?;
        let t = &mut self.out.txns[id as usize];
        t.status = status;
        t.complete = Some(op.index);
        t.mops = mops;
        self.out.values[id as usize] = &source.value;
        Ok(())
    }

    /// Invokes never completed take their micro-ops from the invoke.
    fn finish(mut self) -> Result<Txns<'a>, String> {
        let mut pending: Vec<(u32, &'a Op)> = self.pending.values().copied().collect();
        pending.sort_unstable_by_key(|(id, _)| *id);
        for (id, invoke) in pending {
            let mops = self.mops(invoke, &invoke.value)?;
            self.out.txns[id as usize].mops = mops;
        }
        Ok(self.out)
    }

    fn key(&mut self, k: Sc<'a>) -> u32 {
        let next = self.out.keys.len() as u32;
        *self.keys.entry(k).or_insert_with(|| {
            self.out.keys.push(k);
            next
        })
    }

    /// Appends the micro-ops of `value` to the flat vector; on malformed input, the error
    /// of the micro-op parser, naming the op.
    fn mops(&mut self, op: &Op, value: &'a Value) -> Result<Range<u32>, String> {
        let start = self.out.mops.len() as u32;
        match self.fast_mops(value) {
            Some(()) => Ok(start..self.out.mops.len() as u32),
            None => {
                self.out.mops.truncate(start as usize);
                let why = parse_txn_as(value, self.model)
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_else(|| "malformed transaction".to_string());
                Err(format!("op {}: {why}", op.index))
            }
        }
    }

    /// `None` when anything is malformed for the model (the slow parser then says what).
    fn fast_mops(&mut self, value: &'a Value) -> Option<()> {
        for m in value.as_array()? {
            let parts = m.as_array().filter(|p| p.len() == 3)?;
            let kind = match parts[0].as_str()? {
                "append" if self.model == TxnModel::ListAppend => MopKind::Append,
                "w" if self.model == TxnModel::RwRegister => MopKind::Write,
                "r" => MopKind::Read,
                _ => return None,
            };
            let key = self.key(Sc::of(&parts[1])?);
            let arg = match (kind, &parts[2]) {
                (MopKind::Read, Value::Null) => Arg::Null,
                (MopKind::Read, Value::Array(items)) if self.model == TxnModel::ListAppend => {
                    if items.iter().any(|e| Sc::of(e).is_none()) {
                        return None;
                    }
                    Arg::List(items)
                }
                (MopKind::Read, v) if self.model == TxnModel::RwRegister => Arg::Scalar(Sc::of(v)?),
                (MopKind::Read, _) => return None,
                (_, v) => Arg::Scalar(Sc::of(v)?),
            };
            self.out.mops.push(Mop { kind, key, arg });
        }
        Some(())
    }
}

/// The elements of a list read (validated at collection).
pub fn elems(list: &[Value]) -> impl Iterator<Item = Sc<'_>> + '_ {
    list.iter()
        .map(|e| Sc::of(e).expect("list elements are validated when collected"))
}

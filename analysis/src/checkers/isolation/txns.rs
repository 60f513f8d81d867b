//! Collects a history's transactions into flat vectors the analysis can index cheaply.
//!
//! Every client op with `f` = `"txn"` becomes one [`Txn`], in invoke order: committed
//! (`ok`), aborted (`fail`) or indeterminate (`info`, or an invoke never completed). Its
//! micro-ops live in [`Txns::mops`], keys interned to `u32` ids (numbered in the order the
//! collection meets them), scalars and read lists borrowed from the history's compact
//! [`TxnTable`] (no copies; the JSON form is never needed). A txn's micro-ops come from its
//! completion when that carries a list (an `ok` must: it holds what reads returned), else
//! from its invoke.
//! Invariant: `Txns::txns[t].mops` ranges index `Txns::mops`; every `Mop::key` indexes
//! `Txns::keys`; a read's `Arg` is `Null`, a scalar (rw-register) or a list of atoms
//! (list-append) of the table, which [`Txns::sc`] turns into scalars.

use super::TxnModel;
use crate::history::txn::{parse_txn_as, MopKind, TXN};
use crate::history::txn_table::{Atom, TableArg, TableMop, TxnTable};
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
    /// What a list-append read returned: atoms of the table ([`Txns::sc`]).
    List(&'a [Atom]),
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
    table: &'a TxnTable,
    history: &'a History,
    /// The op position each txn's micro-ops were read from (for witnesses).
    sources: Vec<u32>,
}

impl<'a> Txns<'a> {
    /// An atom of a read list as a scalar.
    pub fn sc(&self, a: Atom) -> Sc<'a> {
        atom_sc(self.table, a)
    }

    /// The elements of a list read.
    pub fn elems<'s>(&'s self, list: &'a [Atom]) -> impl Iterator<Item = Sc<'a>> + 's {
        list.iter().map(|a| self.sc(*a))
    }

    /// A list read as JSON.
    pub fn list_json(&self, list: &[Atom]) -> Value {
        self.table.list_json(list)
    }

    /// The JSON value txn `t`'s micro-ops were read from, as the history holds it.
    pub fn value_json(&self, t: u32) -> Value {
        let position = self.sources[t as usize] as usize;
        let index = self.history.ops[position].index;
        self.table
            .value_json(position, index)
            .unwrap_or_else(|| self.history.txn_value(position).into_owned())
    }

    pub fn mops_of(&self, t: u32) -> &[Mop<'a>] {
        let r = &self.txns[t as usize].mops;
        &self.mops[r.start as usize..r.end as usize]
    }

    pub fn count(&self, status: Status) -> u64 {
        self.txns.iter().filter(|t| t.status == status).count() as u64
    }
}

/// Collects the transactions of `history`, whose micro-ops `table` holds
/// ([`History::txn_table`]); an error names the op (by index) whose value or pairing is
/// malformed.
pub fn collect<'a>(
    history: &'a History,
    table: &'a TxnTable,
    model: TxnModel,
) -> Result<Txns<'a>, String> {
    let mut c = Collector {
        model,
        out: Txns {
            txns: vec![],
            mops: vec![],
            keys: vec![],
            table,
            history,
            sources: vec![],
        },
        key_ids: vec![NO_KEY; 0],
        pending: FxHashMap::default(),
    };
    for (position, op) in history.ops.iter().enumerate() {
        if op.f != TXN {
            continue;
        }
        let Process::Client(p) = op.process else {
            continue;
        };
        c.op(position, op, p)?;
    }
    c.finish()
}

fn atom_sc(table: &TxnTable, a: Atom) -> Sc<'_> {
    match a {
        Atom::Int(i) => Sc::I(i),
        Atom::Str(id) => Sc::S(table.str_of(id)),
    }
}

const NO_KEY: u32 = u32::MAX;

struct Collector<'a> {
    model: TxnModel,
    out: Txns<'a>,
    /// Table key id -> this collection's key id ([`NO_KEY`] until met).
    key_ids: Vec<u32>,
    /// process -> (txn id, position of the invoke)
    pending: FxHashMap<u64, (u32, usize)>,
}

impl<'a> Collector<'a> {
    fn op(&mut self, position: usize, op: &'a Op, p: u64) -> Result<(), String> {
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
            self.out.sources.push(position as u32);
            self.pending.insert(p, (id, position));
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
        let carries_list = self.out.table.mops(position, op.index).is_some() || op.value.is_array();
        let source = if status == Status::Ok || carries_list {
            position
        } else {
            invoke
        };
        let read_nil_is_empty = status == Status::Ok;
        let mops = self.mops(source, read_nil_is_empty)?;
        let t = &mut self.out.txns[id as usize];
        t.status = status;
        t.complete = Some(op.index);
        t.mops = mops;
        self.out.sources[id as usize] = source as u32;
        Ok(())
    }

    /// Invokes never completed take their micro-ops from the invoke.
    fn finish(mut self) -> Result<Txns<'a>, String> {
        let mut pending: Vec<(u32, usize)> = self.pending.values().copied().collect();
        pending.sort_unstable_by_key(|(id, _)| *id);
        for (id, invoke) in pending {
            let mops = self.mops(invoke, false)?;
            self.out.txns[id as usize].mops = mops;
        }
        Ok(self.out)
    }

    fn key(&mut self, table_key: u32) -> u32 {
        let k = table_key as usize;
        if k >= self.key_ids.len() {
            self.key_ids.resize(k + 1, NO_KEY);
        }
        if self.key_ids[k] == NO_KEY {
            self.key_ids[k] = self.out.keys.len() as u32;
            self.out
                .keys
                .push(atom_sc(self.out.table, self.out.table.key_atom(table_key)));
        }
        self.key_ids[k]
    }

    /// Appends the micro-ops of the op at `position` to the flat vector; on malformed
    /// input, the error of the micro-op parser, naming the op. `read_nil_is_empty`: the
    /// value is an `ok` completion's, where a list-append read of `null` returned the empty
    /// list (as Elle reads it: clients report a missing list as nil).
    fn mops(&mut self, position: usize, read_nil_is_empty: bool) -> Result<Range<u32>, String> {
        let start = self.out.mops.len() as u32;
        let op = &self.out.history.ops[position];
        let table: &'a TxnTable = self.out.table;
        let converted = table
            .mops(position, op.index)
            .and_then(|m| self.convert(m, read_nil_is_empty));
        match converted {
            Some(()) => Ok(start..self.out.mops.len() as u32),
            None => {
                self.out.mops.truncate(start as usize);
                let value = self.out.history.txn_value(position);
                let why = parse_txn_as(&value, self.model)
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_else(|| "malformed transaction".to_string());
                Err(format!("op {}: {why}", op.index))
            }
        }
    }

    /// `None` when anything does not fit the model (the parser then says what).
    fn convert(&mut self, mops: &'a [TableMop], read_nil_is_empty: bool) -> Option<()> {
        let list_append = self.model == TxnModel::ListAppend;
        let table: &'a TxnTable = self.out.table;
        for m in mops {
            let kind = match m.kind {
                MopKind::Append if list_append => MopKind::Append,
                MopKind::Write if !list_append => MopKind::Write,
                MopKind::Read => MopKind::Read,
                _ => return None,
            };
            let arg = match (kind, m.arg) {
                (MopKind::Read, TableArg::Null) if read_nil_is_empty && list_append => {
                    Arg::List(&[])
                }
                (MopKind::Read, TableArg::Null) => Arg::Null,
                (MopKind::Read, TableArg::List { chain, len }) if list_append => {
                    Arg::List(table.list(chain, len))
                }
                (MopKind::Read, TableArg::Scalar(a)) if !list_append => {
                    Arg::Scalar(atom_sc(table, a))
                }
                (MopKind::Read, _) => return None,
                (_, TableArg::Scalar(a)) => Arg::Scalar(atom_sc(table, a)),
                (_, _) => return None,
            };
            let key = self.key(m.key);
            self.out.mops.push(Mop { kind, key, arg });
        }
        Some(())
    }
}

//! A history's transactions in compact form: every client `txn` op's micro-ops parsed once,
//! keys interned, integers kept as `i64`, strings interned once, and list-append reads
//! stored as prefixes of shared per-key chains instead of JSON arrays.
//!
//! A million-transaction list-append history holds about a hundred million read elements;
//! as `serde_json::Value`s (32 bytes each, plus every array's own allocation) they do not fit
//! in memory, while the elements of one key's reads are nearly always prefixes of each other.
//! A read list here is `(chain, len)`: the first `len` atoms of a chain. A read that is a
//! prefix of its key's current chain shares it, one that extends it extends it in place, and
//! only a read that disagrees with it starts a new chain, so nothing is ever approximated.
//!
//! Invariants: the table is lossless — [`TxnTable::value_json`] gives back a `Value` equal
//! to the op's original `value` (a parsed transaction holds only arrays, `null`, integers
//! that fit an `i64` and strings); an op is in the table only if its value parsed as
//! micro-ops ([`crate::history::txn::parse_txn`]); entries are in history order; each entry
//! remembers its op's `index`, so a lookup for an op that is not the one compacted finds
//! nothing; once built, the table is never mutated, so list slices stay put.

use super::txn::{parse_txn, MicroOp, MopKind, MopValue, TxnScalar};
use super::{Op, Process};
use rustc_hash::FxHashMap;
use serde_json::Value;
use std::ops::Range;

/// A key, a written or read scalar, or a list element: an integer, or a string by its id
/// in the table. Two atoms of one table are equal iff the JSON scalars are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Atom {
    Int(i64),
    Str(u32),
}

/// The value part of a stored micro-op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableArg {
    /// JSON `null`.
    Null,
    /// A written value, or what an rw-register read returned.
    Scalar(Atom),
    /// A list read: the first `len` atoms of chain `chain`.
    List { chain: u32, len: u32 },
}

/// One stored micro-op; `key` indexes [`TxnTable::keys`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableMop {
    pub kind: MopKind,
    pub key: u32,
    pub arg: TableArg,
}

/// One compacted op: its history `index` and where its micro-ops start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    index: u64,
    start: u32,
}

const NONE: u32 = u32::MAX;

/// The compact micro-ops of a history's client `txn` ops, by op position.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TxnTable {
    /// Op position -> entry id, [`NONE`] for ops not in the table.
    by_position: Vec<u32>,
    entries: Vec<Entry>,
    mops: Vec<TableMop>,
    keys: Vec<Atom>,
    key_ids: FxHashMap<Atom, u32>,
    strings: Vec<Box<str>>,
    string_ids: FxHashMap<Box<str>, u32>,
    chains: Vec<Vec<Atom>>,
    /// Per key id: the chain its latest list read used ([`NONE`]: none yet).
    trunk: Vec<u32>,
}

impl TxnTable {
    /// The table of every client `txn` op of `ops` whose value parses as micro-ops (ops
    /// that do not parse are left out: their own `value` still says what is wrong).
    pub fn from_ops(ops: &[Op]) -> TxnTable {
        let mut table = TxnTable::default();
        for (position, op) in ops.iter().enumerate() {
            if !matches!(op.process, Process::Client(_)) || op.f != super::txn::TXN {
                continue;
            }
            if let Ok(mops) = parse_txn(&op.value) {
                table.push(position, op.index, &mops);
            }
        }
        table
    }

    /// Adds the micro-ops of the op at `position` (history `index`). Positions must
    /// increase from one call to the next.
    pub fn push(&mut self, position: usize, index: u64, mops: &[MicroOp]) {
        debug_assert!(self.by_position.len() <= position, "positions increase");
        self.by_position.resize(position, NONE);
        self.by_position.push(self.entries.len() as u32);
        self.entries.push(Entry {
            index,
            start: self.mops.len() as u32,
        });
        for m in mops {
            let key = self.key(&m.key);
            let arg = match &m.value {
                MopValue::Null => TableArg::Null,
                MopValue::Scalar(s) => TableArg::Scalar(self.atom(s)),
                MopValue::List(items) => self.store_list(key, items),
            };
            self.mops.push(TableMop {
                kind: m.kind,
                key,
                arg,
            });
        }
    }

    /// The micro-ops of the op at `position`, if that op, with history index `index`, is in
    /// the table.
    pub fn mops(&self, position: usize, index: u64) -> Option<&[TableMop]> {
        let id = *self.by_position.get(position)?;
        let entry = self.entries.get(id as usize).filter(|e| e.index == index)?;
        let end = self
            .entries
            .get(id as usize + 1)
            .map_or(self.mops.len() as u32, |e| e.start);
        Some(&self.mops[entry.start as usize..end as usize])
    }

    /// The number of ops in the table.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The key of id `k`.
    pub fn key_atom(&self, k: u32) -> Atom {
        self.keys[k as usize]
    }

    /// The string of id `id`.
    pub fn str_of(&self, id: u32) -> &str {
        &self.strings[id as usize]
    }

    /// The atoms a list read returned.
    pub fn list(&self, chain: u32, len: u32) -> &[Atom] {
        &self.chains[chain as usize][..len as usize]
    }

    /// An atom as JSON.
    pub fn atom_json(&self, a: Atom) -> Value {
        match a {
            Atom::Int(i) => Value::from(i),
            Atom::Str(id) => Value::from(self.str_of(id)),
        }
    }

    /// A list of atoms as a JSON array.
    pub fn list_json(&self, atoms: &[Atom]) -> Value {
        Value::Array(atoms.iter().map(|a| self.atom_json(*a)).collect())
    }

    /// The original JSON `value` of the op at `position` (with history index `index`), if
    /// it is in the table.
    pub fn value_json(&self, position: usize, index: u64) -> Option<Value> {
        let mops = self.mops(position, index)?;
        Some(Value::Array(
            mops.iter().map(|m| self.mop_json(m)).collect(),
        ))
    }

    fn mop_json(&self, m: &TableMop) -> Value {
        let arg = match m.arg {
            TableArg::Null => Value::Null,
            TableArg::Scalar(a) => self.atom_json(a),
            TableArg::List { chain, len } => self.list_json(self.list(chain, len)),
        };
        Value::Array(vec![
            Value::from(m.kind.as_str()),
            self.atom_json(self.key_atom(m.key)),
            arg,
        ])
    }

    fn string(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.string_ids.get(s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(s.into());
        self.string_ids.insert(s.into(), id);
        id
    }

    fn atom(&mut self, s: &TxnScalar) -> Atom {
        match s {
            TxnScalar::Int(i) => Atom::Int(*i),
            TxnScalar::Str(s) => Atom::Str(self.string(s)),
        }
    }

    fn key(&mut self, k: &TxnScalar) -> u32 {
        let atom = self.atom(k);
        if let Some(&id) = self.key_ids.get(&atom) {
            return id;
        }
        let id = self.keys.len() as u32;
        self.keys.push(atom);
        self.key_ids.insert(atom, id);
        self.trunk.push(NONE);
        id
    }

    /// Whether the atom `a` of this table is the scalar `s` (no interning needed).
    fn same(&self, a: Atom, s: &TxnScalar) -> bool {
        match (a, s) {
            (Atom::Int(x), TxnScalar::Int(y)) => x == *y,
            (Atom::Str(id), TxnScalar::Str(y)) => self.str_of(id) == y,
            _ => false,
        }
    }

    /// Stores a list read of key `key`: on its key's current chain when the two agree
    /// (extending the chain when the read is longer), else on a new chain.
    fn store_list(&mut self, key: u32, items: &[TxnScalar]) -> TableArg {
        let len = items.len() as u32;
        let trunk = self.trunk[key as usize];
        if trunk != NONE {
            let chain = &self.chains[trunk as usize];
            let common = chain.len().min(items.len());
            if chain[..common]
                .iter()
                .zip(&items[..common])
                .all(|(a, s)| self.same(*a, s))
            {
                let extra: Range<usize> = common..items.len();
                for s in &items[extra] {
                    let a = self.atom(s);
                    self.chains[trunk as usize].push(a);
                }
                return TableArg::List { chain: trunk, len };
            }
        }
        let atoms: Vec<Atom> = items.iter().map(|s| self.atom(s)).collect();
        let chain = self.chains.len() as u32;
        self.chains.push(atoms);
        self.trunk[key as usize] = chain;
        TableArg::List { chain, len }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::OpType;
    use serde_json::json;

    fn txn(index: u64, value: Value) -> Op {
        Op {
            index,
            kind: OpType::Ok,
            process: Process::Client(index),
            f: "txn".into(),
            key: None,
            value,
            time: index,
            node: None,
            error: None,
            meta: None,
        }
    }

    #[test]
    fn values_come_back_equal_and_reads_share_chains() {
        let values = [
            json!([["append", 1, 1], ["r", 1, [1]]]),
            json!([["r", 1, [1, "a", 3]], ["r", "k\"é", null], ["w", 7, "x"]]),
            json!([["r", 1, [1, "a"]], ["r", 1, []]]),
            json!([["r", 1, [2, 1]], ["r", 1, [1, "a", 3]]]),
        ];
        let ops: Vec<Op> = values
            .iter()
            .enumerate()
            .map(|(i, v)| txn(i as u64 * 2, v.clone()))
            .collect();
        let table = TxnTable::from_ops(&ops);
        for (p, op) in ops.iter().enumerate() {
            assert_eq!(
                table.value_json(p, op.index).as_ref(),
                Some(&op.value),
                "op {p}"
            );
        }
        let chain_of = |p: usize, i: usize| match table.mops(p, ops[p].index).unwrap()[i].arg {
            TableArg::List { chain, .. } => chain,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            chain_of(0, 1),
            chain_of(1, 0),
            "an extension shares its chain"
        );
        assert_eq!(chain_of(1, 0), chain_of(2, 0), "a prefix shares its chain");
        assert_ne!(
            chain_of(3, 0),
            chain_of(1, 0),
            "a disagreeing read starts a new chain"
        );
        assert_eq!(table.list(chain_of(3, 1), 3), table.list(chain_of(1, 0), 3));
    }

    #[test]
    fn an_op_not_in_the_table_or_of_another_index_is_not_found() {
        let ops = vec![
            txn(0, json!([["r", 1, null]])),
            txn(2, json!([["x", 1, 1]])),
            txn(4, json!({"a": 1})),
        ];
        let table = TxnTable::from_ops(&ops);
        assert_eq!(table.len(), 1);
        assert!(table.mops(0, 0).is_some());
        assert!(table.mops(0, 1).is_none(), "another op's index");
        assert!(
            table.mops(1, 2).is_none() && table.mops(2, 4).is_none() && table.mops(9, 9).is_none()
        );
    }
}

//! The transaction generator shared by `append` and `rw-register` (Elle's list-append and
//! rw-register generators): transactions of `txn_min_len..=txn_max_len` micro-ops, half reads
//! and half writes (appends), over a small pool of `keys` active keys chosen exponentially
//! (the first key of the pool twice as likely as the second, as Elle's default `key-dist`
//! with base 2). A key that took `max_writes_per_key` writes is retired and a fresh key
//! takes its place in the pool, so reads of a list stay short.
//!
//! Invariants: every written value is unique across the run (one counter), so unique per
//! key; a key is never written after it is retired; keys are `<letter>/<prefix><n:06>` with
//! `n` counting up and the letter `a + 7n mod 26`, so consecutive keys land far apart in key
//! order: a store whose ranges are cut by first letter (elastickv's and refkv's groups) holds
//! the active keys in every range, and a transaction of two or more keys often spans ranges
//! and groups — the multi-shard commit path a split or move should hit.

use super::{OpSpec, Touched, Workload};
use crate::config::WorkloadConfig;
use crate::txn::{Mop, ReadShape, Txn};
use rand::rngs::SmallRng;
use rand::RngExt;
use std::collections::BTreeSet;

/// The first letter of key `n`: `a + 7n mod 26` (7 is prime to 26, so 26 consecutive keys
/// take every letter once, each 7 letters after the last).
fn spread_letter(n: u64) -> char {
    char::from(b'a' + (n * 7 % 26) as u8)
}

/// The name `test.json` records a transaction workload's keys under.
fn touched_kind(shape: ReadShape) -> &'static str {
    match shape {
        ReadShape::List => "lists",
        ReadShape::Register => "txn_registers",
    }
}

pub struct TxnGen {
    shape: ReadShape,
    prefix: String,
    /// The active keys' numbers (index 0 is the hottest) and the writes each took.
    pool: Vec<(u64, u64)>,
    next_key: u64,
    next_value: i64,
    min_len: u64,
    max_len: u64,
    max_writes: u64,
    touched: BTreeSet<String>,
}

impl TxnGen {
    pub fn new(cfg: &WorkloadConfig, shape: ReadShape) -> TxnGen {
        let keys = cfg.keys.max(1);
        TxnGen {
            shape,
            prefix: cfg.register_prefix.clone(),
            pool: (0..keys).map(|n| (n, 0)).collect(),
            next_key: keys,
            next_value: 1,
            min_len: cfg.txn_min_len.max(1),
            max_len: cfg.txn_max_len.max(cfg.txn_min_len.max(1)),
            max_writes: cfg.max_writes_per_key.max(1),
            touched: BTreeSet::new(),
        }
    }

    fn key_name(&self, n: u64) -> String {
        format!("{}/{}{n:06}", spread_letter(n), self.prefix)
    }

    /// An index into the pool: `i` with probability ∝ 2^-i (the last takes the remainder).
    fn pick_slot(&self, rng: &mut SmallRng) -> usize {
        let last = self.pool.len() - 1;
        (0..last).find(|_| rng.random_bool(0.5)).unwrap_or(last)
    }

    fn next_mop(&mut self, rng: &mut SmallRng) -> Mop {
        let slot = self.pick_slot(rng);
        let key = self.key_name(self.pool[slot].0);
        self.touched.insert(key.clone());
        if rng.random_bool(0.5) {
            return Mop::Read {
                key,
                shape: self.shape,
            };
        }
        let value = self.next_value;
        self.next_value += 1;
        self.pool[slot].1 += 1;
        if self.pool[slot].1 >= self.max_writes {
            self.pool[slot] = (self.next_key, 0);
            self.next_key += 1;
        }
        match self.shape {
            ReadShape::List => Mop::Append { key, value },
            ReadShape::Register => Mop::Write { key, value },
        }
    }
}

impl Workload for TxnGen {
    fn next_op(&mut self, rng: &mut SmallRng) -> OpSpec {
        let len = rng.random_range(self.min_len..=self.max_len);
        OpSpec::new(Txn {
            mops: (0..len).map(|_| self.next_mop(rng)).collect(),
        })
    }

    /// Its keys, recorded as `lists` (list-append) or `txn_registers` (rw-register).
    fn touched(&self) -> Touched {
        Touched::of_kind(touched_kind(self.shape), self.touched.clone())
    }

    /// One read-only transaction per key touched, reading it as the workload does (a whole
    /// list, or a register's value), in key order.
    fn final_ops(&self) -> Vec<OpSpec> {
        let read = |key: &String| {
            OpSpec::new(Txn {
                mops: vec![Mop::Read {
                    key: key.clone(),
                    shape: self.shape,
                }],
            })
        };
        self.touched.iter().map(read).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::WorkloadKind;
    use rand::SeedableRng;
    use std::collections::HashMap;

    fn run(kind: &str, n: usize, max_writes: u64) -> (Vec<Vec<Mop>>, Touched) {
        let (txns, touched, _) = run_with_finals(kind, n, max_writes);
        (txns, touched)
    }

    fn run_with_finals(
        kind: &str,
        n: usize,
        max_writes: u64,
    ) -> (Vec<Vec<Mop>>, Touched, Vec<OpSpec>) {
        let mut cfg = WorkloadConfig::defaults(WorkloadKind::from_name(kind).expect("declared"));
        cfg.max_writes_per_key = max_writes;
        cfg.validate().unwrap();
        let mut g = super::super::build(&cfg);
        let mut rng = SmallRng::seed_from_u64(3);
        let txns = (0..n)
            .map(|_| {
                let op = g.next_op(&mut rng);
                op.get::<Txn>()
                    .map(|t| t.mops.clone())
                    .unwrap_or_else(|| panic!("not a transaction: {op:?}"))
            })
            .collect();
        (txns, g.touched(), g.final_ops())
    }

    #[test]
    fn transactions_have_one_to_four_micro_ops_and_unique_values() {
        let (txns, _) = run("append", 2000, 128);
        assert!(txns.iter().all(|t| (1..=4).contains(&t.len())));
        let lens: BTreeSet<usize> = txns.iter().map(Vec::len).collect();
        assert_eq!(lens, (1..=4).collect(), "every length occurs");
        let values: Vec<i64> = txns
            .iter()
            .flatten()
            .filter_map(|m| match m {
                Mop::Append { value, .. } => Some(*value),
                _ => None,
            })
            .collect();
        assert_eq!(
            values.iter().collect::<BTreeSet<_>>().len(),
            values.len(),
            "appended values are unique"
        );
        assert!(txns.iter().flatten().any(Mop::is_read));
    }

    #[test]
    fn a_key_takes_at_most_max_writes_then_a_fresh_key_replaces_it() {
        let (txns, touched) = run("append", 2000, 5);
        let mut writes: HashMap<&str, u64> = HashMap::new();
        let mut retired_after: HashMap<&str, usize> = HashMap::new();
        for (i, t) in txns.iter().enumerate() {
            for m in t {
                if let Mop::Append { key, .. } = m {
                    let w = writes.entry(key).or_default();
                    *w += 1;
                    assert!(*w <= 5, "{key} written {w} times");
                    if *w == 5 {
                        retired_after.insert(key, i);
                    }
                }
            }
        }
        for (key, at) in &retired_after {
            let later = txns[at + 1..]
                .iter()
                .flatten()
                .any(|m| m.key() == *key && !m.is_read());
            assert!(!later, "{key} written after it was retired");
        }
        assert!(
            touched.kind("lists").len() > 12,
            "fresh keys were taken: {}",
            touched.kind("lists").len()
        );
        assert!(touched.registers.is_empty() && touched.kind("txn_registers").is_empty());
    }

    #[test]
    fn rw_register_writes_registers_and_reads_them_as_values() {
        let (txns, touched) = run("rw-register", 500, 5);
        assert!(txns.iter().flatten().all(|m| matches!(
            m,
            Mop::Write { .. }
                | Mop::Read {
                    shape: ReadShape::Register,
                    ..
                }
        )));
        assert!(!touched.kind("txn_registers").is_empty() && touched.kind("lists").is_empty());
    }

    #[test]
    fn the_first_key_of_the_pool_is_the_hottest() {
        let (txns, _) = run("append", 3000, 100_000);
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for m in txns.iter().flatten() {
            *counts.entry(m.key()).or_default() += 1;
        }
        let first = counts.get("a/la/000000").copied().unwrap_or(0);
        let second = counts.get("h/la/000001").copied().unwrap_or(0);
        assert!(first > second, "{first} vs {second}");
    }

    #[test]
    fn keys_spread_over_first_letters_so_transactions_span_ranges() {
        // elastickv's three-group layout cuts at "g" and "n" (`:g=1,g:n=2,n:=3`).
        let group = |key: &str| match key.as_bytes()[0] {
            b'a'..=b'f' => 1,
            b'g'..=b'm' => 2,
            _ => 3,
        };
        let (txns, touched) = run("append", 2000, 128);
        let groups: BTreeSet<u8> = touched.kind("lists").iter().map(|k| group(k)).collect();
        assert_eq!(groups, [1, 2, 3].into(), "the keys fall in every range");
        let spanning = txns
            .iter()
            .filter(|t| {
                t.iter()
                    .map(|m| group(m.key()))
                    .collect::<BTreeSet<_>>()
                    .len()
                    > 1
            })
            .count();
        let multi_key = txns
            .iter()
            .filter(|t| t.iter().map(Mop::key).collect::<BTreeSet<_>>().len() > 1)
            .count();
        assert!(
            spanning * 2 > multi_key,
            "most multi-key transactions span ranges: {spanning} of {multi_key}"
        );
        assert_eq!(spread_letter(0), 'a');
        assert_eq!(spread_letter(1), 'h');
        assert_eq!(
            (0..26).map(spread_letter).collect::<BTreeSet<_>>().len(),
            26
        );
    }

    #[test]
    fn every_key_touched_is_read_back_by_one_read_transaction_of_the_workloads_shape() {
        for (kind, shape, recorded) in [
            ("append", ReadShape::List, "lists"),
            ("rw-register", ReadShape::Register, "txn_registers"),
        ] {
            let (_, touched, finals) = run_with_finals(kind, 200, 128);
            let keys = touched.kind(recorded);
            assert_eq!(finals.len(), keys.len(), "{kind}");
            for (op, key) in finals.iter().zip(&keys) {
                let txn = op.get::<Txn>().expect("a transaction");
                assert_eq!(
                    txn.mops,
                    vec![Mop::Read {
                        key: key.clone(),
                        shape
                    }],
                    "{kind}"
                );
                assert_eq!(op.call_kind(), crate::client::CallKind::Read);
            }
            assert_eq!(
                finals[0].describe(),
                format!("txn read of {}", keys.iter().next().unwrap())
            );
            let json = serde_json::to_value(&touched).unwrap();
            let fields: BTreeSet<&str> = json
                .as_object()
                .map(|o| o.keys().map(String::as_str).collect())
                .unwrap_or_default();
            assert_eq!(
                fields,
                [recorded, "registers", "set_ranges"].into(),
                "test.json's touched keeps its fields: {json}"
            );
        }
    }
}

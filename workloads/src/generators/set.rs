//! The `set` workload: inserts of unique keys under a prefix (`add`, key = the inserted key,
//! value = the element, its sequence number) and, every `scan_every` operations, a scan of
//! the set being filled. Checked with set-full semantics.
//!
//! Sets rotate so reads stay short (as Jepsen's set-full does with independent keys): a set
//! is one sub-range `<prefix><infix><generation:06>/` and takes `set_size` inserts before a
//! fresh generation replaces it. Generations sort after each other, so with sequential
//! inserts every insert still lands at the tail of the same range. A retired set is scanned
//! once more by the next periodic scan, and the final reads scan every set ever filled.
//!
//! Invariants: keys are unique across the run; a scan covers exactly one set; every set
//! that received an insert is in [`Inserts::ranges`].

use super::{prefix_end, OpSpec, ScanClock, ScanRange, Touched, Workload};
use crate::config::KeyDist;
use crate::config::WorkloadConfig;
use crate::kv_ops::{Add, Scan};
use analysis::checkers::set_full;
use rand::rngs::SmallRng;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Inserts at 200 ops/s with a scan every 100 operations, judged by set-full.
pub const SPEC: super::WorkloadSpec = super::WorkloadSpec::new(
    |cfg| Box::new(SetWorkload::new(cfg)),
    &[set_full::NAME],
)
.with_defaults(|base| WorkloadConfig {
    key_dist: KeyDist::Uniform,
    rate: 200.0,
    scan_every: 100,
    ..base
});

/// The set being filled under one infix.
#[derive(Debug, Clone, Default)]
struct Filling {
    generation: u64,
    /// Inserts into this generation so far.
    count: u64,
}

/// Sequential unique inserts under one prefix, in sets of at most `set_size` elements.
#[derive(Debug, Clone)]
pub struct Inserts {
    prefix: String,
    next: i64,
    /// Inserts a set takes before a fresh one replaces it (0 = never).
    set_size: u64,
    /// The set being filled, per infix.
    filling: BTreeMap<String, Filling>,
    /// Every set that received an insert.
    ranges: BTreeSet<ScanRange>,
    /// Retired sets not yet scanned after their retirement, oldest first.
    retired: VecDeque<ScanRange>,
}

impl Inserts {
    pub fn new(prefix: &str, set_size: u64) -> Inserts {
        Inserts {
            prefix: prefix.to_string(),
            next: 1,
            set_size,
            filling: BTreeMap::new(),
            ranges: BTreeSet::new(),
            retired: VecDeque::new(),
        }
    }

    fn set_prefix(&self, infix: &str, generation: u64) -> String {
        format!("{}{infix}{generation:06}/", self.prefix)
    }

    /// The next element and its key, `<prefix><infix><generation:06>/<element:012>`.
    pub fn next(&mut self, infix: &str) -> OpSpec {
        let element = self.next;
        self.next += 1;
        let mut filling = self.filling.remove(infix).unwrap_or_default();
        if self.set_size > 0 && filling.count >= self.set_size {
            let old = ScanRange::prefix(&self.set_prefix(infix, filling.generation));
            self.retired.push_back(old);
            filling = Filling { generation: filling.generation + 1, count: 0 };
        }
        filling.count += 1;
        let set = self.set_prefix(infix, filling.generation);
        if filling.count == 1 {
            self.ranges.insert(ScanRange::prefix(&set));
        }
        self.filling.insert(infix.to_string(), filling);
        OpSpec::new(Add { key: format!("{set}{element:012}"), element })
    }

    /// Every set that received an insert: what the final reads scan.
    pub fn ranges(&self) -> &BTreeSet<ScanRange> {
        &self.ranges
    }

    /// The whole prefix every set lies in.
    pub fn range(&self) -> ScanRange {
        ScanRange::prefix(&self.prefix)
    }

    /// The next periodic scan: the oldest retired set not yet scanned since its retirement,
    /// else the set being filled under `infix`.
    pub fn scan(&mut self, infix: &str) -> OpSpec {
        let range = self.retired.pop_front().unwrap_or_else(|| {
            let generation = self.filling.get(infix).map_or(0, |f| f.generation);
            let start = self.set_prefix(infix, generation);
            ScanRange { end: prefix_end(&start), start }
        });
        OpSpec::new(Scan { start: range.start, end: range.end })
    }
}

pub struct SetWorkload {
    inserts: Inserts,
    clock: ScanClock,
}

impl SetWorkload {
    pub fn new(cfg: &WorkloadConfig) -> SetWorkload {
        SetWorkload {
            inserts: Inserts::new(&cfg.set_prefix, cfg.set_size),
            clock: ScanClock::new(cfg.scan_every),
        }
    }
}

impl Workload for SetWorkload {
    fn next_op(&mut self, _rng: &mut SmallRng) -> OpSpec {
        if self.clock.tick() {
            self.inserts.scan("")
        } else {
            self.inserts.next("")
        }
    }

    fn touched(&self) -> Touched {
        Touched { set_ranges: self.inserts.ranges().clone(), ..Touched::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::WorkloadKind;
    use rand::SeedableRng;
    use std::collections::HashSet;

    fn scan_of(op: &OpSpec) -> Option<(&str, &str)> {
        op.get::<Scan>().map(|s| (s.start.as_str(), s.end.as_str()))
    }

    #[test]
    fn inserts_are_unique_sorted_and_scans_cover_the_set_being_filled() {
        let mut cfg = WorkloadConfig::defaults(WorkloadKind::Set);
        cfg.scan_every = 10;
        let mut w = SetWorkload::new(&cfg);
        let mut rng = SmallRng::seed_from_u64(3);
        let mut keys = HashSet::new();
        let mut elements = HashSet::new();
        let mut scans = 0;
        let mut last_key = String::new();
        for _ in 0..1000 {
            let op = w.next_op(&mut rng);
            if let Some(Add { key, element }) = op.get::<Add>() {
                assert!(key.starts_with("set/000000/") && key.as_str() < "set0");
                assert!(*key > last_key, "keys are sequential");
                last_key = key.clone();
                assert!(keys.insert(key.clone()));
                assert!(elements.insert(*element));
            } else if let Some(range) = scan_of(&op) {
                assert_eq!(range, ("set/000000/", "set/0000000"));
                scans += 1;
            } else {
                panic!("unexpected {op:?}");
            }
        }
        assert_eq!(scans, 100);
        assert_eq!(keys.len(), 900);
        let touched = w.touched();
        assert!(touched.registers.is_empty());
        assert_eq!(touched.set_ranges, [ScanRange::prefix("set/000000/")].into());
    }

    #[test]
    fn a_full_set_is_retired_scanned_once_more_and_kept_for_the_final_reads() {
        let mut ins = Inserts::new("s/", 3);
        let keys: Vec<String> = (0..7)
            .map(|_| ins.next("").get::<Add>().expect("an add").key.clone())
            .collect();
        assert_eq!(
            keys,
            [
                "s/000000/000000000001",
                "s/000000/000000000002",
                "s/000000/000000000003",
                "s/000001/000000000004",
                "s/000001/000000000005",
                "s/000001/000000000006",
                "s/000002/000000000007",
            ]
        );
        // Both retired sets get one scan each, oldest first, then the scans follow the set
        // being filled.
        let scans: Vec<OpSpec> = (0..4).map(|_| ins.scan("")).collect();
        let ranges: Vec<_> = scans.iter().filter_map(scan_of).collect();
        assert_eq!(
            ranges,
            [
                ("s/000000/", "s/0000000"),
                ("s/000001/", "s/0000010"),
                ("s/000002/", "s/0000020"),
                ("s/000002/", "s/0000020"),
            ]
        );
        let every_set: Vec<_> = ins.ranges().iter().map(|r| r.start.as_str()).collect();
        assert_eq!(every_set, ["s/000000/", "s/000001/", "s/000002/"]);
        assert_eq!(ins.range(), ScanRange::prefix("s/"));
    }

    #[test]
    fn without_a_set_size_one_set_takes_every_insert() {
        let mut ins = Inserts::new("s/", 0);
        for _ in 0..10_000 {
            ins.next("");
        }
        assert_eq!(ins.ranges().len(), 1);
        assert_eq!(scan_of(&ins.scan("")), Some(("s/000000/", "s/0000000")));
    }

    #[test]
    fn each_infix_rotates_on_its_own() {
        let mut ins = Inserts::new("h/", 2);
        let key = |ins: &mut Inserts, infix: &str| ins.next(infix).get::<Add>().expect("add").key.clone();
        assert_eq!(key(&mut ins, "0001/"), "h/0001/000000/000000000001");
        assert_eq!(key(&mut ins, "0002/"), "h/0002/000000/000000000002");
        assert_eq!(key(&mut ins, "0001/"), "h/0001/000000/000000000003");
        assert_eq!(key(&mut ins, "0001/"), "h/0001/000001/000000000004");
        assert_eq!(scan_of(&ins.scan("0002/")), Some(("h/0001/000000/", "h/0001/0000000")));
        assert_eq!(scan_of(&ins.scan("0002/")), Some(("h/0002/000000/", "h/0002/0000000")));
        assert_eq!(ins.ranges().len(), 3);
    }
}

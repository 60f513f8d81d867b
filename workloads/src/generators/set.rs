//! The `set` workload: inserts of unique keys under a prefix (`add`, key = the inserted key,
//! value = the element, its sequence number) and, every `scan_every` operations, a scan of
//! the whole prefix. Checked with set-full semantics.

use super::{OpSpec, ScanClock, ScanRange, Touched, Workload};
use crate::kv_ops::{Add, Scan};
use crate::config::WorkloadConfig;
use rand::rngs::SmallRng;
use crate::config::KeyDist;
use analysis::checkers::set_full;

/// Inserts at 200 ops/s with a scan every 100 operations, judged by set-full.
pub const SPEC: super::WorkloadSpec = super::WorkloadSpec::new(|cfg| Box::new(SetWorkload::new(cfg)), &[set_full::NAME])
    .with_defaults(|base| WorkloadConfig { key_dist: KeyDist::Uniform, rate: 200.0, scan_every: 100, ..base });

/// Sequential unique inserts under one prefix.
#[derive(Debug, Clone)]
pub struct Inserts {
    prefix: String,
    next: i64,
    /// Periodic scans cover only the last `window` sequential keys (0 = the whole prefix).
    window: u64,
}

impl Inserts {
    pub fn new(prefix: &str, window: u64) -> Inserts {
        Inserts { prefix: prefix.to_string(), next: 1, window }
    }

    /// The next element and its key, `<prefix><infix><element:012>`.
    pub fn next(&mut self, infix: &str) -> OpSpec {
        let element = self.next;
        self.next += 1;
        OpSpec::new(Add { key: format!("{}{infix}{element:012}", self.prefix), element })
    }

    pub fn range(&self) -> ScanRange {
        ScanRange::prefix(&self.prefix)
    }

    /// A scan of the prefix, or of its tail of the last `window` keys when the keys are
    /// sequential (`sequential`: every insert used an empty infix).
    pub fn scan(&self, sequential: bool) -> OpSpec {
        let r = self.range();
        let inserted = (self.next - 1) as u64;
        let start = if sequential && self.window > 0 && inserted > self.window {
            format!("{}{:012}", self.prefix, inserted - self.window + 1)
        } else {
            r.start
        };
        OpSpec::new(Scan { start, end: r.end })
    }
}

pub struct SetWorkload {
    inserts: Inserts,
    clock: ScanClock,
}

impl SetWorkload {
    pub fn new(cfg: &WorkloadConfig) -> SetWorkload {
        SetWorkload { inserts: Inserts::new(&cfg.set_prefix, cfg.scan_window), clock: ScanClock::new(cfg.scan_every) }
    }
}

impl Workload for SetWorkload {
    fn next_op(&mut self, _rng: &mut SmallRng) -> OpSpec {
        if self.clock.tick() {
            self.inserts.scan(true)
        } else {
            self.inserts.next("")
        }
    }

    fn touched(&self) -> Touched {
        Touched { set_ranges: [self.inserts.range()].into(), ..Touched::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::WorkloadKind;
    use rand::SeedableRng;
    use std::collections::HashSet;

    #[test]
    fn inserts_are_unique_sorted_and_scans_cover_them() {
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
                assert!(key.starts_with("set/") && key.as_str() < "set0");
                assert!(*key > last_key, "keys are sequential");
                last_key = key.clone();
                assert!(keys.insert(key.clone()));
                assert!(elements.insert(*element));
            } else if let Some(Scan { start, end }) = op.get::<Scan>() {
                assert_eq!((start.as_str(), end.as_str()), ("set/", "set0"));
                scans += 1;
            } else {
                panic!("unexpected {op:?}");
            }
        }
        assert_eq!(scans, 100);
        assert_eq!(keys.len(), 900);
        let touched = w.touched();
        assert!(touched.registers.is_empty());
        assert_eq!(touched.set_ranges.len(), 1);
    }

    #[test]
    fn windowed_scans_cover_the_last_keys_only() {
        let mut ins = Inserts::new("s/", 3);
        assert_eq!(ins.scan(true), OpSpec::new(Scan { start: "s/".into(), end: "s0".into() }));
        for _ in 0..5 {
            ins.next("");
        }
        // Keys 1..=5 inserted; the window covers 3, 4, 5.
        assert_eq!(ins.scan(true), OpSpec::new(Scan { start: "s/000000000003".into(), end: "s0".into() }));
        assert_eq!(ins.scan(false), OpSpec::new(Scan { start: "s/".into(), end: "s0".into() }));
        assert_eq!(ins.range(), ScanRange::prefix("s/"), "final reads always cover the whole prefix");
    }
}

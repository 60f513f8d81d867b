//! Shared by the streamed-analysis tests: hotspot-like generated histories and the facts of
//! a run that judges them.

use analysis::checkers::registry::{Basis, CheckOptions, RunFacts};
use analysis::formats::jsonl;
use analysis::history::{History, Op, OpType, Process};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

pub fn facts(judged_by: &[&str], nemesis: &[&str]) -> RunFacts {
    RunFacts {
        basis: Basis::Run,
        workload: "hotspot".into(),
        judged_by: judged_by.iter().map(|s| s.to_string()).collect(),
        nemesis: nemesis.iter().map(|s| s.to_string()).collect(),
        store: "test-store".into(),
        linearizable_reads: true,
        commit_meta: false,
        catalog: false,
        splits: false,
        hot_prefix: None,
        split_cooldown_s: None,
        splits_expected: false,
        lifecycle_watched: false,
        cluster: "netns".into(),
        functions: Default::default(),
        has_entries: true,
        options: every_key_checked(),
    }
}

/// Default options, but every key checked even after one is invalid: the grace the others
/// get by default is a matter of timing, which no comparison can rely on.
fn every_key_checked() -> CheckOptions {
    let mut options = CheckOptions::default();
    options.linearizable.first_invalid_grace = None;
    options
}

/// A deterministic xorshift generator.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Writes ops with dense indices and rising times.
#[derive(Default)]
struct Recorder {
    ops: Vec<Op>,
}

impl Recorder {
    fn push(&mut self, kind: OpType, process: Process, f: &str, key: Option<&str>, value: Value) {
        let index = self.ops.len() as u64;
        self.ops.push(Op {
            index,
            kind,
            process,
            f: f.into(),
            key: key.map(Into::into),
            value,
            time: 1_000_000 + index * 250_000,
            node: Some("n1".into()),
            error: None,
            meta: None,
        });
    }

    fn call(&mut self, p: u64, f: &str, key: Option<&str>, value: Value, done: OpType, out: Value) {
        self.push(OpType::Invoke, Process::Client(p), f, key, value);
        self.push(done, Process::Client(p), f, key, out);
    }
}

fn set_range(set: u64) -> (String, String) {
    (format!("hot/{set:03}/"), format!("hot/{set:03}0"))
}

/// A hotspot-like history: `sets` key ranges filled by keyed adds and read by scans,
/// `sets / 2` (at least 8) register keys written and read, a split and a partition, and one of each finding.
pub fn hotspot_history(seed: u64, sets: u64) -> History {
    let mut rng = Rng(seed);
    let mut r = Recorder::default();
    let nemesis = |r: &mut Recorder, f: &str| {
        r.push(
            OpType::Info,
            Process::Nemesis,
            f,
            None,
            json!({"targets": ["n1"], "effective": true}),
        );
    };
    // Register keys grow with the sets, so no key grows with the history.
    let mut registers = vec![0i64; (sets as usize / 2).max(8)];
    let mut present: Vec<Vec<String>> = vec![Vec::new(); sets as usize];
    for step in 0..(sets * 60) {
        let set = rng.below(sets);
        let (start, _) = set_range(set);
        match rng.below(10) {
            0..=4 => {
                let key = format!("{start}{step:06}");
                let done = [
                    OpType::Ok,
                    OpType::Ok,
                    OpType::Ok,
                    OpType::Info,
                    OpType::Fail,
                ][rng.below(5) as usize];
                r.call(
                    1 + rng.below(4),
                    "add",
                    Some(&key),
                    json!(step),
                    done,
                    json!(step),
                );
                if done != OpType::Fail && rng.below(3) > 0 {
                    present[set as usize].push(key);
                }
            }
            5 | 6 => scan(&mut r, 5, set, present[set as usize].clone()),
            _ => {
                let k = rng.below(registers.len() as u64) as usize;
                let key = format!("reg/{k}");
                if rng.below(2) == 0 {
                    registers[k] += 1;
                    r.call(
                        6 + rng.below(2),
                        "write",
                        Some(&key),
                        json!(registers[k]),
                        OpType::Ok,
                        json!(registers[k]),
                    );
                } else {
                    let value = if registers[k] == 0 {
                        json!(null)
                    } else {
                        json!(registers[k])
                    };
                    r.call(8, "read", Some(&key), json!(null), OpType::Ok, value);
                }
            }
        }
        if step == sets * 20 {
            nemesis(&mut r, "start-split");
        }
        if step == sets * 30 {
            nemesis(&mut r, "start-partition");
        }
        if step == sets * 40 {
            nemesis(&mut r, "stop-partition");
        }
    }
    inject_findings(&mut r, &mut present, &mut registers);
    for set in 0..sets {
        scan(&mut r, 9, set, present[set as usize].clone());
    }
    r.push(
        OpType::Invoke,
        Process::Client(10),
        "add",
        Some("hot/000/zz-never-done"),
        json!(-1),
    );
    History::new(r.ops)
}

/// A scan of set `set` by `process`, returning `keys` (sorted here).
fn scan(r: &mut Recorder, process: u64, set: u64, mut keys: Vec<String>) {
    let (start, end) = set_range(set);
    keys.sort();
    r.call(
        process,
        "scan",
        None,
        json!({"start": start, "end": end}),
        OpType::Ok,
        json!(keys),
    );
}

/// One of each finding, in set 0 and set 1 and on register `reg/0`.
fn inject_findings(r: &mut Recorder, present: &mut [Vec<String>], registers: &mut [i64]) {
    let (start0, end0) = set_range(0);
    // Lost: acknowledged, seen once, then missing.
    let lost = format!("{start0}lost");
    r.call(
        11,
        "add",
        Some(&lost),
        json!("lost"),
        OpType::Ok,
        json!("lost"),
    );
    r.call(
        11,
        "scan",
        None,
        json!({"start": start0, "end": end0}),
        OpType::Ok,
        json!([lost]),
    );
    // Duplicated and unexpected in one scan; a failed add observed.
    let failed = format!("{start0}failed");
    r.call(
        11,
        "add",
        Some(&failed),
        json!("f"),
        OpType::Fail,
        json!("f"),
    );
    let mut keys = present[0].clone();
    keys.sort();
    let mut read = keys.clone();
    read.extend([
        keys.first().cloned().unwrap_or(failed.clone()),
        format!("{start0}ghost"),
        failed,
    ]);
    r.call(
        11,
        "scan",
        None,
        json!({"start": start0, "end": end0}),
        OpType::Ok,
        json!(read),
    );
    // A stale register read: the read returns the value before an acknowledged write.
    let mut write = |r: &mut Recorder| {
        registers[0] += 1;
        let value = registers[0];
        r.call(
            12,
            "write",
            Some("reg/0"),
            json!(value),
            OpType::Ok,
            json!(value),
        );
        value
    };
    let old = write(r);
    write(r);
    r.call(
        13,
        "read",
        Some("reg/0"),
        json!(null),
        OpType::Ok,
        json!(old),
    );
    present[1].clear();
}

pub fn write_jsonl(history: &History, dir: &Path) -> PathBuf {
    let path = dir.join("history.jsonl");
    jsonl::write_history(&path, history).expect("write history");
    path
}

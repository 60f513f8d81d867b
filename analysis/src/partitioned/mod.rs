//! Judging a run's history too large to hold in memory: the history is read twice as it
//! streams from its file and never held whole. The first pass keeps the non-client entries
//! (faults, catalog, node lifecycle: few) and the scan ranges; the second hands every
//! entry to the checkers that fold ([`Streaming::Fold`]) and writes each client op to the
//! part file of its key group ([`groups`]); then each part — its client ops plus every
//! non-client entry, in history order — is read back and judged by the checkers that judge
//! by key ([`Streaming::ByKey`]), one part at a time. Peak memory follows the largest part
//! (at least the largest key group), not the history.
//!
//! Invariants: the results are those the whole history gets from the registry
//! ([`crate::checkers::registry::run_into`]), timings aside; a plan with a checker that needs
//! the whole history, or a history whose reads span every key (a `read-set`, an unkeyed
//! `add`), is not streamed ([`Streamed::NeedsWhole`] says why) and the caller reads it
//! whole; part files are removed however the check ends.

mod groups;
mod spill;

use crate::checkers::registry::{
    self, Applies, Basis, Checker, FoldCheck, PartCheck, RunFacts, Streaming,
};
use crate::formats::{jsonl, FormatError, ParseReport};
use crate::history::{History, Op};
use crate::ops;
use crate::verdict::CheckerResult;
use groups::{Router, ScanRanges};
use spill::Spill;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How to cut the history.
#[derive(Debug, Clone)]
pub struct Options {
    /// Bytes of history text per part: the history's size over this is the number of parts.
    pub part_bytes: u64,
    /// Where the part files go (the system's temporary directory when `None`).
    pub spill_dir: Option<PathBuf>,
    /// Bytes of text read (and parsed on all cores) at a time.
    pub read_batch_bytes: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            part_bytes: 64 << 20,
            spill_dir: None,
            read_batch_bytes: 32 << 20,
        }
    }
}

/// What streaming the history gave.
pub enum Streamed {
    /// Every planned checker's result (not-applicable ones with their reasons).
    Judged {
        checkers: BTreeMap<String, CheckerResult>,
        report: ParseReport,
        stats: Stats,
    },
    /// The history must be read whole, for this reason.
    NeedsWhole(String),
}

/// What the streamed check did.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub parts: usize,
    pub key_ranges: usize,
    pub spilled_bytes: u64,
    /// The most ops one part held (non-client entries included).
    pub largest_part_ops: usize,
}

/// Judges the run history at `path` under `facts` part by part, or says why it cannot.
pub fn check_file(path: &Path, facts: &RunFacts, opts: &Options) -> Result<Streamed, FormatError> {
    let plan = match streamed_plan(facts) {
        Ok(plan) => plan,
        Err(why) => return Ok(Streamed::NeedsWhole(why)),
    };
    let first = first_pass(path, opts.read_batch_bytes)?;
    if let Some(why) = first.spans_every_key {
        return Ok(Streamed::NeedsWhole(why));
    }
    let events = History::new(first.events);
    let mut checks = Checks::start(&plan, facts, &events);
    let parts = parts_for(path, opts);
    let source = path.display().to_string();
    let io_error = |e: std::io::Error| FormatError::new(&source, 0, format!("part files: {e}"));
    let under = opts.spill_dir.clone().unwrap_or_else(std::env::temp_dir);
    let mut spill = Spill::create(&under, parts).map_err(io_error)?;
    let groups = first.ranges.into_groups();
    let key_ranges = groups.ranges();
    let mut router = Router::new(groups, parts);
    let file = File::open(path).map_err(io_error)?;
    let report = jsonl::stream_history_batched(file, &source, opts.read_batch_bytes, |op| {
        checks.observe(&op);
        match op.process.client() {
            Some(process) => {
                let part = router.part_of(process, &op);
                spill
                    .write(part, &op)
                    .map_err(|e| format!("part files: {e}"))
            }
            None => Ok(()),
        }
    })?;
    spill.close().map_err(io_error)?;
    let mut stats = Stats {
        parts,
        key_ranges,
        spilled_bytes: spill.bytes(),
        largest_part_ops: 0,
    };
    for part in 0..parts {
        let ops = spill.read(part, &events.ops)?;
        stats.largest_part_ops = stats.largest_part_ops.max(ops.len());
        checks.absorb(&History::new(ops));
    }
    Ok(Streamed::Judged {
        checkers: checks.finish(),
        report,
        stats,
    })
}

/// Every checker's decision, or why one needs the whole history.
fn streamed_plan(facts: &RunFacts) -> Result<Vec<(&'static Checker, Applies)>, String> {
    if facts.basis != Basis::Run {
        return Err("only a run's history (with its test.json) is streamed".into());
    }
    let plan = registry::plan(facts);
    if let Some((c, _)) = plan
        .iter()
        .find(|(c, a)| *a == Applies::Yes && matches!(c.streaming, Streaming::Whole))
    {
        return Err(format!("the {} checker needs the whole history", c.name));
    }
    Ok(plan)
}

/// What the first pass keeps.
struct FirstPass {
    events: Vec<Op>,
    ranges: ScanRanges,
    /// Why some read speaks about every key, if one does.
    spans_every_key: Option<String>,
}

fn first_pass(path: &Path, batch_bytes: usize) -> Result<FirstPass, FormatError> {
    let source = path.display().to_string();
    let file = File::open(path).map_err(|e| FormatError::new(&source, 0, e.to_string()))?;
    let mut first = FirstPass {
        events: Vec::new(),
        ranges: ScanRanges::default(),
        spans_every_key: None,
    };
    jsonl::stream_history_batched(file, &source, batch_bytes, |op| {
        if op.process.client().is_none() {
            first.events.push(op);
            return Ok(());
        }
        first.ranges.note(&op);
        if first.spans_every_key.is_none() {
            first.spans_every_key = spans_every_key(&op);
        }
        Ok(())
    })?;
    Ok(first)
}

/// Why `op` ties every key of the history together, if it does.
fn spans_every_key(op: &Op) -> Option<String> {
    if op.f == ops::READ_SET {
        return Some(format!(
            "op {} is a read-set, which reads every element",
            op.index
        ));
    }
    (op.f == ops::ADD && op.key.is_none())
        .then(|| format!("op {} adds an element without a key", op.index))
}

fn parts_for(path: &Path, opts: &Options) -> usize {
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    bytes.div_ceil(opts.part_bytes.max(1)).max(1) as usize
}

/// A checker's streamed state.
enum Check {
    Parts(Box<dyn PartCheck>),
    Fold(Box<dyn FoldCheck>),
    /// It panicked (a faultline bug): its `unknown` result.
    Failed(CheckerResult),
}

/// The planned checkers' states, with the time each took.
struct Checks {
    running: Vec<(&'static Checker, Check, Duration)>,
    decided: BTreeMap<String, CheckerResult>,
}

impl Checks {
    fn start(plan: &[(&'static Checker, Applies)], facts: &RunFacts, events: &History) -> Checks {
        let mut checks = Checks {
            running: Vec::new(),
            decided: BTreeMap::new(),
        };
        for (checker, applies) in plan {
            let check = match (applies, checker.streaming) {
                (Applies::Omitted, _) => continue,
                (Applies::NotApplicable(reason), _) => {
                    let result = registry::not_applicable(reason.clone());
                    checks.decided.insert(checker.name.to_string(), result);
                    continue;
                }
                (Applies::Yes, Streaming::ByKey(start)) => Check::Parts(start(facts)),
                (Applies::Yes, Streaming::Fold(start)) => Check::Fold(start(facts, events)),
                (Applies::Yes, Streaming::Whole) => unreachable!("refused by streamed_plan"),
            };
            checks.running.push((checker, check, Duration::ZERO));
        }
        checks
    }

    /// Hands `op` to every fold (untimed: a clock read per op would cost more than most
    /// folds).
    fn observe(&mut self, op: &Op) {
        for (checker, check, _) in &mut self.running {
            if matches!(check, Check::Fold(_)) {
                guarded_step(checker.name, check, |c| {
                    if let Check::Fold(f) = c {
                        f.observe(op)
                    }
                });
            }
        }
    }

    fn absorb(&mut self, part: &History) {
        for (checker, check, took) in &mut self.running {
            if matches!(check, Check::Parts(_)) {
                let started = Instant::now();
                guarded_step(checker.name, check, |c| {
                    if let Check::Parts(p) = c {
                        p.absorb(part)
                    }
                });
                *took += started.elapsed();
            }
        }
    }

    fn finish(mut self) -> BTreeMap<String, CheckerResult> {
        for (checker, check, took) in self.running {
            let started = Instant::now();
            let result = match check {
                Check::Parts(p) => registry::guarded(checker.name, || p.finish()),
                Check::Fold(f) => registry::guarded(checker.name, || f.finish()),
                Check::Failed(result) => result,
            };
            let mut result = result;
            registry::note_check_ms(&mut result, took + started.elapsed());
            self.decided.insert(checker.name.to_string(), result);
        }
        self.decided
    }
}

/// Runs one step of checker `name`; a panic (a faultline bug) leaves it failed with the
/// panic named, and the other checkers go on.
fn guarded_step(name: &str, check: &mut Check, step: impl FnOnce(&mut Check)) {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| step(check)));
    if let Err(payload) = outcome {
        *check = Check::Failed(registry::panicked(name, payload));
    }
}

//! Lost-write checker with Jepsen's set-full semantics, for workloads that add unique
//! elements (or insert unique keys) and read the whole set or a key range.
//!
//! Operations (faultline's convention, `docs/history-format.md`):
//! - `add`: `key` = the unique key inserted (optional), `value` = the element. The
//!   element's identity is its key when there is one, else its value.
//! - `read-set`: invoke value `null`; `ok` value = array of every element present
//!   (keys for keyed elements, values otherwise).
//! - `scan`: invoke value `{"start": s, "end": e}` (`e` empty or absent = unbounded); `ok`
//!   value = array of the keys present in `[s, e)`. A scan speaks only about keyed
//!   elements inside its range.
//!
//! Other functions are ignored, so a mixed history (register ops next to inserts) can be
//! given to this checker as it is; keys those ops address are not `unexpected` when a scan
//! returns them. Per element the outcome is `stable`, `lost` or
//! `never-read` ([`element`]), plus `stale`, `recovered`, and these anomalies: `lost`,
//! `duplicated` (an element appearing more than once in one read — which Jepsen's own
//! set-full never reports), `unexpected` (read but never attempted, or read before its add
//! was invoked), `failed-add-observed` (read although its adds definitely failed) and
//! `scan-out-of-range` (a scan returned a key outside its range). Any of them makes the
//! result invalid; with [`SetFullOptions::linearizable`] so does a stale element.
//!
//! An element added more than once is one element whose adds are merged: acknowledged if
//! any add ended `ok`, indeterminate if any ended `info` or never completed, failed only if
//! every one failed; known from the earliest `ok`. A read that returned it is
//! `failed-add-observed` only if every add invoked before that read completed had failed.

/// Checker name in `results.json`.
pub const NAME: &str = "set-full";

/// Its registry entry (when it judges a history, how it is called).
pub mod entry;
pub use entry::CHECKER;

pub mod element;
mod listed;
pub mod parts;
mod report;
pub mod route_change;
mod summary;

use crate::history::{History, Op, OpType, Process, Text};
use crate::ops;
use crate::verdict::CheckerResult;
use element::{Element, Point};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// The functions this checker reads.
pub const FUNCTIONS: &[&str] = &[ops::ADD, ops::READ_SET, ops::SCAN];

#[derive(Debug, Clone, Default)]
pub struct SetFullOptions {
    /// The store promises linearizable reads: a stale element is then invalid.
    pub linearizable: bool,
}

/// Checks `history` with set-full semantics: the whole history as one part
/// ([`parts::SetParts`]).
pub fn check(history: &History, opts: &SetFullOptions) -> CheckerResult {
    let mut parts = parts::SetParts::new(opts.clone());
    parts.absorb(history);
    parts.finish()
}

/// One pass over `history`: the state of every element it adds, or why it cannot be
/// checked (naming the op).
pub(crate) fn pass(history: &History) -> Result<Scan, String> {
    let mut scan = Scan::default();
    for op in &history.ops {
        scan.step(op).map_err(|why| format!("op {}: {why}", op.index))?;
    }
    scan.finish();
    Ok(scan)
}

/// A read-type entry that a read returned which matched no attempted element (yet).
#[derive(Debug, Clone)]
pub(crate) struct Unmatched {
    pub display: serde_json::Value,
    pub read_index: u64,
}

/// A read that returned an element more than once.
#[derive(Debug, Clone)]
pub(crate) struct Duplicate {
    pub element: usize,
    pub read_index: u64,
    pub copies: u32,
}

/// A client's invoke awaiting its completion.
struct Invocation {
    at: Point,
    value: serde_json::Value,
    /// The element an `add` is about.
    element: Option<usize>,
}

/// State accumulated over one pass through the history.
#[derive(Default)]
pub(crate) struct Scan {
    pub elements: Vec<Element>,
    /// Identity → element, for string identities (keys and string values).
    by_str: FxHashMap<Text, usize>,
    /// Identity → element, for other values (canonical JSON text).
    by_json: FxHashMap<String, usize>,
    /// Keyed elements by key, for scans.
    by_key: BTreeMap<Text, usize>,
    /// Each client process' pending invoke.
    pending: FxHashMap<u64, Invocation>,
    /// The read number that last saw each element (to detect duplicates cheaply).
    seen_in_read: Vec<u32>,
    read_no: u32,
    pub reads: u64,
    pub readds: u64,
    pub unmatched: FxHashMap<String, Unmatched>,
    pub duplicates: Vec<Duplicate>,
    pub out_of_range: Vec<(u64, String)>,
    /// Keys that non-set operations (register reads and writes) addressed: a scan over
    /// them returns them legitimately, so they are not `unexpected`.
    pub register_keys: rustc_hash::FxHashSet<Text>,
}

impl Scan {
    fn step(&mut self, op: &Op) -> Result<(), String> {
        let Process::Client(process) = op.process else {
            return Ok(());
        };
        let at = Point {
            index: op.index,
            time: op.time,
        };
        if let (Some(key), false) = (&op.key, FUNCTIONS.contains(&op.f.as_str())) {
            if !self.register_keys.contains(key) {
                self.register_keys.insert(key.clone());
            }
        }
        if op.kind == OpType::Invoke {
            let element = (op.f == ops::ADD).then(|| self.add_invoked(op, at));
            self.pending.insert(
                process,
                Invocation {
                    at,
                    value: op.value.clone(),
                    element,
                },
            );
            return Ok(());
        }
        let Some(inv) = self.pending.remove(&process) else {
            return Err(format!(
                "`{}` completion of process {process} without a pending invoke",
                op.f
            ));
        };
        match (op.f.as_str(), op.kind) {
            (ops::ADD, kind) => self.add_completed(inv.element, kind, inv.at, at),
            (ops::READ_SET, OpType::Ok) => self.read_set(op, inv.at, at)?,
            (ops::SCAN, OpType::Ok) => self.scan(op, &inv.value, inv.at, at)?,
            _ => {}
        }
        Ok(())
    }

    fn identity_lookup(&self, v: &serde_json::Value) -> Option<usize> {
        match v {
            serde_json::Value::String(s) => self.by_str.get(s.as_str()).copied(),
            other => self.by_json.get(&other.to_string()).copied(),
        }
    }

    /// Registers the element an add is about (if new); returns its id.
    fn add_invoked(&mut self, op: &Op, at: Point) -> usize {
        let (value, existing) = match &op.key {
            Some(k) => (None, self.by_str.get(k.as_str()).copied()),
            None => (Some(op.value.clone()), self.identity_lookup(&op.value)),
        };
        if let Some(id) = existing {
            self.readds += 1;
            return id;
        }
        let id = self.elements.len();
        match (&op.key, &op.value) {
            (Some(k), _) => {
                self.by_str.insert(k.clone(), id);
                self.by_key.insert(k.clone(), id);
            }
            (None, serde_json::Value::String(s)) => {
                self.by_str.insert(Text::from(s.as_str()), id);
            }
            (None, other) => {
                self.by_json.insert(other.to_string(), id);
            }
        }
        self.elements
            .push(Element::new(value, op.key.clone(), at));
        self.seen_in_read.push(0);
        id
    }

    /// Every add of an element counts: their outcomes are merged ([`element::AddStatus`]).
    fn add_completed(&mut self, element: Option<usize>, kind: OpType, invoked: Point, done: Point) {
        if let Some(id) = element {
            self.elements[id].add_completed(kind, invoked, done);
        }
    }

    /// The history has ended: adds still pending never completed.
    fn finish(&mut self) {
        for inv in self.pending.values() {
            if let Some(id) = inv.element {
                self.elements[id].add_never_completed(inv.at);
            }
        }
    }

    /// Marks the elements a read returned as seen by it, noting duplicates and entries
    /// that match no attempted element.
    fn mark_seen(&mut self, entries: &[serde_json::Value], read_index: u64) {
        self.read_no += 1;
        self.reads += 1;
        let mut copies: FxHashMap<usize, u32> = FxHashMap::default();
        for entry in entries {
            let Some(id) = self.identity_lookup(entry) else {
                self.unmatched
                    .entry(entry.to_string())
                    .or_insert_with(|| Unmatched {
                        display: entry.clone(),
                        read_index,
                    });
                continue;
            };
            if self.seen_in_read[id] == self.read_no {
                *copies.entry(id).or_insert(1) += 1;
            } else {
                self.seen_in_read[id] = self.read_no;
            }
        }
        let mut dups: Vec<Duplicate> = copies
            .into_iter()
            .map(|(element, copies)| Duplicate {
                element,
                read_index,
                copies,
            })
            .collect();
        dups.sort_by_key(|d| d.element);
        self.duplicates.extend(dups);
    }

    fn read_set(&mut self, op: &Op, inv: Point, done: Point) -> Result<(), String> {
        let entries = op.value.as_array().ok_or_else(|| {
            format!(
                "a read-set completion's value must be an array of elements, found {}",
                op.value
            )
        })?;
        self.mark_seen(entries, op.index);
        for id in 0..self.elements.len() {
            self.update(id, inv, done);
        }
        Ok(())
    }

    fn scan(
        &mut self,
        op: &Op,
        inv_value: &serde_json::Value,
        inv: Point,
        done: Point,
    ) -> Result<(), String> {
        let (start, end) = scan_range(inv_value)?;
        let entries = op.value.as_array().ok_or_else(|| {
            format!(
                "a scan completion's value must be an array of keys, found {}",
                op.value
            )
        })?;
        for entry in entries {
            let serde_json::Value::String(key) = entry else {
                return Err(format!("a scan returns keys (strings), found {entry}"));
            };
            if key.as_str() < start.as_str() || end.as_deref().is_some_and(|e| key.as_str() >= e) {
                self.out_of_range.push((op.index, key.clone()));
            }
        }
        self.mark_seen(entries, op.index);
        let ids: Vec<usize> = match &end {
            Some(e) if e.as_str() <= start.as_str() => Vec::new(),
            Some(e) => self
                .by_key
                .range(Text::from(start.as_str())..Text::from(e.as_str()))
                .map(|(_, &id)| id)
                .collect(),
            None => self.by_key.range(Text::from(start)..).map(|(_, &id)| id).collect(),
        };
        for id in ids {
            self.update(id, inv, done);
        }
        Ok(())
    }

    fn update(&mut self, id: usize, inv: Point, done: Point) {
        if self.seen_in_read[id] == self.read_no {
            self.elements[id].read_present(inv, done);
        } else {
            self.elements[id].read_absent(inv);
        }
    }
}

/// The `[start, end)` of a scan invoke value; `end` `None` is unbounded.
fn scan_range(v: &serde_json::Value) -> Result<(String, Option<String>), String> {
    let bad =
        || format!("a scan's invoke value must be {{\"start\": key, \"end\": key}}, found {v}");
    let obj = v.as_object().ok_or_else(bad)?;
    let field = |name: &str| match obj.get(name) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(bad()),
    };
    let start = field("start")?.unwrap_or_default();
    let end = field("end")?.filter(|e| !e.is_empty());
    Ok((start, end))
}

//! Key groups: which client ops must be judged together. A scan speaks about every key in
//! its range, so the keys of overlapping scan ranges form one group (a merged range); a key
//! outside every scan range is a group of its own. A completion belongs with its invoke.
//!
//! Invariants: every op on a key lands in the part of that key's group; a scan lands in the
//! part of its range's group, with every key inside it; the part of a group never depends
//! on the order ops arrive in.

use crate::history::{Op, OpType};
use crate::ops;
use rustc_hash::{FxHashMap, FxHasher};
use std::hash::{Hash, Hasher};

/// A scan's `[start, end)`; `end` `None` is unbounded.
type Range = (String, Option<String>);

/// The merged scan ranges, built in a first pass over the history.
#[derive(Default)]
pub struct ScanRanges {
    ranges: Vec<Range>,
}

impl ScanRanges {
    /// Notes the range of `op` if it is a scan's invoke (`{"start", "end"}`; `end` absent
    /// or empty: unbounded). A malformed range is left to the checker that reads it.
    pub fn note(&mut self, op: &Op) {
        if op.kind != OpType::Invoke || op.f != ops::SCAN {
            return;
        }
        if let Some(range) = scan_range(&op.value) {
            self.ranges.push(range);
        }
    }

    /// The groups: overlapping ranges merged, sorted by start.
    pub fn into_groups(mut self) -> KeyGroups {
        self.ranges.sort();
        let mut merged: Vec<Range> = Vec::new();
        for (start, end) in self.ranges {
            if end.as_deref().is_some_and(|e| e <= start.as_str()) {
                continue; // empty: it reads no key
            }
            match merged.last_mut() {
                Some((_, last_end)) if overlaps(last_end.as_deref(), &start) => {
                    if last_end.is_some()
                        && end.as_deref().is_none_or(|e| Some(e) > last_end.as_deref())
                    {
                        *last_end = end;
                    }
                }
                _ => merged.push((start, end)),
            }
        }
        KeyGroups { ranges: merged }
    }
}

fn overlaps(end: Option<&str>, start: &str) -> bool {
    end.is_none_or(|e| start < e)
}

fn scan_range(v: &serde_json::Value) -> Option<Range> {
    let start = match v.get("start") {
        None | Some(serde_json::Value::Null) => String::new(),
        Some(s) => s.as_str()?.to_string(),
    };
    let end = match v.get("end") {
        None | Some(serde_json::Value::Null) => None,
        Some(e) => Some(e.as_str()?.to_string()).filter(|e| !e.is_empty()),
    };
    Some((start, end))
}

/// The merged scan ranges, each one key group.
pub struct KeyGroups {
    ranges: Vec<Range>,
}

impl KeyGroups {
    /// The merged range holding `key`, if any.
    fn range_of(&self, key: &str) -> Option<usize> {
        let i = self
            .ranges
            .partition_point(|(start, _)| start.as_str() <= key);
        let candidate = i.checked_sub(1)?;
        let (_, end) = &self.ranges[candidate];
        end.as_deref().is_none_or(|e| key < e).then_some(candidate)
    }

    /// The part (of `parts`) of an invoke: its scan range's group, its key's group, or —
    /// for an op with neither — the part of all such ops.
    fn part_of_invoke(&self, op: &Op, parts: usize) -> usize {
        let range = if op.f == ops::SCAN {
            scan_range(&op.value).and_then(|(start, _)| self.range_of(&start))
        } else {
            op.key.as_deref().and_then(|k| self.range_of(k))
        };
        match (range, op.key.as_deref()) {
            (Some(r), _) => r % parts,
            (None, Some(key)) => hash_part(key, parts),
            (None, None) => 0,
        }
    }

    /// Number of merged ranges.
    pub fn ranges(&self) -> usize {
        self.ranges.len()
    }
}

fn hash_part(key: &str, parts: usize) -> usize {
    let mut h = FxHasher::default();
    key.hash(&mut h);
    (h.finish() % parts as u64) as usize
}

/// Sends each client op to its part: an invoke by its group, a completion to its invoke's.
pub struct Router {
    groups: KeyGroups,
    parts: usize,
    pending: FxHashMap<u64, usize>,
}

impl Router {
    pub fn new(groups: KeyGroups, parts: usize) -> Router {
        Router {
            groups,
            parts: parts.max(1),
            pending: FxHashMap::default(),
        }
    }

    /// The part of client op `op` of `process`.
    pub fn part_of(&mut self, process: u64, op: &Op) -> usize {
        if op.kind == OpType::Invoke {
            let part = self.groups.part_of_invoke(op, self.parts);
            self.pending.insert(process, part);
            return part;
        }
        self.pending
            .remove(&process)
            .unwrap_or_else(|| self.groups.part_of_invoke(op, self.parts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Process;
    use serde_json::json;

    fn op(kind: OpType, f: &str, key: Option<&str>, value: serde_json::Value) -> Op {
        Op {
            index: 0,
            kind,
            process: Process::Client(1),
            f: f.into(),
            key: key.map(Into::into),
            value,
            time: 0,
            node: None,
            error: None,
            meta: None,
        }
    }

    fn scan(start: &str, end: Option<&str>) -> Op {
        op(
            OpType::Invoke,
            ops::SCAN,
            None,
            json!({"start": start, "end": end}),
        )
    }

    #[test]
    fn overlapping_scan_ranges_merge_and_keys_inside_join_them() {
        let mut ranges = ScanRanges::default();
        for s in [
            scan("b", Some("d")),
            scan("c", Some("f")),
            scan("x", None),
            scan("g", Some("h")),
        ] {
            ranges.note(&s);
        }
        let groups = ranges.into_groups();
        assert_eq!(groups.ranges(), 3, "[b,f), [g,h), [x,∞)");
        assert_eq!(groups.range_of("b"), Some(0));
        assert_eq!(groups.range_of("e"), Some(0));
        assert_eq!(groups.range_of("f"), None);
        assert_eq!(groups.range_of("g"), Some(1));
        assert_eq!(groups.range_of("zzz"), Some(2));
        assert_eq!(groups.range_of("a"), None);
    }

    #[test]
    fn a_completion_goes_where_its_invoke_went() {
        let mut ranges = ScanRanges::default();
        ranges.note(&scan("k/", Some("k0")));
        let mut router = Router::new(ranges.into_groups(), 7);
        let in_range = router.part_of(1, &op(OpType::Invoke, ops::ADD, Some("k/1"), json!(1)));
        let the_scan = router.part_of(2, &scan("k/", Some("k0")));
        assert_eq!(
            in_range, the_scan,
            "a key inside a scan's range is in the scan's part"
        );
        let done = router.part_of(2, &op(OpType::Ok, ops::SCAN, None, json!([])));
        assert_eq!(done, the_scan);
        let w = router.part_of(3, &op(OpType::Invoke, ops::WRITE, Some("r/9"), json!(1)));
        let w_done = router.part_of(3, &op(OpType::Ok, ops::WRITE, None, json!(1)));
        assert_eq!(w, w_done);
        let again = router.part_of(4, &op(OpType::Invoke, ops::READ, Some("r/9"), json!(null)));
        assert_eq!(again, w, "every op of a key lands in one part");
    }
}

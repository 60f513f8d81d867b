//! The life of one set element, as Jepsen's set-full analysis tracks it, and the outcome
//! derived from it.
//!
//! Timeline of an element: its `add` is invoked; it becomes *known* at the completion
//! of an `ok` add or of the first successful read that observes it, whichever comes first;
//! every successful read that covers it afterwards either observes it (*present*) or not
//! (*absent*), and is remembered by its **invocation**. Then:
//! - **stable**: some read observed it and no read that observed it is older than the
//!   latest read that missed it (the latest read invoked saw it);
//! - **lost**: it was known, and the latest read that missed it was invoked after both
//!   the latest read that saw it and the moment it became known;
//! - **never-read**: neither (no read began after it was known, or it was never known);
//! - **stale** (a stable element): a read invoked after it became known missed it,
//!   i.e. its stable latency is positive.
//!
//! An element added more than once has its adds merged ([`AddStatus`]): acknowledged if
//! any ended `ok`, indeterminate if any ended `info` or never completed, failed only if
//! every one failed; it is known from the earliest `ok` completion.

use crate::history::{OpType, Text};

/// A point in the history: an op's `index` and `time`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    pub index: u64,
    pub time: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Stable,
    Lost,
    NeverRead,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Stable => "stable",
            Outcome::Lost => "lost",
            Outcome::NeverRead => "never-read",
        }
    }
}

/// What all the adds of one element came to, merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddStatus {
    /// Some add ended `ok`.
    Acknowledged,
    /// None ended `ok`, and some ended `info` or never completed.
    Indeterminate,
    /// Every add ended `fail`.
    Failed,
}

/// What is known about one element.
#[derive(Debug, Clone)]
pub struct Element {
    /// The element's value when it has no key (a keyed element is its key).
    value: Option<serde_json::Value>,
    pub key: Option<Text>,
    /// The invocation of its first add.
    pub add_invoke: Point,
    /// Completion index of the earliest add of each outcome.
    first_ok: Option<u64>,
    first_info: Option<u64>,
    first_fail: Option<u64>,
    /// Some add never completed (set once the history has ended).
    never_completed: bool,
    /// Invoke index of the earliest add that did not end `fail`: before it, nothing could
    /// have put the element in the set.
    first_live_invoke: Option<u64>,
    pub known: Option<Point>,
    pub last_present: Option<Point>,
    pub last_absent: Option<Point>,
    /// Index of the first read completion that observed it.
    pub first_observed: Option<u64>,
}

impl Element {
    /// An element with `key`, else identified by `value`.
    pub fn new(value: Option<serde_json::Value>, key: Option<Text>, add_invoke: Point) -> Self {
        Element {
            value,
            key,
            add_invoke,
            first_ok: None,
            first_info: None,
            first_fail: None,
            never_completed: false,
            first_live_invoke: None,
            known: None,
            last_present: None,
            last_absent: None,
            first_observed: None,
        }
    }

    /// How the element is shown in results: its key, or its value.
    pub fn display(&self) -> serde_json::Value {
        match (&self.key, &self.value) {
            (Some(k), _) => serde_json::Value::String(k.to_string()),
            (None, Some(v)) => v.clone(),
            (None, None) => serde_json::Value::Null,
        }
    }

    /// One of its adds, invoked at `invoked`, completed at `done` as `kind`.
    pub fn add_completed(&mut self, kind: OpType, invoked: Point, done: Point) {
        let first = match kind {
            OpType::Ok => &mut self.first_ok,
            OpType::Info => &mut self.first_info,
            OpType::Fail => &mut self.first_fail,
            OpType::Invoke => return,
        };
        first.get_or_insert(done.index);
        if kind != OpType::Fail {
            self.note_live_invoke(invoked);
        }
        if kind == OpType::Ok && self.known.is_none() {
            self.known = Some(done);
        }
    }

    /// One of its adds, invoked at `invoked`, had not completed when the history ended.
    pub fn add_never_completed(&mut self, invoked: Point) {
        self.never_completed = true;
        self.note_live_invoke(invoked);
    }

    fn note_live_invoke(&mut self, invoked: Point) {
        if self.first_live_invoke.is_none_or(|i| invoked.index < i) {
            self.first_live_invoke = Some(invoked.index);
        }
    }

    /// The merged outcome of its adds (once the history has ended).
    pub fn add_status(&self) -> AddStatus {
        if self.first_ok.is_some() {
            AddStatus::Acknowledged
        } else if self.first_info.is_some() || self.never_completed {
            AddStatus::Indeterminate
        } else {
            AddStatus::Failed
        }
    }

    /// The completion that stands for the merged outcome: the earliest `ok`, else the
    /// earliest `info` (none when the indeterminate adds never completed), else the
    /// earliest `fail`.
    pub fn add_completion(&self) -> Option<(OpType, u64)> {
        match self.add_status() {
            AddStatus::Acknowledged => self.first_ok.map(|i| (OpType::Ok, i)),
            AddStatus::Indeterminate => self.first_info.map(|i| (OpType::Info, i)),
            AddStatus::Failed => self.first_fail.map(|i| (OpType::Fail, i)),
        }
    }

    /// A successful read invoked at `inv` and completed at `done` observed the element.
    pub fn read_present(&mut self, inv: Point, done: Point) {
        self.known.get_or_insert(done);
        self.first_observed.get_or_insert(done.index);
        if self.last_present.is_none_or(|p| p.index < inv.index) {
            self.last_present = Some(inv);
        }
    }

    /// A successful read invoked at `inv`, covering the element, did not observe it.
    pub fn read_absent(&mut self, inv: Point) {
        if self.last_absent.is_none_or(|p| p.index < inv.index) {
            self.last_absent = Some(inv);
        }
    }

    pub fn outcome(&self) -> Outcome {
        let idx = |p: Option<Point>| p.map_or(-1, |p| p.index as i128);
        let (present, absent) = (idx(self.last_present), idx(self.last_absent));
        if self.last_present.is_some() && absent < present {
            return Outcome::Stable;
        }
        let lost = self.known.is_some_and(|known| {
            self.last_absent.is_some() && present < absent && (known.index as i128) < absent
        });
        if lost {
            Outcome::Lost
        } else {
            Outcome::NeverRead
        }
    }

    /// Nanoseconds from known to the moment after which every read saw it (stable only).
    pub fn stable_latency(&self) -> Option<u64> {
        if self.outcome() != Outcome::Stable {
            return None;
        }
        let stable_time = self.last_absent.map_or(0, |a| a.time + 1);
        Some(stable_time.saturating_sub(self.known?.time))
    }

    /// Nanoseconds from known to the moment after which no read saw it (lost only).
    pub fn lost_latency(&self) -> Option<u64> {
        if self.outcome() != Outcome::Lost {
            return None;
        }
        let lost_time = self.last_present.map_or(0, |p| p.time + 1);
        Some(lost_time.saturating_sub(self.known?.time))
    }

    pub fn is_stale(&self) -> bool {
        self.stable_latency().is_some_and(|l| l > 0)
    }

    /// Its adds were indeterminate (none acknowledged, some crashed or never completed)
    /// and a read observed it.
    pub fn is_recovered(&self) -> bool {
        self.add_status() == AddStatus::Indeterminate && self.first_observed.is_some()
    }

    /// A read observed it although every add of it invoked before that read completed
    /// definitely failed (so every add failed, or the only ones that could have succeeded
    /// began after the read had returned it).
    pub fn failed_but_observed(&self) -> bool {
        match (self.first_observed, self.first_live_invoke) {
            (Some(read), Some(live)) => read < live,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(index: u64) -> Point {
        Point {
            index,
            time: index * 10,
        }
    }

    fn added_ok() -> Element {
        let mut e = Element::new(Some(serde_json::json!(1)), None, p(0));
        e.add_completed(OpType::Ok, p(0), p(1));
        e
    }

    #[test]
    fn stable_when_the_latest_read_saw_it() {
        let mut e = added_ok();
        e.read_present(p(2), p(3));
        assert_eq!(e.outcome(), Outcome::Stable);
        assert_eq!(e.stable_latency(), Some(0));
        assert!(!e.is_stale());
    }

    #[test]
    fn stale_when_a_read_after_known_missed_it_before_it_showed_up() {
        let mut e = added_ok();
        e.read_absent(p(2));
        e.read_present(p(4), p(5));
        assert_eq!(e.outcome(), Outcome::Stable);
        assert_eq!(e.stable_latency(), Some(21 - 10));
        assert!(e.is_stale());
    }

    #[test]
    fn lost_when_a_later_read_misses_it() {
        let mut e = added_ok();
        e.read_present(p(2), p(3));
        e.read_absent(p(4));
        assert_eq!(e.outcome(), Outcome::Lost);
        assert_eq!(e.lost_latency(), Some(21 - 10));
    }

    #[test]
    fn a_read_invoked_before_known_missing_it_is_not_loss() {
        // The read began before the add completed; it may have linearized before the add.
        let mut e = Element::new(Some(serde_json::json!(1)), None, p(0));
        e.read_absent(p(1));
        e.add_completed(OpType::Ok, p(0), p(2));
        assert_eq!(e.outcome(), Outcome::NeverRead);
    }

    #[test]
    fn unknown_crashed_add_never_seen_is_never_read_not_lost() {
        let mut e = Element::new(Some(serde_json::json!(1)), None, p(0));
        e.add_completed(OpType::Info, p(0), p(1));
        e.read_absent(p(2));
        assert_eq!(e.outcome(), Outcome::NeverRead);
        assert!(!e.is_recovered());
        e.read_present(p(3), p(4));
        assert!(e.is_recovered());
    }
}

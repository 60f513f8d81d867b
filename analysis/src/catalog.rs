//! The route catalog's timeline as the catalog watcher saw it.
//!
//! The watcher records one `info` entry (process `watcher`, f `catalog`) per catalog
//! version it observes, each holding the whole catalog ([`CatalogSnapshot`]) and the time of
//! the observation. [`CatalogTimeline`] parses those entries once and answers the questions
//! the checkers ask, in logarithmic time so that a million-op history stays cheap:
//! which catalog was in force at (or strictly before) a time, which route held a key in a
//! given catalog, and how routes descend from one another.

use crate::history::{events, CatalogSnapshot, History, Op, Process, RouteRecord, SplitJobRecord};
use rustc_hash::{FxHashMap, FxHashSet};

/// One watcher observation: the catalog at one version and when it was observed.
#[derive(Debug, Clone)]
pub struct CatalogObservation {
    /// `index` of the watcher entry in the history.
    pub op_index: u64,
    /// Time of the observation (ns since the start of the test).
    pub time: u64,
    /// The catalog; its routes are sorted by `start` (byte order).
    pub snapshot: CatalogSnapshot,
}

impl CatalogObservation {
    /// The route whose `[start, end)` contains `key`, if any (binary search; an empty
    /// `end` is unbounded).
    pub fn route_for(&self, key: &str) -> Option<&RouteRecord> {
        route_containing(&self.snapshot.routes, key)
    }
}

/// The route of `routes` (sorted by `start`) containing `key`.
pub fn route_containing<'r>(routes: &'r [RouteRecord], key: &str) -> Option<&'r RouteRecord> {
    let after = routes.partition_point(|r| r.start.as_str() <= key);
    let candidate = routes.get(after.checked_sub(1)?)?;
    route_contains(candidate, key).then_some(candidate)
}

/// Whether `key` lies in `[route.start, route.end)`.
pub fn route_contains(route: &RouteRecord, key: &str) -> bool {
    route.start.as_str() <= key && (route.end.is_empty() || key < route.end.as_str())
}

/// The split jobs of `jobs` whose range holds `key`, which lies in `route` of the same
/// observation — *the job for the range* of `docs/checkers.md`. A job splits the route
/// `route_id` at `split_key`, and the half that moves is `[split_key, end)`. It covers the
/// key when either
/// - it splits `route` itself and `split_key <= key` (the moving half is not yet a route
///   of its own: elastickv keeps the source route until cutover), or
/// - it split an ancestor of `route` (through `parent` links) and `route` lies in the moving
///   half, `split_key <= route.start` (refkv creates the children at once).
///
/// A job of another route, even of the same group, never covers the key.
pub fn jobs_for_range<'a>(
    jobs: &'a [SplitJobRecord],
    route: &'a RouteRecord,
    key: &'a str,
    lineage: &'a Lineage,
) -> impl Iterator<Item = &'a SplitJobRecord> + 'a {
    jobs.iter().filter(move |j| {
        if j.route_id == route.id {
            j.split_key.as_str() <= key
        } else {
            j.split_key <= route.start && lineage.descends_from(route.id, j.route_id)
        }
    })
}

/// A watcher entry whose value is not a catalog snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogParseError {
    pub op_index: u64,
    pub message: String,
}

/// Every catalog observation of a history, in history order.
#[derive(Debug, Clone, Default)]
pub struct CatalogTimeline {
    pub observations: Vec<CatalogObservation>,
    /// Watcher entries that could not be read as a snapshot (reported, not fatal).
    pub errors: Vec<CatalogParseError>,
    /// `observations` positions sorted by time (identical to history order unless the
    /// history's clock went backwards).
    by_time: Vec<usize>,
}

impl CatalogTimeline {
    /// Collect the watcher's `catalog` entries of `history`.
    pub fn from_history(history: &History) -> Self {
        let mut observations = Vec::new();
        let mut errors = Vec::new();
        for op in history.ops.iter().filter(|op| is_catalog_event(op)) {
            match serde_json::from_value::<CatalogSnapshot>(op.value.clone()) {
                Ok(mut snapshot) => {
                    snapshot.routes.sort_by(|a, b| a.start.cmp(&b.start));
                    observations.push(CatalogObservation {
                        op_index: op.index,
                        time: op.time,
                        snapshot,
                    });
                }
                Err(e) => errors.push(CatalogParseError {
                    op_index: op.index,
                    message: format!("watcher entry {} is not a catalog snapshot: {e}", op.index),
                }),
            }
        }
        let mut by_time: Vec<usize> = (0..observations.len()).collect();
        by_time.sort_by_key(|&i| observations[i].time);
        CatalogTimeline {
            observations,
            errors,
            by_time,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.observations.is_empty()
    }

    /// The latest observation made strictly before `time` (proof that this catalog
    /// version existed before anything that starts at `time`).
    pub fn observed_before(&self, time: u64) -> Option<&CatalogObservation> {
        let n = self
            .by_time
            .partition_point(|&i| self.observations[i].time < time);
        n.checked_sub(1)
            .map(|p| &self.observations[self.by_time[p]])
    }

    /// The catalog in force at `time`: the latest observation at or before it, or the
    /// first observation when `time` precedes all of them.
    pub fn in_force_at(&self, time: u64) -> Option<&CatalogObservation> {
        let n = self
            .by_time
            .partition_point(|&i| self.observations[i].time <= time);
        let p = n.saturating_sub(1);
        self.by_time.get(p).map(|&i| &self.observations[i])
    }

    /// Observations in time order.
    pub fn in_time_order(&self) -> impl Iterator<Item = &CatalogObservation> {
        self.by_time.iter().map(|&i| &self.observations[i])
    }

    /// What is known about every route id ever observed.
    pub fn lineage(&self) -> Lineage {
        Lineage::from_observations(self.in_time_order())
    }
}

/// Whether `op` is a catalog watcher observation.
pub fn is_catalog_event(op: &Op) -> bool {
    op.process == Process::Watcher && op.f == events::CATALOG
}

/// Parent links and first sightings of every route id observed.
#[derive(Debug, Clone, Default)]
pub struct Lineage {
    /// Route id → parent route id, as reported by the catalog.
    pub parent: FxHashMap<u64, u64>,
    /// Route id → the record as first observed, with that observation's op index and time.
    pub first_seen: FxHashMap<u64, (RouteRecord, u64, u64)>,
    /// Route ids present in the first observation.
    pub initial: FxHashSet<u64>,
}

impl Lineage {
    fn from_observations<'o>(observations: impl Iterator<Item = &'o CatalogObservation>) -> Self {
        let mut lineage = Lineage::default();
        for (n, obs) in observations.enumerate() {
            for route in &obs.snapshot.routes {
                if n == 0 {
                    lineage.initial.insert(route.id);
                }
                if let Some(p) = route.parent {
                    if p != route.id {
                        lineage.parent.entry(route.id).or_insert(p);
                    }
                }
                lineage
                    .first_seen
                    .entry(route.id)
                    .or_insert_with(|| (route.clone(), obs.op_index, obs.time));
            }
        }
        lineage
    }

    /// Whether `route` is `ancestor` or descends from it through parent links.
    pub fn descends_from(&self, route: u64, ancestor: u64) -> bool {
        let mut current = route;
        // Bounded walk: a corrupt catalog could contain a parent cycle.
        for _ in 0..=self.parent.len() {
            if current == ancestor {
                return true;
            }
            match self.parent.get(&current) {
                Some(&p) => current = p,
                None => return false,
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(id: u64, start: &str, end: &str) -> RouteRecord {
        RouteRecord {
            id,
            start: start.into(),
            end: end.into(),
            group: 1,
            state: "ACTIVE".into(),
            epoch: 1,
            parent: None,
        }
    }

    #[test]
    fn route_lookup_respects_half_open_ranges_and_unbounded_end() {
        let routes = vec![r(1, "", "m"), r(2, "m", "t"), r(3, "t", "")];
        assert_eq!(route_containing(&routes, "").map(|r| r.id), Some(1));
        assert_eq!(route_containing(&routes, "l\u{ff}").map(|r| r.id), Some(1));
        assert_eq!(route_containing(&routes, "m").map(|r| r.id), Some(2));
        assert_eq!(route_containing(&routes, "zzz").map(|r| r.id), Some(3));
        let gap = vec![r(1, "", "c"), r(2, "d", "")];
        assert_eq!(route_containing(&gap, "c1"), None);
    }

    #[test]
    fn descends_from_follows_parents_and_survives_cycles() {
        let mut l = Lineage::default();
        l.parent.insert(3, 2);
        l.parent.insert(2, 1);
        assert!(l.descends_from(3, 1));
        assert!(l.descends_from(1, 1));
        assert!(!l.descends_from(1, 3));
        l.parent.insert(1, 3);
        assert!(!l.descends_from(3, 9));
    }
}

//! Which route owned a key at a given time, from the catalog snapshots the watcher
//! recorded; and the route table (lineage, groups, lifetime) the heat map draws.
//!
//! Snapshots arrive in history order, so the snapshot in force at an op's completion has
//! normally been seen already when the op completes: the route is resolved on the fly and
//! only a route number is kept per op. Ops that complete before the first snapshot are
//! resolved against the first snapshot once it arrives.

use super::model::{CatalogEvent, RouteInfo, NO_ROUTE};
use analysis::history::CatalogSnapshot;
use std::collections::HashMap;

/// At most this many keys wait for the first catalog snapshot; beyond it ops without a
/// catalog are simply not placed on the heat map (a run without a watcher has none).
const MAX_WAITING_KEYS: usize = 2_000_000;

/// One snapshot reduced to what a lookup needs: route starts (sorted) and ends.
struct Layout {
    time: u64,
    starts: Vec<String>,
    ends: Vec<String>,
    route_slots: Vec<u32>,
}

impl Layout {
    fn lookup(&self, key: &str) -> u32 {
        let pos = self.starts.partition_point(|s| s.as_str() <= key);
        if pos == 0 {
            return NO_ROUTE;
        }
        let end = &self.ends[pos - 1];
        if end.is_empty() || key < end.as_str() {
            self.route_slots[pos - 1]
        } else {
            NO_ROUTE
        }
    }
}

/// Builds the route table and maps (time, key) to a route slot.
#[derive(Default)]
pub struct RouteResolver {
    layouts: Vec<Layout>,
    routes: Vec<RouteInfo>,
    slot_of: HashMap<u64, u32>,
    /// (span position, key) of ops that completed before any snapshot.
    waiting: Vec<(usize, String)>,
    pub events: Vec<CatalogEvent>,
}

impl RouteResolver {
    /// Records a snapshot observed at `time` (history entry `index`).
    pub fn add_snapshot(&mut self, time: u64, index: u64, snapshot: CatalogSnapshot) {
        let present: Vec<u64> = snapshot.routes.iter().map(|r| r.id).collect();
        for r in &mut self.routes {
            if r.gone_at.is_none() && !present.contains(&r.id) {
                r.gone_at = Some(time);
            }
        }
        let mut sorted = snapshot.routes.clone();
        sorted.sort_by(|a, b| a.start.cmp(&b.start));
        let mut layout = Layout {
            time,
            starts: Vec::new(),
            ends: Vec::new(),
            route_slots: Vec::new(),
        };
        for record in &sorted {
            let slot = self.slot_for(record, time);
            layout.starts.push(record.start.clone());
            layout.ends.push(record.end.clone());
            layout.route_slots.push(slot);
        }
        self.layouts.push(layout);
        self.events.push(CatalogEvent {
            time,
            index,
            snapshot,
        });
    }

    fn slot_for(&mut self, record: &analysis::history::RouteRecord, time: u64) -> u32 {
        if let Some(&slot) = self.slot_of.get(&record.id) {
            let info = &mut self.routes[slot as usize];
            info.last_seen = time;
            info.gone_at = None;
            // Key bounds of a route id do not change in refkv; keep the latest anyway.
            info.start.clone_from(&record.start);
            info.end.clone_from(&record.end);
            if info.groups.last() != Some(&record.group) {
                info.groups.push(record.group);
            }
            return slot;
        }
        let slot = self.routes.len() as u32;
        self.routes.push(RouteInfo {
            id: record.id,
            start: record.start.clone(),
            end: record.end.clone(),
            parent: record.parent,
            groups: vec![record.group],
            first_seen: time,
            last_seen: time,
            gone_at: None,
        });
        self.slot_of.insert(record.id, slot);
        slot
    }

    /// The route slot owning `key` at `time`, or [`NO_ROUTE`]. Before the first snapshot the
    /// key is remembered under `span` and resolved by [`RouteResolver::finish`].
    pub fn resolve(&mut self, span: usize, time: u64, key: &str) -> u32 {
        if self.layouts.is_empty() {
            if self.waiting.len() < MAX_WAITING_KEYS {
                self.waiting.push((span, key.to_string()));
            }
            return NO_ROUTE;
        }
        // Snapshots are in history order; their times normally increase too.
        let pos = self.layouts.partition_point(|l| l.time <= time);
        let layout = &self.layouts[pos.saturating_sub(1)];
        layout.lookup(key)
    }

    /// Resolves the ops that completed before the first snapshot (against the first
    /// snapshot) and returns the route table and the catalog events.
    pub fn finish(self, mut assign: impl FnMut(usize, u32)) -> (Vec<RouteInfo>, Vec<CatalogEvent>) {
        if let Some(first) = self.layouts.first() {
            for (span, key) in &self.waiting {
                assign(*span, first.lookup(key));
            }
        }
        (self.routes, self.events)
    }
}

/// A change between consecutive catalog snapshots worth marking on a plot.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CatalogChange {
    pub time: u64,
    pub index: u64,
    pub version: u64,
    /// e.g. "split r1 → r2, r3" or "move r3 g1→g2"; "catalog v7" when nothing else is known.
    pub label: String,
}

/// The version changes of the catalog, labelled with the splits and moves they contain.
pub fn changes(events: &[CatalogEvent]) -> Vec<CatalogChange> {
    let mut out = Vec::new();
    let mut previous: Option<&CatalogSnapshot> = None;
    for event in events {
        let snap = &event.snapshot;
        match previous {
            Some(prev) if prev.version == snap.version => {}
            Some(prev) => out.push(CatalogChange {
                time: event.time,
                index: event.index,
                version: snap.version,
                label: describe_change(prev, snap),
            }),
            None => {}
        }
        previous = Some(snap);
    }
    out
}

fn describe_change(prev: &CatalogSnapshot, next: &CatalogSnapshot) -> String {
    let before: HashMap<u64, u64> = prev.routes.iter().map(|r| (r.id, r.group)).collect();
    let mut parts = Vec::new();
    let mut children: Vec<(u64, Vec<u64>)> = Vec::new();
    for route in &next.routes {
        match before.get(&route.id) {
            None => {
                let parent = route.parent.unwrap_or(u64::MAX);
                match children.iter_mut().find(|(p, _)| *p == parent) {
                    Some((_, kids)) => kids.push(route.id),
                    None => children.push((parent, vec![route.id])),
                }
            }
            Some(&group) if group != route.group => {
                parts.push(format!("move r{} g{}→g{}", route.id, group, route.group));
            }
            Some(_) => {}
        }
    }
    for (parent, kids) in children {
        let kids: Vec<String> = kids.iter().map(|k| format!("r{k}")).collect();
        if parent == u64::MAX {
            parts.push(format!("new {}", kids.join(", ")));
        } else {
            parts.push(format!("split r{parent} → {}", kids.join(", ")));
        }
    }
    if parts.is_empty() {
        format!("catalog v{}", next.version)
    } else {
        format!("v{}: {}", next.version, parts.join("; "))
    }
}

/// Route slots in lineage order for the heat map rows: roots by start key, each followed
/// by its descendants (children by start key), so a split shows its children right below
/// the hot parent.
pub fn lineage_order(routes: &[RouteInfo]) -> Vec<usize> {
    let known: HashMap<u64, usize> = routes.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
    let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut roots = Vec::new();
    for (slot, route) in routes.iter().enumerate() {
        match route.parent.and_then(|p| known.get(&p)) {
            Some(&parent) if parent != slot => children.entry(parent).or_default().push(slot),
            _ => roots.push(slot),
        }
    }
    let by_start = |a: &usize, b: &usize| {
        routes[*a]
            .start
            .cmp(&routes[*b].start)
            .then(routes[*a].id.cmp(&routes[*b].id))
    };
    roots.sort_by(by_start);
    let mut order = Vec::with_capacity(routes.len());
    let mut stack: Vec<usize> = roots.into_iter().rev().collect();
    let mut visited = vec![false; routes.len()];
    while let Some(slot) = stack.pop() {
        if std::mem::replace(&mut visited[slot], true) {
            continue;
        }
        order.push(slot);
        if let Some(kids) = children.get_mut(&slot) {
            kids.sort_by(by_start);
            stack.extend(kids.iter().rev().copied());
        }
    }
    // Parent cycles (corrupt lineage) leave routes unvisited: append them in table order.
    order.extend((0..routes.len()).filter(|s| !visited[*s]));
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::history::RouteRecord;

    fn route(id: u64, start: &str, end: &str, group: u64, parent: Option<u64>) -> RouteRecord {
        RouteRecord {
            id,
            start: start.into(),
            end: end.into(),
            group,
            state: "ACTIVE".into(),
            epoch: 1,
            parent,
        }
    }

    fn snapshot(version: u64, routes: Vec<RouteRecord>) -> CatalogSnapshot {
        CatalogSnapshot {
            version,
            routes,
            jobs: vec![],
        }
    }

    #[test]
    fn resolves_keys_against_the_snapshot_in_force() {
        let mut r = RouteResolver::default();
        assert_eq!(r.resolve(0, 5, "k1"), NO_ROUTE, "no snapshot yet: deferred");
        r.add_snapshot(10, 1, snapshot(1, vec![route(1, "", "", 1, None)]));
        r.add_snapshot(
            100,
            2,
            snapshot(
                2,
                vec![route(2, "", "m", 1, Some(1)), route(3, "m", "", 2, Some(1))],
            ),
        );
        assert_eq!(r.resolve(1, 50, "z"), 0, "before the split: parent r1");
        assert_eq!(r.resolve(2, 150, "a"), 1, "after: left child r2");
        assert_eq!(
            r.resolve(3, 150, "m"),
            2,
            "split key belongs to the right child"
        );
        let mut deferred = Vec::new();
        let (routes, events) = r.finish(|span, slot| deferred.push((span, slot)));
        assert_eq!(deferred, vec![(0, 0)]);
        assert_eq!(routes.len(), 3);
        assert_eq!(routes[0].gone_at, Some(100));
        assert_eq!(events.len(), 2);
    }

    #[test]
    fn labels_splits_and_moves_and_orders_by_lineage() {
        let a = snapshot(1, vec![route(1, "", "", 1, None)]);
        let b = snapshot(
            2,
            vec![route(3, "m", "", 1, Some(1)), route(2, "", "m", 1, Some(1))],
        );
        let c = snapshot(
            3,
            vec![route(3, "m", "", 2, Some(1)), route(2, "", "m", 1, Some(1))],
        );
        let mut r = RouteResolver::default();
        for (i, s) in [a, b, c].into_iter().enumerate() {
            r.add_snapshot(i as u64 * 10, i as u64, s);
        }
        let (routes, events) = r.finish(|_, _| {});
        let labels: Vec<String> = changes(&events).into_iter().map(|c| c.label).collect();
        assert_eq!(labels, vec!["v2: split r1 → r3, r2", "v3: move r3 g1→g2"]);
        let ids: Vec<u64> = lineage_order(&routes)
            .into_iter()
            .map(|s| routes[s].id)
            .collect();
        assert_eq!(ids, vec![1, 2, 3]);
    }
}

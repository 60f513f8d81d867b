//! The detector's and scheduler's view of the route catalog: plain data the server builds
//! from its catalog on every cycle.

use serde::{Deserialize, Serialize};

/// One route of the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteInfo {
    pub route_id: u64,
    /// Inclusive start key.
    pub start: Vec<u8>,
    /// Exclusive end key; empty means unbounded.
    pub end: Vec<u8>,
    pub group_id: u64,
    /// True only for ACTIVE routes; fenced or migrating routes are never split.
    pub active: bool,
    /// The route this one was split from, if any (lineage: children inherit a cooldown).
    pub parent_route_id: Option<u64>,
}

/// The catalog as of one version, plus every Raft group that can receive a route.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogView {
    pub version: u64,
    pub routes: Vec<RouteInfo>,
    /// All group ids, including groups that own no route yet.
    pub group_ids: Vec<u64>,
}

impl CatalogView {
    pub fn route(&self, route_id: u64) -> Option<&RouteInfo> {
        self.routes.iter().find(|r| r.route_id == route_id)
    }

    /// Every group id named by `group_ids` or by a route, sorted, without duplicates.
    pub fn all_groups(&self) -> Vec<u64> {
        let mut groups: Vec<u64> = self
            .group_ids
            .iter()
            .copied()
            .chain(self.routes.iter().map(|r| r.group_id))
            .collect();
        groups.sort_unstable();
        groups.dedup();
        groups
    }
}

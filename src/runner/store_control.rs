//! The nemesis's view of the store under test, through its client API: group leaders from
//! RaftAdmin Status, the group serving the hottest key from the route catalog, and forced
//! splits with the catalog-version CAS. The hot keys come from the history itself (the most
//! frequent keys among recent invocations); a split goes to the hottest one whose route can
//! still be split at it.
//!
//! Where the store keeps the client's keys elsewhere ([`StoreKeys`] not the identity: the
//! DynamoDB items of refkv and elastickv), a split is *aimed*: at the store key of a key of
//! a transaction in flight (the most recently invoked first), else at the store key of a hot
//! key, so that it cuts the route that really holds the items.

use super::sink::JsonlSink;
use analysis::catalog::route_contains;
use analysis::history::store_keys::StoreKeys;
use analysis::history::{
    CatalogSnapshot, JobPhase, RouteRecord, SplitAnswer, SplitDetail, SplitJobRecord,
};
use futures::future::BoxFuture;
use futures::FutureExt;
use nemesis::store_control::{HoldCommand, StaleWriteError, StaleWriteResult, TxnInFlight};
use nemesis::{SplitOutcome, StoreControl};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use workloads::client::{
    CallResult, Certainty, Connector, KvTarget, Lacking, NodeEndpoint, SplitJobs, SplitReply,
    SplitRequest,
};
use workloads::CallError;

pub struct ClientStoreControl {
    nodes: Vec<NodeEndpoint>,
    connector: Arc<dyn Connector>,
    groups: Vec<u64>,
    sink: Arc<JsonlSink>,
    /// Whether the store has a route catalog (its target's `Reports::catalog`): one that has
    /// none (etcd, Redis) is never asked for it.
    has_catalog: bool,
    /// Where the store keeps the client's keys: what a split is aimed at.
    store_keys: StoreKeys,
    /// The node that answered last: asked first next time, so that a poll during a fault
    /// does not wait out a dead or frozen node on every call.
    answered: AtomicUsize,
}

/// How long the catalog is asked for before a turn gives up on it (a leader election after
/// a kill or partition takes a second or two).
const CATALOG_PATIENCE: Duration = Duration::from_secs(3);
const CATALOG_RETRY: Duration = Duration::from_millis(250);
/// How long one node may take to answer a read of the catalog or of a job before the next
/// node is asked: a node cut off from the catalog leader answers only at the client's call
/// timeout, and a phase poll stuck that long misses phases that last a second.
const READ_CALL_LIMIT: Duration = Duration::from_millis(500);

/// `call`, or a timeout error once [`READ_CALL_LIMIT`] has passed.
async fn within_limit<T>(call: BoxFuture<'_, CallResult<T>>) -> CallResult<T> {
    match tokio::time::timeout(READ_CALL_LIMIT, call).await {
        Ok(result) => result,
        Err(_) => Err(CallError::new(
            Certainty::Indeterminate,
            "timed-out",
            "no answer within the store control's read limit",
        )),
    }
}

impl ClientStoreControl {
    pub fn new(
        nodes: Vec<NodeEndpoint>,
        connector: Arc<dyn Connector>,
        groups: Vec<u64>,
        sink: Arc<JsonlSink>,
        has_catalog: bool,
    ) -> ClientStoreControl {
        ClientStoreControl {
            nodes,
            connector,
            groups,
            sink,
            has_catalog,
            store_keys: StoreKeys::Identity,
            answered: AtomicUsize::new(0),
        }
    }

    /// Aims splits at the store keys of `store_keys` (the identity by default).
    pub fn with_store_keys(self, store_keys: StoreKeys) -> ClientStoreControl {
        ClientStoreControl { store_keys, ..self }
    }

    /// The keys a split goes to, best first (as store keys), and the transactions in flight
    /// with their store keys.
    fn split_candidates(&self) -> (Vec<String>, Vec<(u64, Vec<String>)>) {
        let in_flight = self.sink.in_flight_txns();
        let hot = self.sink.hot_keys();
        if self.store_keys.is_identity() {
            return (hot, in_flight);
        }
        aimed_candidates(&self.store_keys, &hot, in_flight)
    }

    /// A client per node, the one that answered last first; each with its node's index.
    fn clients(&self) -> Vec<(usize, Arc<dyn KvTarget>)> {
        let first = self.answered.load(Ordering::Relaxed);
        let n = self.nodes.len();
        (0..n)
            .map(|i| (first + i) % n)
            .filter_map(|i| self.connector.connect(&self.nodes[i]).ok().map(|c| (i, c)))
            .collect()
    }

    fn note_answer(&self, node: usize) {
        self.answered.store(node, Ordering::Relaxed);
    }

    /// Asks each node's split-job service in turn (the last to answer first) until one
    /// answers. `None` when none did, or at once when the store has no such service
    /// (`unimplemented`): the caller then reads the catalog's job list instead.
    async fn ask_split_jobs<T>(
        &self,
        call: impl for<'c> Fn(&'c dyn SplitJobs) -> BoxFuture<'c, CallResult<T>>,
    ) -> Option<T> {
        for (i, c) in self.clients() {
            match within_limit(call(c.as_split_jobs().unwrap_or(&Lacking))).await {
                Ok(answer) => {
                    self.note_answer(i);
                    return Some(answer);
                }
                Err(e) if e.tag == "unimplemented" => return None,
                Err(_) => continue,
            }
        }
        None
    }

    /// The catalog, from the first node that answers; asked again for a few seconds while
    /// none does. At once, for a store that has no catalog, the error that says so.
    async fn catalog(&self) -> Result<(CatalogSnapshot, Arc<dyn KvTarget>), &'static str> {
        if !self.has_catalog {
            return Err("the store has no route catalog to split");
        }
        let deadline = tokio::time::Instant::now() + CATALOG_PATIENCE;
        loop {
            for (i, c) in self.clients() {
                if let Ok(s) = within_limit(c.list_routes()).await {
                    self.note_answer(i);
                    return Ok((s, c));
                }
            }
            if tokio::time::Instant::now() + CATALOG_RETRY > deadline {
                return Err("no node answered ListRoutes");
            }
            tokio::time::sleep(CATALOG_RETRY).await;
        }
    }
}

/// The route whose `[start, end)` holds `key` (`end` empty = unbounded); `routes` need
/// not be sorted.
pub fn route_of<'a>(routes: &'a [RouteRecord], key: &str) -> Option<&'a RouteRecord> {
    routes.iter().find(|r| route_contains(r, key))
}

/// A same-group split point for `key` strictly inside `route`: the key's immediate
/// successor, or (when the key already ends its route) the key itself. The successor comes
/// first so that the key stays strictly inside the left child: a later move can then split
/// at the key and carry it away. Split at the key, it would start its route for good, and
/// every later move of it would carry only the keys after it (the early-cutover misses of
/// 2026-12-04: two of three moves in a run carried no workload key).
pub fn split_point(route: &RouteRecord, key: &str) -> Option<String> {
    let inside =
        |k: &str| route.start.as_str() < k && (route.end.is_empty() || k < route.end.as_str());
    let succ = format!("{key}\0");
    if inside(&succ) {
        return Some(succ);
    }
    inside(key).then(|| key.to_string())
}

/// The hottest of `hot` (hottest first) whose route can be split at it: the route, the
/// split point and the key's rank. A hot key alone in a one-key route (split off by an
/// earlier turn) gives way to the next one; the error says why none could. For a split
/// that `moves` its right child to another group, a hot key strictly inside its route comes
/// first: split at the key, the key moves; split at the successor of a key that starts its
/// route, only the keys after it would.
pub fn splittable_hot_key<'a>(
    routes: &'a [RouteRecord],
    hot: &[String],
    moves: bool,
) -> Result<(&'a RouteRecord, String, usize), &'static str> {
    if moves {
        for (rank, key) in hot.iter().enumerate() {
            if let Some(route) = route_of(routes, key).filter(|r| r.start.as_str() < key.as_str()) {
                return Ok((route, key.clone(), rank));
            }
        }
    }
    let mut why = "no route holds the hottest key";
    for (rank, key) in hot.iter().enumerate() {
        let Some(route) = route_of(routes, key) else {
            continue;
        };
        match split_point(route, key) {
            Some(split_key) => return Ok((route, split_key, rank)),
            None => why = "no hot key's route can be split at it",
        }
    }
    Err(why)
}

/// An aimed split's candidates as store keys, best first: the keys of the transactions in
/// flight (the most recently invoked first, each key once), then the hot keys; and the
/// transactions in flight with their keys as store keys. Keys whose store key is not known
/// are left out.
pub fn aimed_candidates(
    store_keys: &StoreKeys,
    hot: &[String],
    in_flight: Vec<(u64, Vec<String>)>,
) -> (Vec<String>, Vec<(u64, Vec<String>)>) {
    let mapped: Vec<(u64, Vec<String>)> = in_flight
        .into_iter()
        .map(|(i, keys)| {
            (
                i,
                keys.iter().filter_map(|k| store_keys.aim_key(k)).collect(),
            )
        })
        .collect();
    let mut candidates: Vec<String> = Vec::new();
    let newest_first = mapped
        .iter()
        .rev()
        .flat_map(|(_, keys)| keys.iter().cloned());
    let hot = hot.iter().filter_map(|k| store_keys.aim_key(k));
    for key in newest_first.chain(hot) {
        if !candidates.contains(&key) {
            candidates.push(key);
        }
    }
    (candidates, mapped)
}

/// The longest run of 0 bytes an aimed split point puts after a key that starts its route.
const MAX_AIM_DEPTH: usize = 64;

/// Where an aimed split cuts the route `[start, end)` holding the store key `key`, so that
/// every turn cuts the route holding it and none leaves it alone in a route no split can
/// cut again (elastickv routes a whole table by one key): at the key when it lies strictly
/// inside (it then starts the right child, which a move carries away); when it starts its
/// route, at `key` + `m` 0 bytes + a 1 byte with the fewest `m` that is still inside (the key
/// stays first in the left child, with room for the next turn's point below this one).
pub fn aimed_split_point(route: &RouteRecord, key: &str) -> Option<String> {
    let below_end = |k: &str| route.end.is_empty() || k < route.end.as_str();
    if route.start.as_str() < key && below_end(key) {
        return Some(key.to_string());
    }
    if route.start != key {
        return None;
    }
    (0..=MAX_AIM_DEPTH)
        .map(|m| format!("{key}{}\u{1}", "\0".repeat(m)))
        .find(|p| below_end(p))
}

/// The first of `candidates` (store keys, best first) whose route an aimed split can cut:
/// the route, the split point and the candidate's rank. A split that `moves` its right
/// child takes a candidate strictly inside its route first, so the item moves.
pub fn aimed_split<'a>(
    routes: &'a [RouteRecord],
    candidates: &[String],
    moves: bool,
) -> Result<(&'a RouteRecord, String, usize), &'static str> {
    let found: Vec<(usize, &RouteRecord, &String)> = candidates
        .iter()
        .enumerate()
        .filter_map(|(rank, key)| route_of(routes, key).map(|r| (rank, r, key)))
        .collect();
    if moves {
        for &(rank, route, key) in &found {
            if route.start.as_str() < key.as_str() {
                return Ok((route, key.clone(), rank));
            }
        }
    }
    for &(rank, route, key) in &found {
        if let Some(split) = aimed_split_point(route, key) {
            return Ok((route, split, rank));
        }
    }
    Err("no route holds a stored key of a transaction in flight or a hot key")
}

/// The invoke indices of the transactions in flight (`(index, keys)`) that touch a key of
/// `route`: the transactions a split of it lands in the middle of.
pub fn txns_in_route(in_flight: &[(u64, Vec<String>)], route: &RouteRecord) -> Vec<u64> {
    let inside =
        |k: &str| route.start.as_str() <= k && (route.end.is_empty() || k < route.end.as_str());
    in_flight
        .iter()
        .filter(|(_, keys)| keys.iter().any(|k| inside(k)))
        .map(|(i, _)| *i)
        .collect()
}

/// The store's answer to a split asked against catalog version `expected`, as the history
/// records it: accepted (its catalog version set) or refused (its error set).
fn answer_of(reply: CallResult<SplitReply>, expected: u64) -> SplitAnswer {
    let expected_catalog_version = Some(expected);
    match reply {
        Ok(reply) => SplitAnswer {
            catalog_version: Some(reply.catalog_version),
            job_id: reply.job_id,
            left: reply.left.map(|r| r.id),
            right: reply.right.map(|r| r.id),
            expected_catalog_version,
            resolved_from: reply.resolved_from,
            ..SplitAnswer::default()
        },
        Err(e) => SplitAnswer {
            error: Some(e.history_text()),
            expected_catalog_version,
            // The store has no such split at all: unsupported, not a failed move.
            unsupported: (e.tag == "unimplemented").then_some(true),
            ..SplitAnswer::default()
        },
    }
}

/// The smallest of `keep` that a cross-group split of `route` at `key` would carry along
/// (strictly after `key`, inside the route): where a same-group split must cut first.
pub fn first_inside<'a>(route: &RouteRecord, key: &str, keep: &'a [String]) -> Option<&'a String> {
    keep.iter()
        .filter(|k| k.as_str() > key && (route.end.is_empty() || k.as_str() < route.end.as_str()))
        .min()
}

/// The group other than `from` serving the fewest routes (ties: lowest id).
pub fn least_loaded_other_group(routes: &[RouteRecord], groups: &[u64], from: u64) -> Option<u64> {
    groups
        .iter()
        .copied()
        .filter(|g| *g != from)
        .min_by_key(|g| (routes.iter().filter(|r| r.group == *g).count(), *g))
}

impl StoreControl for ClientStoreControl {
    fn leader_of(&self, group: u64) -> BoxFuture<'_, Option<String>> {
        async move {
            workloads::cluster::leader_of_group_with(self.connector.as_ref(), &self.nodes, group)
                .await
        }
        .boxed()
    }

    fn hot_group(&self) -> BoxFuture<'_, u64> {
        async move {
            let default = self.groups.first().copied().unwrap_or(1);
            let Some(key) = self
                .sink
                .hottest_key()
                .and_then(|k| self.store_keys.aim_key(&k))
            else {
                return default;
            };
            let Ok((catalog, _)) = self.catalog().await else {
                return default;
            };
            route_of(&catalog.routes, &key)
                .map(|r| r.group)
                .unwrap_or(default)
        }
        .boxed()
    }

    fn groups(&self) -> Vec<u64> {
        self.groups.clone()
    }

    fn split_hot(&self, cross_group: bool) -> BoxFuture<'_, Option<SplitOutcome>> {
        async move {
            let (hot, in_flight) = self.split_candidates();
            let key = hot.first()?.clone();
            let refused = |why: &str| SplitOutcome::refused(&key, why);
            let (catalog, client) = match self.catalog().await {
                Ok(found) => found,
                Err(why) => return Some(refused(why)),
            };
            let moves = cross_group && self.groups.len() > 1;
            let chosen = if self.store_keys.is_identity() {
                splittable_hot_key(&catalog.routes, &hot, moves)
            } else {
                aimed_split(&catalog.routes, &hot, moves)
            };
            let (route, split_key, rank) = match chosen {
                Ok((route, split_key, rank)) => (route.clone(), split_key, rank),
                Err(why) => return Some(refused(why)),
            };
            let target_group = if moves {
                least_loaded_other_group(&catalog.routes, &self.groups, route.group)
            } else {
                None
            };
            let in_flight = txns_in_route(&in_flight, &route);
            let request = SplitRequest {
                expected_catalog_version: catalog.version,
                route_id: route.id,
                split_key: split_key.clone().into_bytes(),
                target_group,
            };
            let answer = answer_of(client.split(request).await, catalog.version);
            let (accepted, job_id) = (answer.catalog_version.is_some(), answer.job_id);
            let detail = SplitDetail::Answer(if accepted {
                SplitAnswer {
                    hot_key: Some(hot[rank].clone()),
                    hot_key_rank: Some(rank as u64),
                    aimed: Some(!self.store_keys.is_identity()),
                    in_flight_txns: Some(in_flight),
                    ..answer
                }
            } else {
                answer
            });
            Some(SplitOutcome {
                key: split_key,
                route_id: Some(route.id),
                target_group,
                accepted,
                detail,
                job_id,
            })
        }
        .boxed()
    }

    fn job_phase(&self, job_id: u64) -> BoxFuture<'_, Option<String>> {
        async move { self.split_job(job_id).await.map(|j| j.phase) }.boxed()
    }

    /// From `GetSplitJob`; only a store without it (`unimplemented`) is asked for its
    /// catalog's job list instead.
    fn split_job(&self, job_id: u64) -> BoxFuture<'_, Option<SplitJobRecord>> {
        async move {
            if let Some(job) = self.ask_split_jobs(|s| s.split_job(job_id)).await {
                return Some(job);
            }
            let (catalog, _) = self.catalog().await.ok()?;
            catalog.jobs.into_iter().find(|j| j.id == job_id)
        }
        .boxed()
    }

    /// From `ListSplitJobs`; a store without it (`unimplemented`) from its catalog.
    fn live_job(&self) -> BoxFuture<'_, Option<SplitJobRecord>> {
        async move {
            let live = |jobs: Vec<SplitJobRecord>| {
                jobs.into_iter()
                    .find(|j| JobPhase::parse(&j.phase).is_some_and(|p| !p.is_terminal()))
            };
            if let Some(jobs) = self.ask_split_jobs(|s| s.list_split_jobs()).await {
                return live(jobs);
            }
            let (catalog, _) = self.catalog().await.ok()?;
            live(catalog.jobs)
        }
        .boxed()
    }

    fn route_at<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Option<(u64, u64)>> {
        async move {
            let (catalog, _) = self.catalog().await.ok()?;
            route_of(&catalog.routes, key).map(|r| (r.group, r.epoch))
        }
        .boxed()
    }

    fn stale_write<'a>(
        &'a self,
        node: &'a str,
        key: &'a str,
        value: &'a str,
        group: u64,
        epoch: u64,
    ) -> BoxFuture<'a, StaleWriteResult> {
        async move {
            let endpoint =
                self.nodes
                    .iter()
                    .find(|n| n.name == node)
                    .ok_or_else(|| StaleWriteError {
                        definite: true,
                        error: format!("no node {node}"),
                    })?;
            let client = self
                .connector
                .connect(endpoint)
                .map_err(|e| StaleWriteError {
                    definite: true,
                    error: format!("{e:#}"),
                })?;
            let pinned = client.as_pinned_writes().unwrap_or(&Lacking);
            match pinned
                .write_pinned(key.as_bytes(), value.as_bytes(), group, epoch)
                .await
            {
                Ok(reply) => Ok(reply.meta),
                Err(e) => Err(StaleWriteError {
                    definite: e.certainty == Certainty::Definite,
                    error: e.history_text(),
                }),
            }
        }
        .boxed()
    }

    fn txn_hold<'a>(
        &'a self,
        node: &'a str,
        command: HoldCommand,
    ) -> BoxFuture<'a, Result<Vec<TxnInFlight>, String>> {
        async move {
            let endpoint = self
                .nodes
                .iter()
                .find(|n| n.name == node)
                .ok_or_else(|| format!("no node {node}"))?;
            let client = self
                .connector
                .connect(endpoint)
                .map_err(|e| format!("{e:#}"))?;
            let hold = client
                .as_txn_hold()
                .ok_or_else(|| "unimplemented: this client has no transaction hold".to_string())?;
            within_limit(hold.txn_hold(command))
                .await
                .map_err(|e| e.history_text())
        }
        .boxed()
    }

    fn move_key<'a>(
        &'a self,
        key: &'a str,
        keep: &'a [String],
    ) -> BoxFuture<'a, Option<SplitOutcome>> {
        async move {
            let refused = |why: String| SplitOutcome::refused(key, why);
            let (catalog, client) = match self.catalog().await {
                Ok(found) => found,
                Err(why) => return Some(refused(why.to_string())),
            };
            let Some(route) = route_of(&catalog.routes, key).cloned() else {
                return Some(refused("no route holds the key".into()));
            };
            let (mut version, mut route_id) = (catalog.version, route.id);
            let mut isolated_by = None;
            if let Some(cut) = first_inside(&route, key, keep) {
                let request = SplitRequest {
                    expected_catalog_version: version,
                    route_id,
                    split_key: cut.as_bytes().to_vec(),
                    target_group: None,
                };
                match client.split(request).await {
                    // The key is in the left child (it sorts before the cut).
                    Ok(SplitReply {
                        catalog_version,
                        left: Some(left),
                        ..
                    }) => (version, route_id) = (catalog_version, left.id),
                    Ok(_) => {
                        return Some(refused(format!(
                            "splitting off {cut} first: the store did not name the left child"
                        )))
                    }
                    Err(e) => {
                        return Some(refused(format!(
                            "splitting off {cut} first: {}",
                            e.history_text()
                        )))
                    }
                }
                isolated_by = Some(cut);
            }
            let Some(target) = least_loaded_other_group(&catalog.routes, &self.groups, route.group)
            else {
                return Some(refused("no other group to move to".into()));
            };
            let request = SplitRequest {
                expected_catalog_version: version,
                route_id,
                split_key: key.as_bytes().to_vec(),
                target_group: Some(target),
            };
            let answer = answer_of(client.split(request).await, version);
            let (accepted, job_id) = (answer.catalog_version.is_some(), answer.job_id);
            let detail = SplitDetail::Answer(SplitAnswer {
                kept_out_by_split_at: isolated_by.cloned(),
                ..answer
            });
            Some(SplitOutcome {
                key: key.to_string(),
                route_id: Some(route_id),
                target_group: Some(target),
                accepted,
                detail,
                job_id,
            })
        }
        .boxed()
    }

    fn abandon_job(&self, job_id: u64) -> BoxFuture<'_, Result<(), String>> {
        async move {
            let mut last = "no node answered".to_string();
            for (_, c) in self.clients() {
                match c
                    .as_split_jobs()
                    .unwrap_or(&Lacking)
                    .abandon_split_job(job_id)
                    .await
                {
                    Ok(()) => return Ok(()),
                    Err(e) if e.tag == "unavailable" => last = e.history_text(),
                    Err(e) => return Err(e.history_text()),
                }
            }
            Err(last)
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(id: u64, start: &str, end: &str, group: u64) -> RouteRecord {
        RouteRecord {
            id,
            start: start.into(),
            end: end.into(),
            group,
            state: "ACTIVE".into(),
            epoch: 1,
            parent: None,
        }
    }

    #[test]
    fn routes_are_found_by_half_open_ranges() {
        let routes = vec![route(1, "", "m", 1), route(2, "m", "", 2)];
        assert_eq!(route_of(&routes, "a").map(|r| r.id), Some(1));
        assert_eq!(route_of(&routes, "m").map(|r| r.id), Some(2));
        assert_eq!(route_of(&routes, "zzz").map(|r| r.id), Some(2));
    }

    #[test]
    fn split_points_are_strictly_inside_the_route() {
        let r = route(2, "m", "t", 1);
        assert_eq!(
            split_point(&r, "p").as_deref(),
            Some("p\0"),
            "the key stays inside the left child"
        );
        assert_eq!(
            split_point(&r, "m").as_deref(),
            Some("m\0"),
            "the start itself cannot split"
        );
        assert_eq!(
            split_point(&route(4, "a", "p\0", 1), "p").as_deref(),
            Some("p"),
            "a key ending its route splits it off"
        );
        assert_eq!(
            split_point(&route(3, "m", "m\0", 1), "m"),
            None,
            "a one-key route cannot split"
        );
    }

    #[test]
    fn a_split_names_the_transactions_in_flight_on_its_route() {
        let keys = |ks: &[&str]| ks.iter().map(|k| k.to_string()).collect::<Vec<_>>();
        let in_flight = [(4, keys(&["a", "m"])), (7, keys(&["x"])), (9, keys(&["m"]))];
        assert_eq!(txns_in_route(&in_flight, &route(1, "l", "p", 1)), [4, 9]);
        assert_eq!(
            txns_in_route(&in_flight, &route(2, "p", "", 1)),
            [7],
            "an empty end is unbounded"
        );
        assert!(txns_in_route(&in_flight, &route(3, "b", "c", 1)).is_empty());
    }

    #[test]
    fn a_hot_key_alone_in_its_route_gives_way_to_the_next_hottest() {
        let routes = vec![
            route(1, "", "a", 1),
            route(2, "a", "a\0", 2),
            route(3, "a\0", "", 1),
        ];
        let hot = |keys: &[&str]| keys.iter().map(|k| k.to_string()).collect::<Vec<_>>();
        let (r, split, rank) = splittable_hot_key(&routes, &hot(&["a", "c", "b"]), false).unwrap();
        assert_eq!((r.id, split.as_str(), rank), (3, "c\0", 1));
        assert_eq!(
            splittable_hot_key(&routes, &hot(&["a"]), false).unwrap_err(),
            "no hot key's route can be split at it"
        );
        assert_eq!(
            splittable_hot_key(&[], &hot(&["a"]), true).unwrap_err(),
            "no route holds the hottest key"
        );
    }

    #[test]
    fn after_a_same_group_split_a_move_still_carries_the_hot_key() {
        let hot = vec!["k".to_string()];
        let whole = vec![route(1, "", "", 1)];
        let (_, split, _) = splittable_hot_key(&whole, &hot, false).unwrap();
        assert_eq!(split, "k\0");
        let halves = vec![route(1, "", "k\0", 1), route(2, "k\0", "", 1)];
        let (r, split, _) = splittable_hot_key(&halves, &hot, true).unwrap();
        assert_eq!(
            (r.id, split.as_str()),
            (1, "k"),
            "split at the key: the moving child is [k, k\\0)"
        );
    }

    #[test]
    fn a_move_splits_where_the_hot_key_goes_with_the_moving_child() {
        let routes = vec![route(1, "", "m", 1), route(2, "m", "", 1)];
        let hot = |keys: &[&str]| keys.iter().map(|k| k.to_string()).collect::<Vec<_>>();
        // "m" starts its route: a split there moves only what follows it, so "c" goes first.
        let (r, split, rank) = splittable_hot_key(&routes, &hot(&["m", "c"]), true).unwrap();
        assert_eq!((r.id, split.as_str(), rank), (1, "c", 1));
        let (r, split, _) = splittable_hot_key(&routes, &hot(&["m", "c"]), false).unwrap();
        assert_eq!(
            (r.id, split.as_str()),
            (2, "m\0"),
            "a same-group split isolates the hottest key"
        );
        let (r, split, _) = splittable_hot_key(&routes, &hot(&["m"]), true).unwrap();
        assert_eq!(
            (r.id, split.as_str()),
            (2, "m\0"),
            "no hot key inside a route: the move still happens"
        );
    }

    #[test]
    fn a_kept_key_that_would_move_along_is_split_off_first() {
        let keep = vec!["q".to_string(), "d".to_string(), "z".to_string()];
        assert_eq!(
            first_inside(&route(1, "a", "t", 1), "c", &keep).map(String::as_str),
            Some("d"),
            "the nearest one after the key"
        );
        assert_eq!(
            first_inside(&route(1, "a", "", 1), "r", &keep).map(String::as_str),
            Some("z"),
            "an empty end is unbounded"
        );
        assert_eq!(
            first_inside(&route(1, "a", "t", 1), "r", &keep),
            None,
            "before the key or past the route: stays anyway"
        );
    }

    #[test]
    fn the_target_group_is_the_least_loaded_other_one() {
        let routes = vec![
            route(1, "", "h", 1),
            route(2, "h", "p", 2),
            route(3, "p", "", 2),
        ];
        assert_eq!(least_loaded_other_group(&routes, &[1, 2, 3], 1), Some(3));
        assert_eq!(least_loaded_other_group(&routes, &[1, 2], 1), Some(2));
        assert_eq!(least_loaded_other_group(&routes, &[1], 1), None);
    }

    #[test]
    fn an_aimed_split_goes_to_the_items_of_the_newest_transaction_in_flight_first() {
        let layout = StoreKeys::DynamoItemKey {
            tables: vec!["t1".into(), "t2".into()],
        };
        let in_flight = vec![
            (3, vec!["a/1".to_string(), "b/2".to_string()]),
            (7, vec!["c/3".to_string()]),
        ];
        let hot = ["b/2".to_string(), "d/4".to_string()];
        let (candidates, mapped) = aimed_candidates(&layout, &hot, in_flight);
        assert_eq!(candidates, ["c/3\0t2", "a/1\0t2", "b/2\0t1", "d/4\0t1"]);
        assert_eq!(
            mapped[0],
            (3, vec!["a/1\0t2".to_string(), "b/2\0t1".to_string()])
        );
        let routes = vec![route(1, "", "c/3\0t2\0", 1), route(2, "c/3\0t2\0", "", 1)];
        let (r, split, _) = aimed_split(&routes, &candidates, false).unwrap();
        assert_eq!(
            (r.id, split.as_str()),
            (1, "c/3\0t2"),
            "strictly inside: split at it"
        );
        assert_eq!(txns_in_route(&mapped, r), [3, 7]);
    }

    #[test]
    fn an_aimed_split_never_leaves_a_key_in_a_route_no_split_can_cut() {
        let key = "!ddb|route|table|dDE";
        let mut end = String::new();
        for m in 0..5 {
            let r = route(1, key, &end, 1);
            let split = aimed_split_point(&r, key).expect("room below the last point");
            assert_eq!(split, format!("{key}{}\u{1}", "\0".repeat(m)));
            assert!(key < split.as_str() && (end.is_empty() || split < end));
            end = split;
        }
        let inside = route(1, "!", "", 1);
        assert_eq!(aimed_split_point(&inside, key).as_deref(), Some(key));
        assert_eq!(
            aimed_split_point(&route(1, "z", "", 1), key),
            None,
            "not in the route"
        );
        // `key` starts route 1 ("a" sorts after "!"): a move passes it over for "a", which
        // lies strictly inside, so the moving right child holds it.
        let routes = [route(1, key, "", 1), route(2, "", key, 2)];
        let moved = aimed_split(&routes, &[key.into(), "a".into()], true);
        assert_eq!(
            moved.map(|(r, s, rank)| (r.id, s, rank)),
            Ok((1, "a".to_string(), 1)),
            "a move carries a key inside"
        );
        let same_group = aimed_split(&routes, &[key.into(), "a".into()], false);
        assert_eq!(
            same_group.map(|(r, s, rank)| (r.id, s, rank)),
            Ok((1, format!("{key}\u{1}"), 0)),
            "a same-group split takes the newest candidate, below its successor"
        );
    }
}

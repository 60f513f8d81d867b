//! What `kill` and `pause` share: choosing victims (a random node, the hot group's leader,
//! or — for kills — every node), acting on each, and recording which leaders were hit.
//!
//! Invariant: the undo names only the nodes the action succeeded on, so healing never
//! restarts a live node or resumes a running one.

use super::{Ctx, Started, Undo};
use analysis::history::FaultValue;
use futures::future::BoxFuture;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::RngExt;
use std::collections::BTreeMap;

/// A signal to a node's server process, and how it is described and undone.
pub struct ProcessAction {
    /// The past participle naming the hit nodes in the event: `killed`, `paused`.
    pub done: &'static str,
    /// Whether a turn may hit every node at once.
    pub allow_all: bool,
    pub act: for<'a> fn(&'a Ctx, &'a str) -> BoxFuture<'a, anyhow::Result<()>>,
    pub undo: fn(Vec<String>) -> Undo,
}

/// Picks the node(s) for a kill or pause: a random one, the hot group's leader, or
/// (`allow_all`) every node. The first turn of a run aims at the leader.
async fn pick_victims(ctx: &Ctx, rng: &mut StdRng, allow_all: bool, first: bool) -> (String, Vec<String>) {
    let nodes = ctx.node_names();
    let roll: f64 = if first { 0.5 } else { rng.random() };
    if allow_all && roll < 0.2 {
        return ("all".into(), nodes);
    }
    if roll < 0.6 {
        if let Some(l) = ctx.hot_leader().await {
            return ("leader".into(), vec![l]);
        }
    }
    let one = nodes.choose(rng).cloned().unwrap_or_default();
    ("one".into(), vec![one])
}

/// Applies `action` to the chosen victims. Effective when a group's leader was hit, or
/// when every node was targeted and at least one was hit.
pub async fn start_process_fault(ctx: &Ctx, action: &ProcessAction, first: bool, rng: &mut StdRng) -> Started {
    let (mode, victims) = pick_victims(ctx, rng, action.allow_all, first).await;
    let leaders = ctx.leaders().await;
    let mut hit = Vec::new();
    let mut errors = Vec::new();
    for v in &victims {
        match (action.act)(ctx, v).await {
            Ok(()) => hit.push(v.clone()),
            Err(e) => errors.push(format!("{v}: {e:#}")),
        }
    }
    let hit_leaders: Vec<u64> = leaders.iter().filter(|(_, l)| hit.contains(l)).map(|(g, _)| *g).collect();
    let mut value = FaultValue::new(victims);
    value.effective = Some(!hit_leaders.is_empty() || (mode == "all" && !hit.is_empty()));
    value.leader = Some(!hit_leaders.is_empty());
    value.mode = Some(mode);
    value.errors = Some(errors);
    let mut facts: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    facts.insert(action.done.to_string(), serde_json::json!(hit));
    facts.insert("leaders".into(), serde_json::json!(leaders));
    facts.insert(format!("leaders_{}", action.done), serde_json::json!(hit_leaders));
    Started { value: value.with_facts(facts), undo: (action.undo)(hit), summary: None }
}

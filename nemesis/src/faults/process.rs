//! What `kill` and `pause` share: choosing victims (a random node, the hot group's leader,
//! or — for kills — every node), acting on each, and recording which leaders were hit.
//! A turn aimed at the leader waits a little for one to be known (see `LEADER_PATIENCE`).
//!
//! Invariant: the undo names only the nodes the action succeeded on, so healing never
//! restarts a live node or resumes a running one.

use super::{Ctx, Started, Turn, Undo};
use analysis::history::{FaultValue, ProcessFacts};
use futures::future::BoxFuture;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::RngExt;
use std::collections::BTreeMap;

/// A signal to a node's server process, and how it is described and undone.
pub struct ProcessAction {
    /// What the event records of the nodes hit and the leaders among them
    /// ([`ProcessFacts::killed`], [`ProcessFacts::paused`]).
    pub record: fn(Vec<String>, BTreeMap<u64, String>, Vec<u64>) -> ProcessFacts,
    /// Whether a turn may hit every node at once.
    pub allow_all: bool,
    pub act: for<'a> fn(&'a Ctx, &'a str) -> BoxFuture<'a, anyhow::Result<()>>,
    pub undo: fn(Vec<String>) -> Undo,
}

/// Whom a turn aims at, before the leader is known.
#[derive(Clone, Copy, PartialEq)]
enum Aim {
    All,
    Leader,
    One,
}

/// A random aim: every node (when `allow_all`), the hot group's leader, or one node. The
/// first turn of a run aims at the leader.
fn aim(rng: &mut StdRng, allow_all: bool, first: bool) -> Aim {
    let roll: f64 = if first { 0.5 } else { rng.random() };
    match roll {
        r if allow_all && r < 0.2 => Aim::All,
        r if r < 0.6 => Aim::Leader,
        _ => Aim::One,
    }
}

/// Applies `action` to the chosen victims: every node, the hot group's leader (waited for
/// up to the turn's leader patience; a random node when none is known by then), or a random
/// node. Effective when a group's leader was hit, or when every node was targeted and at
/// least one was hit; the leaders are those of the view the victim was chosen from.
pub async fn start_process_fault(
    ctx: &Ctx,
    action: &ProcessAction,
    turn: Turn,
    rng: &mut StdRng,
) -> Started {
    let aim = aim(rng, action.allow_all, turn.nth == 0);
    let (leaders, hot_leader) = match aim {
        Aim::Leader => ctx.leaders_and_hot_leader(turn.leader_patience()).await,
        _ => (ctx.leaders().await, None),
    };
    let nodes = ctx.node_names();
    let (mode, victims) = match (aim, hot_leader) {
        (Aim::All, _) => ("all", nodes),
        (Aim::Leader, Some(l)) => ("leader", vec![l]),
        _ => ("one", vec![nodes.choose(rng).cloned().unwrap_or_default()]),
    };
    let mut hit = Vec::new();
    let mut errors = Vec::new();
    for v in &victims {
        match (action.act)(ctx, v).await {
            Ok(()) => hit.push(v.clone()),
            Err(e) => errors.push(format!("{v}: {e:#}")),
        }
    }
    let hit_leaders: Vec<u64> = leaders
        .iter()
        .filter(|(_, l)| hit.contains(l))
        .map(|(g, _)| *g)
        .collect();
    let mut value = FaultValue::new(victims);
    value.effective = Some(!hit_leaders.is_empty() || (mode == "all" && !hit.is_empty()));
    value.leader = Some(!hit_leaders.is_empty());
    value.mode = Some(mode.to_string());
    value.errors = Some(errors);
    let facts = (action.record)(hit.clone(), leaders, hit_leaders);
    Started {
        value: value.with_facts(facts),
        undo: (action.undo)(hit),
        summary: None,
    }
}

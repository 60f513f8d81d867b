//! `partition`: cuts the network with DROP rules inside the nodes' namespaces, in one of
//! the [`PartitionMode`] shapes (the first partition of a run isolates the hot group's
//! leader when that mode is enabled).
//!
//! Effective when every rule was installed and some group's leader lost its majority (or
//! the shape is a ring, which cuts every node off from its predecessor).

use super::{Ctx, Fault, Started, Style, Turn, Undo};
use crate::grudge::{self, Grudge, PartitionMode};
use crate::net;
use analysis::history::FaultValue;
use futures::future::BoxFuture;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use std::collections::BTreeMap;

pub struct Partition;

/// What a partition records beside the shared fields.
#[derive(serde::Serialize)]
struct Facts {
    grudge: Grudge,
    leaders: BTreeMap<u64, String>,
    leaders_cut_off: Vec<u64>,
}

impl Fault for Partition {
    fn name(&self) -> &'static str {
        "partition"
    }

    fn effective_means(&self) -> &'static str {
        "every rule was installed and a group's leader lost its majority (or the shape is a ring)"
    }

    fn style(&self) -> Style {
        Style { rgb: (230, 80, 80), label: "partition" }
    }

    fn start<'a>(&'a self, ctx: &'a Ctx, turn: Turn, rng: &'a mut StdRng) -> BoxFuture<'a, Started> {
        Box::pin(start_partition(ctx, turn, rng))
    }
}

async fn start_partition(ctx: &Ctx, turn: Turn, rng: &mut StdRng) -> Started {
    let first = turn.nth == 0;
    let nodes = ctx.node_names();
    let modes = if ctx.partition_modes.is_empty() { PartitionMode::all_for(nodes.len()) } else { ctx.partition_modes.clone() };
    let mode = if first && modes.contains(&PartitionMode::Leader) {
        PartitionMode::Leader
    } else {
        *modes.choose(rng).unwrap_or(&PartitionMode::One)
    };
    let (leaders, hot_leader) = if mode == PartitionMode::Leader {
        ctx.leaders_and_hot_leader(turn.leader_patience()).await
    } else {
        (ctx.leaders().await, None)
    };
    let g = grudge::grudge(mode, &nodes, hot_leader.as_deref(), rng);
    let errors = apply_grudge(ctx, &g).await;
    let cut_leaders: Vec<u64> = leaders.iter().filter(|(_, l)| !grudge::has_majority(&g, &nodes, l)).map(|(g, _)| *g).collect();
    let mut value = FaultValue::new(g.keys().cloned().collect());
    // Bridge and ring shapes leave every leader a majority by design (at 3 and 5 nodes
    // alike); they are effective when they cut a link.
    let by_design = matches!(mode, PartitionMode::Bridge | PartitionMode::Ring | PartitionMode::MajoritiesRing) && !g.is_empty();
    value.effective = Some(errors.is_empty() && (!cut_leaders.is_empty() || by_design));
    value.mode = Some(mode.name().to_string());
    value.leader = Some(!cut_leaders.is_empty());
    value.errors = Some(errors);
    let value = value.with_facts(Facts { grudge: g, leaders, leaders_cut_off: cut_leaders });
    Started { value, undo: Undo::Network { nodes, netem: false }, summary: Some(format!("partition {}", mode.name())) }
}

/// Installs DROP rules so that each node drops what comes from the nodes it holds a grudge
/// against, on every node at once (over SSH each command costs a round trip). Returns the
/// errors (empty: fully applied).
pub(super) async fn apply_grudge(ctx: &Ctx, g: &Grudge) -> Vec<String> {
    let all = ctx.control.nodes();
    let per_node = g.iter().map(|(node, from)| async move {
        let ns = ctx.control.node_net(node).await?;
        net::ensure_chain(&*ns).await?;
        for f in from {
            let peer = crate::NodeInfo::find(all, f)?;
            net::drop_inbound_from(&*ns, peer.ip).await?;
        }
        anyhow::Ok(())
    });
    let results = futures::future::join_all(per_node).await;
    g.keys().zip(results).filter_map(|(node, r)| r.err().map(|e| format!("{node}: {e:#}"))).collect()
}

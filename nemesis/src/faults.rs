//! The faults themselves: how each kind is applied to the cluster and undone, and how its
//! start and end are recorded in the history.

use crate::grudge::{self, Grudge, PartitionMode};
use crate::net;
use crate::{NodeControl, Oracle};
use analysis::history::{HistorySink, Op, OpType, Process};
use anyhow::Result;
use rand::seq::IndexedRandom;
use rand::RngExt;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A kind of fault, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FaultKind {
    Partition,
    Kill,
    Pause,
    Loss,
    Split,
}

impl FaultKind {
    pub const ALL: [FaultKind; 5] = [FaultKind::Partition, FaultKind::Kill, FaultKind::Pause, FaultKind::Loss, FaultKind::Split];

    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Partition => "partition",
            FaultKind::Kill => "kill",
            FaultKind::Pause => "pause",
            FaultKind::Loss => "loss",
            FaultKind::Split => "split",
        }
    }

    /// Parses `--nemesis` (`partition,kill`, `all`, `none`); duplicates are merged.
    pub fn parse_list(s: &str) -> Result<Vec<FaultKind>, String> {
        let mut kinds = Vec::new();
        for word in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word {
                "all" => kinds.extend(FaultKind::ALL),
                "none" => {}
                w => match FaultKind::ALL.into_iter().find(|k| k.name() == w) {
                    Some(k) => kinds.push(k),
                    None => {
                        return Err(format!(
                            "unknown nemesis {w:?}: expected partition, kill, pause, loss, split, all or none"
                        ))
                    }
                },
            }
        }
        kinds.sort();
        kinds.dedup();
        Ok(kinds)
    }
}

/// What must be done to undo an applied fault.
#[derive(Debug, Clone)]
pub enum Undo {
    /// Flush the FAULTLINE chain (and netem) of these nodes.
    Network(Vec<String>, bool),
    Restart(Vec<String>),
    Resume(Vec<String>),
    Nothing,
}

/// A fault that is in effect.
#[derive(Debug, Clone)]
pub struct Active {
    pub kind: FaultKind,
    pub targets: Vec<String>,
    pub undo: Undo,
    /// Short description for people, e.g. `partition leader` or `kill n2`.
    pub summary: String,
}

/// Everything a fault needs to act and to record.
pub struct Ctx {
    pub control: Arc<dyn NodeControl>,
    pub oracle: Arc<dyn Oracle>,
    pub sink: Arc<dyn HistorySink>,
    pub loss_probability: f64,
    pub partition_modes: Vec<PartitionMode>,
    pub use_netem: bool,
}

impl Ctx {
    pub fn record(&self, f: String, value: Value) -> u64 {
        self.sink.record(Op {
            index: 0,
            kind: OpType::Info,
            process: Process::Nemesis,
            f,
            key: None,
            value,
            time: 0,
            node: None,
            error: None,
            meta: None,
        })
    }

    fn node_names(&self) -> Vec<String> {
        self.control.nodes().iter().map(|n| n.name.clone()).collect()
    }

    /// Current leader of every group, by group id.
    async fn leaders(&self) -> BTreeMap<u64, String> {
        let mut out = BTreeMap::new();
        for g in self.oracle.groups() {
            if let Some(l) = self.oracle.leader_of(g).await {
                out.insert(g, l);
            }
        }
        out
    }

    /// The leader of the hot range's group, if known.
    async fn hot_leader(&self) -> Option<String> {
        let g = self.oracle.hot_group().await;
        self.oracle.leader_of(g).await
    }
}

/// Applies a fault of `kind` and records `start-<kind>`; returns how to undo it.
///
/// `nth` counts earlier faults of the same kind: the first partition, kill and pause of a
/// run target the hot group's leader (when those modes are enabled), so that even a short
/// run exercises leader failure; later ones choose at random.
pub async fn start<R: rand::Rng>(ctx: &Ctx, kind: FaultKind, nth: u64, rng: &mut R) -> Active {
    let first = nth == 0;
    let (targets, undo, value) = match kind {
        FaultKind::Partition => start_partition(ctx, first, rng).await,
        FaultKind::Kill => start_kill(ctx, first, rng).await,
        FaultKind::Pause => start_pause(ctx, first, rng).await,
        FaultKind::Loss => start_loss(ctx, rng).await,
        FaultKind::Split => (Vec::new(), Undo::Nothing, json!({"targets": [], "effective": false})),
    };
    let mode = value.get("mode").and_then(Value::as_str).map(str::to_string);
    ctx.record(format!("start-{}", kind.name()), value);
    let summary = match (kind, mode.as_deref()) {
        (FaultKind::Partition, Some(mode)) => format!("partition {mode}"),
        (FaultKind::Loss, _) => format!("loss {:.0}%", 100.0 * ctx.loss_probability),
        _ if targets.is_empty() => kind.name().to_string(),
        _ => format!("{} {}", kind.name(), targets.join(",")),
    };
    Active { kind, targets, undo, summary }
}

/// Undoes a fault and records `stop-<kind>` with what the undo achieved.
pub async fn stop(ctx: &Ctx, active: &Active) {
    let errors = undo(ctx, &active.undo).await;
    let mut value = json!({"targets": active.targets, "healed": errors.is_empty()});
    if !errors.is_empty() {
        value["errors"] = json!(errors);
    }
    ctx.record(format!("stop-{}", active.kind.name()), value);
}

/// Runs an undo, collecting (not propagating) errors so every step is attempted.
pub async fn undo(ctx: &Ctx, undo: &Undo) -> Vec<String> {
    let mut errors = Vec::new();
    match undo {
        Undo::Network(nodes, netem) => {
            for n in nodes {
                let r = async {
                    let ns = ctx.control.netns(n).await?;
                    if *netem {
                        net::netem_clear(&ns, "eth0").await;
                    }
                    net::flush(&ns).await
                };
                if let Err(e) = r.await {
                    errors.push(format!("{n}: {e:#}"));
                }
            }
        }
        Undo::Restart(nodes) => {
            for n in nodes {
                if let Err(e) = ctx.control.restart(n).await {
                    errors.push(format!("{n}: {e:#}"));
                }
            }
        }
        Undo::Resume(nodes) => {
            for n in nodes {
                if let Err(e) = ctx.control.resume(n).await {
                    errors.push(format!("{n}: {e:#}"));
                }
            }
        }
        Undo::Nothing => {}
    }
    errors
}

async fn start_partition<R: rand::Rng>(ctx: &Ctx, first: bool, rng: &mut R) -> (Vec<String>, Undo, Value) {
    let nodes = ctx.node_names();
    let modes = if ctx.partition_modes.is_empty() { PartitionMode::all_for(nodes.len()) } else { ctx.partition_modes.clone() };
    let mode = if first && modes.contains(&PartitionMode::Leader) {
        PartitionMode::Leader
    } else {
        *modes.choose(rng).unwrap_or(&PartitionMode::One)
    };
    let leaders = ctx.leaders().await;
    let hot_leader = if mode == PartitionMode::Leader { ctx.hot_leader().await } else { None };
    let g = grudge::grudge(mode, &nodes, hot_leader.as_deref(), rng);
    let errors = apply_grudge(ctx, &g).await;
    let cut_leaders: Vec<u64> = leaders
        .iter()
        .filter(|(_, l)| !grudge::has_majority(&g, &nodes, l))
        .map(|(g, _)| *g)
        .collect();
    let affected: Vec<String> = g.keys().cloned().collect();
    // Bridge and ring shapes leave every leader a majority by design (at 3 and 5 nodes
    // alike); they are effective when they cut a link.
    let by_design = matches!(mode, PartitionMode::Bridge | PartitionMode::Ring | PartitionMode::MajoritiesRing) && !g.is_empty();
    let effective = errors.is_empty() && (!cut_leaders.is_empty() || by_design);
    let value = json!({
        "targets": affected, "effective": effective, "mode": mode.name(),
        "leader": !cut_leaders.is_empty(),
        "grudge": g, "leaders": leaders, "leaders_cut_off": cut_leaders,
        "errors": errors,
    });
    (affected.clone(), Undo::Network(nodes, false), value)
}

/// Installs DROP rules so that each node drops what comes from the nodes it holds a grudge
/// against. Returns the errors (empty: fully applied).
async fn apply_grudge(ctx: &Ctx, g: &Grudge) -> Vec<String> {
    let mut errors = Vec::new();
    let all = ctx.control.nodes();
    for (node, from) in g {
        let r = async {
            let ns = ctx.control.netns(node).await?;
            net::ensure_chain(&ns).await?;
            for f in from {
                let peer = crate::NodeInfo::find(all, f)?;
                net::drop_inbound_from(&ns, peer.ip).await?;
            }
            anyhow::Ok(())
        };
        if let Err(e) = r.await {
            errors.push(format!("{node}: {e:#}"));
        }
    }
    errors
}

/// Picks the node(s) for a kill or pause: a random one, the hot group's leader, or
/// (`allow_all`) every node.
async fn pick_victims<R: rand::Rng>(ctx: &Ctx, rng: &mut R, allow_all: bool, first: bool) -> (String, Vec<String>) {
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

async fn start_kill<R: rand::Rng>(ctx: &Ctx, first: bool, rng: &mut R) -> (Vec<String>, Undo, Value) {
    let (mode, victims) = pick_victims(ctx, rng, true, first).await;
    let leaders = ctx.leaders().await;
    let mut killed = Vec::new();
    let mut errors = Vec::new();
    for v in &victims {
        match ctx.control.kill(v).await {
            Ok(()) => killed.push(v.clone()),
            Err(e) => errors.push(format!("{v}: {e:#}")),
        }
    }
    let killed_leaders: Vec<u64> = leaders.iter().filter(|(_, l)| killed.contains(l)).map(|(g, _)| *g).collect();
    let value = json!({
        "targets": victims, "effective": !killed_leaders.is_empty() || (mode == "all" && !killed.is_empty()),
        "leader": !killed_leaders.is_empty(),
        "mode": mode, "killed": killed, "leaders": leaders, "leaders_killed": killed_leaders, "errors": errors,
    });
    (victims, Undo::Restart(killed), value)
}

async fn start_pause<R: rand::Rng>(ctx: &Ctx, first: bool, rng: &mut R) -> (Vec<String>, Undo, Value) {
    let (mode, victims) = pick_victims(ctx, rng, false, first).await;
    let leaders = ctx.leaders().await;
    let mut paused = Vec::new();
    let mut errors = Vec::new();
    for v in &victims {
        match ctx.control.pause(v).await {
            Ok(()) => paused.push(v.clone()),
            Err(e) => errors.push(format!("{v}: {e:#}")),
        }
    }
    let paused_leaders: Vec<u64> = leaders.iter().filter(|(_, l)| paused.contains(l)).map(|(g, _)| *g).collect();
    let value = json!({
        "targets": victims, "effective": !paused_leaders.is_empty(), "mode": mode,
        "leader": !paused_leaders.is_empty(),
        "paused": paused, "leaders": leaders, "leaders_paused": paused_leaders, "errors": errors,
    });
    (victims, Undo::Resume(paused), value)
}

async fn start_loss<R: rand::Rng>(ctx: &Ctx, _rng: &mut R) -> (Vec<String>, Undo, Value) {
    let nodes = ctx.control.nodes().to_vec();
    let p = ctx.loss_probability;
    let mut errors = Vec::new();
    for n in &nodes {
        let r = async {
            let ns = ctx.control.netns(&n.name).await?;
            if ctx.use_netem {
                return net::netem_loss(&ns, "eth0", p).await;
            }
            net::ensure_chain(&ns).await?;
            for peer in nodes.iter().filter(|o| o.name != n.name) {
                net::lose_inbound_from(&ns, peer.ip, p).await?;
            }
            anyhow::Ok(())
        };
        if let Err(e) = r.await {
            errors.push(format!("{}: {e:#}", n.name));
        }
    }
    let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
    let value = json!({
        "targets": names, "effective": errors.is_empty() && p > 0.0, "probability": p,
        "mechanism": if ctx.use_netem { "netem" } else { "iptables-statistic" }, "errors": errors,
    });
    (names.clone(), Undo::Network(names, ctx.use_netem), value)
}

/// Forces one split (cross-group if asked and the store has several groups). `start-split` is recorded once
/// the store has answered (its `effective` says whether it accepted); `stop-split` when the
/// split is complete: at once for a same-group split, when its job reaches `DONE` or
/// `ABANDONED` for a move (waiting at most `settle`).
pub async fn split_once(ctx: &Ctx, cross_group: bool, settle: std::time::Duration) -> Option<crate::SplitOutcome> {
    let cross = cross_group && ctx.oracle.groups().len() > 1;
    let outcome = ctx.oracle.split_hot(cross).await;
    let Some(o) = &outcome else {
        ctx.record("start-split".into(), json!({"targets": [], "cross_group": cross, "effective": false, "detail": "no hot key to split yet"}));
        ctx.record("stop-split".into(), json!({"targets": [], "effective": false}));
        return None;
    };
    ctx.record("start-split".into(), json!({
        "targets": [], "effective": o.accepted, "cross_group": cross, "key": o.key,
        "route_id": o.route_id, "target_group": o.target_group, "job_id": o.job_id, "detail": o.detail,
    }));
    let mut phase = None;
    if let (true, Some(job)) = (o.accepted, o.job_id) {
        let deadline = tokio::time::Instant::now() + settle;
        loop {
            phase = ctx.oracle.job_phase(job).await;
            let done = matches!(phase.as_deref(), Some("DONE") | Some("ABANDONED"));
            if done || tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    }
    ctx.record("stop-split".into(), json!({
        "targets": [], "effective": o.accepted, "key": o.key, "job_id": o.job_id, "job_phase": phase,
    }));
    outcome
}

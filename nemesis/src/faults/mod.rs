//! The faults: the [`Fault`] trait every fault implements, the registry that names them
//! ([`REGISTRY`], one line per fault, one file per fault beside this one), and the
//! bracketing every fault shares: [`start`] applies a fault and records `start-<name>`,
//! [`stop`] heals it and records `stop-<name>` (see `docs/history-format.md`).
//!
//! Invariants: a fault's `start` never fails (what went wrong is recorded in its event and
//! makes it not `effective`); every start is followed by exactly one stop; healing collects
//! errors rather than stopping at the first, so every step is attempted.

mod process;

pub use abort_move::parse_abort_phase;
pub use move_phase::{parse_move_action, parse_move_phase, Action as MoveAction};
pub use txn_move::{parse_txn_move_aim, Aim as TxnMoveAim};

use crate::grudge::PartitionMode;
use crate::net;
use crate::{NodeControl, StoreControl};
use analysis::history::{FaultEdge, FaultEvent, FaultValue, HistorySink, JobPhase};
use futures::future::BoxFuture;
use rand::rngs::StdRng;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Declares each fault's module (`<module>.rs` beside this file) and lists the fault in
/// [`REGISTRY`].
macro_rules! registry {
    ($($module:ident :: $fault:ident),* $(,)?) => {
        $(mod $module;)*
        /// Every fault faultline has, in the order `--nemesis all` lists them.
        pub const REGISTRY: &[FaultKind] = &[$(FaultKind(&$module::$fault)),*];
    };
}

// Adding a fault: a new file in this directory and one line here (see the crate's doc).
registry! {
    partition::Partition,
    kill::Kill,
    pause::Pause,
    loss::Loss,
    split::Split,
    move_phase::Move,
    abort_move::AbortMove,
    txn_move::TxnMove,
}

/// When the schedule runs a fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// In the rotation: one fault at a time, each applied for one interval after a quiet
    /// one, so that two faults on nodes never overlap.
    Rotation,
    /// On its own clock, landing in the middle of the rotation's faults. Its `stop` runs
    /// right after its `start` and decides how long it lasts (e.g. until the job it started
    /// settles), waiting at most the turn's budget.
    Own,
}

/// How the report draws a fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// Colour of its band and legend entry.
    pub rgb: (u8, u8, u8),
    /// The word the legend shows.
    pub label: &'static str,
}

/// The colour of faults the registry does not know (histories of other versions).
pub const UNKNOWN_STYLE_RGB: (u8, u8, u8) = (100, 180, 100);

/// One turn of a fault in the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turn {
    /// How many times this fault started before in the run (0: the first time).
    pub nth: u64,
    /// The longest the fault may wait for the system under test (for a job to reach a
    /// phase, to settle, ...): its interval in the rotation, its period on its own clock.
    pub budget: Duration,
}

impl Turn {
    /// The first turn of a fault, with no time to wait.
    pub fn first() -> Turn {
        Turn {
            nth: 0,
            budget: Duration::ZERO,
        }
    }

    /// How long a turn aimed at a leader waits for one to be known: its budget, at most
    /// [`LEADER_PATIENCE`].
    pub fn leader_patience(&self) -> Duration {
        self.budget.min(LEADER_PATIENCE)
    }
}

/// The longest a fault aimed at the hot group's leader waits for one to be known. The heal
/// of the previous fault can start an election (a node back from a partition with a higher
/// term disrupts the leader when the store has no pre-vote, as etcd 3.4 by default); falling
/// back to a random node then leaves a short run without a leader fault.
pub const LEADER_PATIENCE: Duration = Duration::from_secs(3);
const LEADER_POLL: Duration = Duration::from_millis(250);

/// What `start` did: the event's value, how to undo it, and a phrase for the status line.
pub struct Started {
    pub value: FaultValue,
    pub undo: Undo,
    /// Short description for people; `None`: the name, then the targets.
    pub summary: Option<String>,
}

/// A fault: how it is applied, healed, judged effective and drawn.
pub trait Fault: Send + Sync + 'static {
    /// Its name on the command line and in the history (`start-<name>`).
    fn name(&self) -> &'static str;
    /// What `effective: true` in its start event means, for people.
    fn effective_means(&self) -> &'static str;
    fn style(&self) -> Style;
    fn clock(&self) -> Clock {
        Clock::Rotation
    }
    /// Whether it acts on the nodes' processes or network (impossible on a cluster
    /// faultline does not run) rather than through the store's API.
    fn acts_on_nodes(&self) -> bool {
        true
    }
    /// Applies the fault. Never fails: problems go into the value's `errors` and make it
    /// not effective.
    fn start<'a>(&'a self, ctx: &'a Ctx, turn: Turn, rng: &'a mut StdRng)
        -> BoxFuture<'a, Started>;
    /// Heals it and says how (the value of `stop-<name>`). The default runs the undo and
    /// reports `healed` and the errors.
    fn stop<'a>(&'a self, ctx: &'a Ctx, active: &'a Active) -> BoxFuture<'a, FaultValue> {
        Box::pin(heal(ctx, active))
    }
}

/// Runs the active fault's undo; the stop event's value, with `healed` and the errors.
pub async fn heal(ctx: &Ctx, active: &Active) -> FaultValue {
    let errors = undo(ctx, &active.undo).await;
    let mut value = FaultValue::new(active.targets.clone());
    value.healed = Some(errors.is_empty());
    value.errors = (!errors.is_empty()).then_some(errors);
    value
}

/// A fault of the registry, as named on the command line: a copyable handle ordered,
/// compared and serialized by its name's place in the registry.
#[derive(Clone, Copy)]
pub struct FaultKind(&'static dyn Fault);

impl FaultKind {
    // Shorthands for the harness's own lists (which faults a db supports); a new fault
    // needs none: `FaultKind::named`.
    pub const PARTITION: FaultKind = FaultKind(&partition::Partition);
    pub const KILL: FaultKind = FaultKind(&kill::Kill);
    pub const PAUSE: FaultKind = FaultKind(&pause::Pause);
    pub const LOSS: FaultKind = FaultKind(&loss::Loss);
    pub const SPLIT: FaultKind = FaultKind(&split::Split);
    /// Every fault, in registry order.
    pub const ALL: &'static [FaultKind] = REGISTRY;

    /// A handle on a fault outside the registry (a test's or an example's own); `named`
    /// and `--nemesis` do not know it.
    pub const fn unregistered(fault: &'static dyn Fault) -> FaultKind {
        FaultKind(fault)
    }

    pub fn name(self) -> &'static str {
        self.0.name()
    }

    pub fn fault(self) -> &'static dyn Fault {
        self.0
    }

    /// The registry's fault of this name.
    pub fn named(name: &str) -> Option<FaultKind> {
        REGISTRY.iter().copied().find(|k| k.name() == name)
    }

    fn position(self) -> usize {
        REGISTRY
            .iter()
            .position(|k| k.name() == self.name())
            .unwrap_or(usize::MAX)
    }

    /// Parses `--nemesis` (`partition,kill`, `all`, `none`); duplicates are merged.
    pub fn parse_list(s: &str) -> Result<Vec<FaultKind>, UnknownFault> {
        let mut kinds = Vec::new();
        for word in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word {
                "all" => kinds.extend_from_slice(REGISTRY),
                "none" => {}
                w => kinds.push(FaultKind::named(w).ok_or_else(|| UnknownFault(w.to_string()))?),
            }
        }
        kinds.sort();
        kinds.dedup();
        Ok(kinds)
    }
}

/// A `--nemesis` word that names no fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown nemesis {0:?}: expected {names}, all or none", names = registry_names())]
pub struct UnknownFault(pub String);

fn registry_names() -> String {
    REGISTRY
        .iter()
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(", ")
}

impl PartialEq for FaultKind {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for FaultKind {}

impl PartialOrd for FaultKind {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for FaultKind {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.position(), self.name()).cmp(&(other.position(), other.name()))
    }
}

impl std::hash::Hash for FaultKind {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name().hash(state)
    }
}

impl fmt::Debug for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for FaultKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// The report's style for a fault name; unknown names get a neutral colour.
pub fn style_of(name: &str) -> Style {
    FaultKind::named(name)
        .map(|k| k.fault().style())
        .unwrap_or(Style {
            rgb: UNKNOWN_STYLE_RGB,
            label: "fault",
        })
}

/// What must be done to undo an applied fault.
#[derive(Debug, Clone, PartialEq)]
pub enum Undo {
    /// Flush the FAULTLINE chain of these nodes, and clear their netem qdisc if `netem`.
    Network {
        nodes: Vec<String>,
        netem: bool,
    },
    /// Start these killed nodes again.
    Restart {
        nodes: Vec<String>,
    },
    /// Unfreeze these paused nodes.
    Resume {
        nodes: Vec<String>,
    },
    /// Nothing can be undone; the fault's `stop` waits for the split job the store
    /// started (if it accepted) to settle.
    AwaitJob {
        job_id: Option<u64>,
        accepted: bool,
    },
    Nothing,
}

/// A fault that is in effect.
#[derive(Debug, Clone)]
pub struct Active {
    pub kind: FaultKind,
    pub turn: Turn,
    pub targets: Vec<String>,
    /// The value its start event recorded.
    pub started: FaultValue,
    pub undo: Undo,
    /// Short description for people, e.g. `partition leader` or `kill n2`.
    pub summary: String,
}

/// Everything a fault needs to act and to record.
pub struct Ctx {
    pub control: Arc<dyn NodeControl>,
    pub store: Arc<dyn StoreControl>,
    pub sink: Arc<dyn HistorySink>,
    pub loss_probability: f64,
    pub partition_modes: Vec<PartitionMode>,
    pub use_netem: bool,
    /// The phase the `move` fault aims at (`--move-phase`); `None` = a random one per turn.
    pub move_phase: Option<JobPhase>,
    /// What the `move` fault does (`--move-action`); `None` = each action in turn.
    pub move_action: Option<MoveAction>,
    /// The pre-CUTOVER phase `abort-move` abandons a job in (`--abort-phase`); `None` = random.
    pub abort_phase: Option<JobPhase>,
    /// The window `txn-move` aims at (`--txn-move-aim`); `None` = one drawn per turn.
    pub txn_move_aim: Option<TxnMoveAim>,
}

impl Ctx {
    /// Records a nemesis event; returns its index.
    pub fn record(&self, event: &FaultEvent) -> u64 {
        self.sink.record(event.to_op())
    }

    fn node_names(&self) -> Vec<String> {
        self.control
            .nodes()
            .iter()
            .map(|n| n.name.clone())
            .collect()
    }

    /// Current leader of every group, by group id.
    async fn leaders(&self) -> BTreeMap<u64, String> {
        let mut out = BTreeMap::new();
        for g in self.store.groups() {
            if let Some(l) = self.store.leader_of(g).await {
                out.insert(g, l);
            }
        }
        out
    }

    /// Every group's leader and the leader of the hot range's group, from one view. While
    /// the hot group has no known leader (an election after the last fault's heal), asked
    /// again every [`LEADER_POLL`] for up to `patience`; then `None` for the hot leader.
    async fn leaders_and_hot_leader(
        &self,
        patience: Duration,
    ) -> (BTreeMap<u64, String>, Option<String>) {
        let hot = self.store.hot_group().await;
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            let leaders = self.leaders().await;
            if let Some(l) = leaders.get(&hot).cloned() {
                return (leaders, Some(l));
            }
            if tokio::time::Instant::now() + LEADER_POLL > deadline {
                return (leaders, None);
            }
            tokio::time::sleep(LEADER_POLL).await;
        }
    }

    /// Polls the job's phase until it is terminal or `budget` has passed; the last phase
    /// seen, as the store reported it.
    pub async fn wait_for_job(&self, job_id: u64, budget: Duration) -> Option<String> {
        let deadline = tokio::time::Instant::now() + budget;
        loop {
            let phase = self.store.job_phase(job_id).await;
            let settled = phase
                .as_deref()
                .and_then(JobPhase::parse)
                .is_some_and(JobPhase::is_terminal);
            if settled || tokio::time::Instant::now() >= deadline {
                return phase;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

/// Applies a fault of `kind` and records `start-<name>`; returns what is in effect.
///
/// `turn.nth` counts earlier faults of the same kind: the first partition, kill and pause
/// of a run target the hot group's leader (when those modes are enabled), so that even a
/// short run exercises leader failure; later ones choose at random.
pub async fn start(ctx: &Ctx, kind: FaultKind, turn: Turn, rng: &mut StdRng) -> Active {
    let Started {
        value,
        undo,
        summary,
    } = kind.fault().start(ctx, turn, rng).await;
    ctx.record(&FaultEvent::new(
        FaultEdge::Start,
        kind.name(),
        value.clone(),
    ));
    let summary = summary.unwrap_or_else(|| match value.targets.is_empty() {
        true => kind.name().to_string(),
        false => format!("{} {}", kind.name(), value.targets.join(",")),
    });
    Active {
        kind,
        turn,
        targets: value.targets.clone(),
        started: value,
        undo,
        summary,
    }
}

/// Heals a fault and records `stop-<name>` with what the heal achieved.
pub async fn stop(ctx: &Ctx, active: &Active) {
    let value = active.kind.fault().stop(ctx, active).await;
    ctx.record(&FaultEvent::new(FaultEdge::Stop, active.kind.name(), value));
}

/// Runs an undo, collecting (not propagating) errors so every step is attempted.
pub async fn undo(ctx: &Ctx, undo: &Undo) -> Vec<String> {
    match undo {
        Undo::Network { nodes, netem } => {
            for_each_node(nodes, |n| async move {
                let ns = ctx.control.node_net(n).await?;
                if *netem {
                    net::netem_clear(&*ns, "eth0").await;
                }
                net::flush(&*ns).await
            })
            .await
        }
        Undo::Restart { nodes } => for_each_node(nodes, |n| ctx.control.restart(n)).await,
        Undo::Resume { nodes } => for_each_node(nodes, |n| ctx.control.resume(n)).await,
        Undo::AwaitJob { .. } | Undo::Nothing => Vec::new(),
    }
}

/// Runs `step` on every node at once (over SSH each step costs round trips); the errors,
/// each prefixed with its node, in node order.
async fn for_each_node<'a, F, Fut>(nodes: &'a [String], step: F) -> Vec<String>
where
    F: Fn(&'a str) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let results = futures::future::join_all(nodes.iter().map(|n| step(n))).await;
    nodes
        .iter()
        .zip(results)
        .filter_map(|(n, r)| r.err().map(|e| format!("{n}: {e:#}")))
        .collect()
}

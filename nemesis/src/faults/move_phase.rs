//! `move`: a fault aimed at a phase of a split job rather than at a clock. It takes the
//! store's live job (or starts one: a cross-group split of the hot range), waits until the
//! job enters the aimed phase (`--move-phase`; `random` picks one per turn), then hits the
//! node whose failure at that moment matters, in turn (or always the one `--move-action`
//! names):
//! 1. pause the source group's leader (a zombie old owner that wakes with a stale view),
//! 2. partition the source group's leader away from the other nodes,
//! 3. kill the migrator (the default group's leader driving the job; it must resume),
//! 4. kill the target group's leader.
//!
//! It heals once the job is past CUTOVER (CLEANUP, DONE, ABANDONED or FAILED) or, at the
//! latest, [`HOLD_LIMIT`] after the action (not the turn's budget: a job whose migrator was
//! just paused needs a re-election and both copies before its cutover), so a paused old
//! owner stays frozen across the cutover. A paused
//! source leader held past the cutover is then a stale client too: just before it resumes,
//! [`STALE_WRITES`] `stale-write` ops are sent through it straight to the source group under
//! the pre-move epoch, so it handles them as it wakes (the store must refuse every one at
//! commit time). Runs on its
//! own clock. Effective when the action hit a node while the job was live; the events
//! record the phase aimed at, the phase seen when it fired, the job and the node hit.

use super::{Active, Clock, Ctx, Fault, Started, Style, Turn, Undo};
use crate::grudge::{self, PartitionMode};
use analysis::analyze::STALE_WRITE;
use analysis::history::{CommitMeta, FaultValue, JobFacts, JobPhase, Op, OpType, Process, SplitDetail, SplitJobRecord};
use futures::future::BoxFuture;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use std::time::Duration;

pub struct Move;

/// The phases `--move-phase` may aim at (`random` picks one of these).
pub const AIMABLE: [JobPhase; 5] = [JobPhase::Backfill, JobPhase::Fence, JobPhase::DeltaCopy, JobPhase::Cutover, JobPhase::Cleanup];

/// How often the job's phase is polled while waiting for the aimed one.
const POLL: Duration = Duration::from_millis(20);

/// Stale writes sent through a paused source leader when it wakes after the cutover.
pub const STALE_WRITES: u64 = 20;

/// The longest a fault is held waiting for its job to pass CUTOVER.
pub const HOLD_LIMIT: Duration = Duration::from_secs(20);

/// Client process ids of stale writes start here (far above any workload process); those of
/// `abort-move` at [`ABANDONED_WRITER_PROCESS`], so the two never share a process.
pub const STALE_WRITER_PROCESS: u64 = 900_000;
pub const ABANDONED_WRITER_PROCESS: u64 = 950_000;

/// How long the stale writes wait in the frozen node's sockets before it is resumed (well
/// under the client's call timeout).
const STALE_WRITES_BEFORE_RESUME: Duration = Duration::from_millis(300);

/// What the fault does to the node it picks; the turn number picks the action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    PauseSourceLeader,
    PartitionSourceLeader,
    KillMigrator,
    KillTargetLeader,
}

impl Action {
    const ROTATION: [Action; 4] = [Action::PauseSourceLeader, Action::PartitionSourceLeader, Action::KillMigrator, Action::KillTargetLeader];

    pub fn for_turn(nth: u64) -> Action {
        Action::ROTATION[(nth % 4) as usize]
    }

    fn name(self) -> &'static str {
        match self {
            Action::PauseSourceLeader => "pause-source-leader",
            Action::PartitionSourceLeader => "partition-source-leader",
            Action::KillMigrator => "kill-migrator",
            Action::KillTargetLeader => "kill-target-leader",
        }
    }

    /// The group whose leader the action hits.
    fn group(self, job: &SplitJobRecord) -> u64 {
        match self {
            Action::PauseSourceLeader | Action::PartitionSourceLeader => job.source_group,
            Action::KillMigrator => 1,
            Action::KillTargetLeader => job.target_group,
        }
    }
}

/// Parses `--move-phase`: a phase of [`AIMABLE`] (any case, with or without the protobuf
/// prefix) or `random` (`None`).
pub fn parse_move_phase(text: &str) -> Result<Option<JobPhase>, String> {
    parse_phase_among("--move-phase", text, &AIMABLE)
}

/// Parses the value of `flag`: one of `allowed` (any case, with or without the protobuf
/// prefix) or `random` (`None`).
pub(super) fn parse_phase_among(flag: &str, text: &str, allowed: &[JobPhase]) -> Result<Option<JobPhase>, String> {
    if text.eq_ignore_ascii_case("random") {
        return Ok(None);
    }
    match JobPhase::parse(text) {
        Some(p) if allowed.contains(&p) => Ok(Some(p)),
        _ => {
            let names: Vec<&str> = allowed.iter().map(|p| p.name()).collect();
            Err(format!("unknown {flag} {text:?}: expected {} or random", names.join(", ")))
        }
    }
}

/// Parses `--move-action`: one action's name, or `rotate` (`None`: one after the other).
pub fn parse_move_action(text: &str) -> Result<Option<Action>, String> {
    if text == "rotate" {
        return Ok(None);
    }
    match Action::ROTATION.iter().find(|a| a.name() == text) {
        Some(a) => Ok(Some(*a)),
        None => {
            let names: Vec<&str> = Action::ROTATION.iter().map(|a| a.name()).collect();
            Err(format!("unknown --move-action {text:?}: expected {} or rotate", names.join(", ")))
        }
    }
}

/// Has the job got to `aimed` (or past it, when the poll missed the phase itself)? Only
/// phases it may be aimed at count: a settled job is not.
pub fn reached(aimed: JobPhase, seen: JobPhase) -> bool {
    let aimable = |p: JobPhase| AIMABLE.contains(&p);
    aimable(aimed) && aimable(seen) && seen.rank() >= aimed.rank()
}

/// The job is past its cutover (or settled another way): a held fault may be healed.
pub fn past_cutover(phase: JobPhase) -> bool {
    matches!(phase, JobPhase::Cleanup | JobPhase::Done | JobPhase::Abandoned | JobPhase::Failed)
}

/// What a start-move records beside the shared fields, read back when the turn heals.
#[derive(serde::Serialize, serde::Deserialize)]
struct Aimed {
    action: Action,
    aimed_phase: String,
    #[serde(flatten)]
    job: JobFacts,
    source_group: Option<u64>,
    node: Option<String>,
    /// The moving range's group and epoch when the action fired (what a stale client holds).
    pre_move_group: Option<u64>,
    pre_move_epoch: Option<u64>,
    job_split_key: Option<String>,
    /// The split this turn started, when no job was live.
    started_split: Option<StartedSplit>,
}

/// What a stop-move records beside the shared fields.
#[derive(serde::Serialize)]
struct Healed {
    job_id: Option<u64>,
    job_phase: Option<String>,
    /// `past-cutover` (the job got there while the fault held) or `hold-limit`.
    held_until: Option<&'static str>,
    /// How long heal waited for the job before undoing the action.
    held_ms: u64,
    stale_writes: u64,
}

impl Fault for Move {
    fn name(&self) -> &'static str {
        "move"
    }

    fn effective_means(&self) -> &'static str {
        "a split job reached the aimed phase and the action hit its node"
    }

    fn style(&self) -> Style {
        Style { rgb: (220, 120, 40), label: "move" }
    }

    fn clock(&self) -> Clock {
        Clock::Own
    }

    fn start<'a>(&'a self, ctx: &'a Ctx, turn: Turn, rng: &'a mut StdRng) -> BoxFuture<'a, Started> {
        let aimed = ctx.move_phase.unwrap_or_else(|| *AIMABLE.choose(rng).unwrap_or(&JobPhase::Fence));
        Box::pin(aim(ctx, turn, aimed))
    }

    fn stop<'a>(&'a self, ctx: &'a Ctx, active: &'a Active) -> BoxFuture<'a, FaultValue> {
        Box::pin(heal(ctx, active))
    }
}

/// The split a move or abort-move turn started because no job was live, as its start event
/// records it (`started_split`): what was asked and the store's answer, or why nothing was.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub(super) enum StartedSplit {
    Asked { accepted: bool, key: String, job_id: Option<u64>, detail: Box<SplitDetail> },
    Why(String),
}

/// The live job, or one this turn starts (with the store's answer to the split).
pub(super) async fn live_or_new_job(ctx: &Ctx) -> (Option<SplitJobRecord>, Option<StartedSplit>) {
    if let Some(job) = ctx.store.live_job().await {
        return (Some(job), None);
    }
    let Some(o) = ctx.store.split_hot(true).await else { return (None, Some(StartedSplit::Why("no hot key to split yet".into()))) };
    let job = match o.job_id {
        Some(id) if o.accepted => ctx.store.split_job(id).await,
        _ => None,
    };
    (job, Some(StartedSplit::Asked { accepted: o.accepted, key: o.key, job_id: o.job_id, detail: Box::new(o.detail) }))
}

/// The split key this turn's own accepted split used (recorded as the event's `split_key`, so
/// the split checker knows the split was forced, not the store's own decision).
pub(super) fn forced_split_key(started_split: &Option<StartedSplit>, job: Option<&SplitJobRecord>) -> Option<String> {
    let accepted = matches!(started_split, Some(StartedSplit::Asked { accepted: true, .. }));
    job.filter(|_| accepted).map(|j| j.split_key.clone())
}

/// Waits (at most `budget`) for `job` to reach `aimed`; the phase seen last and whether it did.
pub(super) async fn wait_for_phase(ctx: &Ctx, job_id: u64, aimed: JobPhase, budget: Duration) -> (Option<SplitJobRecord>, bool) {
    let deadline = tokio::time::Instant::now() + budget;
    let mut last = None;
    loop {
        if let Some(job) = ctx.store.split_job(job_id).await {
            let phase = JobPhase::parse(&job.phase);
            let hit = phase.is_some_and(|p| reached(aimed, p));
            let over = phase.is_some_and(|p| p.is_terminal() || p == JobPhase::Failed);
            last = Some(job);
            if hit || over {
                return (last, hit);
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return (last, false);
        }
        tokio::time::sleep(POLL).await;
    }
}

async fn aim(ctx: &Ctx, turn: Turn, aimed: JobPhase) -> Started {
    let action = ctx.move_action.unwrap_or_else(|| Action::for_turn(turn.nth));
    let (job, started_split) = live_or_new_job(ctx).await;
    let mut facts = Aimed {
        action,
        aimed_phase: aimed.name().to_string(),
        job: job.as_ref().map(job_facts).unwrap_or_default(),
        source_group: job.as_ref().map(|j| j.source_group),
        node: None,
        pre_move_group: None,
        pre_move_epoch: None,
        job_split_key: job.as_ref().map(|j| j.split_key.clone()),
        started_split,
    };
    let mut value = FaultValue::new(Vec::new());
    value.effective = Some(false);
    value.split_key = forced_split_key(&facts.started_split, job.as_ref());
    let Some(job) = job else { return Started { value: value.with_facts(facts), undo: Undo::Nothing, summary: None } };
    // The node is found before waiting, so that the action follows the phase at once.
    let Some(node) = ctx.store.leader_of(action.group(&job)).await else {
        value.errors = Some(vec![format!("no leader known for group {}", action.group(&job))]);
        return Started { value: value.with_facts(facts), undo: Undo::Nothing, summary: None };
    };
    // Until the cutover the moving range keeps its pre-move group and epoch: asked before
    // waiting, so that nothing delays the action once the phase is seen.
    if let Some((group, epoch)) = ctx.store.route_at(&job.split_key).await {
        facts.pre_move_group = Some(group);
        facts.pre_move_epoch = Some(epoch);
    }
    let (seen, hit) = wait_for_phase(ctx, job.id, aimed, turn.budget).await;
    facts.job.phase_seen = seen.as_ref().map(|j| j.phase.clone());
    if !hit {
        return Started { value: value.with_facts(facts), undo: Undo::Nothing, summary: None };
    }
    let (undo, errors) = act(ctx, action, &node).await;
    value.effective = Some(errors.is_empty());
    value.leader = Some(true);
    value.targets = vec![node.clone()];
    value.errors = Some(errors);
    facts.node = Some(node.clone());
    let summary = Some(format!("move {} at {}: {node}", action.name(), aimed.name()));
    Started { value: value.with_facts(facts), undo, summary }
}

/// What a turn records of the job it acts on, before it has seen a phase.
pub(super) fn job_facts(job: &SplitJobRecord) -> JobFacts {
    JobFacts { route_id: Some(job.route_id), target_group: Some(job.target_group), job_id: Some(job.id), phase_seen: None }
}

/// Applies `action` to `node`; its undo (only for what succeeded) and the errors.
async fn act(ctx: &Ctx, action: Action, node: &str) -> (Undo, Vec<String>) {
    let done = |r: anyhow::Result<()>, undo: Undo| match r {
        Ok(()) => (undo, Vec::new()),
        Err(e) => (Undo::Nothing, vec![format!("{node}: {e:#}")]),
    };
    match action {
        Action::PauseSourceLeader => done(ctx.control.pause(node).await, Undo::Resume { nodes: vec![node.to_string()] }),
        Action::KillMigrator | Action::KillTargetLeader => {
            done(ctx.control.kill(node).await, Undo::Restart { nodes: vec![node.to_string()] })
        }
        Action::PartitionSourceLeader => {
            let nodes = ctx.node_names();
            // The leader shape with this node as the "hot leader": it alone is cut off.
            let mut rng = <StdRng as rand::SeedableRng>::seed_from_u64(0);
            let g = grudge::grudge(PartitionMode::Leader, &nodes, Some(node), &mut rng);
            let errors = super::partition::apply_grudge(ctx, &g).await;
            (Undo::Network { nodes, netem: false }, errors)
        }
    }
}

/// Waits until the job is past its cutover (at most the budget), then heals; a paused
/// source leader woken after the cutover then sends the stale writes.
async fn heal(ctx: &Ctx, active: &Active) -> FaultValue {
    let aimed: Option<Aimed> = active.started.facts_as();
    let job_id = aimed.as_ref().and_then(|a| a.job.job_id);
    let held_since = tokio::time::Instant::now();
    let (job_phase, held_until) = match (job_id, active.undo == Undo::Nothing) {
        (Some(id), false) => hold_past_cutover(ctx, id).await,
        _ => (None, None),
    };
    let held_ms = held_since.elapsed().as_millis() as u64;
    let stale_through = aimed.as_ref().is_some_and(|a| a.action == Action::PauseSourceLeader)
        && job_phase.as_deref().and_then(JobPhase::parse).is_some_and(|p| p == JobPhase::Cleanup || p == JobPhase::Done);
    let stale = match aimed.as_ref().map(|a| (a.node.as_deref(), a.pre_move_group, a.pre_move_epoch, a.job_split_key.as_deref(), job_id)) {
        Some((Some(node), Some(group), Some(epoch), Some(key), Some(job))) if stale_through => {
            Some(StaleWrites { node, group, epoch, split_key: key, job, tag: "stale", first_process: STALE_WRITER_PROCESS + active.turn.nth * STALE_WRITES })
        }
        _ => None,
    };
    // The stale writes are sent while the old owner is still frozen, so that it handles
    // them the moment it wakes, with the routing view it had before the cutover.
    let resume_later = async {
        if stale.is_some() {
            tokio::time::sleep(STALE_WRITES_BEFORE_RESUME).await;
        }
        super::undo(ctx, &active.undo).await
    };
    let send = async {
        match &stale {
            Some(w) => send_stale_writes(ctx, w).await,
            None => 0,
        }
    };
    let (errors, stale_writes) = tokio::join!(resume_later, send);
    let mut value = FaultValue::new(active.targets.clone());
    value.effective = active.started.effective;
    value.healed = Some(errors.is_empty());
    value.errors = (!errors.is_empty()).then_some(errors);
    value.with_facts(Healed { job_id, job_phase, held_until, held_ms, stale_writes })
}

/// Polls the job until it is past CUTOVER or [`HOLD_LIMIT`] has passed: its last phase
/// and which of the two ended the hold.
async fn hold_past_cutover(ctx: &Ctx, job_id: u64) -> (Option<String>, Option<&'static str>) {
    let deadline = tokio::time::Instant::now() + HOLD_LIMIT;
    loop {
        let phase = ctx.store.split_job(job_id).await.map(|j| j.phase);
        if phase.as_deref().and_then(JobPhase::parse).is_some_and(past_cutover) {
            return (phase, Some("past-cutover"));
        }
        if tokio::time::Instant::now() >= deadline {
            return (phase, Some("hold-limit"));
        }
        tokio::time::sleep(POLL * 5).await;
    }
}

/// Where and under what the stale writes of one turn go.
pub(super) struct StaleWrites<'a> {
    pub node: &'a str,
    pub group: u64,
    pub epoch: u64,
    pub split_key: &'a str,
    pub job: u64,
    /// Names the keys and values: `<split key>~<tag>-<job>-<i>`.
    pub tag: &'static str,
    /// The client process of the first write; the others follow it.
    pub first_process: u64,
}

/// Sends [`STALE_WRITES`] writes at once through `w.node` to `w.group` under `w.epoch`, each
/// recorded as a `stale-write` invoke and its completion (one process per write). Returns
/// how many were sent.
pub(super) async fn send_stale_writes(ctx: &Ctx, w: &StaleWrites<'_>) -> u64 {
    let one = |i: u64| async move {
        let process = w.first_process + i;
        let written = format!("{}-{}-{i}", w.tag, w.job);
        let key = format!("{}~{written}", w.split_key);
        let value = serde_json::json!({"value": written, "group": w.group, "epoch": w.epoch});
        ctx.sink.record(stale_op(OpType::Invoke, process, &key, value.clone(), w.node, None, None));
        let (kind, meta, error) = match ctx.store.stale_write(w.node, &key, &written, w.group, w.epoch).await {
            Ok(meta) => (OpType::Ok, meta, None),
            Err(e) if e.definite => (OpType::Fail, None, Some(e.error)),
            Err(e) => (OpType::Info, None, Some(e.error)),
        };
        ctx.sink.record(stale_op(kind, process, &key, value, w.node, meta, error));
    };
    futures::future::join_all((0..STALE_WRITES).map(one)).await;
    STALE_WRITES
}

fn stale_op(kind: OpType, process: u64, key: &str, value: serde_json::Value, node: &str, meta: Option<CommitMeta>, error: Option<String>) -> Op {
    Op {
        index: 0,
        kind,
        process: Process::Client(process),
        f: STALE_WRITE.into(),
        key: Some(key.into()),
        value,
        time: 0,
        node: Some(node.into()),
        error: error.map(Into::into),
        meta: meta.map(Box::new),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_start_move_records_is_read_back_when_it_heals() {
        let aimed = Aimed {
            action: Action::PauseSourceLeader,
            aimed_phase: "BACKFILL".into(),
            job: JobFacts { route_id: Some(5), target_group: Some(2), job_id: Some(3), phase_seen: Some("BACKFILL".into()) },
            source_group: Some(1),
            node: Some("n1".into()),
            pre_move_group: Some(1),
            pre_move_epoch: Some(4),
            job_split_key: Some("reg/00001".into()),
            started_split: None,
        };
        let mut value = FaultValue::new(vec!["n1".into()]).with_facts(&aimed);
        value.effective = Some(true);
        let reread: FaultValue = serde_json::from_str(&value.to_json().to_string()).unwrap();
        let back: Aimed = reread.facts_as().expect("the facts read back");
        assert_eq!(back.action, Action::PauseSourceLeader);
        assert_eq!(back.job, aimed.job);
        assert_eq!((back.node, back.pre_move_epoch, back.job_split_key), (aimed.node, Some(4), aimed.job_split_key));
        assert_eq!(reread.to_json()["action"], "pause-source-leader", "the recorded name is unchanged");
    }

    #[test]
    fn only_a_split_this_turn_asked_for_and_the_store_accepted_names_the_forced_split_key() {
        let job = SplitJobRecord {
            id: 3,
            route_id: 5,
            split_key: "reg/00001".into(),
            source_group: 1,
            target_group: 2,
            phase: "BACKFILL".into(),
            new_epoch: None,
        };
        let asked = |accepted| StartedSplit::Asked {
            accepted,
            key: "reg/00001".into(),
            job_id: Some(3),
            detail: Box::new(SplitDetail::Answer(Default::default())),
        };
        let recorded = serde_json::to_value(Some(asked(true))).unwrap();
        assert_eq!((&recorded["accepted"], &recorded["job_id"]), (&serde_json::json!(true), &serde_json::json!(3)));
        let reread: Option<StartedSplit> = serde_json::from_value(recorded).unwrap();
        assert_eq!(forced_split_key(&reread, Some(&job)), Some("reg/00001".to_string()));
        assert_eq!(forced_split_key(&Some(asked(false)), Some(&job)), None, "refused");
        let why = Some(StartedSplit::Why("no hot key to split yet".into()));
        assert_eq!(serde_json::to_value(&why).unwrap(), serde_json::json!("no hot key to split yet"));
        assert_eq!(forced_split_key(&why, Some(&job)), None);
        assert_eq!(forced_split_key(&None, Some(&job)), None, "a live job the turn did not start");
    }

    #[test]
    fn move_phase_parses_aimable_phases_and_random_only() {
        assert_eq!(parse_move_phase("random"), Ok(None));
        assert_eq!(parse_move_phase("DELTA_COPY"), Ok(Some(JobPhase::DeltaCopy)));
        assert_eq!(parse_move_phase("split_job_phase_fence"), Ok(Some(JobPhase::Fence)));
        assert!(parse_move_phase("DONE").unwrap_err().contains("expected BACKFILL"));
        assert!(parse_move_phase("sideways").is_err());
    }

    #[test]
    fn a_missed_phase_still_counts_once_the_job_is_past_it() {
        assert!(reached(JobPhase::Fence, JobPhase::Fence));
        assert!(reached(JobPhase::Fence, JobPhase::DeltaCopy));
        assert!(!reached(JobPhase::DeltaCopy, JobPhase::Fence));
        assert!(!reached(JobPhase::Cleanup, JobPhase::Done), "a settled job is not aimed at");
        assert!(!reached(JobPhase::Backfill, JobPhase::Planned));
    }

    #[test]
    fn move_action_parses_each_action_and_rotate_only() {
        assert_eq!(parse_move_action("rotate"), Ok(None));
        assert_eq!(parse_move_action("kill-migrator"), Ok(Some(Action::KillMigrator)));
        for a in Action::ROTATION {
            assert_eq!(serde_json::to_value(a).unwrap(), a.name(), "the event spells it as the flag does");
        }
        assert!(parse_move_action("kill").unwrap_err().contains("expected pause-source-leader"));
    }

    #[test]
    fn actions_rotate_starting_with_the_paused_source_leader() {
        assert_eq!(Action::for_turn(0), Action::PauseSourceLeader);
        assert_eq!(Action::for_turn(2), Action::KillMigrator);
        assert_eq!(Action::for_turn(5), Action::PartitionSourceLeader);
        let job = SplitJobRecord { id: 1, route_id: 2, split_key: "k".into(), source_group: 2, target_group: 3, phase: "FENCE".into(), new_epoch: None };
        assert_eq!(Action::KillTargetLeader.group(&job), 3);
        assert_eq!(Action::PauseSourceLeader.group(&job), 2);
        assert_eq!(Action::KillMigrator.group(&job), 1);
    }

    #[test]
    fn held_faults_heal_only_past_the_cutover() {
        assert!(!past_cutover(JobPhase::Cutover));
        assert!(!past_cutover(JobPhase::DeltaCopy));
        assert!(past_cutover(JobPhase::Cleanup));
        assert!(past_cutover(JobPhase::Abandoned));
    }
}

//! `txn-move`: a fault aimed at a transaction's commit window rather than at a clock. Each
//! turn it
//! 1. arms a hold on one node (the turn picks which; refkv's test-only `TxnHold`): the next
//!    transaction that node coordinates that writes a key besides its primary stops with
//!    all its locks in place, between its commit timestamp and its primary's commit;
//! 2. waits for that transaction to be listed as held;
//! 3. moves one of its keys to another group (a cross-group split at the key, after a
//!    same-group split that keeps the transaction's other keys out of the moving range when
//!    they would go along), so the move's copies meet the live lock;
//! 4. waits until the job reaches the phase its [`Aim`] releases at and releases the
//!    transaction, which then commits.
//!
//! The aims (`--txn-move-aim`, by default one drawn per turn from the run's seed, so a run
//! of few turns still meets every aim over a few runs):
//! - `secondary`: a secondary write key moves; released in DELTA_COPY, past the source's
//!   fence, so the secondary's commit must find its lock at the new owner;
//! - `primary-cutover`: the primary moves; released once the job is in CUTOVER, when the
//!   copies are complete, so the commit must be refused by the old owner and go to the new;
//! - `primary-delta`: the primary moves; released once the job is in DELTA_COPY, past the
//!   source's fence and (mostly) after the delta copy read the key, so the commit must wait
//!   for the new owner;
//! - `primary-backfill`: the primary moves; released while the job is still in BACKFILL,
//!   after its copy read the lock, so the commit lands at the source with a commit
//!   timestamp older than the move's start and only the delta copy can carry it.
//!
//! - `coordinator-kill` (only when named: the drawn aims are those that move a range): no
//!   move. The hold is armed after the primary's commit, and the node coordinating the held
//!   transaction is killed while it holds it: the transaction is committed, its secondary
//!   locks are live and nobody will commit them but the readers that meet them and roll
//!   them forward from the committed primary.
//!
//! Its `stop` waits for the job to settle (at most the turn's budget), or, after a
//! `coordinator-kill`, keeps the node down for [`KILLED_FOR`] and starts it again. Runs on
//! its own clock and acts through the store's API only, but for the kill. Effective when
//! the move was accepted, the job was seen in the aim's phase (for `primary-backfill`: in
//! BACKFILL itself, not later) and the transaction was still held then; for
//! `coordinator-kill`, when the node was killed with the transaction held. The events record
//! the aim, the node, the transaction (`start_ts`, `commit_ts`, primary), the moved key, the
//! job and the phase seen at the release, or `killed`.
//!
//! Invariants: every turn that armed a hold releases it (whatever went wrong), so no
//! transaction waits longer than the move needs, and never longer than [`ARM_HOLD`] (the
//! store's own bound); a turn that cannot arm anywhere does nothing else.

use super::move_phase::{reached, wait_for_phase};
use super::{Active, Clock, Ctx, Fault, Started, Style, Turn, Undo};
use crate::store_control::{HoldCommand, HoldPoint, TxnInFlight};
use analysis::history::txn_move::{TxnMoveFacts, HELD_TXN_PATIENCE};
use analysis::history::{FaultValue, JobPhase};
use futures::future::BoxFuture;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use std::time::Duration;

pub struct TxnMove;

/// How long the store holds the transaction if nobody releases it. Below the workload
/// client's 2 s call timeout, so the held transaction's outcome still reaches its client.
pub const ARM_HOLD: Duration = Duration::from_millis(1500);

/// The window a turn aims at: which key of the held transaction moves, and the job phase
/// at which the transaction is released.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aim {
    Secondary,
    PrimaryCutover,
    PrimaryDelta,
    PrimaryBackfill,
    CoordinatorKill,
}

impl Aim {
    const ALL: [Aim; 5] = [Aim::Secondary, Aim::PrimaryCutover, Aim::PrimaryDelta, Aim::PrimaryBackfill, Aim::CoordinatorKill];
    /// The aims a turn draws from when none is named: those that move a range (a run's
    /// detection rates were measured on these).
    const DRAWN: [Aim; 4] = [Aim::Secondary, Aim::PrimaryCutover, Aim::PrimaryDelta, Aim::PrimaryBackfill];

    pub fn name(self) -> &'static str {
        match self {
            Aim::Secondary => "secondary",
            Aim::PrimaryCutover => "primary-cutover",
            Aim::PrimaryDelta => "primary-delta",
            Aim::PrimaryBackfill => "primary-backfill",
            Aim::CoordinatorKill => "coordinator-kill",
        }
    }

    /// The phase the job must reach before the held transaction is released (`None`: the
    /// aim moves nothing).
    pub fn release_at(self) -> Option<JobPhase> {
        match self {
            Aim::Secondary => Some(JobPhase::DeltaCopy),
            Aim::PrimaryCutover => Some(JobPhase::Cutover),
            Aim::PrimaryDelta => Some(JobPhase::DeltaCopy),
            Aim::PrimaryBackfill => Some(JobPhase::Backfill),
            Aim::CoordinatorKill => None,
        }
    }

    fn moves_primary(self) -> bool {
        self != Aim::Secondary
    }

    /// Where the hold stops its transaction: after the primary's commit for the aim that
    /// moves nothing and kills the coordinator instead, else at the commit point.
    fn hold_point(self) -> HoldPoint {
        match self.release_at() {
            None => HoldPoint::AfterPrimaryCommit,
            Some(_) => HoldPoint::CommitPoint,
        }
    }

    /// The command that arms this aim's hold.
    fn arm(self) -> HoldCommand {
        HoldCommand::Arm {
            for_ms: ARM_HOLD.as_millis() as u64,
            at: self.hold_point(),
        }
    }

    /// Whether a release with the job seen in `phase` hit the window.
    fn hit(self, phase: Option<JobPhase>) -> bool {
        match (self, phase) {
            (Aim::PrimaryBackfill, p) => p == Some(JobPhase::Backfill),
            (_, Some(p)) => self.release_at().is_some_and(|at| reached(at, p)),
            (_, None) => false,
        }
    }

    fn drawn(rng: &mut StdRng) -> Aim {
        *Aim::DRAWN.choose(rng).unwrap_or(&Aim::Secondary)
    }
}

/// Parses `--txn-move-aim`: one aim's name, or `random` (`None`: one drawn per turn).
pub fn parse_txn_move_aim(text: &str) -> Result<Option<Aim>, String> {
    if text == "random" {
        return Ok(None);
    }
    Aim::ALL.into_iter().find(|a| a.name() == text).map(Some).ok_or_else(|| {
        let names: Vec<&str> = Aim::ALL.iter().map(|a| a.name()).collect();
        format!("unknown --txn-move-aim {text:?}: expected {} or random", names.join(", "))
    })
}

/// How often the held transaction's node is asked.
const POLL: Duration = Duration::from_millis(10);

/// How long a `coordinator-kill` keeps the killed node down (at most the turn's budget):
/// long enough for readers to meet the held transaction's secondary locks with their
/// coordinator gone.
pub const KILLED_FOR: Duration = Duration::from_secs(2);

/// What a stop-txn-move records beside the shared fields.
#[derive(serde::Serialize)]
struct Settled {
    job_id: Option<u64>,
    job_phase: Option<String>,
}

impl Fault for TxnMove {
    fn name(&self) -> &'static str {
        "txn-move"
    }

    fn effective_means(&self) -> &'static str {
        "a transaction was held with its locks in place while the range of one of its keys moved, and released in the phase its aim names; or (coordinator-kill) its coordinating node was killed holding it after its primary's commit"
    }

    fn style(&self) -> Style {
        Style { rgb: (200, 60, 140), label: "txn move" }
    }

    fn clock(&self) -> Clock {
        Clock::Own
    }

    fn acts_on_nodes(&self) -> bool {
        false
    }

    fn start<'a>(&'a self, ctx: &'a Ctx, turn: Turn, rng: &'a mut StdRng) -> BoxFuture<'a, Started> {
        let aim = ctx.txn_move_aim.unwrap_or_else(|| Aim::drawn(rng));
        Box::pin(aim_at(ctx, turn, aim))
    }

    fn stop<'a>(&'a self, ctx: &'a Ctx, active: &'a Active) -> BoxFuture<'a, FaultValue> {
        Box::pin(settle(ctx, active))
    }
}

/// The nodes in the order a turn tries them: from the turn's own, round the ring.
fn node_order(nodes: &[String], nth: u64) -> Vec<String> {
    let n = nodes.len().max(1);
    (0..nodes.len()).map(|i| nodes[(nth as usize + i) % n].clone()).collect()
}

/// The transaction the hold caught (held, with a secondary write), if listed.
fn held_one(listed: &[TxnInFlight]) -> Option<&TxnInFlight> {
    listed.iter().find(|t| t.held && !t.secondary_writes.is_empty())
}

async fn aim_at(ctx: &Ctx, turn: Turn, aim: Aim) -> Started {
    let mut facts = TxnMoveFacts {
        aim: aim.name().to_string(),
        release_at: aim.release_at().map(|p| p.name().to_string()),
        ..TxnMoveFacts::default()
    };
    let mut value = FaultValue::new(Vec::new());
    value.effective = Some(false);
    let Some(node) = arm_one(ctx, turn.nth, aim, &mut facts).await else {
        return Started { value: value.with_facts(facts), undo: Undo::Nothing, summary: None };
    };
    facts.node = Some(node.clone());
    value.targets = vec![node.clone()];
    let patience = HELD_TXN_PATIENCE.min(turn.budget.max(POLL));
    let Some(txn) = wait_for_held(ctx, &node, patience).await else {
        release(ctx, &node).await;
        let point = match aim.hold_point() {
            HoldPoint::AfterPrimaryCommit => "its primary's commit",
            HoldPoint::CommitPoint => "its commit point",
        };
        facts.why_not = Some(format!("no transaction with a secondary write reached {point}"));
        return Started { value: value.with_facts(facts), undo: Undo::Nothing, summary: None };
    };
    facts.txn = Some(txn.clone());
    let Some(release_at) = aim.release_at() else {
        return kill_the_coordinator(ctx, node, txn, value, facts).await;
    };
    let moved = if aim.moves_primary() { move_the_primary(ctx, &txn, &mut facts).await } else { move_a_secondary(ctx, &txn, &mut facts).await };
    let Some(job_id) = moved else {
        release(ctx, &node).await;
        return Started { value: value.with_facts(facts), undo: Undo::AwaitJob { job_id: None, accepted: false }, summary: None };
    };
    value.key = facts.moved_key.clone();
    value.split_key = facts.moved_key.clone();
    let (seen, _) = wait_for_phase(ctx, job_id, release_at, turn.budget).await;
    let hit = aim.hit(seen.as_ref().and_then(|j| JobPhase::parse(&j.phase)));
    facts.job.phase_seen = seen.map(|j| j.phase);
    let still_held = ctx.store.txn_hold(&node, HoldCommand::List).await.ok().map(|l| l.iter().any(|t| t.start_ts == txn.start_ts && t.held));
    release(ctx, &node).await;
    facts.still_held = still_held;
    value.effective = Some(hit && still_held == Some(true));
    let summary = Some(format!("txn-move {} of txn {} via {node}", facts.moved_key.as_deref().unwrap_or("?"), txn.start_ts));
    Started { value: value.with_facts(facts), undo: Undo::AwaitJob { job_id: Some(job_id), accepted: true }, summary }
}

/// Kills `node`, which holds `txn` after its primary's commit; the turn's start. Effective
/// when the kill succeeded: the store's hold outlives it only in the locks it left.
async fn kill_the_coordinator(ctx: &Ctx, node: String, txn: TxnInFlight, mut value: FaultValue, mut facts: TxnMoveFacts) -> Started {
    let summary = Some(format!("txn-move killed {node}, coordinator of committed txn {}", txn.start_ts));
    match ctx.control.kill(&node).await {
        Ok(()) => {
            facts.killed = Some(true);
            value.effective = Some(true);
            Started { value: value.with_facts(facts), undo: Undo::Restart { nodes: vec![node] }, summary }
        }
        Err(e) => {
            release(ctx, &node).await;
            facts.killed = Some(false);
            value.errors = Some(vec![format!("{node}: {e:#}")]);
            Started { value: value.with_facts(facts), undo: Undo::Nothing, summary: None }
        }
    }
}

/// Arms the hold the aim needs on the first node that accepts it, from the turn's own;
/// that node.
async fn arm_one(ctx: &Ctx, nth: u64, aim: Aim, facts: &mut TxnMoveFacts) -> Option<String> {
    let mut errors = Vec::new();
    for node in node_order(&ctx.node_names(), nth) {
        match ctx.store.txn_hold(&node, aim.arm()).await {
            Ok(_) => return Some(node),
            Err(e) => errors.push(format!("{node}: {e}")),
        }
    }
    facts.why_not = Some(format!("no node took the hold: {}", errors.join("; ")));
    None
}

/// Polls `node` until a held transaction is listed, at most `patience`.
async fn wait_for_held(ctx: &Ctx, node: &str, patience: Duration) -> Option<TxnInFlight> {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        if let Ok(listed) = ctx.store.txn_hold(node, HoldCommand::List).await {
            if let Some(t) = held_one(&listed) {
                return Some(t.clone());
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Moves the first of the transaction's secondary write keys the store agrees to move
/// (keeping its primary where it is); the job's id.
async fn move_a_secondary(ctx: &Ctx, txn: &TxnInFlight, facts: &mut TxnMoveFacts) -> Option<u64> {
    let keep = [txn.primary.clone()];
    let mut refusals = Vec::new();
    for key in &txn.secondary_writes {
        let Some(out) = ctx.store.move_key(key, &keep).await else {
            refusals.push(format!("{key}: the store cannot move keys"));
            break;
        };
        if let (true, Some(job)) = (out.accepted, out.job_id) {
            facts.moved_key = Some(key.clone());
            facts.job.route_id = out.route_id;
            facts.job.target_group = out.target_group;
            facts.job.job_id = Some(job);
            facts.split = Some(out.detail);
            return Some(job);
        }
        refusals.push(format!("{key}: {}", out.detail));
    }
    facts.why_not = Some(format!("no secondary key could be moved: {}", refusals.join("; ")));
    None
}

/// Moves the transaction's primary (keeping its secondary write keys where they are); the
/// job's id.
async fn move_the_primary(ctx: &Ctx, txn: &TxnInFlight, facts: &mut TxnMoveFacts) -> Option<u64> {
    let key = &txn.primary;
    let refusal = match ctx.store.move_key(key, &txn.secondary_writes).await {
        None => "the store cannot move keys".to_string(),
        Some(out) => match (out.accepted, out.job_id) {
            (true, Some(job)) => {
                facts.moved_key = Some(key.clone());
                facts.job.route_id = out.route_id;
                facts.job.target_group = out.target_group;
                facts.job.job_id = Some(job);
                facts.split = Some(out.detail);
                return Some(job);
            }
            _ => out.detail.to_string(),
        },
    };
    facts.why_not = Some(format!("the primary {key} could not be moved: {refusal}"));
    None
}

/// Releases what `node` holds (best effort: the store's own bound ends the hold anyway).
async fn release(ctx: &Ctx, node: &str) {
    if let Err(e) = ctx.store.txn_hold(node, HoldCommand::Release).await {
        tracing::warn!(node, "txn-move: releasing the held transaction failed ({e}); it goes on after {ARM_HOLD:?}");
    }
}

/// Waits for the turn's job, if it started one, to settle, or starts the killed coordinator
/// again after [`KILLED_FOR`]; the stop event's value.
async fn settle(ctx: &Ctx, active: &Active) -> FaultValue {
    if let Undo::Restart { .. } = active.undo {
        tokio::time::sleep(KILLED_FOR.min(active.turn.budget)).await;
        let mut value = super::heal(ctx, active).await;
        value.effective = active.started.effective;
        return value;
    }
    let mut value = FaultValue::new(active.targets.clone());
    value.effective = active.started.effective;
    value.key = active.started.key.clone();
    let job_id = match active.undo {
        Undo::AwaitJob { job_id: Some(job), accepted: true } => Some(job),
        _ => None,
    };
    let job_phase = match job_id {
        Some(job) => ctx.wait_for_job(job, active.turn.budget).await,
        None => None,
    };
    value.with_facts(Settled { job_id, job_phase })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn txn(held: bool, secondaries: &[&str]) -> TxnInFlight {
        TxnInFlight {
            start_ts: 3,
            commit_ts: Some(4),
            primary: "p".into(),
            secondary_writes: secondaries.iter().map(|s| s.to_string()).collect(),
            held,
        }
    }

    #[test]
    fn turns_start_at_their_own_node_and_go_round() {
        let nodes: Vec<String> = ["n1", "n2", "n3"].iter().map(|s| s.to_string()).collect();
        assert_eq!(node_order(&nodes, 0), ["n1", "n2", "n3"]);
        assert_eq!(node_order(&nodes, 4), ["n2", "n3", "n1"]);
        assert!(node_order(&[], 3).is_empty());
    }

    #[test]
    fn only_a_held_transaction_with_a_secondary_write_is_aimed_at() {
        assert_eq!(held_one(&[txn(false, &["s"]), txn(true, &[])]), None);
        assert_eq!(held_one(&[txn(false, &["s"]), txn(true, &["s"])]), Some(&txn(true, &["s"])));
    }

    #[test]
    fn the_hold_ends_before_the_clients_call_timeout_and_a_secondary_is_released_past_the_fence() {
        assert!(ARM_HOLD < Duration::from_secs(2));
        let rank = |a: Aim| a.release_at().map(JobPhase::rank);
        assert!(rank(Aim::Secondary) > Some(JobPhase::Fence.rank()));
        assert!(rank(Aim::PrimaryCutover) > Some(JobPhase::DeltaCopy.rank()), "both copies are done");
        assert_eq!(Aim::PrimaryDelta.release_at(), Some(JobPhase::DeltaCopy), "past the fence, before the cutover");
    }

    #[test]
    fn aims_parse_by_name_or_random_and_draws_follow_the_seed_and_meet_every_aim() {
        assert_eq!(parse_txn_move_aim("random"), Ok(None));
        assert_eq!(parse_txn_move_aim("primary-backfill"), Ok(Some(Aim::PrimaryBackfill)));
        assert_eq!(parse_txn_move_aim("coordinator-kill"), Ok(Some(Aim::CoordinatorKill)));
        assert!(parse_txn_move_aim("rotate")
            .unwrap_err()
            .contains("expected secondary, primary-cutover, primary-delta, primary-backfill, coordinator-kill or random"));
        let draws = |seed| {
            let mut rng = <StdRng as rand::SeedableRng>::seed_from_u64(seed);
            (0..30).map(|_| Aim::drawn(&mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(draws(7), draws(7), "a seed gives the same aims");
        assert!(Aim::DRAWN.iter().all(|a| draws(7).contains(a)));
        assert!(!draws(7).contains(&Aim::CoordinatorKill), "a kill is aimed only when named");
    }

    #[test]
    fn only_the_coordinator_kill_holds_after_the_primary_commit_and_it_releases_at_no_phase() {
        for aim in Aim::ALL {
            let after = aim.hold_point() == HoldPoint::AfterPrimaryCommit;
            assert_eq!(after, aim == Aim::CoordinatorKill, "{aim:?}");
            assert_eq!(aim.release_at().is_none(), aim == Aim::CoordinatorKill, "{aim:?}");
        }
        assert!(!Aim::CoordinatorKill.hit(Some(JobPhase::Cutover)), "it aims at no phase");
    }

    #[test]
    fn a_backfill_release_hits_only_in_backfill_and_the_others_at_or_past_their_phase() {
        assert!(Aim::PrimaryBackfill.hit(Some(JobPhase::Backfill)));
        assert!(!Aim::PrimaryBackfill.hit(Some(JobPhase::Fence)), "the commit would meet the fence, not the window");
        assert!(Aim::PrimaryCutover.hit(Some(JobPhase::Cleanup)));
        assert!(!Aim::PrimaryCutover.hit(Some(JobPhase::DeltaCopy)));
        assert!(!Aim::Secondary.hit(Some(JobPhase::Done)), "a settled job is not a window");
        assert!(!Aim::Secondary.hit(None));
    }
}

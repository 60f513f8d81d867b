//! `txn-move`: a fault aimed at a transaction's commit window rather than at a clock. Each
//! turn it
//! 1. arms a hold on one node (the turn picks which; refkv's test-only `TxnHold`): the next
//!    transaction that node coordinates that writes a key besides its primary stops with
//!    all its locks in place, between its commit timestamp and its primary's commit;
//! 2. waits for that transaction to be listed as held;
//! 3. moves one of its secondary write keys to another group (a cross-group split at the
//!    key, after a same-group split that keeps the primary out of the moving range when it
//!    would go along), so the move's copy and fence meet the live secondary lock;
//! 4. waits until the job reaches [`RELEASE_AT`] — past the source's fence, so the
//!    secondary's commit can no longer land at the source before the copy that carries the
//!    range — and releases the transaction, which then commits.
//!
//! Its `stop` waits for the job to settle (at most the turn's budget). Runs on its own
//! clock and acts through the store's API only. Effective when the move was accepted, the
//! job reached [`RELEASE_AT`] and the transaction was still held then. The events record
//! the node, the transaction (`start_ts`, `commit_ts`, primary), the moved key, the job and
//! the phase seen at the release.
//!
//! Invariants: every turn that armed a hold releases it (whatever went wrong), so no
//! transaction waits longer than the move needs, and never longer than [`ARM_HOLD`] (the
//! store's own bound); a turn that cannot arm anywhere does nothing else.

use super::move_phase::wait_for_phase;
use super::{Active, Clock, Ctx, Fault, Started, Style, Turn, Undo};
use crate::oracle::TxnInFlight;
use analysis::history::{FaultValue, JobPhase};
use futures::future::BoxFuture;
use rand::rngs::StdRng;
use std::time::Duration;

pub struct TxnMove;

/// How long the store holds the transaction if nobody releases it. Below the workload
/// client's 2 s call timeout, so the held transaction's outcome still reaches its client.
pub const ARM_HOLD: Duration = Duration::from_millis(1500);

/// The phase the job must reach before the held transaction is released.
pub const RELEASE_AT: JobPhase = JobPhase::DeltaCopy;

/// How long a turn waits for a transaction to take the hold.
const FIND_PATIENCE: Duration = Duration::from_secs(5);

/// How often the held transaction's node is asked.
const POLL: Duration = Duration::from_millis(10);

/// What a start-txn-move records beside the shared fields.
#[derive(Default, serde::Serialize)]
struct Aimed {
    node: Option<String>,
    txn: Option<TxnInFlight>,
    /// The secondary key moved.
    moved_key: Option<String>,
    route_id: Option<u64>,
    target_group: Option<u64>,
    job_id: Option<u64>,
    release_at: &'static str,
    /// The job's phase when the transaction was released.
    phase_seen: Option<String>,
    /// Whether the transaction was still held when the job reached the phase.
    still_held: Option<bool>,
    split: Option<serde_json::Value>,
    why_not: Option<String>,
}

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
        "a transaction was held with its locks in place while the range of one of its secondary write keys moved past the source's fence"
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

    fn start<'a>(&'a self, ctx: &'a Ctx, turn: Turn, _rng: &'a mut StdRng) -> BoxFuture<'a, Started> {
        Box::pin(aim(ctx, turn))
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

async fn aim(ctx: &Ctx, turn: Turn) -> Started {
    let mut facts = Aimed { release_at: RELEASE_AT.name(), ..Aimed::default() };
    let mut value = FaultValue::new(Vec::new());
    value.effective = Some(false);
    let Some(node) = arm_one(ctx, turn.nth, &mut facts).await else {
        return Started { value: value.with_facts(facts), undo: Undo::Nothing, summary: None };
    };
    facts.node = Some(node.clone());
    value.targets = vec![node.clone()];
    let patience = FIND_PATIENCE.min(turn.budget.max(POLL));
    let Some(txn) = wait_for_held(ctx, &node, patience).await else {
        release(ctx, &node).await;
        facts.why_not = Some("no transaction with a secondary write reached its commit point".into());
        return Started { value: value.with_facts(facts), undo: Undo::Nothing, summary: None };
    };
    facts.txn = Some(txn.clone());
    let moved = move_a_secondary(ctx, &txn, &mut facts).await;
    let Some(job_id) = moved else {
        release(ctx, &node).await;
        return Started { value: value.with_facts(facts), undo: Undo::AwaitJob { job_id: None, accepted: false }, summary: None };
    };
    value.key = facts.moved_key.clone();
    value.split_key = facts.moved_key.clone();
    let (seen, hit) = wait_for_phase(ctx, job_id, RELEASE_AT, turn.budget).await;
    facts.phase_seen = seen.map(|j| j.phase);
    let still_held = ctx.oracle.txn_hold(&node, 0, false).await.ok().map(|l| l.iter().any(|t| t.start_ts == txn.start_ts && t.held));
    release(ctx, &node).await;
    facts.still_held = still_held;
    value.effective = Some(hit && still_held == Some(true));
    let summary = Some(format!("txn-move {} of txn {} via {node}", facts.moved_key.as_deref().unwrap_or("?"), txn.start_ts));
    Started { value: value.with_facts(facts), undo: Undo::AwaitJob { job_id: Some(job_id), accepted: true }, summary }
}

/// Arms the hold on the first node that accepts it, from the turn's own; that node.
async fn arm_one(ctx: &Ctx, nth: u64, facts: &mut Aimed) -> Option<String> {
    let mut errors = Vec::new();
    for node in node_order(&ctx.node_names(), nth) {
        match ctx.oracle.txn_hold(&node, ARM_HOLD.as_millis() as u64, false).await {
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
        if let Ok(listed) = ctx.oracle.txn_hold(node, 0, false).await {
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
async fn move_a_secondary(ctx: &Ctx, txn: &TxnInFlight, facts: &mut Aimed) -> Option<u64> {
    let keep = [txn.primary.clone()];
    let mut refusals = Vec::new();
    for key in &txn.secondary_writes {
        let Some(out) = ctx.oracle.move_key(key, &keep).await else {
            refusals.push(format!("{key}: the store cannot move keys"));
            break;
        };
        if let (true, Some(job)) = (out.accepted, out.job_id) {
            facts.moved_key = Some(key.clone());
            facts.route_id = out.route_id;
            facts.target_group = out.target_group;
            facts.job_id = Some(job);
            facts.split = Some(out.detail);
            return Some(job);
        }
        refusals.push(format!("{key}: {}", out.detail));
    }
    facts.why_not = Some(format!("no secondary key could be moved: {}", refusals.join("; ")));
    None
}

/// Releases what `node` holds (best effort: the store's own bound ends the hold anyway).
async fn release(ctx: &Ctx, node: &str) {
    if let Err(e) = ctx.oracle.txn_hold(node, 0, true).await {
        tracing::warn!(node, "txn-move: releasing the held transaction failed ({e}); it goes on after {ARM_HOLD:?}");
    }
}

/// Waits for the turn's job, if it started one, to settle; the stop event's value.
async fn settle(ctx: &Ctx, active: &Active) -> FaultValue {
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
    fn the_hold_ends_before_the_clients_call_timeout_and_is_released_past_the_fence() {
        assert!(ARM_HOLD < Duration::from_secs(2));
        assert!(RELEASE_AT.rank() > JobPhase::Fence.rank());
    }
}

//! `split`: forces a split at the key the store control picks (the hot key, or where the store keeps
//! items under keys of its own the stored item of a transaction in flight: the runner's
//! `ClientStoreControl`) through the store's API, alternating same-group
//! and cross-group splits (the right child moving to another group) when the store has
//! several groups. Runs on its own clock: `start-split` is recorded once the store has
//! answered, `stop-split` when the split is complete — at once for a same-group split, when
//! its job reaches a terminal phase for a move (waiting at most the turn's budget).
//!
//! Effective when the store accepted the split.

use super::{Active, Clock, Ctx, Fault, Started, Style, Turn, Undo};
use crate::SplitOutcome;
use analysis::history::{FaultValue, JobFacts, SplitDetail};
use futures::future::BoxFuture;
use rand::rngs::StdRng;

pub struct Split;

/// What a start-split records beside the shared fields; `None`s are recorded as `null`.
#[derive(serde::Serialize)]
struct Asked {
    cross_group: bool,
    #[serde(flatten)]
    job: JobFacts,
    detail: SplitDetail,
}

/// What a stop-split records beside the shared fields.
#[derive(serde::Serialize)]
struct Settled {
    job_id: Option<u64>,
    job_phase: Option<String>,
}

impl Fault for Split {
    fn name(&self) -> &'static str {
        "split"
    }

    fn effective_means(&self) -> &'static str {
        "the store accepted the split"
    }

    fn style(&self) -> Style {
        Style { rgb: (120, 80, 200), label: "split" }
    }

    fn clock(&self) -> Clock {
        Clock::Own
    }

    fn acts_on_nodes(&self) -> bool {
        false
    }

    fn start<'a>(&'a self, ctx: &'a Ctx, turn: Turn, _rng: &'a mut StdRng) -> BoxFuture<'a, Started> {
        Box::pin(ask_split(ctx, turn.nth % 2 == 1))
    }

    fn stop<'a>(&'a self, ctx: &'a Ctx, active: &'a Active) -> BoxFuture<'a, FaultValue> {
        Box::pin(settle(ctx, active))
    }
}

/// Asks for a split at the hot key (`cross`: to another group, if the store has several).
async fn ask_split(ctx: &Ctx, cross: bool) -> Started {
    let cross = cross && ctx.store.groups().len() > 1;
    let mut value = FaultValue::new(Vec::new());
    let Some(o) = ctx.store.split_hot(cross).await else {
        value.effective = Some(false);
        let value = value.with_facts(serde_json::json!({"cross_group": cross, "detail": SplitDetail::why("no hot key to split yet")}));
        return Started { value, undo: Undo::Nothing, summary: None };
    };
    value.effective = Some(o.accepted);
    value.key = Some(o.key.clone());
    let SplitOutcome { route_id, target_group, job_id, detail, accepted, .. } = o;
    let job = JobFacts { route_id, target_group, job_id, phase_seen: None };
    let value = value.with_facts(Asked { cross_group: cross, job, detail });
    Started { value, undo: Undo::AwaitJob { job_id, accepted }, summary: None }
}

/// Waits for the split's job, if it has one, to settle; the stop event's value.
async fn settle(ctx: &Ctx, active: &Active) -> FaultValue {
    let mut value = FaultValue::new(Vec::new());
    value.effective = active.started.effective;
    let Undo::AwaitJob { job_id, accepted } = active.undo else { return value };
    let job_phase = match (accepted, job_id) {
        (true, Some(job)) => ctx.wait_for_job(job, active.turn.budget).await,
        _ => None,
    };
    value.key = active.started.key.clone();
    value.with_facts(Settled { job_id, job_phase })
}

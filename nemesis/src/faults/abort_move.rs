//! `abort-move`: abandons a split job midway through the store's `AbandonSplitJob`. It takes
//! the live job (or starts one: a cross-group split of the hot range) and, on even turns,
//! waits for a random pre-CUTOVER phase (BACKFILL, FENCE, DELTA_COPY) and abandons it — the
//! store must accept; on odd turns it waits until the job is past CUTOVER and asks again —
//! the store must refuse. Runs on its own clock; `stop-abort-move` waits (at most the
//! turn's budget) for the job to settle. Effective when the abandon was sent while the job
//! was in the phase aimed at; the event records the phase aimed at and seen, the job, what
//! the store had to answer and what it answered. Whether the catalog then settles
//! consistently is the epoch-authority checker's rule (e).

use super::move_phase::{forced_split_key, live_or_new_job, wait_for_phase};
use super::{Active, Clock, Ctx, Fault, Started, Style, Turn, Undo};
use analysis::history::{FaultValue, JobPhase};
use futures::future::BoxFuture;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;

pub struct AbortMove;

const PRE_CUTOVER: [JobPhase; 3] = [JobPhase::Backfill, JobPhase::Fence, JobPhase::DeltaCopy];

#[derive(serde::Serialize)]
struct Asked {
    aimed_phase: &'static str,
    phase_seen: Option<String>,
    job_id: Option<u64>,
    /// `accept` before CUTOVER, `refuse` after.
    must: &'static str,
    /// `accepted`, `refused` (with `answer_error`), or `null` when nothing was sent.
    answer: Option<&'static str>,
    answer_error: Option<String>,
    started_split: Option<serde_json::Value>,
}

#[derive(serde::Serialize)]
struct Settled {
    job_id: Option<u64>,
    job_phase: Option<String>,
}

impl Fault for AbortMove {
    fn name(&self) -> &'static str {
        "abort-move"
    }

    fn effective_means(&self) -> &'static str {
        "an abandon was sent while the job was in the phase aimed at"
    }

    fn style(&self) -> Style {
        Style { rgb: (200, 60, 160), label: "abort move" }
    }

    fn clock(&self) -> Clock {
        Clock::Own
    }

    fn acts_on_nodes(&self) -> bool {
        false
    }

    fn start<'a>(&'a self, ctx: &'a Ctx, turn: Turn, rng: &'a mut StdRng) -> BoxFuture<'a, Started> {
        let before_cutover = turn.nth.is_multiple_of(2);
        let aimed = if before_cutover { *PRE_CUTOVER.choose(rng).unwrap_or(&JobPhase::Fence) } else { JobPhase::Cutover };
        Box::pin(abandon_at(ctx, turn, aimed, before_cutover))
    }

    fn stop<'a>(&'a self, ctx: &'a Ctx, active: &'a Active) -> BoxFuture<'a, FaultValue> {
        Box::pin(async move {
            let job_id = active.started.facts.get("job_id").and_then(|v| v.as_u64());
            let job_phase = match job_id {
                Some(id) => ctx.wait_for_job(id, active.turn.budget).await,
                None => None,
            };
            let mut value = FaultValue::new(Vec::new());
            value.effective = active.started.effective;
            value.with_facts(Settled { job_id, job_phase })
        })
    }
}

async fn abandon_at(ctx: &Ctx, turn: Turn, aimed: JobPhase, before_cutover: bool) -> Started {
    let (job, started_split) = live_or_new_job(ctx).await;
    let mut asked = Asked {
        aimed_phase: aimed.name(),
        phase_seen: None,
        job_id: job.as_ref().map(|j| j.id),
        must: if before_cutover { "accept" } else { "refuse" },
        answer: None,
        answer_error: None,
        started_split,
    };
    let mut value = FaultValue::new(Vec::new());
    value.effective = Some(false);
    value.split_key = forced_split_key(&asked.started_split, job.as_ref());
    if let Some(job) = job {
        let (seen, hit) = wait_for_phase(ctx, job.id, aimed, turn.budget).await;
        asked.phase_seen = seen.map(|j| j.phase);
        // Before the cutover: the aimed phase itself. After it: CUTOVER, CLEANUP or DONE.
        let seen_phase = asked.phase_seen.as_deref().and_then(JobPhase::parse);
        let in_window = seen_phase.is_some_and(|p| match before_cutover {
            true => hit && pre_cutover(p),
            false => matches!(p, JobPhase::Cutover | JobPhase::Cleanup | JobPhase::Done),
        });
        if in_window {
            match ctx.oracle.abandon_job(job.id).await {
                Ok(()) => asked.answer = Some("accepted"),
                Err(e) => {
                    asked.answer = Some("refused");
                    asked.answer_error = Some(e);
                }
            }
            value.effective = Some(true);
        }
    }
    Started { value: value.with_facts(asked), undo: Undo::Nothing, summary: Some(format!("abort-move at {}", aimed.name())) }
}

fn pre_cutover(p: JobPhase) -> bool {
    matches!(p, JobPhase::Planned | JobPhase::Backfill | JobPhase::Fence | JobPhase::DeltaCopy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_phases_before_the_cutover_may_be_abandoned() {
        assert!(PRE_CUTOVER.iter().all(|p| pre_cutover(*p)));
        assert!(!pre_cutover(JobPhase::Cutover) && !pre_cutover(JobPhase::Cleanup) && !pre_cutover(JobPhase::Done));
    }
}

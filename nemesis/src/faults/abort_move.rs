//! `abort-move`: abandons a split job midway through the store's `AbandonSplitJob`. It takes
//! the live job (or starts one: a cross-group split of the hot range) and, on even turns,
//! waits for a pre-CUTOVER phase (`--abort-phase` BACKFILL, FENCE, DELTA_COPY, or a random
//! one) and abandons it — the store must accept; on odd turns
//! it waits until the job is past CUTOVER (up to [`HOLD_LIMIT`], not the turn's budget) and
//! asks again — the store must refuse. An even
//! turn that finds its job already past CUTOVER (a kill or partition slowed its polls) asks
//! too, as a refusal test. Runs on its own clock; `stop-abort-move`
//! waits (at most the turn's budget) for the job to settle, and once it is ABANDONED sends
//! [`STALE_WRITES`] `stale-write`s through the target group's leader to the target under the
//! job's never-published new epoch (a stale client that saw the job): the target must refuse
//! every one. Effective when an abandon was sent (`must` says what the store had to answer);
//! the event records the phase aimed at and seen, the job, what the store had to answer and
//! what it answered. Whether the catalog then settles consistently is the epoch-authority
//! checker's rule (e); a write the target commits under that epoch, its rule (a).

use super::move_phase::{forced_split_key, job_facts, live_or_new_job, parse_phase_among, send_stale_writes, wait_for_phase, StaleWrites, StartedSplit};
use super::move_phase::{ABANDONED_WRITER_PROCESS, HOLD_LIMIT, STALE_WRITES};
use super::{Active, Clock, Ctx, Fault, Started, Style, Turn, Undo};
use analysis::history::{FaultValue, JobFacts, JobPhase};
use futures::future::BoxFuture;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use std::time::Duration;

pub struct AbortMove;

const PRE_CUTOVER: [JobPhase; 3] = [JobPhase::Backfill, JobPhase::Fence, JobPhase::DeltaCopy];

/// What a start-abort-move records beside the shared fields, read back when it settles.
#[derive(serde::Serialize, serde::Deserialize)]
struct Asked {
    aimed_phase: String,
    /// The job, its route and target, and the phase seen when the abandon was sent.
    #[serde(flatten)]
    job: JobFacts,
    /// `accept` before CUTOVER, `refuse` after.
    must: String,
    /// `null` when nothing was sent.
    answer: Option<Answer>,
    answer_error: Option<String>,
    started_split: Option<StartedSplit>,
}

/// The store's answer to the abandon (`refused`: with `answer_error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum Answer {
    Accepted,
    Refused,
}

#[derive(serde::Serialize)]
struct Settled {
    job_id: Option<u64>,
    job_phase: Option<String>,
    /// Stale writes sent to the target under the abandoned job's new epoch (0: none).
    stale_writes: u64,
    stale_group: Option<u64>,
    stale_epoch: Option<u64>,
}

/// Parses `--abort-phase`: a phase of [`PRE_CUTOVER`] (any case, with or without the
/// protobuf prefix) or `random` (`None`).
pub fn parse_abort_phase(text: &str) -> Result<Option<JobPhase>, String> {
    parse_phase_among("--abort-phase", text, &PRE_CUTOVER)
}

impl Fault for AbortMove {
    fn name(&self) -> &'static str {
        "abort-move"
    }

    fn effective_means(&self) -> &'static str {
        "an abandon was sent: before CUTOVER (once the aimed phase was reached) or after it"
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
        let random = *PRE_CUTOVER.choose(rng).unwrap_or(&JobPhase::Fence);
        let aimed = if before_cutover { ctx.abort_phase.unwrap_or(random) } else { JobPhase::Cutover };
        Box::pin(abandon_at(ctx, turn, aimed, before_cutover))
    }

    fn stop<'a>(&'a self, ctx: &'a Ctx, active: &'a Active) -> BoxFuture<'a, FaultValue> {
        Box::pin(async move {
            let asked: Option<Asked> = active.started.facts_as();
            let job_id = asked.as_ref().and_then(|a| a.job.job_id);
            let job_phase = match job_id {
                Some(id) => ctx.wait_for_job(id, active.turn.budget).await,
                None => None,
            };
            let accepted = asked.is_some_and(|a| a.answer == Some(Answer::Accepted));
            let abandoned = job_phase.as_deref().and_then(JobPhase::parse) == Some(JobPhase::Abandoned);
            let mut settled = Settled { job_id, job_phase, stale_writes: 0, stale_group: None, stale_epoch: None };
            if let (Some(id), true) = (job_id, accepted && abandoned) {
                write_to_abandoned_target(ctx, id, active.turn.nth, &mut settled).await;
            }
            let mut value = FaultValue::new(Vec::new());
            value.effective = active.started.effective;
            value.with_facts(settled)
        })
    }
}

async fn abandon_at(ctx: &Ctx, turn: Turn, aimed: JobPhase, before_cutover: bool) -> Started {
    let (job, started_split) = live_or_new_job(ctx).await;
    let mut asked = Asked {
        aimed_phase: aimed.name().to_string(),
        job: job.as_ref().map(job_facts).unwrap_or_default(),
        must: if before_cutover { "accept" } else { "refuse" }.to_string(),
        answer: None,
        answer_error: None,
        started_split,
    };
    let mut value = FaultValue::new(Vec::new());
    value.effective = Some(false);
    value.split_key = forced_split_key(&asked.started_split, job.as_ref());
    if let Some(job) = job {
        let (seen, hit) = wait_for_phase(ctx, job.id, aimed, phase_patience(turn.budget, before_cutover)).await;
        asked.job.phase_seen = seen.map(|j| j.phase);
        let seen_phase = asked.job.phase_seen.as_deref().and_then(JobPhase::parse);
        if let Some(must) = seen_phase.and_then(|p| must_answer(before_cutover, hit, p)) {
            asked.must = must.to_string();
            match ctx.store.abandon_job(job.id).await {
                Ok(()) => asked.answer = Some(Answer::Accepted),
                Err(e) => {
                    asked.answer = Some(Answer::Refused);
                    asked.answer_error = Some(e);
                }
            }
            value.effective = Some(true);
        }
    }
    Started { value: value.with_facts(asked), undo: Undo::Nothing, summary: Some(format!("abort-move at {}", aimed.name())) }
}

/// How long a turn waits for its aimed phase. An accept turn waits its budget. A refusal
/// turn waits for the cutover as long as a held move fault does ([`HOLD_LIMIT`]), at least:
/// the job it takes or starts must first go through both copies (seconds at slow copies,
/// more on a loaded machine), a refusal turn that gives up sends nothing, and waiting costs
/// the store nothing.
fn phase_patience(budget: Duration, before_cutover: bool) -> Duration {
    if before_cutover {
        budget
    } else {
        budget.max(HOLD_LIMIT)
    }
}

/// What the store must answer an abandon sent now, if one is to be sent: `accept` before
/// the cutover (on a turn aimed there, once the job reached the aimed phase), `refuse` at or
/// after it — on a turn aimed there, and also on one that aimed earlier but found the job
/// already past its cutover (a kill or partition slowed the polls): the refusal is tested
/// instead of the turn doing nothing.
fn must_answer(before_cutover: bool, hit: bool, seen: JobPhase) -> Option<&'static str> {
    if before_cutover && hit && seen.before_cutover() {
        Some("accept")
    } else if seen.at_or_after_cutover() {
        Some("refuse")
    } else {
        None
    }
}

/// Sends the stale writes to the abandoned job's target under its new epoch (when the store
/// reports the epoch and the target has a leader), recording them in `settled`.
async fn write_to_abandoned_target(ctx: &Ctx, job_id: u64, nth: u64, settled: &mut Settled) {
    let Some(job) = ctx.store.split_job(job_id).await else { return };
    let Some(epoch) = job.new_epoch else { return };
    let Some(node) = ctx.store.leader_of(job.target_group).await else { return };
    let w = StaleWrites {
        node: &node,
        group: job.target_group,
        epoch,
        split_key: &job.split_key,
        job: job.id,
        tag: "abandoned",
        first_process: ABANDONED_WRITER_PROCESS + nth * STALE_WRITES,
    };
    settled.stale_writes = send_stale_writes(ctx, &w).await;
    settled.stale_group = Some(job.target_group);
    settled.stale_epoch = Some(epoch);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_start_abort_move_records_is_read_back_when_it_settles() {
        let asked = Asked {
            aimed_phase: "DELTA_COPY".into(),
            job: JobFacts { job_id: Some(8), phase_seen: Some("DELTA_COPY".into()), ..JobFacts::default() },
            must: "accept".into(),
            answer: Some(Answer::Accepted),
            answer_error: None,
            started_split: None,
        };
        let json = FaultValue::new(vec![]).with_facts(&asked).to_json();
        assert_eq!((&json["must"], &json["answer"]), (&serde_json::json!("accept"), &serde_json::json!("accepted")));
        let reread: FaultValue = serde_json::from_value(json).unwrap();
        let back: Asked = reread.facts_as().expect("the facts read back");
        assert_eq!((back.job.job_id, back.answer), (Some(8), Some(Answer::Accepted)));
    }

    #[test]
    fn abort_phase_parses_pre_cutover_phases_and_random_only() {
        assert_eq!(parse_abort_phase("random"), Ok(None));
        assert_eq!(parse_abort_phase("delta_copy"), Ok(Some(JobPhase::DeltaCopy)));
        assert!(parse_abort_phase("CUTOVER").unwrap_err().contains("expected BACKFILL, FENCE, DELTA_COPY"));
    }

    #[test]
    fn an_abandon_must_be_accepted_before_the_cutover_and_refused_from_it_on() {
        use JobPhase::*;
        assert_eq!(must_answer(true, true, DeltaCopy), Some("accept"));
        assert_eq!(must_answer(true, false, Planned), None, "the aimed phase was not reached");
        assert_eq!(must_answer(true, true, Cleanup), Some("refuse"), "too late for the aimed phase: the refusal is tested");
        assert_eq!(must_answer(false, true, Cutover), Some("refuse"));
        assert_eq!(must_answer(false, false, Done), Some("refuse"));
        assert_eq!(must_answer(false, false, DeltaCopy), None, "a refusal turn waits for the cutover");
        assert_eq!(must_answer(true, true, Abandoned), None);
        assert_eq!(must_answer(true, true, Failed), None);
    }

    #[test]
    fn a_refusal_turn_waits_for_the_cutover_at_least_the_hold_limit() {
        let budget = Duration::from_secs(6);
        assert_eq!(phase_patience(budget, true), budget, "an accept turn waits its budget");
        assert_eq!(phase_patience(budget, false), HOLD_LIMIT);
        let long = HOLD_LIMIT + Duration::from_secs(5);
        assert_eq!(phase_patience(long, false), long, "a longer budget is kept");
    }

    #[test]
    fn only_phases_before_the_cutover_may_be_aimed_at() {
        assert!(PRE_CUTOVER.iter().all(|p| p.before_cutover()));
    }
}

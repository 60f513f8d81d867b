//! The split-job driver: moves the right child of a cross-group split from its source group
//! to its target group, one idempotent phase at a time, on whichever node leads the catalog
//! group (so a job resumes after any kill or leader change). Once a step commits, the next
//! phase's work starts at once (not at the next tick), so a phase lasts as long as its work.
//!
//! Phases and what the driver does in each before stepping the job (catalog CAS on the
//! phase) to the next:
//! - PLANNED: nothing (the route is already MIGRATING_SOURCE).
//! - BACKFILL: copy the range from the source to the target (`Ingest`, throttled).
//! - FENCE: commit `Fence` into the source: from then on it rejects writes to the range.
//! - DELTA_COPY: copy again now that the source is frozen (with deletes), so the target is
//!   an exact copy; then commit `Own(new epoch)` into the target.
//! - CUTOVER (the catalog step into it re-points the route at the target, new epoch):
//!   commit `Disown` into the source so it refuses even reads under any older epoch.
//! - CLEANUP: after the grace period, delete the source's copy.
//! - FAILED (after repeated failures in any working phase): nothing; an operator sends it
//!   back to its retry phase (`RetrySplitJob`) or, before cutover, abandons it.
//! - ABANDONING (entered only through `AbandonSplitJob`): unfence the source, revoke what
//!   the target may have been given (`Disown` back to the source at the old epoch) and delete
//!   its partial copy; the source stays the only owner.
//!
//! Every data-group command is idempotent, so repeating a phase after a crash is safe.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use crate::catalog::{Job, JobPhase};
use crate::exec::{ExecOp, ExecReply};
use crate::node::NodeCore;
use crate::sm::CATALOG_GROUP;
use crate::types::{Command, CommandResult, Key};

const TICK: Duration = Duration::from_millis(100);
/// A job that fails this many attempts in a row goes FAILED (and waits for an operator).
const MAX_FAILURES: u32 = 50;
/// Copy batches stay small so that one Raft entry never holds more than ~32 KB of data.
const COPY_BATCH: usize = 256;
const COPY_BATCH_BYTES: usize = 32 << 10;

/// What one driver remembers between ticks (forgotten when it stops leading the catalog).
#[derive(Default)]
struct DriverMemory {
    failures: HashMap<u64, u32>,
    entered_delta: HashSet<u64>,
    /// `--hold-before-cutover`: jobs this driver already granted `Own` and holds.
    held: HashSet<u64>,
    /// Seeded bug `low-ts-commit-escapes-delta`: the timestamp each job's BACKFILL started at.
    backfill_ts: HashMap<u64, u64>,
}

/// The most phases one job is stepped through in one tick (a bound, not a pace).
const PHASES_PER_TICK: usize = 8;

pub fn spawn_driver(core: Arc<NodeCore>) {
    tokio::spawn(async move {
        let mut memory = DriverMemory::default();
        loop {
            tokio::time::sleep(TICK).await;
            let Some(g) = core.group(CATALOG_GROUP) else {
                return;
            };
            if !g.is_leader(core.id) {
                memory = DriverMemory::default();
                continue;
            }
            let catalog = g.shared.read().catalog.clone();
            let Some(catalog) = catalog else { continue };
            for job in catalog.jobs.values().filter(|j| !j.phase.is_terminal()) {
                drive_on(&core, job.clone(), &mut memory).await;
            }
        }
    });
}

/// Drives `job` phase after phase for as long as each step succeeds: the work of a phase
/// starts as soon as the job enters it, so a fault or an abandon that lands in a phase
/// lands in its work, not in an idle wait for the next tick.
async fn drive_on(core: &NodeCore, mut job: Job, memory: &mut DriverMemory) {
    for _ in 0..PHASES_PER_TICK {
        if !drive_once(core, &job, memory).await {
            return;
        }
        let Some(g) = core.group(CATALOG_GROUP) else {
            return;
        };
        if !g.is_leader(core.id) {
            return;
        }
        let next = g
            .shared
            .read()
            .catalog
            .as_ref()
            .and_then(|c| c.jobs.get(&job.id).cloned());
        match next {
            Some(next) if next.phase != job.phase && !next.phase.is_terminal() => job = next,
            _ => return,
        }
    }
}

/// One phase of `job`'s work; whether it succeeded.
async fn drive_once(core: &NodeCore, job: &Job, memory: &mut DriverMemory) -> bool {
    let hold = core.cfg.tunables.hold_before_cutover && job.phase == JobPhase::DeltaCopy;
    if hold && memory.held.contains(&job.id) {
        return false;
    }
    // Seeded bug `resume-skips-delta`: a driver that inherited the job in DELTA_COPY (it
    // did not step it there itself) trusts the copy to be done.
    let skip_delta = core.bugs.resume_skips_delta
        && job.phase == JobPhase::DeltaCopy
        && !memory.entered_delta.contains(&job.id);
    // Seeded bug `low-ts-commit-escapes-delta`: BACKFILL notes a timestamp first, and
    // DELTA_COPY copies only what changed from it on.
    if core.bugs.low_ts_commit_escapes_delta && job.phase == JobPhase::Backfill {
        match crate::tso::from_oracle(core).await {
            Ok(ts) => _ = memory.backfill_ts.insert(job.id, ts),
            Err(e) => tracing::warn!(job = job.id, "low-ts-commit-escapes-delta: no backfill timestamp ({e}); the delta copy will be whole"),
        }
    }
    let delta_since = if job.phase == JobPhase::DeltaCopy {
        memory.backfill_ts.get(&job.id).copied()
    } else {
        None
    };
    match drive(
        core,
        job,
        Copying {
            skip_delta,
            delta_since,
        },
    )
    .await
    {
        Ok(()) => {
            memory.failures.remove(&job.id);
            if job.phase == JobPhase::Fence {
                memory.entered_delta.insert(job.id);
            }
            if hold {
                memory.held.insert(job.id);
            }
            true
        }
        Err(e) => {
            let n = memory.failures.entry(job.id).or_default();
            *n += 1;
            tracing::warn!(job = job.id, phase = ?job.phase, attempt = *n, "split job step failed: {e}");
            if *n >= MAX_FAILURES && JobPhase::can_step_to(job.phase, JobPhase::Failed) {
                let _ = step(core, job, JobPhase::Failed, Some(e)).await;
                memory.failures.remove(&job.id);
            }
            false
        }
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// How the delta copy departs from an exact copy (only under seeded bugs).
#[derive(Clone, Copy, Default)]
struct Copying {
    /// `resume-skips-delta`: no delta copy at all.
    skip_delta: bool,
    /// `low-ts-commit-escapes-delta`: copy only transactional keys changed at or after this.
    delta_since: Option<u64>,
}

/// Runs the work of the job's current phase, then steps it to the next phase.
async fn drive(core: &NodeCore, job: &Job, copying: Copying) -> Result<(), String> {
    use JobPhase::*;
    let early = core.bugs.early_cutover;
    match job.phase {
        Planned => step(core, job, Backfill, None).await,
        Backfill => {
            copy_range(core, job, false, None).await?;
            step(core, job, Fence, None).await
        }
        Fence => {
            if !early {
                command(
                    core,
                    job.source_group,
                    Command::Fence {
                        start: job.start.clone(),
                        end: job.end.clone(),
                    },
                )
                .await?;
            }
            step(core, job, DeltaCopy, None).await
        }
        DeltaCopy => {
            if !early && !copying.skip_delta {
                match copy_range(core, job, true, copying.delta_since).await {
                    // A previous attempt already got as far as `Own`: the copy is complete.
                    Err(e) if e.contains("already serves") => {}
                    other => other?,
                }
            }
            command(
                core,
                job.target_group,
                Command::Own {
                    start: job.start.clone(),
                    end: job.end.clone(),
                    epoch: job.new_epoch,
                },
            )
            .await?;
            if core.cfg.tunables.hold_before_cutover {
                tracing::info!(job = job.id, "split job held before cutover (--hold-before-cutover): the target owns the range");
                return Ok(());
            }
            step(core, job, Cutover, None).await
        }
        Cutover => {
            let disown = Command::Disown {
                start: job.start.clone(),
                end: job.end.clone(),
                new_epoch: job.new_epoch,
                new_group: job.target_group,
            };
            command(core, job.source_group, disown).await?;
            step(core, job, Cleanup, None).await
        }
        Cleanup => {
            let grace = core.cfg.tunables.cleanup_grace_ms as i64;
            if now_ms() < job.updated_ms + grace {
                return Ok(());
            }
            command(
                core,
                job.source_group,
                Command::DeleteRange {
                    start: job.start.clone(),
                    end: job.end.clone(),
                },
            )
            .await?;
            step(core, job, Done, None).await
        }
        Abandoning => {
            command(
                core,
                job.source_group,
                Command::Unfence {
                    start: job.start.clone(),
                    end: job.end.clone(),
                },
            )
            .await?;
            // Seeded bug `abandon-keeps-target`: the target keeps what it was given.
            if !core.bugs.abandon_keeps_target {
                let revoke = Command::Disown {
                    start: job.start.clone(),
                    end: job.end.clone(),
                    new_epoch: job.old_epoch,
                    new_group: job.source_group,
                };
                command(core, job.target_group, revoke).await?;
                command(
                    core,
                    job.target_group,
                    Command::DeleteRange {
                        start: job.start.clone(),
                        end: job.end.clone(),
                    },
                )
                .await?;
            }
            step(core, job, Abandoned, None).await
        }
        Done | Failed | Abandoned => Ok(()),
    }
}

/// Commits a job phase step into the catalog (CAS on the current phase).
async fn step(
    core: &NodeCore,
    job: &Job,
    to: JobPhase,
    error: Option<String>,
) -> Result<(), String> {
    let cmd = Command::JobStep {
        job_id: job.id,
        from: job.phase,
        to,
        error,
        now_ms: now_ms(),
    };
    match core.execute(CATALOG_GROUP, ExecOp::Write(cmd), true).await {
        ExecReply::Committed {
            result: CommandResult::Job(Ok(())),
            ..
        } => {
            tracing::info!(job = job.id, from = ?job.phase, ?to, "split job advanced");
            Ok(())
        }
        ExecReply::Committed { result, .. } => {
            Err(format!("step {:?} -> {to:?}: {result:?}", job.phase))
        }
        other => Err(format!("step {:?} -> {to:?}: {other:?}", job.phase)),
    }
}

/// Commits an internal command into a data group.
async fn command(core: &NodeCore, group: u64, cmd: Command) -> Result<(), String> {
    match core.execute(group, ExecOp::Write(cmd), true).await {
        ExecReply::Committed { .. } => Ok(()),
        other => Err(format!("group {group}: {other:?}")),
    }
}

async fn read_range(
    core: &NodeCore,
    group: u64,
    start: &[u8],
    end: &[u8],
) -> Result<Vec<(Key, Vec<u8>)>, String> {
    match core
        .execute(
            group,
            ExecOp::RawRange {
                start: start.to_vec(),
                end: end.to_vec(),
                limit: COPY_BATCH,
                max_bytes: COPY_BATCH_BYTES,
            },
            false,
        )
        .await
    {
        ExecReply::Pairs { pairs, .. } => Ok(pairs),
        other => Err(format!("reading group {group}: {other:?}")),
    }
}

/// Copies `[start, end)` from the source to the target in throttled batches. With `exact`,
/// also deletes target keys the source does not have (the source is fenced by then). With
/// `since` (seeded bug `low-ts-commit-escapes-delta`), transactional keys whose last change
/// is older than `since` are left as the target has them.
async fn copy_range(
    core: &NodeCore,
    job: &Job,
    exact: bool,
    since: Option<u64>,
) -> Result<(), String> {
    let rate = core.cfg.tunables.copy_bytes_per_sec.max(1);
    let mut cursor = job.start.clone();
    loop {
        let mut pairs = read_range(core, job.source_group, &cursor, &job.end).await?;
        // An empty read means the range is exhausted; otherwise continue after the last key.
        let batch_end: Key = match pairs.last() {
            Some((k, _)) => {
                let mut next = k.clone();
                next.push(0);
                next
            }
            None => job.end.clone(),
        };
        let mut deletes = Vec::new();
        if exact {
            let theirs = read_all(core, job.target_group, &cursor, &batch_end).await?;
            let ours: std::collections::BTreeSet<&Key> = pairs.iter().map(|(k, _)| k).collect();
            deletes = theirs.into_iter().filter(|k| !ours.contains(k)).collect();
        }
        // The batch reaches the target once its bytes have crossed at the throttled rate: a
        // driver killed or a job abandoned meanwhile leaves the target without it.
        if let Some(since) = since {
            pairs.retain(|(k, v)| {
                let keep = changed_since(v, since);
                if !keep {
                    tracing::info!(job = job.id, since, key = %String::from_utf8_lossy(k), "low-ts-commit-escapes-delta: the delta copy skips a key last changed before the backfill timestamp");
                }
                keep
            });
        }
        let bytes: usize = pairs.iter().map(|(k, v)| k.len() + v.len()).sum();
        tokio::time::sleep(Duration::from_secs_f64(bytes as f64 / rate as f64)).await;
        if core.bugs.lock_dropped_on_move {
            // Seeded bug: transactional keys arrive without their locks.
            for (k, v) in &pairs {
                if let Ok(crate::mvcc::Cell {
                    lock: Some(lock), ..
                }) = crate::mvcc::Cell::decode(Some(v))
                {
                    let role = if lock.primary == *k {
                        "primary"
                    } else if lock.writes.is_empty() {
                        "read lock"
                    } else {
                        "secondary write"
                    };
                    tracing::info!(job = job.id, exact, start_ts = lock.start_ts, role, key = %String::from_utf8_lossy(k), "lock-dropped-on-move: a lock is left behind");
                }
            }
            pairs = pairs
                .into_iter()
                .map(|(k, v)| (k, crate::mvcc::strip_lock(v)))
                .collect();
        }
        if !pairs.is_empty() || !deletes.is_empty() {
            command(core, job.target_group, Command::Ingest { pairs, deletes }).await?;
        }
        if batch_end == job.end {
            return Ok(());
        }
        cursor = batch_end;
    }
}

/// Whether a stored value changed at or after timestamp `since`, as far as it shows: a
/// transactional cell's newest commit, lock or rollback; a plain value always counts as
/// changed (it carries no timestamp).
fn changed_since(stored: &[u8], since: u64) -> bool {
    let Ok(cell) = crate::mvcc::Cell::decode(Some(stored)) else {
        return true;
    };
    let newest = cell
        .versions
        .iter()
        .map(|v| v.commit_ts.max(v.start_ts))
        .chain(cell.lock.as_ref().map(|l| l.start_ts))
        .chain(cell.rollbacks.iter().copied())
        .max();
    newest.is_some_and(|ts| ts >= since)
}

/// Every key the target holds in `[start, end)`.
async fn read_all(
    core: &NodeCore,
    group: u64,
    start: &[u8],
    end: &[u8],
) -> Result<Vec<Key>, String> {
    let mut out = Vec::new();
    let mut cursor = start.to_vec();
    loop {
        let pairs = read_range(core, group, &cursor, end).await?;
        match pairs.last() {
            Some((k, _)) => {
                cursor = k.clone();
                cursor.push(0);
            }
            None => return Ok(out),
        }
        out.extend(pairs.into_iter().map(|(k, _)| k));
    }
}

#[cfg(test)]
mod tests {
    use super::changed_since;
    use crate::mvcc::{Cell, Lock, Version, Write};

    fn cell(commits: &[u64], lock: Option<u64>) -> Vec<u8> {
        let versions = commits
            .iter()
            .map(|&c| Version {
                commit_ts: c,
                start_ts: c - 1,
                writes: vec![Write::Append(1)],
            })
            .collect();
        let lock = lock.map(|start_ts| Lock {
            start_ts,
            primary: b"p".to_vec(),
            writes: vec![],
            expires_ms: 0,
        });
        Cell {
            versions,
            lock,
            ..Cell::default()
        }
        .encode()
    }

    #[test]
    fn the_buggy_delta_window_skips_cells_whose_newest_change_is_older() {
        assert!(
            !changed_since(&cell(&[5, 9], None), 10),
            "a commit at 9 is older than a backfill at 10"
        );
        assert!(changed_since(&cell(&[5, 12], None), 10));
        assert!(
            changed_since(&cell(&[5], Some(11)), 10),
            "a lock taken after the backfill timestamp"
        );
        assert!(
            changed_since(b"plain value", 10),
            "plain values carry no timestamp and are copied"
        );
    }
}

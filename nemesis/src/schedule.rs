//! The nemesis schedule: quiet for an interval, one fault for an interval, heal, repeat —
//! one fault at a time ([`Clock::Rotation`]), so a node is never paused and killed at once.
//! Faults on their own clock ([`Clock::Own`], e.g. forced splits) run in turn on a second
//! loop, timed to land in the middle of the other faults. Cancelling the run (end of the
//! test, Ctrl-C) stops the fault in effect and heals everything.

use crate::faults::{self, Clock, Ctx, FaultKind, Turn, Undo};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Counters the progress display reads.
#[derive(Debug, Default)]
pub struct NemesisStatus {
    /// Description of the fault in effect, if any.
    pub active: Mutex<Option<String>>,
    pub faults_started: std::sync::atomic::AtomicU64,
    /// Turns of faults on their own clock that took effect (forced splits the store accepted).
    pub splits_forced: std::sync::atomic::AtomicU64,
}

impl NemesisStatus {
    pub fn active(&self) -> Option<String> {
        self.active.lock().map(|g| g.clone()).unwrap_or(None)
    }
    fn set_active(&self, s: Option<String>) {
        if let Ok(mut g) = self.active.lock() {
            *g = s;
        }
    }
}

/// A configured nemesis, ready to run.
pub struct Nemesis {
    pub ctx: Ctx,
    pub kinds: Vec<FaultKind>,
    pub interval: Duration,
    pub seed: u64,
    pub status: Arc<NemesisStatus>,
}

impl Nemesis {
    /// Runs until `cancel` fires, then heals every fault before returning.
    pub async fn run(&self, cancel: CancellationToken) {
        let (rotation, own) = split_by_clock(&self.kinds);
        let fault_loop = self.fault_loop(&rotation, cancel.clone());
        let own_loop = self.own_clock_loop(&own, !rotation.is_empty(), cancel.clone());
        tokio::join!(fault_loop, own_loop);
        self.heal_all().await;
    }

    async fn fault_loop(&self, kinds: &[FaultKind], cancel: CancellationToken) {
        if kinds.is_empty() {
            return;
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(self.seed);
        // Every kind gets its turn: rounds over all kinds, each round in a random order.
        let mut round: Vec<FaultKind> = Vec::new();
        let mut started: std::collections::HashMap<FaultKind, u64> =
            std::collections::HashMap::new();
        loop {
            if sleep_or_cancel(self.interval, &cancel).await {
                return;
            }
            if round.is_empty() {
                round = kinds.to_vec();
                round.shuffle(&mut rng);
            }
            let Some(kind) = round.pop() else { return };
            let nth = started.entry(kind).or_insert(0);
            let active = faults::start(
                &self.ctx,
                kind,
                Turn {
                    nth: *nth,
                    budget: self.interval,
                },
                &mut rng,
            )
            .await;
            *nth += 1;
            self.status
                .faults_started
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.status.set_active(Some(active.summary.clone()));
            let cancelled = sleep_or_cancel(self.interval, &cancel).await;
            faults::stop(&self.ctx, &active).await;
            self.status.set_active(None);
            if cancelled {
                return;
            }
        }
    }

    /// Runs the faults on their own clock, one after another. With rotation faults they
    /// fire mid-fault (1.5 intervals into each quiet+fault cycle); alone, once per interval.
    async fn own_clock_loop(&self, kinds: &[FaultKind], overlap: bool, cancel: CancellationToken) {
        if kinds.is_empty() {
            return;
        }
        // A turn is not cancelled half-way: it ends when what it started settles (bounded).
        let (first, period) = if overlap {
            (self.interval.mul_f64(1.5), self.interval * 2)
        } else {
            (self.interval, self.interval)
        };
        if sleep_or_cancel(first, &cancel).await {
            return;
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(self.seed.wrapping_add(1));
        for turn in 0u64.. {
            let kind = kinds[(turn % kinds.len() as u64) as usize];
            // Each kind's own count: a split alternates same-group and cross-group by it.
            let nth = turn / kinds.len() as u64;
            let active = faults::start(
                &self.ctx,
                kind,
                Turn {
                    nth,
                    budget: period,
                },
                &mut rng,
            )
            .await;
            faults::stop(&self.ctx, &active).await;
            if active.started.effective == Some(true) {
                self.status
                    .splits_forced
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            if sleep_or_cancel(period, &cancel).await {
                return;
            }
        }
    }

    /// Safety net run at the end: flushes every node's rules, resumes and restarts every
    /// node. Errors are logged, never fatal (a node may simply not be paused).
    pub async fn heal_all(&self) {
        let names: Vec<String> = self
            .ctx
            .control
            .nodes()
            .iter()
            .map(|n| n.name.clone())
            .collect();
        let errors = faults::undo(
            &self.ctx,
            &Undo::Network {
                nodes: names.clone(),
                netem: self.ctx.use_netem,
            },
        )
        .await;
        for e in errors {
            tracing::warn!("healing the network: {e}");
        }
        for n in &names {
            let _ = self.ctx.control.resume(n).await;
            let _ = self.ctx.control.restart(n).await;
        }
    }
}

/// The requested kinds in the rotation and those on their own clock.
fn split_by_clock(kinds: &[FaultKind]) -> (Vec<FaultKind>, Vec<FaultKind>) {
    kinds
        .iter()
        .copied()
        .partition(|k| k.fault().clock() == Clock::Rotation)
}

/// Why the schedule cannot give every requested fault its turn within `time_limit`, if it
/// cannot. The fault loop runs the rotation's kinds one after another, each after a quiet
/// interval, in a random order: the last kind of the first round starts (2k − 1) intervals
/// in and is healed after 2k. The own-clock loop's first turn comes 1.5 intervals in (1
/// when it runs alone), the others one period apart.
pub fn schedule_shortfall(
    kinds: &[FaultKind],
    interval: Duration,
    time_limit: Duration,
) -> Option<String> {
    let (rotation, own) = split_by_clock(kinds);
    let others = rotation.len() as u32;
    let mut problems = Vec::new();
    if others > 0 {
        let last_start = interval * (2 * others - 1);
        if last_start >= time_limit {
            problems.push(format!(
                "{others} fault kinds one after another need {:.0} s before the last one starts (quiet and fault interval each)",
                last_start.as_secs_f64()
            ));
        }
    }
    if !own.is_empty() {
        let (first, period) = if others > 0 {
            (interval.mul_f64(1.5), interval * 2)
        } else {
            (interval, interval)
        };
        let last = first + period * (own.len() as u32 - 1);
        if last >= time_limit {
            let names: Vec<&str> = own.iter().map(|k| k.name()).collect();
            problems.push(format!(
                "the first turn of {} (on its own clock) comes {:.0} s in",
                names.join(", then "),
                last.as_secs_f64()
            ));
        }
    }
    (!problems.is_empty()).then(|| {
        format!(
            "the nemesis schedule cannot fit every requested fault in --time-limit {:.0}: {}; raise --time-limit or lower --nemesis-interval ({:.1} s), or vacuity will say a fault never started",
            time_limit.as_secs_f64(),
            problems.join("; "),
            interval.as_secs_f64()
        )
    })
}

/// Sleeps for `d`; returns true if cancelled first.
async fn sleep_or_cancel(d: Duration, cancel: &CancellationToken) -> bool {
    tokio::select! {
        _ = cancel.cancelled() => true,
        _ = tokio::time::sleep(d) => false,
    }
}

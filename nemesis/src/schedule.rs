//! The nemesis schedule: quiet for an interval, one fault for an interval, heal, repeat —
//! one fault at a time, so a node is never paused and killed at once. Forced splits run on
//! their own clock, timed to land in the middle of the other faults. Cancelling the run
//! (end of the test, Ctrl-C) stops the fault in effect and heals everything.

use crate::faults::{self, Active, Ctx, FaultKind, Undo};
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
        let splits = self.kinds.contains(&FaultKind::Split);
        let others: Vec<FaultKind> = self.kinds.iter().copied().filter(|k| *k != FaultKind::Split).collect();
        let fault_loop = self.fault_loop(&others, cancel.clone());
        let split_loop = async {
            if splits {
                self.split_loop(!others.is_empty(), cancel.clone()).await
            }
        };
        tokio::join!(fault_loop, split_loop);
        self.heal_all().await;
    }

    async fn fault_loop(&self, kinds: &[FaultKind], cancel: CancellationToken) {
        if kinds.is_empty() {
            return;
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(self.seed);
        // Every kind gets its turn: rounds over all kinds, each round in a random order.
        let mut round: Vec<FaultKind> = Vec::new();
        let mut started: std::collections::HashMap<FaultKind, u64> = std::collections::HashMap::new();
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
            let active = faults::start(&self.ctx, kind, *nth, &mut rng).await;
            *nth += 1;
            self.status.faults_started.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.status.set_active(Some(describe(&active)));
            let cancelled = sleep_or_cancel(self.interval, &cancel).await;
            faults::stop(&self.ctx, &active).await;
            self.status.set_active(None);
            if cancelled {
                return;
            }
        }
    }

    /// Forces splits. With other faults they fire mid-fault (1.5 intervals into each
    /// quiet+fault cycle); alone, once per interval.
    async fn split_loop(&self, overlap: bool, cancel: CancellationToken) {
        // A split is not cancelled half-way: it ends when its job settles (bounded).
        let (first, period) = if overlap {
            (self.interval.mul_f64(1.5), self.interval * 2)
        } else {
            (self.interval, self.interval)
        };
        if sleep_or_cancel(first, &cancel).await {
            return;
        }
        let mut cross = false;
        loop {
            // Alternate same-group and cross-group splits (when the store has several groups).
            if faults::split_once(&self.ctx, cross, period).await.is_some_and(|o| o.accepted) {
                self.status.splits_forced.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            cross = !cross;
            if sleep_or_cancel(period, &cancel).await {
                return;
            }
        }
    }

    /// Safety net run at the end: flushes every node's rules, resumes and restarts every
    /// node. Errors are logged, never fatal (a node may simply not be paused).
    pub async fn heal_all(&self) {
        let names: Vec<String> = self.ctx.control.nodes().iter().map(|n| n.name.clone()).collect();
        let errors = faults::undo(&self.ctx, &Undo::Network(names.clone(), self.ctx.use_netem)).await;
        for e in errors {
            tracing::warn!("healing the network: {e}");
        }
        for n in &names {
            let _ = self.ctx.control.resume(n).await;
            let _ = self.ctx.control.restart(n).await;
        }
    }
}

/// Why the schedule cannot give every requested fault its turn within `time_limit`, if it
/// cannot. The fault loop runs the kinds other than `split` one after another, each after a
/// quiet interval, in a random order: the last kind of the first round starts
/// (2k − 1) intervals in and is healed after 2k. The split loop's first split comes 1.5
/// intervals in (1 when it runs alone).
pub fn schedule_shortfall(kinds: &[FaultKind], interval: Duration, time_limit: Duration) -> Option<String> {
    let others = kinds.iter().filter(|k| **k != FaultKind::Split).count() as u32;
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
    if kinds.contains(&FaultKind::Split) {
        let first = if others > 0 { interval.mul_f64(1.5) } else { interval };
        if first >= time_limit {
            problems.push(format!("the first forced split comes {:.0} s in", first.as_secs_f64()));
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

fn describe(a: &Active) -> String {
    a.summary.clone()
}

/// Sleeps for `d`; returns true if cancelled first.
async fn sleep_or_cancel(d: Duration, cancel: &CancellationToken) -> bool {
    tokio::select! {
        _ = cancel.cancelled() => true,
        _ = tokio::time::sleep(d) => false,
    }
}

//! Live counters of a running workload, read by the runner's progress bar. Cheap atomics;
//! the reader computes per-second rates by differencing two snapshots.

use analysis::history::OpType;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct Stats {
    invoked: AtomicU64,
    ok: AtomicU64,
    fail: AtomicU64,
    info: AtomicU64,
    retired: AtomicU64,
}

/// A point-in-time copy of [`Stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StatsSnapshot {
    pub invoked: u64,
    pub ok: u64,
    pub fail: u64,
    pub info: u64,
    /// Processes retired after an indeterminate outcome.
    pub retired: u64,
}

impl StatsSnapshot {
    /// Operations invoked but not yet completed.
    pub fn in_flight(&self) -> u64 {
        self.invoked.saturating_sub(self.ok + self.fail + self.info)
    }

    /// Counts accumulated since `earlier`.
    pub fn since(&self, earlier: &StatsSnapshot) -> StatsSnapshot {
        StatsSnapshot {
            invoked: self.invoked.saturating_sub(earlier.invoked),
            ok: self.ok.saturating_sub(earlier.ok),
            fail: self.fail.saturating_sub(earlier.fail),
            info: self.info.saturating_sub(earlier.info),
            retired: self.retired.saturating_sub(earlier.retired),
        }
    }
}

impl Stats {
    pub fn new() -> Stats {
        Stats::default()
    }

    pub fn record_invoke(&self) {
        self.invoked.fetch_add(1, Ordering::Relaxed);
    }

    pub fn record_completion(&self, kind: OpType) {
        let counter = match kind {
            OpType::Ok => &self.ok,
            OpType::Fail => &self.fail,
            OpType::Info => &self.info,
            OpType::Invoke => return,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn record_retirement(&self) {
        self.retired.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            invoked: self.invoked.load(Ordering::Relaxed),
            ok: self.ok.load(Ordering::Relaxed),
            fail: self.fail.load(Ordering::Relaxed),
            info: self.info.load(Ordering::Relaxed),
            retired: self.retired.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_differences() {
        let s = Stats::new();
        s.record_invoke();
        s.record_invoke();
        s.record_completion(OpType::Ok);
        let a = s.snapshot();
        assert_eq!((a.invoked, a.ok, a.in_flight()), (2, 1, 1));
        s.record_completion(OpType::Info);
        s.record_retirement();
        s.record_completion(OpType::Invoke);
        let b = s.snapshot();
        let d = b.since(&a);
        assert_eq!(
            (d.invoked, d.ok, d.fail, d.info, d.retired),
            (0, 0, 0, 1, 1)
        );
        assert_eq!(b.in_flight(), 0);
    }
}

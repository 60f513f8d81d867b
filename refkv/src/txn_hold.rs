//! Test only: the transactions a node coordinates that hold their locks, and a hold at the
//! commit point (or just after the primary's commit) that a test (faultline's `txn-move`
//! nemesis, through `RefkvTxn.TxnHold`) can switch on, so that a fault aimed at a live
//! lock (a move of a secondary's range, a killed coordinator) lands while the lock is
//! live. See docs/refkv.md § Holding a transaction at its commit point.
//!
//! Invariants:
//! - nothing is held unless a test armed a hold: by default a transaction never waits here;
//! - an armed hold is taken by exactly one transaction, and only by one that writes a key
//!   besides its primary (it has a secondary write lock to aim at) and whose prewrites all
//!   succeeded (a transaction that aborts does not use it up);
//! - a held transaction waits at most the armed time, less if released; its locks' expiry
//!   is pushed back by at least the time it is held (every transaction that prewrites
//!   while a hold is armed gets the longer expiry), so no reader rolls it back while held;
//! - a transaction is listed from the moment its prewrites all succeeded until its
//!   coordinator is done with it (committed, or gave up), whichever way it ends; it is
//!   listed `held` only once it has reached its hold point.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;

use crate::keys::Key;

/// The longest hold a test may arm (a longer one is cut to this): a held transaction's
/// locks keep readers and writers of its keys waiting.
pub const MAX_HOLD: Duration = Duration::from_secs(10);

/// Where an armed hold stops the transaction that takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldPoint {
    /// After its prewrites and commit timestamp, before its primary's commit.
    CommitPoint,
    /// After its primary's commit, before its secondaries' commits: the transaction is
    /// committed and its secondary locks are still live.
    AfterPrimaryCommit,
}

/// An armed or taken hold: how long at most, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hold {
    pub time: Duration,
    pub at: HoldPoint,
}

/// A transaction whose locks are all in place and which has not finished committing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InFlight {
    pub start_ts: u64,
    /// `None` until it has one.
    pub commit_ts: Option<u64>,
    pub primary: Key,
    /// The keys it writes besides its primary.
    pub secondary_writes: Vec<Key>,
    pub held: bool,
}

/// The node's board of transactions in flight and its armed hold.
pub struct TxnHold {
    armed: Mutex<Option<Hold>>,
    board: Mutex<BTreeMap<u64, InFlight>>,
    /// Bumped by every release; held transactions wait for a change.
    released: watch::Sender<u64>,
}

impl Default for TxnHold {
    fn default() -> Self {
        TxnHold {
            armed: Mutex::new(None),
            board: Mutex::new(BTreeMap::new()),
            released: watch::channel(0).0,
        }
    }
}

/// A transaction's place on the board; dropping it takes the transaction off.
pub struct Listed<'a> {
    hold: &'a TxnHold,
    start_ts: u64,
    released: watch::Receiver<u64>,
}

impl TxnHold {
    /// Arms a hold of `time` (at most [`MAX_HOLD`]) at `at` for the next transaction that
    /// writes a secondary key; replaces an earlier armed hold.
    pub fn arm(&self, time: Duration, at: HoldPoint) {
        *lock(&self.armed) = Some(Hold {
            time: time.min(MAX_HOLD),
            at,
        });
    }

    /// Releases every held transaction and disarms.
    pub fn release_all(&self) {
        *lock(&self.armed) = None;
        self.released.send_modify(|n| *n += 1);
    }

    /// The armed hold, left armed, for a transaction about to prewrite that writes a
    /// secondary key (it lengthens its locks by that much in case it takes the hold);
    /// `None` otherwise or when nothing is armed.
    pub fn peek(&self, writes_secondary: bool) -> Option<Duration> {
        if !writes_secondary {
            return None;
        }
        lock(&self.armed).map(|h| h.time)
    }

    /// The armed hold, taken (so no other transaction gets it), by a transaction whose
    /// prewrites all succeeded with locks lengthened by `lengthened` (its [`TxnHold::peek`]):
    /// at most that long. `None` when nothing is armed, or the locks were not lengthened.
    pub fn take(&self, lengthened: Option<Duration>) -> Option<Hold> {
        let lengthened = lengthened?;
        lock(&self.armed).take().map(|h| Hold {
            time: h.time.min(lengthened),
            ..h
        })
    }

    /// The transactions in flight, oldest first.
    pub fn list(&self) -> Vec<InFlight> {
        lock(&self.board).values().cloned().collect()
    }

    /// Puts `txn` on the board until the returned guard is dropped.
    pub fn enter(&self, txn: InFlight) -> Listed<'_> {
        let start_ts = txn.start_ts;
        let released = self.released.subscribe();
        lock(&self.board).insert(start_ts, txn);
        Listed {
            hold: self,
            start_ts,
            released,
        }
    }
}

impl Listed<'_> {
    /// Records the transaction's commit timestamp on the board.
    pub fn set_commit_ts(&self, commit_ts: u64) {
        if let Some(t) = lock(&self.hold.board).get_mut(&self.start_ts) {
            t.commit_ts = Some(commit_ts);
        }
    }

    /// Lists the transaction as held (it has reached its hold point).
    pub fn mark_held(&self) {
        if let Some(t) = lock(&self.hold.board).get_mut(&self.start_ts) {
            t.held = true;
        }
    }

    /// Waits until a release or for `hold`, whichever comes first; whether it was released.
    pub async fn wait(&mut self, hold: Duration) -> bool {
        let released = matches!(
            tokio::time::timeout(hold, self.released.changed()).await,
            Ok(Ok(()))
        );
        if let Some(t) = lock(&self.hold.board).get_mut(&self.start_ts) {
            t.held = false;
        }
        released
    }
}

impl Drop for Listed<'_> {
    fn drop(&mut self) {
        lock(&self.hold.board).remove(&self.start_ts);
    }
}

/// A poisoned lock still holds consistent data here (every critical section is one
/// assignment), so it is used as it is.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn txn(start_ts: u64, held: bool) -> InFlight {
        InFlight {
            start_ts,
            commit_ts: None,
            primary: b"p".to_vec(),
            secondary_writes: vec![b"s".to_vec()],
            held,
        }
    }

    #[test]
    fn an_armed_hold_goes_to_one_transaction_with_a_secondary_write() {
        let h = TxnHold::default();
        assert_eq!(h.peek(true), None, "nothing armed: nothing held");
        h.arm(Duration::from_secs(60), HoldPoint::AfterPrimaryCommit);
        assert_eq!(
            h.peek(false),
            None,
            "a transaction without a secondary write does not see it"
        );
        assert_eq!(
            h.peek(true),
            Some(MAX_HOLD),
            "capped, and peeking leaves it armed"
        );
        assert_eq!(h.take(None), None, "locks not lengthened: not taken");
        let taken = Hold {
            time: Duration::from_secs(1),
            at: HoldPoint::AfterPrimaryCommit,
        };
        assert_eq!(
            h.take(Some(Duration::from_secs(1))),
            Some(taken),
            "never longer than the locks were lengthened, at the armed point"
        );
        assert_eq!(h.take(Some(MAX_HOLD)), None, "taken once");
        h.arm(Duration::from_millis(5), HoldPoint::CommitPoint);
        h.release_all();
        assert_eq!(h.peek(true), None, "a release disarms");
    }

    #[test]
    fn the_board_lists_a_transaction_while_its_guard_lives() {
        let h = TxnHold::default();
        {
            let listed = h.enter(txn(7, false));
            listed.set_commit_ts(9);
            assert_eq!(
                h.list(),
                [InFlight {
                    commit_ts: Some(9),
                    ..txn(7, false)
                }]
            );
            listed.mark_held();
            assert!(h.list()[0].held, "held once at its hold point");
        }
        assert!(h.list().is_empty());
    }

    #[tokio::test]
    async fn a_held_transaction_waits_until_released_or_its_time_is_up() {
        let h = TxnHold::default();
        let mut listed = h.enter(txn(1, true));
        assert!(
            !listed.wait(Duration::from_millis(10)).await,
            "not released: the time ran out"
        );
        assert!(!h.list()[0].held, "no longer held");
        h.release_all();
        assert!(
            listed.wait(Duration::from_secs(5)).await,
            "a release that came before the wait still counts"
        );
    }
}

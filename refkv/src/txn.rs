//! The coordinator of a transaction (`RefkvTxn.Txn`): the node that receives it runs
//! Percolator-style two-phase commit over the groups that own its keys. The rules applied
//! at each key are in `mvcc.rs`; timestamps come from `tso.rs`.
//!
//! Steps:
//! 1. `start_ts` from the oracle.
//! 2. Snapshot reads at `start_ts` of every key the transaction reads (a lock of a
//!    transaction that started earlier is resolved first: rolled forward if its primary
//!    committed, rolled back once it expired, waited for otherwise).
//! 3. Read-only: done (serialized at `start_ts`).
//! 4. Prewrite every key the transaction touches — written keys with their writes, read
//!    keys with a read lock — the primary (the first written key) first, then the others.
//!    Each prewrite is refused on a lock of another transaction or a write committed after
//!    `start_ts`, so the snapshot reads are still current when the locks are all held.
//! 5. `commit_ts` from the oracle; commit the primary (the commit point); then the others.
//!    From step 5 until the coordinator is done, the transaction is listed as in flight
//!    (`txn_hold.rs`); test only, a hold armed there stops it between `commit_ts` and the
//!    primary's commit.
//!
//! Only this coordinator ever commits a primary, and only after step 4 succeeded, so the
//! outcome it reports is:
//! - [`TxnError::NotStarted`] — nothing was written (no timestamp, a read failed): definite;
//! - [`TxnError::Aborted`] — a prewrite was refused or conflicted, or no commit timestamp,
//!   or the primary's commit was refused or found the transaction rolled back by a reader,
//!   and no prewrite had an unknown outcome: definite (the primary is never committed);
//! - [`TxnError::Unknown`] — a prewrite or the primary's commit may or may not have
//!   applied: indeterminate.
//!
//! Invariant: a transaction is reported committed only after its primary's commit applied.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::future::join_all;
use tokio::time::Instant;

use crate::exec::{ExecOp, ExecReply};
use crate::mvcc::{apply_writes, LockInfo, Prewrite, SnapshotRead, TxnOutcome, Write};
use crate::node::NodeCore;
use crate::txn_hold::{HoldPoint, InFlight};
use crate::types::{Command, CommandResult, Key};

/// Pause before a reader looks again at a lock that has not expired.
const LOCK_WAIT: Duration = Duration::from_millis(10);
/// Prewrites of one key per transaction (a lock met may be resolved or released between).
const PREWRITE_ATTEMPTS: usize = 8;
/// How long a prewrite waits for another transaction's live lock before aborting.
const PREWRITE_WAIT: Duration = Duration::from_millis(250);

/// One micro-op as the client sends it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mop {
    /// Append `value` to the list at `key`.
    Append { key: Key, value: i64 },
    /// Replace the value at `key` by the one element `value` (a register write).
    Write { key: Key, value: i64 },
    /// Read the list at `key` (a register is a list of at most one element).
    Read { key: Key },
}

impl Mop {
    pub fn key(&self) -> &Key {
        match self {
            Mop::Append { key, .. } | Mop::Write { key, .. } | Mop::Read { key } => key,
        }
    }

    fn write(&self) -> Option<Write> {
        match self {
            Mop::Append { value, .. } => Some(Write::Append(*value)),
            Mop::Write { value, .. } => Some(Write::Put(*value)),
            Mop::Read { .. } => None,
        }
    }
}

/// A committed (or read-only) transaction: one entry per micro-op (a read's value, `None`
/// for a key never written and for writes), and its timestamps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnDone {
    pub results: Vec<Option<Vec<i64>>>,
    pub start_ts: u64,
    /// `None` for a read-only transaction.
    pub commit_ts: Option<u64>,
}

/// Why a transaction did not commit, and whether it certainly did not.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TxnError {
    /// The request is malformed; nothing was done.
    #[error("{0}")]
    Invalid(String),
    /// Definitely not committed; nothing was written.
    #[error("transaction not started: {0}")]
    NotStarted(String),
    /// Definitely not committed.
    #[error("transaction aborted: {0}")]
    Aborted(String),
    /// May or may not have committed.
    #[error("outcome unknown: {0}")]
    Unknown(String),
    /// Definitely not committed, nothing written: a condition on what it read did not hold
    /// ([`NodeCore::transact_if`]).
    #[error("condition failed: {0}")]
    ConditionFailed(String),
}

/// A transaction's snapshot reads: key → list, `None` if never written.
pub type Snapshot = BTreeMap<Key, Option<Vec<i64>>>;

/// A condition on a transaction's snapshot reads.
pub type Guard<'a> = dyn Fn(&Snapshot) -> Result<(), String> + Send + Sync + 'a;

/// What the transaction does at one key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct KeyPlan {
    read: bool,
    writes: Vec<Write>,
}

/// The keys of a transaction and its primary (the first key it writes, if any).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Plan {
    keys: BTreeMap<Key, KeyPlan>,
    primary: Option<Key>,
}

impl Plan {
    fn of(mops: &[Mop]) -> Result<Plan, TxnError> {
        if mops.is_empty() {
            return Err(TxnError::Invalid(
                "a transaction needs at least one micro-op".into(),
            ));
        }
        let mut keys: BTreeMap<Key, KeyPlan> = BTreeMap::new();
        let mut primary = None;
        for mop in mops {
            if mop.key().is_empty() {
                return Err(TxnError::Invalid("key must not be empty".into()));
            }
            let plan = keys.entry(mop.key().clone()).or_default();
            match mop.write() {
                Some(w) => {
                    plan.writes.push(w);
                    primary.get_or_insert_with(|| mop.key().clone());
                }
                None => plan.read = true,
            }
        }
        Ok(Plan { keys, primary })
    }

    /// The keys written besides `primary`.
    fn secondary_writes(&self, primary: &Key) -> Vec<Key> {
        self.keys
            .iter()
            .filter(|(k, p)| *k != primary && !p.writes.is_empty())
            .map(|(k, _)| k.clone())
            .collect()
    }

    fn read_keys(&self) -> impl Iterator<Item = &Key> {
        self.keys.iter().filter(|(_, p)| p.read).map(|(k, _)| k)
    }
}

/// Each micro-op's answer: reads see the snapshot plus the transaction's own earlier writes.
fn results(mops: &[Mop], mut current: BTreeMap<Key, Option<Vec<i64>>>) -> Vec<Option<Vec<i64>>> {
    mops.iter()
        .map(|mop| match (mop, mop.write()) {
            (Mop::Read { key }, _) => current.get(key).cloned().flatten(),
            (_, Some(w)) => {
                if let Some(value) = current.get_mut(mop.key()) {
                    *value = apply_writes(value.take(), &[w]);
                }
                None
            }
            (_, None) => None,
        })
        .collect()
}

/// A transactional command's reply, by what it says about its effect.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Answer {
    /// Applied, with this outcome.
    Did(TxnOutcome),
    /// Definitely not applied.
    NotDone(String),
    /// May or may not have applied.
    Unknown(String),
}

fn answer(reply: ExecReply) -> Answer {
    match reply {
        ExecReply::Committed {
            result: CommandResult::Txn(outcome),
            ..
        } => Answer::Did(outcome),
        ExecReply::Rejected {
            current_epoch,
            reason,
        } => Answer::NotDone(format!(
            "stale route epoch: {reason}; current epoch {current_epoch}"
        )),
        ExecReply::Unavailable(m) => Answer::NotDone(m),
        ExecReply::NotLeader { .. } => Answer::NotDone("not leader".into()),
        ExecReply::Indeterminate(m) => Answer::Unknown(m),
        other => Answer::Unknown(format!("unexpected reply {other:?}")),
    }
}

/// Why a prewrite failed: definitely not applied, or perhaps applied.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Failure {
    Definite(String),
    Unknown(String),
}

/// The failure that decides the transaction's report: an unknown one if any.
fn decisive(failures: Vec<Failure>) -> Option<Failure> {
    let unknown = failures
        .iter()
        .find(|f| matches!(f, Failure::Unknown(_)))
        .cloned();
    unknown.or_else(|| failures.into_iter().next())
}

fn show(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Where a key's prewrite was applied: its group and the route epoch it was sent under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pinned {
    group: u64,
    epoch: u64,
}

/// What to do with a lock once its primary's fate is known.
#[derive(Clone, Copy, Debug)]
enum Decision {
    RollForward { commit_ts: u64 },
    RollBack,
}

impl NodeCore {
    /// Runs `mops` as one transaction (see the module doc).
    pub async fn transact(&self, mops: &[Mop]) -> Result<TxnDone, TxnError> {
        self.transact_if(mops, &|_| Ok(())).await
    }

    /// [`Self::transact`], committing only if `guard` accepts the snapshot of the keys it
    /// reads (key → list, `None` for a key never written); a refusal is
    /// [`TxnError::ConditionFailed`], nothing written. The prewrites' read locks keep the
    /// snapshot current until the commit, so the guard still holds when it commits.
    pub async fn transact_if(&self, mops: &[Mop], guard: &Guard<'_>) -> Result<TxnDone, TxnError> {
        let plan = Plan::of(mops)?;
        let start_ts = self
            .timestamp()
            .await
            .map_err(|e| TxnError::NotStarted(format!("no start timestamp: {e}")))?;
        let reads = join_all(
            plan.read_keys()
                .map(|k| async move { (k.clone(), self.snapshot_read(k, start_ts).await) }),
        )
        .await;
        let mut snapshot = BTreeMap::new();
        for (key, read) in reads {
            snapshot.insert(key, read.map_err(TxnError::NotStarted)?);
        }
        guard(&snapshot).map_err(TxnError::ConditionFailed)?;
        let results = results(mops, snapshot);
        let commit_ts = match &plan.primary {
            None => None,
            Some(primary) => Some(self.two_phase_commit(&plan, primary, start_ts).await?),
        };
        Ok(TxnDone {
            results,
            start_ts,
            commit_ts,
        })
    }

    /// A timestamp from the oracle (the default group's leader).
    async fn timestamp(&self) -> Result<u64, String> {
        if !self.bugs.ts_from_receiver {
            return crate::tso::from_oracle(self).await;
        }
        match crate::tso::next_ts_from_receiver(self).await {
            ExecReply::Ts { ts } => Ok(ts),
            other => Err(format!("{other:?}")),
        }
    }

    /// Sends a transactional command for `key` to its owner, routed like every write.
    async fn txn_command(&self, key: &Key, make: impl Fn(u64) -> Command) -> Answer {
        self.txn_command_at(key, make).await.0
    }

    /// [`Self::txn_command`], with the group and route epoch it was last sent under.
    async fn txn_command_at(&self, key: &Key, make: impl Fn(u64) -> Command) -> (Answer, Pinned) {
        let routed = self
            .route_key(key, true, |epoch| ExecOp::Write(make(epoch)))
            .await;
        (
            answer(routed.reply),
            Pinned {
                group: routed.route.group,
                epoch: routed.route.epoch,
            },
        )
    }

    /// The value of `key` as of `ts`, after resolving any lock that could hide a commit
    /// before `ts`.
    async fn snapshot_read(&self, key: &Key, ts: u64) -> Result<Option<Vec<i64>>, String> {
        let deadline = Instant::now() + self.cfg.retry_budget;
        loop {
            let routed = self
                .route_key(key, false, |epoch| ExecOp::TxnRead {
                    key: key.clone(),
                    epoch,
                    ts,
                })
                .await;
            let lock = match routed.reply {
                ExecReply::TxnRead {
                    read: SnapshotRead::Value(v),
                    ..
                } => return Ok(v),
                ExecReply::TxnRead {
                    read: SnapshotRead::Locked(lock),
                    ..
                } => lock,
                ExecReply::TxnRead {
                    read: SnapshotRead::NotTxnKey,
                    ..
                } => {
                    return Err(format!(
                        "key {} holds a plain value, not a transactional one",
                        show(key)
                    ))
                }
                other => return Err(format!("reading {}: {other:?}", show(key))),
            };
            if Instant::now() >= deadline {
                return Err(format!(
                    "key {} stayed locked by transaction {}",
                    show(key),
                    lock.start_ts
                ));
            }
            if !self.resolve(key, &lock).await {
                tokio::time::sleep(LOCK_WAIT).await;
            }
        }
    }

    /// Resolves `lock`, met at `key`, once it has expired: asks its primary for the
    /// transaction's fate (rolling it back there if still undecided) and rolls the lock
    /// forward or back. Whether the lock is gone (or decided, at the primary itself).
    async fn resolve(&self, key: &Key, lock: &LockInfo) -> bool {
        let now = now_ms();
        if now < lock.expires_ms {
            return false;
        }
        let primary = &lock.primary;
        let start_ts = lock.start_ts;
        let decision = if self.bugs.expired_lock_rolled_back && key != primary {
            // Seeded bug `expired-lock-rolled-back`: the primary is never asked.
            Decision::RollBack
        } else {
            match self
                .txn_command(primary, |epoch| Command::TxnCheckPrimary {
                    key: primary.clone(),
                    epoch,
                    start_ts,
                    now_ms: now,
                })
                .await
            {
                Answer::Did(TxnOutcome::Committed { commit_ts }) => {
                    Decision::RollForward { commit_ts }
                }
                Answer::Did(TxnOutcome::RolledBack) => Decision::RollBack,
                _ => return false,
            }
        };
        if key == primary {
            return true;
        }
        let done = self
            .txn_command(key, |epoch| match decision {
                Decision::RollForward { commit_ts } => Command::TxnCommit {
                    key: key.clone(),
                    epoch,
                    start_ts,
                    commit_ts,
                },
                Decision::RollBack => Command::TxnRollback {
                    key: key.clone(),
                    epoch,
                    start_ts,
                },
            })
            .await;
        matches!(done, Answer::Did(_))
    }

    /// Steps 4 and 5: prewrite, commit timestamp, commit. Returns the commit timestamp.
    async fn two_phase_commit(
        &self,
        plan: &Plan,
        primary: &Key,
        start_ts: u64,
    ) -> Result<u64, TxnError> {
        let secondary_writes = plan.secondary_writes(primary);
        // Test only: a hold a test armed (`txn_hold.rs`); the locks live that much longer.
        let lengthened = self.txn_hold.peek(!secondary_writes.is_empty());
        let held_ms = lengthened.map_or(0, |h| h.as_millis() as i64);
        let expires_ms = now_ms() + self.cfg.tunables.txn_lock_ttl_ms as i64 + held_ms;
        let prewrite_of = |key: &Key| Prewrite {
            start_ts,
            primary: primary.clone(),
            writes: plan
                .keys
                .get(key)
                .map(|p| p.writes.clone())
                .unwrap_or_default(),
            expires_ms,
        };
        let primary_at = match self.prewrite(primary, &prewrite_of(primary)).await {
            Ok(at) => at,
            Err(failure) => return Err(self.abort(start_ts, [primary], failure).await),
        };
        let secondaries: Vec<&Key> = plan.keys.keys().filter(|k| *k != primary).collect();
        let secondary_prewrites: Vec<Prewrite> =
            secondaries.iter().map(|k| prewrite_of(k)).collect();
        let prewrites = join_all(
            secondaries
                .iter()
                .zip(&secondary_prewrites)
                .map(|(k, p)| self.prewrite(k, p)),
        )
        .await;
        let failures: Vec<Failure> = prewrites.iter().filter_map(|r| r.clone().err()).collect();
        if let Some(failure) = decisive(failures) {
            // Every key whose lock may be in place: the primary, and each secondary whose
            // prewrite did not certainly fail.
            let placed = secondaries
                .iter()
                .zip(&prewrites)
                .filter(|(_, r)| !matches!(r, Err(Failure::Definite(_))))
                .map(|(k, _)| *k);
            return Err(self
                .abort(start_ts, std::iter::once(primary).chain(placed), failure)
                .await);
        }
        let hold = self.txn_hold.take(lengthened);
        let held_now = hold.is_some_and(|h| h.at == HoldPoint::CommitPoint);
        let in_flight = InFlight {
            start_ts,
            commit_ts: None,
            primary: primary.clone(),
            secondary_writes,
            held: held_now,
        };
        let mut listed = self.txn_hold.enter(in_flight);
        let commit_ts = match self.timestamp().await {
            Ok(ts) => ts,
            Err(e) => {
                let why = Failure::Definite(format!("no commit timestamp: {e}"));
                return Err(self.abort(start_ts, plan.keys.keys(), why).await);
            }
        };
        listed.set_commit_ts(commit_ts);
        if let Some(hold) = hold.filter(|h| h.at == HoldPoint::CommitPoint) {
            let released = listed.wait(hold.time).await;
            tracing::info!(
                start_ts,
                commit_ts,
                released,
                "transaction held at its commit point (TxnHold) goes on"
            );
        }
        match self
            .commit_key(primary, primary_at, start_ts, commit_ts)
            .await
        {
            Answer::Did(TxnOutcome::Committed { .. }) => {}
            Answer::Did(TxnOutcome::LockMissing | TxnOutcome::RolledBack) => {
                return Err(TxnError::Aborted(format!("a reader rolled transaction {start_ts} back (its locks expired) before its commit")));
            }
            Answer::NotDone(why) => {
                let why = Failure::Definite(format!(
                    "commit of the primary {} refused: {why}",
                    show(primary)
                ));
                return Err(self.abort(start_ts, plan.keys.keys(), why).await);
            }
            Answer::Did(other) => {
                return Err(TxnError::Unknown(format!(
                    "commit of the primary answered {other:?}"
                )))
            }
            Answer::Unknown(why) => {
                return Err(TxnError::Unknown(format!(
                    "commit of the primary {}: {why}",
                    show(primary)
                )))
            }
        }
        if let Some(hold) = hold.filter(|h| h.at == HoldPoint::AfterPrimaryCommit) {
            listed.mark_held();
            let released = listed.wait(hold.time).await;
            tracing::info!(
                start_ts,
                commit_ts,
                released,
                "transaction held after its primary commit (TxnHold) goes on"
            );
        }
        // The transaction is committed; a secondary left locked is rolled forward by the
        // next reader that meets it.
        let pins = prewrites.iter().map(|r| r.as_ref().ok().copied());
        let commits = join_all(secondaries.iter().zip(pins).map(|(k, at)| async move {
            match at {
                Some(at) => self.commit_key(k, at, start_ts, commit_ts).await,
                None => Answer::NotDone("no prewrite".into()),
            }
        }))
        .await;
        for (key, answer) in secondaries.iter().zip(commits) {
            let writes = plan.keys.get(*key).is_some_and(|p| !p.writes.is_empty());
            if writes && answer == Answer::Did(TxnOutcome::LockMissing) {
                // Only a lost lock can do this: the primary committed, so nobody rolled the
                // transaction back, and a reader that rolled the key forward left a version.
                // (A read lock leaves none, so its commit may find it gone legitimately.)
                tracing::error!(start_ts, commit_ts, key = %show(key), "a committed transaction's write lock is gone: the write is lost");
            }
        }
        Ok(commit_ts)
    }

    /// Commits the transaction at `key`, routed like every write — or, under the seeded bug
    /// `commit-to-old-owner`, sent to the group and epoch that took the key's prewrite
    /// (`prewritten_at`), whoever owns the key now.
    async fn commit_key(
        &self,
        key: &Key,
        prewritten_at: Pinned,
        start_ts: u64,
        commit_ts: u64,
    ) -> Answer {
        if self.bugs.commit_to_old_owner {
            let Pinned { group, epoch } = prewritten_at;
            let cmd = Command::TxnCommit {
                key: key.clone(),
                epoch,
                start_ts,
                commit_ts,
            };
            return answer(self.execute(group, ExecOp::Write(cmd), true).await);
        }
        self.txn_command(key, |epoch| Command::TxnCommit {
            key: key.clone(),
            epoch,
            start_ts,
            commit_ts,
        })
        .await
    }

    /// Locks `key` for the transaction. A lock of another transaction is resolved when it
    /// has expired, and otherwise waited for (without a Raft write) for at most
    /// [`PREWRITE_WAIT`]: most locks are released within milliseconds, and the bound keeps
    /// two transactions that wait for each other's keys from waiting for ever.
    async fn prewrite(&self, key: &Key, p: &Prewrite) -> Result<Pinned, Failure> {
        let deadline = Instant::now() + PREWRITE_WAIT;
        for _ in 0..PREWRITE_ATTEMPTS {
            let (answer, at) = self
                .txn_command_at(key, |epoch| Command::TxnPrewrite {
                    key: key.clone(),
                    epoch,
                    prewrite: p.clone(),
                })
                .await;
            let lock = match answer {
                Answer::Did(TxnOutcome::Prewritten) => return Ok(at),
                Answer::Did(TxnOutcome::Locked(lock)) => lock,
                Answer::Did(TxnOutcome::WriteConflict { commit_ts }) => {
                    return Err(Failure::Definite(format!(
                        "write conflict on {}: a write committed at {commit_ts}, after the start {}",
                        show(key),
                        p.start_ts
                    )))
                }
                Answer::Did(TxnOutcome::RolledBack) => {
                    return Err(Failure::Definite(format!("a reader rolled transaction {} back", p.start_ts)))
                }
                Answer::Did(TxnOutcome::NotTxnKey) => {
                    return Err(Failure::Definite(format!("key {} holds a plain value, not a transactional one", show(key))))
                }
                Answer::Did(other) => return Err(Failure::Unknown(format!("prewrite of {} answered {other:?}", show(key)))),
                Answer::NotDone(why) => return Err(Failure::Definite(format!("prewrite of {} refused: {why}", show(key)))),
                Answer::Unknown(why) => return Err(Failure::Unknown(format!("prewrite of {}: {why}", show(key)))),
            };
            if !self.resolve(key, &lock).await && !self.wait_for_unlock(key, deadline).await {
                return Err(Failure::Definite(format!(
                    "key {} is locked by transaction {}",
                    show(key),
                    lock.start_ts
                )));
            }
        }
        Err(Failure::Definite(format!(
            "key {} stayed locked",
            show(key)
        )))
    }

    /// Polls `key` (linearizable reads, no Raft write) until no lock is on it; false at
    /// `deadline`.
    async fn wait_for_unlock(&self, key: &Key, deadline: Instant) -> bool {
        while Instant::now() < deadline {
            tokio::time::sleep(LOCK_WAIT).await;
            let routed = self
                .route_key(key, false, |epoch| ExecOp::TxnRead {
                    key: key.clone(),
                    epoch,
                    ts: u64::MAX,
                })
                .await;
            if let ExecReply::TxnRead {
                read: SnapshotRead::Value(_),
                ..
            } = routed.reply
            {
                return true;
            }
        }
        false
    }

    /// Rolls the transaction back at `keys` (best effort: the coordinator never commits it
    /// now, and a lock left behind is rolled back by the next reader after it expires), and
    /// reports `failure`. Should the primary answer that it committed — which only this
    /// coordinator can make happen, so never — the outcome is reported unknown, never failed.
    async fn abort<'k>(
        &self,
        start_ts: u64,
        keys: impl IntoIterator<Item = &'k Key>,
        failure: Failure,
    ) -> TxnError {
        let rollbacks = keys.into_iter().map(|k| {
            self.txn_command(k, move |epoch| Command::TxnRollback {
                key: k.clone(),
                epoch,
                start_ts,
            })
        });
        let answers = join_all(rollbacks).await;
        if answers
            .iter()
            .any(|a| matches!(a, Answer::Did(TxnOutcome::Committed { .. })))
        {
            return TxnError::Unknown(format!(
                "transaction {start_ts} was found committed while aborting it ({failure:?})"
            ));
        }
        match failure {
            Failure::Definite(why) => TxnError::Aborted(why),
            Failure::Unknown(why) => TxnError::Unknown(why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn append(k: &str, v: i64) -> Mop {
        Mop::Append {
            key: k.into(),
            value: v,
        }
    }
    fn read(k: &str) -> Mop {
        Mop::Read { key: k.into() }
    }

    #[test]
    fn the_primary_is_the_first_written_key_and_read_keys_are_planned() {
        let mops = [read("a"), append("c", 1), append("b", 2), read("c")];
        let plan = Plan::of(&mops).unwrap();
        assert_eq!(plan.primary.as_deref(), Some(b"c".as_slice()));
        assert_eq!(
            plan.read_keys().cloned().collect::<Vec<_>>(),
            [b"a".to_vec(), b"c".to_vec()]
        );
        assert_eq!(plan.keys[b"c".as_slice()].writes, [Write::Append(1)]);
        assert_eq!(Plan::of(&[read("a")]).unwrap().primary, None, "read-only");
        assert_eq!(
            plan.secondary_writes(&b"c".to_vec()),
            [b"b".to_vec()],
            "read-only keys hold read locks, not write locks"
        );
    }

    #[test]
    fn an_empty_transaction_or_key_is_invalid() {
        assert!(matches!(Plan::of(&[]), Err(TxnError::Invalid(_))));
        assert!(matches!(Plan::of(&[read("")]), Err(TxnError::Invalid(_))));
    }

    #[test]
    fn reads_see_the_snapshot_and_the_transactions_own_earlier_writes() {
        let mops = [
            read("a"),
            append("a", 3),
            read("a"),
            Mop::Write {
                key: b"a".to_vec(),
                value: 9,
            },
            read("a"),
            read("b"),
        ];
        let snapshot = BTreeMap::from([(b"a".to_vec(), Some(vec![1])), (b"b".to_vec(), None)]);
        assert_eq!(
            results(&mops, snapshot),
            [
                Some(vec![1]),
                None,
                Some(vec![1, 3]),
                None,
                Some(vec![9]),
                None
            ]
        );
    }

    #[test]
    fn an_unknown_prewrite_outcome_decides_the_report() {
        let d = |s: &str| Failure::Definite(s.into());
        assert_eq!(
            decisive(vec![d("x"), Failure::Unknown("y".into())]),
            Some(Failure::Unknown("y".into()))
        );
        assert_eq!(decisive(vec![d("x"), d("z")]), Some(d("x")));
        assert_eq!(decisive(vec![]), None);
    }
}

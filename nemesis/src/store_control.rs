//! What the nemesis asks the system under test, through its client API: who leads a Raft
//! group, which group serves the hot range, and forcing a split. The harness implements it
//! with its gRPC client; the nemesis stays independent of the wire protocol.

use analysis::history::{CommitMeta, SplitDetail, SplitJobRecord};
use futures::future::BoxFuture;

/// The outcome of a forced split, as recorded in the history.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SplitOutcome {
    /// The key the split was requested at.
    pub key: String,
    /// The route that was split, when known.
    pub route_id: Option<u64>,
    /// Group the right child should move to (`None`: same-group split).
    pub target_group: Option<u64>,
    /// Whether the store accepted the split.
    pub accepted: bool,
    /// The store's answer (catalog version, error text, ...), or why there was none.
    pub detail: SplitDetail,
    /// The split job moving the right child (cross-group splits), if the store runs one.
    pub job_id: Option<u64>,
}

impl SplitOutcome {
    /// A split at `key` that was not asked for or not answered, and why.
    pub fn refused(key: &str, why: impl Into<String>) -> SplitOutcome {
        SplitOutcome {
            key: key.to_string(),
            route_id: None,
            target_group: None,
            accepted: false,
            detail: SplitDetail::why(why),
            job_id: None,
        }
    }
}

/// How a stale write ended when not acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleWriteError {
    /// The write certainly did not take effect (a refusal), rather than maybe.
    pub definite: bool,
    pub error: String,
}

pub type StaleWriteResult = Result<Option<CommitMeta>, StaleWriteError>;

pub use analysis::history::txn_move::{HoldCommand, HoldPoint, TxnInFlight};

/// Questions and commands the nemesis sends to the cluster under test.
pub trait StoreControl: Send + Sync {
    /// The node currently leading `group`, if one is known.
    fn leader_of(&self, group: u64) -> BoxFuture<'_, Option<String>>;
    /// The group serving the hottest key right now (default: the default group, 1).
    fn hot_group(&self) -> BoxFuture<'_, u64>;
    /// The Raft groups the store runs.
    fn groups(&self) -> Vec<u64>;
    /// Forces a split at the hottest key whose route can be split at it; `cross_group` asks
    /// for the right child to move to another group. `None` when there is nothing to split
    /// (e.g. no hot key yet).
    fn split_hot(&self, cross_group: bool) -> BoxFuture<'_, Option<SplitOutcome>>;
    /// The phase of a split job (`PLANNED` ... `DONE`, `ABANDONED`), if the catalog shows it.
    fn job_phase(&self, job_id: u64) -> BoxFuture<'_, Option<String>>;
    /// A split job as the store reports it (`GetSplitJob`, else its catalog). The default:
    /// none (a store without split jobs).
    fn split_job(&self, job_id: u64) -> BoxFuture<'_, Option<SplitJobRecord>> {
        let _ = job_id;
        Box::pin(async { None })
    }
    /// The store's live (not DONE/ABANDONED) split job, if any.
    fn live_job(&self) -> BoxFuture<'_, Option<SplitJobRecord>> {
        Box::pin(async { None })
    }
    /// The group and epoch of the route holding `key` in the store's catalog now.
    fn route_at<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Option<(u64, u64)>> {
        let _ = key;
        Box::pin(async { None })
    }
    /// A stale client's write: `value` sent through `node` straight to `group` as if routed
    /// under `epoch` (not re-routed). `Ok` = acknowledged, with the commit metadata;
    /// `Err` = refused or failed, with whether that is definite and the error text.
    fn stale_write<'a>(
        &'a self,
        node: &'a str,
        key: &'a str,
        value: &'a str,
        group: u64,
        epoch: u64,
    ) -> BoxFuture<'a, StaleWriteResult> {
        let _ = (node, key, value, group, epoch);
        Box::pin(async {
            Err(StaleWriteError {
                definite: true,
                error: "unimplemented: no pinned writes".into(),
            })
        })
    }
    /// Test only (refkv's `TxnHold`), on `node`: arms, releases or only lists its hold
    /// ([`HoldCommand`]). Returns the transactions it coordinates whose locks are live, or
    /// why it could not be asked.
    fn txn_hold<'a>(
        &'a self,
        node: &'a str,
        command: HoldCommand,
    ) -> BoxFuture<'a, Result<Vec<TxnInFlight>, String>> {
        let _ = (node, command);
        Box::pin(async {
            Err("unimplemented: this store control cannot hold transactions".to_string())
        })
    }
    /// Moves `key` to another group with a cross-group split at it, first splitting off (in
    /// the same group) any key of `keep` that would otherwise move with it. `None` when the
    /// store cannot be asked at all.
    fn move_key<'a>(
        &'a self,
        key: &'a str,
        keep: &'a [String],
    ) -> BoxFuture<'a, Option<SplitOutcome>> {
        let _ = (key, keep);
        Box::pin(async { None })
    }
    /// Asks the store to abandon a split job (`AbandonSplitJob`); the store's refusal or
    /// the call's failure as text.
    fn abandon_job(&self, job_id: u64) -> BoxFuture<'_, Result<(), String>> {
        let _ = job_id;
        Box::pin(async {
            Err("unimplemented: this store control cannot abandon split jobs".to_string())
        })
    }
}

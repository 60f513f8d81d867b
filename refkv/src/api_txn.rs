//! The `RefkvTxn` service (a refkv extension in `proto/kv.proto`): decodes a transaction's
//! micro-ops, runs it on this node as coordinator (`txn.rs`) and maps its outcome to a gRPC
//! status with the definite / indeterminate contract of docs/refkv.md:
//! `INVALID_ARGUMENT` (malformed), `UNAVAILABLE` (not started, nothing written) and `ABORTED`
//! (conflict or refusal; never committed) are definite; `UNKNOWN` with a message starting
//! "outcome unknown" may have committed.
//!
//! `TxnHold` (test only) arms, releases and lists through `txn_hold.rs`.
//!
//! Invariant: the coordinator runs in a task of its own, so a client that gives up (or a
//! broken connection) never stops a transaction half way between its commit steps.

use tonic::{Request, Response, Status};

use crate::api_kv::Api;
use crate::autosplit::AccessKind;
use crate::proto::api::refkv_txn_server::RefkvTxn;
use crate::proto::api::{
    InFlightTxn, TxnHoldRequest, TxnHoldResponse, TxnMopKind, TxnMopResult, TxnRequest, TxnResponse,
};
use crate::txn::{Mop, TxnDone, TxnError};
use crate::txn_hold::{HoldPoint, InFlight};
use std::time::Duration;

/// The micro-ops of a request; an unknown kind is refused.
pub fn decode_mops(req: TxnRequest) -> Result<Vec<Mop>, Status> {
    req.mops
        .into_iter()
        .map(|m| match TxnMopKind::try_from(m.kind) {
            Ok(TxnMopKind::Append) => Ok(Mop::Append {
                key: m.key,
                value: m.value,
            }),
            Ok(TxnMopKind::Write) => Ok(Mop::Write {
                key: m.key,
                value: m.value,
            }),
            Ok(TxnMopKind::Read) => Ok(Mop::Read { key: m.key }),
            _ => Err(Status::invalid_argument(format!(
                "unknown micro-op kind {}",
                m.kind
            ))),
        })
        .collect()
}

/// The status a client sees for a transaction that did not commit.
pub fn txn_status(e: TxnError) -> Status {
    let message = e.to_string();
    match e {
        TxnError::Invalid(_) => Status::invalid_argument(message),
        TxnError::NotStarted(_) => Status::unavailable(message),
        TxnError::Aborted(_) => Status::aborted(message),
        TxnError::ConditionFailed(_) => Status::failed_precondition(message),
        TxnError::Unknown(_) => Status::unknown(message),
    }
}

fn response(done: TxnDone) -> TxnResponse {
    let results = done
        .results
        .into_iter()
        .map(|r| TxnMopResult {
            exists: r.is_some(),
            values: r.unwrap_or_default(),
        })
        .collect();
    TxnResponse {
        results,
        start_ts: done.start_ts,
        commit_ts: done.commit_ts.unwrap_or(0),
    }
}

impl Api {
    /// Feeds the auto-split sampler with the transaction's keys.
    fn sample(&self, mops: &[Mop]) {
        let catalog = self.node.catalog();
        for mop in mops {
            let kind = if matches!(mop, Mop::Read { .. }) {
                AccessKind::Read
            } else {
                AccessKind::Write
            };
            if let Some(route) = catalog.route_for_key(mop.key()) {
                self.node.sampler.record(route.id, mop.key(), kind);
            }
        }
    }
}

#[tonic::async_trait]
impl RefkvTxn for Api {
    async fn txn(&self, req: Request<TxnRequest>) -> Result<Response<TxnResponse>, Status> {
        let mops = decode_mops(req.into_inner())?;
        self.sample(&mops);
        let node = self.node.clone();
        let outcome = tokio::spawn(async move { node.transact(&mops).await })
            .await
            .map_err(|e| {
                Status::unknown(format!(
                    "outcome unknown: the transaction's task failed: {e}"
                ))
            })?;
        outcome
            .map(|done| Response::new(response(done)))
            .map_err(txn_status)
    }

    /// Test only: arms a hold at the next transaction's commit point (or after its primary
    /// commit), releases held transactions, and lists the transactions in flight
    /// (`txn_hold.rs`).
    async fn txn_hold(
        &self,
        req: Request<TxnHoldRequest>,
    ) -> Result<Response<TxnHoldResponse>, Status> {
        let req = req.into_inner();
        let hold = &self.node.txn_hold;
        if req.release {
            hold.release_all();
        }
        if req.arm_hold_ms > 0 {
            let at = if req.after_primary_commit {
                HoldPoint::AfterPrimaryCommit
            } else {
                HoldPoint::CommitPoint
            };
            hold.arm(Duration::from_millis(req.arm_hold_ms), at);
        }
        Ok(Response::new(TxnHoldResponse {
            txns: hold.list().into_iter().map(in_flight_txn).collect(),
        }))
    }
}

fn in_flight_txn(t: InFlight) -> InFlightTxn {
    InFlightTxn {
        start_ts: t.start_ts,
        commit_ts: t.commit_ts.unwrap_or(0),
        primary: t.primary,
        secondary_writes: t.secondary_writes,
        held: t.held,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::api::TxnMop;

    #[test]
    fn micro_ops_decode_and_an_unknown_kind_is_refused() {
        let mop = |kind: TxnMopKind| TxnMop {
            kind: kind as i32,
            key: b"k".to_vec(),
            value: 5,
        };
        let req = TxnRequest {
            mops: vec![
                mop(TxnMopKind::Append),
                mop(TxnMopKind::Write),
                mop(TxnMopKind::Read),
            ],
        };
        let expected = vec![
            Mop::Append {
                key: b"k".to_vec(),
                value: 5,
            },
            Mop::Write {
                key: b"k".to_vec(),
                value: 5,
            },
            Mop::Read { key: b"k".to_vec() },
        ];
        assert_eq!(decode_mops(req).unwrap(), expected);
        let bad = TxnRequest {
            mops: vec![mop(TxnMopKind::Unspecified)],
        };
        assert_eq!(
            decode_mops(bad).unwrap_err().code(),
            tonic::Code::InvalidArgument
        );
    }

    #[test]
    fn only_an_unknown_outcome_is_reported_as_possibly_committed() {
        let code = |e: TxnError| txn_status(e).code();
        assert_eq!(
            code(TxnError::Invalid("x".into())),
            tonic::Code::InvalidArgument
        );
        assert_eq!(
            code(TxnError::NotStarted("x".into())),
            tonic::Code::Unavailable
        );
        assert_eq!(code(TxnError::Aborted("x".into())), tonic::Code::Aborted);
        assert_eq!(
            code(TxnError::ConditionFailed("x".into())),
            tonic::Code::FailedPrecondition
        );
        let unknown = txn_status(TxnError::Unknown("x".into()));
        assert_eq!(unknown.code(), tonic::Code::Unknown);
        assert!(unknown.message().starts_with("outcome unknown"));
    }
}

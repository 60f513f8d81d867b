//! Transactions over refkv's `RefkvTxn.Txn` RPC (`proto/kv.proto`): the workload's micro-ops
//! go to the process's node in one request, and that node coordinates the two-phase commit
//! (docs/refkv.md § Transactions). An `append` is `TXN_MOP_KIND_APPEND`, a register write
//! `TXN_MOP_KIND_WRITE`; every read is `TXN_MOP_KIND_READ`, answered with the key's list (a
//! register is a list of at most one element).
//!
//! Outcomes (one test per rule below):
//! - `OK`: committed (or, read-only, served), one result per micro-op;
//! - `ABORTED` (a conflict, a refused prewrite, rolled back by a reader) and `UNAVAILABLE`
//!   sent by the server (refused before any prewrite: no timestamp, a read failed): definite;
//! - `UNKNOWN` "outcome unknown" (a prewrite or the commit may have applied),
//!   `DEADLINE_EXCEEDED`, the client's own deadline, a connection broken after sending:
//!   indeterminate for a transaction that writes;
//! - a failure to connect: definite (nothing was sent);
//! - a transaction that only reads: always definite (it changes nothing).
//!
//! Invariant: a writing transaction is recorded `fail` only when the server said it never
//! committed or the request never left.

use super::KvClient;
use crate::client::classify::{classify, CallError, CallKind};
use crate::client::{CallResult, HoldCommand, HoldPoint, TxnClient, TxnHoldControl, TxnInFlight};
use crate::proto::kv;
use crate::proto::kv::refkv_txn_client::RefkvTxnClient;
use crate::txn::{writes, Mop, ReadShape};
use futures::future::BoxFuture;
use serde_json::Value as Json;

/// The request for `mops`.
pub fn txn_request(mops: &[Mop]) -> kv::TxnRequest {
    let mop = |kind: kv::TxnMopKind, key: &str, value: i64| kv::TxnMop {
        kind: kind as i32,
        key: key.as_bytes().to_vec(),
        value,
    };
    let mops = mops
        .iter()
        .map(|m| match m {
            Mop::Append { key, value } => mop(kv::TxnMopKind::Append, key, *value),
            Mop::Write { key, value } => mop(kv::TxnMopKind::Write, key, *value),
            Mop::Read { key, .. } => mop(kv::TxnMopKind::Read, key, 0),
        })
        .collect();
    kv::TxnRequest { mops }
}

/// What each micro-op returned, as the history records it: a list read's list (empty for
/// a key never written), a register read's one value or `null`, `null` for a write. An
/// answer with a result count other than the micro-ops' is a bad response.
pub fn txn_values(mops: &[Mop], resp: kv::TxnResponse) -> CallResult<Vec<Json>> {
    if resp.results.len() != mops.len() {
        let message = format!(
            "a transaction of {} micro-ops was answered with {} results",
            mops.len(),
            resp.results.len()
        );
        return Err(CallError::bad_response(call_kind(mops), message));
    }
    let value = |mop: &Mop, r: kv::TxnMopResult| match mop {
        Mop::Read {
            shape: ReadShape::List,
            ..
        } => Json::Array(r.values.into_iter().map(Json::from).collect()),
        Mop::Read {
            shape: ReadShape::Register,
            ..
        } => r.values.last().map_or(Json::Null, |v| Json::from(*v)),
        _ => Json::Null,
    };
    Ok(mops
        .iter()
        .zip(resp.results)
        .map(|(m, r)| value(m, r))
        .collect())
}

/// A transaction that writes may change the store; one that only reads cannot.
fn call_kind(mops: &[Mop]) -> CallKind {
    if writes(mops) {
        CallKind::Mutation
    } else {
        CallKind::Read
    }
}

impl KvClient {
    async fn run_txn(&self, mops: &[Mop]) -> CallResult<Vec<Json>> {
        let mut client = RefkvTxnClient::new(self.channel.clone())
            .max_decoding_message_size(super::MAX_RESPONSE_BYTES);
        let kind = call_kind(mops);
        let resp = self
            .call(kind, client.txn(self.request(txn_request(mops))))
            .await?;
        txn_values(mops, resp)
    }
}

impl TxnHoldControl for KvClient {
    fn txn_hold(&self, command: HoldCommand) -> BoxFuture<'_, CallResult<Vec<TxnInFlight>>> {
        Box::pin(self.hold_txns(command))
    }
}

/// `command` as refkv's `TxnHoldRequest`.
fn hold_request(command: HoldCommand) -> kv::TxnHoldRequest {
    match command {
        HoldCommand::List => kv::TxnHoldRequest::default(),
        HoldCommand::Release => kv::TxnHoldRequest {
            release: true,
            ..Default::default()
        },
        HoldCommand::Arm { for_ms, at } => kv::TxnHoldRequest {
            arm_hold_ms: for_ms,
            release: false,
            after_primary_commit: at == HoldPoint::AfterPrimaryCommit,
        },
    }
}

impl KvClient {
    /// Test only: `RefkvTxn.TxnHold` ([`TxnHoldControl`]).
    async fn hold_txns(&self, command: HoldCommand) -> CallResult<Vec<TxnInFlight>> {
        let mut client = RefkvTxnClient::new(self.channel.clone())
            .max_decoding_message_size(super::MAX_RESPONSE_BYTES);
        let req = hold_request(command);
        let resp = self
            .call(CallKind::Mutation, client.txn_hold(self.request(req)))
            .await?;
        Ok(resp.txns.into_iter().map(in_flight_txn).collect())
    }
}

/// One listed transaction as the client reports it (keys as text, no commit timestamp as `None`).
pub fn in_flight_txn(t: kv::InFlightTxn) -> TxnInFlight {
    let text = |k: Vec<u8>| String::from_utf8_lossy(&k).into_owned();
    TxnInFlight {
        start_ts: t.start_ts,
        commit_ts: (t.commit_ts != 0).then_some(t.commit_ts),
        primary: text(t.primary),
        secondary_writes: t.secondary_writes.into_iter().map(text).collect(),
        held: t.held,
    }
}

impl TxnClient for KvClient {
    fn transact<'a>(&'a self, mops: &'a [Mop]) -> BoxFuture<'a, CallResult<Vec<Json>>> {
        Box::pin(self.run_txn(mops))
    }
}

/// How a failed `Txn` call of `mops` is recorded (the rules of the module doc).
pub fn txn_failure(mops: &[Mop], status: &tonic::Status) -> CallError {
    classify(call_kind(mops), status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::classify::Certainty::{Definite, Indeterminate};
    use serde_json::json;
    use tonic::Status;

    fn appending() -> Vec<Mop> {
        vec![
            Mop::Append {
                key: "la/1".into(),
                value: 7,
            },
            Mop::Read {
                key: "la/2".into(),
                shape: ReadShape::List,
            },
        ]
    }

    fn reading() -> Vec<Mop> {
        vec![Mop::Read {
            key: "la/1".into(),
            shape: ReadShape::List,
        }]
    }

    #[test]
    fn each_hold_command_is_the_request_refkv_reads() {
        let list = hold_request(HoldCommand::List);
        assert_eq!(
            (list.arm_hold_ms, list.release),
            (0, false),
            "listing arms nothing"
        );
        assert!(hold_request(HoldCommand::Release).release);
        let at_commit = hold_request(HoldCommand::Arm {
            for_ms: 1500,
            at: HoldPoint::CommitPoint,
        });
        assert_eq!(
            (
                at_commit.arm_hold_ms,
                at_commit.release,
                at_commit.after_primary_commit
            ),
            (1500, false, false)
        );
        let after = hold_request(HoldCommand::Arm {
            for_ms: 9,
            at: HoldPoint::AfterPrimaryCommit,
        });
        assert!(after.after_primary_commit && after.arm_hold_ms == 9);
    }

    #[test]
    fn a_listed_transaction_reads_as_text_with_no_commit_timestamp_until_it_has_one() {
        let listed = kv::InFlightTxn {
            start_ts: 5,
            commit_ts: 0,
            primary: b"a/la/1".to_vec(),
            secondary_writes: vec![b"h/la/2".to_vec()],
            held: true,
        };
        let t = in_flight_txn(listed.clone());
        assert_eq!(
            (
                t.start_ts,
                t.commit_ts,
                t.primary.as_str(),
                t.secondary_writes,
                t.held
            ),
            (5, None, "a/la/1", vec!["h/la/2".to_string()], true)
        );
        assert_eq!(
            in_flight_txn(kv::InFlightTxn {
                commit_ts: 9,
                ..listed
            })
            .commit_ts,
            Some(9)
        );
    }

    #[test]
    fn the_request_carries_every_micro_op_in_order() {
        let req = txn_request(
            &[
                appending(),
                vec![Mop::Write {
                    key: "rw/3".into(),
                    value: 4,
                }],
            ]
            .concat(),
        );
        let kinds: Vec<(i32, &[u8], i64)> = req
            .mops
            .iter()
            .map(|m| (m.kind, m.key.as_slice(), m.value))
            .collect();
        assert_eq!(
            kinds,
            [
                (kv::TxnMopKind::Append as i32, b"la/1".as_slice(), 7),
                (kv::TxnMopKind::Read as i32, b"la/2", 0),
                (kv::TxnMopKind::Write as i32, b"rw/3", 4)
            ]
        );
    }

    #[test]
    fn list_and_register_reads_come_back_as_the_history_records_them() {
        let result = |exists, values: Vec<i64>| kv::TxnMopResult { exists, values };
        let resp = kv::TxnResponse {
            results: vec![result(false, vec![]), result(true, vec![3, 7])],
            start_ts: 1,
            commit_ts: 2,
        };
        assert_eq!(
            txn_values(&appending(), resp).unwrap(),
            [Json::Null, json!([3, 7])]
        );
        let registers = vec![
            Mop::Read {
                key: "rw/1".into(),
                shape: ReadShape::Register,
            },
            Mop::Read {
                key: "rw/2".into(),
                shape: ReadShape::Register,
            },
        ];
        let resp = kv::TxnResponse {
            results: vec![result(true, vec![5]), result(false, vec![])],
            start_ts: 1,
            commit_ts: 0,
        };
        assert_eq!(
            txn_values(&registers, resp).unwrap(),
            [json!(5), Json::Null]
        );
    }

    #[test]
    fn an_answer_with_the_wrong_number_of_results_is_a_bad_response() {
        let err = txn_values(&appending(), kv::TxnResponse::default()).unwrap_err();
        assert_eq!((err.tag, err.certainty), ("bad-response", Indeterminate));
    }

    #[test]
    fn a_conflict_abort_is_definite() {
        let err = txn_failure(
            &appending(),
            &Status::aborted("transaction aborted: write conflict on la/1"),
        );
        assert_eq!(err.certainty, Definite);
    }

    #[test]
    fn a_refusal_before_any_prewrite_is_definite() {
        let err = txn_failure(
            &appending(),
            &Status::unavailable("transaction not started: no start timestamp"),
        );
        assert_eq!(err.certainty, Definite);
    }

    #[test]
    fn an_unknown_outcome_after_a_prewrite_is_indeterminate() {
        let err = txn_failure(
            &appending(),
            &Status::unknown("outcome unknown: commit of the primary la/1: commit not confirmed"),
        );
        assert_eq!(err.certainty, Indeterminate);
        assert_eq!(
            txn_failure(&appending(), &Status::deadline_exceeded("outcome unknown")).certainty,
            Indeterminate
        );
    }

    #[test]
    fn the_clients_own_deadline_is_indeterminate_for_a_writing_transaction() {
        assert_eq!(
            CallError::timed_out(call_kind(&appending())).certainty,
            Indeterminate
        );
    }

    #[test]
    fn a_connection_broken_after_sending_is_indeterminate() {
        let mut status = Status::unavailable("connection reset");
        status.set_source(std::sync::Arc::new(std::io::Error::new(
            std::io::ErrorKind::BrokenPipe,
            "broken pipe",
        )));
        assert_eq!(txn_failure(&appending(), &status).certainty, Indeterminate);
    }

    #[test]
    fn a_failure_to_connect_is_definite() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let status = Status::from_error(Box::new(tonic::ConnectError(Box::new(io))));
        assert_eq!(txn_failure(&appending(), &status).certainty, Definite);
    }

    #[test]
    fn a_read_only_transaction_is_always_definite() {
        assert_eq!(
            txn_failure(&reading(), &Status::unknown("outcome unknown")).certainty,
            Definite
        );
        assert_eq!(
            CallError::timed_out(call_kind(&reading())).certainty,
            Definite
        );
    }
}

//! Transactions over etcd's v3 API: Elle's rw-register and list-append micro-ops
//! ([`crate::txn::Mop`]) as `KV.Txn` requests, so `--workload rw-register` and
//! `--workload append` run against etcd.
//!
//! etcd serialises every `Txn` at one revision; within it, a key may be put at most once
//! (`etcdserver: duplicate key given in txn request`, `InvalidArgument`). So a transaction
//! is never sent micro-op by micro-op. Instead:
//!
//! - **rw-register**: one `Txn`, no compare. Its `success` branch holds one `Range` per
//!   distinct key the transaction reads, *then* one `Put` per key it writes, of the key's
//!   *last* written value (decimal text; earlier writes of the same key in the same
//!   transaction are coalesced away: no one can observe them). The ranges come first, so
//!   each sees the state before the transaction at its revision.
//! - **list-append**: each key holds its list as JSON text (`[1,2,3]`; absent = `[]`).
//!   1. one read-only `Txn` of `Range`s of every key the transaction appends to, noting
//!      each key's list and `mod_revision` (0 when absent);
//!   2. one `Txn` whose compare is `MOD(k) == seen` for every appended key, and whose
//!      `success` holds a `Range` per read key, then a `Put` per appended key of the seen
//!      list followed by the transaction's appends. A failed compare (`succeeded =
//!      false`: another transaction changed an appended key in between) runs the empty
//!      `failure` branch, so nothing was written, and the whole transaction is tried again,
//!      at most [`COMMIT_ATTEMPTS`] times, then a definite `fail` (`conflict`). A
//!      read-only transaction is step 2 alone, with no compare.
//!
//! In both, a read's answer is what the commit's `Range` returned for its key with the
//! transaction's own earlier micro-ops on that key applied (a register's last write, a
//! list's appends so far), as Elle expects of a transaction that reads its own writes.
//! Keys only read are not compared: their ranges run inside the committing `Txn` itself.
//!
//! Outcomes: a commit answered `succeeded = true` is `ok`; a call that failed is classified
//! by [`super::classify`] as a mutation when the transaction writes (timeouts, a lost
//! connection, etcd's `request timed out` / `leader changed` are indeterminate), else as a
//! read (definite); the reading step of list-append is a read (definite) — every attempt
//! before it was a failed compare, which wrote nothing. An indeterminate failure is never
//! retried. An answer that does not fit the request is a bad response (indeterminate when
//! the transaction writes).

use super::proto::mvccpb::KeyValue;
use super::{pb, EtcdClient};
use crate::client::{CallError, CallKind, CallResult, Certainty, TxnClient};
use crate::execute::decode_value;
use crate::txn::{writes, Mop, ReadShape};
use futures::future::BoxFuture;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::future::Future;

/// Commits a list-append transaction tries before it gives up on conflicts.
pub const COMMIT_ATTEMPTS: usize = 5;

/// How one commit attempt ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Attempt {
    /// The `Txn` committed; one answer per micro-op.
    Committed(Vec<Json>),
    /// The compare failed: nothing was written.
    Conflict,
}

/// Which workload's micro-ops `mops` are: `None` when it mixes list and register micro-ops.
pub fn shape_of(mops: &[Mop]) -> Option<ReadShape> {
    let list = mops.iter().any(|m| {
        matches!(
            m,
            Mop::Append { .. }
                | Mop::Read {
                    shape: ReadShape::List,
                    ..
                }
        )
    });
    let register = mops.iter().any(|m| {
        matches!(
            m,
            Mop::Write { .. }
                | Mop::Read {
                    shape: ReadShape::Register,
                    ..
                }
        )
    });
    match (list, register) {
        (true, true) => None,
        (true, false) => Some(ReadShape::List),
        (false, _) => Some(ReadShape::Register),
    }
}

/// The call kind of a transaction's committing `Txn`.
pub fn commit_kind(mops: &[Mop]) -> CallKind {
    if writes(mops) {
        CallKind::Mutation
    } else {
        CallKind::Read
    }
}

/// Distinct keys, in first-seen order, of the micro-ops `pick` selects.
fn distinct_keys(mops: &[Mop], pick: impl Fn(&Mop) -> bool) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for m in mops.iter().filter(|m| pick(m)) {
        if !keys.iter().any(|k| k == m.key()) {
            keys.push(m.key().to_string());
        }
    }
    keys
}

/// The keys the transaction reads.
pub fn read_keys(mops: &[Mop]) -> Vec<String> {
    distinct_keys(mops, Mop::is_read)
}

/// The keys the transaction appends to.
pub fn appended_keys(mops: &[Mop]) -> Vec<String> {
    distinct_keys(mops, |m| matches!(m, Mop::Append { .. }))
}

/// One put per written register: its last written value, as decimal text.
pub fn register_puts(mops: &[Mop]) -> Vec<(String, Vec<u8>)> {
    let mut last: Vec<(String, i64)> = Vec::new();
    for m in mops {
        if let Mop::Write { key, value } = m {
            match last.iter_mut().find(|(k, _)| k == key) {
                Some(slot) => slot.1 = *value,
                None => last.push((key.clone(), *value)),
            }
        }
    }
    last.into_iter()
        .map(|(k, v)| (k, v.to_string().into_bytes()))
        .collect()
}

/// One put per appended key: the list `seen` holds for it followed by the transaction's
/// appends in order (a key missing from `seen` starts empty).
pub fn list_puts(mops: &[Mop], seen: &BTreeMap<String, Vec<i64>>) -> Vec<(String, Vec<u8>)> {
    appended_keys(mops)
        .into_iter()
        .map(|key| {
            let mut list = seen.get(&key).cloned().unwrap_or_default();
            list.extend(mops.iter().filter_map(|m| match m {
                Mop::Append { key: k, value } if *k == key => Some(*value),
                _ => None,
            }));
            let text = encode_list(&list);
            (key, text)
        })
        .collect()
}

/// A list as etcd stores it: JSON text.
pub fn encode_list(list: &[i64]) -> Vec<u8> {
    serde_json::to_vec(list).unwrap_or_else(|_| b"[]".to_vec())
}

/// A stored list, or `None` when the value is not a JSON list of integers.
pub fn decode_list(bytes: &[u8]) -> Option<Vec<i64>> {
    serde_json::from_slice(bytes).ok()
}

/// Each micro-op's answer: a read gets its key's value in `before` (the state before the
/// transaction) with the transaction's earlier micro-ops on that key applied; a write gets
/// `null`. `None` when a read's key has no entry in `before`.
pub fn answers(mops: &[Mop], mut before: BTreeMap<String, Json>) -> Option<Vec<Json>> {
    let mut out = Vec::with_capacity(mops.len());
    for m in mops {
        match m {
            Mop::Read { key, .. } => out.push(before.get(key)?.clone()),
            Mop::Write { key, value } => {
                before.insert(key.clone(), Json::from(*value));
                out.push(Json::Null);
            }
            Mop::Append { key, value } => {
                let list = before
                    .entry(key.clone())
                    .or_insert_with(|| Json::Array(Vec::new()));
                list.as_array_mut()?.push(Json::from(*value));
                out.push(Json::Null);
            }
        }
    }
    Some(out)
}

fn range_op(key: &str) -> pb::RequestOp {
    let range = pb::RangeRequest {
        key: key.as_bytes().to_vec(),
        ..Default::default()
    };
    pb::RequestOp {
        request: Some(pb::request_op::Request::RequestRange(range)),
    }
}

fn put_op(key: &str, value: Vec<u8>) -> pb::RequestOp {
    let put = pb::PutRequest {
        key: key.as_bytes().to_vec(),
        value,
        ..Default::default()
    };
    pb::RequestOp {
        request: Some(pb::request_op::Request::RequestPut(put)),
    }
}

/// The comparison `MOD(key) == revision` (0: the key does not exist).
pub fn mod_compare(key: &str, revision: i64) -> pb::Compare {
    use pb::compare::{CompareResult, CompareTarget, TargetUnion};
    pb::Compare {
        result: CompareResult::Equal as i32,
        target: CompareTarget::Mod as i32,
        key: key.as_bytes().to_vec(),
        target_union: Some(TargetUnion::ModRevision(revision)),
    }
}

/// A `Txn` checking `compare`, whose `success` ranges `reads` and then applies `puts`, and
/// whose `failure` does nothing.
pub fn commit_request(
    compare: Vec<pb::Compare>,
    reads: &[String],
    puts: Vec<(String, Vec<u8>)>,
) -> pb::TxnRequest {
    let mut success: Vec<pb::RequestOp> = reads.iter().map(|k| range_op(k)).collect();
    success.extend(puts.into_iter().map(|(k, v)| put_op(&k, v)));
    pb::TxnRequest {
        compare,
        success,
        failure: vec![],
    }
}

/// The first `keys.len()` responses of a committed `Txn` as ranges: each key's record
/// (`None`: absent). An answer of another shape is a bad response.
fn ranged<'r>(
    keys: &[String],
    responses: &'r [pb::ResponseOp],
    kind: CallKind,
) -> CallResult<Vec<Option<&'r KeyValue>>> {
    if responses.len() < keys.len() {
        return Err(CallError::bad_response(
            kind,
            format!(
                "a Txn of {} ranges answered {} responses",
                keys.len(),
                responses.len()
            ),
        ));
    }
    keys.iter()
        .zip(responses)
        .map(|(key, r)| range_record(key, r, kind))
        .collect()
}

/// The record one key's range returned (`None`: absent); anything else is a bad response.
fn range_record<'r>(
    key: &str,
    response: &'r pb::ResponseOp,
    kind: CallKind,
) -> CallResult<Option<&'r KeyValue>> {
    match &response.response {
        Some(pb::response_op::Response::ResponseRange(range)) => match range.kvs.as_slice() {
            [] => Ok(None),
            [kv] if kv.key == key.as_bytes() => Ok(Some(kv)),
            kvs => Err(CallError::bad_response(
                kind,
                format!(
                    "the range of {key} answered {} records of other keys",
                    kvs.len()
                ),
            )),
        },
        other => Err(CallError::bad_response(
            kind,
            format!("the range of {key} answered {other:?}"),
        )),
    }
}

/// What each read key held before the transaction, as the history records it: a list
/// (absent = `[]`) or a register value (absent = `null`).
pub fn read_values(
    shape: ReadShape,
    keys: &[String],
    responses: &[pb::ResponseOp],
    kind: CallKind,
) -> CallResult<BTreeMap<String, Json>> {
    let records = ranged(keys, responses, kind)?;
    let mut out = BTreeMap::new();
    for (key, record) in keys.iter().zip(records) {
        let value = match (shape, record) {
            (ReadShape::Register, None) => Json::Null,
            (ReadShape::Register, Some(kv)) => decode_value(&kv.value),
            (ReadShape::List, None) => Json::Array(Vec::new()),
            (ReadShape::List, Some(kv)) => {
                Json::from(decode_list(&kv.value).ok_or_else(|| not_a_list(key, &kv.value, kind))?)
            }
        };
        out.insert(key.clone(), value);
    }
    Ok(out)
}

/// Each key's list and `mod_revision` (absent: `[]` and 0), from a `Txn` of their ranges.
pub fn seen_lists(
    keys: &[String],
    responses: &[pb::ResponseOp],
    kind: CallKind,
) -> CallResult<BTreeMap<String, (Vec<i64>, i64)>> {
    let records = ranged(keys, responses, kind)?;
    let mut out = BTreeMap::new();
    for (key, record) in keys.iter().zip(records) {
        let seen = match record {
            None => (Vec::new(), 0),
            Some(kv) => (
                decode_list(&kv.value).ok_or_else(|| not_a_list(key, &kv.value, kind))?,
                kv.mod_revision,
            ),
        };
        out.insert(key.clone(), seen);
    }
    Ok(out)
}

fn not_a_list(key: &str, value: &[u8], kind: CallKind) -> CallError {
    CallError::bad_response(
        kind,
        format!(
            "{key} holds {:?}, not a JSON list of integers",
            String::from_utf8_lossy(value)
        ),
    )
}

/// A failure of list-append's reading step, which is definite (a read, and every attempt
/// before it was a failed compare): its message says so, so that a `fail` whose tag reads
/// like an unknown outcome (`timed-out`, `leader-changed`) is not mistaken for one.
pub fn before_commit(e: CallError) -> CallError {
    CallError::new(
        Certainty::Definite,
        e.tag,
        format!("before the commit, nothing written: {}", e.message),
    )
}

/// The definite failure of a transaction whose every commit attempt met a changed key.
pub fn conflict(attempts: usize) -> CallError {
    CallError::new(Certainty::Definite, "conflict", format!("an appended key changed between read and commit in each of {attempts} attempts; nothing was written"))
}

/// Runs `attempt` until it commits, fails, or met [`Attempt::Conflict`] `attempts` times
/// (then a definite [`conflict`]). A failure ends the loop at once, as it came: only a
/// conflict, which wrote nothing, is tried again.
pub async fn retry_conflicts<F, Fut>(attempts: usize, mut attempt: F) -> CallResult<Vec<Json>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = CallResult<Attempt>>,
{
    for _ in 0..attempts {
        if let Attempt::Committed(answers) = attempt().await? {
            return Ok(answers);
        }
    }
    Err(conflict(attempts))
}

/// The answers of a committed `Txn` whose `success` ranged `reads` first (a bad response
/// when its responses are not those ranges).
fn committed_answers(
    shape: ReadShape,
    mops: &[Mop],
    reads: &[String],
    resp: &pb::TxnResponse,
    kind: CallKind,
) -> CallResult<Vec<Json>> {
    let before = read_values(shape, reads, &resp.responses, kind)?;
    answers(mops, before)
        .ok_or_else(|| CallError::bad_response(kind, "a read's key was not ranged"))
}

impl EtcdClient {
    async fn txn_call(&self, kind: CallKind, req: pb::TxnRequest) -> CallResult<pb::TxnResponse> {
        let mut c = self.kv.clone();
        self.call(kind, c.txn(self.request(req))).await
    }

    /// rw-register: one `Txn` of ranges then puts, no compare.
    async fn register_txn(&self, mops: &[Mop]) -> CallResult<Vec<Json>> {
        let kind = commit_kind(mops);
        let reads = read_keys(mops);
        let resp = self
            .txn_call(kind, commit_request(vec![], &reads, register_puts(mops)))
            .await?;
        if !resp.succeeded {
            return Err(CallError::bad_response(
                kind,
                "a Txn without a compare answered succeeded = false",
            ));
        }
        committed_answers(ReadShape::Register, mops, &reads, &resp, kind)
    }

    /// The lists and mod revisions of `keys`, read in one linearizable `Txn` of ranges. Its
    /// failures say they happened before anything was written ([`before_commit`]).
    async fn read_lists(&self, keys: &[String]) -> CallResult<BTreeMap<String, (Vec<i64>, i64)>> {
        let resp = self
            .txn_call(CallKind::Read, commit_request(vec![], keys, vec![]))
            .await
            .map_err(before_commit)?;
        seen_lists(keys, &resp.responses, CallKind::Read).map_err(before_commit)
    }

    /// list-append: read the appended keys, then commit if none of them changed.
    async fn append_attempt(&self, mops: &[Mop]) -> CallResult<Attempt> {
        let kind = commit_kind(mops);
        let appended = appended_keys(mops);
        let seen = if appended.is_empty() {
            BTreeMap::new()
        } else {
            self.read_lists(&appended).await?
        };
        let compare = seen
            .iter()
            .map(|(k, (_, rev))| mod_compare(k, *rev))
            .collect::<Vec<_>>();
        let lists = seen.into_iter().map(|(k, (list, _))| (k, list)).collect();
        let reads = read_keys(mops);
        let conditional = !compare.is_empty();
        let resp = self
            .txn_call(
                kind,
                commit_request(compare, &reads, list_puts(mops, &lists)),
            )
            .await?;
        match (resp.succeeded, conditional) {
            (true, _) => committed_answers(ReadShape::List, mops, &reads, &resp, kind)
                .map(Attempt::Committed),
            (false, true) => Ok(Attempt::Conflict),
            (false, false) => Err(CallError::bad_response(
                kind,
                "a Txn without a compare answered succeeded = false",
            )),
        }
    }

    async fn run_txn(&self, mops: &[Mop]) -> CallResult<Vec<Json>> {
        match shape_of(mops) {
            _ if mops.is_empty() => Ok(Vec::new()),
            Some(ReadShape::Register) => self.register_txn(mops).await,
            Some(ReadShape::List) => {
                retry_conflicts(COMMIT_ATTEMPTS, || self.append_attempt(mops)).await
            }
            None => Err(CallError::new(
                Certainty::Definite,
                "bad-transaction",
                "list and register micro-ops in one transaction; nothing was sent",
            )),
        }
    }
}

impl TxnClient for EtcdClient {
    fn transact<'a>(&'a self, mops: &'a [Mop]) -> BoxFuture<'a, CallResult<Vec<Json>>> {
        Box::pin(self.run_txn(mops))
    }
}

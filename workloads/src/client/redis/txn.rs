//! Transactions over the Redis protocol, exactly as elastickv's own Jepsen suite sends them
//! (`jepsen/src/elastickv/redis_workload.clj` with `jepsen-io/redis`'s `append.clj`): an
//! append is `RPUSH k v`, a list read `LRANGE k 0 -1`; a register write is `SET k v`, a
//! register read `GET k`. One micro-op is sent bare; two or more are wrapped in
//! `MULTI` … `EXEC`, sent as one pipeline on the process's own connection.
//!
//! Outcomes ([`exec_outcome`], one test per rule in `super::tests`):
//! - a bare command: its reply, or its failure classified by `redis_classify`;
//! - `EXEC` answered with an array: the transaction ran; an error *inside* the array (a
//!   micro-op that failed while the others may have applied — Redis does not roll back)
//!   makes the whole transaction indeterminate when it writes, as elastickv's suite does
//!   (`:info`, `[:exec-array-error …]`);
//! - `EXEC` answered `EXECABORT` (a command was refused while queuing, so Redis discarded
//!   the transaction): definite;
//! - `EXEC` answered another error: classified by the reply table (elastickv answers EXEC
//!   errors from routing, the read fence and the commit, some after the commit was sent);
//! - `EXEC` answered nil (a `WATCH`ed key changed; we never `WATCH`): definite, discarded;
//! - `MULTI` refused: nothing was queued, but the commands after it may have run outside a
//!   transaction, so indeterminate when it writes.
//!
//! Invariant: a transaction that writes is definite (`fail`) only when Redis's protocol
//! says the transaction was discarded; reads are always definite (they change nothing).

use super::RedisClient;
use crate::client::classify::{CallError, CallKind, Certainty};
use crate::client::redis_classify::{classify_redis, RedisFailure};
use crate::client::{CallResult, TxnClient};
use crate::execute::decode_value;
use crate::txn::{writes, Mop, ReadShape};
use futures::future::BoxFuture;
use redis::Value;
use serde_json::Value as Json;

/// The Redis command of one micro-op.
pub fn mop_command(mop: &Mop) -> redis::Cmd {
    match mop {
        Mop::Append { key, value } => redis::cmd("RPUSH")
            .arg(key.as_bytes())
            .arg(value.to_string())
            .to_owned(),
        Mop::Write { key, value } => redis::cmd("SET")
            .arg(key.as_bytes())
            .arg(value.to_string())
            .to_owned(),
        Mop::Read {
            key,
            shape: ReadShape::List,
        } => redis::cmd("LRANGE")
            .arg(key.as_bytes())
            .arg(0)
            .arg(-1)
            .to_owned(),
        Mop::Read {
            key,
            shape: ReadShape::Register,
        } => redis::cmd("GET").arg(key.as_bytes()).to_owned(),
    }
}

/// What one micro-op's reply says: the value a read returned, `null` for a write; an
/// error for a reply that is not this command's.
pub fn mop_result(mop: &Mop, reply: Value, kind: CallKind) -> CallResult<Json> {
    let wrong = |reply: &Value| {
        CallError::bad_response(kind, format!("{} answered {reply:?}", command_name(mop)))
    };
    match (mop, reply) {
        (Mop::Append { .. }, Value::Int(_)) => Ok(Json::Null),
        (Mop::Write { .. }, Value::Okay) => Ok(Json::Null),
        (Mop::Write { .. }, Value::SimpleString(s)) if s.eq_ignore_ascii_case("OK") => {
            Ok(Json::Null)
        }
        (Mop::Write { .. }, Value::BulkString(b)) if b.eq_ignore_ascii_case(b"OK") => {
            Ok(Json::Null)
        }
        (
            Mop::Read {
                shape: ReadShape::List,
                ..
            },
            Value::Array(items),
        ) => {
            let elements = items
                .into_iter()
                .map(|v| element(v).ok_or_else(|| wrong(&Value::Nil)))
                .collect::<CallResult<Vec<Json>>>()?;
            Ok(Json::Array(elements))
        }
        // A missing list: Redis answers an empty array, a proxy may answer nil.
        (
            Mop::Read {
                shape: ReadShape::List,
                ..
            },
            Value::Nil,
        ) => Ok(Json::Array(Vec::new())),
        (
            Mop::Read {
                shape: ReadShape::Register,
                ..
            },
            Value::Nil,
        ) => Ok(Json::Null),
        (
            Mop::Read {
                shape: ReadShape::Register,
                ..
            },
            v,
        ) => element(v.clone()).ok_or_else(|| wrong(&v)),
        (_, other) => Err(wrong(&other)),
    }
}

/// A list element or register value as the history records it (a number when it is one).
fn element(v: Value) -> Option<Json> {
    match v {
        Value::BulkString(b) => Some(decode_value(&b)),
        Value::SimpleString(s) => Some(decode_value(s.as_bytes())),
        Value::Int(n) => Some(Json::from(n)),
        _ => None,
    }
}

fn command_name(mop: &Mop) -> &'static str {
    match mop {
        Mop::Append { .. } => "RPUSH",
        Mop::Write { .. } => "SET",
        Mop::Read {
            shape: ReadShape::List,
            ..
        } => "LRANGE",
        Mop::Read {
            shape: ReadShape::Register,
            ..
        } => "GET",
    }
}

/// The text of a server error value (code first).
fn error_text(e: &redis::ServerError) -> String {
    match e.details() {
        Some(d) => format!("{} {d}", e.code()),
        None => e.code().to_string(),
    }
}

/// The outcome of `MULTI`, the queued commands and `EXEC`, from their replies in order.
pub fn exec_outcome(mops: &[Mop], mut replies: Vec<Value>) -> CallResult<Vec<Json>> {
    let kind = if writes(mops) {
        CallKind::Mutation
    } else {
        CallKind::Read
    };
    if replies.len() != mops.len() + 2 {
        return Err(CallError::bad_response(
            kind,
            format!(
                "MULTI/EXEC of {} commands got {} replies",
                mops.len(),
                replies.len()
            ),
        ));
    }
    if let Value::ServerError(e) = &replies[0] {
        let text = error_text(e);
        let certainty = if kind == CallKind::Read {
            Certainty::Definite
        } else {
            Certainty::Indeterminate
        };
        return Err(CallError::new(
            certainty,
            "multi-refused",
            format!("MULTI answered {text}; the commands after it may have run"),
        ));
    }
    match replies.pop().expect("length checked") {
        Value::Array(results) if results.len() == mops.len() => exec_array(mops, results, kind),
        Value::Array(results) => Err(CallError::bad_response(
            kind,
            format!(
                "EXEC of {} commands answered {} results",
                mops.len(),
                results.len()
            ),
        )),
        Value::Nil => Err(CallError::new(
            Certainty::Definite,
            "exec-discarded",
            "EXEC answered nil: the transaction was discarded",
        )),
        Value::ServerError(e) if e.code().eq_ignore_ascii_case("EXECABORT") => {
            let queued = replies[1..].iter().find_map(|r| match r {
                Value::ServerError(q) => Some(error_text(q)),
                _ => None,
            });
            Err(CallError::new(
                Certainty::Definite,
                "exec-abort",
                format!(
                    "{} (queued: {})",
                    error_text(&e),
                    queued.unwrap_or_default()
                ),
            ))
        }
        Value::ServerError(e) => Err(classify_redis(kind, RedisFailure::Reply(&error_text(&e)))),
        other => Err(CallError::bad_response(
            kind,
            format!("EXEC answered {other:?}"),
        )),
    }
}

/// The results of an `EXEC` that ran: every micro-op's, or an error inside the array.
fn exec_array(mops: &[Mop], results: Vec<Value>, kind: CallKind) -> CallResult<Vec<Json>> {
    if let Some(e) = results.iter().find_map(|r| match r {
        Value::ServerError(e) => Some(error_text(e)),
        _ => None,
    }) {
        let certainty = if kind == CallKind::Read {
            Certainty::Definite
        } else {
            Certainty::Indeterminate
        };
        return Err(CallError::new(
            certainty,
            "exec-array-error",
            format!("a command inside EXEC failed: {e}"),
        ));
    }
    mops.iter()
        .zip(results)
        .map(|(m, r)| mop_result(m, r, kind))
        .collect()
}

impl RedisClient {
    async fn run_txn(&self, mops: &[Mop]) -> CallResult<Vec<Json>> {
        let kind = if writes(mops) {
            CallKind::Mutation
        } else {
            CallKind::Read
        };
        if let [mop] = mops {
            let reply = self.query(self.own, kind, &mop_command(mop)).await?;
            return Ok(vec![mop_result(mop, reply, kind)?]);
        }
        let mut pipe = redis::pipe();
        pipe.cmd("MULTI");
        for m in mops {
            pipe.add_command(mop_command(m));
        }
        pipe.cmd("EXEC");
        pipe.ignore_errors();
        let replies = self.query_pipe(self.own, kind, &pipe).await?;
        exec_outcome(mops, replies)
    }
}

impl TxnClient for RedisClient {
    fn transact<'a>(&'a self, mops: &'a [Mop]) -> BoxFuture<'a, CallResult<Vec<Json>>> {
        Box::pin(self.run_txn(mops))
    }
}

//! Redis sorted-set calls as the `zset` workload issues them (the shape of elastickv's
//! `redis_zset_safety_workload.clj`): `ZADD`, `ZINCRBY`, `ZREM`, `ZRANGE key 0 -1
//! WITHSCORES` and `ZRANGEBYSCORE key lo hi WITHSCORES`, their history form
//! (`docs/history-format.md` § Sorted sets) and the [`ZsetOp`] operation, which runs
//! through the client's sorted-set capability ([`crate::client::ZsetClient`]).
//!
//! Invariants: the invoke's `value` is the call's arguments as the history format gives
//! them; an `ok` completion's `value` is the store's answer in that format (a `zadd`'s is
//! the number of members added, which the checker ignores); a `fail`/`info` completion
//! repeats the invoke's value. Scores are JSON numbers (whole ones as integers), or the
//! strings `"inf"` / `"-inf"` for Redis's infinities.

use crate::client::{CallError, CallKind, CallResult, Certainty, KvTarget};
use crate::execute::Completion;
use crate::operation::Operation;
use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::{json, Value};
use std::any::Any;

/// One sorted-set call on a key.
#[derive(Debug, Clone, PartialEq)]
pub enum ZsetCall {
    /// `ZADD key score member`.
    Add { member: String, score: i64 },
    /// `ZINCRBY key delta member`.
    IncrBy { member: String, delta: i64 },
    /// `ZREM key member`.
    Rem { member: String },
    /// `ZRANGE key 0 -1 WITHSCORES`.
    Range,
    /// `ZRANGEBYSCORE key lo hi WITHSCORES` (inclusive).
    RangeByScore { lo: i64, hi: i64 },
}

impl ZsetCall {
    /// The history `f`.
    pub fn f(&self) -> &'static str {
        match self {
            ZsetCall::Add { .. } => analysis::ops::ZADD,
            ZsetCall::IncrBy { .. } => analysis::ops::ZINCRBY,
            ZsetCall::Rem { .. } => analysis::ops::ZREM,
            ZsetCall::Range => analysis::ops::ZRANGE,
            ZsetCall::RangeByScore { .. } => analysis::ops::ZRANGEBYSCORE,
        }
    }

    /// The invoke's `value`.
    pub fn invoke_value(&self) -> Value {
        match self {
            ZsetCall::Add { member, score } => json!([member, score]),
            ZsetCall::IncrBy { member, delta } => json!([member, delta]),
            ZsetCall::Rem { member } => json!(member),
            ZsetCall::Range => Value::Null,
            ZsetCall::RangeByScore { lo, hi } => json!([lo, hi]),
        }
    }

    pub fn call_kind(&self) -> CallKind {
        match self {
            ZsetCall::Range | ZsetCall::RangeByScore { .. } => CallKind::Read,
            _ => CallKind::Mutation,
        }
    }
}

/// A Redis score as the history records it: a whole number as an integer, another finite
/// one as a float, an infinity as `"inf"` / `"-inf"`; `None` for text that is no score.
pub fn score_json(text: &str) -> Option<Value> {
    let t = text.trim();
    match t.to_ascii_lowercase().as_str() {
        "inf" | "+inf" => return Some(json!("inf")),
        "-inf" => return Some(json!("-inf")),
        _ => {}
    }
    let x: f64 = t.parse().ok()?;
    if !x.is_finite() {
        return None;
    }
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        return Some(json!(x as i64));
    }
    serde_json::Number::from_f64(x).map(Value::Number)
}

/// A `WITHSCORES` reply (member, score, member, score, …) as the history's
/// `[[member, score], …]`, in the order returned; `None` when it has that shape not.
pub fn pairs_json(flat: &[String]) -> Option<Value> {
    let pairs = flat.chunks_exact(2);
    if !pairs.remainder().is_empty() {
        return None;
    }
    pairs
        .map(|p| Some(json!([p[0], score_json(&p[1])?])))
        .collect::<Option<Vec<Value>>>()
        .map(Value::Array)
}

/// One sorted-set call on `key` (history `f` = the call's), run by a client that has the
/// sorted-set capability; a client without it fails it definitely, unsent.
#[derive(Debug, Clone, PartialEq)]
pub struct ZsetOp {
    pub key: String,
    pub call: ZsetCall,
}

impl ZsetOp {
    async fn run_call(&self, client: &dyn KvTarget) -> CallResult<Completion> {
        let Some(z) = client.as_zset() else {
            return Err(CallError::new(
                Certainty::Definite,
                "unimplemented",
                "this client has no sorted sets",
            ));
        };
        let value = z.zset(&self.key, &self.call).await?;
        Ok(Completion::ok(value, None))
    }
}

impl Operation for ZsetOp {
    fn f(&self) -> &'static str {
        self.call.f()
    }
    fn key(&self) -> Option<&str> {
        Some(&self.key)
    }
    fn invoke_value(&self) -> Value {
        self.call.invoke_value()
    }
    fn call_kind(&self) -> CallKind {
        self.call.call_kind()
    }
    fn run<'a>(&'a self, client: &'a dyn KvTarget) -> BoxFuture<'a, CallResult<Completion>> {
        self.run_call(client).boxed()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invoke_values_follow_the_history_format() {
        let add = ZsetCall::Add {
            member: "m3".into(),
            score: -7,
        };
        assert_eq!((add.f(), add.invoke_value()), ("zadd", json!(["m3", -7])));
        let rem = ZsetCall::Rem {
            member: "m1".into(),
        };
        assert_eq!((rem.f(), rem.invoke_value()), ("zrem", json!("m1")));
        assert_eq!(ZsetCall::Range.invoke_value(), Value::Null);
        let by = ZsetCall::RangeByScore { lo: -5, hi: 9 };
        assert_eq!(
            (by.f(), by.invoke_value()),
            ("zrangebyscore", json!([-5, 9]))
        );
        assert_eq!(by.call_kind(), CallKind::Read);
        assert_eq!(add.call_kind(), CallKind::Mutation);
    }

    #[test]
    fn scores_are_numbers_whole_ones_integers_and_infinities_named() {
        assert_eq!(score_json("3"), Some(json!(3)));
        assert_eq!(score_json("-12"), Some(json!(-12)));
        assert_eq!(score_json("2.5"), Some(json!(2.5)));
        assert_eq!(score_json("inf"), Some(json!("inf")));
        assert_eq!(score_json("+inf"), Some(json!("inf")));
        assert_eq!(score_json("-inf"), Some(json!("-inf")));
        assert_eq!(score_json("nan"), None);
        assert_eq!(score_json("seven"), None);
    }

    #[test]
    fn a_withscores_reply_becomes_member_score_pairs_in_order() {
        let flat: Vec<String> = ["m2", "-3", "m0", "4"].map(String::from).to_vec();
        assert_eq!(pairs_json(&flat), Some(json!([["m2", -3], ["m0", 4]])));
        assert_eq!(pairs_json(&flat[..3]), None, "an odd reply");
        assert_eq!(pairs_json(&["m".to_string(), "x".to_string()]), None);
        assert_eq!(pairs_json(&[]), Some(json!([])));
    }
}

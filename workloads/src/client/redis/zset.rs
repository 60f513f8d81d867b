//! Sorted sets over the Redis protocol, as elastickv's own zset workload sends them: one
//! command per call on the process's own connection (`ZADD key score member`, `ZINCRBY key
//! delta member`, `ZREM key member`, `ZRANGE key 0 -1 WITHSCORES`, `ZRANGEBYSCORE key lo hi
//! WITHSCORES`).
//!
//! Outcomes: the reply, turned into the history's `ok` value ([`call_result`], one test per
//! reply shape); a failure classified by `redis_classify` (a mutation's timeout or broken
//! connection indeterminate, a read's definite); a reply of the wrong shape is a bad
//! response, indeterminate for a mutation.

use super::RedisClient;
use crate::client::classify::{CallError, CallKind};
use crate::client::{CallResult, ZsetClient};
use crate::zset::{pairs_json, score_json, ZsetCall};
use futures::future::BoxFuture;
use redis::Value;
use serde_json::{json, Value as Json};

/// The Redis command of one call on `key`.
pub fn call_command(key: &str, call: &ZsetCall) -> redis::Cmd {
    let mut cmd;
    match call {
        ZsetCall::Add { member, score } => {
            cmd = redis::cmd("ZADD");
            cmd.arg(key).arg(score).arg(member);
        }
        ZsetCall::IncrBy { member, delta } => {
            cmd = redis::cmd("ZINCRBY");
            cmd.arg(key).arg(delta).arg(member);
        }
        ZsetCall::Rem { member } => {
            cmd = redis::cmd("ZREM");
            cmd.arg(key).arg(member);
        }
        ZsetCall::Range => {
            cmd = redis::cmd("ZRANGE");
            cmd.arg(key).arg(0).arg(-1).arg("WITHSCORES");
        }
        ZsetCall::RangeByScore { lo, hi } => {
            cmd = redis::cmd("ZRANGEBYSCORE");
            cmd.arg(key).arg(lo).arg(hi).arg("WITHSCORES");
        }
    }
    cmd
}

/// A reply's text (bulk or simple string).
fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Double(d) => Some(d.to_string()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

/// The `ok` value of `call` from its reply, or `None` when the reply is not that command's.
pub fn call_value(call: &ZsetCall, reply: &Value) -> Option<Json> {
    match (call, reply) {
        (ZsetCall::Add { .. }, Value::Int(added)) => Some(json!(added)),
        (ZsetCall::IncrBy { member, .. }, r) => Some(json!([member, score_json(&text(r)?)?])),
        (ZsetCall::Rem { member }, Value::Int(n)) => Some(json!([member, *n > 0])),
        (ZsetCall::Range | ZsetCall::RangeByScore { .. }, Value::Array(items)) => {
            let flat: Option<Vec<String>> = items.iter().map(text).collect();
            pairs_json(&flat?)
        }
        _ => None,
    }
}

/// The call's `ok` value, or a bad response naming the reply.
pub fn call_result(call: &ZsetCall, reply: Value) -> CallResult<Json> {
    call_value(call, &reply).ok_or_else(|| {
        CallError::bad_response(call.call_kind(), format!("{} answered {reply:?}", call.f()))
    })
}

impl RedisClient {
    async fn run_zset(&self, key: &str, call: &ZsetCall) -> CallResult<Json> {
        let kind: CallKind = call.call_kind();
        let reply = self.query(self.own, kind, &call_command(key, call)).await?;
        call_result(call, reply)
    }
}

impl ZsetClient for RedisClient {
    fn zset<'a>(&'a self, key: &'a str, call: &'a ZsetCall) -> BoxFuture<'a, CallResult<Json>> {
        Box::pin(self.run_zset(key, call))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn commands_are_the_suite_s() {
        let add = ZsetCall::Add {
            member: "m1".into(),
            score: -4,
        };
        let packed =
            String::from_utf8_lossy(&call_command("z", &add).get_packed_command()).into_owned();
        assert!(packed.contains("ZADD") && packed.contains("-4") && packed.contains("m1"));
        let by = call_command("z", &ZsetCall::RangeByScore { lo: -3, hi: 8 });
        let packed = String::from_utf8_lossy(&by.get_packed_command()).into_owned();
        assert!(packed.contains("ZRANGEBYSCORE") && packed.contains("WITHSCORES"));
    }

    #[test]
    fn zadd_answers_the_count_added() {
        let add = ZsetCall::Add {
            member: "m".into(),
            score: 1,
        };
        assert_eq!(call_value(&add, &Value::Int(1)), Some(json!(1)));
        assert_eq!(call_value(&add, &bulk("1")), None);
    }

    #[test]
    fn zincrby_answers_the_member_and_its_new_score() {
        let inc = ZsetCall::IncrBy {
            member: "m2".into(),
            delta: 3,
        };
        assert_eq!(call_value(&inc, &bulk("7")), Some(json!(["m2", 7])));
        assert_eq!(
            call_value(&inc, &Value::Double(-1.5)),
            Some(json!(["m2", -1.5]))
        );
        assert_eq!(call_value(&inc, &Value::Nil), None);
    }

    #[test]
    fn zrem_answers_the_member_and_whether_it_was_removed() {
        let rem = ZsetCall::Rem {
            member: "m0".into(),
        };
        assert_eq!(call_value(&rem, &Value::Int(1)), Some(json!(["m0", true])));
        assert_eq!(call_value(&rem, &Value::Int(0)), Some(json!(["m0", false])));
    }

    #[test]
    fn a_range_answers_member_score_pairs_in_the_order_returned() {
        let reply = Value::Array(vec![bulk("m3"), bulk("-2"), bulk("m1"), bulk("5")]);
        assert_eq!(
            call_value(&ZsetCall::Range, &reply),
            Some(json!([["m3", -2], ["m1", 5]]))
        );
        let odd = Value::Array(vec![bulk("m3")]);
        assert!(call_result(&ZsetCall::Range, odd).is_err());
    }
}

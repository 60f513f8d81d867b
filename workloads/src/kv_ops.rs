//! The key-value operations every client runs with the calls of [`KvTarget`] itself:
//! [`Read`], [`Write`] and [`Cas`] of a register, [`Add`] (insert a unique key) and
//! [`Scan`] of a range. Each is an [`Operation`]: its history form and its call in one
//! place.
//!
//! History conventions the checkers rely on (`docs/history-format.md`): register values
//! travel as decimal text and are recorded as integers; a cas records `[expected, new]`; an
//! add records its element under its key; a scan records `{start, end}` (empty end =
//! unbounded) and completes with the keys it saw, in order, with the commit metadata only
//! when one route answered it. A store that answered `applied = false` definitely did not
//! apply the mutation (`fail`, with the reason). A cas runs through the client's
//! compare-and-set capability (`KvTarget::as_cas`); a client without one fails it
//! definitely, unsent.

use crate::client::{CallError, CallKind, CallResult, Certainty, KvTarget};
use crate::execute::{decode_value, Completion};
use crate::operation::Operation;
use analysis::ops;
use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::{json, Value};
use std::any::Any;

fn encode_value(v: i64) -> Vec<u8> {
    v.to_string().into_bytes()
}

/// Writes `value` (as decimal text) under `key`, as a register write and a set add both do:
/// `ok` with `value` when applied, a definite `fail` ("rejected") when the store refused it.
fn write_number<'a>(
    client: &'a dyn KvTarget,
    key: &'a str,
    value: i64,
) -> BoxFuture<'a, CallResult<Completion>> {
    async move {
        let r = client.write(key.as_bytes(), &encode_value(value)).await?;
        Ok(Completion::applied_or_rejected(
            json!(value),
            r.applied,
            r.meta,
            "rejected",
        ))
    }
    .boxed()
}

/// Read a register.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    pub key: String,
}

/// Overwrite a register with a value unique across the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    pub key: String,
    pub value: i64,
}

/// Set `key` to `new` if it currently holds `expected`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cas {
    pub key: String,
    pub expected: i64,
    pub new: i64,
}

/// Insert the unique key `key` with `element` as its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Add {
    pub key: String,
    pub element: i64,
}

/// Read every key in `[start, end)` (empty `end`: unbounded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    pub start: String,
    pub end: String,
}

impl Operation for Read {
    fn f(&self) -> &'static str {
        ops::READ
    }
    fn key(&self) -> Option<&str> {
        Some(&self.key)
    }
    fn invoke_value(&self) -> Value {
        Value::Null
    }
    fn call_kind(&self) -> CallKind {
        CallKind::Read
    }
    fn run<'a>(&'a self, client: &'a dyn KvTarget) -> BoxFuture<'a, CallResult<Completion>> {
        async move {
            let r = client.read(self.key.as_bytes()).await?;
            Ok(Completion::ok(
                r.value.as_deref().map_or(Value::Null, decode_value),
                r.meta,
            ))
        }
        .boxed()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Operation for Write {
    fn f(&self) -> &'static str {
        ops::WRITE
    }
    fn key(&self) -> Option<&str> {
        Some(&self.key)
    }
    fn invoke_value(&self) -> Value {
        json!(self.value)
    }
    fn call_kind(&self) -> CallKind {
        CallKind::Mutation
    }
    fn run<'a>(&'a self, client: &'a dyn KvTarget) -> BoxFuture<'a, CallResult<Completion>> {
        write_number(client, &self.key, self.value)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Operation for Cas {
    fn f(&self) -> &'static str {
        ops::CAS
    }
    fn key(&self) -> Option<&str> {
        Some(&self.key)
    }
    fn invoke_value(&self) -> Value {
        json!([self.expected, self.new])
    }
    fn call_kind(&self) -> CallKind {
        CallKind::Mutation
    }
    fn run<'a>(&'a self, client: &'a dyn KvTarget) -> BoxFuture<'a, CallResult<Completion>> {
        async move {
            let cas = client.as_cas().ok_or_else(|| {
                CallError::new(
                    Certainty::Definite,
                    "unimplemented",
                    "this client has no compare-and-set",
                )
            })?;
            let r = cas
                .cas(
                    self.key.as_bytes(),
                    Some(&encode_value(self.expected)),
                    &encode_value(self.new),
                )
                .await?;
            Ok(Completion::applied_or_rejected(
                self.invoke_value(),
                r.applied,
                r.meta,
                "cas-mismatch",
            ))
        }
        .boxed()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Operation for Add {
    fn f(&self) -> &'static str {
        ops::ADD
    }
    fn key(&self) -> Option<&str> {
        Some(&self.key)
    }
    fn invoke_value(&self) -> Value {
        json!(self.element)
    }
    fn call_kind(&self) -> CallKind {
        CallKind::Mutation
    }
    fn run<'a>(&'a self, client: &'a dyn KvTarget) -> BoxFuture<'a, CallResult<Completion>> {
        write_number(client, &self.key, self.element)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Operation for Scan {
    fn f(&self) -> &'static str {
        ops::SCAN
    }
    fn invoke_value(&self) -> Value {
        json!({ "start": self.start, "end": self.end })
    }
    fn call_kind(&self) -> CallKind {
        CallKind::Read
    }
    fn describe(&self) -> String {
        format!("scan [{}, {})", self.start, self.end)
    }
    fn run<'a>(&'a self, client: &'a dyn KvTarget) -> BoxFuture<'a, CallResult<Completion>> {
        async move {
            let r = client
                .scan(self.start.as_bytes(), self.end.as_bytes(), 0)
                .await?;
            let keys: Vec<Value> = r
                .pairs
                .iter()
                .map(|(k, _)| Value::String(String::from_utf8_lossy(k).into_owned()))
                .collect();
            let meta = if r.metas.len() == 1 {
                r.metas.into_iter().next()
            } else {
                None
            };
            Ok(Completion::ok(Value::Array(keys), meta))
        }
        .boxed()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operation::OpSpec;

    #[test]
    fn invoke_values_follow_the_history_conventions() {
        let cas = OpSpec::new(Cas {
            key: "k".into(),
            expected: 3,
            new: 9,
        });
        assert_eq!(cas.invoke_value(), json!([3, 9]));
        assert_eq!((cas.f(), cas.key()), ("cas", Some("k")));
        let scan = OpSpec::new(Scan {
            start: "hot/".into(),
            end: "".into(),
        });
        assert_eq!(scan.invoke_value(), json!({"start": "hot/", "end": ""}));
        assert_eq!(scan.key(), None);
        assert_eq!(scan.call_kind(), CallKind::Read);
        assert_eq!(scan.describe(), "scan [hot/, )");
        assert_eq!(
            OpSpec::new(Add {
                key: "s/1".into(),
                element: 1
            })
            .call_kind(),
            CallKind::Mutation
        );
        assert_eq!(
            OpSpec::new(Read {
                key: "reg/1".into()
            })
            .describe(),
            "read reg/1"
        );
    }

    #[test]
    fn an_op_spec_is_equal_to_the_same_kind_with_the_same_invocation_and_gives_back_its_fields() {
        let w = OpSpec::new(Write {
            key: "k".into(),
            value: 4,
        });
        assert_eq!(
            w,
            OpSpec::new(Write {
                key: "k".into(),
                value: 4
            })
        );
        assert_ne!(
            w,
            OpSpec::new(Write {
                key: "k".into(),
                value: 5
            })
        );
        assert_ne!(
            w,
            OpSpec::new(Add {
                key: "k".into(),
                element: 4
            }),
            "same key and value, another kind"
        );
        assert_eq!(w.get::<Write>().map(|w| w.value), Some(4));
        assert!(w.get::<Read>().is_none());
    }
}

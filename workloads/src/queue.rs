//! SQS FIFO queue calls as the `queue` workload issues them (the shape of elastickv's
//! `sqs_htfifo_workload.clj`, with the delete recorded as its own call): `SendMessage`,
//! `ReceiveMessage` and `DeleteMessage`, their history form (`docs/history-format.md`
//! § Queues), the operations that run them through the client's queue capability
//! ([`crate::client::QueueClient`]) and [`Held`], what one client received and has not
//! deleted yet.
//!
//! Invariants: a send's invoke records the group as its `key` and the body as its `value`;
//! a receive's invoke records the visibility timeout it asks for, its `ok` value the
//! messages in the order returned as `{"group", "body"}`; a delete names the body (and
//! group) of a message its own process received, by the receipt handle of the process's
//! latest receive of it, which only the operation carries. A [`Consume`] is bound before
//! its invocation ([`crate::operation::Operation::bind`]) to a delete of the oldest message
//! its client holds, or runs as a receive.

use crate::client::{CallError, CallKind, CallResult, Certainty, KvTarget, QueueClient};
use crate::execute::Completion;
use crate::operation::{OpSpec, Operation};
use analysis::history::OpType;
use analysis::ops;
use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::{json, Value};
use std::any::Any;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::time::Instant;

/// Messages asked for per receive (SQS's maximum, as elastickv's suite asks).
pub const RECEIVE_MAX: u32 = 10;

/// How long past a visibility timeout the drain's empty receive must come, beyond the
/// timeout itself: the history's times are taken around the client's, so this covers the
/// difference and the clocks' granularity.
pub const DRAIN_MARGIN: Duration = Duration::from_secs(1);

/// One received message: its group, body and the receipt handle a delete needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub group: String,
    pub body: String,
    pub receipt: String,
}

/// What one client (one process) received and has not yet taken for a delete, and when it
/// last saw messages, for the drain's end.
#[derive(Debug)]
pub struct Held {
    started: Instant,
    messages: VecDeque<Received>,
    last_delivery: Option<Instant>,
    /// The latest `ok` receive: when it was sent, whether it was empty, its timeout.
    last_receive: Option<(Instant, bool, Duration)>,
}

impl Held {
    /// Nothing held yet; the client started at `now`.
    pub fn new(now: Instant) -> Held {
        Held {
            started: now,
            messages: VecDeque::new(),
            last_delivery: None,
            last_receive: None,
        }
    }

    /// An `ok` receive sent at `sent`, answered at `answered`, asking for `visibility`,
    /// returned `got`.
    pub fn received(
        &mut self,
        sent: Instant,
        answered: Instant,
        visibility: Duration,
        got: &[Received],
    ) {
        if !got.is_empty() {
            self.last_delivery = Some(answered);
        }
        self.last_receive = Some((sent, got.is_empty(), visibility));
        self.messages.extend(got.iter().cloned());
    }

    /// Whether the latest receive returned nothing.
    pub fn found_empty(&self) -> bool {
        matches!(self.last_receive, Some((_, true, _)))
    }

    /// The oldest message held, no longer held.
    pub fn take(&mut self) -> Option<Received> {
        self.messages.pop_front()
    }

    /// The latest receive was empty and sent at least a visibility timeout plus
    /// [`DRAIN_MARGIN`] after both the client's start and its latest delivery: every
    /// message received before (by any process before this client started, or by this
    /// client) and not deleted was visible again by then.
    pub fn drained(&self) -> bool {
        let Some((sent, true, visibility)) = self.last_receive else {
            return false;
        };
        let since = self
            .last_delivery
            .map_or(self.started, |d| d.max(self.started));
        sent >= since + visibility + DRAIN_MARGIN
    }
}

fn no_queue() -> CallError {
    CallError::new(
        Certainty::Definite,
        "unimplemented",
        "this client has no queue",
    )
}

fn queue_of(client: &dyn KvTarget) -> CallResult<&dyn QueueClient> {
    client.as_queue().ok_or_else(no_queue)
}

/// `SendMessage` of `body` to the message group `group` (history `send`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendMessage {
    pub group: String,
    pub body: String,
}

impl SendMessage {
    async fn run_call(&self, client: &dyn KvTarget) -> CallResult<Completion> {
        let value = queue_of(client)?.send(&self.group, &self.body).await?;
        Ok(Completion::ok(value, None))
    }
}

impl Operation for SendMessage {
    fn f(&self) -> &'static str {
        ops::SEND
    }
    fn key(&self) -> Option<&str> {
        Some(&self.group)
    }
    fn invoke_value(&self) -> Value {
        json!(self.body)
    }
    fn call_kind(&self) -> CallKind {
        CallKind::Mutation
    }
    fn run<'a>(&'a self, client: &'a dyn KvTarget) -> BoxFuture<'a, CallResult<Completion>> {
        self.run_call(client).boxed()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `ReceiveMessage` of up to [`RECEIVE_MAX`] messages with a visibility timeout of
/// `visibility_s` seconds (history `receive`). A failed receive is definite: the checker
/// reads nothing from it, and what it may have hidden is visible again after the timeout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receive {
    pub visibility_s: u32,
}

impl Receive {
    async fn run_call(&self, client: &dyn KvTarget) -> CallResult<Completion> {
        let got = queue_of(client)?
            .receive(RECEIVE_MAX, self.visibility_s)
            .await?;
        let value: Vec<Value> = got
            .iter()
            .map(|m| json!({"group": m.group, "body": m.body}))
            .collect();
        Ok(Completion::ok(Value::Array(value), None))
    }
}

impl Operation for Receive {
    fn f(&self) -> &'static str {
        ops::RECEIVE
    }
    fn invoke_value(&self) -> Value {
        json!({ "visibility_timeout_s": self.visibility_s })
    }
    fn call_kind(&self) -> CallKind {
        CallKind::Read
    }
    fn run<'a>(&'a self, client: &'a dyn KvTarget) -> BoxFuture<'a, CallResult<Completion>> {
        self.run_call(client).boxed()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `DeleteMessage` of a message its process received (history `delete-message`: the
/// group, the body); the receipt handle is not recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteMessage {
    pub group: String,
    pub body: String,
    pub receipt: String,
}

impl DeleteMessage {
    async fn run_call(&self, client: &dyn KvTarget) -> CallResult<Completion> {
        queue_of(client)?.delete_message(&self.receipt).await?;
        Ok(Completion::ok(Value::Null, None))
    }
}

impl Operation for DeleteMessage {
    fn f(&self) -> &'static str {
        ops::DELETE_MESSAGE
    }
    fn key(&self) -> Option<&str> {
        Some(&self.group)
    }
    fn invoke_value(&self) -> Value {
        json!(self.body)
    }
    fn call_kind(&self) -> CallKind {
        CallKind::Mutation
    }
    fn run<'a>(&'a self, client: &'a dyn KvTarget) -> BoxFuture<'a, CallResult<Completion>> {
        self.run_call(client).boxed()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A consumer's next step: a delete of the oldest message its client holds, or else its
/// receive. As a final operation (`drain`), it is done only once the client saw the queue
/// stay empty ([`Held::drained`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consume {
    pub receive: Receive,
    pub drain: bool,
}

impl Operation for Consume {
    fn f(&self) -> &'static str {
        self.receive.f()
    }
    fn invoke_value(&self) -> Value {
        self.receive.invoke_value()
    }
    fn call_kind(&self) -> CallKind {
        self.receive.call_kind()
    }
    fn describe(&self) -> String {
        if self.drain {
            "drain the queue".into()
        } else {
            "receive".into()
        }
    }
    fn run<'a>(&'a self, client: &'a dyn KvTarget) -> BoxFuture<'a, CallResult<Completion>> {
        self.receive.run(client)
    }
    fn bind(&self, client: &dyn KvTarget) -> Option<OpSpec> {
        let m = client.as_queue()?.take_held()?;
        Some(OpSpec::new(DeleteMessage {
            group: m.group,
            body: m.body,
            receipt: m.receipt,
        }))
    }
    fn settled(&self, client: &dyn KvTarget, outcome: OpType) -> bool {
        if self.drain {
            client.as_queue().is_some_and(|q| q.drained())
        } else {
            outcome == OpType::Ok
        }
    }
    /// The drain goes on at once after a receive that returned messages and after a
    /// delete; it waits only after a failure or an empty receive.
    fn pause_before_next(&self, client: &dyn KvTarget, outcome: OpType) -> bool {
        outcome != OpType::Ok || client.as_queue().is_none_or(|q| q.found_empty())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(body: &str) -> Received {
        Received {
            group: "g0".into(),
            body: body.into(),
            receipt: format!("r-{body}"),
        }
    }

    #[test]
    fn invoke_values_follow_the_history_format() {
        let send = SendMessage {
            group: "g3".into(),
            body: "g3:17".into(),
        };
        assert_eq!(
            (send.f(), send.key(), send.invoke_value()),
            ("send", Some("g3"), json!("g3:17"))
        );
        let receive = Receive { visibility_s: 5 };
        assert_eq!(
            (receive.f(), receive.key(), receive.invoke_value()),
            ("receive", None, json!({"visibility_timeout_s": 5}))
        );
        assert_eq!(receive.call_kind(), CallKind::Read);
        let delete = DeleteMessage {
            group: "g3".into(),
            body: "g3:17".into(),
            receipt: "secret".into(),
        };
        assert_eq!(
            (delete.f(), delete.key(), delete.invoke_value()),
            ("delete-message", Some("g3"), json!("g3:17"))
        );
        assert_eq!(delete.call_kind(), CallKind::Mutation);
    }

    #[test]
    fn held_messages_are_taken_oldest_first() {
        let t = Instant::now();
        let mut held = Held::new(t);
        held.received(t, t, Duration::from_secs(5), &[msg("g0:0"), msg("g0:1")]);
        held.received(t, t, Duration::from_secs(5), &[msg("g0:2")]);
        let order: Vec<String> = std::iter::from_fn(|| held.take()).map(|m| m.body).collect();
        assert_eq!(order, ["g0:0", "g0:1", "g0:2"]);
    }

    #[test]
    fn drained_only_after_an_empty_receive_a_timeout_past_the_last_delivery() {
        let t = Instant::now();
        let vt = Duration::from_secs(5);
        let later = |s: u64| t + Duration::from_secs(s);
        let mut held = Held::new(t);
        assert!(!held.drained(), "nothing received yet");
        held.received(later(1), later(1), vt, &[]);
        assert!(held.found_empty());
        assert!(!held.drained(), "empty, but within a timeout of the start");
        held.received(later(7), later(7), vt, &[]);
        assert!(
            held.drained(),
            "empty a timeout and the margin after the start"
        );
        held.received(later(8), later(9), vt, &[msg("g0:0")]);
        assert!(!held.found_empty());
        assert!(!held.drained(), "the latest receive delivered");
        held.received(later(12), later(12), vt, &[]);
        assert!(
            !held.drained(),
            "empty, but within a timeout of the delivery"
        );
        held.received(later(15), later(15), vt, &[]);
        assert!(held.drained());
    }
}

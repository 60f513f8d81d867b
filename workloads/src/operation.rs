//! The operation a process invokes, open to new kinds: an [`Operation`] says what the
//! history records of it (`f`, `key`, the invoke's `value`), whether it only reads, and how
//! a client runs it — so a new kind of operation (a transaction, say) is one type
//! implementing this trait next to the workload or client capability it belongs to, not an
//! arm added to every match of a closed enum. [`OpSpec`] is the handle generators return
//! and processes execute.
//!
//! Invariants: an operation's `f`, `key` and `invoke_value` never change once built (the
//! invoke and its completion are recorded from the same values); `run` reports a failure as
//! a classified [`CallError`] and never records anything itself (the caller turns a failure
//! into a `fail` or `info` completion carrying the invoke's value); an operation whose
//! `call_kind` is [`CallKind::Read`] changes nothing in the store.

use crate::client::{CallKind, CallResult, KvTarget};
use crate::execute::Completion;
use analysis::history::OpType;
use futures::future::BoxFuture;
use serde_json::Value;
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// One kind of operation: its history form and how a client runs it.
pub trait Operation: fmt::Debug + Send + Sync + 'static {
    /// The history `f`.
    fn f(&self) -> &'static str;
    /// The history `key`; `None` for an operation over a range or several keys (it records
    /// them in its `value`).
    fn key(&self) -> Option<&str> {
        None
    }
    /// The history `value` of the invocation.
    fn invoke_value(&self) -> Value;
    /// Whether a failed call may have changed the store ([`CallKind::Mutation`]) or not.
    fn call_kind(&self) -> CallKind;
    /// How a report names it (a final read that never succeeded: `read reg/00001`).
    fn describe(&self) -> String {
        format!("{} {}", self.f(), self.key().unwrap_or(""))
    }
    /// Runs it through `client`; the completion on an answer, the classified failure
    /// otherwise. A client that lacks the capability the operation needs answers a definite
    /// `unimplemented` failure (nothing was sent).
    fn run<'a>(&'a self, client: &'a dyn KvTarget) -> BoxFuture<'a, CallResult<Completion>>;
    /// The operation to invoke in its place on `client`, chosen before the invocation is
    /// recorded: an operation that depends on what only its process's client holds (the
    /// queue's consume: a delete of a message this process received, or else a receive)
    /// picks it here. `None` (the default): itself.
    fn bind(&self, client: &dyn KvTarget) -> Option<OpSpec> {
        let _ = client;
        None
    }
    /// For a final operation: whether, after an attempt through `client` (its bound
    /// operation) ended `outcome`, it is done. By default once an attempt succeeded; the
    /// queue's drain only once the client saw the queue stay empty.
    fn settled(&self, client: &dyn KvTarget, outcome: OpType) -> bool {
        let _ = client;
        outcome == OpType::Ok
    }
    /// For a final operation not yet settled after an attempt ended `outcome`: whether to
    /// wait a moment before the next attempt. By default always; the drain goes on at once
    /// after a receive that returned messages and after a delete.
    fn pause_before_next(&self, client: &dyn KvTarget, outcome: OpType) -> bool {
        let _ = (client, outcome);
        true
    }
    /// The operation as `Any`, so a test or a report can look at its fields
    /// ([`OpSpec::get`]).
    fn as_any(&self) -> &dyn Any;
}

/// One operation to invoke (cheap to clone: the operation is shared).
#[derive(Clone)]
pub struct OpSpec(Arc<dyn Operation>);

impl OpSpec {
    pub fn new(op: impl Operation) -> OpSpec {
        OpSpec(Arc::new(op))
    }

    pub fn f(&self) -> &'static str {
        self.0.f()
    }

    pub fn key(&self) -> Option<&str> {
        self.0.key()
    }

    pub fn invoke_value(&self) -> Value {
        self.0.invoke_value()
    }

    pub fn call_kind(&self) -> CallKind {
        self.0.call_kind()
    }

    pub fn describe(&self) -> String {
        self.0.describe()
    }

    /// Runs the operation through `client` (see [`Operation::run`]).
    pub fn run<'a>(&'a self, client: &'a dyn KvTarget) -> BoxFuture<'a, CallResult<Completion>> {
        self.0.run(client)
    }

    /// The operation to invoke on `client` (see [`Operation::bind`]): the bound one, or this.
    pub fn bind(&self, client: &dyn KvTarget) -> OpSpec {
        self.0.bind(client).unwrap_or_else(|| self.clone())
    }

    /// Whether a final operation is done after an attempt ended `outcome` (see
    /// [`Operation::settled`]).
    pub fn settled(&self, client: &dyn KvTarget, outcome: OpType) -> bool {
        self.0.settled(client, outcome)
    }

    /// Whether to wait before a final operation's next attempt (see
    /// [`Operation::pause_before_next`]).
    pub fn pause_before_next(&self, client: &dyn KvTarget, outcome: OpType) -> bool {
        self.0.pause_before_next(client, outcome)
    }

    /// The operation, if it is a `T`.
    pub fn get<T: Operation>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref::<T>()
    }
}

impl fmt::Debug for OpSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Two operations are equal when they are of the same kind and the history would record
/// the same invocation of them.
impl PartialEq for OpSpec {
    fn eq(&self, other: &OpSpec) -> bool {
        self.0.as_any().type_id() == other.0.as_any().type_id()
            && self.f() == other.f()
            && self.key() == other.key()
            && self.invoke_value() == other.invoke_value()
    }
}

impl Eq for OpSpec {}

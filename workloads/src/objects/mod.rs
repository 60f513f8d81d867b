//! Object writes and reads as the `objects` workload issues them (`docs/s3.md` § objects):
//! [`ObjectWrite`] puts the body of one write ([`body::body`], derived from key, write
//! number and length) by a single `PutObject` or a multipart upload ([`Upload`]);
//! [`ObjectRead`] gets the object and verifies its body ([`body::verify`]). Both run through
//! the client's object capability ([`crate::client::ObjectClient`]).
//!
//! History form (`docs/history-format.md` § Objects): `f` is `write` / `read` of the
//! object's key, as for a register; a write's `value` is its write number (unique across
//! the run); an `ok` read's `value` is the write number its body proves whole, `null` for
//! an absent object, or the torn record ([`body::Torn::to_json`]) when the body is not one
//! whole write's. So per-key linearizability judges objects as registers, and the
//! `objects` checker names the torn reads.
//!
//! Invariant: neither operation keeps a body: a write derives it when it runs, a read
//! drops it once verified.

pub mod body;

use crate::client::{CallError, CallKind, CallResult, Certainty, KvTarget, ObjectClient};
use crate::execute::Completion;
use crate::operation::Operation;
use analysis::ops;
use body::BodyCheck;
use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::{json, Value};
use std::any::Any;

/// How a write's body is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upload {
    /// One `PutObject`.
    Single,
    /// `CreateMultipartUpload`, one `UploadPart` per `part_size` bytes (the last part the
    /// rest), `CompleteMultipartUpload`.
    Multipart { part_size: u64 },
}

/// Put the body of write `write` of `key`, `length` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectWrite {
    pub key: String,
    pub write: i64,
    pub length: u64,
    pub upload: Upload,
}

/// Get `key` and verify its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRead {
    pub key: String,
}

/// The client's object capability, or the definite failure of a client without one.
fn objects_of(client: &dyn KvTarget) -> CallResult<&dyn ObjectClient> {
    client.as_objects().ok_or_else(|| {
        CallError::new(
            Certainty::Definite,
            "unimplemented",
            "this client has no object calls",
        )
    })
}

/// The `ok` read value of a body read from `key` (or `None`: absent).
pub fn read_value(key: &str, got: Option<&[u8]>) -> Value {
    match got.map(|b| body::verify(key, b)) {
        None => Value::Null,
        Some(BodyCheck::Whole(write)) => json!(write),
        Some(BodyCheck::Torn(t)) => t.to_json(),
    }
}

impl Operation for ObjectWrite {
    fn f(&self) -> &'static str {
        ops::WRITE
    }
    fn key(&self) -> Option<&str> {
        Some(&self.key)
    }
    fn invoke_value(&self) -> Value {
        json!(self.write)
    }
    fn call_kind(&self) -> CallKind {
        CallKind::Mutation
    }
    fn describe(&self) -> String {
        let how = match self.upload {
            Upload::Single => "PutObject",
            Upload::Multipart { .. } => "multipart",
        };
        format!("write {} ({} bytes, {how})", self.key, self.length)
    }
    fn run<'a>(&'a self, client: &'a dyn KvTarget) -> BoxFuture<'a, CallResult<Completion>> {
        async move {
            let objects = objects_of(client)?;
            let bytes = body::body(&self.key, self.write, self.length)
                .map_err(|why| CallError::new(Certainty::Definite, "bad-object", why))?;
            objects.put_object(&self.key, bytes, self.upload).await?;
            Ok(Completion::ok(self.invoke_value(), None))
        }
        .boxed()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Operation for ObjectRead {
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
            let got = objects_of(client)?.get_object(&self.key).await?;
            Ok(Completion::ok(read_value(&self.key, got.as_deref()), None))
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

    #[test]
    fn a_read_records_the_write_its_body_proves_absent_as_null_and_torn_as_its_record() {
        let b = body::body("k", 12, 3000).unwrap();
        assert_eq!(read_value("k", Some(&b)), json!(12));
        assert_eq!(read_value("k", None), Value::Null);
        let cut = read_value("k", Some(&b[..1000]));
        assert_eq!(cut["torn"], "truncated");
        assert_eq!(cut["write"], 12);
    }
}

//! Small helpers shared by the two redb stores of a group (`logstore.rs`, `store.rs`), kept
//! apart so that neither store imports the other: mapping an error into openraft's storage
//! error, and the JSON encoding every persisted record uses.

use openraft::{AnyError, StorageIOError};
use serde::Serialize;

use crate::types::{NodeId, StorageError};

pub(crate) fn sio(
    f: fn(AnyError) -> StorageIOError<NodeId>,
    e: impl std::fmt::Display,
) -> StorageError {
    StorageError::IO {
        source: f(AnyError::error(e.to_string())),
    }
}

/// Every persisted refkv record is JSON; the types involved always serialize.
pub(crate) fn json<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).expect("refkv types always serialize")
}

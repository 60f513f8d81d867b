//! The `null` target: an in-process store that answers every call at once, for measuring
//! the harness itself (`faultline bench --harness`) without a network or a server.
//!
//! Invariants: it is linearizable, so a history recorded against it must check `valid`.
//! Every call takes one lock on one ordered map for its whole effect (read, write,
//! compare-and-set, delete, scan), so each call is atomic at a single instant between its
//! invocation and its completion; scans are atomic over the whole range. Every node name
//! shares the same map: the "cluster" is one store. It reports no commit metadata, no route
//! catalog and no splits (those calls answer a definite `unimplemented`), and says it is
//! the leader of every group, so readiness waits pass at once.

use crate::client::{
    CallError, CallResult, Certainty, Connector, GroupStatus, KvTarget, NodeEndpoint, ReadReply,
    ScanReply, SplitReply, SplitRequest, WriteReply,
};
use analysis::history::CatalogSnapshot;
use futures::future::{ready, BoxFuture};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// The store's keys and values, ordered by key.
type Map = BTreeMap<Box<[u8]>, Stored>;

/// A value, inside the map's node when it is short (as nearly every value is) and boxed
/// otherwise: a long run's millions of keys then cost one heap block each (the key's), not
/// two.
#[derive(Debug)]
enum Stored {
    Inline { len: u8, bytes: [u8; INLINE] },
    Boxed(Box<[u8]>),
}

/// Longest value kept inline (the enum stays 24 bytes).
const INLINE: usize = 22;

impl Stored {
    fn new(value: &[u8]) -> Stored {
        if value.len() > INLINE {
            return Stored::Boxed(value.into());
        }
        let mut bytes = [0; INLINE];
        bytes[..value.len()].copy_from_slice(value);
        Stored::Inline {
            len: value.len() as u8,
            bytes,
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Stored::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Stored::Boxed(b) => b,
        }
    }
}

/// The shared map of a null store; clone the [`NullConnector`] to share it.
#[derive(Debug, Default)]
struct NullData {
    map: Mutex<Map>,
}

impl NullData {
    fn lock(&self) -> MutexGuard<'_, Map> {
        // Every mutation is a single map call, so a panic elsewhere cannot leave it torn.
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Makes [`NullClient`]s that all share one map.
#[derive(Debug, Clone, Default)]
pub struct NullConnector {
    data: Arc<NullData>,
}

impl NullConnector {
    pub fn new() -> NullConnector {
        NullConnector::default()
    }

    /// Number of keys the store holds now.
    pub fn len(&self) -> usize {
        self.data.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every key (the run is over; nothing reads the store again).
    pub fn clear(&self) {
        let pairs = std::mem::take(&mut *self.data.lock());
        drop(pairs);
    }
}

impl Connector for NullConnector {
    fn connect(&self, node: &NodeEndpoint) -> anyhow::Result<Arc<dyn KvTarget>> {
        Ok(Arc::new(NullClient {
            node: node.name.clone(),
            data: self.data.clone(),
        }))
    }
}

/// One process's client of the null store.
#[derive(Debug)]
pub struct NullClient {
    node: String,
    data: Arc<NullData>,
}

fn unsupported<T: Send + 'static>(what: &str) -> BoxFuture<'static, CallResult<T>> {
    Box::pin(ready(Err(CallError::new(
        Certainty::Definite,
        "unimplemented",
        format!("the null store has no {what}"),
    ))))
}

fn now<T: Send + 'static>(value: T) -> BoxFuture<'static, CallResult<T>> {
    Box::pin(ready(Ok(value)))
}

/// `[start, end)` of `map`, `end` empty = unbounded, at most `limit` pairs (0 = all).
fn scan_range(map: &Map, start: &[u8], end: &[u8], limit: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    let limit = if limit == 0 {
        usize::MAX
    } else {
        usize::try_from(limit).unwrap_or(usize::MAX)
    };
    let pairs =
        map.range::<[u8], _>((std::ops::Bound::Included(start), std::ops::Bound::Unbounded));
    pairs
        .take_while(|(k, _)| end.is_empty() || &k[..] < end)
        .take(limit)
        .map(|(k, v)| (k.to_vec(), v.bytes().to_vec()))
        .collect()
}

impl KvTarget for NullClient {
    fn node(&self) -> &str {
        &self.node
    }

    fn read(&self, key: &[u8]) -> BoxFuture<'_, CallResult<ReadReply>> {
        now(ReadReply {
            value: self.data.lock().get(key).map(|v| v.bytes().to_vec()),
            meta: None,
        })
    }

    fn write(&self, key: &[u8], value: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        self.data.lock().insert(key.into(), Stored::new(value));
        now(WriteReply {
            applied: true,
            meta: None,
        })
    }

    fn as_cas(&self) -> Option<&dyn crate::client::CasClient> {
        Some(self)
    }

    fn delete(&self, key: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        self.data.lock().remove(key);
        now(WriteReply {
            applied: true,
            meta: None,
        })
    }

    fn scan(&self, start: &[u8], end: &[u8], limit: u64) -> BoxFuture<'_, CallResult<ScanReply>> {
        now(ScanReply {
            pairs: scan_range(&self.data.lock(), start, end, limit),
            metas: vec![],
        })
    }

    fn list_routes(&self) -> BoxFuture<'_, CallResult<CatalogSnapshot>> {
        unsupported("route catalog")
    }

    fn split(&self, _request: SplitRequest) -> BoxFuture<'_, CallResult<SplitReply>> {
        unsupported("range splits")
    }

    fn status(&self, group: u64) -> BoxFuture<'_, CallResult<GroupStatus>> {
        now(GroupStatus {
            group,
            node_id: self.node.clone(),
            is_leader: true,
            state: "LEADER".into(),
            leader_id: self.node.clone(),
            term: 1,
            ..GroupStatus::default()
        })
    }
}

impl crate::client::CasClient for NullClient {
    fn cas(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: &[u8],
    ) -> BoxFuture<'_, CallResult<WriteReply>> {
        let mut map = self.data.lock();
        let applied = map.get(key).map(Stored::bytes) == expected;
        if applied {
            map.insert(key.into(), Stored::new(new));
        }
        now(WriteReply {
            applied,
            meta: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::block_on;

    fn client(c: &NullConnector, name: &str) -> Arc<dyn KvTarget> {
        c.connect(&NodeEndpoint {
            name: name.into(),
            addr: "in-process".into(),
        })
        .unwrap()
    }

    #[test]
    fn short_and_long_values_read_back_as_written() {
        let connector = NullConnector::new();
        let n1 = client(&connector, "n1");
        let long = vec![7u8; 100];
        for value in [&b""[..], b"1234", &[9u8; 22], &[8u8; 23], &long] {
            block_on(n1.write(b"k", value)).unwrap();
            assert_eq!(
                block_on(n1.read(b"k")).unwrap().value.as_deref(),
                Some(value)
            );
        }
    }

    #[test]
    fn clearing_the_store_forgets_every_key() {
        let connector = NullConnector::new();
        let n1 = client(&connector, "n1");
        block_on(n1.write(b"k", b"v")).unwrap();
        assert_eq!(connector.len(), 1);
        connector.clear();
        assert!(connector.is_empty());
        assert_eq!(block_on(n1.read(b"k")).unwrap().value, None);
    }

    #[test]
    fn every_node_sees_the_same_map() {
        let c = NullConnector::new();
        let (n1, n2) = (client(&c, "n1"), client(&c, "n2"));
        assert!(block_on(n1.write(b"k", b"1")).unwrap().applied);
        assert_eq!(
            block_on(n2.read(b"k")).unwrap().value.as_deref(),
            Some(&b"1"[..])
        );
        assert_eq!(block_on(n2.read(b"absent")).unwrap().value, None);
        assert_eq!(n2.node(), "n2");
    }

    #[test]
    fn cas_applies_only_on_a_match_and_absent_means_none() {
        let c = NullConnector::new();
        let client = client(&c, "n1");
        let n1 = client.as_cas().expect("the null store has compare-and-set");
        assert!(
            !block_on(n1.cas(b"k", Some(b"1"), b"2")).unwrap().applied,
            "absent key is not 1"
        );
        assert!(block_on(n1.cas(b"k", None, b"1")).unwrap().applied);
        assert!(
            !block_on(n1.cas(b"k", None, b"3")).unwrap().applied,
            "present key is not absent"
        );
        assert!(block_on(n1.cas(b"k", Some(b"1"), b"2")).unwrap().applied);
        assert_eq!(
            block_on(client.read(b"k")).unwrap().value.as_deref(),
            Some(&b"2"[..])
        );
    }

    #[test]
    fn scans_respect_bounds_and_limit() {
        let c = NullConnector::new();
        let n1 = client(&c, "n1");
        for k in ["a", "b1", "b2", "b3", "c"] {
            block_on(n1.write(k.as_bytes(), b"v")).unwrap();
        }
        let keys = |start: &[u8], end: &[u8], limit| -> Vec<Vec<u8>> {
            block_on(n1.scan(start, end, limit))
                .unwrap()
                .pairs
                .into_iter()
                .map(|(k, _)| k)
                .collect()
        };
        assert_eq!(
            keys(b"b", b"c", 0),
            vec![b"b1".to_vec(), b"b2".to_vec(), b"b3".to_vec()]
        );
        assert_eq!(keys(b"b", b"", 0).len(), 4, "empty end is unbounded");
        assert_eq!(keys(b"", b"", 2), vec![b"a".to_vec(), b"b1".to_vec()]);
        block_on(n1.delete(b"a")).unwrap();
        assert_eq!(c.len(), 4);
    }

    #[test]
    fn catalog_calls_are_definite_unimplemented_and_status_leads() {
        let c = NullConnector::new();
        let n1 = client(&c, "n1");
        let err = block_on(n1.list_routes()).unwrap_err();
        assert_eq!(err.certainty, Certainty::Definite);
        let s = block_on(n1.status(3)).unwrap();
        assert!(s.is_leader && s.group == 3);
    }
}

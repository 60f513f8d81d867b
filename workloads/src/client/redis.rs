//! [`RedisClient`]: faultline's data operations over the Redis protocol (the `redis` crate,
//! tokio, one multiplexed connection per process to the node it is bound to).
//!
//! The mapping:
//! - read → `GET`; write and set insert → `SET`; delete → `DEL`;
//! - compare-and-set → one Lua script ([`CAS_SCRIPT`]: `GET`, compare, `SET`) by `EVALSHA`,
//!   falling back to `EVAL` on `NOSCRIPT`. Scripts go to the node that runs them: elastickv
//!   runs a script only on the default group's leader and answers `NOTLEADER` elsewhere, so
//!   before the first script (and after a `NOTLEADER` or a broken connection) the client
//!   finds that node with a read-only probe, `EVAL "return 1" 0`, its own node first;
//! - scan of `[start, end)` → `SCAN` with `MATCH <common prefix>*` paging until the cursor
//!   is 0 ([`SetRead::Scan`]), or `MGET` in batches of every key the run attempted to write
//!   in the range ([`SetRead::Mget`]; pipelined `GET`s of the batch where `MGET` is unknown);
//! - status → `PING`: a Redis server is its own one-node group's leader.
//! - transactions (list-append, rw-register micro-ops) → [`txn`]: `RPUSH`/`LRANGE`, `SET`/`GET`,
//!   `MULTI`…`EXEC` for two or more.
//!
//! Invariants: a key is entered in the attempted set *before* its `SET` is sent, so an
//! `MGET` read covers every write that can have happened; a scan's keys are the range's
//! only, sorted and without the duplicates `SCAN` may return; every failure comes back
//! classified by [`super::redis_classify`].

use super::classify::{CallError, CallKind, Certainty};
use super::protocol::SetRead;
use super::redis_classify::{classify_redis, is_not_leader, RedisFailure};
use super::{
    CallResult, Connector, GroupStatus, KvTarget, NodeEndpoint, ReadReply, ScanReply, SplitReply,
    SplitRequest, WriteReply,
};
use analysis::history::CatalogSnapshot;
use futures::future::BoxFuture;
use futures::FutureExt;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Value};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Compare-and-set in one script. `ARGV[1]` is `1` when the key must be absent, else `0`
/// and `ARGV[2]` the expected value; `ARGV[3]` the new value. Returns 1 when it wrote.
pub const CAS_SCRIPT: &str = "local current = redis.call('GET', KEYS[1])\n\
if ARGV[1] == '1' then\n  if current then return 0 end\n\
elseif current ~= ARGV[2] then return 0 end\n\
redis.call('SET', KEYS[1], ARGV[3])\nreturn 1\n";

/// The read-only script that tells whether a node runs scripts.
const PROBE_SCRIPT: &str = "return 1";
/// `COUNT` hint of every `SCAN` page.
const SCAN_COUNT: u64 = 1000;
/// Pages one set read may take before it is abandoned (a cursor that never returns to 0).
const MAX_SCAN_PAGES: usize = 100_000;
/// Keys per `MGET`.
pub const MGET_BATCH: usize = 512;

/// Deadlines of a [`RedisClient`] and how it reads sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RedisOptions {
    pub call_timeout: Duration,
    pub connect_timeout: Duration,
    pub set_read: SetRead,
}

/// Every key any process of the run attempted to write (the `MGET` set read's key list).
#[derive(Debug, Default)]
pub struct AttemptedKeys(Mutex<BTreeSet<Vec<u8>>>);

impl AttemptedKeys {
    pub fn insert(&self, key: &[u8]) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_vec());
    }

    /// The attempted keys in `[start, end)` (an empty `end` = unbounded), in order.
    pub fn in_range(&self, start: &[u8], end: &[u8]) -> Vec<Vec<u8>> {
        let keys = self.0.lock().unwrap_or_else(|p| p.into_inner());
        keys.range(start.to_vec()..)
            .take_while(|k| end.is_empty() || k.as_slice() < end)
            .cloned()
            .collect()
    }
}

/// One node's Redis address and its lazily opened multiplexed connection.
struct Link {
    addr: String,
    client: redis::Client,
    conn: tokio::sync::Mutex<Option<MultiplexedConnection>>,
}

impl Link {
    fn new(addr: &str) -> anyhow::Result<Link> {
        let client = redis::Client::open(format!("redis://{addr}/"))
            .map_err(|e| anyhow::anyhow!("bad Redis address {addr:?}: {e}"))?;
        Ok(Link {
            addr: addr.to_string(),
            client,
            conn: tokio::sync::Mutex::new(None),
        })
    }

    /// The open connection, opening it if needed; a failure here means nothing was sent.
    async fn connection(
        &self,
        kind: CallKind,
        connect_timeout: Duration,
    ) -> CallResult<MultiplexedConnection> {
        let mut slot = self.conn.lock().await;
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(connect_timeout))
            .set_response_timeout(None);
        let opened = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await;
        let conn = opened.map_err(|e| {
            classify_redis(
                kind,
                RedisFailure::NotConnected(&format!("{}: {e}", self.addr)),
            )
        })?;
        *slot = Some(conn.clone());
        Ok(conn)
    }

    /// Drops the connection after a transport failure, so the next call reconnects.
    async fn reset(&self) {
        *self.conn.lock().await = None;
    }
}

/// The whole text of a server's error reply (code first), or `None` for a transport error.
fn reply_text(e: &redis::RedisError) -> Option<String> {
    match e.kind() {
        redis::ErrorKind::Server(_) | redis::ErrorKind::Extension => {
            Some(match (e.code(), e.detail()) {
                (Some(code), Some(detail)) => format!("{code} {detail}"),
                (Some(code), None) => code.to_string(),
                _ => e.to_string(),
            })
        }
        _ => None,
    }
}

/// A Redis client bound to one node (`links[own]`), with the cluster's other nodes for scripts.
pub struct RedisClient {
    node: String,
    own: usize,
    links: Vec<Link>,
    options: RedisOptions,
    attempted: Arc<AttemptedKeys>,
    /// The node that last ran a script (index into `links`), if known.
    script_node: Mutex<Option<usize>>,
    /// Set once the node answered that it has no `MGET`.
    no_mget: std::sync::atomic::AtomicBool,
}

impl RedisClient {
    /// A client for `node` (by name among `cluster`, else at `node.addr`); no connection is
    /// opened yet.
    pub fn new(
        node: &NodeEndpoint,
        cluster: &[NodeEndpoint],
        options: RedisOptions,
        attempted: Arc<AttemptedKeys>,
    ) -> anyhow::Result<RedisClient> {
        let mut addrs: Vec<&str> = cluster.iter().map(|n| n.addr.as_str()).collect();
        let own = match cluster.iter().position(|n| n.name == node.name) {
            Some(i) => i,
            None => {
                addrs.insert(0, &node.addr);
                0
            }
        };
        let links = addrs
            .into_iter()
            .map(Link::new)
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(RedisClient {
            node: node.name.clone(),
            own,
            links,
            options,
            attempted,
            script_node: Mutex::new(None),
            no_mget: Default::default(),
        })
    }

    /// Sends `cmd` to `links[link]` under the call deadline.
    async fn query(&self, link: usize, kind: CallKind, cmd: &redis::Cmd) -> CallResult<Value> {
        let mut conn = self.links[link]
            .connection(kind, self.options.connect_timeout)
            .await?;
        let reply = tokio::time::timeout(
            self.options.call_timeout,
            cmd.query_async::<Value>(&mut conn),
        )
        .await;
        self.outcome(link, kind, reply).await
    }

    /// Sends `pipe` (its commands in one round trip) to `links[link]` under the call deadline.
    async fn query_pipe(
        &self,
        link: usize,
        kind: CallKind,
        pipe: &redis::Pipeline,
    ) -> CallResult<Vec<Value>> {
        let mut conn = self.links[link]
            .connection(kind, self.options.connect_timeout)
            .await?;
        let reply = tokio::time::timeout(
            self.options.call_timeout,
            pipe.query_async::<Vec<Value>>(&mut conn),
        )
        .await;
        self.outcome(link, kind, reply).await
    }

    /// A reply, or its failure classified (a transport failure also drops the connection).
    async fn outcome<T>(
        &self,
        link: usize,
        kind: CallKind,
        reply: Result<redis::RedisResult<T>, tokio::time::error::Elapsed>,
    ) -> CallResult<T> {
        let link = &self.links[link];
        match reply {
            Err(_) => Err(classify_redis(kind, RedisFailure::TimedOut)),
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => match reply_text(&e) {
                Some(text) => Err(classify_redis(kind, RedisFailure::Reply(&text))),
                None => {
                    link.reset().await;
                    Err(classify_redis(
                        kind,
                        RedisFailure::Transport(&format!("{}: {e}", link.addr)),
                    ))
                }
            },
        }
    }

    async fn get(&self, key: &[u8]) -> CallResult<ReadReply> {
        let value = self
            .query(self.own, CallKind::Read, redis::cmd("GET").arg(key))
            .await?;
        Ok(ReadReply {
            value: optional_bytes(value, "GET")?,
            meta: None,
        })
    }

    async fn set(&self, key: &[u8], value: &[u8]) -> CallResult<WriteReply> {
        self.attempted.insert(key);
        match self
            .query(
                self.own,
                CallKind::Mutation,
                redis::cmd("SET").arg(key).arg(value),
            )
            .await?
        {
            Value::Okay => Ok(WriteReply {
                applied: true,
                meta: None,
            }),
            // elastickv relays a SET it proxied to the leader as a bulk string
            // (`adapter/redis_proxy_leader.go` ~384–400, `writeGoRedisValue`).
            Value::SimpleString(s) if s.eq_ignore_ascii_case("OK") => Ok(WriteReply {
                applied: true,
                meta: None,
            }),
            Value::BulkString(b) if b.eq_ignore_ascii_case(b"OK") => Ok(WriteReply {
                applied: true,
                meta: None,
            }),
            other => Err(CallError::bad_response(
                CallKind::Mutation,
                format!("SET answered {other:?}"),
            )),
        }
    }

    async fn del(&self, key: &[u8]) -> CallResult<WriteReply> {
        match self
            .query(self.own, CallKind::Mutation, redis::cmd("DEL").arg(key))
            .await?
        {
            Value::Int(_) => Ok(WriteReply {
                applied: true,
                meta: None,
            }),
            other => Err(CallError::bad_response(
                CallKind::Mutation,
                format!("DEL answered {other:?}"),
            )),
        }
    }

    /// The node that runs scripts: the cached one, else the first (own node first) whose
    /// probe succeeds. A failure is definite: only read-only probes were sent.
    async fn script_link(&self) -> CallResult<usize> {
        if let Some(i) = *self.script_node.lock().unwrap_or_else(|p| p.into_inner()) {
            return Ok(i);
        }
        let order =
            std::iter::once(self.own).chain((0..self.links.len()).filter(|&i| i != self.own));
        let mut refusals = Vec::new();
        for i in order {
            match self
                .query(
                    i,
                    CallKind::Read,
                    redis::cmd("EVAL").arg(PROBE_SCRIPT).arg(0),
                )
                .await
            {
                Ok(_) => {
                    *self.script_node.lock().unwrap_or_else(|p| p.into_inner()) = Some(i);
                    return Ok(i);
                }
                Err(e) => refusals.push(format!("{}: {}", self.links[i].addr, e.history_text())),
            }
        }
        Err(CallError::new(
            Certainty::Definite,
            "leader-not-found",
            format!("no node runs scripts ({})", refusals.join("; ")),
        ))
    }

    fn forget_script_node(&self) {
        *self.script_node.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    async fn compare_and_set(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: &[u8],
    ) -> CallResult<WriteReply> {
        let link = self.script_link().await?;
        self.attempted.insert(key);
        let args = |c: &mut redis::Cmd| {
            c.arg(1)
                .arg(key)
                .arg(if expected.is_none() { "1" } else { "0" })
                .arg(expected.unwrap_or_default())
                .arg(new);
        };
        let mut evalsha = redis::cmd("EVALSHA");
        args(evalsha.arg(redis::Script::new(CAS_SCRIPT).get_hash()));
        let mut result = self.query(link, CallKind::Mutation, &evalsha).await;
        if matches!(&result, Err(e) if e.tag == "no-script") {
            let mut eval = redis::cmd("EVAL");
            args(eval.arg(CAS_SCRIPT));
            result = self.query(link, CallKind::Mutation, &eval).await;
        }
        match result {
            Ok(Value::Int(1)) => Ok(WriteReply {
                applied: true,
                meta: None,
            }),
            Ok(Value::Int(0)) => Ok(WriteReply {
                applied: false,
                meta: None,
            }),
            Ok(other) => Err(CallError::bad_response(
                CallKind::Mutation,
                format!("the cas script answered {other:?}"),
            )),
            Err(e) => {
                if is_not_leader(&e) || !e.is_definite() {
                    self.forget_script_node();
                }
                Err(e)
            }
        }
    }

    /// `SCAN … MATCH` until the cursor is 0, keeping the keys in `[start, end)`.
    async fn scan_keys(&self, start: &[u8], end: &[u8]) -> CallResult<Vec<Vec<u8>>> {
        let pattern = match_pattern(start, end);
        let mut keys = BTreeSet::new();
        let mut cursor = 0u64;
        for _ in 0..MAX_SCAN_PAGES {
            let page = self
                .query(
                    self.own,
                    CallKind::Read,
                    redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(&pattern)
                        .arg("COUNT")
                        .arg(SCAN_COUNT),
                )
                .await?;
            let (next, page_keys) = scan_page(page)?;
            keys.extend(page_keys.into_iter().filter(|k| in_range(k, start, end)));
            if next == 0 {
                return Ok(keys.into_iter().collect());
            }
            cursor = next;
        }
        Err(CallError::bad_response(
            CallKind::Read,
            format!("SCAN did not return to cursor 0 within {MAX_SCAN_PAGES} pages"),
        ))
    }

    /// `MGET` of the attempted keys in `[start, end)`, in batches; absent keys are skipped.
    async fn mget_range(&self, start: &[u8], end: &[u8]) -> CallResult<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut pairs = Vec::new();
        for batch in self.attempted.in_range(start, end).chunks(MGET_BATCH) {
            let values = self.get_batch(batch).await?;
            if values.len() != batch.len() {
                return Err(CallError::bad_response(
                    CallKind::Read,
                    format!(
                        "{} keys read, {} values answered",
                        batch.len(),
                        values.len()
                    ),
                ));
            }
            for (k, v) in batch.iter().zip(values) {
                if let Some(v) = optional_bytes(v, "MGET")? {
                    pairs.push((k.clone(), v));
                }
            }
        }
        Ok(pairs)
    }

    /// One batch's values: `MGET`, or, on a server without it (elastickv d9a031d answers
    /// `ERR unsupported command 'MGET'`, `adapter/redis.go` ~837), the batch's `GET`s in
    /// one pipeline from then on.
    async fn get_batch(&self, batch: &[Vec<u8>]) -> CallResult<Vec<Value>> {
        if !self.no_mget.load(std::sync::atomic::Ordering::Relaxed) {
            let mut cmd = redis::cmd("MGET");
            for k in batch {
                cmd.arg(k.as_slice());
            }
            match self.query(self.own, CallKind::Read, &cmd).await {
                Ok(Value::Array(values)) => return Ok(values),
                Ok(other) => {
                    return Err(CallError::bad_response(
                        CallKind::Read,
                        format!("MGET answered {other:?}"),
                    ))
                }
                Err(e) if e.tag == "unknown-command" => self
                    .no_mget
                    .store(true, std::sync::atomic::Ordering::Relaxed),
                Err(e) => return Err(e),
            }
        }
        let mut pipe = redis::pipe();
        for k in batch {
            pipe.cmd("GET").arg(k.as_slice());
        }
        self.query_pipe(self.own, CallKind::Read, &pipe).await
    }

    async fn scan_range(&self, start: &[u8], end: &[u8], limit: u64) -> CallResult<ScanReply> {
        let mut pairs = match self.options.set_read {
            SetRead::Scan => self
                .scan_keys(start, end)
                .await?
                .into_iter()
                .map(|k| (k, Vec::new()))
                .collect(),
            SetRead::Mget => self.mget_range(start, end).await?,
        };
        if limit > 0 {
            pairs.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        }
        Ok(ScanReply {
            pairs,
            metas: vec![],
        })
    }

    async fn ping(&self) -> CallResult<GroupStatus> {
        self.query(self.own, CallKind::Read, &redis::cmd("PING"))
            .await?;
        Ok(GroupStatus {
            group: 1,
            node_id: self.node.clone(),
            is_leader: true,
            state: "LEADER".into(),
            leader_id: self.node.clone(),
            leader_address: self.links[self.own].addr.clone(),
            ..Default::default()
        })
    }
}

/// A bulk string or nil; anything else is a bad response.
fn optional_bytes(value: Value, command: &str) -> CallResult<Option<Vec<u8>>> {
    match value {
        Value::Nil => Ok(None),
        Value::BulkString(b) => Ok(Some(b)),
        Value::SimpleString(s) => Ok(Some(s.into_bytes())),
        other => Err(CallError::bad_response(
            CallKind::Read,
            format!("{command} answered {other:?}"),
        )),
    }
}

/// A `SCAN` reply: the next cursor and the page's keys.
pub fn scan_page(value: Value) -> CallResult<(u64, Vec<Vec<u8>>)> {
    let bad = |what: &str| CallError::bad_response(CallKind::Read, format!("SCAN answered {what}"));
    let Value::Array(mut parts) = value else {
        return Err(bad("something other than an array"));
    };
    if parts.len() != 2 {
        return Err(bad(&format!("an array of {} items", parts.len())));
    }
    let keys = match parts.pop() {
        Some(Value::Array(keys)) => keys
            .into_iter()
            .map(|k| optional_bytes(k, "SCAN")?.ok_or_else(|| bad("a nil key")))
            .collect::<CallResult<Vec<_>>>()?,
        _ => return Err(bad("a page without a key array")),
    };
    let cursor = match parts.pop() {
        Some(Value::BulkString(c)) => std::str::from_utf8(&c).ok().and_then(|c| c.parse().ok()),
        Some(Value::Int(c)) => u64::try_from(c).ok(),
        _ => None,
    };
    Ok((
        cursor.ok_or_else(|| bad("a cursor that is not a number"))?,
        keys,
    ))
}

/// The glob `SCAN` matches for `[start, end)`: the bounds' common prefix, escaped, then `*`.
pub fn match_pattern(start: &[u8], end: &[u8]) -> Vec<u8> {
    let common = if end.is_empty() {
        start.len()
    } else {
        start.iter().zip(end).take_while(|(a, b)| a == b).count()
    };
    let mut pattern = Vec::with_capacity(common + 2);
    for &b in &start[..common] {
        if matches!(b, b'*' | b'?' | b'[' | b']' | b'\\') {
            pattern.push(b'\\');
        }
        pattern.push(b);
    }
    pattern.push(b'*');
    pattern
}

fn in_range(key: &[u8], start: &[u8], end: &[u8]) -> bool {
    key >= start && (end.is_empty() || key < end)
}

fn unsupported(what: &str) -> CallError {
    CallError::new(
        Certainty::Definite,
        "unimplemented",
        format!("the Redis protocol has no {what}"),
    )
}

impl KvTarget for RedisClient {
    fn as_txn(&self) -> Option<&dyn super::TxnClient> {
        Some(self)
    }

    fn as_zset(&self) -> Option<&dyn super::ZsetClient> {
        Some(self)
    }

    fn node(&self) -> &str {
        &self.node
    }
    fn read(&self, key: &[u8]) -> BoxFuture<'_, CallResult<ReadReply>> {
        let key = key.to_vec();
        async move { self.get(&key).await }.boxed()
    }
    fn write(&self, key: &[u8], value: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        let (key, value) = (key.to_vec(), value.to_vec());
        async move { self.set(&key, &value).await }.boxed()
    }
    fn as_cas(&self) -> Option<&dyn super::CasClient> {
        Some(self)
    }
    fn delete(&self, key: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        let key = key.to_vec();
        async move { self.del(&key).await }.boxed()
    }
    fn scan(&self, start: &[u8], end: &[u8], limit: u64) -> BoxFuture<'_, CallResult<ScanReply>> {
        let (start, end) = (start.to_vec(), end.to_vec());
        async move { self.scan_range(&start, &end, limit).await }.boxed()
    }
    fn list_routes(&self) -> BoxFuture<'_, CallResult<CatalogSnapshot>> {
        async { Err(unsupported("route catalog")) }.boxed()
    }
    fn split(&self, _request: SplitRequest) -> BoxFuture<'_, CallResult<SplitReply>> {
        async { Err(unsupported("range splits")) }.boxed()
    }
    fn status(&self, _group: u64) -> BoxFuture<'_, CallResult<GroupStatus>> {
        async move { self.ping().await }.boxed()
    }
}

impl super::CasClient for RedisClient {
    fn cas(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: &[u8],
    ) -> BoxFuture<'_, CallResult<WriteReply>> {
        let (key, expected, new) = (key.to_vec(), expected.map(<[u8]>::to_vec), new.to_vec());
        async move { self.compare_and_set(&key, expected.as_deref(), &new).await }.boxed()
    }
}

/// Makes [`RedisClient`]s: a fresh connection per process, all sharing the run's attempted keys.
pub struct RedisConnector {
    /// Every node's Redis endpoint (name as in the history, Redis `ip:port`).
    pub nodes: Vec<NodeEndpoint>,
    pub options: RedisOptions,
    pub attempted: Arc<AttemptedKeys>,
}

impl RedisConnector {
    pub fn new(nodes: Vec<NodeEndpoint>, options: RedisOptions) -> RedisConnector {
        RedisConnector {
            nodes,
            options,
            attempted: Arc::default(),
        }
    }

    /// The concrete client (for targets that combine it with another protocol).
    pub fn client(&self, node: &NodeEndpoint) -> anyhow::Result<RedisClient> {
        RedisClient::new(node, &self.nodes, self.options, self.attempted.clone())
    }
}

impl Connector for RedisConnector {
    fn connect(&self, node: &NodeEndpoint) -> anyhow::Result<Arc<dyn KvTarget>> {
        Ok(Arc::new(self.client(node)?))
    }
}

pub mod txn;
pub mod zset;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod txn_tests;

//! Rate limiting and time limits of the processes, on tokio's paused clock with an
//! in-memory store behind the `KvTarget` trait (no network, deterministic timing).

mod common;

use analysis::history::CatalogSnapshot;
use common::{assert_well_formed, VecSink};
use futures::future::BoxFuture;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use workloads::client::{
    CallResult, GroupStatus, ReadReply, ScanReply, SplitReply, SplitRequest, WriteReply,
};
use workloads::{
    run_workload_with, CallError, Certainty, Concurrency, Connector, KvTarget, NodeEndpoint, Stats,
    WorkloadConfig, WorkloadKind,
};

/// An in-memory store whose calls take `latency` (virtual time), or, when `varied`, a
/// latency that changes from call to call so concurrent operations apply out of order.
struct MemTarget {
    node: String,
    latency: Duration,
    varied: bool,
    calls: Arc<AtomicU64>,
    data: Arc<Mutex<BTreeMap<Vec<u8>, Vec<u8>>>>,
}

impl MemTarget {
    async fn delay(&self) {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let d = if self.varied {
            self.latency.mul_f64(((n * 37) % 10) as f64 / 5.0)
        } else {
            self.latency
        };
        tokio::time::sleep(d).await;
    }

    fn unsupported<T: Send + 'static>(&self) -> BoxFuture<'_, CallResult<T>> {
        Box::pin(async {
            Err(CallError::new(
                Certainty::Definite,
                "unimplemented",
                "memory store",
            ))
        })
    }
}

impl KvTarget for MemTarget {
    fn node(&self) -> &str {
        &self.node
    }
    fn read(&self, key: &[u8]) -> BoxFuture<'_, CallResult<ReadReply>> {
        let key = key.to_vec();
        Box::pin(async move {
            self.delay().await;
            Ok(ReadReply {
                value: self.data.lock().unwrap().get(&key).cloned(),
                meta: None,
            })
        })
    }
    fn write(&self, key: &[u8], value: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        let (key, value) = (key.to_vec(), value.to_vec());
        Box::pin(async move {
            self.delay().await;
            self.data.lock().unwrap().insert(key, value);
            Ok(WriteReply {
                applied: true,
                meta: None,
            })
        })
    }
    fn as_cas(&self) -> Option<&dyn workloads::client::CasClient> {
        Some(self)
    }
    fn delete(&self, _key: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        self.unsupported()
    }
    fn scan(&self, start: &[u8], end: &[u8], _limit: u64) -> BoxFuture<'_, CallResult<ScanReply>> {
        let (start, end) = (start.to_vec(), end.to_vec());
        Box::pin(async move {
            self.delay().await;
            let data = self.data.lock().unwrap();
            let pairs = data
                .range(start..end)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            Ok(ScanReply {
                pairs,
                metas: vec![],
            })
        })
    }
    fn list_routes(&self) -> BoxFuture<'_, CallResult<CatalogSnapshot>> {
        self.unsupported()
    }
    fn split(&self, _request: SplitRequest) -> BoxFuture<'_, CallResult<SplitReply>> {
        self.unsupported()
    }
    fn status(&self, _group: u64) -> BoxFuture<'_, CallResult<GroupStatus>> {
        self.unsupported()
    }
}

impl workloads::client::CasClient for MemTarget {
    fn cas(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: &[u8],
    ) -> BoxFuture<'_, CallResult<WriteReply>> {
        let (key, expected, new) = (key.to_vec(), expected.map(<[u8]>::to_vec), new.to_vec());
        Box::pin(async move {
            self.delay().await;
            let mut data = self.data.lock().unwrap();
            let applied = data.get(&key) == expected.as_ref();
            if applied {
                data.insert(key, new);
            }
            Ok(WriteReply {
                applied,
                meta: None,
            })
        })
    }
}

struct MemConnector {
    latency: Duration,
    varied: bool,
    calls: Arc<AtomicU64>,
    data: Arc<Mutex<BTreeMap<Vec<u8>, Vec<u8>>>>,
}

impl Connector for MemConnector {
    fn connect(&self, node: &NodeEndpoint) -> anyhow::Result<Arc<dyn KvTarget>> {
        Ok(Arc::new(MemTarget {
            node: node.name.clone(),
            latency: self.latency,
            varied: self.varied,
            calls: self.calls.clone(),
            data: self.data.clone(),
        }))
    }
}

fn nodes() -> Vec<NodeEndpoint> {
    ["n1", "n2", "n3"]
        .iter()
        .map(|n| NodeEndpoint {
            name: n.to_string(),
            addr: "unused:1".into(),
        })
        .collect()
}

async fn run(cfg: &WorkloadConfig, latency: Duration) -> (u64, Vec<analysis::history::Op>) {
    run_store(cfg, latency, false).await
}

async fn run_store(
    cfg: &WorkloadConfig,
    latency: Duration,
    varied: bool,
) -> (u64, Vec<analysis::history::Op>) {
    let connector: Arc<dyn Connector> = Arc::new(MemConnector {
        latency,
        varied,
        calls: Default::default(),
        data: Default::default(),
    });
    let sink = VecSink::new();
    let summary = run_workload_with(
        cfg,
        connector,
        &nodes(),
        sink.clone(),
        Arc::new(Stats::new()),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    (summary.stats.invoked, sink.ops())
}

#[tokio::test(start_paused = true)]
async fn total_rate_is_shared_by_all_processes() {
    let cfg = WorkloadConfig {
        rate: 50.0,
        time_limit_s: 4.0,
        concurrency: Concurrency::PerNode(4),
        ..WorkloadConfig::default()
    };
    let (invoked, ops) = run(&cfg, Duration::from_millis(5)).await;
    assert_well_formed(&ops);
    // 4 s at 50 ops/s, jitter < one interval: 199 or 200 starts.
    assert!((199..=200).contains(&invoked), "invoked {invoked}");
}

#[tokio::test(start_paused = true)]
async fn without_a_rate_the_processes_are_the_limit() {
    let cfg = WorkloadConfig {
        rate: 0.0,
        time_limit_s: 1.0,
        concurrency: Concurrency::Total(2),
        ..WorkloadConfig::default()
    };
    let (invoked, _) = run(&cfg, Duration::from_millis(10)).await;
    // Two processes, 10 ms per op, 1 s.
    assert!((200..=202).contains(&invoked), "invoked {invoked}");
}

#[tokio::test(start_paused = true)]
async fn a_slow_store_caps_throughput_without_bursts_afterwards() {
    // 1 process, 100 ops/s asked, 50 ms per op: the store allows 20 ops/s and the
    // schedule does not bank the missed slots, so each op starts when the previous ended
    // plus a jitter in [0, 10 ms): 2 s / 50–60 ms per op.
    let cfg = WorkloadConfig {
        rate: 100.0,
        time_limit_s: 2.0,
        concurrency: Concurrency::Total(1),
        ..WorkloadConfig::default()
    };
    let (invoked, _) = run(&cfg, Duration::from_millis(50)).await;
    assert!((33..=40).contains(&invoked), "invoked {invoked}");
}

#[tokio::test(start_paused = true)]
async fn hotspot_history_values_follow_the_conventions() {
    let cfg = WorkloadConfig {
        rate: 200.0,
        time_limit_s: 5.0,
        scan_every: 50,
        ..WorkloadConfig::defaults(WorkloadKind::Hotspot)
    };
    // 0–90 ms per op at 200 ops/s: ops overlap and apply out of order, so concurrent
    // writes to the three celebrity keys make some compare-and-sets miss.
    let (_, ops) = run_store(&cfg, Duration::from_millis(50), true).await;
    assert_well_formed(&ops);
    let mut added = std::collections::HashSet::new();
    let mut invoked_adds = std::collections::HashSet::new();
    for op in &ops {
        if op.f == "add" && op.kind == analysis::history::OpType::Invoke {
            invoked_adds.insert(op.key.clone().unwrap());
        }
        if op.kind != analysis::history::OpType::Ok {
            continue;
        }
        match op.f.as_str() {
            "add" => {
                assert!(op.value.is_i64());
                assert!(added.insert(op.key.clone().unwrap()));
            }
            "scan" => {
                // Every key a scan returns was inserted by an add invoked before it completed.
                for k in op.value.as_array().unwrap() {
                    assert!(
                        invoked_adds.contains(k.as_str().unwrap()),
                        "{k} scanned but never added"
                    );
                }
            }
            "cas" => assert_eq!(op.value.as_array().map(Vec::len), Some(2)),
            "read" => assert!(op.value.is_null() || op.value.is_i64()),
            "write" => assert!(op.value.is_i64()),
            other => panic!("unexpected f {other}"),
        }
    }
    assert!(ops.iter().any(|o| o.f == "scan"
        && o.kind == analysis::history::OpType::Ok
        && !o.value.as_array().unwrap().is_empty()));
    // A successful cas is a real compare-and-set on the memory store, so some fail too.
    let cas_fails = ops
        .iter()
        .filter(|o| o.f == "cas" && o.kind == analysis::history::OpType::Fail)
        .count();
    assert!(cas_fails > 0);
    assert!(ops
        .iter()
        .filter(|o| o.f == "cas" && o.kind == analysis::history::OpType::Fail)
        .all(|o| o.error.as_deref() == Some("cas-mismatch")));
}

//! After a run, the version order elastickv itself holds for a key with a stale read: the
//! versions around the write the read missed and around the read, each with its commit
//! timestamp, found with `RawLatestCommitTS` and `RawGet` at explicit timestamps
//! (elastickv `proto/service.proto` ~7–9, `adapter/grpc.go` ~101–156).
//!
//! elastickv's timestamps are HLC values: Unix milliseconds shifted left by 16 bits plus a
//! logical counter (`kv/hlc.go` ~20–24), and `RawGet` at `ts` returns the newest version
//! committed at or before `ts`. So the commit timestamp of the version visible at `ts` is
//! the smallest `t ≤ ts` at which the same value is still visible: an exponential step
//! back, then a binary search. Values are compared as bytes; a value written twice in a
//! row reads as one version (the register workload never writes a value twice).
//!
//! Invariants: at most [`VERSIONS_PER_ANCHOR`] versions per anchor and [`CALLS_PER_KEY`]
//! calls per key; a failed call ends that key's probe with a `note`, never the run.

use serde_json::{json, Value};
use workloads::client::KvTarget;
use workloads::CallError;

/// Bits of the HLC's logical counter.
pub const HLC_LOGICAL_BITS: u32 = 16;
/// Versions walked back from each anchor.
pub const VERSIONS_PER_ANCHOR: usize = 4;
/// Most calls one key's probe may make.
pub const CALLS_PER_KEY: usize = 2000;

/// Where to look, in history nanoseconds: just after the missed write was acknowledged,
/// and at the read's invoke.
#[derive(Debug, Clone)]
pub struct ProbeRequest {
    pub key: String,
    pub anchors_ns: Vec<u64>,
}

/// One version the store holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub commit_ts: u64,
    pub value: Option<Vec<u8>>,
}

struct Walker<'a> {
    target: &'a dyn KvTarget,
    key: &'a [u8],
    calls: usize,
}

impl Walker<'_> {
    async fn value_at(&mut self, ts: u64) -> Result<Option<Vec<u8>>, String> {
        self.calls += 1;
        if self.calls > CALLS_PER_KEY {
            return Err(format!("stopped after {CALLS_PER_KEY} calls"));
        }
        self.target.read_at(self.key, ts).await.map(|r| r.value).map_err(|e: CallError| format!("RawGet at ts {ts}: {}", e.message))
    }

    /// The version visible at `ts`: its value and the smallest timestamp showing it.
    async fn version_at(&mut self, ts: u64) -> Result<Version, String> {
        let value = self.value_at(ts).await?;
        if value.is_none() {
            return Ok(Version { commit_ts: 0, value });
        }
        let (mut hi, mut step) = (ts, 1u64 << HLC_LOGICAL_BITS);
        let mut lo = loop {
            let probe = hi.saturating_sub(step);
            if probe == 0 || self.value_at(probe).await? != value {
                break probe;
            }
            hi = probe;
            step = step.saturating_mul(2);
        };
        // value_at(lo) != value (or lo == 0), value_at(hi) == value.
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.value_at(mid).await? == value {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Ok(Version { commit_ts: hi, value })
    }

    /// Up to [`VERSIONS_PER_ANCHOR`] versions visible at or before `ts`, newest first.
    async fn walk_back(&mut self, ts: u64, out: &mut Vec<Version>) -> Result<(), String> {
        let mut at = ts;
        for _ in 0..VERSIONS_PER_ANCHOR {
            let v = self.version_at(at).await?;
            if v.value.is_none() {
                break;
            }
            let first = v.commit_ts <= 1;
            at = v.commit_ts.saturating_sub(1);
            if !out.contains(&v) {
                out.push(v);
            }
            if first {
                break;
            }
        }
        Ok(())
    }
}

/// The HLC timestamp of history time `ns` (the last logical tick of that millisecond).
pub fn hlc_of(start_unix_ns: u64, ns: u64) -> u64 {
    ((start_unix_ns.saturating_add(ns) / 1_000_000) << HLC_LOGICAL_BITS) | ((1 << HLC_LOGICAL_BITS) - 1)
}

fn version_json(v: &Version, start_unix_ns: u64) -> Value {
    let ms = v.commit_ts >> HLC_LOGICAL_BITS;
    let text = v.value.as_deref().map(|b| String::from_utf8_lossy(b).into_owned());
    json!({
        "commit_ts": v.commit_ts,
        "hlc_ms": ms,
        "hlc_logical": v.commit_ts & ((1 << HLC_LOGICAL_BITS) - 1),
        // The HLC's wall-clock part on the history's clock (same host, same clock).
        "at_s": (i128::from(ms) * 1_000_000 - i128::from(start_unix_ns)) as f64 / 1e9,
        "value": text.map(|t| serde_json::from_str::<Value>(&t).unwrap_or(Value::String(t))),
    })
}

/// Probes one key through `target` (whose node name is recorded).
pub async fn probe_key(target: &dyn KvTarget, request: &ProbeRequest, start_unix_ns: u64) -> Value {
    let key = request.key.as_bytes();
    let mut out = json!({ "key": request.key, "node": target.node() });
    let latest = match target.latest_commit_ts(key).await {
        Ok(ts) => ts,
        Err(e) => {
            out["note"] = format!("RawLatestCommitTS failed: {}", e.message).into();
            return out;
        }
    };
    out["latest_commit_ts"] = latest.into();
    let mut walker = Walker { target, key, calls: 1 };
    let mut versions = Vec::new();
    let mut note = None;
    if let Some(latest) = latest {
        let tops = request.anchors_ns.iter().map(|&ns| hlc_of(start_unix_ns, ns).min(latest)).chain([latest]);
        for top in tops {
            if let Err(why) = walker.walk_back(top, &mut versions).await {
                note = Some(why);
                break;
            }
        }
    }
    versions.sort_by_key(|v| std::cmp::Reverse(v.commit_ts));
    out["versions"] = versions.iter().map(|v| version_json(v, start_unix_ns)).collect::<Vec<_>>().into();
    out["calls"] = walker.calls.into();
    if let Some(n) = note {
        out["note"] = n.into();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::future::BoxFuture;
    use futures::FutureExt;
    use workloads::client::{CallResult, CatalogStream, GroupStatus, ReadReply, ScanReply, SplitReply, SplitRequest, WriteReply};

    /// A versioned register: (commit ts, value) pairs, answering reads as of a timestamp;
    /// with `down`, every call fails.
    struct Mvcc(Vec<(u64, &'static str)>, bool);

    fn nope<T>() -> BoxFuture<'static, CallResult<T>> {
        async { Err(CallError::new(workloads::Certainty::Definite, "unimplemented", "test")) }.boxed()
    }

    impl KvTarget for Mvcc {
        fn node(&self) -> &str {
            "n9"
        }
        fn read(&self, _: &[u8]) -> BoxFuture<'_, CallResult<ReadReply>> {
            nope()
        }
        fn read_at(&self, _: &[u8], ts: u64) -> BoxFuture<'_, CallResult<ReadReply>> {
            let v = self.0.iter().filter(|(t, _)| *t <= ts).max_by_key(|(t, _)| *t).map(|(_, v)| v.as_bytes().to_vec());
            async move { Ok(ReadReply { value: v, meta: None }) }.boxed()
        }
        fn latest_commit_ts(&self, _: &[u8]) -> BoxFuture<'_, CallResult<Option<u64>>> {
            if self.1 {
                return nope();
            }
            let ts = self.0.iter().map(|(t, _)| *t).max();
            async move { Ok(ts) }.boxed()
        }
        fn write(&self, _: &[u8], _: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
            nope()
        }
        fn cas(&self, _: &[u8], _: Option<&[u8]>, _: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
            nope()
        }
        fn delete(&self, _: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
            nope()
        }
        fn scan(&self, _: &[u8], _: &[u8], _: u64) -> BoxFuture<'_, CallResult<ScanReply>> {
            nope()
        }
        fn list_routes(&self) -> BoxFuture<'_, CallResult<analysis::history::CatalogSnapshot>> {
            nope()
        }
        fn split(&self, _: SplitRequest) -> BoxFuture<'_, CallResult<SplitReply>> {
            nope()
        }
        fn status(&self, _: u64) -> BoxFuture<'_, CallResult<GroupStatus>> {
            nope()
        }
        fn watch_catalog(&self, _: u64) -> BoxFuture<'_, CallResult<CatalogStream>> {
            nope()
        }
    }

    const START_NS: u64 = 1_700_000_000_000_000_000;

    fn ts(ms_after_start: u64, logical: u64) -> u64 {
        ((START_NS / 1_000_000 + ms_after_start) << HLC_LOGICAL_BITS) | logical
    }

    #[tokio::test]
    async fn finds_each_versions_exact_commit_ts_around_the_anchors() {
        let store = Mvcc(vec![(ts(100, 3), "1"), (ts(110, 0), "2"), (ts(110, 7), "3"), (ts(5000, 1), "4"), (ts(9000, 2), "5")], false);
        let request = ProbeRequest { key: "k".into(), anchors_ns: vec![112_000_000] };
        let out = probe_key(&store, &request, START_NS).await;
        let versions: Vec<(u64, Value)> = out["versions"].as_array().unwrap().iter().map(|v| (v["commit_ts"].as_u64().unwrap(), v["value"].clone())).collect();
        assert_eq!(
            versions,
            vec![(ts(9000, 2), json!(5)), (ts(5000, 1), json!(4)), (ts(110, 7), json!(3)), (ts(110, 0), json!(2)), (ts(100, 3), json!(1))],
            "{out:#}"
        );
        assert_eq!(out["latest_commit_ts"], ts(9000, 2));
        assert_eq!(out["versions"][2]["at_s"], 0.11);
        assert!(out.get("note").is_none());
    }

    #[tokio::test]
    async fn an_absent_key_has_no_versions_and_a_failing_store_leaves_a_note() {
        let request = ProbeRequest { key: "k".into(), anchors_ns: vec![1] };
        let out = probe_key(&Mvcc(vec![], false), &request, START_NS).await;
        assert_eq!(out["versions"], json!([]));
        assert_eq!(out["latest_commit_ts"], Value::Null);
        let out = probe_key(&Mvcc(vec![(5, "1")], true), &request, START_NS).await;
        assert!(out["note"].as_str().unwrap().starts_with("RawLatestCommitTS failed"), "{out:#}");
    }
}

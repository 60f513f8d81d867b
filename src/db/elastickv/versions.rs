//! After a run, the version order elastickv itself holds for a key with a stale read: the
//! versions around the value the read returned and around the acknowledged write it
//! missed, each with its commit timestamp, found with `RawLatestCommitTS` and `RawGet` at
//! explicit timestamps (elastickv `proto/service.proto` ~7–9, `adapter/grpc.go` ~101–156).
//!
//! elastickv's timestamps are HLC values: milliseconds shifted left by 16 bits plus a
//! logical counter (`kv/hlc.go` ~32), and `RawGet` at `ts` returns the newest version
//! committed at or before `ts`. The HLC's physical part is not the wall clock (in our runs
//! it was seconds ahead), so versions are found by value, not by time: the register
//! workload writes increasing integers per key, so a binary search over timestamps for the
//! first version whose value is at least the one sought lands on it, or next to it when
//! the store's order is not the written order — which is what the walk around it shows.
//! A version's commit timestamp is the smallest `t` at which its value is visible
//! (exponential step back, then binary search). Values are compared as bytes.
//!
//! A sought value absent from the versions around it is then looked for in a *sweep* of
//! every version of the HLC milliseconds those versions were stamped in: while the HLC's
//! physical part sits at the Raft-agreed ceiling, every node stamps within that one
//! millisecond with its own logical counter, so a write stamped by a lagging node sits
//! below versions acknowledged before it — the sweep finds it there (`found_by_sweep`),
//! or shows that no version of that millisecond holds it (`sweeps[].complete`).
//!
//! Invariants: at most [`VERSIONS_AROUND`] versions each side of each value sought and
//! [`CALLS_PER_KEY`] calls per key; a failed call ends that key's probe with a `note`,
//! never the run.

use serde_json::{json, Value};
use workloads::client::{KvTarget, Lacking, VersionedReads};

/// Bits of the HLC's logical counter.
pub const HLC_LOGICAL_BITS: u32 = 16;
/// Versions listed before and after each value sought.
pub const VERSIONS_AROUND: usize = 3;
/// elastickv's text for a read below the compaction horizon (`store.ErrReadTSCompacted`).
const COMPACTED: &str = "read timestamp has been compacted";
/// Most calls one key's probe may make.
pub const CALLS_PER_KEY: usize = 3000;

/// What to look for: the values (history JSON, integers for the register workload) whose
/// neighbourhood in the store's version order is shown.
#[derive(Debug, Clone)]
pub struct ProbeRequest {
    pub key: String,
    pub values: Vec<Value>,
}

/// One version the store holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub commit_ts: u64,
    pub value: Option<Vec<u8>>,
}

/// The register workload's integer of a stored value (`None` for absent or non-integers).
fn number(value: &Option<Vec<u8>>) -> Option<i64> {
    value.as_deref().and_then(|b| std::str::from_utf8(b).ok()).and_then(|t| t.trim().parse().ok())
}

struct Walker<'a> {
    target: &'a dyn VersionedReads,
    key: &'a [u8],
    calls: usize,
    latest: u64,
    /// Some timestamp asked for was below the store's compaction horizon.
    compacted: bool,
}

impl Walker<'_> {
    async fn value_at(&mut self, ts: u64) -> Result<Option<Vec<u8>>, String> {
        self.calls += 1;
        if self.calls > CALLS_PER_KEY {
            return Err(format!("stopped after {CALLS_PER_KEY} calls"));
        }
        match self.target.read_at(self.key, ts).await {
            Ok(r) => Ok(r.value),
            // Below the compaction horizon nothing can be seen: treat it as before the
            // first version (`store.ErrReadTSCompacted`, `adapter/grpc.go` ~121–122).
            Err(e) if e.message.contains(COMPACTED) => {
                self.compacted = true;
                Ok(None)
            }
            Err(e) => Err(format!("RawGet at ts {ts}: {}", e.message)),
        }
    }

    /// The smallest timestamp in `(lo, hi]` showing `value`, given that `lo` does not and
    /// `hi` does.
    async fn boundary(&mut self, mut lo: u64, mut hi: u64, value: &Option<Vec<u8>>) -> Result<u64, String> {
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if &self.value_at(mid).await? == value {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Ok(hi)
    }

    /// The version visible at `ts`, with its commit timestamp.
    async fn version_at(&mut self, ts: u64) -> Result<Version, String> {
        let value = self.value_at(ts).await?;
        if value.is_none() {
            return Ok(Version { commit_ts: 0, value });
        }
        let (mut hi, mut step) = (ts, 1u64 << HLC_LOGICAL_BITS);
        let lo = loop {
            let probe = hi.saturating_sub(step);
            if probe == 0 || self.value_at(probe).await? != value {
                break probe;
            }
            hi = probe;
            step = step.saturating_mul(2);
        };
        let commit_ts = self.boundary(lo, hi, &value).await?;
        Ok(Version { commit_ts, value })
    }

    /// The version after `v` (`None` when `v` is the newest).
    async fn next_version(&mut self, v: &Version) -> Result<Option<Version>, String> {
        let (mut lo, mut step) = (v.commit_ts, 1u64 << HLC_LOGICAL_BITS);
        loop {
            let probe = lo.saturating_add(step).min(self.latest);
            if probe <= lo {
                return Ok(None);
            }
            let value = self.value_at(probe).await?;
            if value != v.value {
                // The next version starts in (lo, probe]; it may not be the one at probe.
                let mut hi = probe;
                let mut first = value;
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2;
                    let at = self.value_at(mid).await?;
                    if at == v.value {
                        lo = mid;
                    } else {
                        hi = mid;
                        first = at;
                    }
                }
                return Ok(Some(Version { commit_ts: hi, value: first }));
            }
            lo = probe;
            step = step.saturating_mul(2);
        }
    }

    /// The smallest timestamp whose visible value is at least `target` (by the register's
    /// integers), assuming the versions ascend.
    async fn first_at_least(&mut self, target: i64) -> Result<u64, String> {
        let (mut lo, mut hi) = (0, self.latest);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if number(&self.value_at(mid).await?).is_some_and(|n| n >= target) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Ok(hi)
    }

    /// [`VERSIONS_AROUND`] versions each side of the one visible at `ts`, added to `out`.
    async fn around(&mut self, ts: u64, out: &mut Vec<Version>) -> Result<(), String> {
        let found = self.version_at(ts).await?;
        let mut at = found.commit_ts;
        for _ in 0..=VERSIONS_AROUND {
            let v = self.version_at(at).await?;
            if v.value.is_none() {
                break;
            }
            at = v.commit_ts.saturating_sub(1);
            let first = v.commit_ts <= 1;
            push(out, v);
            if first {
                break;
            }
        }
        let mut current = found;
        for _ in 0..VERSIONS_AROUND {
            match self.next_version(&current).await? {
                Some(next) => {
                    push(out, next.clone());
                    current = next;
                }
                None => break,
            }
        }
        Ok(())
    }
}

impl Walker<'_> {
    /// Every version committed in HLC millisecond `ms`, oldest first, until the call budget
    /// ends it (`complete` false then).
    /// Also returns the millisecond of the newest version before the window (`None` when
    /// there is none), where a node whose clock lagged further would have stamped.
    async fn sweep_millisecond(&mut self, ms: u64) -> (Vec<Version>, bool, Option<u64>) {
        let start = ms << HLC_LOGICAL_BITS;
        let end = start | ((1 << HLC_LOGICAL_BITS) - 1);
        let mut found = Vec::new();
        // The version visible just before the window opens is the walk's starting point.
        let Ok(mut current) = self.version_at(start.saturating_sub(1)).await else {
            return (found, false, None);
        };
        let before = current.value.is_some().then_some(current.commit_ts >> HLC_LOGICAL_BITS);
        loop {
            match self.next_version(&current).await {
                Ok(Some(next)) if next.commit_ts <= end => {
                    found.push(next.clone());
                    current = next;
                }
                Ok(_) => return (found, true, before),
                Err(_) => return (found, false, before),
            }
        }
    }
}

/// Most HLC milliseconds swept per key.
pub const SWEPT_MS_PER_KEY: usize = 4;

/// For each sought value not among `versions`, sweeps the HLC milliseconds of the versions
/// listed around it (where a write acknowledged among them was stamped), newest first, then
/// the millisecond before each swept one, until it is found; versions found that way join
/// `versions` (and `found_by_sweep`).
async fn sweep_for_missing(walker: &mut Walker<'_>, sought: &[i64], versions: &mut Vec<Version>) -> Vec<Value> {
    let mut candidates: Vec<u64> = versions.iter().map(|v| v.commit_ts >> HLC_LOGICAL_BITS).collect();
    candidates.sort_unstable_by(|a, b| b.cmp(a));
    candidates.dedup();
    let mut sweeps = Vec::new();
    let mut swept: Vec<u64> = Vec::new();
    for &target in sought {
        let mut queue = candidates.clone();
        while let Some(ms) = (!queue.is_empty()).then(|| queue.remove(0)) {
            if versions.iter().any(|v| number(&v.value) == Some(target)) || swept.len() >= SWEPT_MS_PER_KEY {
                break;
            }
            if swept.contains(&ms) {
                continue;
            }
            swept.push(ms);
            let (window, complete, before) = walker.sweep_millisecond(ms).await;
            queue.extend(before.filter(|b| !swept.contains(b)));
            let holds: Vec<u64> = window.iter().filter(|v| number(&v.value) == Some(target)).map(|v| v.commit_ts).collect();
            sweeps.push(json!({ "sought": target, "hlc_ms": ms, "versions": window.len(), "complete": complete, "found_at": holds }));
            for v in window.into_iter().filter(|v| number(&v.value).is_some_and(|n| sought.contains(&n))) {
                push(versions, v);
            }
        }
    }
    sweeps
}

fn push(out: &mut Vec<Version>, v: Version) {
    if v.value.is_some() && !out.contains(&v) {
        out.push(v);
    }
}

fn version_json(v: &Version) -> Value {
    let text = v.value.as_deref().map(|b| String::from_utf8_lossy(b).into_owned());
    json!({
        "commit_ts": v.commit_ts,
        "hlc_ms": v.commit_ts >> HLC_LOGICAL_BITS,
        "hlc_logical": v.commit_ts & ((1 << HLC_LOGICAL_BITS) - 1),
        "value": text.map(|t| serde_json::from_str::<Value>(&t).unwrap_or(Value::String(t))),
    })
}

/// Probes one key through `target` (whose node name is recorded).
pub async fn probe_key(target: &dyn KvTarget, request: &ProbeRequest) -> Value {
    let key = request.key.as_bytes();
    let mut out = json!({ "key": request.key, "node": target.node(), "sought": request.values });
    let versioned = target.as_versioned().unwrap_or(&Lacking);
    let latest = match versioned.latest_commit_ts(key).await {
        Ok(ts) => ts,
        Err(e) => {
            out["note"] = format!("RawLatestCommitTS failed: {}", e.message).into();
            return out;
        }
    };
    out["latest_commit_ts"] = latest.into();
    let mut walker = Walker { target: versioned, key, calls: 1, latest: latest.unwrap_or(0), compacted: false };
    let mut versions = Vec::new();
    let mut note = None;
    let mut sought = Vec::new();
    if latest.is_some() {
        for value in &request.values {
            let Some(target) = value.as_i64() else {
                continue;
            };
            let found = match walker.first_at_least(target).await {
                Ok(ts) => {
                    sought.push(target);
                    walker.around(ts, &mut versions).await
                }
                Err(why) => Err(why),
            };
            if let Err(why) = found {
                note = Some(why);
                break;
            }
        }
    }
    if note.is_none() {
        let around: Vec<Version> = versions.clone();
        let sweeps = sweep_for_missing(&mut walker, &sought, &mut versions).await;
        if !sweeps.is_empty() {
            out["sweeps"] = sweeps.into();
        }
        out["found_by_sweep"] = versions.iter().filter(|v| !around.contains(v)).map(version_json).collect::<Vec<_>>().into();
    }
    versions.sort_by_key(|v| std::cmp::Reverse(v.commit_ts));
    out["versions"] = versions.iter().map(version_json).collect::<Vec<_>>().into();
    out["calls"] = walker.calls.into();
    // Older versions may exist but can no longer be read: the list starts at the horizon.
    out["compaction_reached"] = walker.compacted.into();
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
    use workloads::CallError;

    /// A versioned register: (commit ts, value) pairs, answering reads as of a timestamp;
    /// with `down`, every call fails. Timestamps before the first version are compacted.
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
        fn write(&self, _: &[u8], _: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
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
        fn as_versioned(&self) -> Option<&dyn VersionedReads> {
            Some(self)
        }
    }

    impl VersionedReads for Mvcc {
        fn read_at(&self, _: &[u8], ts: u64) -> BoxFuture<'_, CallResult<ReadReply>> {
            let v = self.0.iter().filter(|(t, _)| *t <= ts).max_by_key(|(t, _)| *t).map(|(_, v)| v.as_bytes().to_vec());
            let horizon = self.0.iter().map(|(t, _)| *t).min().unwrap_or(0);
            if ts < horizon {
                let compacted = CallError::new(workloads::Certainty::Definite, "failed-precondition", COMPACTED);
                return async move { Err(compacted) }.boxed();
            }
            async move { Ok(ReadReply { value: v, meta: None }) }.boxed()
        }
        fn latest_commit_ts(&self, _: &[u8]) -> BoxFuture<'_, CallResult<Option<u64>>> {
            if self.1 {
                return nope();
            }
            let ts = self.0.iter().map(|(t, _)| *t).max();
            async move { Ok(ts) }.boxed()
        }
    }

    fn ts(ms: u64, logical: u64) -> u64 {
        ((1_700_000_000_000 + ms) << HLC_LOGICAL_BITS) | logical
    }

    #[tokio::test]
    async fn lists_the_versions_around_each_value_sought_with_exact_commit_ts() {
        let versions =
            vec![(ts(100, 3), "1"), (ts(110, 0), "2"), (ts(110, 7), "3"), (ts(5000, 1), "4"), (ts(9000, 2), "5"), (ts(9000, 3), "6")];
        let store = Mvcc(versions, false);
        let request = ProbeRequest { key: "k".into(), values: vec![json!(2)] };
        let out = probe_key(&store, &request).await;
        let got: Vec<(u64, Value)> =
            out["versions"].as_array().unwrap().iter().map(|v| (v["commit_ts"].as_u64().unwrap(), v["value"].clone())).collect();
        assert_eq!(
            got,
            vec![(ts(9000, 2), json!(5)), (ts(5000, 1), json!(4)), (ts(110, 7), json!(3)), (ts(110, 0), json!(2)), (ts(100, 3), json!(1))],
            "three after, and before it back to the first: {out:#}"
        );
        assert_eq!(out["latest_commit_ts"], ts(9000, 3));
        assert_eq!(out["versions"][2]["hlc_logical"], 7);
        assert!(out.get("note").is_none());
        assert_eq!(out["compaction_reached"], true, "the search below the first version met the horizon");
    }

    #[tokio::test]
    async fn a_version_order_unlike_the_written_one_shows_up_next_to_the_value_sought() {
        // 3 was committed before 2: the store holds 1, 3, 2, 4.
        let store = Mvcc(vec![(ts(10, 0), "1"), (ts(20, 0), "3"), (ts(30, 0), "2"), (ts(40, 0), "4")], false);
        let out = probe_key(&store, &ProbeRequest { key: "k".into(), values: vec![json!(3)] }).await;
        let values: Vec<Value> = out["versions"].as_array().unwrap().iter().map(|v| v["value"].clone()).collect();
        assert_eq!(values, vec![json!(4), json!(2), json!(3), json!(1)], "{out:#}");
    }

    #[tokio::test]
    async fn a_write_stamped_below_its_millisecond_neighbours_is_found_by_the_sweep() {
        // 9 was acknowledged after 8 but stamped by a lagging node: it sits at logical 1 of
        // the millisecond, below 1..8 (logical 10..17), out of reach of the walk around 8.
        let mut versions = vec![(ts(50, 0), "0"), (ts(110, 1), "9")];
        let stamped: [&'static str; 8] = ["1", "2", "3", "4", "5", "6", "7", "8"];
        for (i, v) in stamped.iter().enumerate() {
            versions.push((ts(110, 10 + i as u64), v));
        }
        versions.push((ts(120, 0), "10"));
        let store = Mvcc(versions, false);
        let out = probe_key(&store, &ProbeRequest { key: "k".into(), values: vec![json!(8), json!(9)] }).await;
        assert_eq!(out["found_by_sweep"][0]["value"], json!(9), "{out:#}");
        assert_eq!(out["found_by_sweep"][0]["commit_ts"], ts(110, 1));
        let sweep = out["sweeps"].as_array().unwrap().iter().find(|s| s["found_at"] != json!([])).unwrap();
        assert_eq!(sweep["hlc_ms"], 1_700_000_000_110u64);
        assert_eq!(sweep["complete"], true);
        assert_eq!(sweep["versions"], 9, "all nine versions of millisecond 110");
        assert!(out["versions"].as_array().unwrap().iter().any(|v| v["value"] == json!(9)));
    }

    #[tokio::test]
    async fn a_write_stamped_in_an_earlier_millisecond_is_found_by_sweeping_back() {
        // 9 was stamped by a node whose clock sat at an older ceiling (ms 150), below 1..8.
        let mut versions = vec![(ts(100, 0), "0"), (ts(150, 3), "9"), (ts(300, 0), "10")];
        let stamped: [&'static str; 8] = ["1", "2", "3", "4", "5", "6", "7", "8"];
        for (i, v) in stamped.iter().enumerate() {
            versions.push((ts(200, i as u64), v));
        }
        let store = Mvcc(versions, false);
        let mut walker = Walker { target: &store, key: b"k", calls: 0, latest: ts(300, 0), compacted: false };
        // What the walk around 8 listed: 10 and 8..6, all newer than ms 150.
        let mut listed: Vec<Version> = [(ts(300, 0), "10"), (ts(200, 7), "8"), (ts(200, 6), "7"), (ts(200, 5), "6")]
            .iter()
            .map(|(t, v)| Version { commit_ts: *t, value: Some(v.as_bytes().to_vec()) })
            .collect();
        let sweeps = sweep_for_missing(&mut walker, &[8, 9], &mut listed).await;
        let found: Vec<u64> = listed.iter().filter(|v| number(&v.value) == Some(9)).map(|v| v.commit_ts).collect();
        assert_eq!(found, vec![ts(150, 3)], "{sweeps:#?}");
        let swept: Vec<u64> = sweeps.iter().map(|s| s["hlc_ms"].as_u64().unwrap() - 1_700_000_000_000).collect();
        assert_eq!(swept, vec![300, 200, 150], "newest listed first, then back one millisecond at a time");
    }

    #[tokio::test]
    async fn a_sweep_that_finds_nothing_says_so_and_lists_nothing_new() {
        // 3 was acknowledged but no version holds it (a dropped write).
        let store = Mvcc(vec![(ts(10, 0), "1"), (ts(10, 1), "2"), (ts(10, 2), "4"), (ts(11, 0), "5")], false);
        let out = probe_key(&store, &ProbeRequest { key: "k".into(), values: vec![json!(2), json!(3)] }).await;
        assert_eq!(out["found_by_sweep"], json!([]), "{out:#}");
        assert_eq!(out["sweeps"][0]["sought"], 3);
        assert_eq!(out["sweeps"][0]["found_at"], json!([]));
        assert_eq!(out["sweeps"][0]["complete"], true);
    }

    #[tokio::test]
    async fn an_absent_key_has_no_versions_and_a_failing_store_leaves_a_note() {
        let request = ProbeRequest { key: "k".into(), values: vec![json!(1)] };
        let out = probe_key(&Mvcc(vec![], false), &request).await;
        assert_eq!(out["versions"], json!([]));
        assert_eq!(out["latest_commit_ts"], Value::Null);
        let out = probe_key(&Mvcc(vec![(5, "1")], true), &request).await;
        assert!(out["note"].as_str().unwrap().starts_with("RawLatestCommitTS failed"), "{out:#}");
    }
}

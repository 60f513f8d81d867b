//! The post-run probe of the versions a store holds for each key with a proven stale
//! read (elastickv: [`crate::db::elastickv::versions`]), written to `store-versions.json`
//! in the run directory while the cluster is still up, and attached to the key's
//! linearizability anomaly as `store_versions` whenever the run is analysed (by the run
//! itself or by `faultline analyze <run>`).
//!
//! Invariants: the probe never fails the run (a failure is logged and leaves no file or a
//! `note`); only keys the history proves stale are probed, at most [`MAX_KEYS`]; the file
//! is evidence beside the history, never an input to any verdict.

use super::sink::JsonlSink;
use crate::db::elastickv::versions::{probe_key, ProbeRequest, HLC_LOGICAL_BITS};
use analysis::checkers::stale_read::first_stale_reads;
use analysis::verdict::Verdict;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use workloads::client::{Connector, NodeEndpoint};

/// File name in the run directory.
pub const FILE: &str = "store-versions.json";
/// Keys probed at most.
pub const MAX_KEYS: usize = 16;
/// Wall-time budget of the whole probe.
const BUDGET: Duration = Duration::from_secs(60);

fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

pub fn path(run_dir: &Path) -> PathBuf {
    run_dir.join(FILE)
}

/// Probes the versions of every key the history so far proves stale, through the first
/// node that can be connected, and writes the file. Returns the number of keys probed.
pub async fn probe_and_write(
    sink: &JsonlSink,
    connector: &dyn Connector,
    nodes: &[NodeEndpoint],
    run_dir: &Path,
) -> usize {
    sink.flush();
    let history = match sink.read_back() {
        Ok(history) => history,
        Err(e) => {
            tracing::warn!("store versions: {e}");
            return 0;
        }
    };
    let stale = first_stale_reads(&history, &Value::Null, MAX_KEYS);
    if stale.is_empty() {
        return 0;
    }
    let Some(target) = nodes.iter().find_map(|n| connector.connect(n).ok()) else {
        tracing::warn!("store versions: no node could be connected");
        return 0;
    };
    let start = sink.start_unix_ns();
    let mut keys = Vec::new();
    let probes = async {
        for s in stale.iter().filter_map(|s| s.key.clone().map(|k| (k, s))) {
            let (key, stale) = s;
            let request = ProbeRequest {
                key,
                values: vec![stale.read_value.clone(), stale.missed_value.clone()],
            };
            let mut probe = probe_key(target.as_ref(), &request).await;
            // How far the store's HLC runs ahead of this host's clock (negative: behind).
            if let Some(latest) = probe["latest_commit_ts"].as_u64() {
                probe["hlc_ahead_of_wall_ms"] =
                    ((latest >> HLC_LOGICAL_BITS) as i64 - unix_ms()).into();
            }
            keys.push(probe);
        }
    };
    if tokio::time::timeout(BUDGET, probes).await.is_err() {
        tracing::warn!("store versions: stopped after {} s", BUDGET.as_secs());
    }
    let probed = keys.len();
    let doc = json!({ "start_unix_ns": start, "keys": keys });
    if let Err(e) = super::store::write_json(&path(run_dir), &doc) {
        tracing::warn!("store versions: {e:#}");
    }
    probed
}

/// Adds `store_versions` to each linearizability anomaly whose key the file describes.
pub fn attach(verdict: &mut Verdict, run_dir: &Path) {
    let Ok(text) = std::fs::read_to_string(path(run_dir)) else {
        return;
    };
    let Ok(doc) = serde_json::from_str::<Value>(&text) else {
        tracing::warn!("{}: not valid JSON; ignored", path(run_dir).display());
        return;
    };
    let Some(result) = verdict.checkers.get_mut("linearizable") else {
        return;
    };
    for anomaly in &mut result.anomalies {
        let probe = doc["keys"]
            .as_array()
            .and_then(|ks| ks.iter().find(|k| k["key"] == anomaly["key"]));
        if let Some(probe) = probe {
            let mut probe = probe.clone();
            probe["not_found"] = not_found(&probe).into();
            anomaly["store_versions"] = probe;
        }
    }
}

/// The values sought that are not among the versions listed around them: an acknowledged
/// write the store holds no version of there (it may still sit elsewhere in the key's
/// history, out of the probe's reach).
/// Nothing is claimed when the probe stopped early or listed nothing.
fn not_found(probe: &Value) -> Vec<Value> {
    let listed: Vec<&Value> = probe["versions"]
        .as_array()
        .map(|vs| vs.iter().map(|v| &v["value"]).collect())
        .unwrap_or_default();
    if listed.is_empty() || probe.get("note").is_some() {
        return Vec::new();
    }
    let sought = probe["sought"].as_array().cloned().unwrap_or_default();
    sought
        .into_iter()
        .filter(|s| !listed.contains(&s))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::verdict::{CheckerResult, Validity};
    use std::collections::BTreeMap;

    #[test]
    fn attaches_the_probe_of_the_anomalys_key_only() {
        let dir = tempfile::tempdir().unwrap();
        let doc = json!({"keys": [
            {"key": "reg/1", "sought": [5, 6], "versions": [{"commit_ts": 7, "value": 5}]},
            {"key": "reg/3", "sought": [5], "versions": [], "note": "RawGet failed"}]});
        std::fs::write(path(dir.path()), doc.to_string()).unwrap();
        let mut lin = CheckerResult::new(Validity::Invalid);
        lin.anomalies = vec![
            json!({"key": "reg/1"}),
            json!({"key": "reg/2"}),
            json!({"key": "reg/3"}),
        ];
        let mut verdict =
            Verdict::from_checkers(BTreeMap::from([("linearizable".to_string(), lin)]));
        attach(&mut verdict, dir.path());
        let a = &verdict.checkers["linearizable"].anomalies;
        assert_eq!(a[0]["store_versions"]["versions"][0]["commit_ts"], 7);
        assert_eq!(
            a[0]["store_versions"]["not_found"],
            json!([6]),
            "6 was sought and is not listed"
        );
        assert!(a[1].get("store_versions").is_none());
        assert_eq!(
            a[2]["store_versions"]["not_found"],
            json!([]),
            "a probe that failed proves nothing missing"
        );
    }
}

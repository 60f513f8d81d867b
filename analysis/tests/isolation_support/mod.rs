//! Shared helpers of the isolation tests: the brute-force oracle ([`oracle`]), history
//! mutations ([`mutate`]), small random generator settings, the checker's verdict and
//! anomaly names, and the consistency-model implications Elle states.
#![allow(dead_code)]

pub mod adya;
pub mod domain;
pub mod misbehave;
pub mod mutate;
pub mod oracle;

use analysis::checkers::isolation::{check, ConsistencyModel, Opts, TxnModel};
use analysis::history::History;
use analysis::txn_synth::{TxnAnomaly, TxnSynthConfig};
use analysis::verdict::{CheckerResult, Validity};
use rand::rngs::Xoshiro256PlusPlus;
use rand::RngExt;
use std::collections::BTreeSet;

pub fn run(h: &History, model: TxnModel, consistency: ConsistencyModel) -> CheckerResult {
    check(
        h,
        &Opts {
            model,
            consistency,
            time_budget: None,
        },
    )
}

/// The anomaly names the result reports (`details.anomaly_types`).
pub fn anomaly_types(r: &CheckerResult) -> BTreeSet<String> {
    r.details["anomaly_types"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub fn workload(model: TxnModel) -> oracle::Workload {
    match model {
        TxnModel::ListAppend => oracle::Workload::ListAppend,
        TxnModel::RwRegister => oracle::Workload::RwRegister,
    }
}

/// Settings for a small random history (at most about ten transactions with the
/// injected scenario and final reads), for the oracle.
pub fn small_config(rng: &mut Xoshiro256PlusPlus, model: TxnModel, seed: u64) -> TxnSynthConfig {
    let anomalies: Vec<TxnAnomaly> = TxnAnomaly::ALL
        .iter()
        .copied()
        .filter(|a| a.applies_to(model))
        .collect();
    let anomaly = if rng.random_bool(0.5) {
        TxnAnomaly::None
    } else {
        anomalies[rng.random_range(0..anomalies.len())]
    };
    TxnSynthConfig {
        model,
        txns: rng.random_range(1..=5),
        keys: rng.random_range(1..=3),
        concurrency: rng.random_range(1..=3),
        indeterminate: [0.0, 0.0, 0.2][rng.random_range(0..3)],
        min_len: 1,
        max_len: rng.random_range(1..=3),
        max_writes_per_key: rng.random_range(1..=3),
        anomaly,
        seed,
        fail: [0.0, 0.0, 0.15][rng.random_range(0..3)],
        final_reads: rng.random_bool(0.5),
    }
}

/// `(stronger, weaker)`: every history valid under `stronger` is valid under `weaker`.
/// The direct implications of Elle's model graph (jepsen-io/elle, consistency_model.clj)
/// among the models the checker names.
pub const IMPLIES: &[(&str, &str)] = &[
    ("strict-serializable", "serializable"),
    ("strict-serializable", "strong-session-serializable"),
    ("strict-serializable", "snapshot-isolation"),
    ("strict-serializable", "strong-snapshot-isolation"),
    ("strong-session-serializable", "serializable"),
    (
        "strong-session-serializable",
        "strong-session-snapshot-isolation",
    ),
    (
        "strong-snapshot-isolation",
        "strong-session-snapshot-isolation",
    ),
    ("strong-snapshot-isolation", "strong-read-committed"),
    ("strong-session-snapshot-isolation", "snapshot-isolation"),
    (
        "strong-session-snapshot-isolation",
        "strong-session-read-committed",
    ),
    ("strong-read-committed", "strong-session-read-committed"),
    ("strong-read-committed", "strong-read-uncommitted"),
    ("strong-session-read-committed", "read-committed"),
    (
        "strong-session-read-committed",
        "strong-session-read-uncommitted",
    ),
    ("strong-read-uncommitted", "strong-session-read-uncommitted"),
    ("strong-session-read-uncommitted", "read-uncommitted"),
    ("serializable", "repeatable-read"),
    ("serializable", "snapshot-isolation"),
    ("serializable", "update-serializable"),
    ("update-serializable", "forward-consistent-view"),
    ("snapshot-isolation", "forward-consistent-view"),
    ("snapshot-isolation", "monotonic-atomic-view"),
    ("snapshot-isolation", "monotonic-snapshot-read"),
    ("snapshot-isolation", "parallel-snapshot-isolation"),
    ("snapshot-isolation", "prefix"),
    ("forward-consistent-view", "consistent-view"),
    ("consistent-view", "cursor-stability"),
    ("consistent-view", "monotonic-view"),
    ("repeatable-read", "cursor-stability"),
    ("repeatable-read", "monotonic-atomic-view"),
    ("cursor-stability", "read-committed"),
    ("monotonic-atomic-view", "read-committed"),
    ("monotonic-view", "read-committed"),
    ("monotonic-snapshot-read", "read-committed"),
    ("read-committed", "read-uncommitted"),
];

/// The models these tests judge every history under: the transactional models above.
pub fn models() -> Vec<ConsistencyModel> {
    let mut names: Vec<&str> = IMPLIES.iter().flat_map(|(a, b)| [*a, *b]).collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|n| n.parse().unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// Whether `weaker` is implied by `stronger` (reflexive, transitive).
pub fn implies(stronger: &str, weaker: &str) -> bool {
    let mut todo = vec![stronger];
    let mut seen = BTreeSet::new();
    while let Some(m) = todo.pop() {
        if m == weaker {
            return true;
        }
        if seen.insert(m) {
            todo.extend(IMPLIES.iter().filter(|(a, _)| *a == m).map(|(_, b)| *b));
        }
    }
    false
}

pub fn validity_name(v: Validity) -> &'static str {
    v.as_str()
}

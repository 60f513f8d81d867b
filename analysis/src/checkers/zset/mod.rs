//! The `zset` checker: Redis sorted sets (ZADD, ZINCRBY, ZREM, `ZRANGE key 0 -1
//! WITHSCORES`, `ZRANGEBYSCORE key lo hi WITHSCORES`) over one or more keys, each key a set
//! of its own (history shape: `docs/history-format.md` § Sorted sets).
//!
//! Two layers. The rules ([`rules`]) — every rule of elastickv's own zset safety suite —
//! each name what a read or a reply shows that no order of the calls explains: `unsorted`,
//! `duplicate-members`, `out-of-range`, `unexpected-presence`, `score-mismatch`,
//! `missing-member`, `missing-member-range`, `fractured-read-prefix`,
//! `impossible-mutation-chain` (a ZINCRBY reply that is no previous score plus its delta, a
//! ZREM answer that contradicts every possible previous state) and
//! `unstable-read-without-mutation`. Then, for each key the rules found nothing wrong with,
//! a search ([`search`]) for a linearization of the whole key — every read a snapshot of
//! the whole set — within a budget: none exists is `nonlinearizable`; the budget ran out
//! is the key's linearizability unknown (listed in `details`), the rules' verdict standing.
//!
//! Verdict: invalid on any finding; unknown when no read succeeded (nothing was checked);
//! else valid. Invariants: a rule fires only where no linearization explains the history;
//! witnesses name the key, the member, the calls (history indices) and the faults in flight.

/// Checker name in `results.json`.
pub const NAME: &str = "zset";

/// Its registry entry (when it judges a history, how it is called).
pub mod entry;
pub use entry::CHECKER;

mod candidates;
pub mod model;
pub mod rules;
pub mod search;

use crate::checkers::{calls, fault_turns};
use crate::history::History;
use crate::ops;
use crate::verdict::{CheckerResult, Validity};
use serde_json::json;
use std::collections::BTreeMap;

/// The functions this checker judges.
pub const FUNCTIONS: &[&str] = &[
    ops::ZADD,
    ops::ZINCRBY,
    ops::ZREM,
    ops::ZRANGE,
    ops::ZRANGEBYSCORE,
];

/// Every kind of finding, in report order.
pub const KINDS: &[&str] = &[
    "unsorted",
    "duplicate-members",
    "out-of-range",
    "unexpected-presence",
    "score-mismatch",
    "missing-member",
    "missing-member-range",
    "fractured-read-prefix",
    "impossible-mutation-chain",
    "unstable-read-without-mutation",
    "nonlinearizable",
];

/// Findings listed per kind (counts are always complete).
const MAX_LISTED: usize = 200;

#[derive(Debug, Clone)]
pub struct ZsetOptions {
    /// Configurations the whole-key search may explore per key before its
    /// linearizability is unknown.
    pub search_budget: u64,
}

impl Default for ZsetOptions {
    fn default() -> Self {
        ZsetOptions {
            search_budget: 300_000,
        }
    }
}

/// Checks the sorted-set calls of `history`.
pub fn check(history: &History, opts: &ZsetOptions) -> CheckerResult {
    let keys = match calls::pair(history, FUNCTIONS).and_then(|c| model::read_keys(&c)) {
        Ok(keys) => keys,
        Err(why) => {
            let mut r = CheckerResult::new(Validity::Unknown);
            r.reason = Some(format!("zset: {why}"));
            return r;
        }
    };
    let mut findings = Vec::new();
    let mut searched = BTreeMap::new();
    for key in &keys {
        let before = findings.len();
        for read in &key.reads {
            rules::judge_read(key, read, &mut findings);
        }
        rules::judge_replies(key, &mut findings);
        rules::judge_stability(key, &mut findings);
        if findings.len() > before {
            continue;
        }
        let verdict = search::linearizable(key, opts.search_budget);
        if let search::Linearizable::No { stuck_at } = verdict {
            findings.push(rules::Finding {
                kind: "nonlinearizable",
                witness: json!({"kind": "nonlinearizable", "key": key.name, "stuck_at": stuck_at}),
                span: (0, u64::MAX),
            });
        }
        searched.insert(key.name.clone(), verdict);
    }
    assemble(history, &keys, findings, &searched)
}

fn assemble(
    history: &History,
    keys: &[model::Key],
    findings: Vec<rules::Finding>,
    searched: &BTreeMap<String, search::Linearizable>,
) -> CheckerResult {
    let turns = fault_turns::turns(history);
    let mut r = CheckerResult::new(Validity::Valid);
    let mut per_kind: BTreeMap<&str, u64> = KINDS.iter().map(|k| (*k, 0)).collect();
    for f in findings {
        let n = per_kind.entry(f.kind).or_insert(0);
        *n += 1;
        if *n as usize <= MAX_LISTED {
            let mut w = f.witness;
            let faults = fault_turns::overlapping(&turns, f.span.0, f.span.1);
            if !faults.is_empty() {
                w["faults"] = json!(faults);
            }
            r.anomalies.push(w);
        }
    }
    let reads: usize = keys.iter().map(|k| k.reads.len()).sum();
    let mutations: usize = keys.iter().map(|k| k.mutations.len()).sum();
    let unknown: Vec<&String> = searched
        .iter()
        .filter(|(_, v)| **v == search::Linearizable::Unknown)
        .map(|(k, _)| k)
        .collect();
    for (kind, n) in &per_kind {
        r.counts.insert(format!("{kind}-count"), *n);
    }
    r.counts.insert("key-count".into(), keys.len() as u64);
    r.counts.insert("read-count".into(), reads as u64);
    r.counts.insert("mutation-count".into(), mutations as u64);
    r.counts
        .insert("search-unknown-key-count".into(), unknown.len() as u64);
    r.details = json!({
        "linearizable_keys": searched.iter().filter(|(_, v)| **v == search::Linearizable::Yes).map(|(k, _)| k).collect::<Vec<_>>(),
        "search_unknown_keys": unknown,
    });
    let found: Vec<String> = per_kind
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    if !found.is_empty() {
        r.valid = Validity::Invalid;
        r.reason = Some(format!("zset: {}", found.join(", ")));
    } else if reads == 0 {
        r.valid = Validity::Unknown;
        r.reason = Some("zset: no sorted-set read succeeded, so nothing could be checked".into());
    }
    r
}

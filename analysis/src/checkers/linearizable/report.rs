//! Per-key checking and the assembly of the [`CheckerResult`]: validity merged over keys
//! (invalid > unknown > valid), counts, per-key details and one witness per failed key.

use super::budget::{Budget, Exceeded, NOT_CHECKED};
use super::fast::{self, FastOutcome};
use super::kv::KvModel;
use super::model::SequentialModel;
use super::prepare::{KeyHistory, PrepCounts, UnfollowedKey};
use super::register::RegisterModel;
use super::search::{search, SearchOutcome, SearchStats};
use super::{prune, witness, LinearizableOptions, Model};
use crate::history::History;
use crate::verdict::{CheckerResult, Validity};
use serde_json::{json, Value};
use std::time::Instant;

/// Per-key details are listed for every key up to this many keys; beyond, only the keys
/// that are not valid and the largest ones.
const KEYS_LISTED: usize = 256;
/// At most this many witnesses are kept.
pub(super) const WITNESSES_KEPT: usize = 100;

pub struct KeyReport {
    pub key: Option<String>,
    pub ops: usize,
    pub pruned: u64,
    pub valid: Validity,
    /// Why the key is unknown.
    pub reason: Option<String>,
    pub witness: Option<Value>,
    pub stats: SearchStats,
    /// Which engine decided the key: `fast-path` or `wgl`.
    pub engine: &'static str,
    /// Why the fast path did not apply (for `wgl` keys, when it was tried).
    pub fallback: Option<String>,
    /// Not (fully) checked because another key had proved the history invalid.
    pub stopped: bool,
    /// The search ran out of its own time or memory budget (not the whole check's).
    pub budget_bound: bool,
}

/// A key after the fast path: decided, or waiting for the search.
pub enum Staged {
    Done(KeyReport),
    Search(PendingKey),
}

/// A key the fast path did not decide.
pub struct PendingKey {
    pub key: KeyHistory,
    pub pruned: u64,
    /// Why the fast path did not apply (`None` when it is off).
    pub fallback: Option<String>,
}

/// Prunes `key` and tries the fast path on it.
pub fn fast_stage(history: &History, mut key: KeyHistory, opts: &LinearizableOptions) -> Staged {
    let pruned = if opts.prune {
        prune::prune_unobserved_writes(&mut key)
    } else {
        0
    };
    if !opts.fast_path {
        return Staged::Search(PendingKey {
            key,
            pruned,
            fallback: None,
        });
    }
    let started = Instant::now();
    match fast::check_key(history, &key) {
        FastOutcome::NotEligible(why) => Staged::Search(PendingKey {
            key,
            pruned,
            fallback: Some(why),
        }),
        decided => Staged::Done(fast_report(&key, pruned, decided, started)),
    }
}

/// Searches a pending key within `budget`.
pub fn search_stage(
    history: &History,
    pending: &PendingKey,
    opts: &LinearizableOptions,
    budget: &Budget,
) -> KeyReport {
    let mut report = search_key(history, &pending.key, opts, budget, pending.pruned);
    report.fallback = pending.fallback.clone();
    report
}

/// A key skipped because the history was already invalid.
pub fn not_checked(key: &KeyHistory) -> KeyReport {
    KeyReport {
        key: key.key.clone(),
        ops: key.ops.len(),
        pruned: 0,
        valid: Validity::Unknown,
        reason: Some(format!("key {}: {NOT_CHECKED}", key_name(&key.key))),
        witness: None,
        stats: SearchStats::default(),
        engine: ENGINE_NONE,
        fallback: None,
        stopped: true,
        budget_bound: false,
    }
}

fn fast_report(key: &KeyHistory, pruned: u64, outcome: FastOutcome, started: Instant) -> KeyReport {
    let (valid, witness) = match outcome {
        FastOutcome::NotLinearizable(w) => (Validity::Invalid, Some(w)),
        _ => (Validity::Valid, None),
    };
    let stats = SearchStats {
        cache_kind: "none",
        elapsed: started.elapsed(),
        ..Default::default()
    };
    KeyReport {
        key: key.key.clone(),
        ops: key.ops.len(),
        pruned,
        valid,
        reason: None,
        witness,
        stats,
        engine: ENGINE_FAST,
        fallback: None,
        stopped: false,
        budget_bound: false,
    }
}

const ENGINE_FAST: &str = "fast-path";
const ENGINE_SEARCH: &str = "wgl";
/// A key [`FirstVerdict`] stopped before any engine ran.
const ENGINE_NONE: &str = "none";

fn search_key(
    history: &History,
    key: &KeyHistory,
    opts: &LinearizableOptions,
    budget: &Budget,
    pruned: u64,
) -> KeyReport {
    match opts.model {
        Model::Kv => {
            let mut model = KvModel::new(key.initial, &key.values);
            run(history, key, &mut model, budget, opts, pruned)
        }
        Model::Register | Model::CasRegister => {
            let mut model = RegisterModel::new(key.initial, &key.values);
            run(history, key, &mut model, budget, opts, pruned)
        }
    }
}

fn run<M: SequentialModel>(
    history: &History,
    key: &KeyHistory,
    model: &mut M,
    budget: &Budget,
    opts: &LinearizableOptions,
    pruned: u64,
) -> KeyReport {
    let (outcome, stats) = search(key, model, budget, opts.exact_cache_max_ops);
    let mut report = KeyReport {
        key: key.key.clone(),
        ops: key.ops.len(),
        pruned,
        valid: Validity::Valid,
        reason: None,
        witness: None,
        stats,
        engine: ENGINE_SEARCH,
        fallback: None,
        stopped: false,
        budget_bound: false,
    };
    match outcome {
        SearchOutcome::Linearizable => {}
        SearchOutcome::NotLinearizable(failure) => {
            report.valid = Validity::Invalid;
            let state = model.describe(failure.state_after_best);
            report.witness = Some(witness::witness(history, key, &failure, state));
        }
        SearchOutcome::OutOfBudget(exceeded) => {
            report.valid = Validity::Unknown;
            report.stopped = exceeded == Exceeded::HistoryInvalid;
            report.budget_bound = matches!(
                exceeded,
                Exceeded::Memory { .. }
                    | Exceeded::Time {
                        remainder_of_total: false,
                        ..
                    }
            );
            report.reason = Some(format!(
                "key {}: {exceeded} after {} configurations ({} ops)",
                key_name(&key.key),
                report.stats.configurations,
                key.ops.len()
            ));
        }
    }
    report
}

/// A key the model cannot follow: `unknown`, never searched.
pub fn unfollowed_key(k: UnfollowedKey) -> KeyReport {
    KeyReport {
        key: k.key,
        ops: 0,
        pruned: 0,
        valid: Validity::Unknown,
        reason: Some(k.reason),
        witness: None,
        stats: SearchStats::default(),
        engine: ENGINE_NONE,
        fallback: None,
        stopped: false,
        budget_bound: false,
    }
}

pub fn key_name(key: &Option<String>) -> String {
    match key {
        Some(k) => format!("{k:?}"),
        None => "(single register)".to_string(),
    }
}

/// A result for a history the checker cannot judge at all.
pub fn unusable(reason: String) -> CheckerResult {
    let mut r = CheckerResult::new(Validity::Unknown);
    r.reason = Some(reason);
    r
}

pub fn assemble(
    opts: &LinearizableOptions,
    counts: PrepCounts,
    mut keys: Vec<KeyReport>,
) -> CheckerResult {
    let valid = keys
        .iter()
        .fold(Validity::Valid, |acc, k| acc.merge(k.valid));
    let pruned: u64 = keys.iter().map(|k| k.pruned).sum();
    let checked = counts.kept - pruned;
    let unsupported: u64 = counts.unsupported.values().sum();
    let mut result = CheckerResult::new(valid);
    let c = &mut result.counts;
    c.insert("ops".into(), counts.client_ops);
    c.insert("ops-checked".into(), checked);
    c.insert("keys".into(), keys.len() as u64);
    c.insert("pruned".into(), pruned);
    c.insert("failed-dropped".into(), counts.failed_dropped);
    c.insert("indeterminate".into(), counts.indeterminate);
    c.insert(
        "indeterminate-reads-dropped".into(),
        counts.indeterminate_reads_dropped,
    );
    c.insert("never-completed".into(), counts.never_completed);
    c.insert("null-reads-dropped".into(), counts.null_reads_dropped);
    c.insert("unsupported-ops".into(), unsupported);
    c.insert("non-client-events".into(), counts.non_client_events);
    c.insert("malformed".into(), counts.malformed);
    c.insert(
        "configurations".into(),
        keys.iter().map(|k| k.stats.configurations).sum(),
    );
    c.insert(
        "keys-invalid".into(),
        keys.iter().filter(|k| k.valid == Validity::Invalid).count() as u64,
    );
    c.insert(
        "keys-unknown".into(),
        keys.iter().filter(|k| k.valid == Validity::Unknown).count() as u64,
    );
    c.insert(
        "keys-fast-path".into(),
        keys.iter().filter(|k| k.engine == ENGINE_FAST).count() as u64,
    );
    c.insert(
        "keys-wgl".into(),
        keys.iter().filter(|k| k.engine == ENGINE_SEARCH).count() as u64,
    );
    c.insert(
        "keys-not-checked".into(),
        keys.iter().filter(|k| k.stopped).count() as u64,
    );

    result.reason = reason(&keys, &counts, unsupported, opts.model);
    // Nothing left to check (every op failed, only nemesis events, ...) is trivially
    // linearizable, as Knossos and Porcupine say; `ops-checked` says how little that was,
    // and "the run tested nothing" is the vacuity checker's verdict, not this one's.
    // But client ops of which the model checks none are not "nothing to check".
    if counts.malformed > 0 || nothing_this_model_checks(&counts, unsupported) {
        // Dropped malformed ops may be what makes a key fail: do not claim invalid.
        result.valid = Validity::Unknown;
    }
    keys.sort_by(|a, b| a.key.cmp(&b.key));
    result.anomalies = keys
        .iter_mut()
        .filter_map(|k| k.witness.take())
        .take(WITNESSES_KEPT)
        .collect();
    result.details = json!({
        "model": opts.model.name(),
        "initial": opts.initial,
        "unsupported": counts.unsupported,
        "malformed-examples": counts.malformed_examples,
        "keys": key_details(&keys),
    });
    result
}

/// There are client ops, and every one has a function the model does not check.
fn nothing_this_model_checks(counts: &PrepCounts, unsupported: u64) -> bool {
    unsupported > 0 && counts.client_ops == unsupported
}

fn reason(
    keys: &[KeyReport],
    counts: &PrepCounts,
    unsupported: u64,
    model: Model,
) -> Option<String> {
    let mut parts = Vec::new();
    if counts.malformed > 0 {
        parts.push(format!(
            "{} malformed op(s) could not be checked, so the verdict cannot be trusted (first: {})",
            counts.malformed,
            counts
                .malformed_examples
                .first()
                .map(String::as_str)
                .unwrap_or("?")
        ));
    }
    let invalid: Vec<&KeyReport> = keys
        .iter()
        .filter(|k| k.valid == Validity::Invalid)
        .collect();
    // The first is the key whose op that cannot be linearized comes earliest in the history.
    let culprit = |k: &KeyReport| {
        k.witness
            .as_ref()
            .and_then(|w| w["op"]["index"].as_u64())
            .unwrap_or_default()
    };
    if let Some(first) = invalid.iter().min_by_key(|k| (culprit(k), k.key.clone())) {
        let op = culprit(first);
        parts.push(format!(
            "{} key(s) not linearizable; first: key {}, op index {op} cannot be linearized",
            invalid.len(),
            key_name(&first.key)
        ));
    }
    let unknown: Vec<&str> = keys.iter().filter_map(|k| k.reason.as_deref()).collect();
    if !unknown.is_empty() {
        let shown = unknown
            .iter()
            .take(3)
            .copied()
            .collect::<Vec<_>>()
            .join("; ");
        parts.push(format!(
            "{} key(s) could not be decided: {shown}",
            unknown.len()
        ));
    }
    if nothing_this_model_checks(counts, unsupported) {
        parts.push(format!(
            "no operation this model can check (model {} checks {})",
            model.name(),
            model.functions()
        ));
    }
    if unsupported > 0 {
        let fs: Vec<String> = counts
            .unsupported
            .iter()
            .map(|(f, n)| format!("{f}×{n}"))
            .collect();
        parts.push(format!(
            "{unsupported} op(s) with a function model {} does not check were ignored: {}",
            model.name(),
            fs.join(", ")
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn key_details(keys: &[KeyReport]) -> Value {
    let listed: Vec<&KeyReport> = if keys.len() <= KEYS_LISTED {
        keys.iter().collect()
    } else {
        let mut by_size: Vec<&KeyReport> = keys.iter().collect();
        by_size.sort_by_key(|k| (k.valid == Validity::Valid, std::cmp::Reverse(k.ops)));
        by_size.truncate(KEYS_LISTED);
        by_size
    };
    listed
        .iter()
        .map(|k| {
            json!({
                "key": k.key,
                "valid": k.valid,
                "ops": k.ops,
                "pruned": k.pruned,
                "configurations": k.stats.configurations,
                "backtracks": k.stats.backtracks,
                "cache": k.stats.cache_kind,
                "cache-bytes": k.stats.cache_bytes,
                "ms": k.stats.elapsed.as_secs_f64() * 1e3,
                "reason": k.reason,
                "engine": k.engine,
                "fast-path-skipped": k.fallback,
            })
        })
        .collect()
}

//! The order in which the keys of one check are decided, so that a first verdict never
//! waits behind an expensive key:
//! 1. every key goes through pruning and the exact fast path (in parallel; cheap);
//! 2. the keys left go to the search smallest first, each with a short budget
//!    ([`SHORT_TIME`], [`SHORT_MEMORY`], or the key's own budget if smaller);
//! 3. the keys that ran out of the short budget are searched again, from scratch, with
//!    their full budget, in the same order.
//!
//! Invariants: the order and the repeat never change a key's verdict (a search that ran
//! out of the short budget decided nothing, and the full search starts afresh); a key is
//! reported not checked only once some key was proven invalid ([`FirstVerdict`]), and a
//! search not started by then is not started at all.

use super::budget::Budget;
use super::first_verdict::FirstVerdict;
use super::prepare::KeyHistory;
use super::report::{self, KeyReport, PendingKey, Staged};
use super::LinearizableOptions;
use crate::history::History;
use crate::verdict::Validity;
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Time of a key's first, short search.
pub const SHORT_TIME: Duration = Duration::from_millis(100);
/// Memory of a key's first, short search.
pub const SHORT_MEMORY: u64 = 64 << 20;

/// Decides every key of `keys`; the reports come in no particular order.
pub fn decide_all(
    history: &History,
    keys: Vec<KeyHistory>,
    opts: &LinearizableOptions,
    deadline: Instant,
    first: &Arc<FirstVerdict>,
) -> Vec<KeyReport> {
    let staged: Vec<Staged> = keys
        .into_par_iter()
        .map(|k| report::fast_stage(history, k, opts))
        .collect();
    let mut reports = Vec::new();
    let mut pending = Vec::new();
    for s in staged {
        match s {
            Staged::Done(r) => {
                if r.valid == Validity::Invalid {
                    first.key_invalid();
                }
                reports.push(r);
            }
            Staged::Search(p) => pending.push(p),
        }
    }
    pending.sort_by_key(|p| p.key.ops.len());
    let short_time = opts.per_key_time.min(SHORT_TIME);
    let short_memory = opts.per_key_memory_bytes.min(SHORT_MEMORY);
    let shortened = short_time < opts.per_key_time || short_memory < opts.per_key_memory_bytes;
    let round = |p: &PendingKey, time: Duration, memory: u64| {
        if first.history_invalid() {
            return report::not_checked(&p.key);
        }
        let budget = Budget::start_until(time, deadline, memory).stopped_by(first.clone());
        let r = report::search_stage(history, p, opts, &budget);
        if r.valid == Validity::Invalid {
            first.key_invalid();
        }
        r
    };
    let firsts = in_order(&pending, |p| round(p, short_time, short_memory));
    let mut again = Vec::new();
    for (p, r) in pending.iter().zip(firsts) {
        if shortened && r.budget_bound {
            again.push(p);
        } else {
            reports.push(r);
        }
    }
    reports.extend(in_order(&again, |p| {
        round(p, opts.per_key_time, opts.per_key_memory_bytes)
    }));
    reports
}

/// `f` of every item on the rayon pool, items started strictly in their order (unlike a
/// parallel iterator, which splits the list); results in item order.
fn in_order<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new(items.iter().map(|_| None).collect());
    let workers = rayon::current_num_threads().min(items.len());
    rayon::scope(|s| {
        for _ in 0..workers {
            s.spawn(|_| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every item ran"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_runs_every_item_and_keeps_their_order() {
        let items: Vec<u64> = (0..100).collect();
        assert_eq!(
            in_order(&items, |&i| i * 2),
            (0..100).map(|i| i * 2).collect::<Vec<_>>()
        );
        assert!(in_order(&Vec::<u64>::new(), |&i| i).is_empty());
    }
}

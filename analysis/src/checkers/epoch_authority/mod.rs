//! The epoch-authority checker: single write authority per route epoch.
//!
//! From the commit metadata that acknowledged operations carry (group, term, log index,
//! route id, route epoch) and the catalog the watcher observed, it checks five rules:
//!
//! - (a) per route and epoch, every acknowledged write was committed by one group — the one
//!   the catalog names for that epoch, and never the target of an abandoned move under its
//!   unpublished new epoch;
//! - (b) no write was acknowledged under an epoch that the catalog had already superseded
//!   before the write was invoked (a watcher observation completing before the invoke
//!   proves the move preceded it);
//! - (c) no two distinct acknowledged writes report the same (group, log index);
//! - (d) per process and key, reported epochs never go backwards;
//! - (e) catalog invariants: versions increase, routes tile the keyspace, lineage is
//!   consistent, split keys are interior, split jobs settle;
//! - (f) no write was committed by a move's source group after its fence was complete
//!   (the catalog showed the job in `DELTA_COPY` before the write was invoked).
//!
//! A rule that lacks what it needs (no metadata — stock elastickv — or no watcher events)
//! is `unknown` with the reason, and so is the checker unless another rule is violated:
//! missing evidence is never `valid`. See `docs/checkers.md`.

mod abandoned;
mod acked;
mod catalog_rules;
mod report;
mod write_rules;

pub use acked::{acknowledged_ops, AckedOp, WRITE_FNS};
pub use catalog_rules::tiling_gap_or_overlap;
pub use report::RuleReport;

use crate::catalog::CatalogTimeline;
use crate::history::History;
use crate::verdict::{CheckerResult, Validity};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Checker name in `results.json`.
pub const NAME: &str = "epoch-authority";

/// Its registry entry (when it judges a history, how it is called).
pub mod entry;
pub use entry::CHECKER;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct EpochAuthorityOptions {
    /// At most this many witnesses per rule (counts are always complete).
    pub max_witnesses: usize,
}

impl Default for EpochAuthorityOptions {
    fn default() -> Self {
        EpochAuthorityOptions { max_witnesses: 20 }
    }
}

/// Check `history` against rules (a)–(f).
pub fn check(history: &History, opts: &EpochAuthorityOptions) -> CheckerResult {
    let timeline = CatalogTimeline::from_history(history);
    check_with_timeline(history, &timeline, opts)
}

/// As [`check`], reusing an already parsed catalog timeline.
pub fn check_with_timeline(
    history: &History,
    timeline: &CatalogTimeline,
    opts: &EpochAuthorityOptions,
) -> CheckerResult {
    let acked = acknowledged_ops(history);
    let lineage = timeline.lineage();
    let w = opts.max_witnesses;
    let mut a = RuleReport::new(
        "a",
        "per route and epoch, all acknowledged writes were committed by one group",
        w,
    );
    let mut b = RuleReport::new(
        "b",
        "no write acknowledged under an epoch superseded before it was invoked",
        w,
    );
    let mut c = RuleReport::new(
        "c",
        "no two acknowledged writes share a (group, log index) commit slot",
        w,
    );
    let mut d = RuleReport::new("d", "per process and key, epochs never go backwards", w);
    let mut e = RuleReport::new(
        "e",
        "catalog invariants: versions, tiling, lineage, split keys, settled jobs",
        w,
    );
    let mut f = RuleReport::new(
        "f",
        "no write committed by a move's source after its fence was complete",
        w,
    );
    write_rules::one_group_per_epoch(&acked, timeline, &mut a);
    abandoned::no_writes_under_abandoned_epochs(&acked, timeline, &lineage, &mut a);
    write_rules::no_stale_epoch_writes(&acked, timeline, &lineage, &mut b);
    write_rules::unique_commit_slots(&acked, &mut c);
    write_rules::epochs_monotonic_per_process(&acked, &lineage, &mut d);
    write_rules::no_writes_after_fence(&acked, timeline, &lineage, &mut f);
    let catalog_details = catalog_rules::catalog_invariants(timeline, &mut e);
    let rules = [a, b, c, d, e, f];
    let mut result = assemble(&acked, timeline, &rules, catalog_details);
    let stale = acked::stale_write_counts(history);
    let witnesses = acked::stale_write_oks(history)
        .filter(|i| rules.iter().any(|r| r.violating_ops.contains(i)))
        .count() as u64;
    for (name, n) in [
        ("stale-writes-attempted", stale.attempted),
        ("stale-writes-acknowledged", stale.acknowledged),
        ("stale-writes-rejected", stale.rejected),
        ("stale-writes-indeterminate", stale.indeterminate),
        ("stale-writes-witnesses", witnesses),
    ] {
        result.counts.insert(name.into(), n);
    }
    result
}

fn assemble(
    acked: &[AckedOp],
    timeline: &CatalogTimeline,
    rules: &[RuleReport],
    catalog_details: serde_json::Value,
) -> CheckerResult {
    let valid = rules
        .iter()
        .fold(Validity::Valid, |v, r| v.merge(r.validity()));
    let mut result = CheckerResult::new(valid);
    let writes = acked.iter().filter(|o| o.is_write).count() as u64;
    let with_meta = acked
        .iter()
        .filter(|o| o.is_write && o.meta.is_some())
        .count() as u64;
    result.counts.insert("acknowledged-writes".into(), writes);
    result
        .counts
        .insert("acknowledged-writes-with-metadata".into(), with_meta);
    result.counts.insert(
        "catalog-observations".into(),
        timeline.observations.len() as u64,
    );
    for r in rules {
        result
            .counts
            .insert(format!("{}-checked", r.rule), r.checked);
        result
            .counts
            .insert(format!("{}-violations", r.rule), r.violations);
        result
            .counts
            .insert(format!("{}-skipped", r.rule), r.skipped);
        result.anomalies.extend(r.witnesses.iter().cloned());
    }
    result.reason = match valid {
        Validity::Invalid => Some(
            rules
                .iter()
                .filter(|r| r.violations > 0)
                .map(|r| {
                    format!(
                        "rule ({}) violated {} time(s): {}",
                        r.rule, r.violations, r.title
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
        ),
        Validity::Unknown => Some(
            rules
                .iter()
                .filter_map(|r| {
                    r.unknown_reason
                        .as_ref()
                        .map(|why| format!("rule ({}) unknown: {why}", r.rule))
                })
                .collect::<Vec<_>>()
                .join("; "),
        ),
        _ => None,
    };
    result.details = json!({
        "rules": rules.iter().map(RuleReport::to_json).collect::<Vec<_>>(),
        "catalog": catalog_details,
    });
    result
}

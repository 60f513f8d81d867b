//! Linearizability judged part by part: a history too large to hold is cut into parts that
//! each hold every op of some keys (and all the same non-client entries), and [`KeyParts`]
//! checks one part after another, keeping only each key's report. Because the search never
//! looks across keys (P-compositionality), the merged result is the one [`super::check`]
//! gives the whole history — which is itself one part.
//!
//! Invariants: a key's ops are all in one part; the non-client entries every part repeats
//! are counted once; the whole check's time budget and first-invalid grace span the parts.

use super::first_verdict::FirstVerdict;
use super::prepare::{self, PrepCounts};
use super::report::{self, KeyReport};
use super::{schedule, LinearizableOptions, Model};
use crate::history::History;
use crate::verdict::CheckerResult;
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

/// The reports of the keys checked so far.
pub struct KeyParts {
    opts: LinearizableOptions,
    counts: PrepCounts,
    reports: Vec<KeyReport>,
    /// Why the history cannot be checked at all (the first such reason).
    unusable: Option<String>,
    deadline: Instant,
    first: Arc<FirstVerdict>,
    /// Only the client ops of these functions are checked (`None`: every entry).
    only: Option<&'static [&'static str]>,
}

impl KeyParts {
    /// Starts the check; its time budget runs from now.
    pub fn new(opts: LinearizableOptions) -> KeyParts {
        let unusable = (opts.model == Model::Kv
            && !(opts.initial.is_string() || opts.initial.is_null()))
        .then(|| {
            format!(
                "the kv model needs a string (or null) initial value, got {}",
                opts.initial
            )
        });
        KeyParts {
            deadline: Instant::now() + opts.total_time,
            first: Arc::new(FirstVerdict::new(opts.first_invalid_grace)),
            opts,
            counts: PrepCounts::default(),
            reports: Vec::new(),
            unusable,
            only: None,
        }
    }

    /// This check, seeing only the client ops of `functions` in each part (nothing else is
    /// counted).
    pub fn only(self, functions: &'static [&'static str]) -> KeyParts {
        KeyParts {
            only: Some(functions),
            ..self
        }
    }

    /// Checks every key of `part`; `witnesses` may annotate the witnesses its invalid keys
    /// got (with the part's context) before they are kept: those that can be kept, the
    /// first by key.
    pub fn absorb(&mut self, part: &History, witnesses: impl FnOnce(&mut [&mut Value])) {
        if self.unusable.is_some() {
            return;
        }
        let o = &self.opts;
        let prepared = match prepare::prepare(part, o.model, &o.initial, o.null_reads, self.only) {
            Ok(p) => p,
            Err(why) => {
                self.unusable = Some(why);
                return;
            }
        };
        let mut counts = prepared.counts;
        // Every part repeats the same non-client entries: count them once.
        let repeated = std::mem::take(&mut counts.non_client_events);
        self.counts.absorb(counts);
        self.counts.non_client_events = self.counts.non_client_events.max(repeated);
        let mut reports = schedule::decide_all(part, prepared.keys, o, self.deadline, &self.first);
        reports.extend(prepared.unfollowed.into_iter().map(report::unfollowed_key));
        // Only the first witnesses by key can be kept (`report::assemble`): only those are
        // annotated, so annotating stays bounded however many keys fail.
        let mut with_witness: Vec<&mut KeyReport> =
            reports.iter_mut().filter(|r| r.witness.is_some()).collect();
        with_witness.sort_by(|a, b| a.key.cmp(&b.key));
        let mut found: Vec<&mut Value> = with_witness
            .into_iter()
            .take(report::WITNESSES_KEPT)
            .filter_map(|r| r.witness.as_mut())
            .collect();
        if !found.is_empty() {
            witnesses(&mut found);
        }
        self.reports.extend(reports);
    }

    /// The result over every part absorbed.
    pub fn finish(self) -> CheckerResult {
        match self.unusable {
            Some(why) => report::unusable(why),
            None => report::assemble(&self.opts, self.counts, self.reports),
        }
    }
}

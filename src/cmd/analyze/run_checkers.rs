//! The run-level checkers (epoch-authority, split, vacuity, crashes) for histories that are
//! not a run directory's (those are judged with the run's facts, see `run_dir`): analysis's
//! one registry decides by the history's evidence ([`RunFacts::from_evidence`]) — commit
//! metadata or catalog observations (epoch-authority), a split in the catalog or a forced
//! split (split), nemesis events (vacuity, for the kinds that were started), node-watch or
//! node-exit events (crashes).
//!
//! A history with catalog observations but no commit metadata that names groups, terms,
//! routes or epochs (a store that sends none, such as elastickv: its writes carry only a
//! log index) can only break epoch-authority's catalog rule; anything short of
//! `invalid` is then `not-applicable`, never `unknown` — the same verdict a run against
//! such a store gets.

use analysis::history::History;
use analysis::verdict::Verdict;

/// `verdict` plus the run-level checkers whose evidence the history holds.
pub fn add_evidence_checkers(history: &History, verdict: Verdict) -> Verdict {
    analysis::analyze::analyze_evidence(history, verdict)
}

//! Set-full judged part by part: a history cut into parts that each hold every op of some
//! key groups (a scan's range and the keys inside it stay together) and all the same
//! non-client entries. [`SetParts`] runs the one-pass check on each part and keeps only its
//! bounded [`Summary`]; the merged summary is the whole history's, so the result is the one
//! [`super::check`] gives the whole history — itself one part.
//!
//! Invariant: elements never span parts (an element is its key, and a scan reads only the
//! elements of its own group), so per-element outcomes are the same in a part as in the
//! whole.

use super::report;
use super::route_change::{self, RouteChange};
use super::summary::Summary;
use super::{pass, SetFullOptions};
use crate::history::History;
use crate::verdict::{CheckerResult, Validity};

/// The findings of the parts checked so far.
pub struct SetParts {
    opts: SetFullOptions,
    summary: Summary,
    /// The route changes, from the non-client entries every part holds.
    changes: Option<Vec<RouteChange>>,
    /// Why the history cannot be checked (the first part's reason that had one).
    unusable: Option<String>,
}

impl SetParts {
    pub fn new(opts: SetFullOptions) -> SetParts {
        SetParts {
            opts,
            summary: Summary::default(),
            changes: None,
            unusable: None,
        }
    }

    /// Checks the elements of `part`.
    pub fn absorb(&mut self, part: &History) {
        if self.unusable.is_some() {
            return;
        }
        match pass(part) {
            Ok(scan) => self.summary.merge(Summary::of(&scan, part)),
            Err(why) => self.unusable = Some(why),
        }
        self.changes
            .get_or_insert_with(|| route_change::route_changes(part));
    }

    /// The result over every part absorbed.
    pub fn finish(self) -> CheckerResult {
        if let Some(why) = self.unusable {
            let mut result = CheckerResult::new(Validity::Unknown);
            result.reason = Some(why);
            return result;
        }
        let times = self.summary.times.clone();
        let mut result = report::assemble(self.summary, &self.opts);
        let changes = self.changes.unwrap_or_default();
        route_change::annotate_with(&changes, &times, &mut result);
        result
    }
}

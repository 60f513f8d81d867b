//! The phases of a split job, one enum for every place that reads them (the catalog
//! rules, the nemesis waiting for a forced split to settle, the runner's progress line).
//!
//! Invariants: the recorded text stays as the store gave it (`SplitJobRecord::phase` is a
//! string, so histories are written unchanged); [`JobPhase::parse`] accepts any case, with
//! or without the protobuf prefix `SPLIT_JOB_PHASE_`, and knows nothing else: an unknown
//! phase is `None`, never guessed.

use std::fmt;

/// A split job's phase. Forward path `Planned` → … → `Done`; abandon path `Abandoning` →
/// `Abandoned`; `Failed` is elastickv's retry waypoint (the job resumes at its retry phase).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobPhase {
    Planned,
    Backfill,
    Fence,
    DeltaCopy,
    Cutover,
    Cleanup,
    Done,
    Abandoning,
    Abandoned,
    Failed,
}

impl JobPhase {
    pub const ALL: [JobPhase; 10] = [
        JobPhase::Planned,
        JobPhase::Backfill,
        JobPhase::Fence,
        JobPhase::DeltaCopy,
        JobPhase::Cutover,
        JobPhase::Cleanup,
        JobPhase::Done,
        JobPhase::Abandoning,
        JobPhase::Abandoned,
        JobPhase::Failed,
    ];

    /// The phase's name without prefix, upper case: `DELTA_COPY`.
    pub fn name(self) -> &'static str {
        match self {
            JobPhase::Planned => "PLANNED",
            JobPhase::Backfill => "BACKFILL",
            JobPhase::Fence => "FENCE",
            JobPhase::DeltaCopy => "DELTA_COPY",
            JobPhase::Cutover => "CUTOVER",
            JobPhase::Cleanup => "CLEANUP",
            JobPhase::Done => "DONE",
            JobPhase::Abandoning => "ABANDONING",
            JobPhase::Abandoned => "ABANDONED",
            JobPhase::Failed => "FAILED",
        }
    }

    /// Reads a recorded phase (`DONE`, `done`, `SPLIT_JOB_PHASE_DONE`); `None` if unknown.
    pub fn parse(text: &str) -> Option<JobPhase> {
        let name = normalized_name(text);
        JobPhase::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The job has settled: it will not change phase again.
    pub fn is_terminal(self) -> bool {
        matches!(self, JobPhase::Done | JobPhase::Abandoned)
    }

    /// Position on its path: forward 1–7, abandon 8–9; `Failed` has none (moves into and
    /// out of a retry waypoint are never judged).
    pub fn rank(self) -> Option<u8> {
        let pos = JobPhase::ALL.iter().position(|p| *p == self)?;
        (self != JobPhase::Failed).then_some(pos as u8 + 1)
    }

    /// On the forward path before `Cutover` (`Planned` … `DeltaCopy`): the job can still be
    /// abandoned and the source is the range's owner.
    pub fn before_cutover(self) -> bool {
        matches!(
            self,
            JobPhase::Planned | JobPhase::Backfill | JobPhase::Fence | JobPhase::DeltaCopy
        )
    }

    /// At or past `Cutover` on the forward path: the source is no longer authoritative.
    pub fn at_or_after_cutover(self) -> bool {
        matches!(self, JobPhase::Cutover | JobPhase::Cleanup | JobPhase::Done)
    }

    pub fn is_abandon_path(self) -> bool {
        matches!(self, JobPhase::Abandoning | JobPhase::Abandoned)
    }
}

impl fmt::Display for JobPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A recorded phase upper-cased and without the protobuf enum prefix, known or not.
pub fn normalized_name(text: &str) -> String {
    let upper = text.to_ascii_uppercase();
    upper
        .strip_prefix("SPLIT_JOB_PHASE_")
        .map(str::to_string)
        .unwrap_or(upper)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_the_prefix_and_any_case_and_nothing_unknown() {
        assert_eq!(
            JobPhase::parse("SPLIT_JOB_PHASE_DELTA_COPY"),
            Some(JobPhase::DeltaCopy)
        );
        assert_eq!(JobPhase::parse("done"), Some(JobPhase::Done));
        assert_eq!(JobPhase::parse("NONE"), None);
        for p in JobPhase::ALL {
            assert_eq!(JobPhase::parse(p.name()), Some(p));
        }
    }

    #[test]
    fn only_done_and_abandoned_are_terminal() {
        let terminal: Vec<JobPhase> = JobPhase::ALL
            .into_iter()
            .filter(|p| p.is_terminal())
            .collect();
        assert_eq!(terminal, [JobPhase::Done, JobPhase::Abandoned]);
    }

    #[test]
    fn before_cutover_is_the_forward_path_up_to_delta_copy() {
        let before: Vec<JobPhase> = JobPhase::ALL
            .into_iter()
            .filter(|p| p.before_cutover())
            .collect();
        assert_eq!(
            before,
            [
                JobPhase::Planned,
                JobPhase::Backfill,
                JobPhase::Fence,
                JobPhase::DeltaCopy
            ]
        );
        assert!(JobPhase::ALL
            .into_iter()
            .all(|p| !(p.before_cutover() && p.at_or_after_cutover())));
    }

    #[test]
    fn ranks_follow_the_paths_and_failed_has_none() {
        assert_eq!(JobPhase::Planned.rank(), Some(1));
        assert_eq!(JobPhase::Done.rank(), Some(7));
        assert_eq!(JobPhase::Abandoned.rank(), Some(9));
        assert_eq!(JobPhase::Failed.rank(), None);
    }
}

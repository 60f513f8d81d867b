//! Seeded bugs, each off by default and switched on only by name (`--bug NAME`). See
//! docs/refkv.md for what each breaks and which checker must catch it.

use serde::{Deserialize, Serialize};

pub const BUG_NAMES: [&str; 15] = [
    "no-fence",
    "early-cutover",
    "stale-read",
    "ack-before-commit",
    "split-midpoint",
    "proxy-fence",
    "abandon-keeps-target",
    "resume-skips-delta",
    "no-read-validation",
    "lock-dropped-on-move",
    "ts-from-receiver",
    "commit-to-old-owner",
    "low-ts-commit-escapes-delta",
    "no-post-fence-drain",
    "expired-lock-rolled-back",
];

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct Bugs {
    /// Apply writes without the ownership/epoch check.
    pub no_fence: bool,
    /// Cut over before the fence and delta copy (writes during the move are lost).
    pub early_cutover: bool,
    /// Serve reads from local state on any node without leader confirmation.
    pub stale_read: bool,
    /// Acknowledge a write once proposed, before a quorum commits it.
    pub ack_before_commit: bool,
    /// The auto-split detector splits at the byte midpoint, ignoring its evidence.
    pub split_midpoint: bool,
    /// Check the epoch/fence only where a write is routed (against the routing node's view),
    /// not where it is applied: a node with a stale view still commits into the old owner.
    pub proxy_fence: bool,
    /// An abandoned move leaves the target owning (and holding) its copy of the range.
    pub abandon_keeps_target: bool,
    /// A migrator that inherits a job in DELTA_COPY skips the delta copy.
    pub resume_skips_delta: bool,
    /// A transaction's prewrite skips the write-conflict check (a write committed after the
    /// transaction started): its snapshot reads may be stale when it commits.
    pub no_read_validation: bool,
    /// A move copies transactional keys' data but not their locks.
    pub lock_dropped_on_move: bool,
    /// A transaction takes its timestamps from the receiving node's own batch, not from the
    /// oracle's leader: timestamps of different nodes do not follow real time.
    pub ts_from_receiver: bool,
    /// The coordinator sends each commit to the group (and epoch) that took the key's
    /// prewrite, and a group applies the commit of a lock it holds without the ownership
    /// check (the lock taken as the authority): after a move, the old owner commits.
    pub commit_to_old_owner: bool,
    /// A move's DELTA_COPY copies only transactional keys changed at or after the timestamp
    /// taken when BACKFILL started: a commit with an older timestamp that landed at the
    /// source after BACKFILL read the key is in neither copy.
    pub low_ts_commit_escapes_delta: bool,
    /// A fenced source still commits a lock it holds (elastickv M2's lane for prepared
    /// transactions, §7.1), but the move does not wait for those locks to drain before its
    /// delta copy (§3.2a): a commit through the lane after the delta copy read the key is
    /// lost on the new owner.
    pub no_post_fence_drain: bool,
    /// A reader that meets an expired secondary lock rolls it back without asking the
    /// transaction's primary (the lock's age taken as proof its coordinator gave up): the
    /// secondaries of a transaction whose coordinator died after its primary's commit are
    /// lost while the primary's write stays visible.
    pub expired_lock_rolled_back: bool,
}

impl Bugs {
    /// Parses the `--bug` names; unknown names are refused.
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Result<Bugs, String> {
        let mut bugs = Bugs::default();
        for name in names {
            match name.as_ref() {
                "no-fence" => bugs.no_fence = true,
                "early-cutover" => bugs.early_cutover = true,
                "stale-read" => bugs.stale_read = true,
                "ack-before-commit" => bugs.ack_before_commit = true,
                "split-midpoint" => bugs.split_midpoint = true,
                "proxy-fence" => bugs.proxy_fence = true,
                "abandon-keeps-target" => bugs.abandon_keeps_target = true,
                "resume-skips-delta" => bugs.resume_skips_delta = true,
                "no-read-validation" => bugs.no_read_validation = true,
                "lock-dropped-on-move" => bugs.lock_dropped_on_move = true,
                "ts-from-receiver" => bugs.ts_from_receiver = true,
                "commit-to-old-owner" => bugs.commit_to_old_owner = true,
                "low-ts-commit-escapes-delta" => bugs.low_ts_commit_escapes_delta = true,
                "no-post-fence-drain" => bugs.no_post_fence_drain = true,
                "expired-lock-rolled-back" => bugs.expired_lock_rolled_back = true,
                other => {
                    return Err(format!(
                        "unknown bug {other:?}; known bugs: {}",
                        BUG_NAMES.join(", ")
                    ))
                }
            }
        }
        Ok(bugs)
    }

    pub fn names(&self) -> Vec<&'static str> {
        let flags = [
            self.no_fence,
            self.early_cutover,
            self.stale_read,
            self.ack_before_commit,
            self.split_midpoint,
            self.proxy_fence,
            self.abandon_keeps_target,
            self.resume_skips_delta,
            self.no_read_validation,
            self.lock_dropped_on_move,
            self.ts_from_receiver,
            self.commit_to_old_owner,
            self.low_ts_commit_escapes_delta,
            self.no_post_fence_drain,
            self.expired_lock_rolled_back,
        ];
        BUG_NAMES
            .iter()
            .zip(flags)
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_is_refused() {
        let bugs = Bugs::from_names(&["no-fence", "stale-read"]).unwrap();
        assert_eq!(bugs.names(), vec!["no-fence", "stale-read"]);
        assert!(Bugs::from_names(&["nofence"])
            .unwrap_err()
            .contains("unknown bug"));
        assert_eq!(Bugs::from_names::<&str>(&[]).unwrap(), Bugs::default());
    }
}

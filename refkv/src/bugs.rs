//! Seeded bugs, each off by default and switched on only by name (`--bug NAME`). See
//! docs/refkv.md for what each breaks and which checker must catch it.
//!
//! The names are listed once, in `bug_names.rs` (faultline's detection matrix includes the
//! same file); [`FLAGS`] ties each name to its field, and a test holds every field to one
//! name.

use serde::{Deserialize, Serialize};

include!("bug_names.rs");

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

/// Each seeded bug's flag, in [`BUG_NAMES`]' order.
const FLAGS: [fn(&mut Bugs) -> &mut bool; BUG_NAMES.len()] = [
    |b| &mut b.no_fence,
    |b| &mut b.early_cutover,
    |b| &mut b.stale_read,
    |b| &mut b.ack_before_commit,
    |b| &mut b.split_midpoint,
    |b| &mut b.proxy_fence,
    |b| &mut b.abandon_keeps_target,
    |b| &mut b.resume_skips_delta,
    |b| &mut b.no_read_validation,
    |b| &mut b.lock_dropped_on_move,
    |b| &mut b.ts_from_receiver,
    |b| &mut b.commit_to_old_owner,
    |b| &mut b.low_ts_commit_escapes_delta,
    |b| &mut b.no_post_fence_drain,
    |b| &mut b.expired_lock_rolled_back,
];

impl Bugs {
    /// Parses the `--bug` names; unknown names are refused.
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Result<Bugs, String> {
        let mut bugs = Bugs::default();
        for name in names {
            let Some(i) = BUG_NAMES.iter().position(|n| *n == name.as_ref()) else {
                return Err(format!(
                    "unknown bug {:?}; known bugs: {}",
                    name.as_ref(),
                    BUG_NAMES.join(", ")
                ));
            };
            *FLAGS[i](&mut bugs) = true;
        }
        Ok(bugs)
    }

    /// The names of the bugs switched on, in [`BUG_NAMES`]' order.
    pub fn names(&self) -> Vec<&'static str> {
        let mut copy = *self;
        BUG_NAMES
            .iter()
            .zip(FLAGS)
            .filter(|(_, flag)| *flag(&mut copy))
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

    #[test]
    fn each_name_switches_on_its_own_field_and_every_field_has_a_name() {
        for name in BUG_NAMES {
            let on = Bugs::from_names(&[name]).unwrap();
            assert_eq!(
                on.names(),
                [name],
                "--bug {name} switches on exactly {name}"
            );
            let fields = serde_json::to_value(on).unwrap();
            let set: Vec<&String> = fields
                .as_object()
                .unwrap()
                .iter()
                .filter(|(_, v)| v.as_bool() == Some(true))
                .map(|(k, _)| k)
                .collect();
            assert_eq!(
                set,
                [&name.replace('-', "_")],
                "--bug {name} sets the field of its name"
            );
        }
        let fields = serde_json::to_value(Bugs::default()).unwrap();
        assert_eq!(
            fields.as_object().unwrap().len(),
            BUG_NAMES.len(),
            "a name per field"
        );
    }
}

//! Which runs expose which seeded refkv bug: workload, nemesis and the checkers expected to
//! catch it. The reasoning per bug is in docs/detection-matrix.md.

use analysis::checkers::{
    epoch_authority::NAME as EPOCH_AUTHORITY, isolation::NAME as ISOLATION,
    linearizable::NAME as LINEARIZABLE, set_full::NAME as SET_FULL, split::NAME as SPLIT,
};

/// One configuration of the matrix: clean refkv or one `--bug`.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `clean` or the bug's name.
    pub name: &'static str,
    pub bug: Option<&'static str>,
    pub workload: &'static str,
    /// `--nemesis` value.
    pub nemesis: &'static str,
    /// Extra `faultline test` flags (e.g. the partition shape).
    pub extra: &'static [&'static str],
    /// Runs with [`SLOW_COPIES`] (and so without the store's auto-split).
    pub slow_copies: bool,
    /// Any of these checkers saying invalid catches the bug (empty: all must be valid).
    pub expected: &'static [&'static str],
    /// For an expected checker listed here, only these anomaly kinds are the bug's symptom
    /// (e.g. an unsettled split job is invalid by epoch-authority but is not `no-fence`).
    pub expected_kinds: &'static [(&'static str, &'static [&'static str])],
}

impl Config {
    /// The `faultline test` flags that make this configuration's scenario: workload, nemesis,
    /// bug, its extra flags and the slow copies. Length and fault pace come from `extra` when
    /// the row sets them; the matrix adds its defaults otherwise. End-to-end tests that need
    /// a bug caught run exactly these, so they cannot drift from the measured row.
    pub fn scenario_args(&self) -> Vec<&'static str> {
        let mut args = vec!["--workload", self.workload, "--nemesis", self.nemesis];
        if let Some(b) = self.bug {
            args.extend(["--bug", b]);
        }
        args.extend(self.extra);
        if self.slow_copies {
            args.extend(SLOW_COPIES);
        }
        args
    }
}

/// Epoch-authority witnesses of a write committed by the wrong owner (rules (a), (b), (f)),
/// including the target of an abandoned move.
pub const WRONG_OWNER_KINDS: &[&str] = &[
    "two-groups-one-epoch",
    "committed-by-non-owner",
    "stale-epoch-write",
    "write-after-fence",
    "committed-under-abandoned-epoch",
];
/// Epoch-authority witnesses of an acknowledged write that was not committed (rule (c)).
pub const UNCOMMITTED_ACK_KINDS: &[&str] =
    &["duplicate-commit-slot", "log-index-reused-across-terms"];

/// refkv's seeded bugs, in the order the matrix runs them: refkv's own list
/// (`refkv/src/bug_names.rs`, the file refkv's `--bug` parser includes).
pub const BUGS: [&str; BUG_NAMES.len()] = BUG_NAMES;

mod refkv_bug_names {
    include!("../../refkv/src/bug_names.rs");
}
use refkv_bug_names::BUG_NAMES;

/// The clean configurations, in the order the matrix runs them: `clean` (the key-value
/// hotspot under every fault the key-value bugs need), `clean-txn` (the transactional
/// append workload under every fault the transaction bugs need) and `clean-txn+dynamodb`
/// (the same through refkv's DynamoDB API, `--client dynamodb`).
pub const CLEAN: [&str; 3] = ["clean", "clean-txn", "clean-txn+dynamodb"];

/// Bug rows that run a bug's own scenario through another client (`<bug>+<client>`), run
/// after the bugs' own rows: the transaction bugs seen through the DynamoDB API.
pub const VIA_CLIENT: [&str; 2] = ["ts-from-receiver+dynamodb", "lock-dropped-on-move+dynamodb"];

/// `--client dynamodb`: the run's transactions through refkv's DynamoDB API.
const DYNAMODB: [&str; 2] = ["--client", "dynamodb"];

/// A configuration by its name: a clean one of [`CLEAN`] or a bug's.
pub fn config_named(name: &str) -> Option<Config> {
    ROWS.iter().find(|c| c.name == name).cloned()
}

/// Copies at 20 kB/s: the range a transaction's primary starts (a few kB of transactional
/// cells) spends a few hundred milliseconds in BACKFILL, so txn-move's `primary-backfill`
/// aim releases its transaction there, after the copy read the lock and before the fence.
pub const TXN_COPIES: &str = "--server-arg=--copy-bytes-per-sec=20000";

/// Copies throttled to 50 bytes/s: a moving range of a few dozen bytes then spends about a
/// second in BACKFILL and in DELTA_COPY, longer than `docker pause` or `docker kill` takes,
/// so a fault aimed at those phases lands in them. The store's auto-split goes off with
/// them: its own split of the large hot insert range would not settle at that rate, and a
/// move fault would wait on that job instead of its own.
pub const SLOW_COPIES: [&str; 2] = ["--server-arg=--copy-bytes-per-sec=50", "--no-auto-split"];

/// Every configuration of the matrix: the clean ones first, then one per seeded bug. The
/// reasoning per row is in docs/detection-matrix.md.
const ROWS: [Config; CLEAN.len() + BUGS.len() + VIA_CLIENT.len()] = [
    // Every fault the bugs need, so a clean pass means no false positive under any of them.
    Config {
        name: "clean",
        bug: None,
        workload: "hotspot",
        // The own-clock faults (split, move, abort-move) take turns, each lasting until
        // what it started settles: at a 4 s pace abort-move's turn comes about 33 s in, and
        // 60 s leaves room for it after slow turns (a held move fault, a kill or partition
        // slowing the cluster) and gives split and move a second turn. No auto-split: at
        // slow copies the store's own split of a large hot range would not settle in time.
        nemesis: "partition,kill,split,move,abort-move",
        extra: &[
            "--time-limit",
            "60",
            "--nemesis-interval",
            "4",
            "--move-phase",
            "BACKFILL",
        ],
        slow_copies: true,
        expected: &[],
        expected_kinds: &[],
    },
    // Clean refkv running transactions under every fault, txn-move's aims included, at the
    // copy rate the `primary-backfill` aim needs (a BACKFILL long enough to release a
    // transaction in). 120 s: five faults share the turns, and in 60 s txn-move got two, both
    // without effect in 2 of 8 runs on a loaded 2-core machine (no transaction reached its
    // commit point among kills and partitions, or the move outlasted the hold), which leaves
    // vacuity unknown.
    Config {
        name: "clean-txn",
        bug: None,
        workload: "append",
        nemesis: "partition,kill,split,move,txn-move",
        extra: &["--time-limit", "120", "--nemesis-interval", "3", TXN_COPIES],
        slow_copies: false,
        expected: &[],
        expected_kinds: &[],
    },
    // clean-txn through the DynamoDB API: the same faults, the transactions sent as
    // UpdateItem, GetItem, TransactGetItems and TransactWriteItems.
    Config {
        name: "clean-txn+dynamodb",
        bug: None,
        workload: "append",
        nemesis: "partition,kill,split,move,txn-move",
        extra: &[
            "--time-limit",
            "120",
            "--nemesis-interval",
            "3",
            TXN_COPIES,
            DYNAMODB[0],
            DYNAMODB[1],
        ],
        slow_copies: false,
        expected: &[],
        expected_kinds: &[],
    },
    // The source keeps accepting writes after cutover. Every move turn starts a
    // cross-group move of the hot range and pauses its source leader from BACKFILL until
    // the job is past CUTOVER, then sends 20 stale writes through it under the pre-move
    // epoch. The action is pinned: only pause-source-leader sends stale writes, and a
    // rotation would use it on turn 0 alone. No-fence commits them whatever the paused
    // node's view (the epoch check at apply is skipped), as it does the writes routed
    // there during the (slow) delta copy. 20 s, no forced splits.
    Config {
        name: "no-fence",
        bug: Some("no-fence"),
        workload: "hotspot",
        nemesis: "move",
        extra: &[
            "--time-limit",
            "20",
            "--nemesis-interval",
            "5",
            "--move-phase",
            "BACKFILL",
            "--move-action",
            "pause-source-leader",
        ],
        slow_copies: true,
        expected: &[EPOCH_AUTHORITY],
        expected_kinds: &[(EPOCH_AUTHORITY, WRONG_OWNER_KINDS)],
    },
    // Writes accepted during the move are lost: inserts into the moved hot range vanish
    // (set-full), register writes regress (linearizable). Only the writes the source
    // accepts after the backfill's snapshot are lost: at full copy speed a hot key's move
    // cuts over ~0.1 s after it, and 1-2 runs in 10 had no write in that window. Slow
    // copies keep it open for seconds.
    Config {
        name: "early-cutover",
        bug: Some("early-cutover"),
        workload: "hotspot",
        nemesis: "split",
        extra: &["--nemesis-interval", "3"],
        slow_copies: true,
        expected: &[SET_FULL, LINEARIZABLE, EPOCH_AUTHORITY],
        expected_kinds: &[(EPOCH_AUTHORITY, WRONG_OWNER_KINDS)],
    },
    // Reads served from local state: isolate the leader so followers (and the old leader)
    // lag; register reads on a few keys see the stale value.
    Config {
        name: "stale-read",
        bug: Some("stale-read"),
        workload: "register",
        nemesis: "partition",
        extra: &["--partition-modes", "leader"],
        slow_copies: false,
        expected: &[LINEARIZABLE],
        expected_kinds: &[],
    },
    // Acked before a quorum commits: kills and partitions of the leader discard the
    // uncommitted tail; the acked write disappears or its log slot is reused.
    Config {
        name: "ack-before-commit",
        bug: Some("ack-before-commit"),
        workload: "register",
        nemesis: "kill,partition",
        extra: &["--partition-modes", "leader,one"],
        slow_copies: false,
        expected: &[LINEARIZABLE, EPOCH_AUTHORITY],
        expected_kinds: &[(EPOCH_AUTHORITY, UNCOMMITTED_ACK_KINDS)],
    },
    // An effectiveness bug: auto-split at the byte midpoint of the hot route, no faults.
    Config {
        name: "split-midpoint",
        bug: Some("split-midpoint"),
        workload: "hotspot",
        nemesis: "none",
        extra: &[],
        slow_copies: false,
        expected: &[SPLIT],
        expected_kinds: &[],
    },
    // The fence is checked where a write is routed, against that node's view: a source
    // leader paused in BACKFILL (before its view shows the fence) and held across the
    // cutover admits the stale writes sent through it as it wakes; the source commits them.
    Config {
        name: "proxy-fence",
        bug: Some("proxy-fence"),
        workload: "hotspot",
        nemesis: "move",
        extra: &[
            "--nemesis-interval",
            "6",
            "--move-phase",
            "BACKFILL",
            "--move-action",
            "pause-source-leader",
        ],
        slow_copies: true,
        expected: &[EPOCH_AUTHORITY],
        expected_kinds: &[(EPOCH_AUTHORITY, WRONG_OWNER_KINDS)],
    },
    // The abandon leaves the target owning the range: abandoned mid delta copy (the target
    // is given `Own` as the interrupted copy ends), it accepts the writes sent to it under
    // the job's never-published new epoch while the source owns the range again.
    Config {
        name: "abandon-keeps-target",
        bug: Some("abandon-keeps-target"),
        workload: "hotspot",
        nemesis: "abort-move",
        // Later jobs of the range keep failing under the bug: a short recovery wait.
        extra: &[
            "--nemesis-interval",
            "6",
            "--abort-phase",
            "DELTA_COPY",
            "--recovery-timeout",
            "20",
        ],
        slow_copies: true,
        expected: &[EPOCH_AUTHORITY],
        expected_kinds: &[(EPOCH_AUTHORITY, WRONG_OWNER_KINDS)],
    },
    // The migrator that inherits a job in DELTA_COPY skips the copy: kill the migrator in
    // DELTA_COPY, and writes acknowledged between the backfill and the fence are missing at
    // the target after the cutover. A read of the key shows it, but a write that comes
    // first hides it: at the default mix (half the register ops write or cas) 2 runs in
    // 10 hid all three of their losses, so register ops here are 80 % reads.
    Config {
        name: "resume-skips-delta",
        bug: Some("resume-skips-delta"),
        workload: "hotspot",
        nemesis: "move",
        extra: &[
            "--nemesis-interval",
            "6",
            "--move-phase",
            "DELTA_COPY",
            "--move-action",
            "kill-migrator",
            "--read-fraction",
            "0.8",
        ],
        slow_copies: true,
        expected: &[LINEARIZABLE, SET_FULL],
        expected_kinds: &[],
    },
    // Transactions commit without the write-conflict check: a register read at the start
    // and overwritten at the commit loses the writes committed in between (lost update,
    // G-single, G2-item). Contention on the workload's few hot keys is enough: no faults.
    Config {
        name: "no-read-validation",
        bug: Some("no-read-validation"),
        workload: "rw-register",
        nemesis: "none",
        extra: &[],
        slow_copies: false,
        expected: &[ISOLATION],
        expected_kinds: &[],
    },
    // A move copies transactional keys without their locks: a transaction whose
    // secondary key moves between that key's prewrite and its commit (the commit is
    // fenced, then goes to the new owner, which has no lock) is acknowledged with that
    // append lost. The txn-move nemesis makes that happen on every effective turn: it
    // holds a transaction with a secondary write at its commit point (refkv's test-only
    // TxnHold), moves that secondary's key to another group (keeping the primary where
    // it is) and releases the transaction once the job is past the source's fence.
    Config {
        name: "lock-dropped-on-move",
        bug: Some("lock-dropped-on-move"),
        workload: "append",
        nemesis: "txn-move",
        extra: &[
            "--nemesis-interval",
            "3",
            "--time-limit",
            "60",
            "--txn-move-aim",
            "secondary",
        ],
        slow_copies: false,
        expected: &[ISOLATION],
        expected_kinds: &[],
    },
    // Timestamps from the receiving node's own batch: a transaction started through one
    // node after another node's transaction committed reads a snapshot from before it
    // (a real-time violation of strict serializability).
    Config {
        name: "ts-from-receiver",
        bug: Some("ts-from-receiver"),
        workload: "append",
        nemesis: "none",
        extra: &[],
        slow_copies: false,
        expected: &[ISOLATION],
        expected_kinds: &[],
    },
    // The old owner commits a lock it still holds after the move (the coordinator sends
    // the commit where the prewrite went, and the lock is taken as the authority to
    // commit): the new owner keeps the primary's lock, which a reader rolls back once it
    // expires, so an acknowledged transaction loses its primary's write while its
    // secondaries' are visible. txn-move's primary-cutover aim moves a held
    // transaction's primary and releases it once the copies are done.
    Config {
        name: "commit-to-old-owner",
        bug: Some("commit-to-old-owner"),
        workload: "append",
        nemesis: "txn-move",
        extra: &[
            "--nemesis-interval",
            "3",
            "--time-limit",
            "60",
            "--txn-move-aim",
            "primary-cutover",
        ],
        slow_copies: false,
        expected: &[ISOLATION],
        expected_kinds: &[],
    },
    // DELTA_COPY copies only keys changed from BACKFILL's timestamp on: a primary
    // committed at the source during BACKFILL, after the copy read its lock, with a
    // commit timestamp from before the move, reaches the new owner as a bare lock, which
    // a reader rolls back. txn-move's primary-backfill aim releases a held transaction
    // whose primary moves while the job is in BACKFILL.
    Config {
        name: "low-ts-commit-escapes-delta",
        bug: Some("low-ts-commit-escapes-delta"),
        workload: "append",
        nemesis: "txn-move",
        extra: &[
            "--nemesis-interval",
            "3",
            "--time-limit",
            "60",
            "--txn-move-aim",
            "primary-backfill",
            TXN_COPIES,
        ],
        slow_copies: false,
        expected: &[ISOLATION],
        expected_kinds: &[],
    },
    // A fenced source commits the locks it holds (M2's lane) and the move does not wait
    // for them before its delta copy: a primary committed through the lane after the
    // delta copy read it reaches the new owner as a bare lock, which a reader rolls back.
    // txn-move's primary-delta aim moves a held transaction's primary and releases it
    // once the job is in DELTA_COPY.
    Config {
        name: "no-post-fence-drain",
        bug: Some("no-post-fence-drain"),
        workload: "append",
        nemesis: "txn-move",
        extra: &[
            "--nemesis-interval",
            "3",
            "--time-limit",
            "60",
            "--txn-move-aim",
            "primary-delta",
            TXN_COPIES,
        ],
        slow_copies: false,
        expected: &[ISOLATION],
        expected_kinds: &[],
    },
    // Readers roll an expired secondary lock back without asking the primary: the
    // secondaries of a transaction whose coordinator died after its primary's commit are
    // lost, its primary's write visible. txn-move's coordinator-kill aim holds a
    // transaction there and kills its coordinator (down 2 s; a turn every 5 s leaves
    // the cluster whole between kills).
    Config {
        name: "expired-lock-rolled-back",
        bug: Some("expired-lock-rolled-back"),
        workload: "append",
        nemesis: "txn-move",
        extra: &[
            "--nemesis-interval",
            "5",
            "--time-limit",
            "60",
            "--txn-move-aim",
            "coordinator-kill",
        ],
        slow_copies: false,
        expected: &[ISOLATION],
        expected_kinds: &[],
    }, // ts-from-receiver's scenario through the DynamoDB API: single-key appends are
    // UpdateItem, the rest TransactGetItems then TransactWriteItems.
    Config {
        name: "ts-from-receiver+dynamodb",
        bug: Some("ts-from-receiver"),
        workload: "append",
        nemesis: "none",
        extra: &DYNAMODB,
        slow_copies: false,
        expected: &[ISOLATION],
        expected_kinds: &[],
    },
    // lock-dropped-on-move's scenario through the DynamoDB API: txn-move holds a
    // TransactWriteItems at its commit point as it holds a gRPC transaction.
    Config {
        name: "lock-dropped-on-move+dynamodb",
        bug: Some("lock-dropped-on-move"),
        workload: "append",
        nemesis: "txn-move",
        extra: &[
            "--nemesis-interval",
            "3",
            "--time-limit",
            "60",
            "--txn-move-aim",
            "secondary",
            DYNAMODB[0],
            DYNAMODB[1],
        ],
        slow_copies: false,
        expected: &[ISOLATION],
        expected_kinds: &[],
    },
];

/// The configuration for clean refkv (`None`: the `clean` row) or a bug.
pub fn config_for(bug: Option<&str>) -> Option<Config> {
    match bug {
        None => config_named("clean"),
        Some(b) => ROWS.iter().find(|c| c.bug == Some(b)).cloned(),
    }
}

/// Every bug row's name: the bugs, then [`VIA_CLIENT`].
pub fn bug_rows() -> impl Iterator<Item = &'static str> {
    BUGS.into_iter().chain(VIA_CLIENT)
}

/// Parses `--bugs`: `all`, `none`, or a comma-separated list of bug row names (a bug, or a
/// bug through another client of [`VIA_CLIENT`]).
pub fn parse_bugs(s: &str) -> Result<Vec<&'static str>, String> {
    match s.trim() {
        "all" => return Ok(bug_rows().collect()),
        "none" | "" => return Ok(Vec::new()),
        _ => {}
    }
    let mut out = Vec::new();
    for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let Some(known) = bug_rows().find(|b| *b == name) else {
            return Err(format!(
                "--bugs: unknown bug {name:?} (known: {}, or all, none)",
                bug_rows().collect::<Vec<_>>().join(", ")
            ));
        };
        if !out.contains(&known) {
            out.push(known);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bug_has_a_configuration_with_an_expected_checker() {
        for bug in BUGS {
            let c = config_for(Some(bug)).expect("configured");
            assert_eq!(c.bug, Some(bug));
            assert!(
                !c.expected.is_empty(),
                "{bug} names the checker that must catch it"
            );
        }
        assert!(config_for(None).expect("clean").expected.is_empty());
        assert!(config_for(Some("typo")).is_none());
    }

    #[test]
    fn the_rows_are_the_clean_configurations_then_one_per_bug_in_order() {
        let names: Vec<&str> = ROWS.iter().map(|c| c.name).collect();
        let expected: Vec<&str> = CLEAN.iter().copied().chain(bug_rows()).collect();
        assert_eq!(names, expected);
        for row in &ROWS[CLEAN.len()..CLEAN.len() + BUGS.len()] {
            assert_eq!(row.bug, Some(row.name), "a bug's row is named after it");
        }
        assert_eq!(config_named("clean-txn").unwrap().workload, "append");
    }

    #[test]
    fn a_row_through_another_client_is_its_bug_row_plus_that_client() {
        for name in VIA_CLIENT {
            let via = config_named(name).expect("configured");
            let (bug, client) = name.split_once('+').expect("<bug>+<client>");
            let own = config_for(Some(bug)).expect("the bug's own row");
            assert_eq!(via.bug, Some(bug));
            assert_eq!(own.name, bug, "config_for finds the bug's own row first");
            let mut args = own.scenario_args();
            args.extend(["--client", client]);
            let (mut want, mut got) = (args, via.scenario_args());
            want.sort_unstable();
            got.sort_unstable();
            assert_eq!(got, want, "{name} runs {bug}'s scenario through {client}");
            assert_eq!(via.expected, own.expected);
        }
        let clean = config_named("clean-txn+dynamodb").unwrap().scenario_args();
        let mut want = config_named("clean-txn").unwrap().scenario_args();
        want.extend(DYNAMODB);
        assert_eq!(clean, want);
    }

    #[test]
    fn bug_lists_parse_and_unknown_names_are_refused() {
        assert_eq!(parse_bugs("all").unwrap(), bug_rows().collect::<Vec<_>>());
        assert_eq!(
            parse_bugs("ts-from-receiver+dynamodb").unwrap(),
            vec!["ts-from-receiver+dynamodb"]
        );
        assert!(parse_bugs("none").unwrap().is_empty());
        assert_eq!(
            parse_bugs("stale-read, no-fence,stale-read").unwrap(),
            vec!["stale-read", "no-fence"]
        );
        assert!(parse_bugs("no-fence,nofence")
            .unwrap_err()
            .contains("nofence"));
    }
}

//! Epoch-authority checker: each rule (a)–(e) with a passing and a failing hand-built
//! history, plus the no-metadata and no-watcher cases.

mod epoch_support;

use analysis::checkers::epoch_authority::{check, EpochAuthorityOptions};
use analysis::history::OpType;
use analysis::verdict::{CheckerResult, Validity};
use epoch_support::*;
use serde_json::json;

fn run(b: &HistoryBuilder) -> CheckerResult {
    check(&b.build(), &EpochAuthorityOptions::default())
}

/// A clean move: route 1 `["", "")` on group 1 epoch 1, moved to group 2 at epoch 2, with
/// writes before and after committed by the right owner.
fn clean_move() -> HistoryBuilder {
    let mut h = HistoryBuilder::new();
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    h.at_ms(10).put(0, "a", 1, meta(1, 1, 10, 1, 1));
    h.put(1, "b", 2, meta(1, 1, 11, 1, 1));
    h.at_ms(100)
        .catalog(2, vec![route(1, "", "", 2, 2)], vec![]);
    h.at_ms(110).put(0, "a", 3, meta(2, 1, 5, 1, 2));
    h.put(1, "b", 4, meta(2, 1, 6, 1, 2));
    h
}

#[test]
fn clean_move_is_valid_on_every_rule() {
    let r = run(&clean_move());
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.reason);
    for rule in ["a", "b", "c", "d", "e", "f"] {
        assert_eq!(rule_validity(&r, rule), json!(true), "rule {rule}");
    }
    assert_eq!(r.counts["a-checked"], 4);
    assert!(r.anomalies.is_empty());
}

// --- rule (a) ---------------------------------------------------------------------------

#[test]
fn rule_a_flags_two_groups_committing_one_epoch() {
    let mut h = HistoryBuilder::new();
    h.put(0, "a", 1, meta(1, 1, 10, 7, 1));
    h.put(1, "b", 2, meta(2, 1, 10, 7, 1));
    let r = run(&h);
    assert_eq!(r.valid, Validity::Invalid);
    assert_eq!(rule_validity(&r, "a"), json!(false));
    let w = &r.anomalies[0];
    assert_eq!(w["kind"], "two-groups-one-epoch");
    assert_eq!(
        (w["op"].as_u64(), w["other_op"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(
        (
            w["route"].as_u64(),
            w["epoch"].as_u64(),
            w["group"].as_u64()
        ),
        (Some(7), Some(1), Some(2))
    );
}

#[test]
fn rule_a_flags_a_write_committed_by_a_group_the_catalog_does_not_name() {
    let mut h = clean_move();
    // After the move, the old owner reports the *new* epoch: committed by a non-owner.
    h.at_ms(200).put(2, "c", 5, meta(1, 1, 12, 1, 2));
    let r = run(&h);
    assert_eq!(rule_validity(&r, "a"), json!(false));
    let w = r.anomalies.iter().find(|a| a["rule"] == "a").unwrap();
    assert_eq!(w["kind"], "committed-by-non-owner");
    assert_eq!(w["catalog_group"], 2);
    assert_eq!(w["catalog_version"], 2);
}

/// Route 1 split at "m" by job 1 (source group 1, target group 2, new epoch 5), observed in
/// DELTA_COPY, then ABANDONED: the moving child, route 3 `["m", "")`, stays at group 1 epoch 1.
fn abandoned_move() -> HistoryBuilder {
    let job = |phase: &str| analysis::history::SplitJobRecord {
        new_epoch: Some(5),
        ..job(1, 1, "m", 1, 2, phase)
    };
    let children = || vec![child(2, "", "m", 1, 1, 1), child(3, "m", "", 1, 1, 1)];
    let mut h = HistoryBuilder::new();
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    h.at_ms(10).catalog(2, children(), vec![job("DELTA_COPY")]);
    h.at_ms(100).catalog(3, children(), vec![job("ABANDONED")]);
    h
}

#[test]
fn rule_a_flags_the_target_of_an_abandoned_move_committing_under_its_new_epoch() {
    let mut h = abandoned_move();
    h.at_ms(200).put(0, "p", 1, meta(2, 1, 3, 3, 5));
    let r = run(&h);
    assert_eq!(rule_validity(&r, "a"), json!(false), "{:?}", r.anomalies);
    let w = r
        .anomalies
        .iter()
        .find(|a| a["rule"] == "a")
        .expect("a rule (a) witness");
    assert_eq!(w["kind"], "committed-under-abandoned-epoch");
    assert_eq!(
        (w["group"].as_u64(), w["epoch"].as_u64(), w["job"].as_u64()),
        (Some(2), Some(5), Some(1))
    );
    assert_eq!(w["catalog_group"], 1);
}

#[test]
fn rule_a_does_not_judge_new_epoch_writes_before_the_abandon_or_once_the_epoch_is_published() {
    // Invoked while the catalog showed the job in DELTA_COPY (the target may own by then).
    let mut before = HistoryBuilder::new();
    let job = analysis::history::SplitJobRecord {
        new_epoch: Some(5),
        ..job(1, 1, "m", 1, 2, "DELTA_COPY")
    };
    before.catalog(
        2,
        vec![child(2, "", "m", 1, 1, 1), child(3, "m", "", 1, 1, 1)],
        vec![job],
    );
    before.at_ms(50).put(0, "p", 1, meta(2, 1, 3, 3, 5));
    assert_eq!(rule_validity(&run(&before), "a"), json!(true));
    let mut published = abandoned_move();
    published.at_ms(200).put(0, "p", 1, meta(2, 1, 3, 3, 5));
    published.at_ms(300).catalog(
        4,
        vec![child(2, "", "m", 1, 1, 1), child(3, "m", "", 2, 5, 1)],
        vec![],
    );
    let r = run(&published);
    assert!(
        r.anomalies
            .iter()
            .all(|a| a["kind"] != "committed-under-abandoned-epoch"),
        "{:?}",
        r.anomalies
    );
}

// --- rule (b) ---------------------------------------------------------------------------

#[test]
fn rule_b_accepts_an_old_epoch_write_invoked_before_the_move_was_observed() {
    let mut h = HistoryBuilder::new();
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    h.at_ms(10).invoke(0, "put", "a", json!(1));
    h.at_ms(100)
        .catalog(2, vec![route(1, "", "", 2, 2)], vec![]);
    h.at_ms(101).complete(
        OpType::Ok,
        0,
        "put",
        "a",
        json!(1),
        Some(meta(1, 1, 10, 1, 1)),
    );
    let r = run(&h);
    assert_eq!(rule_validity(&r, "b"), json!(true));
    assert_eq!(r.counts["b-checked"], 1);
}

#[test]
fn rule_b_flags_a_write_acknowledged_under_an_epoch_superseded_before_its_invoke() {
    let mut h = clean_move();
    // no-fence: the old owner keeps acknowledging writes under epoch 1 after cutover.
    let stale = h.at_ms(300).put(3, "z", 9, meta(1, 1, 13, 1, 1));
    let r = run(&h);
    assert_eq!(r.valid, Validity::Invalid);
    assert_eq!(rule_validity(&r, "b"), json!(false));
    let w = r.anomalies.iter().find(|a| a["rule"] == "b").unwrap();
    assert_eq!(w["kind"], "stale-epoch-write");
    assert_eq!(w["op"].as_u64(), Some(stale));
    assert_eq!(
        (w["epoch"].as_u64(), w["group"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(
        (w["current_epoch"].as_u64(), w["current_group"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(w["catalog_version"], 2);
    assert_eq!(
        w["catalog_op"], 5,
        "the watcher event that makes the write stale"
    );
}

#[test]
fn rule_b_flags_a_parent_route_write_after_its_child_moved_to_another_group() {
    let mut h = HistoryBuilder::new();
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    h.at_ms(50).catalog(
        2,
        vec![child(2, "", "m", 1, 1, 1), child(3, "m", "", 2, 2, 1)],
        vec![],
    );
    h.at_ms(60).put(0, "q", 1, meta(1, 1, 20, 1, 1));
    let r = run(&h);
    let w = r
        .anomalies
        .iter()
        .find(|a| a["rule"] == "b")
        .expect("stale write flagged");
    assert_eq!(w["current_route"], 3);
    // A write to the left child's range under the parent's epoch stays with its group: fine.
    let mut ok = HistoryBuilder::new();
    ok.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    ok.at_ms(50).catalog(
        2,
        vec![child(2, "", "m", 1, 1, 1), child(3, "m", "", 2, 2, 1)],
        vec![],
    );
    ok.at_ms(60).put(0, "c", 1, meta(1, 1, 20, 1, 1));
    assert_eq!(rule_validity(&run(&ok), "b"), json!(true));
}

// --- rule (c) ---------------------------------------------------------------------------

#[test]
fn rule_c_accepts_distinct_commit_slots() {
    let r = run(&clean_move());
    assert_eq!(rule_validity(&r, "c"), json!(true));
    assert_eq!(r.counts["c-checked"], 4);
}

#[test]
fn rule_c_flags_two_writes_in_one_commit_slot() {
    let mut h = HistoryBuilder::new();
    let first = h.put(0, "a", 1, meta(1, 3, 42, 1, 1));
    let second = h.put(1, "b", 2, meta(1, 3, 42, 1, 1));
    let r = run(&h);
    assert_eq!(rule_validity(&r, "c"), json!(false));
    let w = &r.anomalies[0];
    assert_eq!(w["kind"], "duplicate-commit-slot");
    assert_eq!(
        (w["op"].as_u64(), w["other_op"].as_u64()),
        (Some(second), Some(first))
    );
}

#[test]
fn rule_c_flags_a_log_index_acknowledged_in_two_terms() {
    // ack-before-commit: the term-3 entry at index 42 was acknowledged, then overwritten.
    let mut h = HistoryBuilder::new();
    h.put(0, "a", 1, meta(1, 3, 42, 1, 1));
    h.put(1, "b", 2, meta(1, 4, 42, 1, 1));
    let r = run(&h);
    assert_eq!(r.anomalies[0]["kind"], "log-index-reused-across-terms");
    assert_eq!(r.anomalies[0]["other_term"], 3);
}

// --- rule (d) ---------------------------------------------------------------------------

#[test]
fn rule_d_accepts_epochs_that_only_grow_per_process() {
    let r = run(&clean_move());
    assert_eq!(rule_validity(&r, "d"), json!(true));
}

#[test]
fn rule_d_flags_a_process_seeing_an_older_epoch_for_a_key() {
    let mut h = HistoryBuilder::new();
    h.put(0, "a", 1, meta(2, 1, 5, 1, 2));
    let back = h.acked(0, "read", "a", json!(1), Some(meta(1, 1, 9, 1, 1)));
    let r = run(&h);
    assert_eq!(rule_validity(&r, "d"), json!(false));
    let w = r.anomalies.iter().find(|a| a["rule"] == "d").unwrap();
    assert_eq!(w["op"].as_u64(), Some(back));
    assert_eq!(
        (w["epoch"].as_u64(), w["previous_epoch"].as_u64()),
        (Some(1), Some(2))
    );
    // Another process, or another key, is not ordered by this rule.
    let mut other = HistoryBuilder::new();
    other.put(0, "a", 1, meta(2, 1, 5, 1, 2));
    other.acked(1, "read", "a", json!(1), Some(meta(1, 1, 9, 1, 1)));
    other.acked(0, "read", "b", json!(1), Some(meta(1, 1, 9, 1, 1)));
    assert_eq!(rule_validity(&run(&other), "d"), json!(true));
}

#[test]
fn rule_d_flags_a_return_to_an_ancestor_route() {
    let mut h = HistoryBuilder::new();
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    h.at_ms(10).catalog(
        2,
        vec![child(2, "", "m", 1, 1, 1), child(3, "m", "", 1, 1, 1)],
        vec![],
    );
    h.at_ms(20).put(0, "x", 1, meta(1, 1, 5, 3, 1));
    h.put(0, "x", 2, meta(1, 1, 6, 1, 1));
    let r = run(&h);
    assert_eq!(rule_validity(&r, "d"), json!(false));
}

// --- rule (e) ---------------------------------------------------------------------------

fn split_catalog() -> HistoryBuilder {
    let mut h = HistoryBuilder::new();
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    h.at_ms(10).catalog(
        2,
        vec![child(2, "", "m", 1, 1, 1), child(3, "m", "", 1, 1, 1)],
        vec![job(1, 1, "m", 1, 2, "PLANNED")],
    );
    h.at_ms(20).catalog(
        3,
        vec![child(2, "", "m", 1, 1, 1), child(3, "m", "", 2, 2, 1)],
        vec![job(1, 1, "m", 1, 2, "CUTOVER")],
    );
    h.at_ms(30).catalog(
        4,
        vec![child(2, "", "m", 1, 1, 1), child(3, "m", "", 2, 2, 1)],
        vec![job(1, 1, "m", 1, 2, "SPLIT_JOB_PHASE_DONE")],
    );
    h
}

fn catalog_kinds(r: &CheckerResult) -> Vec<String> {
    r.anomalies
        .iter()
        .filter(|a| a["rule"] == "e")
        .map(|a| a["kind"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn rule_e_accepts_a_split_and_move_that_settles() {
    let r = run(&split_catalog());
    assert_eq!(rule_validity(&r, "e"), json!(true), "{:?}", r.anomalies);
    assert_eq!(r.counts["e-checked"], 4);
}

#[test]
fn rule_e_flags_versions_going_backwards() {
    let mut h = split_catalog();
    h.at_ms(40).catalog(
        3,
        vec![child(2, "", "m", 1, 1, 1), child(3, "m", "", 2, 2, 1)],
        vec![],
    );
    assert_eq!(catalog_kinds(&run(&h)), ["version-went-backwards"]);
    // Re-observing the same version with the same content is not a violation.
    let mut again = split_catalog();
    again.at_ms(40).catalog(
        4,
        vec![child(2, "", "m", 1, 1, 1), child(3, "m", "", 2, 2, 1)],
        vec![job(1, 1, "m", 1, 2, "SPLIT_JOB_PHASE_DONE")],
    );
    assert_eq!(rule_validity(&run(&again), "e"), json!(true));
}

#[test]
fn rule_e_flags_gaps_overlaps_and_bounded_ends() {
    for (routes, kind) in [
        (
            vec![route(1, "", "c", 1, 1), route(2, "d", "", 1, 1)],
            "gap",
        ),
        (
            vec![route(1, "", "d", 1, 1), route(2, "c", "", 1, 1)],
            "overlap",
        ),
        (
            vec![route(1, "", "c", 1, 1), route(2, "c", "x", 1, 1)],
            "gap",
        ),
        (vec![route(1, "b", "", 1, 1)], "gap"),
        (
            vec![
                route(1, "", "c", 1, 1),
                route(2, "c", "c", 1, 1),
                route(3, "c", "", 1, 1),
            ],
            "empty-route",
        ),
    ] {
        let mut h = HistoryBuilder::new();
        h.catalog(1, routes.clone(), vec![]);
        assert_eq!(catalog_kinds(&run(&h)), [kind], "{routes:?}");
    }
}

#[test]
fn rule_e_flags_inconsistent_lineage() {
    // A new route whose parent was never observed (consecutive versions: nothing missed).
    let mut h = HistoryBuilder::new();
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    h.catalog(
        2,
        vec![child(2, "", "m", 1, 1, 9), child(3, "m", "", 1, 1, 1)],
        vec![],
    );
    assert!(catalog_kinds(&run(&h)).contains(&"parent-never-existed".to_string()));
    // Children that do not tile their parent (the parent [a, "") lost [a, b)).
    let mut h = HistoryBuilder::new();
    h.catalog(
        1,
        vec![route(1, "", "a", 1, 1), route(2, "a", "", 1, 1)],
        vec![],
    );
    h.catalog(
        2,
        vec![child(3, "", "b", 1, 1, 1), child(4, "b", "", 1, 1, 2)],
        vec![],
    );
    let kinds = catalog_kinds(&run(&h));
    assert!(
        kinds.contains(&"child-outside-parent".to_string()),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&"children-do-not-tile-parent".to_string()),
        "{kinds:?}"
    );
    // An owner change that keeps the epoch.
    let mut h = HistoryBuilder::new();
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    h.catalog(2, vec![route(1, "", "", 2, 1)], vec![]);
    assert_eq!(
        catalog_kinds(&run(&h)),
        ["owner-changed-without-epoch-bump"]
    );
}

#[test]
fn rule_e_flags_a_split_key_on_the_route_boundary() {
    let mut h = HistoryBuilder::new();
    h.catalog(
        1,
        vec![route(1, "", "m", 1, 1), route(2, "m", "", 1, 1)],
        vec![job(1, 2, "m", 1, 2, "ABANDONED")],
    );
    let r = run(&h);
    assert_eq!(catalog_kinds(&r), ["split-key-not-interior"]);
    assert_eq!(r.anomalies[0]["catalog_op"], 0);
}

#[test]
fn rule_e_flags_a_split_job_that_never_settles() {
    let mut h = HistoryBuilder::new();
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    h.catalog(
        2,
        vec![child(2, "", "m", 1, 1, 1), child(3, "m", "", 1, 1, 1)],
        vec![job(5, 1, "m", 1, 2, "DELTA_COPY")],
    );
    h.at_ms(100).nemesis(
        "stop-partition",
        json!({"targets": ["n1"], "effective": true}),
    );
    let r = run(&h);
    assert_eq!(catalog_kinds(&r), ["split-job-not-settled"]);
    assert_eq!(r.anomalies[0]["job"], 5);
    assert_eq!(r.anomalies[0]["phase"], "DELTA_COPY");
}

#[test]
fn rule_e_is_unknown_when_a_job_vanishes_unsettled() {
    let mut h = HistoryBuilder::new();
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    h.catalog(
        2,
        vec![child(2, "", "m", 1, 1, 1), child(3, "m", "", 1, 1, 1)],
        vec![job(5, 1, "m", 1, 2, "BACKFILL")],
    );
    h.catalog(
        3,
        vec![child(2, "", "m", 1, 1, 1), child(3, "m", "", 1, 1, 1)],
        vec![],
    );
    let r = run(&h);
    assert_eq!(rule_validity(&r, "e"), json!("unknown"));
}

// --- missing evidence -------------------------------------------------------------------

#[test]
fn no_metadata_is_never_valid() {
    // Stock elastickv: acknowledged writes without commit metadata, a watcher that works.
    let mut h = HistoryBuilder::new();
    h.catalog(1, vec![route(1, "", "", 1, 0)], vec![]);
    h.at_ms(5).acked(0, "put", "a", json!(1), None);
    h.acked(1, "put", "b", json!(2), None);
    let r = run(&h);
    assert_eq!(r.valid, Validity::Unknown);
    for rule in ["a", "b", "c", "d"] {
        assert_eq!(rule_validity(&r, rule), json!("unknown"), "rule {rule}");
    }
    assert_eq!(rule_validity(&r, "e"), json!(true));
    assert!(r.reason.unwrap().contains("no commit metadata"));
}

#[test]
fn catalog_rules_are_unknown_without_watcher_events() {
    let mut h = HistoryBuilder::new();
    h.put(0, "a", 1, meta(1, 1, 1, 1, 1));
    let r = run(&h);
    assert_eq!(r.valid, Validity::Unknown);
    assert_eq!(rule_validity(&r, "a"), json!(true));
    assert_eq!(rule_validity(&r, "b"), json!("unknown"));
    assert_eq!(rule_validity(&r, "e"), json!("unknown"));
}

#[test]
fn a_violation_wins_over_missing_evidence() {
    let mut h = HistoryBuilder::new();
    h.put(0, "a", 1, meta(1, 3, 42, 1, 1));
    h.put(1, "b", 2, meta(1, 3, 42, 1, 1));
    assert_eq!(run(&h).valid, Validity::Invalid);
}

#[test]
fn unreadable_watcher_event_is_reported_not_a_panic() {
    let mut h = HistoryBuilder::new();
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    let mut history = h.build();
    history.ops[0].value = json!({"version": "seven"});
    let r = check(&history, &EpochAuthorityOptions::default());
    assert_eq!(r.anomalies[0]["kind"], "unreadable-catalog-event");
    assert_eq!(r.valid, Validity::Invalid);
}

#[test]
fn rule_e_flags_job_phases_that_go_backwards_or_abandon_after_cutover() {
    let base = |phases: &[&str]| {
        let mut h = HistoryBuilder::new();
        h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
        for (i, p) in phases.iter().enumerate() {
            h.catalog(
                2 + i as u64,
                vec![child(2, "", "m", 1, 1, 1), child(3, "m", "", 1, 1, 1)],
                vec![job(1, 1, "m", 1, 2, p)],
            );
        }
        catalog_kinds(&run(&h))
    };
    assert!(base(&["PLANNED", "BACKFILL", "FENCE", "ABANDONING", "ABANDONED"]).is_empty());
    assert_eq!(
        base(&["FENCE", "BACKFILL", "ABANDONING", "ABANDONED"]),
        ["job-phase-went-backwards"]
    );
    assert_eq!(
        base(&["CUTOVER", "ABANDONING", "ABANDONED"]),
        ["abandoned-after-cutover"]
    );
    assert_eq!(base(&["DONE", "CLEANUP", "DONE"]), ["terminal-job-changed"]);
}

#[test]
fn rule_e_does_not_judge_lineage_across_skipped_versions() {
    // Versions 2 and 3 were missed: route 3 was split again into 4 and 5 in between, so the
    // watcher never saw 4's and 5's parent. Counted as unverifiable, not a violation.
    let mut h = HistoryBuilder::new();
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    h.catalog(
        4,
        vec![
            child(2, "", "m", 1, 1, 1),
            child(4, "m", "t", 1, 1, 3),
            child(5, "t", "", 1, 1, 3),
        ],
        vec![],
    );
    let r = run(&h);
    assert_eq!(rule_validity(&r, "e"), json!(true), "{:?}", r.anomalies);
    assert_eq!(
        r.details["catalog"]["lineage_unverifiable"], 3,
        "two unseen parents, one untileable parent"
    );
    // The same catalog with no version skipped is a lineage violation.
    let mut strict = HistoryBuilder::new();
    strict.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    strict.catalog(
        2,
        vec![
            child(2, "", "m", 1, 1, 1),
            child(4, "m", "t", 1, 1, 3),
            child(5, "t", "", 1, 1, 3),
        ],
        vec![],
    );
    assert!(catalog_kinds(&run(&strict)).contains(&"parent-never-existed".to_string()));
}

// --- rule (f) ---------------------------------------------------------------------------

/// A move of `["m", ∞)` from group 1 to group 2 whose job is in `phase`, the right child
/// fenced at the source.
fn fenced_move(phase: &str) -> HistoryBuilder {
    let mut h = HistoryBuilder::new();
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    let mut fenced = child(3, "m", "", 1, 1, 1);
    fenced.state = "WRITE_FENCED".into();
    h.at_ms(50).catalog(
        2,
        vec![child(2, "", "m", 1, 1, 1), fenced],
        vec![job(1, 1, "m", 1, 2, phase)],
    );
    h
}

#[test]
fn rule_f_accepts_writes_while_the_fence_is_still_being_applied_and_outside_the_range() {
    let mut h = fenced_move("FENCE");
    // Invoked while the job is in FENCE: may land before the fence; the delta copy carries it.
    h.at_ms(60).put(0, "q", 1, meta(1, 1, 20, 3, 1));
    let mut outside = fenced_move("DELTA_COPY");
    // The left child stays with the source: not fenced.
    outside.at_ms(60).put(0, "c", 1, meta(1, 1, 20, 2, 1));
    for h in [h, outside] {
        let r = run(&h);
        assert_eq!(rule_validity(&r, "f"), json!(true), "{:?}", r.anomalies);
        assert_eq!(r.counts["f-checked"], 1);
    }
}

#[test]
fn rule_f_flags_a_write_committed_by_the_source_after_its_fence_completed() {
    // no-fence: the source keeps committing writes to the range it is handing over.
    let mut h = fenced_move("DELTA_COPY");
    let late = h.at_ms(60).put(0, "q", 1, meta(1, 1, 20, 3, 1));
    let r = run(&h);
    assert_eq!(r.valid, Validity::Invalid);
    assert_eq!(rule_validity(&r, "f"), json!(false));
    let w = r
        .anomalies
        .iter()
        .find(|a| a["rule"] == "f")
        .expect("write-after-fence witness");
    assert_eq!(w["kind"], "write-after-fence");
    assert_eq!(w["op"].as_u64(), Some(late));
    assert_eq!(
        (w["group"].as_u64(), w["route"].as_u64(), w["job"].as_u64()),
        (Some(1), Some(3), Some(1))
    );
    assert_eq!(w["catalog_version"], 2);
}

#[test]
fn rule_f_accepts_a_write_invoked_in_delta_copy_that_the_source_commits_after_an_abandon() {
    // Invoked in DELTA_COPY, retried by the router while fenced, committed once the abandon
    // unfenced the source again (seen in a clean refkv run under abort-move).
    let mut h = fenced_move("DELTA_COPY");
    h.at_ms(60).invoke(0, "put", "q", json!(1));
    h.at_ms(80).catalog(
        3,
        vec![child(2, "", "m", 1, 1, 1), child(3, "m", "", 1, 1, 1)],
        vec![job(1, 1, "m", 1, 2, "ABANDONED")],
    );
    h.at_ms(90).complete(
        OpType::Ok,
        0,
        "put",
        "q",
        json!(1),
        Some(meta(1, 1, 20, 3, 1)),
    );
    let r = run(&h);
    assert_eq!(rule_validity(&r, "f"), json!(true), "{:?}", r.anomalies);
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.reason);
}

fn fenced(mut r: analysis::history::RouteRecord) -> analysis::history::RouteRecord {
    r.state = "WRITE_FENCED".into();
    r
}

/// Two routes of group 1, both fenced, each in its own move to group 2 (elastickv keeps a
/// route whole until cutover: the moving half `[split_key, end)` is not yet a route of its
/// own): route 2 `["", "m")` split at "f" by job 7, in `phase_2`; route 3 `["m", ∞)` split
/// at "t" by job 8, in `phase_3`.
fn two_moves_of_one_group(phase_2: &str, phase_3: &str) -> HistoryBuilder {
    let mut h = HistoryBuilder::new();
    h.catalog(
        1,
        vec![route(2, "", "m", 1, 1), route(3, "m", "", 1, 1)],
        vec![],
    );
    h.at_ms(50).catalog(
        2,
        vec![
            fenced(route(2, "", "m", 1, 1)),
            fenced(route(3, "m", "", 1, 1)),
        ],
        vec![job(7, 2, "f", 1, 2, phase_2), job(8, 3, "t", 1, 2, phase_3)],
    );
    h
}

#[test]
fn rule_f_does_not_blame_a_write_on_another_routes_job() {
    // "x" is in route 3, whose own job is still in FENCE: not judged. Job 7 (route 2, same
    // group) is in DELTA_COPY with a split key below the key and below route 3's start —
    // but it moves part of route 2, not "x".
    let mut h = two_moves_of_one_group("DELTA_COPY", "FENCE");
    h.at_ms(60).put(0, "x", 1, meta(1, 1, 20, 3, 1));
    let r = run(&h);
    assert_eq!(rule_validity(&r, "f"), json!(true), "{:?}", r.anomalies);
    assert_eq!(r.counts["f-checked"], 1);
}

#[test]
fn rule_f_flags_a_write_to_the_moving_half_of_a_route_not_yet_split() {
    // Route 3 is fenced and its job (split key "t" inside it) is in DELTA_COPY: a write to
    // "x" (in the moving half) acknowledged by the source must have been rejected.
    let mut h = two_moves_of_one_group("FENCE", "DELTA_COPY");
    let late = h.at_ms(60).put(0, "x", 1, meta(1, 1, 20, 3, 1));
    // "p" is in the half of route 3 that stays with the source: not judged.
    h.at_ms(70).put(1, "p", 2, meta(1, 1, 21, 3, 1));
    let r = run(&h);
    assert_eq!(rule_validity(&r, "f"), json!(false), "{:?}", r.anomalies);
    assert_eq!(r.counts["f-violations"], 1);
    let w = r
        .anomalies
        .iter()
        .find(|a| a["rule"] == "f")
        .expect("write-after-fence witness");
    assert_eq!(w["op"].as_u64(), Some(late));
    assert_eq!(
        (w["route"].as_u64(), w["job"].as_u64()),
        (Some(3), Some(8)),
        "{w}"
    );
}

#[test]
fn rule_f_reads_elastickv_phase_names() {
    let mut h = two_moves_of_one_group("FENCE", "SPLIT_JOB_PHASE_DELTA_COPY");
    h.at_ms(60).put(0, "x", 1, meta(1, 1, 20, 3, 1));
    assert_eq!(rule_validity(&run(&h), "f"), json!(false));
}

#[test]
fn rule_e_leaves_elastickv_failed_retries_unjudged() {
    let phases = |phases: &[&str]| {
        let mut h = HistoryBuilder::new();
        h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
        for (i, p) in phases.iter().enumerate() {
            h.catalog(
                2 + i as u64,
                vec![route(1, "", "", 1, 1)],
                vec![job(1, 1, "m", 1, 2, p)],
            );
        }
        catalog_kinds(&run(&h))
    };
    // FAILED is a retry waypoint: the job resumes at its retry phase.
    assert!(phases(&[
        "DELTA_COPY",
        "FAILED",
        "BACKFILL",
        "FENCE",
        "DELTA_COPY",
        "CUTOVER",
        "DONE"
    ])
    .is_empty());
    assert!(phases(&["CUTOVER", "FAILED", "CUTOVER", "CLEANUP", "DONE"]).is_empty());
    assert!(phases(&["BACKFILL", "FAILED", "ABANDONING", "ABANDONED"]).is_empty());
    // The paths around it are still judged.
    assert_eq!(
        phases(&["CUTOVER", "ABANDONING", "ABANDONED"]),
        ["abandoned-after-cutover"]
    );
    assert_eq!(
        phases(&["DONE", "FAILED", "DONE"]),
        ["terminal-job-changed"]
    );
}

// --- stale writes -----------------------------------------------------------------------

#[test]
fn an_acknowledged_stale_write_to_the_old_owner_is_a_rule_b_witness_and_counted() {
    let mut h = clean_move();
    // A stale client: straight to group 1 under epoch 1, after the move was observed.
    h.at_ms(300)
        .invoke(900_000, "stale-write", "z", json!("s1"));
    h.complete(
        OpType::Ok,
        900_000,
        "stale-write",
        "z",
        json!("s1"),
        Some(meta(1, 1, 14, 1, 1)),
    );
    h.invoke(900_001, "stale-write", "y", json!("s2"));
    h.complete(OpType::Fail, 900_001, "stale-write", "y", json!("s2"), None);
    h.invoke(900_002, "stale-write", "x", json!("s3"));
    let r = run(&h);
    assert_eq!(rule_validity(&r, "b"), json!(false));
    let w = r.anomalies.iter().find(|a| a["rule"] == "b").unwrap();
    assert_eq!(w["kind"], "stale-epoch-write");
    assert_eq!(w["key"], "z");
    let counts: Vec<u64> = ["attempted", "acknowledged", "rejected", "indeterminate"]
        .iter()
        .map(|k| r.counts[&format!("stale-writes-{k}")])
        .collect();
    assert_eq!(counts, vec![3, 1, 1, 1]);
}

#[test]
fn rejected_stale_writes_are_counted_and_never_a_violation() {
    let mut h = clean_move();
    h.at_ms(300)
        .invoke(900_000, "stale-write", "z", json!("s1"));
    h.complete(OpType::Fail, 900_000, "stale-write", "z", json!("s1"), None);
    let r = run(&h);
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.reason);
    assert_eq!(
        (
            r.counts["stale-writes-attempted"],
            r.counts["stale-writes-rejected"]
        ),
        (1, 1)
    );
}

#[test]
fn the_verdict_summarises_stale_writes_with_their_witnesses_at_its_top_level() {
    let mut h = clean_move();
    // One witness (to the old owner after the move), one legitimate (to the new owner under
    // the new epoch), one refused, one never answered.
    h.at_ms(300)
        .invoke(900_000, "stale-write", "z", json!("s1"));
    h.complete(
        OpType::Ok,
        900_000,
        "stale-write",
        "z",
        json!("s1"),
        Some(meta(1, 1, 14, 1, 1)),
    );
    h.invoke(900_001, "stale-write", "w", json!("s2"));
    h.complete(
        OpType::Ok,
        900_001,
        "stale-write",
        "w",
        json!("s2"),
        Some(meta(2, 1, 9, 1, 2)),
    );
    h.invoke(900_002, "stale-write", "y", json!("s3"));
    h.complete(OpType::Fail, 900_002, "stale-write", "y", json!("s3"), None);
    h.invoke(900_003, "stale-write", "x", json!("s4"));
    let r = run(&h);
    assert_eq!(r.counts["stale-writes-witnesses"], 1);
    let verdict = analysis::verdict::Verdict::from_checkers(
        [("epoch-authority".to_string(), r)].into_iter().collect(),
    );
    let json = serde_json::to_value(&verdict).unwrap();
    assert_eq!(
        json["stale_writes"],
        json!({"attempted": 4, "rejected": 1, "acknowledged": 2, "indeterminate": 1, "witnesses": 1})
    );
    let none = analysis::verdict::Verdict::from_checkers(
        [(
            "linearizable".to_string(),
            CheckerResult::new(Validity::Valid),
        )]
        .into_iter()
        .collect(),
    );
    assert!(
        serde_json::to_value(&none)
            .unwrap()
            .get("stale_writes")
            .is_none(),
        "absent without an epoch-authority result"
    );
}

//! The zset checker: every rule caught by name on a history that shows it (and silent on
//! its near miss), and the checker equal to a brute-force oracle on many small random
//! histories.

mod zset_support;

use analysis::checkers::zset::{check, ZsetOptions};
use analysis::verdict::{CheckerResult, Validity};
use serde_json::json;
use zset_support::{oracle_linearizable, random_history, H};

fn judge(h: &H) -> CheckerResult {
    check(&h.history(), &ZsetOptions::default())
}

fn kinds(r: &CheckerResult) -> Vec<String> {
    r.anomalies
        .iter()
        .map(|a| a["kind"].as_str().unwrap().to_string())
        .collect()
}

fn assert_caught(h: &H, kind: &str) -> CheckerResult {
    let r = judge(h);
    assert_eq!(r.valid, Validity::Invalid, "{kind}: {r:?}");
    assert!(
        kinds(&r).iter().any(|k| k == kind),
        "{kind} not in {:?}",
        kinds(&r)
    );
    assert!(r.counts[&format!("{kind}-count")] >= 1);
    r
}

fn two_members() -> H {
    let mut h = H::default();
    h.call(0, "zadd", json!(["m0", 1.0]), json!(["m0", 1.0]));
    h.call(0, "zadd", json!(["m1", 5.0]), json!(["m1", 5.0]));
    h
}

#[test]
fn a_sequential_history_read_back_exactly_is_valid() {
    let mut h = two_members();
    h.call(1, "zincrby", json!(["m0", 2.0]), json!(["m0", 3.0]));
    h.call(1, "zrange", json!(null), json!([["m0", 3.0], ["m1", 5.0]]));
    h.call(1, "zrangebyscore", json!([4.0, 6.0]), json!([["m1", 5.0]]));
    h.call(1, "zrem", json!("m1"), json!(["m1", true]));
    h.call(1, "zrem", json!("m1"), json!(["m1", false]));
    h.call(1, "zrange", json!(null), json!([["m0", 3.0]]));
    let r = judge(&h);
    assert_eq!(r.valid, Validity::Valid, "{r:?}");
    assert_eq!(r.details["linearizable_keys"], json!(["z"]));
}

#[test]
fn no_successful_read_is_unknown() {
    let mut h = two_members();
    h.invoke(1, "zrange", json!(null)).info(1);
    assert_eq!(judge(&h).valid, Validity::Unknown);
}

#[test]
fn unsorted() {
    let mut h = two_members();
    h.call(1, "zrange", json!(null), json!([["m1", 5.0], ["m0", 1.0]]));
    assert_caught(&h, "unsorted");
}

#[test]
fn duplicate_members() {
    let mut h = two_members();
    h.call(
        1,
        "zrange",
        json!(null),
        json!([["m0", 1.0], ["m0", 1.0], ["m1", 5.0]]),
    );
    assert_caught(&h, "duplicate-members");
}

#[test]
fn out_of_range() {
    let mut h = two_members();
    h.call(
        1,
        "zrangebyscore",
        json!([0.0, 3.0]),
        json!([["m0", 1.0], ["m1", 5.0]]),
    );
    assert_caught(&h, "out-of-range");
}

#[test]
fn unexpected_presence_of_a_member_never_added() {
    let mut h = two_members();
    h.call(
        1,
        "zrange",
        json!(null),
        json!([["m0", 1.0], ["m1", 5.0], ["m7", 6.0]]),
    );
    let r = assert_caught(&h, "unexpected-presence");
    assert!(r.anomalies.iter().any(|a| a["member"] == "m7"));
}

#[test]
fn score_mismatch_of_a_superseded_score() {
    let mut h = two_members();
    h.call(0, "zadd", json!(["m0", 2.0]), json!(["m0", 2.0]));
    h.call(1, "zrange", json!(null), json!([["m0", 1.0], ["m1", 5.0]]));
    assert_caught(&h, "score-mismatch");
}

#[test]
fn a_score_of_a_concurrent_write_is_no_mismatch() {
    let mut h = two_members();
    h.invoke(0, "zadd", json!(["m0", 2.0]));
    h.call(1, "zrange", json!(null), json!([["m0", 1.0], ["m1", 5.0]]));
    h.ok(0, json!(["m0", 2.0]));
    assert_eq!(judge(&h).valid, Validity::Valid);
}

#[test]
fn missing_member() {
    let mut h = two_members();
    h.call(1, "zrange", json!(null), json!([["m1", 5.0]]));
    assert_caught(&h, "missing-member");
}

#[test]
fn missing_member_range() {
    let mut h = two_members();
    h.call(1, "zrangebyscore", json!([0.0, 2.0]), json!([]));
    assert_caught(&h, "missing-member-range");
}

#[test]
fn a_member_an_indeterminate_zrem_may_have_removed_is_not_missing() {
    let mut h = two_members();
    h.invoke(0, "zrem", json!("m0")).info(0);
    h.call(1, "zrange", json!(null), json!([["m1", 5.0]]));
    assert_eq!(judge(&h).valid, Validity::Valid);
}

#[test]
fn impossible_mutation_chain_of_a_zincrby_reply() {
    let mut h = two_members();
    h.call(1, "zincrby", json!(["m0", 2.0]), json!(["m0", 4.0]));
    let r = assert_caught(&h, "impossible-mutation-chain");
    assert_eq!(r.anomalies[0]["f"], "zincrby");
}

#[test]
fn impossible_mutation_chain_of_a_zrem_answer() {
    let mut h = two_members();
    h.call(1, "zrem", json!("m3"), json!(["m3", true]));
    assert_caught(&h, "impossible-mutation-chain");
}

#[test]
fn a_zincrby_after_an_indeterminate_one_may_count_it() {
    let mut h = two_members();
    h.invoke(0, "zincrby", json!(["m0", 1.0])).info(0);
    h.call(1, "zincrby", json!(["m0", 2.0]), json!(["m0", 4.0]));
    h.call(1, "zrange", json!(null), json!([["m0", 4.0], ["m1", 5.0]]));
    assert_eq!(judge(&h).valid, Validity::Valid, "{:?}", judge(&h));
}

#[test]
fn fractured_read_prefix() {
    // The read shows m1's add, which began after m0's add was acknowledged, but not m0.
    let mut h = H::default();
    h.invoke(9, "zrange", json!(null));
    h.call(1, "zadd", json!(["m0", 1.0]), json!(["m0", 1.0]));
    h.call(2, "zadd", json!(["m1", 2.0]), json!(["m1", 2.0]));
    h.ok(9, json!([["m1", 2.0]]));
    let r = assert_caught(&h, "fractured-read-prefix");
    let w = r
        .anomalies
        .iter()
        .find(|a| a["kind"] == "fractured-read-prefix")
        .unwrap();
    assert_eq!(
        (w["visible_member"].as_str(), w["member"].as_str()),
        (Some("m1"), Some("m0"))
    );
}

#[test]
fn unstable_read_without_mutation() {
    let mut h = two_members();
    h.call(1, "zrange", json!(null), json!([["m0", 1.0], ["m1", 5.0]]));
    h.call(1, "zrange", json!(null), json!([["m1", 5.0]]));
    assert_caught(&h, "unstable-read-without-mutation");
}

#[test]
fn nonlinearizable_snapshots_only_the_search_sees() {
    // Each read shows one of two concurrent adds: whichever came first, the later read
    // had to show both.
    let mut h = H::default();
    h.invoke(1, "zrange", json!(null));
    h.invoke(2, "zrange", json!(null));
    h.invoke(3, "zadd", json!(["m0", 1.0]));
    h.invoke(4, "zadd", json!(["m1", 2.0]));
    h.ok(3, json!(["m0", 1.0])).ok(4, json!(["m1", 2.0]));
    h.ok(1, json!([["m0", 1.0]])).ok(2, json!([["m1", 2.0]]));
    let r = assert_caught(&h, "nonlinearizable");
    assert_eq!(kinds(&r), ["nonlinearizable"]);
}

#[test]
fn witnesses_name_the_faults_in_flight() {
    let mut h = two_members();
    let mut ops = h.ops.clone();
    let n = ops.len() as u64;
    ops.push(
        analysis::history::FaultEvent::new(
            analysis::history::FaultEdge::Start,
            "kill",
            analysis::history::FaultValue::new(vec!["n1".into()]),
        )
        .to_op(),
    );
    ops.last_mut().unwrap().index = n;
    ops.last_mut().unwrap().time = n * 1_000_000;
    h.ops = ops;
    h.call(1, "zrange", json!(null), json!([["m1", 5.0]]));
    let r = assert_caught(&h, "missing-member");
    assert_eq!(r.anomalies[0]["faults"][0]["kind"], "kill");
}

#[test]
fn malformed_values_are_unknown_with_the_op_named() {
    let mut h = H::default();
    h.call(0, "zadd", json!("m0"), json!(null));
    let r = judge(&h);
    assert_eq!(r.valid, Validity::Unknown);
    assert!(r.reason.unwrap().contains("op 1"));
}

#[test]
fn the_checker_equals_the_brute_force_oracle_on_small_random_histories() {
    let (mut valid, mut invalid) = (0, 0);
    for seed in 0..3000u64 {
        let calls = 3 + (seed % 5) as usize;
        let h = random_history(seed, calls, 3, 2, 40);
        let oracle = oracle_linearizable(&h, 2);
        let r = check(&h, &ZsetOptions::default());
        if r.valid == Validity::Unknown {
            continue; // no successful read: nothing to compare
        }
        assert_eq!(
            r.valid == Validity::Valid,
            oracle,
            "seed {seed}: checker {r:?}\nhistory {:#?}",
            h.ops
                .iter()
                .map(|o| format!("{} {:?} {} {} {}", o.index, o.kind, o.process, o.f, o.value))
                .collect::<Vec<_>>()
        );
        if oracle {
            valid += 1
        } else {
            invalid += 1
        }
    }
    assert!(
        valid > 300 && invalid > 300,
        "valid {valid}, invalid {invalid}"
    );
}

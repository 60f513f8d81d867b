//! End-to-end: `--client dynamodb` (the AWS SDK) against refkv's DynamoDB subset
//! (`refkv serve --dynamo-listen`, docs/dynamodb.md) on a real 3-node refkv cluster in
//! network namespaces: `--workload append` under node kills and forced splits must be
//! judged strictly serializable by the isolation checker with no other checker finding
//! anything, with committed transactions, some of which spanned two groups.
//!
//! The isolation checker counts the committed transactions that spanned two groups
//! (`counts.multi_group_committed`, by the catalog recorded before each was invoked).
//! Multi-group transactions are certain, not chance: the routes start cut at every first
//! letter of the transaction keys (`--initial-splits b,c,…,z`), assigned to the three groups
//! round-robin, and an item is stored under its key (docs/dynamodb.md), so two consecutive
//! keys are in different groups.
//!
//! `--workload register --value-type all` under node kills: the ten attribute types at
//! once (one table each), judged linearizable per key, with every type both written and
//! read back (a read of a value, not of a missing item) at least once.
//!
//! Needs root (`--cluster netns`).

mod test_support;
use analysis::history::{OpType, Process};
use std::collections::BTreeMap;
use test_support::*;
use workloads::client::dynamodb::value_types::{ValueType, ValueTypes};

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

#[test]
fn appends_through_dynamodb_across_groups_under_kills_and_splits_are_strictly_serializable() {
    if !is_root() {
        missing_prerequisite("--cluster netns needs root");
        return;
    }
    let _one = lock();
    let letters: Vec<String> = (b'b'..=b'z').map(|c| char::from(c).to_string()).collect();
    let splits = format!("--server-arg=--initial-splits={}", letters.join(","));
    let name = "refkv-dynamodb-append";
    let args = [
        "--db",
        "refkv",
        "--cluster",
        "netns",
        "--client",
        "dynamodb",
        "--workload",
        "append",
        "--nemesis",
        "kill,split",
        "--nemesis-interval",
        "3",
        "--time-limit",
        "20",
        &splits,
        "--test-name",
        name,
    ];
    let (run, out) = run_test(name, &args);
    let verdict = results(&run);
    assert_no_false_alarm(&verdict);
    let iso = &verdict["checkers"]["isolation"];
    assert_eq!(
        (iso["valid"].as_bool(), iso["details"]["model"].as_str()),
        (Some(true), Some("list-append")),
        "{iso:#}\n{}",
        show(&out)
    );
    assert_eq!(test_json(&run)["test"]["client"], "dynamodb");
    let count = |name: &str| iso["counts"][name].as_u64().unwrap_or(0);
    let (committed, multi) = (count("committed"), count("multi_group_committed"));
    assert!(committed > 0, "{iso:#}\n{}", show(&out));
    assert!(
        multi > 0,
        "no committed transaction spanned two groups: {iso:#}"
    );
    let history = read_history(&run);
    for fault in ["start-kill", "start-split"] {
        assert!(
            !nemesis_events(&history, fault).is_empty(),
            "{fault} happened"
        );
    }
    eprintln!("{name}: {committed} committed, {multi} across groups");
}

#[test]
fn registers_of_every_attribute_type_under_kills_are_linearizable() {
    if !is_root() {
        missing_prerequisite("--cluster netns needs root");
        return;
    }
    let _one = lock();
    let name = "refkv-dynamodb-register-all";
    let args = [
        "--db",
        "refkv",
        "--cluster",
        "netns",
        "--client",
        "dynamodb",
        "--workload",
        "register",
        "--value-type",
        "all",
        "--nemesis",
        "kill",
        "--nemesis-interval",
        "3",
        "--time-limit",
        "20",
        "--test-name",
        name,
    ];
    let (run, out) = run_test(name, &args);
    let verdict = results(&run);
    assert_no_false_alarm(&verdict);
    let lin = &verdict["checkers"]["linearizable"];
    assert_eq!(
        lin["valid"].as_bool(),
        Some(true),
        "{lin:#}\n{}",
        show(&out)
    );
    assert_eq!(verdict["valid"].as_bool(), Some(true), "{verdict:#}");
    let history = read_history(&run);
    assert!(
        !nemesis_events(&history, "start-kill").is_empty(),
        "a node was killed"
    );
    // Per type: ok writes, and ok reads that returned a value.
    let mut seen: BTreeMap<ValueType, (u64, u64)> = BTreeMap::new();
    for op in &history.ops {
        let (Process::Client(_), OpType::Ok, Some(key)) = (&op.process, &op.kind, &op.key) else {
            continue;
        };
        let counts = seen.entry(ValueTypes::All.of_key(key)).or_default();
        match op.f.as_str() {
            "write" => counts.0 += 1,
            "read" if op.value.is_i64() => counts.1 += 1,
            "read" => assert!(op.value.is_null(), "a read recorded {}", op.value),
            _ => {}
        }
    }
    for t in ValueType::ALL {
        let (writes, reads) = seen.get(&t).copied().unwrap_or_default();
        assert!(
            writes > 0 && reads > 0,
            "{t}: {writes} writes, {reads} reads of a value: {seen:?}"
        );
    }
    eprintln!("{name}: (ok writes, ok reads of a value) per type: {seen:?}");
}

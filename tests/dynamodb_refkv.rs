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
//! keys are in different groups. Needs root (`--cluster netns`).

mod test_support;
use test_support::*;

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

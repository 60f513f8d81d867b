//! End-to-end: `--client dynamodb` (the AWS SDK) against refkv's DynamoDB subset
//! (`refkv serve --dynamo-listen`, docs/dynamodb.md) on a real 3-node refkv cluster in
//! network namespaces: `--workload append` under node kills and forced splits must be
//! judged strictly serializable by the isolation checker with no other checker finding
//! anything, with committed transactions, some of which spanned two groups.
//!
//! Multi-group transactions are certain, not chance: the routes start cut at every first
//! letter of the transaction keys (`--initial-splits b,c,…,z`), assigned to the three groups
//! round-robin, and an item is stored under its key (docs/dynamodb.md), so two consecutive
//! keys are in different groups. Needs root (`--cluster netns`).

mod test_support;
use analysis::history::{History, OpType, Process};
use test_support::*;

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// The group serving `key` in a recorded catalog snapshot.
fn group_of(catalog: &serde_json::Value, key: &str) -> Option<u64> {
    catalog["routes"].as_array()?.iter().find_map(|r| {
        let (start, end) = (r["start"].as_str()?, r["end"].as_str()?);
        (start <= key && (end.is_empty() || key < end))
            .then(|| r["group"].as_u64())
            .flatten()
    })
}

/// Committed transactions whose keys were served by two groups or more, by the catalog
/// the watcher recorded last before each was invoked.
fn multi_group_commits(history: &History) -> usize {
    let mut catalog = serde_json::Value::Null;
    let mut invoked_under = std::collections::HashMap::new();
    let mut count = 0;
    for op in &history.ops {
        match op.process {
            Process::Watcher if op.f == "catalog" => catalog = op.value.clone(),
            Process::Client(p) if op.f == "txn" && op.kind == OpType::Invoke => {
                invoked_under.insert(p, catalog.clone());
            }
            Process::Client(p) if op.f == "txn" && op.kind == OpType::Ok => {
                let Some(under) = invoked_under.remove(&p) else {
                    continue;
                };
                let keys = op.value.as_array().into_iter().flatten();
                let groups: std::collections::BTreeSet<u64> = keys
                    .filter_map(|m| m[1].as_str())
                    .filter_map(|k| group_of(&under, k))
                    .collect();
                count += usize::from(groups.len() >= 2);
            }
            _ => {}
        }
    }
    count
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
    assert_eq!(test_json(&run)["client"], "dynamodb");
    let committed = iso["counts"]["committed"].as_u64().unwrap_or(0);
    assert!(committed > 0, "{iso:#}\n{}", show(&out));
    let history = read_history(&run);
    let multi = multi_group_commits(&history);
    assert!(
        multi > 0,
        "no committed transaction spanned two groups ({committed} committed)"
    );
    for fault in ["start-kill", "start-split"] {
        assert!(
            !nemesis_events(&history, fault).is_empty(),
            "{fault} happened"
        );
    }
    eprintln!("{name}: {committed} committed, {multi} across groups");
}

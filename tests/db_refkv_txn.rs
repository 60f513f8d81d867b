//! End-to-end: refkv's transactions (`RefkvTxn.Txn`, docs/refkv.md § Transactions) under
//! `faultline test --workload append` against a real 3-node refkv cluster in Docker, with
//! forced splits (the split nemesis aims at the routes of transactions in flight, and
//! alternates same-group splits with cross-group moves) and with node kills. Each run must
//! be judged strictly serializable by the isolation checker (Elle's list-append), with no
//! other checker finding anything, committed transactions, and transactions that committed
//! across groups.
//!
//! Multi-group transactions are certain, not chance: the routes start cut at every first
//! letter (`--initial-splits b,c,…,z`: a transaction key is `<letter>/la/<n:06>`, the letter
//! `a + 7n mod 26`), assigned to the three groups round-robin, so two consecutive keys (7
//! letters apart) are always in different groups and almost every transaction of two keys
//! or more spans groups. Which group
//! a committed transaction touched is read from the history itself: the catalog the
//! watcher recorded last before the transaction was invoked.

mod test_support;
use analysis::history::{History, OpType, Process};
use test_support::*;

/// Route boundaries `b`, `c`, … `z` (one route per first letter of the transaction keys) as
/// one `--server-arg`.
fn initial_splits() -> String {
    let letters: Vec<String> = (b'b'..=b'z').map(|c| char::from(c).to_string()).collect();
    format!("--server-arg=--initial-splits={}", letters.join(","))
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
                let keys = op
                    .value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|m| m[1].as_str());
                let groups: std::collections::BTreeSet<u64> =
                    keys.filter_map(|k| group_of(&under, k)).collect();
                count += usize::from(groups.len() >= 2);
            }
            _ => {}
        }
    }
    count
}

/// A clean append run under `nemesis`: strict-serializable, committed, multi-group.
fn assert_clean_append_run(name: &str, nemesis: &str) {
    let _one = lock();
    let splits = initial_splits();
    let args = [
        "--db",
        "refkv",
        "--workload",
        "append",
        "--nemesis",
        nemesis,
        "--nemesis-interval",
        "3",
        "--time-limit",
        "15",
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
    assert_eq!(iso["details"]["consistency_model"], "strict-serializable");
    let committed = iso["counts"]["committed"]
        .as_u64()
        .unwrap_or_else(|| panic!("isolation.committed in {iso:#}"));
    assert!(committed > 0, "{iso:#}");
    let history = read_history(&run);
    let multi = multi_group_commits(&history);
    assert!(
        multi > 0,
        "no committed transaction spanned two groups ({committed} committed)"
    );
    assert!(
        !nemesis_events(&history, &format!("start-{nemesis}")).is_empty(),
        "the {nemesis} nemesis acted"
    );
    eprintln!(
        "{name}: {committed} committed, {multi} across groups, exit {:?}",
        out.status.code()
    );
}

#[test]
fn clean_appends_across_groups_under_forced_splits_are_strictly_serializable() {
    assert_clean_append_run("refkv-append-split", "split");
}

#[test]
fn clean_appends_across_groups_under_node_kills_are_strictly_serializable() {
    assert_clean_append_run("refkv-append-kill", "kill");
}

//! End-to-end: `--client dynamodb --workload append --tables 4 --groups 3` against refkv's
//! DynamoDB subset on a real 3-node refkv cluster in network namespaces.
//!
//! - Under the aimed route shuffle (`--nemesis split` every 2 s: a split at the stored item
//!   of the newest transaction in flight, every other one a move of it to another group)
//!   the run is judged strictly serializable; committed transactions span two groups;
//!   accepted (`effective: true`) splits cut a route holding an item of a table that a
//!   transaction in flight touched (the nemesis log's `in_flight_txns`, `hot_key` the item's
//!   store key `<key>\0<table>`), and the isolation checker counts such cuts from the keys
//!   refkv really stores (the run's `store-keys` event).
//! - With the seeded `lock-dropped-on-move` under `--nemesis txn-move --txn-move-aim
//!   secondary` the run is invalid: every effective turn holds a transaction at its commit
//!   point, moves the route of one of its secondary writes (an item of one of the tables)
//!   to another group past the source's fence and releases it, so the append of that item
//!   is acknowledged and lost (docs/detection-matrix.md, `lock-dropped-on-move`).
//!
//! Certain, not chance: the routes start cut at every first letter of the keys
//! (`--initial-splits b,c,…,z`), assigned to the three groups round-robin, so two
//! consecutive keys are in different groups; a split is aimed at the newest transaction in
//! flight when the nemesis asks, and the clients keep transactions in flight. Each test first
//! asserts that what makes its outcome certain happened. Needs root (`--cluster netns`).

mod test_support;
use test_support::*;

const TABLES: [&str; 4] = [
    "jepsen_append_t1",
    "jepsen_append_t2",
    "jepsen_append_t3",
    "jepsen_append_t4",
];

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// `--server-arg` cutting the keyspace at every first letter of the workload's keys.
fn letter_splits() -> String {
    let letters: Vec<String> = (b'b'..=b'z').map(|c| char::from(c).to_string()).collect();
    format!("--server-arg=--initial-splits={}", letters.join(","))
}

/// The table a split's `hot_key` (a refkv item key, `<key>\0<table>`) belongs to.
fn item_table(hot_key: &serde_json::Value) -> Option<&str> {
    hot_key.as_str()?.split_once('\0').map(|(_, table)| table)
}

#[test]
fn four_tables_under_the_aimed_route_shuffle_are_strictly_serializable_and_exercised() {
    if !is_root() {
        missing_prerequisite("--cluster netns needs root");
        return;
    }
    let _one = lock();
    let splits = letter_splits();
    let name = "refkv-dynamodb-tables";
    let args = [
        "--db",
        "refkv",
        "--cluster",
        "netns",
        "--groups",
        "3",
        "--client",
        "dynamodb",
        "--workload",
        "append",
        "--tables",
        "4",
        "--nemesis",
        "split",
        "--nemesis-interval",
        "2",
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
        iso["valid"].as_bool(),
        Some(true),
        "{iso:#}\n{}",
        show(&out)
    );
    assert_eq!(test_json(&run)["test"]["tables"], 4);
    let history = read_history(&run);
    let layout = history
        .ops
        .iter()
        .find(|op| op.f == "store-keys")
        .map(|op| op.value.clone());
    assert_eq!(
        layout,
        Some(serde_json::json!({"layout": "dynamo-item-key", "tables": TABLES})),
    );

    let splits = nemesis_events(&history, "start-split");
    let on_tables_in_flight: Vec<_> = splits
        .iter()
        .filter(|e| e.value["effective"] == true && e.value["detail"]["aimed"] == true)
        .filter(|e| {
            let in_flight = e.value["detail"]["in_flight_txns"].as_array();
            in_flight.is_some_and(|t| !t.is_empty())
        })
        .filter(|e| item_table(&e.value["detail"]["hot_key"]).is_some_and(|t| TABLES.contains(&t)))
        .collect();
    assert!(
        !on_tables_in_flight.is_empty(),
        "no accepted split cut the route of a table item a transaction in flight touched: {splits:#?}"
    );
    let moved = on_tables_in_flight
        .iter()
        .filter(|e| e.value["cross_group"] == true)
        .count();
    assert!(
        moved > 0,
        "no such split moved its route to another group: {splits:#?}"
    );

    let count = |name: &str| iso["counts"][name].as_u64().unwrap_or(0);
    let multi = count("multi_group_committed");
    let aimed = count("route_faults_on_in_flight_keys");
    let own = count("in_flight_across_own_split");
    assert!(
        multi > 0,
        "no committed transaction spanned two groups: {iso:#}"
    );
    assert!(
        aimed > 0,
        "the checker saw no route fault on a key in flight: {iso:#}"
    );
    assert!(
        own > 0,
        "no committed transaction was in flight across its own split: {iso:#}"
    );
    eprintln!(
        "{name}: {multi} across groups, {} aimed splits on items in flight ({moved} moves), \
         checker: {aimed} on keys in flight, {own} in flight across their own",
        on_tables_in_flight.len()
    );
}

#[test]
fn a_lock_dropped_on_move_of_a_tables_item_is_caught_through_dynamodb() {
    if !is_root() {
        missing_prerequisite("--cluster netns needs root");
        return;
    }
    let _one = lock();
    let splits = letter_splits();
    let name = "refkv-dynamodb-tables-lock-dropped";
    let args = [
        "--db",
        "refkv",
        "--cluster",
        "netns",
        "--groups",
        "3",
        "--client",
        "dynamodb",
        "--workload",
        "append",
        "--tables",
        "4",
        "--nemesis",
        "txn-move",
        "--txn-move-aim",
        "secondary",
        "--nemesis-interval",
        "3",
        "--time-limit",
        "30",
        "--bug",
        "lock-dropped-on-move",
        &splits,
        "--test-name",
        name,
    ];
    let (run, out) = run_test(name, &args);
    let history = read_history(&run);
    let turns = nemesis_events(&history, "start-txn-move");
    let effective = turns
        .iter()
        .filter(|e| e.value["effective"] == true)
        .count();
    assert!(
        effective > 0,
        "no txn-move turn took effect: {turns:#?}\n{}",
        show(&out)
    );
    let verdict = results(&run);
    assert_eq!(
        verdict["checkers"]["isolation"]["valid"],
        serde_json::json!(false),
        "{effective} effective turns, yet isolation found nothing: {:#}\n{}",
        verdict["checkers"]["isolation"],
        show(&out)
    );
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    eprintln!("{name}: caught after {effective} effective txn-move turns");
}

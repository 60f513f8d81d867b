//! End-to-end: `--client dynamodb --workload append --tables 4` against refkv's DynamoDB
//! subset on a real 3-node refkv cluster in network namespaces, under the aimed route
//! shuffle (`--nemesis split` every 2 s: a split at the stored item of a transaction in
//! flight, every other one a move of it to another group): judged strictly serializable,
//! with committed transactions spanning two groups and splits that cut a route holding an
//! item of a transaction in flight, both counted by the isolation checker from the keys refkv
//! really stores (the run's `store-keys` event: `<key>\0<table>`), and moves the store
//! accepted.
//!
//! Certain, not chance: the routes start cut at every first letter of the keys
//! (`--initial-splits b,c,…,z`), assigned to the three groups round-robin, so two
//! consecutive keys are in different groups; a split is aimed at the newest transaction in
//! flight when the nemesis asks, and fifteen clients keep transactions in flight. Needs
//! root (`--cluster netns`).

mod test_support;
use test_support::*;

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

#[test]
fn four_tables_under_the_aimed_route_shuffle_are_strictly_serializable_and_exercised() {
    if !is_root() {
        missing_prerequisite("--cluster netns needs root");
        return;
    }
    let _one = lock();
    let letters: Vec<String> = (b'b'..=b'z').map(|c| char::from(c).to_string()).collect();
    let splits = format!("--server-arg=--initial-splits={}", letters.join(","));
    let name = "refkv-dynamodb-tables";
    let args = [
        "--db",
        "refkv",
        "--cluster",
        "netns",
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
    assert_eq!(iso["valid"].as_bool(), Some(true), "{iso:#}\n{}", show(&out));
    assert_eq!(test_json(&run)["test"]["tables"], 4);
    let count = |name: &str| iso["counts"][name].as_u64().unwrap_or(0);
    let multi = count("multi_group_committed");
    let aimed = count("route_faults_on_in_flight_keys");
    let own = count("in_flight_across_own_split");
    assert!(multi > 0, "no committed transaction spanned two groups: {iso:#}");
    assert!(aimed > 0, "no split cut a route holding an item in flight: {iso:#}");
    assert!(own > 0, "no committed transaction was in flight across its own split: {iso:#}");
    let history = read_history(&run);
    let layout = history
        .ops
        .iter()
        .find(|op| op.f == "store-keys")
        .map(|op| op.value.clone());
    assert_eq!(
        layout,
        Some(serde_json::json!({"layout": "dynamo-item-key", "tables":
            ["jepsen_append_t1", "jepsen_append_t2", "jepsen_append_t3", "jepsen_append_t4"]})),
    );
    let splits = nemesis_events(&history, "start-split");
    let moved = splits
        .iter()
        .filter(|e| e.value["cross_group"] == true && e.value["effective"] == true)
        .count();
    assert!(moved > 0, "no move was accepted: {splits:#?}");
    eprintln!("{name}: {multi} across groups, {aimed} aimed splits, {own} in flight across their own, {moved} moves");
}

//! End-to-end: a short `faultline test` per nemesis kind against a real 3-node refkv
//! cluster in Docker raises no false alarm, records each fault's start and end, leaves no
//! container or network behind, and never changes the host's firewall.
//!
//! Exit 0 also needs the vacuity checker to see each fault take effect. For partition, kill
//! and pause that means hitting a leader, which after the first (leader-aimed) turn is
//! chance, so those runs assert only that no other checker found anything; loss takes effect
//! whenever its rules are installed, so its run must be valid.

mod test_support;
use test_support::*;

/// Runs one nemesis kind for a short test and checks the common promises; returns the
/// history and the exit code.
fn short_run(kind: &str, extra: &[&str]) -> (analysis::history::History, Option<i32>) {
    let _one = lock();
    let firewall_before = host_firewall();
    let mut args = vec![
        "--nemesis",
        kind,
        "--time-limit",
        "20",
        "--nemesis-interval",
        "4",
        "--test-name",
        kind,
    ];
    args.extend_from_slice(extra);
    let (run, out) = run_test(&format!("nemesis-{kind}"), &args);
    let results = results(&run);
    assert!(
        matches!(out.status.code(), Some(0 | 2)),
        "{kind} run: {results:#}\n{}",
        show(&out)
    );
    assert_no_false_alarm(&results);
    assert_eq!(
        results["checkers"]["crashes"]["valid"],
        serde_json::json!(true),
        "{kind}: the lifecycle was watched, nothing crashed"
    );
    let history = read_history(&run);
    assert!(client_oks(&history) > 100, "{kind}: too few successful ops");
    let starts = nemesis_events(&history, &format!("start-{kind}"));
    let stops = nemesis_events(&history, &format!("stop-{kind}"));
    assert!(!starts.is_empty(), "{kind}: no fault started");
    assert_eq!(
        starts.len(),
        stops.len(),
        "{kind}: every started fault is stopped"
    );
    let cluster = test_json(&run)["cluster"].clone();
    let run_label = format!(
        "faultline.run={}",
        cluster["run_id"].as_str().expect("run id in test.json")
    );
    assert!(
        docker_ids("container", &run_label).is_empty(),
        "{kind}: containers left behind"
    );
    assert!(
        docker_ids("network", &run_label).is_empty(),
        "{kind}: network left behind"
    );
    assert_eq!(
        host_firewall(),
        firewall_before,
        "{kind}: the host's firewall changed"
    );
    assert!(
        run.join("nodes/n1.log")
            .metadata()
            .map(|m| m.len() > 0)
            .unwrap_or(false),
        "node logs collected"
    );
    (history, out.status.code())
}

#[test]
fn partition_run_raises_no_false_alarm_and_heals() {
    // A 20 s run is too short for refkv's auto-splitter; splits have their own test.
    let (h, _) = short_run("partition", &["--no-auto-split"]);
    let healed = nemesis_events(&h, "stop-partition")
        .iter()
        .all(|o| o.value["healed"] == serde_json::json!(true));
    assert!(healed, "every partition healed");
}

// The other kinds run the register workload: shorter final reads, and every kind is then
// checked by the linearizability checker alone.
const REGISTER: &[&str] = &["--workload", "register", "--no-auto-split"];

#[test]
fn kill_run_raises_no_false_alarm_and_restarts() {
    let (h, _) = short_run("kill", REGISTER);
    assert!(nemesis_events(&h, "start-kill")
        .iter()
        .any(|o| !o.value["killed"].as_array().is_none_or(|a| a.is_empty())));
    // The killed servers' exits are recorded, as asked for: no crash.
    let exits: Vec<_> = h
        .ops
        .iter()
        .filter(|o| o.process == analysis::history::Process::Watcher && o.f == "node-exit")
        .collect();
    assert!(!exits.is_empty(), "the node watch saw the kills");
    assert!(
        exits
            .iter()
            .all(|o| o.value["expected"] == serde_json::json!(true)),
        "a kill's exit is expected: {exits:?}"
    );
}

#[test]
fn pause_run_raises_no_false_alarm() {
    short_run("pause", REGISTER);
}

#[test]
fn loss_run_is_valid() {
    let (h, exit) = short_run("loss", REGISTER);
    assert!(nemesis_events(&h, "start-loss")
        .iter()
        .all(|o| o.value["effective"] == serde_json::json!(true)));
    assert_eq!(exit, Some(0), "every loss took effect: the run is valid");
}

#[test]
fn split_run_raises_no_false_alarm_and_splits() {
    let (h, _) = short_run("split", REGISTER);
    let accepted = nemesis_events(&h, "stop-split")
        .iter()
        .filter(|o| o.value["effective"] == serde_json::json!(true))
        .count();
    assert!(accepted >= 1, "at least one forced split was accepted");
}

//! End-to-end, against a real 3-node refkv cluster in Docker: the `move` nemesis aims its
//! faults at a phase of a split job it starts itself (no forced split on a clock). A clean
//! run is valid; with `--bug proxy-fence` (the fence checked only where a write is routed)
//! the source leader paused in BACKFILL and held across the cutover wakes with its old view
//! and commits its clients' writes into the old owner: invalid by epoch-authority.

mod test_support;
use test_support::*;

fn move_run(name: &str, extra: &[&str]) -> (std::path::PathBuf, std::process::Output, serde_json::Value) {
    let _one = lock();
    // One turn every 6 s: a paused source leader that is also the migrator (group 1) holds
    // the job in FENCE for a few seconds, and the fault holds until past CUTOVER.
    // Slow copies (the moving range holds a few dozen bytes: ~1 s per copy) keep the job in
    // BACKFILL long enough for the pause (`docker pause`, a few hundred ms) to land there,
    // before the paused node's routing view shows the fence.
    // No auto-split: the store's own split of a large hot range would copy for minutes.
    let mut args = vec![
        "--nemesis", "move", "--move-phase", "BACKFILL", "--nemesis-interval", "6", "--time-limit", "30",
        "--server-arg=--copy-bytes-per-sec=50", "--no-auto-split", "--test-name", name,
    ];
    args.extend_from_slice(extra);
    let (run, out) = run_test(&format!("move-{name}"), &args);
    let results = results(&run);
    (run, out, results)
}

/// The first effective start-move paused the source group's leader in BACKFILL or later,
/// its stop held the pause until the job was past CUTOVER and then sent the stale writes.
fn assert_aimed_pause(run: &std::path::Path) {
    let history = read_history(run);
    let starts = nemesis_events(&history, "start-move");
    let hit = starts.iter().find(|e| e.value["effective"] == serde_json::json!(true)).expect("an effective start-move");
    assert_eq!(hit.value["action"], "pause-source-leader", "{}", hit.value);
    assert_eq!(hit.value["aimed_phase"], "BACKFILL", "{}", hit.value);
    assert!(hit.value["job_id"].as_u64().is_some() && hit.value["node"].as_str().is_some(), "{}", hit.value);
    assert!(hit.value["phase_seen"].as_str().is_some(), "{}", hit.value);
    let stop = nemesis_events(&history, "stop-move").into_iter().find(|e| e.index > hit.index).expect("the move fault was healed");
    assert_eq!(stop.value["held_until"], "past-cutover", "the pause was held across the cutover: {}", stop.value);
    assert_eq!(stop.value["stale_writes"], 20, "{}", stop.value);
}

/// History indices of the run's stale-write completions.
fn stale_write_ops(run: &std::path::Path) -> Vec<u64> {
    let history = read_history(run);
    history.ops.iter().filter(|o| o.f == "stale-write" && o.kind != analysis::history::OpType::Invoke).map(|o| o.index).collect()
}

#[test]
fn clean_refkv_under_move_is_valid() {
    let (run, out, results) = move_run("clean", &[]);
    assert_eq!(out.status.code(), Some(0), "clean --nemesis move run not valid: {results:#}\n{}", show(&out));
    assert_aimed_pause(&run);
    let counts = &results["checkers"]["epoch-authority"]["counts"];
    assert_eq!(counts["stale-writes-acknowledged"], 0, "clean refkv refuses every stale write: {counts:#}");
}

#[test]
fn proxy_fence_is_caught_by_epoch_authority_under_move() {
    let (run, out, results) = move_run("proxy-fence", &["--bug", "proxy-fence"]);
    let epoch = &results["checkers"]["epoch-authority"];
    assert_eq!(epoch["valid"], serde_json::json!(false), "proxy-fence not caught: {epoch:#}\n{}", show(&out));
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_aimed_pause(&run);
    let wrong_owner = ["committed-by-non-owner", "stale-epoch-write", "two-groups-one-epoch", "write-after-fence"];
    let stale = stale_write_ops(&run);
    let anomalies = epoch["anomalies"].as_array().expect("anomalies");
    let witness = anomalies.iter().find(|a| {
        wrong_owner.contains(&a["kind"].as_str().unwrap_or("")) && a["op"].as_u64().is_some_and(|op| stale.contains(&op))
    });
    assert!(witness.is_some(), "no wrong-owner witness on a stale write ({} stale completions): {epoch:#}", stale.len());
}

//! End-to-end, against a real 3-node refkv cluster in Docker: the `move` nemesis aims its
//! faults at a phase of a split job it starts itself (no forced split on a clock). Both runs
//! are the detection matrix's proxy-fence scenario (every turn pauses the source leader in
//! BACKFILL, holds the pause past CUTOVER and sends 20 stale writes through it under the
//! pre-move epoch), 30 s long; the clean run leaves the bug out.
//!
//! A clean run is valid and refuses every stale write. With `--bug proxy-fence` (the fence
//! checked only where a write is routed, against that node's view) a stale write is admitted
//! only if the `docker pause` landed before the paused node's view showed the fence: BACKFILL
//! lasts about a second at slow copies, so whether the bug is caught is chance, measured by
//! the matrix's proxy-fence row. This test asserts what holds every time: the pause landed and
//! was held, the stale writes went out, and every one the store acknowledged after the
//! catalog watcher saw the cutover is a wrong-owner witness that makes the run invalid.

mod test_support;
use faultline::matrix::configs::{config_for, Config, WRONG_OWNER_KINDS};
use test_support::*;

/// The matrix's proxy-fence row with `bug` (none: clean refkv): hotspot, `--nemesis move
/// --move-phase BACKFILL --move-action pause-source-leader`, one turn every 6 s, slow copies.
/// The action is pinned because only pause-source-leader sends stale writes, and a rotation
/// would use it on turn 0 alone.
fn proxy_fence_scenario(bug: Option<&'static str>) -> Vec<&'static str> {
    let row = config_for(Some("proxy-fence")).expect("the matrix has a proxy-fence row");
    Config { bug, ..row }.scenario_args()
}

/// A job in one of these phases has published its new epoch: the pre-move one is stale.
const PAST_CUTOVER: &[&str] = &["CUTOVER", "CLEANUP", "DONE"];

fn move_run(
    name: &str,
    scenario: &[&str],
) -> (std::path::PathBuf, std::process::Output, serde_json::Value) {
    let _one = lock();
    let args = [scenario, &["--time-limit", "30", "--test-name", name]].concat();
    let (run, out) = run_test(&format!("move-{name}"), &args);
    let results = results(&run);
    (run, out, results)
}

/// The first effective start-move paused the source group's leader in BACKFILL or later,
/// its stop held the pause until the job was past CUTOVER and then sent the stale writes.
fn assert_aimed_pause(run: &std::path::Path) {
    let history = read_history(run);
    let starts = nemesis_events(&history, "start-move");
    let hit = starts
        .iter()
        .find(|e| e.value["effective"] == serde_json::json!(true))
        .expect("an effective start-move");
    assert_eq!(hit.value["action"], "pause-source-leader", "{}", hit.value);
    assert_eq!(hit.value["aimed_phase"], "BACKFILL", "{}", hit.value);
    assert!(
        hit.value["job_id"].as_u64().is_some() && hit.value["node"].as_str().is_some(),
        "{}",
        hit.value
    );
    assert!(hit.value["phase_seen"].as_str().is_some(), "{}", hit.value);
    assert!(
        hit.value["route_id"].as_u64().is_some() && hit.value["target_group"].as_u64().is_some(),
        "the moving route and its target are named: {}",
        hit.value
    );
    let stop = nemesis_events(&history, "stop-move")
        .into_iter()
        .find(|e| e.index > hit.index)
        .expect("the move fault was healed");
    assert_eq!(
        stop.value["held_until"], "past-cutover",
        "the pause was held across the cutover: {}",
        stop.value
    );
    assert_eq!(stop.value["stale_writes"], 20, "{}", stop.value);
}

/// History indices of the run's stale-write completions.
fn stale_write_ops(run: &std::path::Path) -> Vec<u64> {
    let history = read_history(run);
    history
        .ops
        .iter()
        .filter(|o| o.f == "stale-write" && o.kind != analysis::history::OpType::Invoke)
        .map(|o| o.index)
        .collect()
}

#[test]
fn clean_refkv_under_move_is_valid() {
    let (run, out, results) = move_run("clean", &proxy_fence_scenario(None));
    assert_eq!(
        out.status.code(),
        Some(0),
        "clean --nemesis move run not valid: {results:#}\n{}",
        show(&out)
    );
    assert_aimed_pause(&run);
    let counts = &results["checkers"]["epoch-authority"]["counts"];
    assert_eq!(
        counts["stale-writes-acknowledged"], 0,
        "clean refkv refuses every stale write: {counts:#}"
    );
}

#[test]
fn proxy_fence_stale_writes_acknowledged_are_witnesses_under_move() {
    let (run, out, results) = move_run("proxy-fence", &proxy_fence_scenario(Some("proxy-fence")));
    assert_aimed_pause(&run);
    let epoch = &results["checkers"]["epoch-authority"];
    let counts = &epoch["counts"];
    let acknowledged = counts["stale-writes-acknowledged"]
        .as_u64()
        .expect("stale-writes-acknowledged counted");
    let witnesses = counts["stale-writes-witnesses"]
        .as_u64()
        .expect("stale-writes-witnesses counted");
    // Those the history proves stale: invoked after the watcher saw their job's cutover.
    // The watcher can see it late (the paused node may lead the catalog group), and a
    // stale write it had not seen yet cannot be judged.
    let proved = acked_stale_writes_seen_after(&read_history(&run), "stale", PAST_CUTOVER) as u64;
    assert!(
        witnesses >= proved && witnesses <= acknowledged,
        "{proved} proved stale of {acknowledged} acknowledged: {epoch:#}"
    );
    let stale = stale_write_ops(&run);
    let anomalies = epoch["anomalies"].as_array().expect("anomalies");
    let kind = |a: &serde_json::Value| a["kind"].as_str().unwrap_or("").to_string();
    for a in anomalies
        .iter()
        .filter(|a| a["op"].as_u64().is_some_and(|op| stale.contains(&op)))
    {
        assert!(
            WRONG_OWNER_KINDS.contains(&kind(a).as_str()),
            "a stale write's witness is a wrong-owner kind: {a:#}"
        );
    }
    if proved > 0 {
        assert_eq!(
            epoch["valid"],
            serde_json::json!(false),
            "{proved} stale writes proved and acknowledged: {epoch:#}\n{}",
            show(&out)
        );
        assert_eq!(out.status.code(), Some(1), "{}", show(&out));
        assert!(
            anomalies
                .iter()
                .any(|a| WRONG_OWNER_KINDS.contains(&kind(a).as_str())),
            "a wrong-owner witness listed: {epoch:#}"
        );
    }
}

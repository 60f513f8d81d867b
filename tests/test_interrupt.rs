//! End-to-end: Ctrl-C (SIGINT) in the middle of a run heals, tears the cluster down, and
//! still leaves an analysable history and a verdict.

mod test_support;
use std::time::{Duration, Instant};
use test_support::*;

#[test]
fn sigint_mid_run_leaves_nothing_and_an_analysable_history() {
    let _one = lock();
    let store = store_dir("interrupt");
    let mut child = faultline()
        .args(["test", "--store"])
        .arg(&store)
        .args([
            "--no-progress",
            "--nemesis",
            "partition",
            "--nemesis-interval",
            "3",
            "--time-limit",
            "120",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("faultline starts");
    // Wait until the main phase is well under way: the history holds client operations.
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let started = std::fs::canonicalize(store.join("latest"))
            .ok()
            .and_then(|run| std::fs::read_to_string(run.join("history.jsonl")).ok())
            .map(|h| h.lines().count() > 500)
            .unwrap_or(false);
        if started {
            break;
        }
        assert!(
            child.try_wait().expect("wait").is_none(),
            "faultline exited before the main phase"
        );
        assert!(Instant::now() < deadline, "the main phase never started");
        std::thread::sleep(Duration::from_millis(500));
    }
    std::thread::sleep(Duration::from_secs(4));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("sending SIGINT");
    let status = child.wait().expect("faultline exits");
    assert_eq!(status.code(), Some(2), "an interrupted run is unknown");

    let run = latest_run(&store);
    let verdict = results(&run);
    assert_eq!(
        verdict["valid"],
        serde_json::json!("unknown"),
        "{verdict:#}"
    );
    assert!(verdict["checkers"]["run"]["reason"]
        .as_str()
        .unwrap_or("")
        .contains("interrupted"));
    let history = read_history(&run);
    assert!(client_oks(&history) > 0);
    // Every started fault was stopped before teardown.
    assert_eq!(
        nemesis_events(&history, "start-partition").len(),
        nemesis_events(&history, "stop-partition").len()
    );
    let run_id = test_json(&run)["cluster"]["run_id"]
        .as_str()
        .expect("run id")
        .to_string();
    let label = format!("faultline.run={run_id}");
    assert!(
        docker_ids("container", &label).is_empty(),
        "containers left after Ctrl-C"
    );
    assert!(
        docker_ids("network", &label).is_empty(),
        "network left after Ctrl-C"
    );
}

#[test]
fn leftovers_of_a_sigkilled_harness_are_swept_by_cleanup_stale() {
    let _one = lock();
    let store = store_dir("sigkill");
    let mut child = faultline()
        .args(["test", "--store"])
        .arg(&store)
        .args(["--no-progress", "--time-limit", "120"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("faultline starts");
    let deadline = Instant::now() + Duration::from_secs(600);
    let run_id = loop {
        let id = std::fs::canonicalize(store.join("latest"))
            .ok()
            .and_then(|run| std::fs::read_to_string(run.join("test.json")).ok())
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|t| t["cluster"]["run_id"].as_str().map(str::to_string));
        if let Some(id) = id {
            break id;
        }
        assert!(
            child.try_wait().expect("wait").is_none(),
            "faultline exited before starting the cluster"
        );
        assert!(Instant::now() < deadline, "the cluster never started");
        std::thread::sleep(Duration::from_millis(300));
    };
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let label = format!("faultline.run={run_id}");
    assert!(
        !docker_ids("container", &label).is_empty(),
        "the killed harness left its cluster"
    );
    let out = faultline()
        .args(["cleanup", "--stale"])
        .output()
        .expect("cleanup runs");
    assert!(out.status.success(), "{}", show(&out));
    assert!(
        docker_ids("container", &label).is_empty(),
        "stale containers swept"
    );
    assert!(
        docker_ids("network", &label).is_empty(),
        "stale network swept"
    );
}

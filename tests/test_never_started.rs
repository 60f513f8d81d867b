//! A `faultline test` run whose cluster can never start (here: `--db elastickv` without the
//! server binary, found only after the run directory exists) still leaves a verdict where
//! `store/latest` points: `results.json` says `unknown`, the reason naming the failure, and
//! the command exits 255 (docs/running.md, "A run that never started").

mod test_support;
use test_support::*;

#[test]
fn a_run_that_never_started_still_writes_an_unknown_verdict() {
    let store = store_dir("never-started");
    let out = faultline()
        .args([
            "test",
            "--no-progress",
            "--db",
            "elastickv",
            "--workload",
            "register",
            "--time-limit",
            "5",
            "--store",
        ])
        .arg(&store)
        .output()
        .expect("faultline runs");
    if String::from_utf8_lossy(&out.stderr).contains("Docker engine is not reachable") {
        missing_prerequisite("no Docker engine, so the run stops before it has a directory");
        return;
    }
    assert_eq!(out.status.code(), Some(255), "{}", show(&out));
    let run = latest_run(&store);
    let results = results(&run);
    assert_eq!(results["valid"], "unknown", "{results:#}");
    let reason = results["checkers"]["run"]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.contains("the run never started") && reason.contains("elastickv"),
        "{reason}"
    );
    assert!(run.join("results.junit.xml").is_file());
    assert!(run.join("test.json").is_file());
}

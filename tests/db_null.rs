//! End-to-end: `faultline test --db null`, the in-process target. A register run with no
//! nemesis exits 0 with a complete, checkable history (every invocation completed, the
//! checkers that apply say valid, `faultline analyze` of the run directory agrees), runs
//! no node process, and records an `in-process` cluster; every fault and every option
//! that names nodes is refused before the run starts (exit 254, the flag named).

mod test_support;
use analysis::history::{OpType, Process};
use test_support::*;

#[test]
fn a_null_register_run_is_valid_with_a_checkable_history() {
    let args = [
        "--db",
        "null",
        "--workload",
        "register",
        "--nemesis",
        "none",
        "--time-limit",
        "3",
        "--rate",
        "500",
    ];
    let (run, out) = run_test("null-register", &args);
    let verdict = results(&run);
    assert_eq!(
        out.status.code(),
        Some(0),
        "null register run not valid: {verdict:#}\n{}",
        show(&out)
    );
    assert_eq!(
        verdict["checkers"]["linearizable"]["valid"],
        serde_json::json!(true),
        "{verdict:#}"
    );
    assert_eq!(
        verdict["checkers"]["epoch-authority"]["valid"],
        "not-applicable"
    );
    let test = test_json(&run)["test"].clone();
    assert_eq!(
        (test["db"].as_str(), test["cluster"].as_str()),
        (Some("null"), Some("in-process")),
        "{test:#}"
    );

    let history = read_history(&run);
    let client = |kind: OpType| {
        history
            .ops
            .iter()
            .filter(|o| matches!(o.process, Process::Client(_)) && o.kind == kind)
            .count()
    };
    let invokes = client(OpType::Invoke);
    assert!(
        invokes > 500,
        "3 s at 500 ops/s recorded only {invokes} invocations"
    );
    assert_eq!(
        client(OpType::Ok) + client(OpType::Fail),
        invokes,
        "an in-process map answers every call, definitely"
    );
    assert_eq!(client(OpType::Info), 0, "no call is indeterminate");
    assert!(
        history.ops.iter().all(|o| o.process != Process::Nemesis),
        "no nemesis runs against an in-process store"
    );

    let analyzed = faultline()
        .arg("analyze")
        .arg(run.join("history.jsonl"))
        .output()
        .expect("faultline analyze runs");
    assert_eq!(
        analyzed.status.code(),
        Some(0),
        "analyze of the run disagrees:\n{}",
        show(&analyzed)
    );
}

#[test]
fn faults_and_node_options_are_refused_before_the_run_starts() {
    for (extra, says) in [
        (
            &["--nemesis", "kill"][..],
            "--nemesis kill is not supported with --db null: it runs inside faultline",
        ),
        (
            &["--nemesis", "split"][..],
            "--nemesis split is not supported with --db null",
        ),
        (
            &["--nemesis", "none", "--cluster", "netns"][..],
            "--cluster has no meaning",
        ),
        (
            &["--nemesis", "none", "--db-binary", "/bin/true"][..],
            "--db-binary has no meaning",
        ),
        (
            &["--nemesis", "none", "--server-arg=--x"][..],
            "--server-arg has no meaning",
        ),
    ] {
        let store = store_dir("null-refused");
        let out = faultline()
            .args(["test", "--db", "null", "--time-limit", "2", "--store"])
            .arg(&store)
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(254), "{extra:?}: {}", show(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{extra:?}: {}",
            show(&out)
        );
        assert!(
            !store.join("latest").exists(),
            "{extra:?}: refused before any run directory"
        );
    }
}

//! End-to-end: `faultline test --db null`, the in-process target. A register run with no
//! nemesis exits 0 with a complete, checkable history (every invocation completed, the
//! checkers that apply say valid, `faultline analyze` of the run directory agrees), runs
//! no node process, and records an `in-process` cluster; a hotspot run's directory gets the
//! same verdict from `faultline analyze` whether its history is streamed part by part or
//! read whole; every fault and every option that names nodes is refused before the run
//! starts (exit 254, the flag named).

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

/// `results.json` of `faultline analyze <args> --out <dir>`, without its timings.
fn analyzed_results(
    run: &std::path::Path,
    args: &[&str],
    out: &std::path::Path,
) -> serde_json::Value {
    let analyzed = faultline()
        .arg("analyze")
        .args(args)
        .arg("--out")
        .arg(out)
        .arg(run)
        .output()
        .expect("faultline analyze runs");
    assert_eq!(analyzed.status.code(), Some(0), "{}", show(&analyzed));
    let text = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    strip_timings(&mut v);
    v
}

fn strip_timings(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            m.retain(|k, _| k != "check_ms" && k != "ms");
            m.values_mut().for_each(strip_timings);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_timings),
        _ => {}
    }
}

#[test]
fn a_hotspot_run_directory_streamed_part_by_part_gets_the_verdict_it_gets_whole() {
    let args = [
        "--db",
        "null",
        "--nemesis",
        "none",
        "--time-limit",
        "3",
        "--rate",
        "2000",
    ];
    let (run, out) = run_test("null-hotspot-streamed", &args);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let outs = tempfile::tempdir().unwrap();
    let streamed = analyzed_results(&run, &["--stream-above", "0"], &outs.path().join("s"));
    let whole = analyzed_results(&run, &[], &outs.path().join("w"));
    assert_eq!(streamed, whole);
    for checker in ["linearizable", "set-full", "vacuity"] {
        assert_eq!(
            streamed["checkers"][checker]["valid"], true,
            "{checker}: {streamed:#}"
        );
    }
    let leftovers: Vec<_> = std::fs::read_dir(&run)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("faultline-parts-")
        })
        .collect();
    assert!(
        leftovers.is_empty(),
        "part files are removed: {leftovers:?}"
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

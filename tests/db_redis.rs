//! End-to-end: `faultline test --db redis` against one Debian redis-server in Docker
//! (installed by `.ci/run`), so the Redis client (GET/SET, cas as a Lua script, SCAN and
//! MGET set reads) runs against a real Redis-protocol server. Clean register and set runs
//! are valid; killing the node loses the inserts acknowledged since the last RDB snapshot
//! (Redis's default persistence), and set-full reports them as lost. The transaction
//! workloads (Elle's list-append and rw-register through `MULTI`/`EXEC`, which one Redis
//! runs serially) are valid clean; a kill loses the appends since the last snapshot, and
//! the isolation checker says so. The `zset` workload (sorted sets) is valid clean; a kill
//! of a node without persistence empties its sets, and the zset checker says so.

mod test_support;
use test_support::*;

fn count(verdict: &serde_json::Value, checker: &str, name: &str) -> u64 {
    verdict["checkers"][checker]["counts"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("{checker}.{name} in {verdict:#}"))
}

#[test]
fn a_clean_register_run_with_cas_is_valid_and_records_the_redis_client() {
    let _one = lock();
    // Ten processes on a few hot keys, fast, so that concurrent cas meet values they did not expect.
    let args = [
        "--db",
        "redis",
        "--workload",
        "register",
        "--rate",
        "2000",
        "--concurrency",
        "10",
        "--key-dist",
        "celebrity:0.9",
        "--time-limit",
        "8",
        "--test-name",
        "redis-register",
    ];
    let (run, out) = run_test("redis-register", &args);
    let verdict = results(&run);
    assert_eq!(
        out.status.code(),
        Some(0),
        "redis register run not valid: {verdict:#}\n{}",
        show(&out)
    );
    assert_eq!(
        verdict["checkers"]["linearizable"]["valid"],
        serde_json::json!(true)
    );
    let test = test_json(&run)["test"].clone();
    assert_eq!(
        (test["client"].as_str(), test["nodes"].as_u64()),
        (Some("redis"), Some(1)),
        "{test:#}"
    );
    assert!(
        test["register_ops"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o == "cas"),
        "cas is generated: {test:#}"
    );
    let history = read_history(&run);
    let cas = |kind| {
        history
            .ops
            .iter()
            .filter(|o| o.f == "cas" && o.kind == kind)
            .count()
    };
    assert!(
        cas(analysis::history::OpType::Ok) > 20,
        "cas applied through the script"
    );
    assert!(
        cas(analysis::history::OpType::Fail) > 0,
        "cas refused on a mismatch"
    );
}

#[test]
fn clean_set_runs_are_valid_with_scan_and_with_mget_reads() {
    let _one = lock();
    for read in ["scan", "mget"] {
        let name = format!("redis-set-{read}");
        let args = [
            "--db",
            "redis",
            "--workload",
            "set",
            "--set-read",
            read,
            "--time-limit",
            "8",
            "--test-name",
            &name,
        ];
        let (run, out) = run_test(&name, &args);
        let verdict = results(&run);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{read}: redis set run not valid: {verdict:#}\n{}",
            show(&out)
        );
        assert!(
            count(&verdict, "set-full", "stable-count") > 100,
            "{read}: {verdict:#}"
        );
        assert_eq!(test_json(&run)["test"]["set_read"], read);
    }
}

#[test]
fn killing_the_node_loses_the_inserts_since_the_last_snapshot_and_set_full_says_so() {
    let _one = lock();
    let args = [
        "--db",
        "redis",
        "--workload",
        "set",
        "--nemesis",
        "kill",
        "--nemesis-interval",
        "3",
        "--time-limit",
        "14",
        "--test-name",
        "redis-kill",
    ];
    let (run, out) = run_test("redis-kill", &args);
    let verdict = results(&run);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a kill of Redis without a snapshot loses writes: {verdict:#}\n{}",
        show(&out)
    );
    assert_eq!(
        verdict["checkers"]["set-full"]["valid"],
        serde_json::json!(false)
    );
    assert!(count(&verdict, "set-full", "lost-count") > 0, "{verdict:#}");
    let history = read_history(&run);
    assert!(
        !nemesis_events(&history, "start-kill").is_empty(),
        "the node was killed"
    );
}

fn isolation(verdict: &serde_json::Value) -> &serde_json::Value {
    &verdict["checkers"]["isolation"]
}

#[test]
fn clean_transaction_runs_are_valid_under_strict_serializability() {
    let _one = lock();
    for (workload, model) in [("append", "list-append"), ("rw-register", "rw-register")] {
        let name = format!("redis-{workload}");
        let args = [
            "--db",
            "redis",
            "--workload",
            workload,
            "--time-limit",
            "8",
            "--test-name",
            &name,
        ];
        let (run, out) = run_test(&name, &args);
        let verdict = results(&run);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{workload}: not valid: {verdict:#}\n{}",
            show(&out)
        );
        let iso = isolation(&verdict);
        assert_eq!(
            (iso["valid"].as_bool(), iso["details"]["model"].as_str()),
            (Some(true), Some(model)),
            "{iso:#}"
        );
        assert_eq!(iso["details"]["consistency_model"], "strict-serializable");
        assert!(count(&verdict, "isolation", "committed") > 200, "{iso:#}");
        let history = read_history(&run);
        let multi = history
            .ops
            .iter()
            .filter(|o| {
                o.f == "txn"
                    && o.kind == analysis::history::OpType::Ok
                    && o.value.as_array().is_some_and(|m| m.len() > 1)
            })
            .count();
        assert!(
            multi > 50,
            "{workload}: transactions of several micro-ops committed ({multi})"
        );
        assert_eq!(
            test_json(&run)["test"]["consistency_model"],
            "strict-serializable"
        );
    }
}

#[test]
fn killing_the_node_loses_acknowledged_appends_and_the_isolation_checker_says_so() {
    let _one = lock();
    let args = [
        "--db",
        "redis",
        "--workload",
        "append",
        "--nemesis",
        "kill",
        "--nemesis-interval",
        "3",
        "--time-limit",
        "14",
        "--test-name",
        "redis-append-kill",
    ];
    let (run, out) = run_test("redis-append-kill", &args);
    let verdict = results(&run);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a kill of Redis without a snapshot loses appends: {verdict:#}\n{}",
        show(&out)
    );
    let iso = isolation(&verdict);
    assert_eq!(iso["valid"], serde_json::json!(false), "{iso:#}");
    let found: Vec<&str> = iso["details"]["anomaly_types"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    let loss_shaped = [
        "lost-append",
        "incompatible-order",
        "G-single-item-realtime",
        "G-single-item",
        "G0",
        "G0-realtime",
        "G2-item-realtime",
        "G1c-realtime",
    ];
    assert!(
        found.iter().any(|a| loss_shaped.contains(a)),
        "the lost appends show as a loss-shaped anomaly: {found:?}"
    );
    assert!(
        !nemesis_events(&read_history(&run), "start-kill").is_empty(),
        "the node was killed"
    );
}

/// A `zset` run named `name` with `extra` flags: its run directory, output and verdict.
fn zset_run(
    name: &str,
    extra: &[&str],
) -> (std::path::PathBuf, std::process::Output, serde_json::Value) {
    let mut args = vec!["--db", "redis", "--workload", "zset", "--test-name", name];
    args.extend(extra);
    let (run, out) = run_test(name, &args);
    let verdict = results(&run);
    (run, out, verdict)
}

#[test]
fn a_clean_zset_run_is_valid_with_every_sorted_set_call_acknowledged() {
    let _one = lock();
    let (run, out, verdict) = zset_run("redis-zset", &["--time-limit", "8"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "redis zset run not valid: {verdict:#}\n{}",
        show(&out)
    );
    assert_eq!(
        verdict["checkers"]["zset"]["valid"],
        serde_json::json!(true)
    );
    let history = read_history(&run);
    for f in ["zadd", "zincrby", "zrem", "zrange", "zrangebyscore"] {
        let acked = history
            .ops
            .iter()
            .filter(|o| o.f == f && o.kind == analysis::history::OpType::Ok)
            .count();
        assert!(acked > 5, "{f}: {acked} acknowledged");
    }
}

#[test]
fn killing_the_node_without_persistence_loses_sorted_set_members_and_zset_says_so() {
    let _one = lock();
    // No RDB snapshot and no append-only file: a restarted node is empty.
    let no_persistence = [
        "--server-arg=--save",
        "--server-arg=",
        "--server-arg=--appendonly",
        "--server-arg=no",
    ];
    let faults = [
        "--nemesis",
        "kill",
        "--nemesis-interval",
        "3",
        "--time-limit",
        "14",
    ];
    let (run, out, verdict) = zset_run("redis-zset-kill", &[&faults[..], &no_persistence].concat());
    assert_eq!(
        out.status.code(),
        Some(1),
        "a kill of Redis without persistence loses members: {verdict:#}\n{}",
        show(&out)
    );
    assert_eq!(
        verdict["checkers"]["zset"]["valid"],
        serde_json::json!(false)
    );
    assert!(
        !nemesis_events(&read_history(&run), "start-kill").is_empty(),
        "the node was killed"
    );
}

#[test]
fn options_redis_cannot_honour_are_bad_arguments() {
    for (args, says) in [
        (
            vec!["--db", "redis", "--workload", "hotspot"],
            "--workload hotspot",
        ),
        (
            vec![
                "--db",
                "redis",
                "--workload",
                "set",
                "--nemesis",
                "partition",
            ],
            "--nemesis partition",
        ),
        (
            vec!["--db", "redis", "--workload", "set", "--client", "grpc"],
            "--client grpc",
        ),
        (
            vec![
                "--db",
                "redis",
                "--workload",
                "append",
                "--consistency-model",
                "linearish",
            ],
            "--consistency-model",
        ),
        (
            vec!["--db", "redis", "--workload", "set", "--txn-length", "1..3"],
            "--txn-length applies to the transaction workloads",
        ),
        (
            vec![
                "--db",
                "redis",
                "--workload",
                "append",
                "--txn-length",
                "3..1",
            ],
            "--txn-length",
        ),
        (
            vec![
                "--db",
                "elastickv",
                "--workload",
                "append",
                "--client",
                "grpc",
            ],
            "--client redis",
        ),
    ] {
        let out = faultline()
            .args(["test", "--no-progress"])
            .args(&args)
            .output()
            .expect("faultline runs");
        assert_eq!(out.status.code(), Some(254), "{args:?}: {}", show(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{args:?}: {}",
            show(&out)
        );
    }
}

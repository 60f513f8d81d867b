//! End-to-end: `faultline test --db etcd` against three etcd members in Docker (Debian's
//! etcd-server, installed by `.ci/run`). A short register run under kills of the leader is
//! valid by the linearizability checker, epoch-authority and split say `not-applicable`,
//! and options etcd cannot honour are refused as bad arguments. The transaction workloads
//! (Elle's list-append and rw-register as etcd `Txn`s, `workloads/src/etcd/txn.rs`) are
//! strictly serializable by the isolation checker while partitions and kills hit the
//! cluster, with no false alarm from any checker.

mod test_support;
use test_support::*;

#[test]
fn etcd_register_run_under_leader_kills_is_valid() {
    let _one = lock();
    let args = [
        "--db",
        "etcd",
        "--workload",
        "register",
        "--nemesis",
        "kill",
        "--time-limit",
        "20",
        "--nemesis-interval",
        "3",
        "--test-name",
        "etcd-kill",
    ];
    let (run, out) = run_test("etcd-kill", &args);
    let verdict = results(&run);
    assert_eq!(
        out.status.code(),
        Some(0),
        "etcd run not valid: {verdict:#}\n{}",
        show(&out)
    );
    assert_eq!(
        verdict["checkers"]["linearizable"]["valid"],
        serde_json::json!(true)
    );
    for checker in ["epoch-authority", "split"] {
        assert_eq!(
            verdict["checkers"][checker]["valid"], "not-applicable",
            "{checker}: {verdict:#}"
        );
    }
    let history = read_history(&run);
    assert!(client_oks(&history) > 500, "too few successful ops");
    let kills = nemesis_events(&history, "start-kill");
    assert!(
        kills.iter().any(|k| k.value["leaders_killed"]
            .as_array()
            .is_some_and(|a| !a.is_empty())),
        "no leader was killed"
    );
    let cluster = test_json(&run)["cluster"].clone();
    let command = cluster["nodes"][0]["command"]
        .as_array()
        .expect("node commands in test.json")
        .clone();
    assert_eq!(command[0], "/etcd");
    let run_label = format!(
        "faultline.run={}",
        cluster["run_id"].as_str().expect("run id")
    );
    assert!(
        docker_ids("container", &run_label).is_empty(),
        "containers left behind"
    );
}

/// A short `workload` run under partitions and kills (the first of each aimed at the leader)
/// has no false alarm: the isolation checker finds committed transactions strictly
/// serializable, and no checker but `vacuity` is anything but valid or not-applicable.
/// Exit 0 is not asserted: a kill or partition aimed at the leader takes a random node when
/// no leader is known within one interval (2 s) after the previous heal, and then may miss
/// the leader, which leaves vacuity `unknown` — chance (measured: 1 of 18 runs, docs/etcd.md),
/// not a verdict on etcd or on the client.
fn transaction_run_under_faults_has_no_false_alarm(workload: &str, model: &str) {
    let _one = lock();
    let name = format!("etcd-{workload}-faults");
    let args = [
        "--db",
        "etcd",
        "--workload",
        workload,
        "--nemesis",
        "partition,kill",
        "--nemesis-interval",
        "2",
        "--time-limit",
        "14",
        "--test-name",
        &name,
    ];
    let (run, out) = run_test(&name, &args);
    let verdict = results(&run);
    assert!(
        matches!(out.status.code(), Some(0) | Some(2)),
        "{workload}: {verdict:#}\n{}",
        show(&out)
    );
    assert_no_false_alarm(&verdict);
    let iso = &verdict["checkers"]["isolation"];
    assert_eq!(
        (iso["valid"].as_bool(), iso["details"]["model"].as_str()),
        (Some(true), Some(model)),
        "{iso:#}"
    );
    assert_eq!(iso["details"]["consistency_model"], "strict-serializable");
    let committed = iso["counts"]["committed"].as_u64().unwrap_or(0);
    assert!(
        committed > 0,
        "{workload}: no committed transaction: {iso:#}"
    );
    let history = read_history(&run);
    for fault in ["start-partition", "start-kill"] {
        assert!(
            !nemesis_events(&history, fault).is_empty(),
            "{workload}: no {fault}"
        );
    }
}

#[test]
fn etcd_append_under_partitions_and_kills_is_strict_serializable() {
    transaction_run_under_faults_has_no_false_alarm("append", "list-append");
}

#[test]
fn etcd_rw_register_under_partitions_and_kills_is_strict_serializable() {
    transaction_run_under_faults_has_no_false_alarm("rw-register", "rw-register");
}

#[test]
fn options_etcd_cannot_honour_are_bad_arguments() {
    for (args, says) in [
        (vec!["--db", "etcd"], "--workload hotspot"),
        (
            vec!["--db", "etcd", "--workload", "set", "--nemesis", "split"],
            "--nemesis split",
        ),
        (
            vec!["--db", "etcd", "--workload", "set", "--bug", "no-fence"],
            "--bug",
        ),
        (
            vec![
                "--cluster",
                "external",
                "--endpoints",
                "127.0.0.1:1",
                "--nemesis",
                "kill",
            ],
            "--cluster external",
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

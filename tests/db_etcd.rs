//! End-to-end: `faultline test --db etcd` against three etcd members in Docker (Debian's
//! etcd-server, installed by `.ci/run`). A short register run under kills of the leader is
//! valid by the linearizability checker, epoch-authority and split say `not-applicable`,
//! and options etcd cannot honour are refused as bad arguments.

mod test_support;
use test_support::*;

#[test]
fn etcd_register_run_under_leader_kills_is_valid() {
    let _one = lock();
    let args = [
        "--db", "etcd", "--workload", "register", "--nemesis", "kill", "--time-limit", "20", "--nemesis-interval", "3",
        "--test-name", "etcd-kill",
    ];
    let (run, out) = run_test("etcd-kill", &args);
    let verdict = results(&run);
    assert_eq!(out.status.code(), Some(0), "etcd run not valid: {verdict:#}\n{}", show(&out));
    assert_eq!(verdict["checkers"]["linearizable"]["valid"], serde_json::json!(true));
    for checker in ["epoch-authority", "split"] {
        assert_eq!(verdict["checkers"][checker]["valid"], "not-applicable", "{checker}: {verdict:#}");
    }
    let history = read_history(&run);
    assert!(client_oks(&history) > 500, "too few successful ops");
    let kills = nemesis_events(&history, "start-kill");
    assert!(kills.iter().any(|k| k.value["leaders_killed"].as_array().is_some_and(|a| !a.is_empty())), "no leader was killed");
    let cluster = test_json(&run)["cluster"].clone();
    let command = cluster["nodes"][0]["command"].as_array().expect("node commands in test.json").clone();
    assert_eq!(command[0], "/etcd");
    let run_label = format!("faultline.run={}", cluster["run_id"].as_str().expect("run id"));
    assert!(docker_ids("container", &run_label).is_empty(), "containers left behind");
}

#[test]
fn options_etcd_cannot_honour_are_bad_arguments() {
    for (args, says) in [
        (vec!["--db", "etcd"], "--workload hotspot"),
        (vec!["--db", "etcd", "--workload", "set", "--nemesis", "split"], "--nemesis split"),
        (vec!["--db", "etcd", "--workload", "set", "--bug", "no-fence"], "--bug"),
        (vec!["--cluster", "external", "--endpoints", "127.0.0.1:1", "--nemesis", "kill"], "--cluster external"),
    ] {
        let out = faultline().args(["test", "--no-progress"]).args(&args).output().expect("faultline runs");
        assert_eq!(out.status.code(), Some(254), "{args:?}: {}", show(&out));
        assert!(String::from_utf8_lossy(&out.stderr).contains(says), "{args:?}: {}", show(&out));
    }
}

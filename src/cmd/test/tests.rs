//! From `faultline test`'s flags to a validated [`Plan`]: defaults, overrides, what each
//! target gets (server flags, register ops, read path) and the flag named by each refusal.

use super::*;
use crate::runner::plan::{BadArgs, Plan};
use clap::Parser;
use nemesis::FaultKind;

#[derive(Parser)]
struct Wrap {
    #[command(flatten)]
    args: TestArgs,
}

fn plan(argv: &[&str]) -> Result<Plan, BadArgs> {
    let mut full = vec!["test"];
    full.extend_from_slice(argv);
    Plan::from_spec(
        &Wrap::try_parse_from(full)
            .expect("clap accepts")
            .args
            .into_spec(),
    )
}

#[test]
fn auto_partition_modes_fit_the_cluster_size() {
    use nemesis::PartitionMode as M;
    let three = plan(&[]).unwrap().partition_modes;
    assert_eq!(
        three,
        vec![M::One, M::Majority, M::Bridge, M::Ring, M::Leader],
        "3 nodes: the shapes of before"
    );
    let five = plan(&["--nodes", "5"]).unwrap().partition_modes;
    assert!(five.contains(&M::MajoritiesRing), "{five:?}");
    assert_eq!(
        plan(&["--partition-modes", "majorities-ring"])
            .unwrap()
            .partition_modes,
        vec![M::MajoritiesRing]
    );
}

#[test]
fn defaults_resolve_to_the_hotspot_workload() {
    let p = plan(&["--seed", "7"]).unwrap();
    assert_eq!(p.seed, 7);
    assert_eq!(p.workload.seed, 7);
    assert_eq!(p.workload.time_limit_s, 60.0);
    assert!(p.nemesis.is_empty());
    assert_eq!(p.server_args, vec!["--groups", "3", "--auto-split"]);
    assert_eq!(p.test_name, "refkv-hotspot-none");
}

#[test]
fn flags_override_the_workload_defaults() {
    let p = plan(&[
        "--workload",
        "register",
        "--concurrency",
        "2n",
        "--rate",
        "50",
        "--nemesis",
        "kill,partition",
        "--bug",
        "no-fence",
    ])
    .unwrap();
    assert_eq!(p.workload.concurrency.processes(3), 6);
    assert_eq!(p.workload.rate, 50.0);
    assert_eq!(p.nemesis, vec![FaultKind::PARTITION, FaultKind::KILL]);
    assert!(p
        .server_args
        .ends_with(&["--bug".to_string(), "no-fence".to_string()]));
    assert_eq!(p.test_name, "refkv-register-kill+partition-bug-no-fence");
}

#[test]
fn read_fraction_sets_the_register_mix_and_is_recorded() {
    let p = plan(&["--read-fraction", "0.8"]).unwrap();
    assert_eq!(p.workload.read_fraction, 0.8);
    let json = p.to_json();
    assert_eq!(json["read_fraction"], serde_json::json!(0.8));
    assert!(
        (json["cas_fraction"].as_f64().unwrap() - 0.1).abs() < 1e-9,
        "{json}"
    );
    let err = plan(&["--read-fraction", "2"]).expect_err("refused").0;
    assert!(
        err.contains("--read-fraction") && err.contains("between 0 and 1"),
        "{err}"
    );
}

#[test]
fn a_target_without_cas_gets_reads_and_writes_only() {
    let p = plan(&["--db", "elastickv", "--workload", "register"]).unwrap();
    assert_eq!(p.workload.cas_fraction, 0.0);
    assert_eq!(
        p.to_json()["register_ops"],
        serde_json::json!(["read", "write"])
    );
    let refkv = plan(&["--workload", "register"]).unwrap();
    assert_eq!(
        refkv.to_json()["register_ops"],
        serde_json::json!(["read", "write", "cas"])
    );
}

#[test]
fn a_schedule_too_long_for_the_time_limit_is_warned_about() {
    let p = plan(&["--nemesis", "partition,kill", "--time-limit", "30"]).unwrap();
    assert_eq!(p.warnings().len(), 1, "the kill would start at 30 s");
    assert_eq!(p.to_json()["warnings"].as_array().map(Vec::len), Some(1));
    assert!(plan(&["--nemesis", "partition,kill", "--time-limit", "60"])
        .unwrap()
        .warnings()
        .is_empty());
}

#[test]
fn the_read_path_defaults_to_node_and_is_recorded() {
    assert_eq!(
        plan(&["--db", "elastickv"]).unwrap().to_json()["read_path"],
        "node"
    );
    assert_eq!(
        plan(&["--db", "elastickv", "--read-path", "leader"])
            .unwrap()
            .to_json()["read_path"],
        "leader"
    );
    let etcd = plan(&[
        "--db",
        "etcd",
        "--workload",
        "register",
        "--read-path",
        "leader",
    ])
    .expect_err("etcd has no read path");
    assert!(etcd.0.contains("--read-path"), "{}", etcd.0);
}

#[test]
fn bad_values_are_rejected_with_the_flag_named() {
    for (argv, flag) in [
        (vec!["--nemesis", "flood"], "--nemesis"),
        (vec!["--partition-modes", "star"], "--partition-modes"),
        (vec!["--nemesis-interval", "0"], "--nemesis-interval"),
        (vec!["--loss-probability", "2"], "--loss-probability"),
        (vec!["--concurrency", "0"], "--concurrency"),
        (vec!["--key-dist", "zipf:-1"], "--key-dist"),
        (vec!["--workload", "bank"], "workload"),
        (vec!["--subnet", "10.0.0.0/30"], "--subnet"),
        (vec!["--time-limit", "0"], "--time-limit"),
        (vec!["--test-name", "../escape"], "--test-name"),
    ] {
        let err = plan(&argv)
            .err()
            .unwrap_or_else(|| panic!("{argv:?} accepted"))
            .0;
        assert!(err.contains(flag), "{argv:?}: {err}");
    }
}

#[test]
fn other_targets_get_only_the_users_server_args_and_their_own_name() {
    let p = plan(&[
        "--db",
        "etcd",
        "--workload",
        "register",
        "--server-arg=--heartbeat-interval=50",
    ])
    .unwrap();
    assert_eq!(
        p.server_args,
        vec!["--heartbeat-interval=50"],
        "refkv's --groups/--auto-split are not etcd flags"
    );
    assert_eq!(p.test_name, "etcd-register-none");
    assert_eq!(p.db.groups(), vec![1]);
    assert_eq!(p.to_json()["db"], "etcd");
}

#[test]
fn a_dynamic_db_binary_is_fine_outside_refkv_in_docker() {
    // Debian's etcd is dynamic: refused only where the image has no libc (refkv's).
    let etcd = crate::db::etcd::find_etcd().expect("etcd on the PATH");
    let path = etcd.to_str().unwrap();
    assert!(plan(&["--db", "etcd", "--workload", "set", "--db-binary", path]).is_ok());
    let err = plan(&["--db-binary", path]).unwrap_err().0;
    assert!(err.contains("dynamically linked"), "{err}");
}

#[test]
fn the_default_spec_is_faultline_tests_defaults() {
    let spec = TestSpec::default();
    let parsed = Wrap::try_parse_from(["test"])
        .expect("clap accepts")
        .args
        .into_spec();
    assert_eq!(
        (
            spec.nodes,
            spec.groups,
            spec.time_limit,
            spec.nemesis.as_str()
        ),
        (3, 3, 60, "none")
    );
    assert_eq!(format!("{spec:?}"), format!("{parsed:?}"));
    assert!(spec.generator.is_none());
}

#[test]
fn elastickv_through_redis_has_cas_and_the_client_is_recorded() {
    let p = plan(&[
        "--db",
        "elastickv",
        "--client",
        "redis",
        "--workload",
        "register",
    ])
    .unwrap();
    assert!(p.workload.cas_fraction > 0.0);
    let json = p.to_json();
    assert_eq!(
        (json["client"].as_str(), json["set_read"].as_str()),
        (Some("redis"), Some("scan"))
    );
    assert_eq!(
        json["register_ops"],
        serde_json::json!(["read", "write", "cas"])
    );
    let grpc = plan(&["--db", "elastickv", "--workload", "register"])
        .unwrap()
        .to_json();
    assert_eq!(
        (grpc["client"].as_str(), grpc["set_read"].as_str()),
        (Some("grpc"), None)
    );
}

#[test]
fn redis_runs_one_node_through_its_own_protocol_and_says_so() {
    let p = plan(&["--db", "redis", "--workload", "set", "--set-read", "mget"]).unwrap();
    assert_eq!(
        (p.spec.nodes, p.protocol()),
        (1, workloads::Protocol::Redis)
    );
    assert_eq!(p.to_json()["set_read"], "mget");
    assert!(
        p.warnings()
            .iter()
            .any(|w| w.contains("--nodes 3 is ignored")),
        "{:?}",
        p.warnings()
    );
    assert!(
        plan(&["--db", "redis", "--workload", "set", "--nodes", "1"])
            .unwrap()
            .warnings()
            .is_empty()
    );
}

/// Client choices a target or workload cannot honour, each with what its refusal says: the
/// flags of a `faultline test` command line (split at spaces) and a part of the error.
const REFUSED_CLIENT_CHOICES: &[(&str, &str)] = &[
    ("--db redis --workload set --client grpc", "--client grpc"),
    ("--db etcd --workload set --client redis", "--client redis"),
    ("--workload set --set-read mget", "--set-read mget"),
    (
        "--workload set --client dynamodb",
        "--client dynamodb runs --workload append or register only",
    ),
    (
        "--db elastickv --workload append --client s3",
        "--client s3 runs --workload register or objects only",
    ),
    ("--workload register --client s3", "--client s3"),
    (
        "--db elastickv --workload register --client sqs",
        "--client sqs runs --workload queue only",
    ),
    (
        "--db elastickv --workload queue --client redis",
        "--workload queue runs queue calls, which --db elastickv runs only with --client sqs",
    ),
    (
        "--db elastickv --workload queue",
        "--workload queue runs queue calls, which --db elastickv runs only with --client sqs",
    ),
    ("--workload queue --client sqs", "--client sqs"),
    (
        "--workload register --value-type SS",
        "--value-type applies to --workload register with --client dynamodb",
    ),
    (
        "--workload register --client dynamodb --value-type string",
        "unknown --value-type \"string\"",
    ),
    (
        "--workload register --client dynamodb --key-count 8",
        "--key-count 8 must be at least 10",
    ),
    (
        "--db etcd --workload append --client dynamodb",
        "--client dynamodb",
    ),
    (
        "--db elastickv --client redis --read-path leader",
        "--read-path leader",
    ),
];

#[test]
fn client_choices_a_target_cannot_honour_name_the_flag() {
    for &(argv, says) in REFUSED_CLIENT_CHOICES {
        let argv: Vec<&str> = argv.split(' ').collect();
        let err = plan(&argv).expect_err("refused");
        assert!(err.0.contains(says), "{argv:?}: {}", err.0);
    }
}

#[test]
fn auto_partition_modes_on_one_node_are_empty_and_refused_only_with_the_partition_nemesis() {
    assert!(plan(&["--nodes", "1", "--workload", "register"])
        .unwrap()
        .partition_modes
        .is_empty());
    let err = plan(&[
        "--nodes",
        "1",
        "--workload",
        "register",
        "--nemesis",
        "partition",
    ])
    .expect_err("no shape fits one node")
    .0;
    assert!(err.contains("no partition shape fits 1 node"), "{err}");
    assert!(plan(&["--partition-modes", ","])
        .expect_err("an explicit empty list")
        .0
        .contains("at least one mode"));
}

#[test]
fn an_ssh_cluster_runs_one_node_per_host_and_auto_partitions_fit_them() {
    let five = plan(&["--cluster", "ssh", "--hosts", "h1,h2,h3,h4,h5"]).unwrap();
    assert_eq!(five.spec.nodes, 5);
    assert!(
        five.partition_modes
            .contains(&nemesis::PartitionMode::MajoritiesRing),
        "{:?}",
        five.partition_modes
    );
    assert_eq!(
        five.to_json()["ssh"]["hosts"],
        serde_json::json!(["h1", "h2", "h3", "h4", "h5"])
    );
    assert_eq!(five.to_json()["ssh"]["dir"], "/var/tmp/faultline");
    assert!(
        plan(&[]).unwrap().to_json().get("ssh").is_none(),
        "other clusters record no ssh options"
    );

    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        file.path(),
        "# the lab\n10.0.1.11\n10.0.1.12  # rack 2\n\n10.0.1.13\n",
    )
    .unwrap();
    let from_file = plan(&[
        "--cluster",
        "ssh",
        "--hosts-file",
        &file.path().display().to_string(),
    ])
    .unwrap();
    assert_eq!(
        from_file.spec.ssh.hosts,
        ["10.0.1.11", "10.0.1.12", "10.0.1.13"]
    );
}

#[test]
fn an_ssh_cluster_refuses_missing_duplicate_hosts_and_a_bad_dir() {
    let e = plan(&["--cluster", "ssh"]).unwrap_err().0;
    assert!(e.contains("--hosts"), "{e}");
    let e = plan(&["--cluster", "ssh", "--hosts", "h1,h1"])
        .unwrap_err()
        .0;
    assert!(e.contains("h1 is named twice"), "{e}");
    let e = plan(&["--cluster", "ssh", "--hosts", "h1", "--ssh-dir", "/"])
        .unwrap_err()
        .0;
    assert!(e.contains("--ssh-dir"), "{e}");
    let e = plan(&["--hosts", "h1,h2,h3"]).unwrap_err().0;
    assert!(
        e.contains("need --cluster ssh"),
        "hosts on a Docker run are a mistake: {e}"
    );
    let e = plan(&["--cluster", "ssh", "--hosts-file", "/nonexistent/hosts"])
        .unwrap_err()
        .0;
    assert!(
        e.contains("--hosts-file") && e.contains("/nonexistent/hosts"),
        "{e}"
    );
}

#[test]
fn set_size_applies_to_the_set_workloads_only() {
    assert_eq!(plan(&[]).unwrap().workload.set_size, 2000, "the default");
    assert_eq!(plan(&["--set-size", "50"]).unwrap().workload.set_size, 50);
    let set = plan(&["--workload", "set", "--set-size", "0"]).unwrap();
    assert_eq!(set.workload.set_size, 0, "0: one set for the whole run");
    let e = plan(&["--workload", "register", "--set-size", "50"]).unwrap_err();
    assert!(
        e.0.contains("--set-size applies to the set workloads"),
        "{}",
        e.0
    );
}

#[test]
fn a_dynamodb_register_run_spreads_twenty_keys_over_all_types_unless_told() {
    use workloads::client::dynamodb::value_types::{ValueType, ValueTypes};
    let p = plan(&["--workload", "register", "--client", "dynamodb"]).unwrap();
    assert_eq!(
        (
            p.workload.value_types,
            p.workload.keys,
            p.workload.cas_fraction
        ),
        (Some(ValueTypes::All), 20, 0.0),
        "all types, two keys each, no compare-and-set"
    );
    assert_eq!(p.client_options().value_types, Some(ValueTypes::All));
    let one = plan(&[
        "--workload",
        "register",
        "--client",
        "dynamodb",
        "--value-type",
        "NS",
        "--key-count",
        "3",
    ])
    .unwrap();
    assert_eq!(
        (one.workload.value_types, one.workload.keys),
        (Some(ValueTypes::One(ValueType::Ns)), 3)
    );
    let append = plan(&["--workload", "append", "--client", "dynamodb"]).unwrap();
    assert_eq!(append.workload.value_types, None);
}

#[test]
fn tables_need_dynamodb_appends_stay_within_eight_and_spread_over_elastickvs_groups() {
    for (argv, says) in [
        (
            vec!["--workload", "append", "--tables", "3"],
            "--tables needs --client dynamodb",
        ),
        (
            vec![
                "--client",
                "dynamodb",
                "--workload",
                "append",
                "--tables",
                "9",
            ],
            "--tables must be between 1 and 8, got 9",
        ),
        (
            vec![
                "--client",
                "dynamodb",
                "--workload",
                "append",
                "--tables",
                "0",
            ],
            "--tables must be between 1 and 8, got 0",
        ),
    ] {
        let err = plan(&argv).expect_err("refused");
        assert!(err.0.contains(says), "{argv:?}: {}", err.0);
    }
    let three = [
        "--client",
        "dynamodb",
        "--workload",
        "append",
        "--tables",
        "3",
    ];
    let refkv = plan(&three).unwrap();
    assert_eq!(refkv.client_options().dynamo_tables, 3);
    assert_eq!(refkv.to_json()["tables"], 3);
    assert!(!refkv
        .server_args
        .iter()
        .any(|a| a.starts_with("--shardRanges")));
    let mut on_elastickv = vec!["--db", "elastickv", "--groups", "3"];
    on_elastickv.extend(three);
    let ekv = plan(&on_elastickv).unwrap();
    let ranges: Vec<&String> = ekv
        .server_args
        .iter()
        .filter(|a| a.starts_with("--shardRanges="))
        .collect();
    assert_eq!(ranges.len(), 1, "{:?}", ekv.server_args);
    assert!(
        ranges[0].starts_with("--shardRanges=:!ddb|route|table|"),
        "{}",
        ranges[0]
    );
    assert_eq!(
        plan(&["--workload", "append"]).unwrap().to_json()["tables"],
        serde_json::Value::Null
    );
}

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
    Plan::from_spec(&Wrap::try_parse_from(full).expect("clap accepts").args.into_spec())
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
    let p = plan(&["--workload", "register", "--concurrency", "2n", "--rate", "50", "--nemesis", "kill,partition", "--bug", "no-fence"])
        .unwrap();
    assert_eq!(p.workload.concurrency.processes(3), 6);
    assert_eq!(p.workload.rate, 50.0);
    assert_eq!(p.nemesis, vec![FaultKind::PARTITION, FaultKind::KILL]);
    assert!(p.server_args.ends_with(&["--bug".to_string(), "no-fence".to_string()]));
    assert_eq!(p.test_name, "refkv-register-kill+partition-bug-no-fence");
}

#[test]
fn a_target_without_cas_gets_reads_and_writes_only() {
    let p = plan(&["--db", "elastickv", "--workload", "register"]).unwrap();
    assert_eq!(p.workload.cas_fraction, 0.0);
    assert_eq!(p.to_json()["register_ops"], serde_json::json!(["read", "write"]));
    let refkv = plan(&["--workload", "register"]).unwrap();
    assert_eq!(refkv.to_json()["register_ops"], serde_json::json!(["read", "write", "cas"]));
}

#[test]
fn a_schedule_too_long_for_the_time_limit_is_warned_about() {
    let p = plan(&["--nemesis", "partition,kill", "--time-limit", "30"]).unwrap();
    assert_eq!(p.warnings().len(), 1, "the kill would start at 30 s");
    assert_eq!(p.to_json()["warnings"].as_array().map(Vec::len), Some(1));
    assert!(plan(&["--nemesis", "partition,kill", "--time-limit", "60"]).unwrap().warnings().is_empty());
}

#[test]
fn the_read_path_defaults_to_node_and_is_recorded() {
    assert_eq!(plan(&["--db", "elastickv"]).unwrap().to_json()["read_path"], "node");
    assert_eq!(plan(&["--db", "elastickv", "--read-path", "leader"]).unwrap().to_json()["read_path"], "leader");
    let etcd = plan(&["--db", "etcd", "--workload", "register", "--read-path", "leader"]).expect_err("etcd has no read path");
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
        let err = plan(&argv).err().unwrap_or_else(|| panic!("{argv:?} accepted")).0;
        assert!(err.contains(flag), "{argv:?}: {err}");
    }
}

#[test]
fn other_targets_get_only_the_users_server_args_and_their_own_name() {
    let p = plan(&["--db", "etcd", "--workload", "register", "--server-arg=--heartbeat-interval=50"]).unwrap();
    assert_eq!(p.server_args, vec!["--heartbeat-interval=50"], "refkv's --groups/--auto-split are not etcd flags");
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
    let parsed = Wrap::try_parse_from(["test"]).expect("clap accepts").args.into_spec();
    assert_eq!((spec.nodes, spec.groups, spec.time_limit, spec.nemesis.as_str()), (3, 3, 60, "none"));
    assert_eq!(format!("{spec:?}"), format!("{parsed:?}"));
    assert!(spec.generator.is_none());
}

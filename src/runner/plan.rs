//! The validated plan of a run: every option of `faultline test` checked and resolved
//! (seed chosen, nemesis list parsed, server flags assembled) before anything starts, so bad
//! arguments fail fast with exit code 254 and `test.json` records exactly what ran.

use crate::cluster::subnet::{self, Cidr};
use crate::cmd::test::TestArgs;
use nemesis::{FaultKind, PartitionMode};
use std::fmt;
use std::time::Duration;
use workloads::config::{WorkloadConfig, WorkloadKind};

/// The workload's defaults overridden by the command line.
fn workload_config(args: &TestArgs, seed: u64) -> anyhow::Result<WorkloadConfig> {
    let kind: WorkloadKind = args.workload.parse()?;
    let mut cfg = WorkloadConfig::defaults(kind);
    cfg.seed = seed;
    cfg.time_limit_s = args.time_limit as f64;
    if let Some(c) = &args.concurrency {
        cfg.concurrency = c.parse()?;
    }
    if let Some(r) = args.rate {
        cfg.rate = r;
    }
    if let Some(d) = &args.key_dist {
        cfg.key_dist = d.parse()?;
    }
    cfg.validate()?;
    Ok(cfg)
}

/// An error in the command-line arguments (exit code 254).
#[derive(Debug)]
pub struct BadArgs(pub String);

impl fmt::Display for BadArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for BadArgs {}

/// Everything a run needs, validated.
#[derive(Debug, Clone)]
pub struct Plan {
    pub args: TestArgs,
    pub test_name: String,
    pub seed: u64,
    /// The workload's configuration (defaults of the workload, overridden by the flags).
    pub workload: WorkloadConfig,
    pub nemesis: Vec<FaultKind>,
    pub partition_modes: Vec<PartitionMode>,
    pub nemesis_interval: Duration,
    pub time_limit: Duration,
    pub subnet: Option<Cidr>,
    /// Flags appended to every server's command line.
    pub server_args: Vec<String>,
    /// The store under test (`--db`): node command line, client, applicable checkers.
    pub db: std::sync::Arc<dyn crate::db::Db>,
}

impl Plan {
    pub fn from_args(args: &TestArgs) -> Result<Plan, BadArgs> {
        let bad = |s: String| BadArgs(s);
        let nemesis = FaultKind::parse_list(&args.nemesis).map_err(|e| bad(format!("--nemesis: {e}")))?;
        let mut partition_modes = Vec::new();
        for m in args.partition_modes.split(',').map(str::trim).filter(|m| !m.is_empty()) {
            if m == "auto" {
                partition_modes.extend(PartitionMode::all_for(usize::from(args.nodes)));
                continue;
            }
            partition_modes.push(PartitionMode::parse(m).ok_or_else(|| {
                bad(format!("--partition-modes: unknown mode {m:?} (auto, one, majority, bridge, ring, leader, majorities-ring)"))
            })?);
        }
        if partition_modes.is_empty() {
            return Err(bad("--partition-modes needs at least one mode".into()));
        }
        if !(args.nemesis_interval.is_finite() && args.nemesis_interval >= 0.5 && args.nemesis_interval <= 3600.0) {
            return Err(bad(format!("--nemesis-interval {} must be between 0.5 and 3600 seconds", args.nemesis_interval)));
        }
        if !(0.0..=1.0).contains(&args.loss_probability) {
            return Err(bad(format!("--loss-probability {} must be between 0 and 1", args.loss_probability)));
        }
        if args.time_limit == 0 || args.time_limit > 24 * 3600 {
            return Err(bad(format!("--time-limit {} must be between 1 and 86400 seconds", args.time_limit)));
        }
        if args.groups == 0 || args.groups > 64 {
            return Err(bad(format!("--groups {} must be between 1 and 64", args.groups)));
        }
        let subnet = match &args.subnet {
            Some(s) => Some(subnet::parse_subnet(s).map_err(|e| bad(format!("--subnet: {e:#}")))?),
            None => None,
        };
        let db = args.db.build(args.groups);
        if args.read_path == workloads::ReadPath::Leader && !db.read_paths() {
            return Err(bad(format!("--read-path leader has no meaning for --db {}: its reads are served as it decides", args.db.name())));
        }
        crate::db::validate(db.as_ref(), args.cluster, &args.workload, &nemesis, args.bug.as_deref()).map_err(bad)?;
        let refkv_in_docker = args.db == crate::db::DbKind::Refkv && args.cluster == crate::db::ClusterKind::Docker;
        if let Some(p) = args.db_binary.as_ref().filter(|_| refkv_in_docker) {
            crate::image::check_static_binary(p).map_err(|e| bad(format!("--db-binary: {e:#}")))?;
        }
        let seed = args.seed.unwrap_or_else(rand::random);
        let mut workload = workload_config(args, seed).map_err(|e| bad(format!("{e:#}")))?;
        if !db.supports_cas() {
            // A workload never generates an op its target cannot do: reads and writes only.
            workload.cas_fraction = 0.0;
        }
        let test_name = args.name();
        super::store::check_name(&test_name).map_err(|e| bad(format!("--test-name: {e:#}")))?;
        let mut server_args = vec!["--groups".to_string(), args.groups.to_string()];
        if !args.no_auto_split {
            server_args.push("--auto-split".to_string());
        }
        if args.db != crate::db::DbKind::Refkv {
            server_args.clear(); // refkv's own flags; other targets get only --server-arg
        }
        if let Some(b) = &args.bug {
            server_args.extend(["--bug".to_string(), b.clone()]);
        }
        server_args.extend(args.server_args.iter().cloned());
        Ok(Plan {
            args: args.clone(),
            test_name,
            seed,
            workload,
            nemesis,
            partition_modes,
            nemesis_interval: Duration::from_secs_f64(args.nemesis_interval),
            time_limit: Duration::from_secs(args.time_limit),
            subnet,
            server_args,
            db,
        })
    }

    /// What the run should be told before it starts (it runs anyway).
    pub fn warnings(&self) -> Vec<String> {
        nemesis::schedule::schedule_shortfall(&self.nemesis, self.nemesis_interval, self.time_limit).into_iter().collect()
    }

    /// The operations the register part of the workload generates.
    pub fn register_ops(&self) -> Vec<&'static str> {
        let mut ops = vec!["read", "write"];
        if self.workload.cas_fraction > 0.0 {
            ops.push("cas");
        }
        ops
    }

    /// The options as recorded in `test.json`.
    pub fn to_json(&self) -> serde_json::Value {
        let a = &self.args;
        serde_json::json!({
            "name": self.test_name,
            "seed": self.seed,
            "db": a.db,
            "cluster": a.cluster,
            "endpoints": a.endpoints,
            "nodes": a.nodes,
            "groups": a.groups,
            "bug": a.bug,
            "db_binary": a.db_binary,
            "image": a.image,
            "server_args": self.server_args,
            "workload": a.workload,
            "read_path": a.read_path,
            "register_ops": self.register_ops(),
            "key_dist": a.key_dist,
            "concurrency": self.workload.concurrency.to_string(),
            "processes": self.workload.concurrency.processes(usize::from(a.nodes)),
            "rate": self.workload.rate,
            "time_limit_s": a.time_limit,
            "nemesis": self.nemesis.iter().map(|k| k.name()).collect::<Vec<_>>(),
            "nemesis_interval_s": a.nemesis_interval,
            "partition_modes": self.partition_modes.iter().map(|m| m.name()).collect::<Vec<_>>(),
            "loss_probability": a.loss_probability,
            "recovery_timeout_s": a.recovery_timeout,
            "auto_split": !a.no_auto_split,
            "leave_running": a.leave_running,
            "restart_crashed": a.restart_crashed,
            "store": a.store,
            "subnet": a.subnet,
            "warnings": self.warnings(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        args: TestArgs,
    }

    fn plan(argv: &[&str]) -> Result<Plan, BadArgs> {
        let mut full = vec!["test"];
        full.extend_from_slice(argv);
        Plan::from_args(&Wrap::try_parse_from(full).expect("clap accepts").args)
    }

    #[test]
    fn auto_partition_modes_fit_the_cluster_size() {
        use nemesis::PartitionMode as M;
        let three = plan(&[]).unwrap().partition_modes;
        assert_eq!(three, vec![M::One, M::Majority, M::Bridge, M::Ring, M::Leader], "3 nodes: the shapes of before");
        let five = plan(&["--nodes", "5"]).unwrap().partition_modes;
        assert!(five.contains(&M::MajoritiesRing), "{five:?}");
        assert_eq!(plan(&["--partition-modes", "majorities-ring"]).unwrap().partition_modes, vec![M::MajoritiesRing]);
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
        let p = plan(&["--workload", "register", "--concurrency", "2n", "--rate", "50", "--nemesis", "kill,partition", "--bug", "no-fence"]).unwrap();
        assert_eq!(p.workload.concurrency.processes(3), 6);
        assert_eq!(p.workload.rate, 50.0);
        assert_eq!(p.nemesis, vec![FaultKind::Partition, FaultKind::Kill]);
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
}

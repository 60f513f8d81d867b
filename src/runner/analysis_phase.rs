//! The analysis phase: the run's facts (its options as `test.json` records them and what
//! its db reports) handed to analysis's one checker registry
//! ([`analysis::checkers::registry`]), which decides once which checkers judge the
//! history, runs them and merges their results into the verdict (`results.json`).

use super::record::TestRecord;
use crate::db::{ClusterKind, Db, DbKind};
pub use analysis::checkers::registry::RunFacts;
use analysis::checkers::registry::{self, Basis, CheckOptions};
use analysis::formats::ParseReport;
use analysis::history::History;
use analysis::partitioned::{self, Streamed};
use analysis::verdict::Verdict;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use workloads::WorkloadKind;

/// The options of a run that the facts depend on.
struct FactOptions<'a> {
    workload: &'a str,
    nemesis: Vec<String>,
    auto_split: bool,
    server_args: &'a [String],
    cluster: ClusterKind,
    /// The protocol of the data operations (`--client`).
    client: workloads::Protocol,
    /// What the run asked of the checkers (the isolation checker's consistency model).
    checks: CheckOptions,
}

/// The facts of a run from its resolved options (typed, as its `test.json` records them)
/// and its db's declaration.
pub fn run_facts(test: &TestRecord, db: &dyn Db, hot_prefix: Option<String>) -> RunFacts {
    let options = FactOptions {
        workload: &test.workload,
        nemesis: test.nemesis.iter().map(|k| k.to_string()).collect(),
        auto_split: test.auto_split,
        server_args: &test.server_args,
        cluster: test.cluster,
        client: test.client,
        checks: CheckOptions {
            consistency: test
                .consistency_model
                .as_deref()
                .and_then(|m| m.parse().ok())
                .unwrap_or_default(),
            ..CheckOptions::default()
        },
    };
    facts_of(&options, db, hot_prefix)
}

/// The facts of a run from the `"test"` object of its `test.json`, so `faultline analyze`
/// of a run directory judges exactly as the run did. Missing fields take the defaults of
/// `faultline test`.
pub fn recorded_facts(
    test: &serde_json::Value,
    db: &dyn Db,
    hot_prefix: Option<String>,
) -> RunFacts {
    let strings = |field: &str| -> Vec<String> {
        test[field]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|k| k.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let server_args = strings("server_args");
    let options = FactOptions {
        workload: test["workload"].as_str().unwrap_or("hotspot"),
        nemesis: strings("nemesis"),
        auto_split: test["auto_split"].as_bool().unwrap_or(true),
        server_args: &server_args,
        cluster: test["cluster"]
            .as_str()
            .and_then(ClusterKind::from_name)
            .unwrap_or_default(),
        client: test["client"]
            .as_str()
            .and_then(|c| c.parse().ok())
            .unwrap_or_default(),
        checks: recorded_checks(test),
    };
    facts_of(&options, db, hot_prefix)
}

fn facts_of(options: &FactOptions, db: &dyn Db, hot_prefix: Option<String>) -> RunFacts {
    let spec = WorkloadKind::from_name(options.workload).map(WorkloadKind::spec);
    let hot_range = spec.is_some_and(|s| s.hot_range);
    // A transaction's answer carries no commit metadata (it may commit in several groups),
    // so a transaction workload's operations report none whatever the store does.
    let transactional = spec.is_some_and(|s| s.transactional());
    // Nor does a data API's (DynamoDB, S3): only the store's own protocol reports where a
    // write committed.
    let own_protocol = matches!(
        options.client,
        workloads::Protocol::Grpc | workloads::Protocol::Redis
    );
    let reports = db.reports();
    RunFacts {
        basis: Basis::Run,
        splits_expected: options.nemesis.iter().any(|k| k == "split")
            || (hot_range && options.auto_split),
        hot_prefix: hot_prefix.filter(|_| hot_range),
        store: db.kind().name().to_string(),
        // A seeded bug breaks the promise, it does not withdraw it.
        linearizable_reads: db
            .capabilities()
            .has(crate::db::Capability::LinearizableReads),
        commit_meta: reports.commit_meta && !transactional && own_protocol,
        catalog: reports.catalog,
        splits: reports.splits,
        split_cooldown_s: db.split_cooldown_s(options.server_args),
        lifecycle_watched: options.cluster.runs_nodes(),
        cluster: options.cluster.name().to_string(),
        judged_by: spec
            .map(|s| s.checkers.iter().map(|c| c.to_string()).collect())
            .unwrap_or_default(),
        workload: options.workload.to_string(),
        nemesis: options.nemesis.clone(),
        functions: Default::default(),
        has_entries: false,
        options: options.checks.clone(),
    }
}

/// The checker options a `test.json` records: `consistency_model` (Elle's name; absent: the
/// default, strict-serializable). [`consistency_of`] refuses an unknown one first.
fn recorded_checks(test: &serde_json::Value) -> CheckOptions {
    CheckOptions {
        consistency: consistency_of(test).unwrap_or_default(),
        ..CheckOptions::default()
    }
}

/// The consistency model a `test.json`'s `"test"` object records (absent or `null`: the
/// default); an error names an unknown one, so a run is never re-judged under a model it
/// did not ask for.
pub fn consistency_of(
    test: &serde_json::Value,
) -> Result<analysis::checkers::isolation::ConsistencyModel, String> {
    match test.get("consistency_model") {
        None | Some(serde_json::Value::Null) => Ok(Default::default()),
        Some(v) => v
            .as_str()
            .and_then(|m| m.parse().ok())
            .ok_or_else(|| format!("unknown consistency_model {v}")),
    }
}

/// The db a `test.json`'s `"test"` object names (default refkv), with its `groups`
/// (default 3); an error names an unknown db.
pub fn db_of(test: &serde_json::Value) -> Result<Arc<dyn Db>, String> {
    let name = test["db"].as_str().unwrap_or("refkv");
    let kind = DbKind::from_name(name).ok_or_else(|| format!("unknown db {}", test["db"]))?;
    let groups = test["groups"]
        .as_u64()
        .and_then(|g| u32::try_from(g).ok())
        .unwrap_or(3);
    Ok(kind.build(groups))
}

/// Runs the applicable checkers. `problems` are facts about the run itself (interrupted,
/// cluster never ready, history write error, ...): each makes the run at best unknown.
pub fn analyse(history: &History, facts: &RunFacts, problems: &[String]) -> Verdict {
    registry::run(history, facts, problems)
}

/// A run history at least this large is judged part by part when every checker its run
/// plans can be (`analysis::partitioned`): below it, reading it whole is faster and small.
pub const STREAM_ABOVE_BYTES: u64 = 256 << 20;

/// Judges the run history at `path` (the verdict [`analyse`] gives it): part by part, with
/// the part files beside it, when it is at least `stream_above` bytes and the plan allows;
/// otherwise whole, as `read_whole` reads it (noting in `problems` why it could not).
pub fn analyse_file(
    path: &Path,
    facts: &RunFacts,
    problems: Vec<String>,
    stream_above: u64,
    read_whole: impl FnOnce(&mut Vec<String>) -> History,
) -> Verdict {
    if let Some((verdict, _)) = analyse_streamed(path, facts, &problems, stream_above) {
        return verdict;
    }
    let mut problems = problems;
    let history = read_whole(&mut problems);
    tracing::info!("analysing {} history entries", history.ops.len());
    registry::run(&history, facts, &problems)
}

/// The verdict of the run history at `path` judged part by part (with what reading it
/// reported), when it is at least `stream_above` bytes and every planned checker can be;
/// `None` (the reason logged) when it must be read whole.
pub fn analyse_streamed(
    path: &Path,
    facts: &RunFacts,
    problems: &[String],
    stream_above: u64,
) -> Option<(Verdict, ParseReport)> {
    let size = std::fs::metadata(path).map(|m| m.len()).ok()?;
    if size < stream_above {
        return None;
    }
    let opts = partitioned::Options {
        spill_dir: path.parent().map(Path::to_path_buf),
        ..Default::default()
    };
    let started = Instant::now();
    match partitioned::check_file(path, facts, &opts) {
        Ok(Streamed::Judged {
            checkers,
            stats,
            report,
        }) => {
            tracing::info!(
                "{} history entries judged in {} parts ({} key ranges, largest part {} entries) in {:.1} s",
                report.ops,
                stats.parts,
                stats.key_ranges,
                stats.largest_part_ops,
                started.elapsed().as_secs_f64()
            );
            Some((registry::verdict_of(checkers, problems), report))
        }
        Ok(Streamed::NeedsWhole(why)) => {
            tracing::info!("history read whole ({size} bytes): {why}");
            None
        }
        Err(e) => {
            tracing::warn!("history could not be streamed, reading it whole: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::history::{Op, OpType, Process};
    use analysis::verdict::Validity;
    use serde_json::json;

    #[test]
    fn a_recorded_consistency_model_is_read_and_an_unknown_one_refused() {
        assert_eq!(
            consistency_of(&json!({})).unwrap().to_string(),
            "strict-serializable"
        );
        assert_eq!(
            consistency_of(&json!({"consistency_model": "serializable"}))
                .unwrap()
                .to_string(),
            "serializable"
        );
        let e = consistency_of(&json!({"consistency_model": "bogus"})).unwrap_err();
        assert!(e.contains("unknown consistency_model \"bogus\""), "{e}");
    }

    /// The facts of a run whose `test.json` says `test`.
    fn from_test_json(test: &serde_json::Value, hot_prefix: Option<String>) -> RunFacts {
        recorded_facts(test, db_of(test).expect("a known db").as_ref(), hot_prefix)
    }

    fn op(
        index: u64,
        process: u64,
        kind: OpType,
        f: &str,
        key: &str,
        value: serde_json::Value,
    ) -> Op {
        Op {
            index,
            kind,
            process: Process::Client(process),
            f: f.into(),
            key: Some(key.into()),
            value,
            time: index * 10,
            node: None,
            error: None,
            meta: None,
        }
    }

    fn facts() -> RunFacts {
        RunFacts {
            basis: Basis::Run,
            workload: "register".into(),
            judged_by: vec!["linearizable".into()],
            nemesis: vec![],
            store: "test-store".into(),
            linearizable_reads: true,
            commit_meta: false,
            catalog: false,
            splits: true,
            hot_prefix: None,
            split_cooldown_s: None,
            splits_expected: false,
            lifecycle_watched: false,
            cluster: "docker".into(),
            functions: Default::default(),
            has_entries: true,
            options: CheckOptions::default(),
        }
    }

    #[test]
    fn a_stale_read_makes_the_verdict_invalid() {
        let h = History::new(vec![
            op(0, 1, OpType::Invoke, "write", "k", json!(1)),
            op(1, 1, OpType::Ok, "write", "k", json!(1)),
            op(2, 2, OpType::Invoke, "read", "k", json!(null)),
            op(3, 2, OpType::Ok, "read", "k", json!(null)),
        ]);
        let v = analyse(&h, &facts(), &[]);
        assert_eq!(v.valid, Validity::Invalid, "{v:?}");
        assert!(v.checkers.contains_key("linearizable"));
        assert!(
            !v.checkers.contains_key("set-full"),
            "set-full does not apply to register runs"
        );
    }

    #[test]
    fn a_valid_history_of_an_interrupted_run_is_unknown() {
        let h = History::new(vec![
            op(0, 1, OpType::Invoke, "write", "k", json!(1)),
            op(1, 1, OpType::Ok, "write", "k", json!(1)),
            op(2, 2, OpType::Invoke, "read", "k", json!(null)),
            op(3, 2, OpType::Ok, "read", "k", json!(1)),
        ]);
        assert_eq!(analyse(&h, &facts(), &[]).valid, Validity::Valid);
        let v = analyse(&h, &facts(), &["interrupted".to_string()]);
        assert_eq!(v.valid, Validity::Unknown);
        assert_eq!(v.checkers["run"].reason.as_deref(), Some("interrupted"));
    }

    #[test]
    fn a_run_with_no_acknowledged_op_is_unknown_through_vacuity() {
        let h = History::new(vec![
            op(0, 1, OpType::Invoke, "write", "k", json!(1)),
            Op {
                kind: OpType::Fail,
                ..op(1, 1, OpType::Ok, "write", "k", json!(1))
            },
            op(2, 2, OpType::Invoke, "read", "k", json!(null)),
            Op {
                kind: OpType::Info,
                ..op(3, 2, OpType::Ok, "read", "k", json!(null))
            },
        ]);
        let v = analyse(&h, &facts(), &[]);
        assert_eq!(
            v.checkers["linearizable"].valid,
            Validity::Valid,
            "all failed: trivially linearizable"
        );
        assert_eq!(v.checkers["vacuity"].valid, Validity::Unknown);
        assert!(v.checkers["vacuity"]
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("no client operation was acknowledged"));
        assert_eq!(v.valid, Validity::Unknown, "{v:?}");
    }

    #[test]
    fn a_data_api_client_reports_no_commit_metadata_even_on_refkv() {
        let register = |client: &str| {
            from_test_json(
                &json!({"db": "refkv", "workload": "register", "client": client}),
                None,
            )
        };
        assert!(register("grpc").commit_meta);
        for client in ["dynamodb", "s3"] {
            let f = register(client);
            assert!(!f.commit_meta, "{client}: {f:?}");
            assert!(f.catalog, "the catalog still comes over gRPC: {f:?}");
        }
    }

    #[test]
    fn facts_from_test_json_decide_which_checkers_judge() {
        let hotspot = json!({"db": "refkv", "workload": "hotspot", "nemesis": ["partition"], "auto_split": true,
            "bug": "stale-read", "server_args": ["--groups", "3", "--split-cooldown=12s"]});
        let f = from_test_json(&hotspot, Some("hot/".into()));
        assert!(
            f.splits_expected && f.catalog && f.commit_meta && f.linearizable_reads,
            "{f:?}"
        );
        assert_eq!(f.hot_prefix.as_deref(), Some("hot/"));
        assert_eq!(f.split_cooldown_s, Some(12.0));

        let register =
            json!({"db": "refkv", "workload": "register", "nemesis": ["kill"], "auto_split": true});
        let f = from_test_json(&register, Some("hot/".into()));
        assert!(
            !f.splits_expected,
            "register without the split nemesis expects no split"
        );
        assert_eq!(f.hot_prefix, None);
        assert_eq!(
            f.split_cooldown_s,
            Some(crate::db::refkv::DEFAULT_SPLIT_COOLDOWN_S)
        );
        let h = History::new(vec![
            op(0, 1, OpType::Invoke, "write", "k", json!(1)),
            op(1, 1, OpType::Ok, "write", "k", json!(1)),
        ]);
        let v = analyse(&h, &f, &[]);
        assert_eq!(v.checkers["split"].valid, Validity::NotApplicable);
        assert_eq!(
            v.checkers["epoch-authority"].valid,
            Validity::Unknown,
            "no metadata is never valid: {:?}",
            v.checkers["epoch-authority"]
        );

        let append = json!({"db": "refkv", "workload": "append", "nemesis": ["split"]});
        let f = from_test_json(&append, None);
        assert!(
            f.catalog && !f.commit_meta,
            "transactions carry no commit metadata: {f:?}"
        );
        assert_eq!(
            analyse(&h, &f, &[]).checkers["epoch-authority"].valid,
            Validity::NotApplicable
        );

        let with_split = json!({"db": "refkv", "workload": "register", "nemesis": ["split"], "auto_split": false});
        assert!(from_test_json(&with_split, None).splits_expected);
        let no_auto =
            json!({"db": "refkv", "workload": "hotspot", "nemesis": [], "auto_split": false});
        assert!(!from_test_json(&no_auto, None).splits_expected);
        let etcd = json!({"db": "etcd", "workload": "register", "nemesis": []});
        let f = from_test_json(&etcd, None);
        assert!(!(f.catalog && f.commit_meta) && f.linearizable_reads);
        assert!(!from_test_json(&json!({"db": "elastickv"}), None).linearizable_reads);
        let etcd_verdict = analyse(&h, &f, &[]);
        assert_eq!(
            etcd_verdict.checkers["epoch-authority"].valid,
            Validity::NotApplicable,
            "decided before checking"
        );
        assert_eq!(
            etcd_verdict.checkers["epoch-authority"].reason.as_deref(),
            Some("etcd has no route catalog or route epochs")
        );
    }

    #[test]
    fn crashes_judges_watched_clusters_and_is_not_applicable_on_external_ones() {
        let docker = from_test_json(
            &json!({"db": "refkv", "workload": "register", "cluster": "docker"}),
            None,
        );
        assert!(docker.lifecycle_watched);
        let exit = Op {
            index: 2,
            kind: OpType::Info,
            process: Process::Watcher,
            f: "node-exit".into(),
            key: None,
            value: json!({"expected": false, "exit_code": 101}),
            time: 30,
            node: Some("n2".into()),
            error: None,
            meta: None,
        };
        let h = History::new(vec![
            op(0, 1, OpType::Invoke, "write", "k", json!(1)),
            op(1, 1, OpType::Ok, "write", "k", json!(1)),
            exit,
        ]);
        let v = analyse(&h, &docker, &[]);
        assert_eq!(
            v.checkers["crashes"].valid,
            Validity::Invalid,
            "{:?}",
            v.checkers["crashes"]
        );
        assert_eq!(v.valid, Validity::Invalid);
        let external = from_test_json(
            &json!({"db": "etcd", "workload": "register", "cluster": "external"}),
            None,
        );
        assert_eq!(
            analyse(&h, &external, &[]).checkers["crashes"].valid,
            Validity::NotApplicable
        );
    }

    #[test]
    fn each_db_rules_out_the_checkers_it_cannot_feed_before_any_runs() {
        let ruled_out = |db: &str| -> Vec<&'static str> {
            let facts = from_test_json(&json!({"db": db, "workload": "hotspot"}), None);
            let plan = registry::plan(&facts);
            plan.into_iter()
                .filter(|(_, a)| matches!(a, registry::Applies::NotApplicable(_)))
                .map(|(c, _)| c.name)
                .collect()
        };
        assert_eq!(ruled_out("etcd"), ["epoch-authority", "split"]);
        assert!(ruled_out("refkv").is_empty());
        assert_eq!(
            ruled_out("elastickv"),
            ["epoch-authority"],
            "no commit metadata; splits are still judged"
        );
    }

    #[test]
    fn a_run_where_nothing_applies_tested_nothing() {
        let etcd = from_test_json(
            &json!({"db": "etcd", "workload": "register", "cluster": "external"}),
            None,
        );
        let v = analyse(&History::default(), &etcd, &[]);
        assert_eq!(
            v.checkers["split"].reason.as_deref(),
            Some("etcd does not split ranges")
        );
        assert_ne!(
            v.valid,
            Validity::Valid,
            "not-applicable never counts as valid: {v:?}"
        );
    }
}

//! The analysis phase: runs every checker that applies to the run's workload over the
//! recorded history and merges their results into the verdict (`results.json`). The list of
//! checkers is a plain registry, so adding one is adding an entry.

use analysis::checkers::{crashes, epoch_authority, linearizable, set_full, split, stale_read, vacuity};
use analysis::history::{History, Op, Process};
use analysis::verdict::{CheckerResult, Validity, Verdict};
use std::collections::BTreeMap;

/// What the checkers may need to know about the run besides its history.
#[derive(Debug, Clone)]
pub struct RunFacts {
    pub workload: String,
    /// Nemesis kinds requested (`partition`, `kill`, ...).
    pub nemesis: Vec<String>,
    /// The store promises linearizable reads (refkv does).
    pub linearizable_reads: bool,
    /// Keys of the hot range (the workload's hot prefix), for the split checker.
    pub hot_prefix: Option<String>,
    /// The store's split cooldown in seconds (refkv: `--split-cooldown`, default 30 s).
    pub split_cooldown_s: Option<f64>,
    /// Splits are expected: a hotspot workload with auto-split on, or the split nemesis.
    pub splits_expected: bool,
    /// The store reports route epochs, commit metadata and a catalog (refkv).
    pub route_epochs: bool,
    /// faultline ran the nodes and watched their processes (every cluster kind but
    /// `external`).
    pub lifecycle_watched: bool,
}

/// refkv's default `--split-cooldown` (its `AutoSplitConfig::default().cooldown`).
pub const REFKV_DEFAULT_SPLIT_COOLDOWN_S: f64 = 30.0;

impl RunFacts {
    /// The facts of a run from its options as `test.json` records them (its `"test"`
    /// object), so `faultline analyze` of a run directory judges exactly as the run did.
    /// Missing fields take the defaults of `faultline test`.
    pub fn from_test_json(test: &serde_json::Value, hot_prefix: Option<String>) -> RunFacts {
        let workload = test["workload"].as_str().unwrap_or("hotspot").to_string();
        let nemesis: Vec<String> =
            test["nemesis"].as_array().map(|a| a.iter().filter_map(|k| k.as_str().map(str::to_string)).collect()).unwrap_or_default();
        let server_args: Vec<String> =
            test["server_args"].as_array().map(|a| a.iter().filter_map(|k| k.as_str().map(str::to_string)).collect()).unwrap_or_default();
        let auto_split = test["auto_split"].as_bool().unwrap_or(true);
        let db = test["db"].as_str().unwrap_or("refkv");
        let splits_expected = nemesis.iter().any(|k| k == "split") || (workload == "hotspot" && auto_split);
        RunFacts {
            // refkv and etcd promise linearizable reads (a seeded bug breaks the promise, it
            // does not withdraw it); elastickv's follower reads may be stale by design.
            linearizable_reads: db != "elastickv",
            hot_prefix: hot_prefix.filter(|_| workload == "hotspot"),
            split_cooldown_s: Some(flag_duration_s(&server_args, "--split-cooldown").unwrap_or(REFKV_DEFAULT_SPLIT_COOLDOWN_S)),
            splits_expected,
            route_epochs: db == "refkv",
            lifecycle_watched: test["cluster"].as_str() != Some("external"),
            workload,
            nemesis,
        }
    }
}

/// The value of a duration flag (`--flag=30s` or `--flag 30s`; `s`, `ms`, `m` or plain
/// seconds) among server arguments; the last occurrence wins.
pub fn flag_duration_s(args: &[String], flag: &str) -> Option<f64> {
    let mut found = None;
    for (i, a) in args.iter().enumerate() {
        let value = match a.strip_prefix(flag) {
            Some(rest) if rest.starts_with('=') => Some(&rest[1..]),
            Some("") => args.get(i + 1).map(String::as_str),
            _ => None,
        };
        if let Some(v) = value.and_then(parse_duration_s) {
            found = Some(v);
        }
    }
    found
}

fn parse_duration_s(v: &str) -> Option<f64> {
    let (num, scale) = if let Some(n) = v.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix('m') {
        (n, 60.0)
    } else {
        (v, 1.0)
    };
    num.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0).map(|x| x * scale)
}

/// One checker of the registry.
pub struct CheckerEntry {
    pub name: &'static str,
    /// Whether the checker has anything to judge in this kind of run.
    pub applies: fn(&RunFacts) -> bool,
    pub run: fn(&History, &RunFacts) -> CheckerResult,
}

/// Every checker the runner knows, in report order.
pub fn registry() -> Vec<CheckerEntry> {
    vec![
        CheckerEntry {
            name: "linearizable",
            applies: |f| f.workload == "hotspot" || f.workload == "register",
            run: check_linearizable,
        },
        CheckerEntry { name: "set-full", applies: |f| f.workload == "hotspot" || f.workload == "set", run: check_set_full },
        // Always: besides the requested faults it catches a run with no acknowledged op,
        // which every other checker may rightly call valid.
        CheckerEntry { name: vacuity::NAME, applies: |_| true, run: check_vacuity },
        // Stores without route epochs or splits are marked not-applicable per target
        // (`crate::db::mark_not_applicable`).
        CheckerEntry { name: epoch_authority::NAME, applies: |f| f.route_epochs, run: check_epoch_authority },
        CheckerEntry { name: split::NAME, applies: |_| true, run: check_split },
        CheckerEntry { name: crashes::NAME, applies: |_| true, run: check_crashes },
    ]
}

const REGISTER_FNS: &[&str] = &["read", "write", "cas", "get", "put"];

/// Linearizability per key of the register operations, cas-register model, keys absent at
/// the start; each anomaly's proven cause (a stale read, ...) from the whole history.
fn check_linearizable(history: &History, _facts: &RunFacts) -> CheckerResult {
    let ops: Vec<Op> = history
        .ops
        .iter()
        .filter(|op| matches!(op.process, Process::Client(_)) && REGISTER_FNS.contains(&op.f.as_str()))
        .cloned()
        .collect();
    let opts = linearizable::LinearizableOptions { model: linearizable::Model::CasRegister, ..Default::default() };
    let mut result = linearizable::check(&History::new(ops), &opts);
    stale_read::annotate(history, &mut result);
    result
}

fn check_set_full(history: &History, facts: &RunFacts) -> CheckerResult {
    let opts = set_full::SetFullOptions { linearizable: facts.linearizable_reads };
    set_full::check(history, &opts)
}

/// Each requested fault took effect at least once (otherwise the run tested nothing).
fn check_vacuity(history: &History, facts: &RunFacts) -> CheckerResult {
    let opts = vacuity::VacuityOptions { nemesis: facts.nemesis.clone(), ..Default::default() };
    vacuity::check(history, &opts)
}

fn check_epoch_authority(history: &History, _facts: &RunFacts) -> CheckerResult {
    epoch_authority::check(history, &epoch_authority::EpochAuthorityOptions::default())
}

/// Auto-splits (or forced ones) judged with the run's hot prefix and the store's cooldown;
/// `not-applicable` where the run expects no split.
fn check_split(history: &History, facts: &RunFacts) -> CheckerResult {
    if !facts.splits_expected {
        let mut r = CheckerResult::new(Validity::NotApplicable);
        r.reason = Some("no split expected: neither a hotspot workload with auto-split nor the split nemesis".into());
        return r;
    }
    let opts = split::SplitOptions { hot_prefix: facts.hot_prefix.clone(), cooldown_s: facts.split_cooldown_s, ..Default::default() };
    split::check(history, &opts)
}

/// Unexpected exits of server processes; `not-applicable` where faultline does not run the
/// nodes (an exit it cannot see is no evidence of anything).
fn check_crashes(history: &History, facts: &RunFacts) -> CheckerResult {
    if !facts.lifecycle_watched {
        let mut r = CheckerResult::new(Validity::NotApplicable);
        r.reason = Some("--cluster external: faultline does not run the nodes, so it cannot see them exit".into());
        return r;
    }
    crashes::check(history, &crashes::CrashesOptions::default())
}

/// Runs the applicable checkers. `problems` are facts about the run itself (interrupted,
/// cluster never ready, history write error, ...): each makes the run at best unknown.
pub fn analyse(history: &History, facts: &RunFacts, problems: &[String]) -> Verdict {
    let mut checkers = BTreeMap::new();
    for entry in registry() {
        if !(entry.applies)(facts) {
            continue;
        }
        let started = std::time::Instant::now();
        let mut result = (entry.run)(history, facts);
        if let serde_json::Value::Object(m) = &mut result.details {
            m.insert("check_ms".into(), serde_json::json!(started.elapsed().as_millis() as u64));
        }
        checkers.insert(entry.name.to_string(), result);
    }
    if !problems.is_empty() {
        let mut run = CheckerResult::new(Validity::Unknown);
        run.reason = Some(problems.join("; "));
        checkers.insert("run".to_string(), run);
    }
    Verdict::from_checkers(checkers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::history::OpType;
    use serde_json::json;

    fn op(index: u64, process: u64, kind: OpType, f: &str, key: &str, value: serde_json::Value) -> Op {
        Op { index, kind, process: Process::Client(process), f: f.into(), key: Some(key.into()), value, time: index * 10, node: None, error: None, meta: None }
    }

    fn facts() -> RunFacts {
        RunFacts {
            workload: "register".into(),
            nemesis: vec![],
            linearizable_reads: true,
            hot_prefix: None,
            split_cooldown_s: None,
            splits_expected: false,
            route_epochs: false,
            lifecycle_watched: false,
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
        assert!(!v.checkers.contains_key("set-full"), "set-full does not apply to register runs");
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
            Op { kind: OpType::Fail, ..op(1, 1, OpType::Ok, "write", "k", json!(1)) },
            op(2, 2, OpType::Invoke, "read", "k", json!(null)),
            Op { kind: OpType::Info, ..op(3, 2, OpType::Ok, "read", "k", json!(null)) },
        ]);
        let v = analyse(&h, &facts(), &[]);
        assert_eq!(v.checkers["linearizable"].valid, Validity::Valid, "all failed: trivially linearizable");
        assert_eq!(v.checkers["vacuity"].valid, Validity::Unknown);
        assert!(v.checkers["vacuity"].reason.as_deref().unwrap_or_default().contains("no client operation was acknowledged"));
        assert_eq!(v.valid, Validity::Unknown, "{v:?}");
    }

    #[test]
    fn facts_from_test_json_decide_which_checkers_judge() {
        let hotspot = json!({"db": "refkv", "workload": "hotspot", "nemesis": ["partition"], "auto_split": true,
            "bug": "stale-read", "server_args": ["--groups", "3", "--split-cooldown=12s"]});
        let f = RunFacts::from_test_json(&hotspot, Some("hot/".into()));
        assert!(f.splits_expected && f.route_epochs && f.linearizable_reads, "{f:?}");
        assert_eq!(f.hot_prefix.as_deref(), Some("hot/"));
        assert_eq!(f.split_cooldown_s, Some(12.0));

        let register = json!({"db": "refkv", "workload": "register", "nemesis": ["kill"], "auto_split": true});
        let f = RunFacts::from_test_json(&register, Some("hot/".into()));
        assert!(!f.splits_expected, "register without the split nemesis expects no split");
        assert_eq!(f.hot_prefix, None);
        assert_eq!(f.split_cooldown_s, Some(REFKV_DEFAULT_SPLIT_COOLDOWN_S));
        let h = History::new(vec![
            op(0, 1, OpType::Invoke, "write", "k", json!(1)),
            op(1, 1, OpType::Ok, "write", "k", json!(1)),
        ]);
        let v = analyse(&h, &f, &[]);
        assert_eq!(v.checkers["split"].valid, Validity::NotApplicable);
        assert_eq!(v.checkers["epoch-authority"].valid, Validity::Unknown, "no metadata is never valid: {:?}", v.checkers["epoch-authority"]);

        let with_split = json!({"db": "refkv", "workload": "register", "nemesis": ["split"], "auto_split": false});
        assert!(RunFacts::from_test_json(&with_split, None).splits_expected);
        let no_auto = json!({"db": "refkv", "workload": "hotspot", "nemesis": [], "auto_split": false});
        assert!(!RunFacts::from_test_json(&no_auto, None).splits_expected);
        let etcd = json!({"db": "etcd", "workload": "register", "nemesis": []});
        let f = RunFacts::from_test_json(&etcd, None);
        assert!(!f.route_epochs && f.linearizable_reads);
        assert!(!RunFacts::from_test_json(&json!({"db": "elastickv"}), None).linearizable_reads);
        assert!(!analyse(&h, &f, &[]).checkers.contains_key("epoch-authority"));
    }

    #[test]
    fn crashes_judges_watched_clusters_and_is_not_applicable_on_external_ones() {
        let docker = RunFacts::from_test_json(&json!({"db": "refkv", "workload": "register", "cluster": "docker"}), None);
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
        let h = History::new(vec![op(0, 1, OpType::Invoke, "write", "k", json!(1)), op(1, 1, OpType::Ok, "write", "k", json!(1)), exit]);
        let v = analyse(&h, &docker, &[]);
        assert_eq!(v.checkers["crashes"].valid, Validity::Invalid, "{:?}", v.checkers["crashes"]);
        assert_eq!(v.valid, Validity::Invalid);
        let external = RunFacts::from_test_json(&json!({"db": "etcd", "workload": "register", "cluster": "external"}), None);
        assert_eq!(analyse(&h, &external, &[]).checkers["crashes"].valid, Validity::NotApplicable);
    }

    #[test]
    fn duration_flags_in_every_spelling() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(flag_duration_s(&args(&["--split-cooldown", "30s"]), "--split-cooldown"), Some(30.0));
        assert_eq!(flag_duration_s(&args(&["--split-cooldown=500ms"]), "--split-cooldown"), Some(0.5));
        assert_eq!(flag_duration_s(&args(&["--split-cooldown=2m", "--split-cooldown=7"]), "--split-cooldown"), Some(7.0));
        assert_eq!(flag_duration_s(&args(&["--split-cooldown-x=5s", "--split-cooldown"]), "--split-cooldown"), None);
        assert_eq!(flag_duration_s(&args(&["--split-cooldown=soon"]), "--split-cooldown"), None);
    }
}

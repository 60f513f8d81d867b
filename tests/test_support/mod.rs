//! Helpers shared by the end-to-end tests of `faultline test`: running the real binary
//! against real Docker and real refkv, one cluster at a time, and reading what a run left
//! in its store directory.
#![allow(dead_code)]

use analysis::history::{History, Op, OpType, Process};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

/// End-to-end runs share two cores: one cluster at a time.
pub static ONE_CLUSTER_AT_A_TIME: Mutex<()> = Mutex::new(());

pub fn lock() -> std::sync::MutexGuard<'static, ()> {
    ONE_CLUSTER_AT_A_TIME
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// A test that cannot run here because a prerequisite (root, sshd, a Docker engine) is
/// missing: under `CI=true` that is a failure — `.ci/run` installs every prerequisite, so a
/// skip there would hide a test that never ran — elsewhere it prints `skipped:` and returns.
pub fn missing_prerequisite(why: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("a prerequisite is missing under CI=true (.ci/run installs them all): {why}");
    }
    eprintln!("skipped: {why}");
}

pub fn faultline() -> Command {
    Command::new(env!("CARGO_BIN_EXE_faultline"))
}

/// A fresh store directory under target/, kept after the test for post-mortems until the
/// same test runs again: the stores earlier test processes left under this name are removed
/// first (an etcd run keeps about 370 MB of data directories, so repeated runs would
/// otherwise fill the disk). A store of a process still alive is left alone.
pub fn store_dir(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join("e2e-store");
    remove_stores_of_ended_processes(&root, name);
    let dir = root.join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creating the test store");
    dir
}

/// Removes `root/<name>-<pid>` for every `pid` that is no longer a running process.
fn remove_stores_of_ended_processes(root: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|f| f.strip_prefix(name)?.strip_prefix('-')?.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The run directory `store/latest` points at.
pub fn latest_run(store: &Path) -> PathBuf {
    std::fs::canonicalize(store.join("latest")).expect("store/latest exists")
}

pub fn read_history(run: &Path) -> History {
    let path = run.join("history.jsonl");
    let file = std::fs::File::open(&path).expect("history.jsonl exists");
    let (history, _report) = analysis::formats::jsonl::read_history(
        std::io::BufReader::new(file),
        &path.display().to_string(),
    )
    .expect("history.jsonl parses");
    history
}

#[path = "../schema_support/mod.rs"]
pub mod schema_support;

/// The run's `results.json`, checked against `docs/results.schema.json`.
pub fn results(run: &Path) -> serde_json::Value {
    schema_support::read_results(&run.join("results.json"))
}

pub fn test_json(run: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(run.join("test.json")).expect("test.json exists");
    serde_json::from_str(&text).expect("test.json is JSON")
}

/// Nemesis events with this `f`.
pub fn nemesis_events<'h>(h: &'h History, f: &str) -> Vec<&'h Op> {
    h.ops
        .iter()
        .filter(|o| o.process == Process::Nemesis && o.f == f)
        .collect()
}

pub fn client_oks(h: &History) -> usize {
    h.ops
        .iter()
        .filter(|o| {
            matches!(o.process, Process::Client(_)) && o.kind == analysis::history::OpType::Ok
        })
        .count()
}

/// Containers and networks (any state) carrying `label`.
pub fn docker_ids(kind: &str, label: &str) -> Vec<String> {
    let args: Vec<&str> = match kind {
        "container" => vec!["ps", "-aq", "--filter"],
        _ => vec!["network", "ls", "-q", "--filter"],
    };
    let filter = format!("label={label}");
    let out = Command::new("docker")
        .args(&args)
        .arg(&filter)
        .output()
        .expect("docker runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .filter(|l| !l.is_empty())
        .collect()
}

/// The host's firewall rules, minus the lines Docker itself manages for its bridges.
pub fn host_firewall() -> String {
    let out = Command::new("iptables-save")
        .output()
        .expect("iptables-save runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| {
            !l.starts_with('#')
                && !l.starts_with(':')
                && !l.contains("br-")
                && !l.contains("DOCKER")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn show(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr (tail)\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        tail(&String::from_utf8_lossy(&out.stderr), 60)
    )
}

pub fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Runs a short test with `extra` options and returns its run directory and output.
/// Panics with the run's output when it wrote no `results.json` (a harness error, exit 255),
/// so the failure says why instead of only that the file is missing.
pub fn run_test(name: &str, extra: &[&str]) -> (PathBuf, Output) {
    let (run, out) = run_test_expecting_anything(name, extra);
    assert_wrote_results(name, &run, &out);
    (run, out)
}

/// Runs a short test that may end in a harness error; its run directory and output.
pub fn run_test_expecting_anything(name: &str, extra: &[&str]) -> (PathBuf, Output) {
    let store = store_dir(name);
    let out = faultline()
        .args(["test", "--store"])
        .arg(&store)
        .args(["--no-progress", "--seed", "42"])
        .args(extra)
        .output()
        .expect("faultline runs");
    let Ok(run) = std::fs::canonicalize(store.join("latest")) else {
        panic!("{name}: the run made no run directory\n{}", show(&out));
    };
    (run, out)
}

/// Panics with the run's output unless it wrote `results.json`.
pub fn assert_wrote_results(name: &str, run: &Path, out: &Output) {
    assert!(
        run.join("results.json").exists(),
        "{name}: the run wrote no results.json\n{}",
        show(out)
    );
}

/// No checker found a violation and none was left unable to judge, except `vacuity`: the run
/// is not invalid, and every checker but `vacuity` is valid or not applicable. Vacuity (did
/// every requested fault take effect) depends on where and when a node fault lands — on a
/// leader, before the run ends — which is chance; the matrix's clean row measures it. So a
/// clean run under node faults asserts this, not exit 0.
pub fn assert_no_false_alarm(verdict: &serde_json::Value) {
    assert_ne!(
        verdict["valid"],
        serde_json::json!(false),
        "a clean run was judged invalid: {verdict:#}"
    );
    let checkers = verdict["checkers"]
        .as_object()
        .expect("checkers in results.json");
    for (name, result) in checkers
        .iter()
        .filter(|(name, _)| name.as_str() != "vacuity")
    {
        let judged =
            result["valid"] == serde_json::json!(true) || result["valid"] == "not-applicable";
        assert!(
            judged,
            "{name} is neither valid nor not-applicable on a clean run: {result:#}"
        );
    }
}

/// Acknowledged `stale-write`s tagged `tag` (keys `<split key>~<tag>-<job>-<i>`) invoked after
/// a catalog observation showed their job in one of `phases`: the history itself shows each
/// was sent under an epoch the catalog no longer let that group hold, so a checker must find
/// it. A stale write invoked before the catalog watcher saw the job get there (its stream
/// can lag, e.g. while the catalog leader is paused) cannot be judged and is not counted.
pub fn acked_stale_writes_seen_after(h: &History, tag: &str, phases: &[&str]) -> usize {
    let prefix = format!("{tag}-");
    let job_of = |op: &Op| -> Option<u64> {
        let written = op
            .key
            .as_deref()?
            .rsplit('~')
            .next()?
            .strip_prefix(&prefix)?;
        written.split('-').next()?.parse().ok()
    };
    let mut jobs_seen_there = std::collections::HashSet::new();
    let mut judged_process = std::collections::HashSet::new();
    let mut count = 0;
    for op in &h.ops {
        if op.process == Process::Watcher && op.f == "catalog" {
            let jobs = op.value["jobs"].as_array().into_iter().flatten();
            let there = jobs.filter(|j| phases.contains(&j["phase"].as_str().unwrap_or("")));
            jobs_seen_there.extend(there.filter_map(|j| j["id"].as_u64()));
            continue;
        }
        let Process::Client(process) = op.process else {
            continue;
        };
        if op.f != "stale-write" {
            continue;
        }
        match op.kind {
            OpType::Invoke if job_of(op).is_some_and(|j| jobs_seen_there.contains(&j)) => {
                judged_process.insert(process);
            }
            OpType::Invoke => {
                judged_process.remove(&process);
            }
            OpType::Ok if judged_process.remove(&process) => count += 1,
            _ => {}
        }
    }
    count
}

/// The `faultline test` flags of the detection matrix's row for `bug` (workload, nemesis, bug,
/// length, pace, slow copies: `src/matrix/configs.rs`), so that an end-to-end test that needs
/// the bug caught runs the scenario the matrix measured, not a copy that can drift from it.
pub fn matrix_scenario(bug: &str) -> Vec<&'static str> {
    faultline::matrix::configs::config_for(Some(bug))
        .unwrap_or_else(|| panic!("no matrix row for {bug}"))
        .scenario_args()
}

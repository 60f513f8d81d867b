//! Re-checking a `faultline test` run directory: its `history.jsonl` is judged by the same
//! checker registry the run used (`crate::runner::analysis_phase`), with the run's facts
//! read from the `test.json` beside it, so `faultline analyze store/latest` reproduces the
//! run's verdict. Problems the run itself recorded (an interrupted run, a history write
//! error) are carried over from the run's `results.json`.

use crate::runner::analysis_phase::{
    analyse, analyse_streamed, consistency_of, db_of, recorded_facts, RunFacts,
};
use analysis::formats::ParseReport;
use analysis::history::History;
use analysis::verdict::Verdict;
use std::path::Path;

/// The verdict of `history` read from `path`, if `path` is a run directory's history
/// (`history.jsonl` with a `test.json` beside it); an error if `test.json` is unreadable.
pub fn run_verdict(path: &Path, history: &History) -> Option<Result<Verdict, String>> {
    let judged = run_of(path)?.map(|(facts, problems)| {
        let mut verdict = analyse(history, &facts, &problems);
        attach_store_versions(path, &mut verdict);
        verdict
    });
    Some(judged)
}

/// The verdict of the run history at `path` judged part by part, never held whole, with
/// what reading it reported — when `path` is a run directory's history of at least
/// `stream_above` bytes whose plan allows it (`None` otherwise: read it whole).
pub fn streamed_verdict(
    path: &Path,
    stream_above: u64,
) -> Option<Result<(Verdict, ParseReport), String>> {
    let (facts, problems) = match run_of(path)? {
        Ok(run) => run,
        Err(e) => return Some(Err(e)),
    };
    let (mut verdict, report) = analyse_streamed(path, &facts, &problems, stream_above)?;
    attach_store_versions(path, &mut verdict);
    Some(Ok((verdict, report)))
}

/// The facts and recorded problems of the run whose history is `path`, if it is one.
fn run_of(path: &Path) -> Option<Result<(RunFacts, Vec<String>), String>> {
    if path.file_name()? != "history.jsonl" {
        return None;
    }
    let test_json_path = path.with_file_name("test.json");
    let text = std::fs::read_to_string(&test_json_path).ok()?;
    Some(facts_from(&test_json_path, &text))
}

fn facts_from(test_json_path: &Path, text: &str) -> Result<(RunFacts, Vec<String>), String> {
    let doc: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| format!("{}: not valid JSON: {e}", test_json_path.display()))?;
    let test = doc
        .get("test")
        .ok_or_else(|| format!("{}: has no \"test\" object", test_json_path.display()))?;
    let db = db_of(test).map_err(|e| format!("{}: {e}", test_json_path.display()))?;
    consistency_of(test).map_err(|e| format!("{}: {e}", test_json_path.display()))?;
    let facts = recorded_facts(
        test,
        db.as_ref(),
        Some(workloads::WorkloadConfig::default().hot_prefix),
    );
    let problems = recorded_problems(&test_json_path.with_file_name("results.json"));
    Ok((facts, problems))
}

fn attach_store_versions(history_path: &Path, verdict: &mut Verdict) {
    if let Some(dir) = history_path.parent() {
        crate::runner::store_versions::attach(verdict, dir);
    }
}

/// The run-level problems (checker `run`) of the run's own verdict, if it wrote one.
fn recorded_problems(results_json: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(results_json) else {
        return Vec::new();
    };
    let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Vec::new();
    };
    doc["checkers"]["run"]["reason"]
        .as_str()
        .map(|r| vec![r.to_string()])
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::history::{Op, OpType, Process};
    use analysis::verdict::Validity;
    use serde_json::json;

    fn register_history(read_value: serde_json::Value) -> History {
        let op = |index: u64, p: u64, kind: OpType, f: &str, value: serde_json::Value| Op {
            index,
            kind,
            process: Process::Client(p),
            f: f.into(),
            key: Some("k".into()),
            value,
            time: index,
            node: None,
            error: None,
            meta: None,
        };
        History::new(vec![
            op(0, 1, OpType::Invoke, "write", json!(1)),
            op(1, 1, OpType::Ok, "write", json!(1)),
            op(2, 2, OpType::Invoke, "read", json!(null)),
            op(3, 2, OpType::Ok, "read", read_value),
        ])
    }

    #[test]
    fn a_run_directory_is_judged_by_the_run_registry_with_its_facts() {
        let dir = tempfile::tempdir().unwrap();
        let history_path = dir.path().join("history.jsonl");
        std::fs::write(
            dir.path().join("test.json"),
            json!({"test": {"workload": "register", "nemesis": [], "db": "etcd"}}).to_string(),
        )
        .unwrap();
        let v = run_verdict(&history_path, &register_history(json!(1)))
            .expect("a run dir")
            .unwrap();
        assert_eq!(v.checkers["linearizable"].valid, Validity::Valid);
        assert!(
            !v.checkers.contains_key("set-full"),
            "register runs have no set checker"
        );
        assert_eq!(
            v.checkers["epoch-authority"].valid,
            Validity::NotApplicable,
            "{v:?}"
        );
        let v = run_verdict(&history_path, &register_history(json!(null)))
            .unwrap()
            .unwrap();
        assert_eq!(v.valid, Validity::Invalid);
    }

    #[test]
    fn problems_the_run_recorded_keep_the_verdict_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let history_path = dir.path().join("history.jsonl");
        std::fs::write(
            dir.path().join("test.json"),
            json!({"test": {"workload": "register", "db": "refkv"}}).to_string(),
        )
        .unwrap();
        std::fs::write(dir.path().join("results.json"), json!({"valid": "unknown", "checkers": {"run": {"valid": "unknown", "reason": "interrupted"}}}).to_string()).unwrap();
        let v = run_verdict(&history_path, &register_history(json!(1)))
            .unwrap()
            .unwrap();
        assert_eq!(v.valid, Validity::Unknown);
        assert_eq!(v.checkers["run"].reason.as_deref(), Some("interrupted"));
    }

    #[test]
    fn other_files_and_bad_test_json() {
        let dir = tempfile::tempdir().unwrap();
        assert!(run_verdict(&dir.path().join("h.jsonl"), &History::default()).is_none());
        assert!(
            run_verdict(&dir.path().join("history.jsonl"), &History::default()).is_none(),
            "no test.json"
        );
        std::fs::write(dir.path().join("test.json"), "{").unwrap();
        let e = run_verdict(&dir.path().join("history.jsonl"), &History::default())
            .unwrap()
            .unwrap_err();
        assert!(e.contains("test.json: not valid JSON"), "{e}");
    }
}

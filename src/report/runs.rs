//! The runs in a store (`store/<test>/<timestamp>/`), newest first, with their verdicts,
//! and the run-list page `faultline serve` shows at `/`.

use analysis::verdict::Validity;
use anyhow::{Context, Result};
use minijinja::Environment;
use serde::{Deserialize, Serialize};
use std::path::Path;

const TEMPLATE: &str = include_str!("templates/runs.html");

/// One run directory of the store.
#[derive(Debug, Clone, Serialize)]
pub struct RunEntry {
    pub test: String,
    pub timestamp: String,
    /// `valid`, `invalid`, `unknown`, `not-applicable`, `no verdict` or `unreadable verdict`.
    pub verdict: String,
    pub has_report: bool,
}

impl RunEntry {
    /// The URL path of the run directory, relative to the store root.
    pub fn url(&self) -> String {
        format!("/{}/{}/", self.test, self.timestamp)
    }
}

#[derive(Deserialize)]
struct VerdictOnly {
    valid: Validity,
}

/// True if `dir` looks like a run directory.
pub fn is_run_dir(dir: &Path) -> bool {
    ["history.jsonl", "results.json", "test.json"]
        .iter()
        .any(|f| dir.join(f).is_file())
}

/// Lists the runs of `store`, newest first (by timestamp directory name, which the runner
/// writes in a sortable UTC form). Symlinks such as `store/latest` are skipped.
pub fn list_runs(store: &Path) -> Result<Vec<RunEntry>> {
    let mut runs = Vec::new();
    for test in read_dirs(store)? {
        let Some(test_name) = test
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string)
        else {
            continue;
        };
        for run in read_dirs(&test)? {
            if !is_run_dir(&run) {
                continue;
            }
            let Some(timestamp) = run.file_name().and_then(|n| n.to_str()).map(str::to_string)
            else {
                continue;
            };
            runs.push(RunEntry {
                test: test_name.clone(),
                timestamp,
                verdict: verdict_of(&run),
                has_report: run.join(super::REPORT_FILE).is_file(),
            });
        }
    }
    runs.sort_by(|a, b| {
        b.timestamp
            .cmp(&a.timestamp)
            .then_with(|| a.test.cmp(&b.test))
    });
    Ok(runs)
}

/// Real (non-symlink) subdirectories of `dir`, skipping names that are not URL-safe.
fn read_dirs(dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name();
        let safe = name.to_str().is_some_and(|n| {
            !n.starts_with('.')
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.:+".contains(c))
        });
        if kind.is_dir() && !kind.is_symlink() && safe {
            out.push(entry.path());
        }
    }
    Ok(out)
}

fn verdict_of(run: &Path) -> String {
    let path = run.join("results.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return "no verdict".into();
    };
    match serde_json::from_str::<VerdictOnly>(&text) {
        Ok(v) => v.valid.as_str().to_string(),
        Err(_) => "unreadable verdict".into(),
    }
}

/// The HTML run list.
pub fn render_list(store: &Path, runs: &[RunEntry]) -> Result<String> {
    let mut env = Environment::new();
    env.add_template("runs.html", TEMPLATE)
        .context("run list template")?;
    let rows: Vec<_> = runs
        .iter()
        .map(|r| minijinja::context! { run => r, url => r.url(), css => r.verdict.replace(' ', "-") })
        .collect();
    env.get_template("runs.html")
        .context("run list template")?
        .render(minijinja::context! { store => store.display().to_string(), runs => rows })
        .context("rendering the run list")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_runs_newest_first_with_verdicts() {
        let store = tempfile::tempdir().unwrap();
        let mk = |test: &str, ts: &str, results: Option<&str>| {
            let dir = store.path().join(test).join(ts);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("history.jsonl"), "").unwrap();
            if let Some(r) = results {
                std::fs::write(dir.join("results.json"), r).unwrap();
            }
        };
        mk(
            "hotspot",
            "20261129T100000Z",
            Some(r#"{"valid": true, "checkers": {}}"#),
        );
        mk(
            "hotspot",
            "20261129T120000Z",
            Some(r#"{"valid": false, "checkers": {}}"#),
        );
        mk("register", "20261129T110000Z", None);
        mk("register", "20261129T090000Z", Some("garbage"));
        std::fs::create_dir_all(store.path().join("register/not-a-run")).unwrap();
        let runs = list_runs(store.path()).unwrap();
        let got: Vec<(String, String)> = runs
            .iter()
            .map(|r| (r.timestamp.clone(), r.verdict.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("20261129T120000Z".into(), "invalid".into()),
                ("20261129T110000Z".into(), "no verdict".into()),
                ("20261129T100000Z".into(), "valid".into()),
                ("20261129T090000Z".into(), "unreadable verdict".into()),
            ]
        );
        let html = render_list(store.path(), &runs).unwrap();
        assert!(
            html.contains(r#"href="/hotspot/20261129T120000Z/report.html""#),
            "{html}"
        );
    }
}

//! `faultline report` on the fixture run and on broken or partial run directories.

use std::path::Path;
use std::process::{Command, Output};

const FIXTURE: &str = "tests/fixtures/report-run/hotspot/20261129T120000Z";

fn report(run_dir: &Path, out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["report"])
        .arg(run_dir)
        .arg("--out")
        .arg(out)
        .output()
        .expect("faultline runs")
}

/// A copy of the fixture run directory that a test may modify.
fn fixture_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for file in ["history.jsonl", "results.json", "test.json"] {
        std::fs::copy(Path::new(FIXTURE).join(file), dir.path().join(file)).unwrap();
    }
    dir
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn report_is_self_contained() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("r.html");
    let out = report(Path::new(FIXTURE), &page);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    // The only URLs are SVG namespace names, which browsers never fetch.
    let fetched = html
        .match_indices("http")
        .filter(|(i, _)| !html[*i..].starts_with("http://www.w3.org/"))
        .count();
    assert_eq!(fetched, 0, "external URLs in the page");
    for needle in ["src=\"//", "href=\"//", "url(", "@import"] {
        assert!(!html.contains(needle), "page references {needle}");
    }
    assert!(
        html.len() < 1_000_000,
        "{} bytes for a 691-entry history",
        html.len()
    );
}

#[test]
fn default_output_is_report_html_in_the_run_dir() {
    let dir = fixture_copy();
    let out = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .arg("report")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(dir.path().join("report.html").is_file());
}

#[test]
fn a_run_without_verdict_or_catalog_still_gets_a_report() {
    let dir = fixture_copy();
    std::fs::remove_file(dir.path().join("results.json")).unwrap();
    let history = std::fs::read_to_string(dir.path().join("history.jsonl")).unwrap();
    let without_catalog: String = history
        .lines()
        .filter(|l| !l.contains("\"catalog\""))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(dir.path().join("history.jsonl"), without_catalog).unwrap();
    let page = dir.path().join("r.html");
    let out = report(dir.path(), &page);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("No <code>results.json</code>"));
    assert!(html.contains("No catalog events in the history"));
    assert!(
        html.contains("the first operations of the run"),
        "default timeline window"
    );
}

#[test]
fn a_corrupt_history_line_is_reported_with_file_and_line() {
    let dir = fixture_copy();
    let path = dir.path().join("history.jsonl");
    let mut lines: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines[4] = "{\"index\": 4, \"type\": \"bogus\"".into();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let out = report(dir.path(), &dir.path().join("r.html"));
    assert_eq!(out.status.code(), Some(254));
    assert!(
        stderr(&out).contains("history.jsonl:5:"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_run_directories_get_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let out = report(&missing, &dir.path().join("r.html"));
    assert_eq!(out.status.code(), Some(254));
    assert!(
        stderr(&out).contains("is not a run directory"),
        "{}",
        stderr(&out)
    );

    let out = report(dir.path(), &dir.path().join("r.html"));
    assert_eq!(out.status.code(), Some(254));
    assert!(
        stderr(&out).contains("no history.jsonl"),
        "{}",
        stderr(&out)
    );

    let run = fixture_copy();
    std::fs::write(run.path().join("results.json"), "{\"valid\": 3}").unwrap();
    let out = report(run.path(), &run.path().join("r.html"));
    assert_eq!(out.status.code(), Some(254));
    assert!(
        stderr(&out).contains("results.json: not a faultline verdict"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_clean_run_shows_valid_checkers_and_the_first_ops() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("r.html");
    let out = report(
        Path::new("tests/fixtures/report-run/hotspot/20261129T110000Z"),
        &page,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(r#"<span id="overall" class="badge big valid">valid</span>"#));
    assert!(!html.contains("badge invalid"), "no invalid checker");
    assert_eq!(
        html.matches("No anomalies reported.").count(),
        4,
        "one per checker"
    );
    assert!(html.contains("the first operations of the run"));
}

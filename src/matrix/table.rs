//! The detection matrix's data and its Markdown rendering: one [`RunRow`] per child
//! `faultline test` run, grouped by configuration into a table of bug × checker.
//!
//! The checker columns come from analysis's checker registry
//! ([`analysis::checkers::registry::matrix_columns`]).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Checker columns, in the order the table shows them (the registry's matrix columns);
/// others found in rows follow.
pub fn checker_columns() -> Vec<&'static str> {
    analysis::checkers::registry::matrix_columns()
}

/// Share of runs the issue asks a bug to be caught in (9/10).
pub const TARGET_SHARE: f64 = 0.9;

/// One run of the matrix: what ran and what each checker said.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunRow {
    /// Configuration name: `clean` or the bug's name.
    pub config: String,
    pub bug: Option<String>,
    /// 1-based run number within the configuration.
    pub run: u32,
    pub workload: String,
    pub nemesis: String,
    /// Checkers of which any one being invalid counts as catching the bug (empty: clean).
    pub expected: Vec<String>,
    /// Per expected checker, the anomaly kinds that are this bug's symptom (a checker not
    /// listed counts with any anomaly).
    #[serde(default)]
    pub expected_kinds: BTreeMap<String, Vec<String>>,
    /// Per checker, the distinct `kind`s of its anomalies.
    #[serde(default)]
    pub anomaly_kinds: BTreeMap<String, Vec<String>>,
    pub seed: Option<u64>,
    /// The child's exit code (None: killed by a signal or never started).
    pub exit_code: Option<i32>,
    /// `valid`, `invalid`, `unknown`, or `error` when no results.json was written.
    pub verdict: String,
    /// Checker name → validity (`valid`, `invalid`, `unknown`, `not-applicable`).
    pub checkers: BTreeMap<String, String>,
    /// Checker name → reason, for every checker that gave one.
    #[serde(default)]
    pub reasons: BTreeMap<String, String>,
    pub wall_s: f64,
    pub run_dir: Option<String>,
    #[serde(default)]
    pub interrupted: bool,
    #[serde(default)]
    pub error: Option<String>,
}

impl RunRow {
    pub fn checker_is(&self, name: &str, validity: &str) -> bool {
        self.checkers.get(name).map(String::as_str) == Some(validity)
    }

    /// An expected checker said invalid, with an anomaly of the bug's kind where kinds are
    /// named.
    pub fn caught(&self) -> bool {
        self.expected
            .iter()
            .any(|c| self.checker_is(c, "invalid") && self.symptom_kind_found(c))
    }

    fn symptom_kind_found(&self, checker: &str) -> bool {
        let Some(wanted) = self.expected_kinds.get(checker) else {
            return true;
        };
        self.anomaly_kinds
            .get(checker)
            .is_some_and(|found| found.iter().any(|k| wanted.contains(k)))
    }

    /// Checkers that said invalid although they are not expected to catch this
    /// configuration (for the clean configuration: every invalid checker).
    pub fn unexpected_invalid(&self) -> Vec<&str> {
        self.checkers
            .iter()
            .filter(|(name, v)| v.as_str() == "invalid" && !self.expected.contains(name))
            .map(|(name, _)| name.as_str())
            .collect()
    }
}

/// Rows of one configuration, in first-seen order of configurations.
pub fn group(rows: &[RunRow]) -> Vec<(&str, Vec<&RunRow>)> {
    let mut out: Vec<(&str, Vec<&RunRow>)> = Vec::new();
    for row in rows {
        match out.iter_mut().find(|(c, _)| *c == row.config) {
            Some((_, v)) => v.push(row),
            None => out.push((row.config.as_str(), vec![row])),
        }
    }
    out
}

fn columns(rows: &[RunRow]) -> Vec<String> {
    let mut cols: Vec<String> = checker_columns().into_iter().map(str::to_string).collect();
    for row in rows {
        for name in row.checkers.keys() {
            if !cols.contains(name) {
                cols.push(name.clone());
            }
        }
    }
    cols
}

/// One checker's cell: `invalid/runs`, with unknowns noted; `n/a` when it never applied.
fn cell(runs: &[&RunRow], checker: &str, expected: bool) -> String {
    let n = runs.len();
    let invalid = runs
        .iter()
        .filter(|r| r.checker_is(checker, "invalid"))
        .count();
    let unknown = runs
        .iter()
        .filter(|r| r.checker_is(checker, "unknown"))
        .count();
    let judged = runs
        .iter()
        .filter(|r| {
            r.checkers
                .get(checker)
                .is_some_and(|v| v != "not-applicable")
        })
        .count();
    if judged == 0 {
        return "n/a".into();
    }
    let mut s = format!("{invalid}/{n}");
    if expected {
        s = format!("**{s}**");
    }
    if unknown > 0 {
        let _ = write!(s, " ({unknown}?)");
    }
    s
}

fn caught_cell(runs: &[&RunRow]) -> String {
    let n = runs.len();
    if runs.iter().all(|r| r.bug.is_none()) {
        let valid = runs.iter().filter(|r| r.verdict == "valid").count();
        let mark = if valid == n { "" } else { " ⚠" };
        return format!("{valid}/{n} valid{mark}");
    }
    let caught = runs.iter().filter(|r| r.caught()).count();
    let mark = if (caught as f64) < TARGET_SHARE * n as f64 {
        " ⚠"
    } else {
        ""
    };
    format!("{caught}/{n}{mark}")
}

fn others_cell(runs: &[&RunRow]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in runs {
        for c in r.unexpected_invalid() {
            *counts.entry(c).or_default() += 1;
        }
    }
    if counts.is_empty() {
        return "none".into();
    }
    counts
        .iter()
        .map(|(c, k)| format!("{c} {k}/{}", runs.len()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `a or b (kind1, kind2)`: the expected checkers, with the anomaly kinds that count.
fn expected_label(row: &RunRow) -> String {
    let names: Vec<String> = row
        .expected
        .iter()
        .map(|c| match row.expected_kinds.get(c) {
            Some(kinds) => format!("{c} ({})", kinds.join(", ")),
            None => c.clone(),
        })
        .collect();
    names.join(" or ")
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

/// The Markdown table: one row per configuration.
pub fn render(rows: &[RunRow]) -> String {
    let cols = columns(rows);
    let mut out = String::new();
    let _ = write!(
        out,
        "| configuration | workload | nemesis | expected checker | caught | any checker invalid |"
    );
    for c in &cols {
        let _ = write!(out, " {c} |");
    }
    out.push_str(" other checkers invalid | unknown verdicts | errors | mean wall s |\n|");
    for _ in 0..(cols.len() + 10) {
        out.push_str("---|");
    }
    out.push('\n');
    for (config, runs) in group(rows) {
        let first = runs[0];
        let expected = if first.expected.is_empty() {
            "— (all valid)".to_string()
        } else {
            expected_label(first)
        };
        let any = runs
            .iter()
            .filter(|r| r.checkers.values().any(|v| v == "invalid"))
            .count();
        let _ = write!(
            out,
            "| {config} | {} | {} | {expected} | {} | {any}/{} |",
            first.workload,
            first.nemesis,
            caught_cell(&runs),
            runs.len()
        );
        for c in &cols {
            let _ = write!(out, " {} |", cell(&runs, c, first.expected.contains(c)));
        }
        let unknown = runs.iter().filter(|r| r.verdict == "unknown").count();
        let errors = runs.iter().filter(|r| r.verdict == "error").count();
        let wall = mean(runs.iter().map(|r| r.wall_s));
        let _ = writeln!(
            out,
            " {} | {unknown}/{} | {errors} | {wall:.0} |",
            others_cell(&runs),
            runs.len()
        );
    }
    out
}

/// Why runs were not valid/caught: the distinct reasons of unknown checkers per
/// configuration, with counts — the first place to look when a cell is below target.
pub fn render_reasons(rows: &[RunRow]) -> String {
    let mut out = String::new();
    for (config, runs) in group(rows) {
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        for r in &runs {
            for (checker, validity) in &r.checkers {
                if validity == "unknown" || (validity == "invalid" && !r.expected.contains(checker))
                {
                    let why = r
                        .reasons
                        .get(checker)
                        .map(String::as_str)
                        .unwrap_or("no reason given");
                    *reasons
                        .entry(format!("{checker} {validity}: {}", truncate(why, 160)))
                        .or_default() += 1;
                }
            }
            for c in r
                .expected
                .iter()
                .filter(|c| r.checker_is(c, "invalid") && !r.symptom_kind_found(c))
            {
                let kinds = r
                    .anomaly_kinds
                    .get(c)
                    .map(|k| k.join(", "))
                    .unwrap_or_default();
                *reasons
                    .entry(format!(
                        "{c} invalid, but not with the bug's symptom: {kinds}"
                    ))
                    .or_default() += 1;
            }
            if let Some(e) = &r.error {
                *reasons
                    .entry(format!("run error: {}", truncate(e, 160)))
                    .or_default() += 1;
            }
        }
        if reasons.is_empty() {
            continue;
        }
        let _ = writeln!(out, "- **{config}**:");
        for (why, n) in reasons {
            let _ = writeln!(out, "  - {n}× {}", why.replace('|', "\\|"));
        }
    }
    out
}

fn truncate(s: &str, max: usize) -> String {
    let one_line = s.replace('\n', " ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let cut: String = one_line.chars().take(max).collect();
    format!("{cut}…")
}

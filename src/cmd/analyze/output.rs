//! What `faultline analyze` prints and writes: one summary line per input, or a readable
//! account with each checker's reason and witness, and `results.json`.

use super::{isolation_text, Outcome};
use analysis::formats::LoadedHistory;
use analysis::verdict::{CheckerResult, Validity, Verdict};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Anomalies shown per checker in the readable output (all are in results.json).
const SHOWN_ANOMALIES: usize = 3;
/// Longest JSON excerpt printed for one anomaly.
const MAX_EXCERPT: usize = 600;

/// `<path>\t<valid|invalid|unknown>` per checked input; errors and warnings go to stderr.
pub fn print_summary(outcomes: &[(PathBuf, Outcome)]) {
    let mut out = std::io::stdout().lock();
    for (path, outcome) in outcomes {
        match outcome {
            Outcome::Checked {
                verdict, loaded, ..
            } => {
                let _ = writeln!(out, "{}\t{}", path.display(), verdict.valid.as_str());
                for w in &loaded.report.warnings {
                    eprintln!("faultline analyze: warning: {w}");
                }
            }
            Outcome::BadInput(msg) | Outcome::Internal(msg) => {
                eprintln!("faultline analyze: {msg}")
            }
        }
    }
}

pub fn print_readable(outcomes: &[(PathBuf, Outcome)], elapsed: Duration) {
    let mut out = std::io::stdout().lock();
    let mut tally = [0usize; 4];
    for (path, outcome) in outcomes {
        match outcome {
            Outcome::Checked {
                loaded,
                entries,
                verdict,
                initial,
            } => {
                tally[validity_slot(verdict.valid)] += 1;
                let _ = writeln!(
                    out,
                    "{}: {}",
                    path.display(),
                    verdict.valid.as_str().to_uppercase()
                );
                let _ = writeln!(
                    out,
                    "  {entries} entries, format {}, initial value {initial}",
                    loaded.format
                );
                for w in &loaded.report.warnings {
                    let _ = writeln!(out, "  warning: {w}");
                }
                let locate = OpLocator { path, loaded };
                for (name, result) in &verdict.checkers {
                    print_checker(&mut out, name, result, &locate);
                }
            }
            Outcome::BadInput(msg) | Outcome::Internal(msg) => {
                tally[3] += 1;
                eprintln!("faultline analyze: {msg}");
            }
        }
    }
    let _ = writeln!(
        out,
        "{} input(s) in {:.0} ms: {} valid, {} invalid, {} unknown, {} not checked",
        outcomes.len(),
        elapsed.as_secs_f64() * 1e3,
        tally[0],
        tally[1],
        tally[2],
        tally[3]
    );
}

fn validity_slot(v: Validity) -> usize {
    match v {
        Validity::Valid => 0,
        Validity::Invalid => 1,
        Validity::Unknown | Validity::NotApplicable => 2,
    }
}

/// Finds the file line of an op named by its history index.
struct OpLocator<'a> {
    path: &'a Path,
    loaded: &'a LoadedHistory,
}

impl OpLocator<'_> {
    fn line_of_index(&self, index: u64) -> Option<usize> {
        let ops = &self.loaded.history.ops;
        let position = ops.binary_search_by_key(&index, |op| op.index).ok()?;
        self.loaded.report.line_of(position)
    }

    /// `op 84 at file:85, ...` for the ops an anomaly names.
    fn describe(&self, a: &Value) -> Option<String> {
        let named = [
            ("op", a.pointer("/op/index")),
            ("add", a.get("add")),
            ("read", a.get("read")),
            ("last read that saw it", a.get("last-present-read")),
            ("read that missed it", a.get("last-absent-read")),
        ];
        let parts: Vec<String> = named
            .iter()
            .filter_map(|(what, v)| {
                let index = v.and_then(Value::as_u64)?;
                let line = self.line_of_index(index)?;
                Some(format!("{what} {index} at {}:{line}", self.path.display()))
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

fn print_checker(out: &mut impl Write, name: &str, r: &CheckerResult, locate: &OpLocator) {
    let model = r
        .details
        .get("model")
        .and_then(Value::as_str)
        .map(|m| format!(" ({m})"))
        .unwrap_or_default();
    let _ = writeln!(out, "  {name}{model}: {}", r.valid.as_str());
    if let Some(reason) = &r.reason {
        let _ = writeln!(out, "    {reason}");
    }
    let counts: Vec<String> = r
        .counts
        .iter()
        .filter(|(_, &n)| n > 0)
        .map(|(k, n)| format!("{k}={n}"))
        .collect();
    if !counts.is_empty() {
        let _ = writeln!(out, "    counts: {}", counts.join(" "));
    }
    if name == analysis::checkers::isolation::NAME {
        isolation_text::print(
            out,
            &r.details,
            isolation_text::witnesses(&r.details, &r.anomalies),
        );
        return;
    }
    for a in r.anomalies.iter().take(SHOWN_ANOMALIES) {
        print_anomaly(out, a);
        if let Some(where_) = locate.describe(a) {
            let _ = writeln!(out, "      ({where_})");
        }
    }
    if r.anomalies.len() > SHOWN_ANOMALIES {
        let _ = writeln!(
            out,
            "    ... {} more anomalies in results.json (--out DIR)",
            r.anomalies.len() - SHOWN_ANOMALIES
        );
    }
}

/// An anomaly: its kind, its explanation if it has one, and a compact JSON excerpt.
fn print_anomaly(out: &mut impl Write, a: &Value) {
    let kind = a
        .get("kind")
        .or_else(|| a.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("anomaly");
    let _ = writeln!(out, "    - {kind}");
    if let Some(explanation) = a.get("explanation").and_then(Value::as_str) {
        for line in explanation.lines() {
            let _ = writeln!(out, "      {line}");
        }
    }
    if let Some(summary) = a["stale_read"]["summary"].as_str() {
        let _ = writeln!(out, "      stale read: {summary}");
    }
    let mut rest = a.clone();
    if let Some(map) = rest.as_object_mut() {
        map.remove("kind");
        map.remove("type");
        map.remove("explanation");
    }
    let mut text = rest.to_string();
    if text.len() > MAX_EXCERPT {
        let cut = (0..=MAX_EXCERPT)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        text.truncate(cut);
        text.push_str(" …");
    }
    let _ = writeln!(out, "      {text}");
}

/// Writes DIR/results.json: the input's [`Verdict`] for a single input; for several,
/// `{"valid": <worst>, "inputs": [{"path", "verdict" | "error"}]}`.
pub fn write_results(dir: &Path, outcomes: &[(PathBuf, Outcome)]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let doc = match outcomes {
        [(_, Outcome::Checked { verdict, .. })] => {
            serde_json::to_value(verdict).map_err(std::io::Error::other)?
        }
        _ => multi_input_results(outcomes)?,
    };
    let text = serde_json::to_string_pretty(&doc).map_err(std::io::Error::other)?;
    let tmp = dir.join("results.json.tmp");
    std::fs::write(&tmp, text + "\n")?;
    std::fs::rename(tmp, dir.join("results.json"))
}

fn multi_input_results(outcomes: &[(PathBuf, Outcome)]) -> std::io::Result<Value> {
    let mut worst = Validity::NotApplicable;
    let mut inputs = Vec::new();
    for (path, outcome) in outcomes {
        let entry = match outcome {
            Outcome::Checked { verdict, .. } => {
                worst = worst.merge(verdict.valid);
                json!({"path": path, "verdict": serde_json::to_value::<&Verdict>(verdict).map_err(std::io::Error::other)?})
            }
            Outcome::BadInput(msg) | Outcome::Internal(msg) => {
                worst = worst.merge(Validity::Unknown);
                json!({"path": path, "error": msg})
            }
        };
        inputs.push(entry);
    }
    let worst = if worst == Validity::NotApplicable {
        Validity::Unknown
    } else {
        worst
    };
    Ok(json!({"valid": worst, "inputs": inputs}))
}

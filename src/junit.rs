//! JUnit XML for CI dashboards: a run's verdict as `results.junit.xml`, one test case per
//! checker. An invalid checker is a `<failure>` (its reason and first witnesses), an
//! unknown or not-applicable one is `<skipped>` with the reason, a valid one passes.
//!
//! Self-contained (the verdict types and std only), so tests can include it by path.

use analysis::verdict::{CheckerResult, Validity, Verdict};
use std::fmt::Write as _;
use std::path::Path;

/// Witnesses copied into a failure's body (all of them are in results.json).
const WITNESSES_IN_FAILURE: usize = 5;

/// File name next to `results.json`.
pub const FILE_NAME: &str = "results.junit.xml";

/// The verdict as a JUnit XML document: one `<testsuite>` named `suite` (the test name),
/// one `<testcase>` per checker, named after it, class `faultline.<suite>`.
pub fn render(suite: &str, verdict: &Verdict) -> String {
    let count = |v: fn(Validity) -> bool| verdict.checkers.values().filter(|r| v(r.valid)).count();
    let failures = count(|v| v == Validity::Invalid);
    let skipped = count(|v| matches!(v, Validity::Unknown | Validity::NotApplicable));
    let total_s: f64 = verdict.checkers.values().map(check_seconds).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let counts = format!(
        "tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{total_s:.3}\"",
        verdict.checkers.len()
    );
    let _ = writeln!(out, "<testsuites name=\"faultline\" {counts}>");
    let _ = writeln!(out, "  <testsuite name=\"{}\" {counts}>", escape(suite));
    let _ = writeln!(out, "    <properties>");
    let _ = writeln!(
        out,
        "      <property name=\"verdict\" value=\"{}\"/>",
        verdict.valid.as_str()
    );
    let _ = writeln!(out, "    </properties>");
    for (name, result) in &verdict.checkers {
        test_case(&mut out, suite, name, result);
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// Writes `dir/results.junit.xml` (via a temporary file, like results.json).
pub fn write(dir: &Path, suite: &str, verdict: &Verdict) -> std::io::Result<()> {
    let tmp = dir.join(format!("{FILE_NAME}.tmp"));
    std::fs::write(&tmp, render(suite, verdict))?;
    std::fs::rename(&tmp, dir.join(FILE_NAME))
}

fn test_case(out: &mut String, suite: &str, name: &str, r: &CheckerResult) {
    let _ = write!(
        out,
        "    <testcase classname=\"faultline.{}\" name=\"{}\" time=\"{:.3}\"",
        escape(suite),
        escape(name),
        check_seconds(r)
    );
    let reason = r.reason.as_deref().unwrap_or("");
    match r.valid {
        Validity::Valid => out.push_str("/>\n"),
        Validity::Invalid => {
            let message = if reason.is_empty() {
                "invalid".to_string()
            } else {
                format!("invalid: {reason}")
            };
            let _ = writeln!(
                out,
                ">\n      <failure type=\"invalid\" message=\"{}\">{}</failure>",
                escape(&message),
                escape(&failure_body(r))
            );
            out.push_str("    </testcase>\n");
        }
        Validity::Unknown | Validity::NotApplicable => {
            let message = format!(
                "{}: {}",
                r.valid.as_str(),
                if reason.is_empty() {
                    "no reason given"
                } else {
                    reason
                }
            );
            let _ = writeln!(out, ">\n      <skipped message=\"{}\"/>", escape(&message));
            out.push_str("    </testcase>\n");
        }
    }
}

/// Counts and the first witnesses, one JSON value a line.
fn failure_body(r: &CheckerResult) -> String {
    let mut body = String::new();
    if !r.counts.is_empty() {
        let counts: Vec<String> = r.counts.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(body, "counts: {}", counts.join(" "));
    }
    for w in r.anomalies.iter().take(WITNESSES_IN_FAILURE) {
        let _ = writeln!(body, "{w}");
    }
    if r.anomalies.len() > WITNESSES_IN_FAILURE {
        let _ = writeln!(
            body,
            "... {} more anomalies in results.json",
            r.anomalies.len() - WITNESSES_IN_FAILURE
        );
    }
    body
}

/// The checker's own run time (`details.check_ms`, recorded by the runner), or 0.
fn check_seconds(r: &CheckerResult) -> f64 {
    r.details
        .get("check_ms")
        .and_then(|v| v.as_f64())
        .map_or(0.0, |ms| ms / 1000.0)
}

/// Escapes text for XML attributes and content. Characters XML 1.0 cannot carry at all
/// (most C0 controls) become a visible `\u{..}` notation instead of making the file
/// unparseable.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

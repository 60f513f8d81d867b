//! The crashes checker: did a server process die on its own?
//!
//! The node watcher records every exit of a server process as a `node-exit` event
//! (process `watcher`), marked `expected` when a kill fault was aimed at that node (or the
//! cluster was being torn down). An exit not marked expected is a crash of the system under
//! test — a finding, whatever the other checkers say.
//!
//! Invariants:
//! - `invalid` as soon as the history holds one unexpected exit; each is an anomaly naming
//!   the node, the time, the exit status and the crash line of its log.
//! - `valid` only with evidence that the lifecycle was watched for the whole run: a
//!   `node-watch` event, a later `node-watch-end` whose last look succeeded, and no
//!   unexpected exit. Without that evidence the result is `unknown`: missing evidence is
//!   never valid.
//! - An exit event lacking `expected` counts as unexpected (the field is how a writer says
//!   an exit was asked for).

use crate::history::{events, History, Op, Process};
use crate::verdict::{CheckerResult, Validity};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Checker name in `results.json`.
pub const NAME: &str = "crashes";

/// Its registry entry (when it judges a history, how it is called).
pub mod entry;
pub use entry::CHECKER;

/// How the line that says why a process died begins (Go's `panic: …` and `fatal error: …`,
/// leading blanks aside) or what it contains (Rust's `thread '…' panicked at …`).
const CRASH_PREFIXES: &[&str] = &["panic: ", "fatal error: "];
const CRASH_INFIX: &str = " panicked at ";

fn is_crash_line(line: &str) -> bool {
    let line = line.trim_start();
    CRASH_PREFIXES.iter().any(|p| line.starts_with(p)) || line.contains(CRASH_INFIX)
}

/// No options yet; the struct keeps the checkers' `check(&History, &Opts)` shape.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CrashesOptions {}

/// The last line of `lines` that says why a process died, if any: one that begins with
/// `panic: ` or `fatal error: ` (Go) or contains ` panicked at ` (Rust; its message, on the
/// next line after `panicked at <file>:<line>:<col>:`, is appended). Backtrace frames such
/// as `std::panic::catch_unwind` are not crash lines.
pub fn crash_line<S: AsRef<str>>(lines: &[S]) -> Option<String> {
    let at = lines.iter().rposition(|l| is_crash_line(l.as_ref()))?;
    let line = lines[at].as_ref().trim();
    match lines.get(at + 1) {
        Some(next) if line.contains(CRASH_INFIX) && line.ends_with(':') => {
            Some(format!("{line} {}", next.as_ref().trim()))
        }
        _ => Some(line.to_string()),
    }
}

/// The node a `node-exit` event names: its `node` field, else `value.node`.
pub fn exit_node(op: &Op) -> Option<&str> {
    op.node
        .as_deref()
        .or_else(|| op.value.get("node").and_then(Value::as_str))
}

/// `signal SIGSEGV`, `exit code 2` or `unknown status`.
pub fn status_text(signal: Option<&str>, exit_code: Option<i64>) -> String {
    match (signal, exit_code) {
        (Some(sig), _) => format!("signal {sig}"),
        (None, Some(code)) => format!("exit code {code}"),
        (None, None) => "unknown status".to_string(),
    }
}

/// The status of a `node-exit` event, as [`status_text`] words it.
pub fn exit_status(op: &Op) -> String {
    status_text(
        op.value.get("signal").and_then(Value::as_str),
        op.value.get("exit_code").and_then(Value::as_i64),
    )
}

fn is_watcher_event(op: &Op, f: &str) -> bool {
    op.process == Process::Watcher && op.f == f
}

/// One `node-exit` event, as the checker reads it.
struct Exit<'h> {
    op: &'h Op,
    node: &'h str,
    expected: bool,
}

impl Exit<'_> {
    fn crash_line(&self) -> Option<String> {
        match self.op.value.get("crash_line").and_then(Value::as_str) {
            Some(line) => Some(line.to_string()),
            None => crash_line(&log_tail(self.op)),
        }
    }

    fn anomaly(&self) -> Value {
        let v = &self.op.value;
        json!({
            "type": "unexpected-exit",
            "node": self.node,
            "op": self.op.index,
            "time_s": self.op.time as f64 / 1e9,
            "exit_code": v.get("exit_code").cloned().unwrap_or(Value::Null),
            "signal": v.get("signal").cloned().unwrap_or(Value::Null),
            "crash_line": self.crash_line(),
            "log_tail": log_tail(self.op),
        })
    }

    fn sentence(&self) -> String {
        let why = self
            .crash_line()
            .map(|l| format!(": {l}"))
            .unwrap_or_default();
        format!(
            "{} exited on its own at {:.2} s ({}){why}",
            self.node,
            self.op.time as f64 / 1e9,
            exit_status(self.op)
        )
    }
}

fn log_tail(op: &Op) -> Vec<String> {
    op.value
        .get("log_tail")
        .and_then(Value::as_array)
        .map(|lines| {
            lines
                .iter()
                .map(|l| {
                    l.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| l.to_string())
                })
                .collect()
        })
        .unwrap_or_default()
}

fn exits(history: &History) -> Vec<Exit<'_>> {
    history
        .ops
        .iter()
        .filter(|op| is_watcher_event(op, events::NODE_EXIT))
        .map(|op| Exit {
            op,
            node: exit_node(op).unwrap_or("?"),
            expected: op
                .value
                .get("expected")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
        .collect()
}

/// Why the history does not show the lifecycle watched for the whole run, if it does not.
fn missing_watch_evidence(history: &History) -> Option<String> {
    let Some(start) = history
        .ops
        .iter()
        .position(|op| is_watcher_event(op, events::NODE_WATCH))
    else {
        return Some("no node-watch event: nothing watched the server processes, so an exit would not be in the history".into());
    };
    let Some(end) = history.ops[start..]
        .iter()
        .rev()
        .find(|op| is_watcher_event(op, events::NODE_WATCH_END))
    else {
        let since = history.ops[start].time as f64 / 1e9;
        return Some(format!(
            "the node watch started at {since:.2} s but never recorded its end (node-watch-end): exits after its last look may be missing"
        ));
    };
    match end.value.get("final_poll_ok").and_then(Value::as_bool) {
        Some(true) => None,
        _ => Some("the node watch's last look at the server processes failed: exits since its previous look may be missing".into()),
    }
}

pub fn check(history: &History, _opts: &CrashesOptions) -> CheckerResult {
    let exits = exits(history);
    let unexpected: Vec<&Exit> = exits.iter().filter(|e| !e.expected).collect();
    let missing = missing_watch_evidence(history);
    let (valid, reason) = if !unexpected.is_empty() {
        (
            Validity::Invalid,
            Some(
                unexpected
                    .iter()
                    .map(|e| e.sentence())
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        )
    } else if let Some(why) = missing {
        (Validity::Unknown, Some(why))
    } else {
        (Validity::Valid, None)
    };
    let mut result = CheckerResult::new(valid);
    result.reason = reason;
    result.anomalies = unexpected.iter().map(|e| e.anomaly()).collect();
    result.counts.insert("exits".into(), exits.len() as u64);
    result
        .counts
        .insert("unexpected-exits".into(), unexpected.len() as u64);
    result.counts.insert(
        "expected-exits".into(),
        (exits.len() - unexpected.len()) as u64,
    );
    let watched: Vec<Value> = history
        .ops
        .iter()
        .find(|op| is_watcher_event(op, events::NODE_WATCH))
        .and_then(|op| op.value.get("nodes").and_then(Value::as_array).cloned())
        .unwrap_or_default();
    result
        .counts
        .insert("nodes-watched".into(), watched.len() as u64);
    let mut crashed: Vec<&str> = unexpected.iter().map(|e| e.node).collect();
    crashed.sort_unstable();
    crashed.dedup();
    result.details = json!({ "nodes_watched": watched, "crashed_nodes": crashed });
    result
}

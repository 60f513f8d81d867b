//! Assembles the page: the verdict, plots, heat map, transactions and timelines rendered
//! into the minijinja template `templates/report.html`.

use super::anomaly::{
    kind_of, op_refs, stale_read_refs, window_ending_at_last, window_for, DEFAULT_WINDOW,
};
use super::catalog::{changes, CatalogChange};
use super::cycle_when::{self, CycleWhen};
use super::model::{OpSpan, Outcome, RunModel, PENDING};
use super::plots::nemesis_rgb;
use super::svg::secs;
use super::timeline::{self, Rendered, Window};
use super::txn_summary::{Seen, TxnSummary, KEYS_LISTED, LENGTHS};
use super::{heatmap, plots};
use analysis::history::txn::TxnModel;
use analysis::verdict::Verdict;
use anyhow::{Context, Result};
use minijinja::Environment;
use serde::Serialize;
use std::collections::{HashMap, HashSet};

const TEMPLATE: &str = include_str!("templates/report.html");
/// Anomalies listed per checker (the rest are counted).
const ANOMALIES_LISTED: usize = 50;
/// Timeline windows drawn in total.
const MAX_WINDOWS: usize = 12;
/// Longest pretty-printed anomaly shown.
const ANOMALY_CHARS: usize = 3000;

/// An anomaly planned before the history is read: which window shows it.
pub struct PlannedAnomaly {
    pub checker: String,
    pub position: usize,
    pub refs: Vec<u64>,
    pub window: Option<usize>,
}

/// The timeline windows to draw, decided from the verdict alone so that the history can
/// be streamed once, keeping only the ops those windows show.
pub struct Plan {
    pub windows: Vec<(Window, String)>,
    pub anomalies: Vec<PlannedAnomaly>,
}

impl Plan {
    pub fn from_verdict(verdict: Option<&Verdict>) -> Plan {
        let mut windows: Vec<(Window, String)> = Vec::new();
        let mut anomalies = Vec::new();
        for (name, result) in verdict.iter().flat_map(|v| v.checkers.iter()) {
            for (position, anomaly) in result.anomalies.iter().enumerate().take(ANOMALIES_LISTED) {
                let refs = op_refs(anomaly);
                // A stale read's timeline shows the missed write and the read, not the
                // whole witness (whose prefix may start seconds earlier).
                let (range, highlight) = match stale_read_refs(anomaly) {
                    Some(focus) => (window_ending_at_last(&focus), focus),
                    None => (window_for(&refs), refs.clone()),
                };
                let window = match range {
                    Some(range) if windows.len() < MAX_WINDOWS => {
                        let id = format!("w{}", windows.len());
                        let title =
                            format!("{name} — anomaly {} ({})", position + 1, kind_of(anomaly));
                        windows.push((
                            Window {
                                id,
                                range,
                                highlight,
                            },
                            title,
                        ));
                        Some(windows.len() - 1)
                    }
                    _ => None,
                };
                anomalies.push(PlannedAnomaly {
                    checker: name.clone(),
                    position,
                    refs,
                    window,
                });
            }
        }
        if windows.is_empty() {
            let window = Window {
                id: "w0".into(),
                range: 0..=DEFAULT_WINDOW - 1,
                highlight: vec![],
            };
            windows.push((window, "the first operations of the run".into()));
        }
        Plan { windows, anomalies }
    }

    pub fn keep_ranges(&self) -> Vec<std::ops::RangeInclusive<u64>> {
        self.windows.iter().map(|(w, _)| w.range.clone()).collect()
    }
}

#[derive(Serialize)]
struct CheckerView {
    name: String,
    valid: &'static str,
    reason: String,
    counts: Vec<(String, u64)>,
    anomalies: Vec<AnomalyView>,
    more_anomalies: usize,
}

#[derive(Serialize)]
struct AnomalyView {
    kind: String,
    /// The proven cause in one sentence (a stale read's `summary`), shown above the JSON.
    headline: Option<String>,
    /// What the store itself held for the key after the run (`store_versions`), one line
    /// per version.
    versions: Vec<String>,
    json: String,
    refs: Vec<RefView>,
    window: Option<String>,
    /// An isolation anomaly's cycle drawn on process lanes (SVG), if it has one.
    cycle_svg: Option<String>,
    /// That cycle placed in time among the run's faults and catalog changes.
    cycle_when: Option<CycleWhen>,
}

/// What placing a cycle in time needs: the run and the spans of every cycle's transactions.
struct WhenContext<'a> {
    model: &'a RunModel,
    spans: HashMap<u64, OpSpan>,
    changes: &'a [CatalogChange],
}

#[derive(Serialize)]
struct RefView {
    index: u64,
    href: Option<String>,
}

#[derive(Serialize)]
struct TimelineView {
    title: String,
    #[serde(flatten)]
    rendered: Rendered,
}

#[derive(Serialize)]
struct FaultView {
    kind: String,
    start_s: String,
    end_s: String,
    healed: bool,
    targets: String,
    effective: String,
    color: String,
}

/// What the page shows besides the history: the run's name, verdict and options.
pub struct Inputs<'a> {
    pub run_name: String,
    pub verdict: Option<&'a Verdict>,
    pub options: Option<&'a serde_json::Value>,
}

/// Renders the whole page.
pub fn render(inputs: &Inputs, model: &RunModel, plan: &Plan) -> Result<String> {
    let catalog_changes = changes(&model.catalog);
    let rendered: Vec<TimelineView> = plan
        .windows
        .iter()
        .map(|(w, title)| TimelineView {
            title: title.clone(),
            rendered: timeline::render(model, w, &catalog_changes),
        })
        .collect();
    let anchors: HashSet<String> = rendered
        .iter()
        .flat_map(|t| t.rendered.rows.iter())
        .flat_map(|r| [r.anchor.clone(), r.alt_anchor.clone()])
        .filter(|a| !a.is_empty())
        .collect();
    let when = WhenContext {
        model,
        spans: cycle_when::spans_named(model, &cycle_indices(inputs.verdict, plan)),
        changes: &catalog_changes,
    };
    let checkers = checker_views(inputs.verdict, plan, &anchors, &when);
    let latency = plots::latency_svg(model, &catalog_changes).context("latency plot")?;
    let throughput = plots::throughput_svg(model, &catalog_changes).context("throughput plot")?;
    let heat = heatmap::heatmap_svg(model, &catalog_changes);
    let overall = match inputs.verdict {
        Some(v) => v.valid.as_str(),
        None => "no verdict",
    };
    let mut env = Environment::new();
    env.add_template("report.html", TEMPLATE)
        .context("report template")?;
    let template = env.get_template("report.html").context("report template")?;
    template
        .render(minijinja::context! {
            run_name => inputs.run_name,
            overall => overall,
            checkers => checkers,
            stats => stats(model, &catalog_changes),
            txns => model.txns.as_ref().map(|t| txn_view(t, inputs.verdict)),
            latency_svg => latency,
            throughput_svg => throughput,
            heatmap_svg => heat,
            faults => fault_views(model),
            nemesis_legend => nemesis_legend(model),
            catalog_changes => catalog_changes.iter().map(|c| (secs(c.time), c.index, c.label.clone())).collect::<Vec<_>>(),
            timelines => rendered,
            outcome_legend => timeline::legend(),
            options => option_rows(inputs.options),
            tested_through => tested_through(inputs.options),
            warnings => model.warnings,
        })
        .context("rendering the report template")
}

/// The history indices of the transactions of every listed anomaly's cycle.
fn cycle_indices(verdict: Option<&Verdict>, plan: &Plan) -> HashSet<u64> {
    let Some(verdict) = verdict else {
        return HashSet::new();
    };
    plan.anomalies
        .iter()
        .filter_map(|a| verdict.checkers.get(&a.checker)?.anomalies.get(a.position))
        .flat_map(cycle_when::cycle_txns)
        .collect()
}

fn checker_views(
    verdict: Option<&Verdict>,
    plan: &Plan,
    anchors: &HashSet<String>,
    when: &WhenContext,
) -> Vec<CheckerView> {
    let Some(verdict) = verdict else {
        return vec![];
    };
    let mut views: Vec<CheckerView> = verdict
        .checkers
        .iter()
        .map(|(name, result)| {
            let anomalies = plan
                .anomalies
                .iter()
                .filter(|a| &a.checker == name)
                .map(|a| anomaly_view(&result.anomalies[a.position], a, plan, anchors, when))
                .collect();
            CheckerView {
                name: name.clone(),
                valid: result.valid.as_str(),
                reason: result.reason.clone().unwrap_or_default(),
                counts: result.counts.iter().map(|(k, v)| (k.clone(), *v)).collect(),
                anomalies,
                more_anomalies: result.anomalies.len().saturating_sub(ANOMALIES_LISTED),
            }
        })
        .collect();
    // Invalid first, then unknown, then the rest, so the problem is at the top.
    let rank = |v: &str| match v {
        "invalid" => 0,
        "unknown" => 1,
        "valid" => 2,
        _ => 3,
    };
    views.sort_by_key(|v| rank(v.valid));
    views
}

fn anomaly_view(
    anomaly: &serde_json::Value,
    planned: &PlannedAnomaly,
    plan: &Plan,
    anchors: &HashSet<String>,
    when: &WhenContext,
) -> AnomalyView {
    let window_id = planned.window.map(|w| plan.windows[w].0.id.clone());
    let refs = planned
        .refs
        .iter()
        .map(|&index| {
            let href = window_id
                .as_ref()
                .map(|w| format!("{w}-op{index}"))
                .filter(|a| anchors.contains(a));
            RefView { index, href }
        })
        .collect();
    let mut json = serde_json::to_string_pretty(anomaly).unwrap_or_else(|_| anomaly.to_string());
    if json.len() > ANOMALY_CHARS {
        let cut = (0..=ANOMALY_CHARS)
            .rev()
            .find(|&i| json.is_char_boundary(i))
            .unwrap_or(0);
        json.truncate(cut);
        json.push_str("\n…");
    }
    let cycle_svg = super::txn_cycle::cycle_svg(anomaly);
    let cycle_when = cycle_svg
        .as_ref()
        .and_then(|_| cycle_when::place(when.model, &when.spans, when.changes, anomaly));
    AnomalyView {
        kind: kind_of(anomaly),
        headline: headline(anomaly),
        versions: versions(anomaly),
        json,
        refs,
        window: window_id,
        cycle_svg,
        cycle_when,
    }
}

fn headline(anomaly: &serde_json::Value) -> Option<String> {
    if let Some(summary) = anomaly["stale_read"]["summary"].as_str() {
        return Some(format!("Stale read: {summary}"));
    }
    anomaly["cause"].as_str().map(|c| format!("Cause: {c}"))
}

fn versions(anomaly: &serde_json::Value) -> Vec<String> {
    let probe = &anomaly["store_versions"];
    let mut lines: Vec<String> = probe["versions"]
        .as_array()
        .map(|vs| {
            vs.iter()
                .map(|v| {
                    format!(
                        "value {} — commit ts {} (HLC {} ms + {})",
                        v["value"], v["commit_ts"], v["hlc_ms"], v["hlc_logical"]
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    for missing in probe["not_found"].as_array().into_iter().flatten() {
        lines.push(format!(
            "value {missing}: no version of it among those around it"
        ));
    }
    if let Some(note) = probe["note"].as_str() {
        lines.push(note.to_string());
    }
    lines
}

fn stats(model: &RunModel, catalog_changes: &[CatalogChange]) -> Vec<(String, String)> {
    let pending = model
        .spans
        .iter()
        .filter(|s| s.complete_index == PENDING)
        .count();
    let splits = catalog_changes
        .iter()
        .filter(|c| c.label.contains("split"))
        .count();
    vec![
        ("history entries".into(), model.entries.to_string()),
        ("client operations".into(), model.spans.len().to_string()),
        (
            "ok / fail / info".into(),
            format!(
                "{} / {} / {}",
                model.count(Outcome::Ok),
                model.count(Outcome::Fail),
                model.count(Outcome::Info) - pending
            ),
        ),
        ("never completed".into(), pending.to_string()),
        ("duration".into(), format!("{} s", secs(model.end_time))),
        ("faults".into(), model.nemesis.len().to_string()),
        (
            "catalog versions seen".into(),
            (catalog_changes.len() + usize::from(!model.catalog.is_empty())).to_string(),
        ),
        ("splits observed".into(), splits.to_string()),
        ("routes".into(), model.routes.len().to_string()),
    ]
}

/// The Transactions section.
#[derive(Serialize)]
struct TxnView {
    /// `list-append` or `rw-register`.
    model: &'static str,
    list_append: bool,
    /// Where committed / aborted / info come from: the isolation checker or the history.
    counts_from: &'static str,
    committed: u64,
    aborted: u64,
    info: u64,
    keys: u64,
    /// (micro-ops, transactions): 1..4 always, 0 and more than 4 when there are any.
    lengths: Vec<(String, u64)>,
    read_only: u64,
    writing: u64,
    /// The isolation checker's evidence of exercise: committed transactions over two groups
    /// or more (unknown without a recorded catalog) and across a split or move.
    multi_group: String,
    across_split: String,
    key_rows: Vec<KeyRow>,
    more_keys: usize,
}

#[derive(Serialize)]
struct KeyRow {
    key: String,
    acknowledged: u64,
    indeterminate: u64,
    /// list-append: the longest list an ok read returned; rw-register: the last value read.
    read: String,
}

fn txn_view(summary: &TxnSummary, verdict: Option<&Verdict>) -> TxnView {
    let isolation = verdict.and_then(|v| v.checkers.get(analysis::checkers::isolation::NAME));
    let checker_count = |name: &str| isolation.and_then(|r| r.counts.get(name).copied());
    let model = isolation
        .and_then(|r| r.details["model"].as_str())
        .and_then(|m| m.parse::<TxnModel>().ok())
        .or(summary.model)
        .unwrap_or(TxnModel::ListAppend);
    let (counts_from, committed, aborted, info) = match (
        checker_count("committed"),
        checker_count("aborted"),
        checker_count("info"),
    ) {
        (Some(c), Some(a), Some(i)) => ("the isolation checker", c, a, i),
        _ => (
            "the history",
            summary.committed,
            summary.aborted,
            summary.info,
        ),
    };
    let lengths = summary
        .by_length
        .iter()
        .enumerate()
        .filter(|&(len, &n)| (1..=LENGTHS).contains(&len) || n > 0)
        .map(|(len, &n)| {
            (
                if len > LENGTHS {
                    format!("{}+", LENGTHS + 1)
                } else {
                    len.to_string()
                },
                n,
            )
        })
        .collect();
    let list_append = model == TxnModel::ListAppend;
    let key_rows = summary
        .top_keys()
        .into_iter()
        .map(|(key, k)| KeyRow {
            key: key.to_string(),
            acknowledged: k.acknowledged,
            indeterminate: k.indeterminate,
            read: if list_append {
                k.longest_read
                    .map(|n| n.to_string())
                    .unwrap_or_else(|| "never read".into())
            } else {
                match &k.last_read {
                    None => "never read".into(),
                    Some(Seen::Null) => "nil".into(),
                    Some(Seen::Scalar(v)) => v.to_json().to_string(),
                    Some(Seen::List(n)) => format!("a list of {n}"),
                }
            },
        })
        .collect();
    TxnView {
        model: model.as_str(),
        list_append,
        counts_from,
        committed,
        aborted,
        info,
        keys: checker_count("keys").unwrap_or(summary.keys.len() as u64),
        lengths,
        read_only: summary.read_only,
        writing: summary.writing,
        multi_group: count_or_unknown(checker_count("multi_group_committed")),
        across_split: count_or_unknown(checker_count("in_flight_across_split")),
        key_rows,
        more_keys: summary.keys.len().saturating_sub(KEYS_LISTED),
    }
}

/// A count, or `unknown` when the checker could not establish it.
fn count_or_unknown(n: Option<u64>) -> String {
    n.map_or_else(|| "unknown".into(), |n| n.to_string())
}

fn fault_views(model: &RunModel) -> Vec<FaultView> {
    model
        .nemesis
        .iter()
        .map(|f| FaultView {
            kind: f.kind.clone(),
            start_s: secs(f.start),
            end_s: if f.healed {
                secs(f.end)
            } else {
                "not healed".into()
            },
            healed: f.healed,
            targets: f.targets.join(", "),
            effective: match f.effective {
                Some(true) => "yes".into(),
                Some(false) => "no".into(),
                None => "?".into(),
            },
            color: css_rgb(nemesis_rgb(&f.kind)),
        })
        .collect()
}

fn css_rgb((r, g, b): (u8, u8, u8)) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

fn nemesis_legend(model: &RunModel) -> Vec<(String, String)> {
    let mut kinds: Vec<String> = model.nemesis.iter().map(|f| f.kind.clone()).collect();
    kinds.sort();
    kinds.dedup();
    kinds
        .into_iter()
        .map(|k| (fault_label(&k), css_rgb(nemesis_rgb(&k))))
        .collect()
}

/// The legend word of a fault: the registry's label, else the name the history gives.
fn fault_label(kind: &str) -> String {
    nemesis::FaultKind::named(kind)
        .map_or_else(|| kind.to_string(), |f| f.fault().style().label.to_string())
}

/// What the run tested, for the page's subtitle: store and client protocol (runs from before
/// `--client` existed spoke gRPC).
fn tested_through(options: Option<&serde_json::Value>) -> Option<String> {
    let test = options?.get("test")?;
    let db = test["db"].as_str()?;
    let protocol = test["client"]
        .as_str()
        .unwrap_or(if db == "redis" { "redis" } else { "grpc" });
    let set_read = test["set_read"]
        .as_str()
        .map(|r| format!(", sets read by {}", r.to_uppercase()))
        .unwrap_or_default();
    Some(format!(
        "{db} through the {} protocol{set_read}",
        if protocol == "redis" { "Redis" } else { "gRPC" }
    ))
}

fn option_rows(options: Option<&serde_json::Value>) -> Vec<(String, String)> {
    let Some(value) = options else { return vec![] };
    let mut rows = Vec::new();
    flatten_options("", value, 0, &mut rows);
    rows
}

/// `test.json` as dotted keys (`test.concurrency`), nested objects flattened two levels
/// deep; long values shortened; at most [`MAX_OPTION_ROWS`] rows.
fn flatten_options(
    prefix: &str,
    value: &serde_json::Value,
    depth: usize,
    rows: &mut Vec<(String, String)>,
) {
    const MAX_CHARS: usize = 160;
    const MAX_OPTION_ROWS: usize = 120;
    if rows.len() >= MAX_OPTION_ROWS {
        return;
    }
    match value {
        serde_json::Value::Object(map) if depth < 3 && !map.is_empty() => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten_options(&key, v, depth + 1, rows);
            }
        }
        other => {
            let mut text = match other {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if text.chars().count() > MAX_CHARS {
                text = text.chars().take(MAX_CHARS).collect::<String>() + "…";
            }
            rows.push((prefix.to_string(), text));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn options_are_flattened_to_dotted_keys() {
        let options = json!({"seed": 7, "test": {"concurrency": "5n", "nemesis": ["partition"]}, "name": "hotspot"});
        let rows = option_rows(Some(&options));
        assert_eq!(
            rows,
            vec![
                ("name".to_string(), "hotspot".to_string()),
                ("seed".to_string(), "7".to_string()),
                ("test.concurrency".to_string(), "5n".to_string()),
                ("test.nemesis".to_string(), "[\"partition\"]".to_string()),
            ]
        );
    }

    #[test]
    fn the_subtitle_says_which_protocol_was_tested() {
        let through = |test: serde_json::Value| tested_through(Some(&json!({ "test": test })));
        assert_eq!(
            through(json!({"db": "elastickv", "client": "redis", "set_read": "mget"})).unwrap(),
            "elastickv through the Redis protocol, sets read by MGET"
        );
        assert_eq!(
            through(json!({"db": "elastickv", "client": "grpc"})).unwrap(),
            "elastickv through the gRPC protocol"
        );
        assert_eq!(
            through(json!({"db": "refkv"})).unwrap(),
            "refkv through the gRPC protocol",
            "runs from before --client"
        );
        assert_eq!(tested_through(None), None);
    }

    #[test]
    fn plan_has_one_window_per_anomaly_with_refs_else_the_first_ops() {
        let verdict: Verdict = serde_json::from_value(json!({
            "valid": false,
            "checkers": {"linearizable": {"valid": false, "anomalies": [{"type": "a", "op": 500}, {"type": "b", "note": "no refs"}]}}
        }))
        .unwrap();
        let plan = Plan::from_verdict(Some(&verdict));
        assert_eq!(plan.windows.len(), 1);
        assert_eq!(plan.windows[0].0.range, 470..=530);
        assert_eq!(plan.anomalies.len(), 2);
        assert_eq!(plan.anomalies[1].window, None);
        let empty = Plan::from_verdict(None);
        assert_eq!(empty.windows[0].0.range, 0..=DEFAULT_WINDOW - 1);
    }

    /// The model of a JSON Lines history, as `faultline report` streams it.
    fn model_of(text: &str, plan: &Plan) -> RunModel {
        let keep = plan.keep_ranges();
        let mut builder = super::super::load::Builder::new(&keep);
        for op in analysis::formats::jsonl::JsonlReader::new(text.as_bytes(), "t") {
            builder.accept(op.unwrap());
        }
        builder.finish()
    }

    fn page(text: &str, verdict: Option<&Verdict>) -> String {
        let plan = Plan::from_verdict(verdict);
        let model = model_of(text, &plan);
        render(
            &Inputs {
                run_name: "t/1".into(),
                verdict,
                options: None,
            },
            &model,
            &plan,
        )
        .unwrap()
    }

    #[test]
    fn the_transactions_section_appears_for_a_txn_history_only() {
        let txns = r#"{"index": 0, "type": "invoke", "process": 0, "f": "txn", "value": [["append", 1, 1]], "time": 1000000000}
{"index": 1, "type": "invoke", "process": 1, "f": "txn", "value": [["r", 1, null]], "time": 1100000000}
{"index": 2, "type": "info", "process": "nemesis", "f": "start-kill", "value": {"targets": ["n2"]}, "time": 1150000000}
{"index": 3, "type": "ok", "process": 0, "f": "txn", "value": [["append", 1, 1]], "time": 1200000000}
{"index": 4, "type": "ok", "process": 1, "f": "txn", "value": [["r", 1, []]], "time": 1300000000}
{"index": 5, "type": "invoke", "process": 0, "f": "txn", "value": [["r", 1, null], ["append", 2, 1]], "time": 1400000000}
{"index": 6, "type": "ok", "process": 0, "f": "txn", "value": [["r", 1, [1]], ["append", 2, 1]], "time": 1500000000}
{"index": 7, "type": "info", "process": "nemesis", "f": "stop-kill", "value": {"targets": ["n2"]}, "time": 3000000000}
"#;
        let html = page(txns, None);
        assert!(html.contains(r#"<h2 id="transactions">Transactions</h2>"#));
        assert!(
            html.contains("counts from the history"),
            "no isolation checker"
        );
        assert!(
            html.contains("<td>committed / aborted / info</td><td>3 / 0 / 0</td>"),
            "{html}"
        );
        assert!(html.contains("<td>read-only / writing</td><td>1 / 2</td>"));
        assert!(
            html.contains("<td><code>1</code></td><td>1</td><td>0</td><td>1</td>"),
            "key 1: one append, a list of one read"
        );

        // With the isolation checker's counts and a cycle: its numbers, and the cycle placed in the kill.
        let verdict: Verdict = serde_json::from_value(json!({"valid": false, "checkers": {"isolation": {
            "valid": false, "counts": {"committed": 7, "aborted": 1, "info": 2, "keys": 2},
            "details": {"model": "list-append"},
            "anomalies": [{"type": "G-single-item", "cycle": [{"txn": 4, "process": 1, "value": [["r", 1, []]]}, {"txn": 3, "process": 0, "value": [["append", 1, 1]]}],
                "steps": [{"from": 4, "to": 3, "kind": "rw", "key": 1, "why": "rw"}, {"from": 3, "to": 4, "kind": "realtime", "why": "rt"}]}]}}})).unwrap();
        let html = page(txns, Some(&verdict));
        assert!(
            html.contains("counts from the isolation checker")
                && html.contains("<td>7 / 1 / 2</td>"),
            "{html}"
        );
        assert!(
            html.contains(r#"class="sub cycle-when""#)
                && html.contains("During it: kill of n2 (1.150–3.000 s)."),
            "{html}"
        );
        assert!(html.contains(r#"class="cycle-when""#));

        let register = r#"{"index": 0, "type": "invoke", "process": 0, "f": "write", "key": "k", "value": 1}
{"index": 1, "type": "ok", "process": 0, "f": "write", "key": "k", "value": 1}
"#;
        let html = page(register, None);
        assert!(!html.contains("Transactions</h2>") && !html.contains("txn-keys"));
    }

    #[test]
    fn an_rw_register_history_lists_writes_and_the_last_value_read() {
        let txns = r#"{"index": 0, "type": "invoke", "process": 0, "f": "txn", "value": [["w", "x", 5]]}
{"index": 1, "type": "ok", "process": 0, "f": "txn", "value": [["w", "x", 5]]}
{"index": 2, "type": "invoke", "process": 0, "f": "txn", "value": [["r", "x", null], ["r", "y", null]]}
{"index": 3, "type": "ok", "process": 0, "f": "txn", "value": [["r", "x", 5], ["r", "y", null]]}
"#;
        let html = page(txns, None);
        assert!(
            html.contains("rw-register: counts from the history")
                && html.contains("last value read</th>"),
            "{html}"
        );
        assert!(
            html.contains("<td><code>&quot;x&quot;</code></td><td>1</td><td>0</td><td>5</td>"),
            "{html}"
        );
        assert!(
            html.contains("<td><code>&quot;y&quot;</code></td><td>0</td><td>0</td><td>nil</td>"),
            "{html}"
        );
    }
}

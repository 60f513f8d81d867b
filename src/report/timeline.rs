//! Jepsen/Porcupine-style timelines: one lane per client process, one bar per operation
//! from invocation to completion, coloured by outcome, for a bounded window of the history
//! (around an anomaly, or the start of the run). Each bar has a hover title and links to
//! its row in the window's op table; the anomaly's own ops are outlined. Node exits are
//! vertical marks across the lanes (a crash in red, named; a kill's exit dotted grey).

use super::catalog::CatalogChange;
use super::model::{NodeExitMark, OpSpan, Outcome, RunModel, PENDING};
use super::plots::nemesis_rgb;
use super::svg::{escape, nice_ticks, secs, tick_label};
use analysis::history::Op;
use serde::Serialize;
use std::fmt::Write;
use std::ops::RangeInclusive;

pub(super) const WIDTH: f64 = 1000.0;
pub(super) const LABEL_W: f64 = 80.0;
const LANE_H: f64 = 18.0;
const TOP: f64 = 8.0;
/// Longest text of a value shown in a table cell or title.
const VALUE_CHARS: usize = 80;

/// A window of the history to draw.
pub struct Window {
    /// Anchor prefix, unique in the page (`w0`, `w1`, ...).
    pub id: String,
    pub range: RangeInclusive<u64>,
    /// History indices to outline (the anomaly's ops).
    pub highlight: Vec<u64>,
}

/// One operation of a window's table.
#[derive(Serialize)]
pub struct Row {
    pub anchor: String,
    /// Anchor of the completion entry ("" if the op never completed).
    pub alt_anchor: String,
    pub index: String,
    pub process: u64,
    pub f: String,
    pub key: String,
    pub sent: String,
    pub result: String,
    pub outcome: &'static str,
    pub error: String,
    pub start_s: String,
    pub latency_ms: String,
    pub highlighted: bool,
}

/// A drawn window: the SVG and the table rows.
#[derive(Serialize)]
pub struct Rendered {
    pub id: String,
    pub svg: String,
    pub rows: Vec<Row>,
    pub first_index: u64,
    pub last_index: u64,
    pub start_s: String,
    pub end_s: String,
}

/// Short JSON text of a value, or "" for null.
fn value_text(v: &serde_json::Value) -> String {
    if v.is_null() {
        return String::new();
    }
    let text = v.to_string();
    if text.chars().count() <= VALUE_CHARS {
        return text;
    }
    let head: String = text.chars().take(VALUE_CHARS).collect();
    format!("{head}…")
}

/// Most ops drawn that run across the whole window (invoked before it, completed after it
/// or never): a run with many crashed clients must not add a lane per crash to every window.
const MAX_ACROSS: usize = 30;

/// The spans that overlap the window: invoked or completed inside it, or running across it
/// (the latest [`MAX_ACROSS`] of those).
fn spans_in<'m>(model: &'m RunModel, range: &RangeInclusive<u64>) -> Vec<&'m OpSpan> {
    let (lo, hi) = (*range.start(), *range.end());
    let first = model.spans.partition_point(|s| s.invoke_index < lo);
    let earlier = model.spans[..first]
        .iter()
        .filter(|s| s.complete_index >= lo);
    let (ending_inside, across): (Vec<&OpSpan>, Vec<&OpSpan>) =
        earlier.partition(|s| s.complete_index <= hi);
    let mut out: Vec<&OpSpan> = across[across.len().saturating_sub(MAX_ACROSS)..].to_vec();
    out.extend(ending_inside);
    out.sort_by_key(|s| s.invoke_index);
    out.extend(
        model.spans[first..]
            .iter()
            .take_while(|s| s.invoke_index <= hi),
    );
    out
}

fn row_for(model: &RunModel, window: &Window, span: &OpSpan) -> Row {
    let invoke = model.kept_ops.get(&span.invoke_index);
    let done: Option<&Op> = model.kept_ops.get(&span.complete_index);
    let key = invoke
        .and_then(|o| o.key.clone())
        .or_else(|| done.and_then(|o| o.key.clone()))
        .unwrap_or_default()
        .to_string();
    let index = if span.complete_index == PENDING {
        format!("{}→(none)", span.invoke_index)
    } else {
        format!("{}→{}", span.invoke_index, span.complete_index)
    };
    Row {
        anchor: format!("{}-op{}", window.id, span.invoke_index),
        alt_anchor: if span.complete_index == PENDING {
            String::new()
        } else {
            format!("{}-op{}", window.id, span.complete_index)
        },
        index,
        process: span.process,
        f: model.function_name(span.f).to_string(),
        key,
        sent: invoke.map(|o| value_text(&o.value)).unwrap_or_default(),
        result: done.map(|o| value_text(&o.value)).unwrap_or_default(),
        outcome: if span.complete_index == PENDING {
            "pending"
        } else {
            span.outcome.name()
        },
        error: done
            .and_then(|o| o.error.as_deref().map(str::to_string))
            .unwrap_or_default(),
        start_s: secs(span.start),
        latency_ms: if span.complete_index == PENDING {
            String::new()
        } else {
            format!("{:.2}", span.latency_ns() as f64 / 1e6)
        },
        highlighted: window.highlight.contains(&span.invoke_index)
            || window.highlight.contains(&span.complete_index),
    }
}

/// Draws one window.
pub fn render(model: &RunModel, window: &Window, changes: &[CatalogChange]) -> Rendered {
    let spans = spans_in(model, &window.range);
    let rows: Vec<Row> = spans.iter().map(|s| row_for(model, window, s)).collect();
    let (t0, t1) = time_range(model, &spans, &window.range);
    let mut lanes: Vec<u64> = spans.iter().map(|s| s.process).collect();
    lanes.sort_unstable();
    lanes.dedup();
    let height = TOP + lanes.len() as f64 * LANE_H + 40.0;
    let plot_w = WIDTH - LABEL_W - 20.0;
    let x_of = |t: u64| LABEL_W + (t.clamp(t0, t1) - t0) as f64 / (t1 - t0) as f64 * plot_w;
    let mut svg = String::with_capacity(64 * 1024);
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">"#
    );
    let lanes_bottom = TOP + lanes.len() as f64 * LANE_H;
    fault_bands(&mut svg, model, (t0, t1), &x_of, (TOP, lanes_bottom));
    for (lane, process) in lanes.iter().enumerate() {
        let y = TOP + lane as f64 * LANE_H;
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="end">p{process}</text>"#,
            LABEL_W - 6.0,
            y + LANE_H * 0.7
        );
    }
    for (span, row) in spans.iter().zip(&rows) {
        let lane = lanes.binary_search(&span.process).unwrap_or(0);
        let y = TOP + lane as f64 * LANE_H + 2.0;
        let (x0, x1) = (x_of(span.start), x_of(span.end));
        let fill = if span.complete_index == PENDING {
            "#bbbbbb".to_string()
        } else {
            span.outcome.css()
        };
        let stroke = if row.highlighted {
            r##" stroke="#000" stroke-width="2""##
        } else {
            ""
        };
        let _ = write!(
            svg,
            r##"<a href="#{}"><rect class="op" data-row="{}" x="{x0:.1}" y="{y}" width="{:.1}" height="{}" fill="{fill}"{stroke}><title>{}</title></rect></a>"##,
            row.anchor,
            row.anchor,
            (x1 - x0).max(if row.highlighted { 5.0 } else { 2.0 }),
            LANE_H - 4.0,
            escape(&title(row))
        );
    }
    catalog_marks(&mut svg, changes, (t0, t1), &x_of, (TOP, lanes_bottom));
    node_exit_marks(&mut svg, model, (t0, t1), &x_of, (TOP, lanes_bottom));
    axis(&mut svg, t0, t1, lanes_bottom, plot_w);
    svg.push_str("</svg>");
    Rendered {
        id: window.id.clone(),
        svg,
        rows,
        first_index: *window.range.start(),
        last_index: *window.range.end(),
        start_s: secs(t0),
        end_s: secs(t1),
    }
}

/// The nemesis faults overlapping `t0..=t1` as translucent bands from `top` to `bottom`, one
/// colour per kind, each with its kind, times and targets as hover title.
pub(super) fn fault_bands(
    svg: &mut String,
    model: &RunModel,
    (t0, t1): (u64, u64),
    x_of: &dyn Fn(u64) -> f64,
    (top, bottom): (f64, f64),
) {
    for fault in model
        .nemesis
        .iter()
        .filter(|f| f.end >= t0 && f.start <= t1)
    {
        let (r, g, b) = nemesis_rgb(&fault.kind);
        let (x0, x1) = (x_of(fault.start), x_of(fault.end.max(fault.start + 1)));
        let _ = write!(
            svg,
            r#"<rect class="fault" x="{x0:.1}" y="{top}" width="{:.1}" height="{:.1}" fill="rgb({r},{g},{b})" fill-opacity="0.15"><title>{} {}–{}s targets {}</title></rect>"#,
            (x1 - x0).max(1.0),
            bottom - top,
            escape(&fault.kind),
            secs(fault.start),
            secs(fault.end),
            escape(&fault.targets.join(","))
        );
    }
}

/// The catalog changes (splits, moves) inside `t0..=t1` as dashed purple lines.
pub(super) fn catalog_marks(
    svg: &mut String,
    changes: &[CatalogChange],
    (t0, t1): (u64, u64),
    x_of: &dyn Fn(u64) -> f64,
    (top, bottom): (f64, f64),
) {
    for change in changes.iter().filter(|c| c.time >= t0 && c.time <= t1) {
        let x = x_of(change.time);
        let _ = write!(
            svg,
            r##"<line class="catalog-change" x1="{x:.1}" x2="{x:.1}" y1="{top}" y2="{bottom}" stroke="#7828aa" stroke-dasharray="4 2"><title>{}</title></line>"##,
            escape(&change.label)
        );
    }
}

/// The node exits inside `t0..=t1`, see [`node_exit_mark`].
pub(super) fn node_exit_marks(
    svg: &mut String,
    model: &RunModel,
    (t0, t1): (u64, u64),
    x_of: &dyn Fn(u64) -> f64,
    (top, bottom): (f64, f64),
) {
    for exit in model
        .node_exits
        .iter()
        .filter(|e| e.time >= t0 && e.time <= t1)
    {
        node_exit_mark(svg, exit, x_of(exit.time), top, bottom);
    }
}

/// A node exit across every lane: solid red with the node's name for a crash, dotted grey
/// for an exit a kill asked for.
fn node_exit_mark(svg: &mut String, exit: &NodeExitMark, x: f64, top: f64, bottom: f64) {
    let (stroke, dash, width) = if exit.expected {
        ("#888888", r#" stroke-dasharray="1 3""#, 1.0)
    } else {
        ("#d00000", "", 2.0)
    };
    let _ = write!(
        svg,
        r#"<g class="node-exit"><line x1="{x:.1}" x2="{x:.1}" y1="{top}" y2="{bottom}" stroke="{stroke}" stroke-width="{width}"{dash}/><title>{} at {}s (history index {})</title>"#,
        escape(&exit.label),
        secs(exit.time),
        exit.index
    );
    if !exit.expected {
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{}" fill="{stroke}" font-weight="bold">✕ {}</text>"#,
            x + 3.0,
            top + 10.0,
            escape(&exit.node)
        );
    }
    svg.push_str("</g>");
}

fn title(row: &Row) -> String {
    let mut t = format!("p{} {} {}", row.process, row.f, row.key);
    if !row.sent.is_empty() {
        let _ = write!(t, " {}", row.sent);
    }
    let _ = write!(t, " → {}", row.outcome);
    if !row.result.is_empty() {
        let _ = write!(t, " {}", row.result);
    }
    if !row.error.is_empty() {
        let _ = write!(t, " ({})", row.error);
    }
    let _ = write!(
        t,
        "\nindex {} · start {}s · {} ms",
        row.index, row.start_s, row.latency_ms
    );
    t
}

/// The time span drawn: that of the entries inside the index range (so an op pending until
/// the end of the run does not stretch the window), widened to a non-empty interval.
fn time_range(model: &RunModel, spans: &[&OpSpan], range: &RangeInclusive<u64>) -> (u64, u64) {
    let mut t0 = u64::MAX;
    let mut t1 = 0;
    for s in spans {
        if range.contains(&s.invoke_index) {
            t0 = t0.min(s.start);
            t1 = t1.max(s.start);
        }
        if range.contains(&s.complete_index) {
            t0 = t0.min(s.end);
            t1 = t1.max(s.end);
        }
    }
    if t0 > t1 {
        (t0, t1) = (0, model.end_time);
    }
    let pad = ((t1 - t0) / 50).max(1);
    (t0.saturating_sub(pad), t1 + pad)
}

fn axis(svg: &mut String, t0: u64, t1: u64, y: f64, plot_w: f64) {
    let span_ms = (t1 - t0) as f64 / 1e6;
    let _ = write!(
        svg,
        r##"<line x1="{LABEL_W}" x2="{}" y1="{y}" y2="{y}" stroke="#444"/>"##,
        LABEL_W + plot_w
    );
    for tick in nice_ticks(span_ms, 8) {
        let x = LABEL_W + tick / span_ms * plot_w;
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{y}" y2="{}" stroke="#444"/><text x="{x:.1}" y="{}" text-anchor="middle">+{}</text>"##,
            y + 4.0,
            y + 16.0,
            tick_label(tick)
        );
    }
    let _ = write!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle">ms after {}s</text>"#,
        LABEL_W + plot_w / 2.0,
        y + 30.0,
        secs(t0)
    );
}

/// Outcome colours for the page legend.
pub fn legend() -> Vec<(&'static str, String)> {
    Outcome::ALL
        .iter()
        .map(|o| (o.name(), o.css()))
        .chain([("pending", "#bbbbbb".to_string())])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::NO_ROUTE;

    fn span(invoke_index: u64, complete_index: u64) -> OpSpan {
        OpSpan {
            process: invoke_index,
            invoke_index,
            complete_index,
            start: invoke_index,
            end: invoke_index + 1,
            outcome: Outcome::Info,
            f: 0,
            route: NO_ROUTE,
        }
    }

    #[test]
    fn a_crash_is_marked_and_named_on_the_timeline_and_a_killed_exit_is_not_named() {
        let mut model = RunModel::default();
        model.spans.extend((0..20).map(|i| span(i, i + 1)));
        model.end_time = 30;
        let mark = |index, node: &str, expected| NodeExitMark {
            time: index,
            index,
            node: node.into(),
            expected,
            label: format!("{node} label"),
        };
        model.node_exits = vec![mark(5, "n2", false), mark(8, "n3", true)];
        let window = Window {
            id: "w0".into(),
            range: 0..=20,
            highlight: vec![],
        };
        let svg = render(&model, &window, &[]).svg;
        assert_eq!(svg.matches(r#"class="node-exit""#).count(), 2, "{svg}");
        assert!(
            svg.contains("✕ n2") && svg.contains("n2 label at"),
            "the crash is named: {svg}"
        );
        assert!(
            !svg.contains("✕ n3"),
            "an exit a kill asked for is no crash"
        );
    }

    #[test]
    fn windows_hold_ops_inside_and_a_bounded_number_running_across() {
        let mut model = RunModel::default();
        // 100 ops that never complete, then ops 1000.. each completing right away.
        model.spans.extend((0..100).map(|i| span(i, PENDING)));
        model.spans.push(span(500, 1005));
        model
            .spans
            .extend((1000..1100).step_by(2).map(|i| span(i, i + 1)));
        let spans = spans_in(&model, &(1000..=1020));
        let across = spans.iter().filter(|s| s.complete_index == PENDING).count();
        assert_eq!(across, MAX_ACROSS, "crashed ops bounded");
        assert!(
            spans.iter().any(|s| s.invoke_index == 500),
            "an op completing inside is kept"
        );
        assert_eq!(spans.iter().filter(|s| s.invoke_index >= 1000).count(), 11);
        assert!(spans
            .windows(2)
            .all(|w| w[0].invoke_index < w[1].invoke_index));
    }
}

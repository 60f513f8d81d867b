//! Places an isolation anomaly's cycle in time: a small strip with one lane per
//! transaction of the cycle (its bar from invocation to completion), the cycle's time span
//! shaded, and behind them the nemesis fault bands, catalog changes (splits, moves) and node
//! exits of the run — drawn by the timelines' own helpers ([`super::timeline`]) — plus one
//! sentence saying which faults were active during the cycle and how long after the last
//! catalog change it began. So a reader sees whether a cycle sits in a fault or right after
//! a split without reading times off the timelines.
//!
//! Invariants: a cycle transaction is named by its `txn` (the history index of its
//! completion, or of its invoke when it never completed — `docs/results-format.md`), which
//! [`spans_named`] resolves against the model's spans in one pass; a name with no span is
//! left out (nothing is drawn when none resolves). The cycle's span runs from the earliest
//! invocation to the latest completion (a never-completed transaction counts its
//! invocation: it would otherwise stretch to the end of the run, and its bar runs to the
//! strip's edge instead). The strip shows that span with [`CONTEXT_MIN_NS`] (or half the
//! span, if longer) either side, cut to the run; at most [`MAX_LANES`] lanes.

use super::catalog::CatalogChange;
use super::model::{OpSpan, RunModel, PENDING};
use super::svg::{escape, nice_ticks, secs, tick_label};
use super::timeline::{catalog_marks, fault_bands, node_exit_marks, LABEL_W, WIDTH};
use serde::Serialize;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// Least time shown either side of the cycle, ns: enough to see a fault or a split just
/// before it.
pub const CONTEXT_MIN_NS: u64 = 2_000_000_000;
/// Transactions drawn at most (as the cycle drawing, [`super::txn_cycle`]).
const MAX_LANES: usize = 12;
const LANE_H: f64 = 16.0;
const TOP: f64 = 8.0;

/// A cycle placed in time: a sentence and the strip.
#[derive(Debug, Serialize)]
pub struct CycleWhen {
    pub sentence: String,
    pub svg: String,
}

/// The history indices naming the transactions of `witness`'s cycle, in cycle order.
pub fn cycle_txns(witness: &Value) -> Vec<u64> {
    witness["cycle"]
        .as_array()
        .map(|c| c.iter().filter_map(|t| t["txn"].as_u64()).collect())
        .unwrap_or_default()
}

/// For each index of `wanted`, the client op span it names (by its invoke or completion
/// index), found in one pass over the spans.
pub fn spans_named(model: &RunModel, wanted: &HashSet<u64>) -> HashMap<u64, OpSpan> {
    let mut out = HashMap::new();
    if wanted.is_empty() {
        return out;
    }
    for span in &model.spans {
        for index in [span.invoke_index, span.complete_index] {
            if index != PENDING && wanted.contains(&index) {
                out.insert(index, *span);
            }
        }
    }
    out
}

/// `witness`'s cycle placed in time, or `None` when it has no cycle of two transactions or
/// none of them is in the history.
pub fn place(
    model: &RunModel,
    spans: &HashMap<u64, OpSpan>,
    changes: &[CatalogChange],
    witness: &Value,
) -> Option<CycleWhen> {
    let names = cycle_txns(witness);
    if names.len() < 2 {
        return None;
    }
    let txns: Vec<(u64, OpSpan)> = names
        .iter()
        .filter_map(|n| spans.get(n).map(|s| (*n, *s)))
        .collect();
    let first = txns.iter().map(|(_, s)| s.start).min()?;
    let last = txns
        .iter()
        .map(|(_, s)| {
            if s.complete_index == PENDING {
                s.start
            } else {
                s.end
            }
        })
        .max()?;
    let context = CONTEXT_MIN_NS.max((last - first) / 2);
    let t0 = first.saturating_sub(context);
    let t1 = (last + context).min(model.end_time.max(last)).max(t0 + 1);
    let pending: Vec<u64> = txns
        .iter()
        .filter(|(_, s)| s.complete_index == PENDING)
        .map(|(n, _)| *n)
        .collect();
    Some(CycleWhen {
        sentence: sentence(model, changes, (first, last), txns.len(), &pending),
        svg: strip(model, changes, &txns, (first, last), (t0, t1)),
    })
}

/// Where the cycle `first..=last` sits: its span, the faults active during it (else the
/// last one before it), catalog changes during it (else the last one before it).
fn sentence(
    model: &RunModel,
    changes: &[CatalogChange],
    (first, last): (u64, u64),
    n: usize,
    pending: &[u64],
) -> String {
    let mut text = format!(
        "The cycle's {n} transactions ran {}–{} s ({} s)",
        secs(first),
        secs(last),
        secs(last - first)
    );
    if !pending.is_empty() {
        let names: Vec<String> = pending.iter().map(|p| format!("T{p}")).collect();
        let _ = write!(text, "; {} never completed", names.join(", "));
    }
    text.push('.');
    faults_part(&mut text, model, (first, last));
    catalog_part(&mut text, changes, (first, last));
    text
}

/// A fault as the sentence names it: kind, targets, start and end (or `not healed`).
fn fault_text(f: &super::model::NemesisInterval) -> String {
    let targets = if f.targets.is_empty() {
        String::new()
    } else {
        format!(" of {}", f.targets.join(", "))
    };
    let end = if f.healed {
        format!("{} s", secs(f.end))
    } else {
        "not healed".into()
    };
    format!("{}{targets} ({}–{end})", f.kind, secs(f.start))
}

/// The sentence's faults: those active during `first..=last`, else the last one healed
/// before it, else that there was none.
fn faults_part(text: &mut String, model: &RunModel, (first, last): (u64, u64)) {
    let during: Vec<String> = model
        .nemesis
        .iter()
        .filter(|f| f.start <= last && f.end >= first)
        .map(fault_text)
        .collect();
    if !during.is_empty() {
        let _ = write!(text, " During it: {}.", during.join("; "));
    } else if let Some(f) = model
        .nemesis
        .iter()
        .filter(|f| f.end < first)
        .max_by_key(|f| f.end)
    {
        let _ = write!(
            text,
            " No fault was active; the last one, {}, was healed {} s before it.",
            fault_text(f),
            secs(first - f.end)
        );
    } else if model.nemesis.is_empty() {
        text.push_str(" No fault in the run.");
    } else {
        text.push_str(" No fault was active, nor any before it.");
    }
}

/// The sentence's catalog changes: those during `first..=last`, else the last one before it.
fn catalog_part(text: &mut String, changes: &[CatalogChange], (first, last): (u64, u64)) {
    let inside: Vec<&str> = changes
        .iter()
        .filter(|c| c.time >= first && c.time <= last)
        .map(|c| c.label.as_str())
        .collect();
    if !inside.is_empty() {
        let _ = write!(
            text,
            " The catalog changed during it: {}.",
            inside.join("; ")
        );
    } else if let Some(c) = changes
        .iter()
        .filter(|c| c.time < first)
        .max_by_key(|c| c.time)
    {
        let _ = write!(
            text,
            " It began {} s after the last catalog change, {} (at {} s).",
            secs(first - c.time),
            c.label,
            secs(c.time)
        );
    }
}

/// The strip: a lane per transaction, the cycle's span shaded, faults, catalog changes and
/// node exits behind, a time axis below.
fn strip(
    model: &RunModel,
    changes: &[CatalogChange],
    txns: &[(u64, OpSpan)],
    (first, last): (u64, u64),
    (t0, t1): (u64, u64),
) -> String {
    let lanes = &txns[..txns.len().min(MAX_LANES)];
    let plot_w = WIDTH - LABEL_W - 20.0;
    let x_of = |t: u64| LABEL_W + (t.clamp(t0, t1) - t0) as f64 / (t1 - t0) as f64 * plot_w;
    let bottom = TOP + lanes.len() as f64 * LANE_H;
    let height = bottom + 40.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="cycle-when" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">"#
    );
    // The cycle's span under the fault bands, so both show where they overlap.
    let (x0, x1) = (x_of(first), x_of(last));
    let _ = write!(
        svg,
        r##"<rect class="cycle-span" x="{x0:.1}" y="{TOP}" width="{:.1}" height="{:.1}" fill="#fff3b0" stroke="#e0b000"><title>the cycle: {}–{} s</title></rect>"##,
        (x1 - x0).max(2.0),
        bottom - TOP,
        secs(first),
        secs(last)
    );
    fault_bands(&mut svg, model, (t0, t1), &x_of, (TOP, bottom));
    for (lane, (name, span)) in lanes.iter().enumerate() {
        let y = TOP + lane as f64 * LANE_H;
        let pending = span.complete_index == PENDING;
        let (bx0, bx1) = (
            x_of(span.start),
            if pending { x_of(t1) } else { x_of(span.end) },
        );
        let fill = if pending {
            "#bbbbbb".to_string()
        } else {
            span.outcome.css()
        };
        let outcome = if pending {
            "never completed"
        } else {
            span.outcome.name()
        };
        let _ = write!(
            svg,
            r##"<text x="{}" y="{:.1}" text-anchor="end">T{name} p{}</text><rect class="txn-span" x="{bx0:.1}" y="{:.1}" width="{:.1}" height="{}" fill="{fill}" stroke="#000" stroke-width="1"><title>T{name} (p{}): {} s → {} ({})</title></rect>"##,
            LABEL_W - 6.0,
            y + LANE_H * 0.72,
            span.process,
            y + 2.0,
            (bx1 - bx0).max(3.0),
            LANE_H - 4.0,
            span.process,
            secs(span.start),
            if pending {
                "—".into()
            } else {
                format!("{} s", secs(span.end))
            },
            escape(outcome)
        );
    }
    catalog_marks(&mut svg, changes, (t0, t1), &x_of, (TOP, bottom));
    node_exit_marks(&mut svg, model, (t0, t1), &x_of, (TOP, bottom));
    seconds_axis(&mut svg, (t0, t1), &x_of, bottom);
    if txns.len() > lanes.len() {
        let _ = write!(
            svg,
            r##"<text x="4" y="{:.1}" fill="#666">+{} more</text>"##,
            bottom + 30.0,
            txns.len() - lanes.len()
        );
    }
    svg.push_str("</svg>");
    svg
}

/// A time axis in seconds since the test start (the strip spans seconds, unlike a
/// timeline window's milliseconds): round ticks inside `t0..=t1`.
fn seconds_axis(svg: &mut String, (t0, t1): (u64, u64), x_of: &dyn Fn(u64) -> f64, y: f64) {
    let _ = write!(
        svg,
        r##"<line x1="{LABEL_W}" x2="{:.1}" y1="{y}" y2="{y}" stroke="#444"/>"##,
        x_of(t1)
    );
    let span_s = (t1 - t0) as f64 / 1e9;
    let ticks = nice_ticks(span_s, 8);
    let step = ticks.get(1).copied().unwrap_or(span_s.max(1e-3));
    let mut tick = (t0 as f64 / 1e9 / step).ceil() * step;
    while tick * 1e9 <= t1 as f64 {
        let x = x_of((tick * 1e9).round() as u64);
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{y}" y2="{}" stroke="#444"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
            y + 4.0,
            y + 16.0,
            tick_label(tick)
        );
        tick += step;
    }
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="{}" text-anchor="middle">time since test start (s)</text>"#,
        (LABEL_W + x_of(t1)) / 2.0,
        y + 30.0
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::{NemesisInterval, Outcome, NO_ROUTE};
    use serde_json::json;

    const S: u64 = 1_000_000_000;

    fn span(process: u64, invoke_index: u64, complete_index: u64, start: u64, end: u64) -> OpSpan {
        OpSpan {
            process,
            invoke_index,
            complete_index,
            start,
            end,
            outcome: Outcome::Ok,
            f: 0,
            route: NO_ROUTE,
        }
    }

    fn model() -> RunModel {
        RunModel {
            spans: vec![
                span(0, 10, 12, 10 * S, 10 * S + S / 10),
                span(1, 11, 13, 10 * S + S / 20, 10 * S + S / 5),
                span(2, 14, PENDING, 11 * S, 30 * S),
            ],
            nemesis: vec![
                NemesisInterval {
                    kind: "kill".into(),
                    start: 9 * S,
                    end: 12 * S,
                    healed: true,
                    targets: vec!["n2".into()],
                    effective: Some(true),
                },
                NemesisInterval {
                    kind: "partition".into(),
                    start: 2 * S,
                    end: 4 * S,
                    healed: true,
                    targets: vec![],
                    effective: None,
                },
            ],
            end_time: 30 * S,
            ..Default::default()
        }
    }

    #[test]
    fn a_cycle_is_placed_in_the_fault_it_ran_in_and_after_the_last_split() {
        let m = model();
        let witness = json!({"type": "G-single-item", "cycle": [{"txn": 12, "process": 0}, {"txn": 13, "process": 1}]});
        let wanted: HashSet<u64> = cycle_txns(&witness).into_iter().collect();
        let spans = spans_named(&m, &wanted);
        assert_eq!(spans.len(), 2, "named by their completions");
        let changes = vec![CatalogChange {
            time: 9 * S + S / 2,
            index: 5,
            version: 2,
            label: "v2: split r1 → r2, r3".into(),
        }];
        let when = place(&m, &spans, &changes, &witness).unwrap();
        assert!(
            when.sentence.contains("ran 10.000–10.200 s (0.200 s)"),
            "{}",
            when.sentence
        );
        assert!(
            when.sentence
                .contains("During it: kill of n2 (9.000–12.000 s)."),
            "{}",
            when.sentence
        );
        assert!(
            !when.sentence.contains("partition"),
            "a fault long before is not named: {}",
            when.sentence
        );
        assert!(
            when.sentence
                .contains("began 0.500 s after the last catalog change, v2: split r1 → r2, r3"),
            "{}",
            when.sentence
        );
        assert_eq!(when.svg.matches(r#"class="txn-span""#).count(), 2);
        assert_eq!(
            when.svg.matches(r#"class="fault""#).count(),
            1,
            "the partition at 2–4 s is outside 8–12.2 s: {}",
            when.svg
        );
        assert_eq!(when.svg.matches(r#"class="catalog-change""#).count(), 1);
        assert!(when.svg.contains(">T12 p0<") && when.svg.contains(r#"class="cycle-span""#));
    }

    #[test]
    fn a_never_completed_transaction_is_named_by_its_invoke_and_does_not_stretch_the_cycle() {
        let m = model();
        let witness = json!({"cycle": [{"txn": 12}, {"txn": 14}]});
        let spans = spans_named(&m, &cycle_txns(&witness).into_iter().collect());
        let when = place(&m, &spans, &[], &witness).unwrap();
        assert!(
            when.sentence.contains("ran 10.000–11.000 s")
                && when.sentence.contains("T14 never completed"),
            "{}",
            when.sentence
        );
        let outside = json!({"cycle": [{"txn": 3}, {"txn": 4}]});
        assert!(place(
            &m,
            &spans_named(&m, &cycle_txns(&outside).into_iter().collect()),
            &[],
            &outside
        )
        .is_none());
        assert!(place(&m, &spans, &[], &json!({"type": "G1a", "op": 12})).is_none());
    }

    #[test]
    fn a_cycle_after_the_faults_says_how_long_after() {
        let mut m = model();
        m.nemesis.remove(0);
        let witness = json!({"cycle": [{"txn": 12}, {"txn": 13}]});
        let spans = spans_named(&m, &cycle_txns(&witness).into_iter().collect());
        let when = place(&m, &spans, &[], &witness).unwrap();
        assert!(when.sentence.contains("No fault was active; the last one, partition (2.000–4.000 s), was healed 6.000 s before it."), "{}", when.sentence);
    }
}

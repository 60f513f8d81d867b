//! The drawing of an isolation anomaly's cycle: one lane per client process (as in the
//! timelines), each transaction of the cycle a box on its process' lane, placed left to
//! right in cycle order, and each edge an arrow from one transaction to the next labelled
//! with its kind (`ww`, `wr`, `rw`, `process`, `realtime`) and key; the closing edge runs
//! back from the last box to the first. Hovering a box shows the transaction's micro-ops,
//! hovering an arrow the edge's sentence.
//!
//! Reads only the witness fields `docs/results-format.md` documents (`cycle`: `txn`,
//! `process`, `value`; `steps`: `from`, `to`, `kind`, `key`, `why`); a witness without a
//! cycle of at least two transactions draws nothing.

use super::svg::escape;
use serde_json::Value;
use std::fmt::Write;

const LABEL_W: f64 = 90.0;
const LANE_H: f64 = 46.0;
const TOP: f64 = 24.0;
const BOX_W: f64 = 64.0;
const BOX_H: f64 = 22.0;
const STEP_X: f64 = 130.0;
/// Transactions drawn at most; a longer cycle is cut with a note.
const MAX_TXNS: usize = 12;

/// One transaction of the cycle.
struct Txn {
    id: Option<u64>,
    process: Option<u64>,
    value: String,
}

/// The SVG of `witness`'s cycle, or `None` when it has no cycle to draw.
pub fn cycle_svg(witness: &Value) -> Option<String> {
    let cycle = witness["cycle"].as_array()?;
    if cycle.len() < 2 {
        return None;
    }
    let txns: Vec<Txn> = cycle
        .iter()
        .take(MAX_TXNS)
        .map(|t| Txn {
            id: t["txn"].as_u64(),
            process: t["process"].as_u64(),
            value: t["value"].to_string(),
        })
        .collect();
    let mut lanes: Vec<Option<u64>> = txns.iter().map(|t| t.process).collect();
    lanes.sort_unstable();
    lanes.dedup();
    let lane_of = |p: Option<u64>| lanes.iter().position(|l| *l == p).unwrap_or(0);
    let width = LABEL_W + STEP_X * txns.len() as f64 + 20.0;
    let height = TOP + LANE_H * lanes.len() as f64 + 30.0;
    let centre = |i: usize| -> (f64, f64) {
        (
            LABEL_W + STEP_X * i as f64 + BOX_W / 2.0 + 10.0,
            TOP + LANE_H * lane_of(txns[i].process) as f64 + LANE_H / 2.0,
        )
    };
    let mut svg = String::new();
    let _ = write!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="txn-cycle" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">"##
    );
    for (i, lane) in lanes.iter().enumerate() {
        let y = TOP + LANE_H * i as f64 + LANE_H / 2.0;
        let name = lane
            .map(|p| format!("process {p}"))
            .unwrap_or_else(|| "process ?".into());
        let _ = write!(
            svg,
            r##"<line x1="{LABEL_W}" x2="{:.1}" y1="{y}" y2="{y}" stroke="#ddd"/><text x="4" y="{:.1}">{}</text>"##,
            width - 10.0,
            y + 4.0,
            escape(&name)
        );
    }
    let steps = witness["steps"].as_array().cloned().unwrap_or_default();
    for i in 0..txns.len() {
        let j = (i + 1) % txns.len();
        let step = step_between(&steps, &txns[i], &txns[j]);
        draw_edge(&mut svg, centre(i), centre(j), i, j, step);
    }
    for (i, t) in txns.iter().enumerate() {
        let (cx, cy) = centre(i);
        let label =
            t.id.map(|id| format!("T{id}"))
                .unwrap_or_else(|| "T?".into());
        let _ = write!(
            svg,
            r##"<g class="txn"><rect x="{:.1}" y="{:.1}" width="{BOX_W}" height="{BOX_H}" rx="4" fill="#e3f2fd" stroke="#1565c0"/><text x="{cx:.1}" y="{:.1}" text-anchor="middle" font-weight="bold">{}</text><title>{}: {}</title></g>"##,
            cx - BOX_W / 2.0,
            cy - BOX_H / 2.0,
            cy + 4.0,
            escape(&label),
            escape(&label),
            escape(&t.value)
        );
    }
    if cycle.len() > MAX_TXNS {
        let _ = write!(
            svg,
            r##"<text x="{LABEL_W}" y="{:.1}" fill="#666">… {} more transactions in results.json</text>"##,
            height - 8.0,
            cycle.len() - MAX_TXNS
        );
    }
    svg.push_str("</svg>");
    Some(svg)
}

/// The step from `a` to `b`, if the witness lists one.
fn step_between<'a>(steps: &'a [Value], a: &Txn, b: &Txn) -> Option<&'a Value> {
    steps
        .iter()
        .find(|s| s["from"].as_u64() == a.id && s["to"].as_u64() == b.id)
}

/// An arrow between two boxes: straight to the next box, arched back for the closing edge.
fn draw_edge(
    svg: &mut String,
    (x1, y1): (f64, f64),
    (x2, y2): (f64, f64),
    i: usize,
    j: usize,
    step: Option<&Value>,
) {
    let kind = step.and_then(|s| s["kind"].as_str()).unwrap_or("edge");
    let key = step
        .map(|s| &s["key"])
        .filter(|k| !k.is_null())
        .map(|k| format!(" k{k}"))
        .unwrap_or_default();
    let why = step.and_then(|s| s["why"].as_str()).unwrap_or(kind);
    let label = format!("{kind}{key}");
    // The path, the arrowhead's tip and its direction (unit vector), the label's place.
    let (path, tip, dir, lx, ly) = if j > i {
        let (sx, ex) = (x1 + BOX_W / 2.0, x2 - BOX_W / 2.0);
        let len = ((ex - sx).powi(2) + (y2 - y1).powi(2)).sqrt().max(1.0);
        (
            format!("M{sx:.1},{y1:.1} L{ex:.1},{y2:.1}"),
            (ex, y2),
            ((ex - sx) / len, (y2 - y1) / len),
            (sx + ex) / 2.0,
            (y1 + y2) / 2.0 - 5.0,
        )
    } else {
        let arch = TOP - 14.0;
        let end_y = y2 - BOX_H / 2.0;
        (
            format!(
                "M{x1:.1},{:.1} C{x1:.1},{arch:.1} {x2:.1},{arch:.1} {x2:.1},{end_y:.1}",
                y1 - BOX_H / 2.0
            ),
            (x2, end_y),
            (0.0, 1.0),
            (x1 + x2) / 2.0,
            arch + 10.0,
        )
    };
    let head = arrowhead(tip, dir);
    let _ = write!(
        svg,
        r##"<g class="edge"><path d="{path}" fill="none" stroke="#c62828" stroke-width="1.5"/><path d="{head}" fill="#c62828"/><text x="{lx:.1}" y="{ly:.1}" text-anchor="middle" fill="#c62828">{}</text><title>{}</title></g>"##,
        escape(&label),
        escape(why)
    );
}

/// A filled triangle with its tip at `tip`, pointing along the unit vector `dir`.
fn arrowhead((tx, ty): (f64, f64), (dx, dy): (f64, f64)) -> String {
    const LEN: f64 = 8.0;
    const HALF: f64 = 4.0;
    let (bx, by) = (tx - dx * LEN, ty - dy * LEN);
    let (nx, ny) = (-dy * HALF, dx * HALF);
    format!(
        "M{tx:.1},{ty:.1} L{:.1},{:.1} L{:.1},{:.1} z",
        bx + nx,
        by + ny,
        bx - nx,
        by - ny
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_two_transaction_cycle_draws_two_lanes_boxes_and_edges() {
        let w = json!({"type": "G-single-item",
            "cycle": [{"txn": 3, "process": 0, "value": [["r", 1, []]]}, {"txn": 5, "process": 1, "value": [["append", 1, 2]]}],
            "steps": [{"from": 3, "to": 5, "kind": "rw", "key": 1, "why": "T3 read key 1 = [] before T5 appended 2"},
                      {"from": 5, "to": 3, "kind": "wr", "key": 2, "why": "T3 read T5's append"}]});
        let svg = cycle_svg(&w).unwrap();
        assert_eq!(svg.matches(r#"<g class="txn">"#).count(), 2);
        assert_eq!(svg.matches(r#"<g class="edge">"#).count(), 2);
        assert!(
            svg.contains(">process 0<") && svg.contains(">process 1<"),
            "{svg}"
        );
        assert!(
            svg.contains(">rw k1<") && svg.contains("T3 read key 1 = [] before T5 appended 2"),
            "{svg}"
        );
    }

    #[test]
    fn no_cycle_draws_nothing() {
        assert!(cycle_svg(&json!({"type": "G1a", "op": 4})).is_none());
        assert!(cycle_svg(&json!({"cycle": [{"txn": 1}]})).is_none());
    }
}

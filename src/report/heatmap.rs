//! The route heat map: one row per route (in lineage order, children under the parent they
//! split from) × time, coloured by completed ops/s — the keyviz picture of a hot range
//! being split and relieved. Catalog changes are vertical marks. Hand-written SVG so each
//! cell can carry a hover title.

use super::catalog::{lineage_order, CatalogChange};
use super::model::{RouteInfo, RunModel, NO_ROUTE, PENDING};
use super::svg::{escape, nice_ticks, tick_label};
use std::fmt::Write;

const LABEL_W: f64 = 250.0;
const PLOT_W: f64 = 730.0;
const ROW_H: f64 = 16.0;
const TOP: f64 = 22.0;
const COLUMNS: usize = 120;
/// Most routes drawn; beyond it the busiest are kept (in lineage order).
const MAX_ROWS: usize = 48;

/// YlOrRd-like ramp from pale yellow (cold) to dark red (hot).
const RAMP: [(f64, f64, f64); 5] = [
    (255.0, 255.0, 204.0),
    (254.0, 217.0, 118.0),
    (253.0, 141.0, 60.0),
    (227.0, 26.0, 28.0),
    (128.0, 0.0, 38.0),
];

fn ramp(v: f64) -> String {
    let v = v.clamp(0.0, 1.0) * (RAMP.len() - 1) as f64;
    let i = (v.floor() as usize).min(RAMP.len() - 2);
    let t = v - i as f64;
    let (a, b) = (RAMP[i], RAMP[i + 1]);
    let mix = |x: f64, y: f64| (x + (y - x) * t).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(a.0, b.0),
        mix(a.1, b.1),
        mix(a.2, b.2)
    )
}

/// Ops per (route slot, time column), and the column width in ns.
struct Counts {
    per_route: Vec<Vec<u32>>,
    col_ns: u64,
}

fn count(model: &RunModel) -> Counts {
    let end = model.end_time.max(1);
    let col_ns = end.div_ceil(COLUMNS as u64).max(1);
    let mut per_route = vec![vec![0u32; COLUMNS]; model.routes.len()];
    for s in &model.spans {
        if s.route == NO_ROUTE || s.complete_index == PENDING {
            continue;
        }
        let col = ((s.end / col_ns) as usize).min(COLUMNS - 1);
        if let Some(row) = per_route.get_mut(s.route as usize) {
            row[col] = row[col].saturating_add(1);
        }
    }
    Counts { per_route, col_ns }
}

/// The heat map as an SVG element, or `None` when the history has no catalog events.
pub fn heatmap_svg(model: &RunModel, changes: &[CatalogChange]) -> Option<String> {
    if model.routes.is_empty() {
        return None;
    }
    let counts = count(model);
    let rows = chosen_rows(model, &counts);
    let grid = Grid::new(model, &counts);
    let height = TOP + rows.len() as f64 * ROW_H + 72.0;
    let width = LABEL_W + PLOT_W + 20.0;
    let mut out = String::with_capacity(256 * 1024);
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">"#
    );
    for (row, &slot) in rows.iter().enumerate() {
        let y = TOP + row as f64 * ROW_H;
        route_label(&mut out, &model.routes[slot], y);
        route_cells(&mut out, &grid, &model.routes[slot], slot, y);
    }
    let plot_bottom = TOP + rows.len() as f64 * ROW_H;
    let x_of = |ns: u64| LABEL_W + (ns as f64 / (counts.col_ns * COLUMNS as u64) as f64) * PLOT_W;
    change_marks(&mut out, changes, plot_bottom, x_of);
    axis(&mut out, &counts, plot_bottom, x_of);
    legend(&mut out, grid.max_rate, plot_bottom + 40.0);
    if rows.len() < model.routes.len() {
        let _ = write!(
            out,
            r#"<text x="{}" y="{}">{} quieter routes not shown</text>"#,
            LABEL_W + PLOT_W - 200.0,
            plot_bottom + 52.0,
            model.routes.len() - rows.len()
        );
    }
    out.push_str("</svg>");
    Some(out)
}

/// What every cell is drawn against: the counts, a column's width in seconds and pixels,
/// the highest rate of any cell (the ramp's top) and the time of the first catalog snapshot.
struct Grid<'a> {
    counts: &'a Counts,
    col_s: f64,
    col_w: f64,
    max_rate: f64,
    first_snapshot: u64,
}

impl Grid<'_> {
    fn new<'a>(model: &RunModel, counts: &'a Counts) -> Grid<'a> {
        let col_s = counts.col_ns as f64 / 1e9;
        let max_rate = counts
            .per_route
            .iter()
            .flatten()
            .copied()
            .max()
            .unwrap_or(0)
            .max(1) as f64
            / col_s;
        Grid {
            counts,
            col_s,
            col_w: PLOT_W / COLUMNS as f64,
            max_rate,
            first_snapshot: model.catalog.first().map(|c| c.time).unwrap_or(0),
        }
    }
}

/// A route's row label at `y`: its id and label, its range, groups and parent on hover.
fn route_label(out: &mut String, route: &RouteInfo, y: f64) {
    let groups: Vec<String> = route.groups.iter().map(|g| format!("g{g}")).collect();
    let parent = route
        .parent
        .map(|p| format!(", split from r{p}"))
        .unwrap_or_default();
    let _ = write!(
        out,
        r#"<text x="{}" y="{:.1}" text-anchor="end"><title>route {} [{}, {}) on {}{}</title>{}</text>"#,
        LABEL_W - 6.0,
        y + ROW_H * 0.72,
        route.id,
        escape(&format!("{:?}", route.start)),
        escape(&format!("{:?}", route.end)),
        groups.join(" → "),
        parent,
        escape(&route.label())
    );
}

/// A route's cells at `y`, one per column while the route exists (from the start when it
/// was in the first snapshot), coloured by its ops/s in that column.
fn route_cells(out: &mut String, grid: &Grid<'_>, route: &RouteInfo, slot: usize, y: f64) {
    let col_ns = grid.counts.col_ns;
    let alive_from = if route.first_seen == grid.first_snapshot {
        0
    } else {
        route.first_seen
    };
    let alive_to = route.gone_at.unwrap_or(u64::MAX);
    for col in 0..COLUMNS {
        let (t0, t1) = (col as u64 * col_ns, (col as u64 + 1) * col_ns);
        if t1 <= alive_from || t0 >= alive_to {
            continue;
        }
        let n = grid.counts.per_route[slot][col];
        let rate = n as f64 / grid.col_s;
        let fill = if n == 0 {
            "#f1f1f1".to_string()
        } else {
            ramp((rate / grid.max_rate).sqrt())
        };
        let _ = write!(
            out,
            r#"<rect x="{:.1}" y="{y}" width="{:.1}" height="{}" fill="{fill}"><title>r{} {:.1}–{:.1}s: {:.0} ops/s</title></rect>"#,
            LABEL_W + col as f64 * grid.col_w,
            grid.col_w + 0.1,
            ROW_H - 1.0,
            route.id,
            t0 as f64 / 1e9,
            t1 as f64 / 1e9,
            rate
        );
    }
}

/// A dashed vertical mark per catalog change, labelled with the catalog version.
fn change_marks(
    out: &mut String,
    changes: &[CatalogChange],
    plot_bottom: f64,
    x_of: impl Fn(u64) -> f64,
) {
    for change in changes {
        let x = x_of(change.time);
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{}" y2="{plot_bottom}" stroke="#7828aa" stroke-width="1.5" stroke-dasharray="4 2"><title>{}</title></line><text x="{x:.1}" y="{}" text-anchor="middle" fill="#7828aa">v{}</text>"##,
            TOP - 12.0,
            escape(&change.label),
            TOP - 14.0,
            change.version
        );
    }
}

/// Route slots to draw, in lineage order, at most [`MAX_ROWS`] (the busiest).
fn chosen_rows(model: &RunModel, counts: &Counts) -> Vec<usize> {
    let order = lineage_order(&model.routes);
    if order.len() <= MAX_ROWS {
        return order;
    }
    let total = |slot: usize| {
        counts.per_route[slot]
            .iter()
            .map(|&c| c as u64)
            .sum::<u64>()
    };
    let mut busiest: Vec<usize> = order.clone();
    busiest.sort_by_key(|&s| std::cmp::Reverse(total(s)));
    busiest.truncate(MAX_ROWS);
    order.into_iter().filter(|s| busiest.contains(s)).collect()
}

fn axis(out: &mut String, counts: &Counts, y: f64, x_of: impl Fn(u64) -> f64) {
    let span_s = (counts.col_ns * COLUMNS as u64) as f64 / 1e9;
    let _ = write!(
        out,
        r##"<line x1="{LABEL_W}" x2="{}" y1="{y}" y2="{y}" stroke="#444"/>"##,
        LABEL_W + PLOT_W
    );
    for t in nice_ticks(span_s, 10) {
        let x = x_of((t * 1e9) as u64);
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{y}" y2="{}" stroke="#444"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
            y + 4.0,
            y + 16.0,
            tick_label(t)
        );
    }
    let _ = write!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">time since test start (s)</text>"#,
        LABEL_W + PLOT_W / 2.0,
        y + 30.0
    );
}

fn legend(out: &mut String, max_rate: f64, y: f64) {
    let steps = 10;
    for i in 0..steps {
        let v = i as f64 / (steps - 1) as f64;
        let _ = write!(
            out,
            r#"<rect x="{}" y="{y}" width="14" height="10" fill="{}"/>"#,
            40.0 + i as f64 * 14.0,
            ramp(v)
        );
    }
    let _ = write!(
        out,
        r#"<text x="40" y="{}">0</text><text x="{}" y="{}" text-anchor="end">{:.0} ops/s (sqrt scale)</text>"#,
        y + 22.0,
        40.0 + steps as f64 * 14.0 + 90.0,
        y + 22.0,
        max_rate
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramp_goes_from_pale_to_dark() {
        assert_eq!(ramp(0.0), "#ffffcc");
        assert_eq!(ramp(1.0), "#800026");
        assert_eq!(ramp(7.0), "#800026", "clamped");
    }
}

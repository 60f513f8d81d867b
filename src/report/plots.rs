//! Latency and throughput over time, drawn with plotters as inline SVG, with nemesis
//! intervals as shaded bands and catalog changes (splits, moves) as vertical marks.
//!
//! A 1M-op run must not produce a million SVG circles: latency points are aggregated on a
//! grid of pixel cells (one mark per occupied cell and outcome) that is coarsened until at
//! most [`POINT_BUDGET`] marks remain; throughput is bucketed.

use super::catalog::CatalogChange;
use super::model::{NemesisInterval, Outcome, RunModel, PENDING};
use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::sync::Once;

const FONT: &[u8] = include_bytes!("fonts/DejaVuSans.ttf");
pub const WIDTH: u32 = 1000;
const HEIGHT: u32 = 340;
/// Most latency marks drawn (each a few dozen bytes of SVG).
const POINT_BUDGET: usize = 16_000;
/// Finest latency grid: columns × rows of cells (about 2 × 2 px in the plot area).
const GRID_COLS: usize = 450;
const GRID_ROWS: usize = 140;
const THROUGHPUT_BUCKETS: u64 = 200;

/// plotters needs font metrics to lay out labels even for SVG; register the vendored font.
pub fn ensure_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The font is compiled in; failing to parse it is a build defect caught by tests.
        if plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_err() {
            eprintln!("warning: vendored font could not be parsed; plot labels may be missing");
        }
    });
}

fn plot_err(e: impl std::fmt::Debug) -> anyhow::Error {
    anyhow!("drawing a plot failed: {e:?}")
}

/// Colour of a nemesis kind's band.
pub fn nemesis_rgb(kind: &str) -> (u8, u8, u8) {
    match kind {
        "partition" => (230, 80, 80),
        "kill" => (120, 120, 120),
        "pause" => (80, 160, 220),
        "loss" => (230, 170, 40),
        "split" => (120, 80, 200),
        _ => (100, 180, 100),
    }
}

const CATALOG_MARK: RGBColor = RGBColor(120, 40, 170);

fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The plotted time range in seconds (at least one second).
pub fn duration_s(model: &RunModel) -> f64 {
    seconds(model.end_time).max(1.0)
}

/// Latency tick labels: "0.1", "1", "10", "1000" (ms), without trailing ".0".
fn format_ms(ms: f64) -> String {
    if ms >= 1.0 {
        format!("{ms:.0}")
    } else {
        let text = format!("{ms:.3}");
        text.trim_end_matches('0').to_string()
    }
}

fn rgb(c: (u8, u8, u8)) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

/// Draws nemesis bands and catalog marks over the y range `y0..y1` of a chart.
fn draw_context<Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>,
    nemesis: &[NemesisInterval],
    changes: &[CatalogChange],
    y0: f64,
    y1: f64,
) -> Result<()> {
    chart
        .draw_series(nemesis.iter().map(|f| {
            let end = if f.end > f.start { f.end } else { f.start + 1 };
            Rectangle::new([(seconds(f.start), y0), (seconds(end), y1)], rgb(nemesis_rgb(&f.kind)).mix(0.16).filled())
        }))
        .map_err(plot_err)?;
    chart
        .draw_series(changes.iter().map(|c| {
            let x = seconds(c.time);
            PathElement::new(vec![(x, y0), (x, y1)], CATALOG_MARK.mix(0.7).stroke_width(1))
        }))
        .map_err(plot_err)?;
    let label_style = TextStyle::from(("sans-serif", 11).into_font()).color(&CATALOG_MARK);
    chart
        .draw_series(changes.iter().map(|c| Text::new(format!(" v{}", c.version), (seconds(c.time), y1), label_style.clone())))
        .map_err(plot_err)?;
    Ok(())
}

/// Latency (ms, log scale) of every completed client op at its invocation time.
pub fn latency_svg(model: &RunModel, changes: &[CatalogChange]) -> Result<String> {
    ensure_font();
    let completed = || model.spans.iter().filter(|s| s.complete_index != PENDING);
    let (mut lo, mut hi) = (f64::MAX, f64::MIN);
    for s in completed() {
        let ms = (s.latency_ns() as f64 / 1e6).max(0.001);
        lo = lo.min(ms);
        hi = hi.max(ms);
    }
    if lo > hi {
        (lo, hi) = (0.1, 1000.0);
    }
    let (lo, hi) = (lo / 1.5, (hi * 1.5).max(lo * 10.0));
    let dur = duration_s(model);
    let grid = LatencyGrid::build(completed().map(|s| (seconds(s.start) / dur, (s.latency_ns() as f64 / 1e6).max(0.001), s.outcome)), lo, hi);

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = base_chart(&root)
            .build_cartesian_2d(0f64..dur, (lo..hi).log_scale())
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("time since test start (s)")
            .y_desc("latency (ms)")
            .y_label_formatter(&|ms| format_ms(*ms))
            .label_style(("sans-serif", 12))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(plot_err)?;
        draw_context(&mut chart, &model.nemesis, changes, lo, hi)?;
        for outcome in Outcome::ALL {
            let color = rgb(outcome.rgb());
            let radius = grid.mark_radius();
            chart
                .draw_series(grid.marks(outcome).map(|(x, y)| Circle::new((x * dur, y), radius, color.mix(0.75).filled())))
                .map_err(plot_err)?
                .label(outcome.name())
                .legend(move |(x, y)| Circle::new((x + 8, y), 4, color.filled()));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .label_font(("sans-serif", 12))
            .draw()
            .map_err(plot_err)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

fn base_chart<'a, 'b>(root: &'a DrawingArea<SVGBackend<'b>, Shift>) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut builder = ChartBuilder::on(root);
    builder.margin(12).x_label_area_size(38).y_label_area_size(64);
    builder
}

/// Occupied cells of a (time × log latency) grid per outcome, coarsened to the budget.
struct LatencyGrid {
    cols: usize,
    rows: usize,
    cells: [Vec<bool>; 3],
    log_lo: f64,
    log_hi: f64,
}

impl LatencyGrid {
    /// `points` are (time as a fraction of the run, latency in ms, outcome).
    fn build(points: impl Iterator<Item = (f64, f64, Outcome)>, lo: f64, hi: f64) -> Self {
        let (log_lo, log_hi) = (lo.log10(), hi.log10());
        let mut grid = LatencyGrid {
            cols: GRID_COLS,
            rows: GRID_ROWS,
            cells: std::array::from_fn(|_| vec![false; GRID_COLS * GRID_ROWS]),
            log_lo,
            log_hi,
        };
        for (t, ms, outcome) in points {
            let col = ((t * GRID_COLS as f64) as usize).min(GRID_COLS - 1);
            let frac = (ms.log10() - log_lo) / (log_hi - log_lo);
            let row = ((frac * GRID_ROWS as f64) as usize).min(GRID_ROWS - 1);
            grid.cells[outcome as usize][row * GRID_COLS + col] = true;
        }
        while grid.occupied() > POINT_BUDGET && grid.cols > 8 && grid.rows > 8 {
            grid = grid.halve();
        }
        grid
    }

    fn occupied(&self) -> usize {
        self.cells.iter().map(|c| c.iter().filter(|&&b| b).count()).sum()
    }

    fn halve(&self) -> Self {
        let (cols, rows) = (self.cols.div_ceil(2), self.rows.div_ceil(2));
        let cells = std::array::from_fn(|o| {
            let mut out = vec![false; cols * rows];
            for (i, _) in self.cells[o].iter().enumerate().filter(|(_, b)| **b) {
                let (row, col) = (i / self.cols, i % self.cols);
                out[(row / 2) * cols + col / 2] = true;
            }
            out
        });
        LatencyGrid { cols, rows, cells, log_lo: self.log_lo, log_hi: self.log_hi }
    }

    /// Mark radius in pixels: about half a cell of the plot area.
    fn mark_radius(&self) -> u32 {
        let cell = (WIDTH as usize / self.cols) as u32 / 2;
        // Sparse plots get bigger marks so single ops stay visible.
        let floor = if self.occupied() < 4_000 { 2 } else { 1 };
        cell.clamp(floor, 4)
    }

    /// Centres of the occupied cells of `outcome`: (time fraction, latency ms).
    fn marks(&self, outcome: Outcome) -> impl Iterator<Item = (f64, f64)> + '_ {
        let (cols, rows) = (self.cols as f64, self.rows as f64);
        self.cells[outcome as usize].iter().enumerate().filter(|(_, b)| **b).map(move |(i, _)| {
            let (row, col) = ((i / self.cols) as f64, (i % self.cols) as f64);
            let log = self.log_lo + (row + 0.5) / rows * (self.log_hi - self.log_lo);
            ((col + 0.5) / cols, 10f64.powf(log))
        })
    }
}

/// Completed ops per second over time, one line per outcome.
pub fn throughput_svg(model: &RunModel, changes: &[CatalogChange]) -> Result<String> {
    ensure_font();
    let dur = duration_s(model);
    let series = throughput_series(model);
    let peak = series.iter().flat_map(|(_, points)| points.iter().map(|p| p.1)).fold(1.0f64, f64::max) * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = base_chart(&root).build_cartesian_2d(0f64..dur, 0f64..peak).map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("time since test start (s)")
            .y_desc("completed ops/s")
            .y_label_formatter(&|v| format!("{v:.0}"))
            .label_style(("sans-serif", 12))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(plot_err)?;
        draw_context(&mut chart, &model.nemesis, changes, 0.0, peak)?;
        for (outcome, points) in series {
            let color = rgb(outcome.rgb());
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(plot_err)?
                .label(outcome.name())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .label_font(("sans-serif", 12))
            .draw()
            .map_err(plot_err)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// Bucketed completion rates: for each outcome, (bucket centre s, ops/s) per bucket.
pub fn throughput_series(model: &RunModel) -> Vec<(Outcome, Vec<(f64, f64)>)> {
    let end = model.end_time.max(1);
    // At most THROUGHPUT_BUCKETS buckets, and at least 20 ops-worth of time for short runs
    // (buckets no narrower than a second unless the run is shorter than 20 s).
    let width = end.div_ceil(THROUGHPUT_BUCKETS).max((end / 20).min(1_000_000_000)).max(1);
    let buckets = (end.div_ceil(width) as usize).max(1);
    let mut counts = [vec![0u64; buckets], vec![0u64; buckets], vec![0u64; buckets]];
    for s in model.spans.iter().filter(|s| s.complete_index != PENDING) {
        let b = ((s.end / width) as usize).min(buckets - 1);
        counts[s.outcome as usize][b] += 1;
    }
    let width_s = seconds(width);
    Outcome::ALL
        .into_iter()
        .map(|o| {
            let points = counts[o as usize]
                .iter()
                .enumerate()
                .map(|(b, &c)| ((b as f64 + 0.5) * width_s, c as f64 / width_s))
                .collect();
            (o, points)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_grid_respects_the_budget() {
        let points = (0..200_000u64).map(|i| ((i % 1000) as f64 / 1000.0, 0.01 + (i % 977) as f64, Outcome::Ok));
        let grid = LatencyGrid::build(points, 0.005, 2000.0);
        assert!(grid.occupied() <= POINT_BUDGET, "{} marks", grid.occupied());
        assert!(grid.occupied() > POINT_BUDGET / 8, "coarsened too far: {}", grid.occupied());
    }

    #[test]
    fn throughput_counts_completions_per_second() {
        let mut model = RunModel { end_time: 10_000_000_000, ..Default::default() };
        for i in 0..100u64 {
            model.spans.push(super::super::model::OpSpan {
                process: 0,
                invoke_index: 2 * i,
                complete_index: 2 * i + 1,
                start: i * 100_000_000,
                end: i * 100_000_000 + 1,
                outcome: Outcome::Ok,
                f: 0,
                route: super::super::model::NO_ROUTE,
            });
        }
        let series = throughput_series(&model);
        let ok = &series[0].1;
        // A 10 s run gets 0.5 s buckets.
        assert_eq!(ok.len(), 20);
        let total: f64 = ok.iter().map(|p| p.1 * 0.5).sum();
        assert!((total - 100.0).abs() < 1e-6, "ops recovered from rates: {total}");
        assert!(ok.iter().all(|p| (p.1 - 10.0).abs() < 1e-9), "{ok:?}");
    }
}

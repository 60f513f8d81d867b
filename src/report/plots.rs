//! Latency and throughput over time, drawn with plotters as inline SVG, with nemesis
//! intervals as shaded bands and catalog changes (splits, moves) as vertical marks.
//!
//! A 1M-op run must not produce a million SVG circles: latency points are aggregated on a
//! grid of pixel cells (one mark per occupied cell and outcome) that is coarsened until at
//! most one mark per cell remains; throughput is bucketed.

use super::catalog::CatalogChange;
use super::model::{NemesisInterval, Outcome, RunModel, PENDING};
use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::fmt::Write;
use std::sync::Once;

const FONT: &[u8] = include_bytes!("fonts/DejaVuSans.ttf");
pub const WIDTH: u32 = 1000;
const HEIGHT: u32 = 340;
/// Latency grid: columns × rows of cells (about 2.3 × 2.3 px of the plot area). At most
/// one mark per cell, each about 20 bytes of SVG path: ≤ 1 MB however long the history.
const GRID_COLS: usize = 400;
const GRID_ROWS: usize = 120;
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

/// Colour of a nemesis kind's band: the fault's own ([`nemesis::faults::Style`]).
pub fn nemesis_rgb(kind: &str) -> (u8, u8, u8) {
    nemesis::faults::style_of(kind).rgb
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
    chart: &mut ChartContext<
        '_,
        SVGBackend<'_>,
        Cartesian2d<plotters::coord::types::RangedCoordf64, Y>,
    >,
    nemesis: &[NemesisInterval],
    changes: &[CatalogChange],
    y0: f64,
    y1: f64,
) -> Result<()> {
    chart
        .draw_series(nemesis.iter().map(|f| {
            let end = if f.end > f.start { f.end } else { f.start + 1 };
            Rectangle::new(
                [(seconds(f.start), y0), (seconds(end), y1)],
                rgb(nemesis_rgb(&f.kind)).mix(0.16).filled(),
            )
        }))
        .map_err(plot_err)?;
    chart
        .draw_series(changes.iter().map(|c| {
            let x = seconds(c.time);
            PathElement::new(
                vec![(x, y0), (x, y1)],
                CATALOG_MARK.mix(0.7).stroke_width(1),
            )
        }))
        .map_err(plot_err)?;
    let label_style = TextStyle::from(("sans-serif", 11).into_font()).color(&CATALOG_MARK);
    chart
        .draw_series(changes.iter().map(|c| {
            Text::new(
                format!(" v{}", c.version),
                (seconds(c.time), y1),
                label_style.clone(),
            )
        }))
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
    let grid = LatencyGrid::build(
        completed().map(|s| {
            (
                seconds(s.start) / dur,
                (s.latency_ns() as f64 / 1e6).max(0.001),
                s.outcome,
            )
        }),
        lo,
        hi,
    );

    let mut svg = String::new();
    let marks;
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
        marks = latency_marks(&grid, |x, y| chart.backend_coord(&(x * dur, y)));
        root.present().map_err(plot_err)?;
    }
    // One <path> per outcome instead of one element per mark keeps a dense plot small.
    let at = svg
        .rfind("</svg>")
        .ok_or_else(|| anyhow!("plotters wrote no closing </svg>"))?;
    svg.insert_str(at, &marks);
    Ok(svg)
}

/// The latency marks as SVG paths of small squares, in pixel coordinates given by `to_px`;
/// ok first, then info, then fail on top (definite failures matter most).
fn latency_marks(grid: &LatencyGrid, to_px: impl Fn(f64, f64) -> (i32, i32)) -> String {
    let side = grid.mark_side();
    let half = side / 2;
    let mut out = String::new();
    for outcome in [Outcome::Ok, Outcome::Info, Outcome::Fail] {
        let mut d = String::new();
        for (x, y) in grid.marks(outcome) {
            let (px, py) = to_px(x, y);
            let _ = write!(d, "M{} {}h{side}v{side}h-{side}z", px - half, py - half);
        }
        if !d.is_empty() {
            let _ = write!(
                out,
                r#"<path class="lat-{}" fill="{}" fill-opacity="0.75" d="{d}"/>"#,
                outcome.name(),
                outcome.css()
            );
        }
    }
    out
}

fn base_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut builder = ChartBuilder::on(root);
    builder
        .margin(12)
        .x_label_area_size(38)
        .y_label_area_size(64);
    builder
}

/// A (time × log latency) grid of pixel cells counting ops per outcome. Each occupied cell
/// becomes one mark in the colour of its most frequent outcome (ties go to the rarer:
/// fail, then info), so the page size is bounded by the grid, not by the history.
struct LatencyGrid {
    cells: Vec<[u32; 3]>,
    log_lo: f64,
    log_hi: f64,
}

impl LatencyGrid {
    /// `points` are (time as a fraction of the run, latency in ms, outcome).
    fn build(points: impl Iterator<Item = (f64, f64, Outcome)>, lo: f64, hi: f64) -> Self {
        let (log_lo, log_hi) = (lo.log10(), hi.log10());
        let mut cells = vec![[0u32; 3]; GRID_COLS * GRID_ROWS];
        for (t, ms, outcome) in points {
            let col = ((t * GRID_COLS as f64) as usize).min(GRID_COLS - 1);
            let frac = (ms.log10() - log_lo) / (log_hi - log_lo);
            let row = ((frac * GRID_ROWS as f64).max(0.0) as usize).min(GRID_ROWS - 1);
            let cell = &mut cells[row * GRID_COLS + col][outcome as usize];
            *cell = cell.saturating_add(1);
        }
        LatencyGrid {
            cells,
            log_lo,
            log_hi,
        }
    }

    fn occupied(&self) -> usize {
        self.cells
            .iter()
            .filter(|c| c.iter().any(|&n| n > 0))
            .count()
    }

    fn dominant(counts: &[u32; 3]) -> Option<Outcome> {
        // max_by_key keeps the last of equal maxima: list the rarer outcomes last.
        [Outcome::Ok, Outcome::Info, Outcome::Fail]
            .into_iter()
            .filter(|o| counts[*o as usize] > 0)
            .max_by_key(|o| counts[*o as usize])
    }

    /// Mark side in pixels: a cell of the plot area, bigger when the plot is sparse so
    /// single ops stay visible.
    fn mark_side(&self) -> i32 {
        if self.occupied() < 4_000 {
            4
        } else {
            3
        }
    }

    /// Centres of the cells whose dominant outcome is `outcome`: (time fraction, latency ms).
    fn marks(&self, outcome: Outcome) -> impl Iterator<Item = (f64, f64)> + '_ {
        let (cols, rows) = (GRID_COLS as f64, GRID_ROWS as f64);
        self.cells
            .iter()
            .enumerate()
            .filter(move |(_, c)| Self::dominant(c) == Some(outcome))
            .map(move |(i, _)| {
                let (row, col) = ((i / GRID_COLS) as f64, (i % GRID_COLS) as f64);
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
    let peak = series
        .iter()
        .flat_map(|(_, points)| points.iter().map(|p| p.1))
        .fold(1.0f64, f64::max)
        * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = base_chart(&root)
            .build_cartesian_2d(0f64..dur, 0f64..peak)
            .map_err(plot_err)?;
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
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                });
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
    let width = end
        .div_ceil(THROUGHPUT_BUCKETS)
        .max((end / 20).min(1_000_000_000))
        .max(1);
    // The last bucket absorbs the remainder, so no bucket is narrower than `width`.
    let buckets = ((end / width) as usize).max(1);
    let mut counts = [
        vec![0u64; buckets],
        vec![0u64; buckets],
        vec![0u64; buckets],
    ];
    for s in model.spans.iter().filter(|s| s.complete_index != PENDING) {
        let b = ((s.end / width) as usize).min(buckets - 1);
        counts[s.outcome as usize][b] += 1;
    }
    let width_s = seconds(width);
    let last = buckets - 1;
    let covered_s = |b: usize| {
        if b == last {
            seconds(end - last as u64 * width).max(1e-9)
        } else {
            width_s
        }
    };
    Outcome::ALL
        .into_iter()
        .map(|o| {
            let points = counts[o as usize]
                .iter()
                .enumerate()
                .map(|(b, &c)| ((b as f64 + 0.5) * width_s, c as f64 / covered_s(b)))
                .collect();
            (o, points)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_grid_marks_each_cell_once_with_its_dominant_outcome() {
        // 200k ops spread over the whole grid: at most one mark per cell.
        let points = (0..200_000u64).map(|i| {
            (
                (i % 1000) as f64 / 1000.0,
                0.01 + (i % 977) as f64,
                Outcome::Ok,
            )
        });
        let grid = LatencyGrid::build(points, 0.005, 2000.0);
        let marks: usize = Outcome::ALL.iter().map(|&o| grid.marks(o).count()).sum();
        assert!(
            marks <= GRID_COLS * GRID_ROWS && marks == grid.occupied(),
            "{marks} marks"
        );
        // One cell with 3 ok and 1 fail is ok; with 1 ok and 1 fail it is fail.
        let cell = |o| (0.5, 10.0, o);
        let grid = LatencyGrid::build(
            [
                cell(Outcome::Ok),
                cell(Outcome::Ok),
                cell(Outcome::Ok),
                cell(Outcome::Fail),
            ]
            .into_iter(),
            1.0,
            100.0,
        );
        assert_eq!(
            (
                grid.marks(Outcome::Ok).count(),
                grid.marks(Outcome::Fail).count()
            ),
            (1, 0)
        );
        let grid = LatencyGrid::build(
            [cell(Outcome::Ok), cell(Outcome::Fail)].into_iter(),
            1.0,
            100.0,
        );
        assert_eq!(
            (
                grid.marks(Outcome::Ok).count(),
                grid.marks(Outcome::Fail).count()
            ),
            (0, 1)
        );
    }

    #[test]
    fn throughput_counts_completions_per_second() {
        let mut model = RunModel {
            end_time: 10_000_000_000,
            ..Default::default()
        };
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
        assert!(
            (total - 100.0).abs() < 1e-6,
            "ops recovered from rates: {total}"
        );
        assert!(ok.iter().all(|p| (p.1 - 10.0).abs() < 1e-9), "{ok:?}");

        // A run whose length is not a whole number of buckets: no sliver bucket at the end
        // with an absurd rate.
        model.end_time = 19_999_000_000;
        for i in 100..200u64 {
            let mut span = model.spans[0];
            (span.start, span.end) = (i * 100_000_000, i * 100_000_000 + 1);
            model.spans.push(span);
        }
        let series = throughput_series(&model);
        let max = series[0].1.iter().map(|p| p.1).fold(0.0, f64::max);
        assert!(max <= 11.0, "max rate {max}: {:?}", series[0].1);
    }
}

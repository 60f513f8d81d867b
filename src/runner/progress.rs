//! The progress display of the main phase: elapsed time, ops/s over the last second, error
//! rate, the fault in effect and splits so far. A bar on a terminal; periodic log lines
//! otherwise (and with `--no-progress`, only the log lines every 10 s).

use super::sink::{Counters, JsonlSink};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use nemesis::NemesisStatus;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// One line of progress text from two successive counter readings `dt` apart.
pub fn status_line(prev: &Counters, now: &Counters, dt: Duration, fault: Option<&str>) -> String {
    let done = (now.ok + now.fail + now.info).saturating_sub(prev.ok + prev.fail + prev.info);
    let errors = (now.fail + now.info).saturating_sub(prev.fail + prev.info);
    let rate = done as f64 / dt.as_secs_f64().max(1e-3);
    let err_pct = if done == 0 {
        0.0
    } else {
        100.0 * errors as f64 / done as f64
    };
    format!(
        "{rate:>6.0} ops/s  err {err_pct:>4.1}%  ok {}  fault: {}  splits: {}",
        now.ok,
        fault.unwrap_or("none"),
        now.splits()
    )
}

/// Shows progress until `done` fires; also flushes the history every tick.
pub async fn run(
    sink: Arc<JsonlSink>,
    nemesis: Arc<NemesisStatus>,
    total: Duration,
    enabled: bool,
    done: CancellationToken,
) {
    let tty = enabled && std::io::stderr().is_terminal();
    let bar = if tty {
        let b = ProgressBar::with_draw_target(Some(total.as_secs()), ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len}s {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        super::logging::set_bar(Some(b.clone()));
        Some(b)
    } else {
        None
    };
    let start = Instant::now();
    let mut prev = sink.counters();
    let mut prev_t = Instant::now();
    let mut last_log = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        tokio::select! {
            _ = done.cancelled() => break,
            _ = tick.tick() => {}
        }
        sink.flush();
        if prev_t.elapsed() < Duration::from_secs(1) {
            continue;
        }
        let now = sink.counters();
        let line = status_line(&prev, &now, prev_t.elapsed(), nemesis.active().as_deref());
        if let Some(b) = &bar {
            b.set_position(start.elapsed().as_secs().min(total.as_secs()));
            b.set_message(line);
        } else if last_log.elapsed() >= Duration::from_secs(10) {
            tracing::info!("{}s: {line}", start.elapsed().as_secs());
            last_log = Instant::now();
        }
        prev = now;
        prev_t = Instant::now();
    }
    if let Some(b) = bar {
        b.finish_and_clear();
        super::logging::set_bar(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_line_reports_rate_errors_fault_and_splits() {
        let prev = Counters {
            ok: 100,
            fail: 0,
            info: 0,
            first_routes: Some(3),
            latest_routes: Some(3),
        };
        let now = Counters {
            ok: 280,
            fail: 10,
            info: 10,
            first_routes: Some(3),
            latest_routes: Some(5),
        };
        let line = status_line(&prev, &now, Duration::from_secs(2), Some("partition n1"));
        assert!(line.contains("100 ops/s"), "{line}");
        assert!(line.contains("err 10.0%"), "{line}");
        assert!(line.contains("fault: partition n1"), "{line}");
        assert!(line.contains("splits: 2"), "{line}");
    }
}

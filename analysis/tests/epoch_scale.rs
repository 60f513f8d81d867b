//! Scale: the epoch-authority, split and vacuity checkers on large synthetic histories
//! with full metadata. The default test only proves a 100k-entry history runs and comes
//! out clean; the ignored one measures a 1M-entry history (run it with
//! `cargo test -p analysis --release --test epoch_scale -- --ignored --nocapture`).

mod epoch_support;

use analysis::analyze::{analyze, AnalyzeOptions};
use analysis::catalog::CatalogTimeline;
use analysis::checkers::{epoch_authority, split, vacuity};
use analysis::verdict::Validity;
use epoch_support::synthetic_history;
use std::time::Instant;

fn check_all(ops: usize, split_every_s: u64) -> (Validity, Validity, Validity, u64) {
    let history = synthetic_history(ops, split_every_s, 42);
    assert_eq!(history.len(), ops.min(history.len()));
    let started = Instant::now();
    let timeline = CatalogTimeline::from_history(&history);
    let epoch = epoch_authority::check_with_timeline(&history, &timeline, &Default::default());
    let split_opts = split::SplitOptions {
        hot_prefix: Some("hot/".into()),
        cooldown_s: Some(split_every_s as f64 * 0.8),
        ..Default::default()
    };
    let splits = split::check_with_timeline(&history, &timeline, &split_opts);
    let vac = vacuity::check(
        &history,
        &vacuity::VacuityOptions {
            nemesis: vec!["kill".into()],
            min_ok_ops_per_s: 1000.0,
            ..Default::default()
        },
    );
    let elapsed = started.elapsed();
    let started = Instant::now();
    let core = analyze(
        &history,
        serde_json::Value::Null,
        &AnalyzeOptions::default(),
    )
    .expect("known functions");
    let core_elapsed = started.elapsed();
    eprintln!(
        "{} entries, {} catalog versions, {} splits: epoch-authority + split + vacuity in {:.3} s; \
         core checkers ({}) in {:.3} s",
        history.len(), timeline.observations.len(), splits.counts["splits"], elapsed.as_secs_f64(),
        core.checkers.keys().cloned().collect::<Vec<_>>().join(", "), core_elapsed.as_secs_f64()
    );
    assert_eq!(
        core.valid,
        Validity::Valid,
        "{:?}",
        core.checkers
            .values()
            .map(|c| &c.reason)
            .collect::<Vec<_>>()
    );
    assert!(
        epoch.anomalies.is_empty(),
        "{:?}",
        &epoch.anomalies[..epoch.anomalies.len().min(3)]
    );
    assert!(
        splits.anomalies.is_empty(),
        "{:?}",
        &splits.anomalies[..splits.anomalies.len().min(3)]
    );
    (
        epoch.valid,
        splits.valid,
        vac.valid,
        splits.counts["splits"],
    )
}

#[test]
fn clean_100k_history_with_metadata_is_valid_on_all_three() {
    let (epoch, splits, vac, n) = check_all(100_000, 1);
    assert_eq!(
        (epoch, splits, vac),
        (Validity::Valid, Validity::Valid, Validity::Valid)
    );
    assert!(n >= 1);
}

#[test]
#[ignore = "measurement: run with --release -- --ignored --nocapture"]
fn clean_1m_history_with_metadata() {
    let (epoch, splits, vac, n) = check_all(1_000_000, 2);
    assert_eq!(
        (epoch, splits, vac),
        (Validity::Valid, Validity::Valid, Validity::Valid)
    );
    assert!(n >= 5);
}

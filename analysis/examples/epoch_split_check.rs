//! Runs the epoch-authority, split and vacuity checkers on one history file and prints
//! their results (validity, reason, counts, first anomalies) and the time they took.
//!
//! `cargo run -p analysis --release --example epoch_split_check -- HISTORY [HOT_PREFIX [COOLDOWN_S [NEMESIS]]]`

use analysis::catalog::CatalogTimeline;
use analysis::checkers::{epoch_authority, split, vacuity};
use analysis::formats::load_file;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: epoch_split_check HISTORY [HOT_PREFIX [COOLDOWN_S [NEMESIS,...]]]");
        return ExitCode::from(254);
    };
    let loaded = match load_file(Path::new(path), None) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(254);
        }
    };
    let history = loaded.history;
    let split_opts = split::SplitOptions {
        hot_prefix: args.get(1).filter(|p| !p.is_empty()).cloned(),
        cooldown_s: args.get(2).and_then(|c| c.parse().ok()),
        ..Default::default()
    };
    let vac_opts = vacuity::VacuityOptions {
        nemesis: args.get(3).map(|n| vec![n.clone()]).unwrap_or_default(),
        ..Default::default()
    };
    let started = Instant::now();
    let timeline = CatalogTimeline::from_history(&history);
    let results = [
        (
            "epoch-authority",
            epoch_authority::check_with_timeline(&history, &timeline, &Default::default()),
        ),
        (
            "split",
            split::check_with_timeline(&history, &timeline, &split_opts),
        ),
        ("vacuity", vacuity::check(&history, &vac_opts)),
    ];
    let elapsed = started.elapsed();
    for (name, r) in &results {
        println!(
            "{name}: {} — {}",
            r.valid.as_str(),
            r.reason.as_deref().unwrap_or("")
        );
        println!(
            "  counts: {}",
            serde_json::to_string(&r.counts).unwrap_or_default()
        );
        for a in r.anomalies.iter().take(3) {
            println!("  anomaly: {a}");
        }
    }
    let s = &results[1].1.details;
    println!(
        "split latency_s: {}, splits: {}",
        s["detection_latency_s"],
        s["splits"].as_array().map_or(0, |v| v.len())
    );
    for j in s["splits"].as_array().into_iter().flatten() {
        println!(
            "  split at {:.2}s parent {} keys {} forced {} evidence {} quantile {} top {} ({:.2}) relieved {} findings {}",
            j["time_s"].as_f64().unwrap_or(0.0), j["parent"]["id"], j["split_keys"], j["forced"], j["evidence_ops"],
            j["split_key_quantile"], j["top_key"], j["top_key_share"].as_f64().unwrap_or(0.0), j["relieved"], j["findings"]
        );
    }
    eprintln!(
        "{} entries, checked in {:.3} s",
        history.len(),
        elapsed.as_secs_f64()
    );
    ExitCode::SUCCESS
}

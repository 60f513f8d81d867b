//! `faultline bench --hot`: the hot-key targets of the unique-value fast path, each a
//! synthetic history generated and checked in this process:
//! - 1,000,000 ops on one key, 200 processes, 1% indeterminate (read/write/cas): valid;
//! - the same with one injected stale read: invalid, with the witness naming that read;
//! - 100,000 ops on one key, 1,000 processes: valid;
//! - a 50-client, 1,000-op append (kv) history on one key: valid.
//!
//! A target passes when its verdict (and, for the stale read, the witness) is right and
//! every key took the fast path; the time limits are reported beside the figures, not
//! enforced, since a loaded machine makes wall time noisy.

use super::bench::peak_memory_bytes;
use analysis::checkers::linearizable::{check, LinearizableOptions, Model};
use analysis::synth::{generate, Anomaly, Mode, SynthConfig};
use analysis::verdict::Validity;
use serde_json::{json, Value};
use std::time::Instant;

/// One hot-key target.
struct Target {
    name: &'static str,
    cfg: SynthConfig,
    model: Model,
    /// Wall-time limit of the check, in seconds, as the issue states it.
    limit_s: f64,
}

fn targets(seed: u64) -> Vec<Target> {
    let hot = |ops, concurrency, anomaly, mode| SynthConfig {
        ops,
        keys: 1,
        concurrency,
        indeterminate: 0.01,
        seed,
        anomaly,
        mode,
        ..Default::default()
    };
    vec![
        Target {
            name: "1M ops, 1 key, 200 procs",
            cfg: hot(1_000_000, 200, Anomaly::None, Mode::CasRegister),
            model: Model::CasRegister,
            limit_s: 5.0,
        },
        Target {
            name: "1M ops, 1 key, 200 procs, stale read",
            cfg: hot(1_000_000, 200, Anomaly::StaleRead, Mode::CasRegister),
            model: Model::CasRegister,
            limit_s: 5.0,
        },
        Target {
            name: "100k ops, 1 key, 1000 procs",
            cfg: hot(100_000, 1000, Anomaly::None, Mode::CasRegister),
            model: Model::CasRegister,
            limit_s: 2.0,
        },
        Target {
            name: "1000-op append, 1 key, 50 procs",
            cfg: hot(1000, 50, Anomaly::None, Mode::Append),
            model: Model::Kv,
            limit_s: 0.1,
        },
    ]
}

/// Runs every target; returns the figures and whether all passed.
pub fn bench_hot(seed: u64, say: &dyn Fn(String)) -> Result<(Value, bool), String> {
    let mut figures = Vec::new();
    let mut all_good = true;
    for t in targets(seed) {
        super::bench::reset_peak_memory();
        let started = Instant::now();
        let synth = generate(&t.cfg)?;
        let generated = started.elapsed().as_secs_f64();
        let opts = LinearizableOptions {
            model: t.model,
            ..Default::default()
        };
        let started = Instant::now();
        let result = check(&synth.history, &opts);
        let checked = started.elapsed().as_secs_f64();
        let peak = peak_memory_bytes() / 1_000_000;
        let expected = if synth.anomaly_index.is_some() {
            Validity::Invalid
        } else {
            Validity::Valid
        };
        let named = result
            .anomalies
            .first()
            .and_then(|w| w["op"]["index"].as_u64());
        let witness_ok = synth.anomaly_index.is_none_or(|at| named == Some(at));
        let fast_keys = result.counts.get("keys-fast-path").copied().unwrap_or(0);
        let good =
            result.valid == expected && witness_ok && result.counts.get("keys-wgl") == Some(&0);
        all_good &= good;
        say(format!(
            "hot          {:<38} generate {generated:.2} s, check {checked:.3} s [limit {} s] ({}, {fast_keys} key(s) fast path{}), peak RSS {peak} MB{}",
            t.name,
            t.limit_s,
            result.valid.as_str(),
            named.map(|i| format!(", witness op {i}")).unwrap_or_default(),
            if good { "" } else { "  FAILED" }
        ));
        figures.push(json!({
            "name": t.name, "ops": t.cfg.ops, "concurrency": t.cfg.concurrency, "mode": t.cfg.mode.to_string(),
            "generate_s": generated, "check_s": checked, "limit_s": t.limit_s, "valid": result.valid,
            "witness_op": named, "anomaly_index": synth.anomaly_index, "keys_fast_path": fast_keys,
            "peak_rss_mb": peak, "passed": good,
        }));
    }
    Ok((Value::Array(figures), all_good))
}

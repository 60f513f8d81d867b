//! Every auto-split knob in one struct, with the defaults faultline's 60-second hotspot runs
//! rely on, plus validation and a small duration parser the server can use for its flags.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Configuration of the sampler, detector and scheduler. See the module docs of
/// [`crate::autosplit`] for the command-line flag that sets each field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AutoSplitConfig {
    /// Initial state of the runtime kill switch (`--auto-split`). Sampling and detection run
    /// either way; only the scheduler stops issuing splits while disabled.
    pub enabled: bool,
    /// Length of one sampling window (`--split-window`).
    pub window: Duration,
    /// Weighted load, in ops per minute, a route must reach to count as hot
    /// (`--split-threshold`).
    pub threshold_ops_per_min: f64,
    /// Weight of one write in the score (`--split-write-weight`).
    pub write_weight: u32,
    /// Weight of one read in the score (`--split-read-weight`).
    pub read_weight: u32,
    /// Consecutive windows at or above the threshold before a route becomes a candidate
    /// (`--split-hysteresis`).
    pub hysteresis_windows: u32,
    /// A candidate stays a candidate while its score is at least `down_band × threshold`
    /// (`--split-down-band`).
    pub down_band: f64,
    /// How long the children of a split are left alone (`--split-cooldown`).
    pub cooldown: Duration,
    /// Smallest key-space width each child of an evidence-based (non-isolating) split must
    /// keep, as a fraction of the whole byte key space (`--split-min-span`). 0 only forbids
    /// empty children. Hot-key isolation is exempt: its middle child is one key by design.
    pub min_child_span: f64,
    /// The scheduler never lets the catalog grow beyond this many routes
    /// (`--split-max-routes`).
    pub max_routes: usize,
    /// At most this many `SplitRange` calls per detector cycle (`--split-per-cycle`).
    pub splits_per_cycle: usize,
    /// A single key is isolated when it carries at least this share of its route's load
    /// (`--split-hot-key-share`).
    pub hot_key_share: f64,
    /// Sub-range buckets per route in the sampler (`--split-buckets`).
    pub buckets: usize,
    /// Entries of the per-route hot-key sketch (`--split-top-k`).
    pub top_k: usize,
    /// Request keys sampled per route and window (reservoir), from which the sub-range p50
    /// is picked as a real key (`--split-key-samples`).
    pub key_samples: usize,
    /// The sampler tracks at most this many routes per node; records for further routes
    /// are counted as dropped (`--split-max-tracked-routes`).
    pub max_tracked_routes: usize,
    /// An issued split whose outcome is never reported stops blocking its route after this
    /// long (`--split-in-flight-timeout`).
    pub in_flight_timeout: Duration,
    /// Move the right child to the least-loaded group (`--split-move`); when false every
    /// split stays in the source group.
    pub move_to_least_loaded: bool,
    /// Seeded bug `split-midpoint` (`--bug split-midpoint`): ignore the evidence and split
    /// hot routes at the byte midpoint of their span.
    pub split_midpoint_bug: bool,
}

impl Default for AutoSplitConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            window: Duration::from_secs(2),
            threshold_ops_per_min: 50_000.0,
            write_weight: 4,
            read_weight: 1,
            hysteresis_windows: 3,
            down_band: 0.8,
            cooldown: Duration::from_secs(30),
            min_child_span: 0.0,
            max_routes: 64,
            splits_per_cycle: 1,
            hot_key_share: 0.5,
            buckets: 16,
            top_k: 8,
            key_samples: 32,
            max_tracked_routes: 4096,
            in_flight_timeout: Duration::from_secs(30),
            move_to_least_loaded: true,
            split_midpoint_bug: false,
        }
    }
}

/// A configuration value outside its allowed range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid auto-split setting {field}: {reason}")]
pub struct ConfigError {
    pub field: &'static str,
    pub reason: String,
}

/// Largest bucket count the sampler accepts (each bucket costs 8 bytes per tracked route).
pub const MAX_BUCKETS: usize = 256;
/// Largest key reservoir the sampler accepts (each sample holds a 64-byte key inline).
pub const MAX_KEY_SAMPLES: usize = 256;
/// Largest hot-key sketch the sampler accepts (each entry holds a 64-byte key inline).
pub const MAX_TOP_K: usize = 64;

impl AutoSplitConfig {
    /// Checks every field; the first bad one is reported.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field, reason: String| Err(ConfigError { field, reason });
        if self.window.is_zero() {
            return bad("window", "must be longer than zero".into());
        }
        if !(self.threshold_ops_per_min.is_finite() && self.threshold_ops_per_min > 0.0) {
            return bad(
                "threshold_ops_per_min",
                format!("{} is not a positive number", self.threshold_ops_per_min),
            );
        }
        if self.write_weight == 0 && self.read_weight == 0 {
            return bad(
                "write_weight",
                "write and read weights cannot both be zero".into(),
            );
        }
        if self.hysteresis_windows == 0 {
            return bad("hysteresis_windows", "must be at least 1".into());
        }
        if !(self.down_band > 0.0 && self.down_band <= 1.0) {
            return bad("down_band", format!("{} is not in (0, 1]", self.down_band));
        }
        if !(self.min_child_span >= 0.0 && self.min_child_span < 0.5) {
            return bad(
                "min_child_span",
                format!("{} is not in [0, 0.5)", self.min_child_span),
            );
        }
        if self.max_routes == 0 {
            return bad("max_routes", "must be at least 1".into());
        }
        if self.splits_per_cycle == 0 {
            return bad("splits_per_cycle", "must be at least 1".into());
        }
        if !(self.hot_key_share > 0.0 && self.hot_key_share <= 1.0) {
            return bad(
                "hot_key_share",
                format!("{} is not in (0, 1]", self.hot_key_share),
            );
        }
        if !(2..=MAX_BUCKETS).contains(&self.buckets) {
            return bad(
                "buckets",
                format!("{} is not in 2..={MAX_BUCKETS}", self.buckets),
            );
        }
        if !(1..=MAX_TOP_K).contains(&self.top_k) {
            return bad("top_k", format!("{} is not in 1..={MAX_TOP_K}", self.top_k));
        }
        if !(1..=MAX_KEY_SAMPLES).contains(&self.key_samples) {
            return bad(
                "key_samples",
                format!("{} is not in 1..={MAX_KEY_SAMPLES}", self.key_samples),
            );
        }
        if self.max_tracked_routes == 0 {
            return bad("max_tracked_routes", "must be at least 1".into());
        }
        Ok(())
    }

    /// The weighted load of `writes` writes and `reads` reads, in load units.
    pub fn weighted(&self, writes: u64, reads: u64) -> u64 {
        writes
            .saturating_mul(u64::from(self.write_weight))
            .saturating_add(reads.saturating_mul(u64::from(self.read_weight)))
    }
}

/// Parses a duration flag such as `2s`, `500ms`, `1m`, `1.5s` or a bare number of seconds.
/// Suitable as a clap `value_parser`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit_secs) = if let Some(n) = text.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60.0)
    } else {
        (text, 1.0)
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (examples: 2s, 500ms, 1m)"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("`{text}` is not a non-negative duration"));
    }
    Ok(Duration::from_secs_f64(value * unit_secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        assert_eq!(AutoSplitConfig::default().validate(), Ok(()));
    }

    #[test]
    fn default_hot_range_at_1000_ops_per_s_splits_within_20_s() {
        // A hot range taking 1,000 ops/s of which a quarter are writes scores
        // (4×250 + 750) × 60 = 105,000 ops/min: over the threshold, so it is a
        // candidate after `hysteresis_windows` windows.
        let cfg = AutoSplitConfig::default();
        let score_per_min = cfg.weighted(250, 750) as f64 * 60.0;
        assert!(score_per_min >= cfg.threshold_ops_per_min);
        let time_to_candidate = cfg.window * cfg.hysteresis_windows;
        assert!(
            time_to_candidate <= Duration::from_secs(10),
            "{time_to_candidate:?}"
        );
    }

    #[test]
    fn every_bad_field_is_named() {
        type Edit = fn(&mut AutoSplitConfig);
        let cases: &[(&str, Edit)] = &[
            ("window", |c| c.window = Duration::ZERO),
            ("threshold_ops_per_min", |c| {
                c.threshold_ops_per_min = f64::NAN
            }),
            ("threshold_ops_per_min", |c| c.threshold_ops_per_min = 0.0),
            ("write_weight", |c| {
                c.write_weight = 0;
                c.read_weight = 0
            }),
            ("hysteresis_windows", |c| c.hysteresis_windows = 0),
            ("down_band", |c| c.down_band = 1.5),
            ("min_child_span", |c| c.min_child_span = -1.0),
            ("max_routes", |c| c.max_routes = 0),
            ("splits_per_cycle", |c| c.splits_per_cycle = 0),
            ("hot_key_share", |c| c.hot_key_share = 0.0),
            ("buckets", |c| c.buckets = 1),
            ("buckets", |c| c.buckets = MAX_BUCKETS + 1),
            ("top_k", |c| c.top_k = 0),
            ("key_samples", |c| c.key_samples = 0),
            ("max_tracked_routes", |c| c.max_tracked_routes = 0),
        ];
        for (field, edit) in cases {
            let mut cfg = AutoSplitConfig::default();
            edit(&mut cfg);
            let err = cfg.validate().expect_err(field);
            assert_eq!(err.field, *field);
            assert!(err.to_string().contains(field));
        }
    }

    #[test]
    fn config_round_trips_through_json_and_fills_missing_fields() {
        let cfg = AutoSplitConfig {
            enabled: true,
            top_k: 4,
            ..Default::default()
        };
        let text = serde_json::to_string(&cfg).unwrap();
        assert_eq!(serde_json::from_str::<AutoSplitConfig>(&text).unwrap(), cfg);
        let partial: AutoSplitConfig = serde_json::from_str(r#"{"top_k": 5}"#).unwrap();
        assert_eq!(partial.top_k, 5);
        assert_eq!(partial.buckets, AutoSplitConfig::default().buckets);
    }

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("fast").unwrap_err().contains("fast"));
        assert!(parse_duration("-1s").is_err());
    }
}

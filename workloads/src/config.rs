//! [`WorkloadConfig`]: every knob of a workload run, serialisable so the runner can store it
//! in `test.json`, plus the parsers for the `--key-dist` and `--concurrency` flags.

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

pub use crate::generators::WorkloadKind;

/// How keys are chosen (`--key-dist`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum KeyDist {
    /// Every key equally likely.
    Uniform,
    /// Zipf over the keyspace with exponent `s` (rank 1 is the hottest key).
    Zipf(f64),
    /// A fraction `p` of operations go to the few celebrity keys, the rest uniformly to
    /// the others.
    Celebrity(f64),
    /// Inserts use sequential keys under one prefix (like timestamps: every new key lands
    /// at the end of the same range); register ops go to the celebrity keys.
    HotRange,
}

impl FromStr for KeyDist {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> anyhow::Result<Self> {
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        let number = |what: &str| -> anyhow::Result<f64> {
            let a = arg.with_context(|| {
                format!(
                    "--key-dist {s:?}: {name} needs {what}, e.g. {name}:{}",
                    if name == "zipf" { "1.1" } else { "0.9" }
                )
            })?;
            a.parse::<f64>()
                .with_context(|| format!("--key-dist {s:?}: {a:?} is not a number"))
        };
        match name {
            "uniform" if arg.is_none() => Ok(KeyDist::Uniform),
            "hot-range" if arg.is_none() => Ok(KeyDist::HotRange),
            "zipf" => {
                let exp = number("an exponent")?;
                if !(exp.is_finite() && exp > 0.0) {
                    bail!("--key-dist {s:?}: the zipf exponent must be a positive number");
                }
                Ok(KeyDist::Zipf(exp))
            }
            "celebrity" => {
                let p = number("a fraction")?;
                if !(0.0..=1.0).contains(&p) {
                    bail!("--key-dist {s:?}: the celebrity fraction must be between 0 and 1");
                }
                Ok(KeyDist::Celebrity(p))
            }
            "uniform" | "hot-range" => bail!("--key-dist {s:?}: {name} takes no parameter"),
            _ => bail!(
                "unknown --key-dist {s:?}: expected zipf:S, celebrity:P, hot-range or uniform"
            ),
        }
    }
}

impl fmt::Display for KeyDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyDist::Uniform => f.write_str("uniform"),
            KeyDist::Zipf(s) => write!(f, "zipf:{s}"),
            KeyDist::Celebrity(p) => write!(f, "celebrity:{p}"),
            KeyDist::HotRange => f.write_str("hot-range"),
        }
    }
}

impl TryFrom<String> for KeyDist {
    type Error = anyhow::Error;
    fn try_from(s: String) -> anyhow::Result<Self> {
        s.parse()
    }
}

impl From<KeyDist> for String {
    fn from(d: KeyDist) -> String {
        d.to_string()
    }
}

/// `--txn-length MIN..MAX` (or `N` for exactly N micro-ops).
pub fn parse_txn_length(s: &str) -> anyhow::Result<(u64, u64)> {
    let number = |t: &str| {
        t.trim().parse::<u64>().with_context(|| {
            format!(
                "--txn-length {s:?}: {t:?} is not a whole number (expected MIN..MAX, e.g. 1..4)"
            )
        })
    };
    let (min, max) = match s.split_once("..") {
        Some((a, b)) => (number(a)?, number(b)?),
        None => (number(s)?, number(s)?),
    };
    if min == 0 || min > max {
        bail!("--txn-length {s:?}: needs 1 ≤ MIN ≤ MAX");
    }
    Ok((min, max))
}

/// Number of client processes (`--concurrency`): a total, or `Nn` = N per node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Concurrency {
    Total(u32),
    PerNode(u32),
}

impl Concurrency {
    /// The number of processes for a cluster of `nodes` nodes.
    pub fn processes(self, nodes: usize) -> usize {
        match self {
            Concurrency::Total(n) => n as usize,
            Concurrency::PerNode(n) => n as usize * nodes,
        }
    }
}

impl FromStr for Concurrency {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> anyhow::Result<Self> {
        let (digits, per_node) = match s.strip_suffix('n') {
            Some(d) => (d, true),
            None => (s, false),
        };
        let n: u32 = digits.parse().with_context(|| {
            format!(
                "--concurrency {s:?}: expected a number (e.g. 10) or a number per node (e.g. 5n)"
            )
        })?;
        if n == 0 {
            bail!("--concurrency {s:?}: needs at least one process");
        }
        Ok(if per_node {
            Concurrency::PerNode(n)
        } else {
            Concurrency::Total(n)
        })
    }
}

impl fmt::Display for Concurrency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Concurrency::Total(n) => write!(f, "{n}"),
            Concurrency::PerNode(n) => write!(f, "{n}n"),
        }
    }
}

impl TryFrom<String> for Concurrency {
    type Error = anyhow::Error;
    fn try_from(s: String) -> anyhow::Result<Self> {
        s.parse()
    }
}

impl From<Concurrency> for String {
    fn from(c: Concurrency) -> String {
        c.to_string()
    }
}

/// Everything a workload run needs. Build one with [`WorkloadConfig::defaults`] and
/// override what the command line sets; [`WorkloadConfig::validate`] checks it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkloadConfig {
    pub workload: WorkloadKind,
    pub concurrency: Concurrency,
    /// Total target rate over all processes, ops/s; 0 = as fast as the processes go.
    pub rate: f64,
    /// Seconds of workload.
    pub time_limit_s: f64,
    /// Seed of the generator (and of the scheduling jitter).
    pub seed: u64,
    pub key_dist: KeyDist,
    /// Register keyspace size (and bucket count for non-sequential hot inserts).
    pub keys: u64,
    /// Number of celebrity keys (the first keys of the register keyspace).
    pub celebrities: u64,
    /// Hotspot: fraction of operations that are unique inserts into the hot range.
    pub insert_fraction: f64,
    /// Among register ops: fraction of reads; the rest is split between writes and cas by
    /// `cas_fraction`.
    pub read_fraction: f64,
    /// Among register ops: fraction of compare-and-sets.
    pub cas_fraction: f64,
    /// One scan of the set/hot prefix every this many operations (0 = never).
    pub scan_every: u64,
    /// Set workloads (hotspot, set): inserts a set takes before a fresh set (a fresh
    /// sub-range of the same prefix) replaces it, so reads stay short in long runs
    /// (0 = one set for the whole run). The final reads scan every set.
    pub set_size: u64,
    /// Prefix of the hot range (hotspot inserts).
    pub hot_prefix: String,
    /// Prefix of register keys (and of the transaction workloads' keys).
    pub register_prefix: String,
    /// Prefix of the set workload's inserts.
    pub set_prefix: String,
    /// Deadline of every client call, ms.
    pub call_timeout_ms: u64,
    /// TCP connect timeout, ms (kept below the call deadline).
    pub connect_timeout_ms: u64,
    /// Transaction workloads: the fewest micro-ops of a transaction.
    pub txn_min_len: u64,
    /// Transaction workloads: the most micro-ops of a transaction.
    pub txn_max_len: u64,
    /// Transaction workloads: writes (appends) a key takes before a fresh key replaces it.
    pub max_writes_per_key: u64,
    /// Register through DynamoDB: the attribute types of the values (`--value-type`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_types: Option<crate::client::dynamodb::value_types::ValueTypes>,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig::defaults(WorkloadKind::Hotspot)
    }
}

/// `v` is a fraction (0..=1; NaN is not); the error names the option `name`.
fn check_fraction(name: &str, v: f64) -> anyhow::Result<()> {
    if !(0.0..=1.0).contains(&v) {
        bail!("{name} must be between 0 and 1, got {v}");
    }
    Ok(())
}

impl WorkloadConfig {
    /// Sensible defaults for each workload: the common base below, adjusted by the
    /// workload's own [`crate::generators::WorkloadSpec::defaults`]. The hotspot defaults send 70% of operations
    /// (all writes) as sequential inserts into `hot/`, so the hot route carries over 80% of
    /// the writes: at 500 ops/s that is ≈ 350 inserts/s into one route, which refkv's auto-split
    /// scores (4 × writes) at ≈ 84,000 ops/min, 1.7× its default 50,000 threshold.
    pub fn defaults(kind: WorkloadKind) -> WorkloadConfig {
        let base = WorkloadConfig {
            workload: kind,
            concurrency: Concurrency::PerNode(5),
            rate: 500.0,
            time_limit_s: 60.0,
            seed: 0,
            key_dist: KeyDist::HotRange,
            keys: 64,
            celebrities: 3,
            insert_fraction: 0.7,
            read_fraction: 0.5,
            cas_fraction: 0.25,
            scan_every: 500,
            set_size: 2000,
            hot_prefix: "hot/".into(),
            register_prefix: "reg/".into(),
            set_prefix: "set/".into(),
            call_timeout_ms: 2000,
            connect_timeout_ms: 1000,
            txn_min_len: 1,
            txn_max_len: 4,
            max_writes_per_key: 128,
            value_types: None,
        };
        (kind.spec().defaults)(base)
    }

    pub fn time_limit(&self) -> Duration {
        Duration::from_secs_f64(self.time_limit_s.max(0.0))
    }

    pub fn client_options(&self) -> crate::client::grpc::ClientOptions {
        crate::client::grpc::ClientOptions {
            call_timeout: Duration::from_millis(self.call_timeout_ms),
            connect_timeout: Duration::from_millis(self.connect_timeout_ms),
            value_types: self.value_types,
            ..Default::default()
        }
    }

    /// Sets the reads' share of register operations to `f`; writes and compare-and-sets keep
    /// their ratio to each other (all writes when the defaults had no room for either).
    /// An `f` outside 0..=1 is refused with the flag's name.
    pub fn set_read_fraction(&mut self, f: f64) -> anyhow::Result<()> {
        check_fraction("--read-fraction", f)?;
        let rest = 1.0 - self.read_fraction;
        let cas_share = if rest > 0.0 {
            self.cas_fraction / rest
        } else {
            0.0
        };
        self.read_fraction = f;
        self.cas_fraction = (1.0 - f) * cas_share;
        Ok(())
    }

    /// Checks ranges and consistency; the error names the offending option.
    pub fn validate(&self) -> anyhow::Result<()> {
        check_fraction("insert_fraction", self.insert_fraction)?;
        check_fraction("read_fraction", self.read_fraction)?;
        check_fraction("cas_fraction", self.cas_fraction)?;
        if self.read_fraction + self.cas_fraction > 1.0 + 1e-9 {
            bail!(
                "read_fraction + cas_fraction must not exceed 1 (got {} + {})",
                self.read_fraction,
                self.cas_fraction
            );
        }
        if !(self.rate.is_finite() && self.rate >= 0.0) {
            bail!(
                "--rate must be a non-negative number of ops/s, got {}",
                self.rate
            );
        }
        if !(self.time_limit_s.is_finite() && self.time_limit_s >= 0.0) {
            bail!(
                "--time-limit must be a non-negative number of seconds, got {}",
                self.time_limit_s
            );
        }
        if self.keys == 0 {
            bail!("--keys must be at least 1");
        }
        if self.celebrities == 0 || self.celebrities > self.keys {
            bail!(
                "celebrities must be between 1 and --keys ({}), got {}",
                self.keys,
                self.celebrities
            );
        }
        if self.txn_min_len == 0 || self.txn_min_len > self.txn_max_len {
            bail!(
                "--txn-length {}..{}: needs 1 ≤ MIN ≤ MAX",
                self.txn_min_len,
                self.txn_max_len
            );
        }
        if self.max_writes_per_key == 0 {
            bail!("--max-writes-per-key must be at least 1");
        }
        if self.call_timeout_ms == 0 || self.connect_timeout_ms == 0 {
            bail!("client timeouts must be positive");
        }
        for (name, p) in [
            ("hot_prefix", &self.hot_prefix),
            ("register_prefix", &self.register_prefix),
            ("set_prefix", &self.set_prefix),
        ] {
            if p.is_empty() {
                bail!("{name} must not be empty");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_fraction_keeps_the_ratio_of_writes_to_cas() {
        let mut cfg = WorkloadConfig::defaults(WorkloadKind::Hotspot);
        cfg.set_read_fraction(0.8).unwrap();
        assert!(
            (cfg.read_fraction - 0.8).abs() < 1e-12 && (cfg.cas_fraction - 0.1).abs() < 1e-12,
            "{cfg:?}"
        );
        cfg.validate().unwrap();
        cfg.set_read_fraction(1.0).unwrap();
        assert_eq!(cfg.cas_fraction, 0.0);
        cfg.set_read_fraction(0.0).unwrap();
        assert_eq!(
            cfg.cas_fraction, 0.0,
            "all writes once the defaults' ratio is gone"
        );
        let err = format!("{:#}", cfg.set_read_fraction(1.5).unwrap_err());
        assert!(
            err.contains("--read-fraction") && err.contains("1.5"),
            "{err}"
        );
        assert!(cfg.set_read_fraction(f64::NAN).is_err());
    }

    #[test]
    fn key_dist_parses_every_form() {
        assert_eq!("zipf:1.1".parse::<KeyDist>().unwrap(), KeyDist::Zipf(1.1));
        assert_eq!(
            "celebrity:0.9".parse::<KeyDist>().unwrap(),
            KeyDist::Celebrity(0.9)
        );
        assert_eq!("hot-range".parse::<KeyDist>().unwrap(), KeyDist::HotRange);
        assert_eq!("uniform".parse::<KeyDist>().unwrap(), KeyDist::Uniform);
    }

    #[test]
    fn key_dist_errors_say_what_is_wrong() {
        let err = |s: &str| format!("{:#}", s.parse::<KeyDist>().unwrap_err());
        assert!(err("zipf").contains("needs an exponent"));
        assert!(err("zipf:x").contains("not a number"));
        assert!(err("zipf:-1").contains("positive"));
        assert!(err("zipf:NaN").contains("positive"));
        assert!(err("celebrity:1.5").contains("between 0 and 1"));
        assert!(err("hot-range:3").contains("takes no parameter"));
        assert!(err("pareto:2").contains("expected zipf:S"));
    }

    #[test]
    fn key_dist_round_trips_through_text_and_json() {
        for d in [
            KeyDist::Zipf(1.25),
            KeyDist::Celebrity(0.5),
            KeyDist::HotRange,
            KeyDist::Uniform,
        ] {
            assert_eq!(d.to_string().parse::<KeyDist>().unwrap(), d);
            let json = serde_json::to_string(&d).unwrap();
            assert_eq!(serde_json::from_str::<KeyDist>(&json).unwrap(), d);
        }
    }

    #[test]
    fn txn_length_parses_a_range_or_one_number_and_refuses_the_rest() {
        assert_eq!(parse_txn_length("1..4").unwrap(), (1, 4));
        assert_eq!(parse_txn_length("3").unwrap(), (3, 3));
        for bad in ["0..2", "4..1", "a..3", "", "1..", "-1..2"] {
            assert!(parse_txn_length(bad).is_err(), "{bad:?} accepted");
        }
        assert!(format!("{:#}", parse_txn_length("x").unwrap_err()).contains("MIN..MAX"));
    }

    #[test]
    fn concurrency_parses_totals_and_per_node() {
        assert_eq!("10".parse::<Concurrency>().unwrap(), Concurrency::Total(10));
        assert_eq!(
            "5n".parse::<Concurrency>().unwrap(),
            Concurrency::PerNode(5)
        );
        assert_eq!(Concurrency::PerNode(5).processes(3), 15);
        assert_eq!(Concurrency::Total(7).processes(3), 7);
        for bad in ["", "n", "0", "0n", "-3", "3x", "2.5n"] {
            assert!(bad.parse::<Concurrency>().is_err(), "{bad:?} accepted");
        }
        assert!(
            format!("{:#}", "abc".parse::<Concurrency>().unwrap_err()).contains("number per node")
        );
    }

    #[test]
    fn config_round_trips_and_fills_missing_fields() {
        let cfg = WorkloadConfig::defaults(WorkloadKind::Register);
        let json = serde_json::to_value(&cfg).unwrap();
        assert_eq!(json["concurrency"], "5n");
        assert_eq!(json["key_dist"], "uniform");
        let back: WorkloadConfig = serde_json::from_value(json).unwrap();
        assert_eq!(back, cfg);
        let partial: WorkloadConfig =
            serde_json::from_str(r#"{"workload":"set","rate":50}"#).unwrap();
        assert_eq!((partial.workload, partial.rate), (WorkloadKind::Set, 50.0));
        assert!(serde_json::from_str::<WorkloadConfig>(r#"{"key_dist":"zipf:-2"}"#).is_err());
    }

    #[test]
    fn validate_rejects_bad_values() {
        let ok = WorkloadConfig::default();
        ok.validate().unwrap();
        let bad = |f: fn(&mut WorkloadConfig)| {
            let mut c = WorkloadConfig::default();
            f(&mut c);
            c.validate().is_err()
        };
        assert!(bad(|c| c.insert_fraction = 1.2));
        assert!(bad(|c| c.read_fraction = 0.8));
        assert!(bad(|c| c.rate = -1.0));
        assert!(bad(|c| c.keys = 0));
        assert!(bad(|c| c.celebrities = 65));
        assert!(bad(|c| c.hot_prefix.clear()));
        assert!(bad(|c| c.time_limit_s = f64::NAN));
        assert!(bad(|c| c.txn_min_len = 0));
        assert!(bad(|c| (c.txn_min_len, c.txn_max_len) = (5, 4)));
        assert!(bad(|c| c.max_writes_per_key = 0));
    }
}

//! Verdicts: the validity of one checker's result and of the whole run, merged the way
//! Jepsen merges them (`false` beats `"unknown"` beats `true`), serialised as
//! `results.json`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A checker's (or the run's) validity. Serialises as Jepsen does: `true`, `false` or
/// `"unknown"`; a checker that does not apply to the target is `"not-applicable"` and never
/// counts as valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Validity {
    Valid,
    Invalid,
    Unknown,
    NotApplicable,
}

impl Validity {
    /// Merge two validities: invalid > unknown > valid; not-applicable is neutral.
    pub fn merge(self, other: Validity) -> Validity {
        use Validity::*;
        match (self, other) {
            (Invalid, _) | (_, Invalid) => Invalid,
            (Unknown, _) | (_, Unknown) => Unknown,
            (Valid, _) | (_, Valid) => Valid,
            (NotApplicable, NotApplicable) => NotApplicable,
        }
    }

    /// Jepsen's exit code convention: 0 valid, 1 invalid, 2 unknown.
    pub fn exit_code(self) -> u8 {
        match self {
            Validity::Valid => 0,
            Validity::Invalid => 1,
            Validity::Unknown | Validity::NotApplicable => 2,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Validity::Valid => "valid",
            Validity::Invalid => "invalid",
            Validity::Unknown => "unknown",
            Validity::NotApplicable => "not-applicable",
        }
    }
}

impl Serialize for Validity {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Validity::Valid => s.serialize_bool(true),
            Validity::Invalid => s.serialize_bool(false),
            Validity::Unknown => s.serialize_str("unknown"),
            Validity::NotApplicable => s.serialize_str("not-applicable"),
        }
    }
}

impl<'de> Deserialize<'de> for Validity {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Bool(true) => Ok(Validity::Valid),
            serde_json::Value::Bool(false) => Ok(Validity::Invalid),
            serde_json::Value::String(s) if s == "unknown" => Ok(Validity::Unknown),
            serde_json::Value::String(s) if s == "not-applicable" => Ok(Validity::NotApplicable),
            other => Err(serde::de::Error::custom(format!(
                "validity must be true, false, \"unknown\" or \"not-applicable\", got {other}"
            ))),
        }
    }
}

/// What one checker concluded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckerResult {
    pub valid: Validity,
    /// Why the result is invalid or unknown, in a sentence a person can act on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Named counts (ops checked, keys, lost elements, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counts: BTreeMap<String, u64>,
    /// Anomalies found, each a JSON object naming its kind and the ops involved
    /// (by history `index`) so a report can link to them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anomalies: Vec<serde_json::Value>,
    /// Checker-specific details (latency quantiles, per-key results, ...).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub details: serde_json::Value,
}

impl CheckerResult {
    pub fn new(valid: Validity) -> Self {
        CheckerResult {
            valid,
            reason: None,
            counts: BTreeMap::new(),
            anomalies: Vec::new(),
            details: serde_json::Value::Null,
        }
    }
}

/// The whole verdict of one run or one analysed history: `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub valid: Validity,
    /// One entry per checker, by name (`linearizable`, `set-full`, `epoch-authority`, ...).
    pub checkers: BTreeMap<String, CheckerResult>,
    /// How the history's stale writes ended, when the epoch-authority checker counted them
    /// (its counts are the source: this is a summary for CI scripts and the matrix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_writes: Option<StaleWriteSummary>,
}

/// `results.json`'s `stale_writes`: the epoch-authority checker's `stale-writes-*` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StaleWriteSummary {
    pub attempted: u64,
    pub rejected: u64,
    pub acknowledged: u64,
    pub indeterminate: u64,
    /// Acknowledged stale writes that are epoch-authority witnesses.
    pub witnesses: u64,
}

impl StaleWriteSummary {
    /// From an epoch-authority result; `None` when it counted no stale writes (it did not
    /// run, or is of a version that did not count them).
    pub fn from_epoch_authority(result: &CheckerResult) -> Option<Self> {
        let n = |name: &str| result.counts.get(&format!("stale-writes-{name}")).copied();
        Some(StaleWriteSummary {
            attempted: n("attempted")?,
            rejected: n("rejected").unwrap_or(0),
            acknowledged: n("acknowledged").unwrap_or(0),
            indeterminate: n("indeterminate").unwrap_or(0),
            witnesses: n("witnesses").unwrap_or(0),
        })
    }
}

impl Verdict {
    pub fn from_checkers(checkers: BTreeMap<String, CheckerResult>) -> Self {
        let valid = checkers
            .values()
            .fold(Validity::NotApplicable, |acc, c| acc.merge(c.valid));
        // A run where no checker applied has tested nothing: that is unknown, not valid.
        let valid = if valid == Validity::NotApplicable {
            Validity::Unknown
        } else {
            valid
        };
        let stale_writes = checkers
            .get(crate::checkers::epoch_authority::NAME)
            .and_then(StaleWriteSummary::from_epoch_authority);
        Verdict {
            valid,
            checkers,
            stale_writes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_orders_invalid_over_unknown_over_valid() {
        use Validity::*;
        assert_eq!(Valid.merge(Unknown), Unknown);
        assert_eq!(Unknown.merge(Invalid), Invalid);
        assert_eq!(Valid.merge(NotApplicable), Valid);
        assert_eq!(NotApplicable.merge(NotApplicable), NotApplicable);
    }

    #[test]
    fn validity_round_trips_as_jepsen_json() {
        for (v, s) in [
            (Validity::Valid, "true"),
            (Validity::Invalid, "false"),
            (Validity::Unknown, "\"unknown\""),
        ] {
            assert_eq!(serde_json::to_string(&v).unwrap(), s);
            assert_eq!(serde_json::from_str::<Validity>(s).unwrap(), v);
        }
        assert!(serde_json::from_str::<Validity>("3").is_err());
    }

    #[test]
    fn empty_verdict_is_unknown_not_valid() {
        assert_eq!(
            Verdict::from_checkers(BTreeMap::new()).valid,
            Validity::Unknown
        );
    }
}

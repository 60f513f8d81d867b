//! The store's answer to a split the nemesis asked for, as fault events record it: the
//! `detail` of a `start-split` and of a `start-move` / `start-abort-move` that started its
//! own job, and a `txn-move`'s `split` (docs/history-format.md § *Nemesis and watcher
//! events*). The nemesis writes [`SplitDetail`] and the checkers read the same type back
//! (`set_full::route_change` takes an accepted split's catalog version from it).
//!
//! Invariants: reading never fails. A field of the wrong type reads as absent, a string is
//! the harness's reason for not asking (or not being answered), and any other JSON reads as
//! that reason in JSON text, so an event written by another tool costs at most an
//! annotation. Absent fields are left out when written.

use super::fault::{lenient_flag, lenient_text, lenient_u64};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::fmt;

/// What the store said to a split request, or why there was none.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SplitDetail {
    /// The store answered: accepted (`catalog_version` set) or refused (`error` set).
    Answer(SplitAnswer),
    /// No answer to record: why the split was not asked for or could not be (no hot key
    /// yet, no catalog, no route holds the key...).
    Why(String),
}

/// The store's answer to one split request. On success the catalog version that holds the
/// split, the children and the job moving the right child; on refusal the error. The other
/// fields say what the harness aimed at.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SplitAnswer {
    /// Accepted: the catalog version that holds the split.
    #[serde(
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub catalog_version: Option<u64>,
    /// Accepted: the split job moving the right child (cross-group splits).
    #[serde(
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub job_id: Option<u64>,
    /// Accepted: the left child's route id.
    #[serde(
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub left: Option<u64>,
    /// Accepted: the right child's route id.
    #[serde(
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub right: Option<u64>,
    /// The catalog version the request was made against.
    #[serde(
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub expected_catalog_version: Option<u64>,
    /// Accepted after an error: the store answered this error after its commit point and
    /// the catalog showed the split.
    #[serde(
        deserialize_with = "lenient_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub resolved_from: Option<String>,
    /// The key the split aimed at (a store key when `aimed`).
    #[serde(
        deserialize_with = "lenient_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub hot_key: Option<String>,
    /// `hot_key`'s rank among the hot keys (0 = the hottest).
    #[serde(
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub hot_key_rank: Option<u64>,
    /// The split aimed at a stored item of a transaction in flight.
    #[serde(
        deserialize_with = "lenient_flag",
        skip_serializing_if = "Option::is_none"
    )]
    pub aimed: Option<bool>,
    /// Invoke indices of the transactions in flight that touch a key of the split route.
    #[serde(
        deserialize_with = "lenient_indices",
        skip_serializing_if = "Option::is_none"
    )]
    pub in_flight_txns: Option<Vec<u64>>,
    /// A move that first split off this key, so that the keys it must keep in place stay
    /// out of the moving range.
    #[serde(
        deserialize_with = "lenient_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub kept_out_by_split_at: Option<String>,
    /// Refused: the store's error, as the history writes errors.
    #[serde(
        deserialize_with = "lenient_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub error: Option<String>,
    /// Refused because the store has no such split at all (gRPC `UNIMPLEMENTED`).
    #[serde(
        deserialize_with = "lenient_flag",
        skip_serializing_if = "Option::is_none"
    )]
    pub unsupported: Option<bool>,
}

impl SplitDetail {
    /// The harness's reason for having no answer.
    pub fn why(reason: impl Into<String>) -> SplitDetail {
        SplitDetail::Why(reason.into())
    }

    /// The catalog version that holds an accepted split.
    pub fn catalog_version(&self) -> Option<u64> {
        match self {
            SplitDetail::Answer(a) => a.catalog_version,
            SplitDetail::Why(_) => None,
        }
    }

    fn from_json(value: Value) -> SplitDetail {
        match value {
            Value::String(reason) => SplitDetail::Why(reason),
            Value::Object(_) => match SplitAnswer::deserialize(&value) {
                Ok(answer) => SplitDetail::Answer(answer),
                Err(_) => SplitDetail::Why(value.to_string()),
            },
            other => SplitDetail::Why(other.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for SplitDetail {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(SplitDetail::from_json(Value::deserialize(d)?))
    }
}

/// A reason as it is; an answer as its JSON text (how refusals are quoted in `why_not`).
impl fmt::Display for SplitDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SplitDetail::Why(reason) => f.write_str(reason),
            SplitDetail::Answer(answer) => {
                let text = serde_json::to_string(answer).map_err(|_| fmt::Error)?;
                f.write_str(&text)
            }
        }
    }
}

fn lenient_indices<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u64>>, D::Error> {
    Ok(Value::deserialize(d)?
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_accepted_answer_reads_back_the_same_and_leaves_out_what_it_lacks() {
        let answer = SplitDetail::Answer(SplitAnswer {
            catalog_version: Some(5),
            job_id: Some(2),
            right: Some(8),
            in_flight_txns: Some(vec![11, 40]),
            ..SplitAnswer::default()
        });
        let written = serde_json::to_value(&answer).unwrap();
        assert_eq!(
            written,
            json!({"catalog_version": 5, "job_id": 2, "right": 8, "in_flight_txns": [11, 40]})
        );
        let reread: SplitDetail = serde_json::from_value(written).unwrap();
        assert_eq!(reread, answer);
        assert_eq!(reread.catalog_version(), Some(5));
    }

    #[test]
    fn a_reason_is_a_string_both_ways() {
        let why = SplitDetail::why("no hot key to split yet");
        assert_eq!(
            serde_json::to_value(&why).unwrap(),
            json!("no hot key to split yet")
        );
        let reread: SplitDetail = serde_json::from_value(json!("no hot key to split yet")).unwrap();
        assert_eq!(reread, why);
        assert_eq!(reread.catalog_version(), None);
        assert_eq!(reread.to_string(), "no hot key to split yet");
    }

    #[test]
    fn odd_fields_read_as_absent_and_odd_json_reads_as_a_reason() {
        let odd: SplitDetail = serde_json::from_value(
            json!({"catalog_version": "7", "error": "refused", "in_flight_txns": [1, "x"]}),
        )
        .unwrap();
        assert_eq!(
            odd,
            SplitDetail::Answer(SplitAnswer {
                error: Some("refused".into()),
                in_flight_txns: Some(vec![1]),
                ..SplitAnswer::default()
            })
        );
        let number: SplitDetail = serde_json::from_value(json!(3)).unwrap();
        assert_eq!(number, SplitDetail::why("3"));
    }
}

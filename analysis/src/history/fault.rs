//! Nemesis events, typed: a [`FaultEvent`] is one `start-<fault>` or `stop-<fault>` entry
//! of process `nemesis`, its `value` read into [`FaultValue`].
//!
//! Invariants: the JSON a `FaultValue` serializes to is exactly the `value` object of
//! `docs/history-format.md` (the fields every fault shares are typed, anything a fault adds
//! for people sits in `facts`, and optional fields are omitted, not `null`). Reading is
//! lenient, as the readers before it were: a field of the wrong type reads as absent, a
//! non-object `value` as an empty one, so no history is rejected for its nemesis events.

use super::{Op, OpType, Process};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// Whether a nemesis event applies its fault or heals it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultEdge {
    /// `start-<fault>`: the fault was applied (or attempted).
    Start,
    /// `stop-<fault>`: the fault was healed (or its effect ended).
    Stop,
}

impl FaultEdge {
    fn prefix(self) -> &'static str {
        match self {
            FaultEdge::Start => "start-",
            FaultEdge::Stop => "stop-",
        }
    }
}

/// The `value` of a nemesis event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultValue {
    /// The nodes the fault acted on (empty for faults aimed at the store, e.g. a split).
    #[serde(default, deserialize_with = "lenient_names")]
    pub targets: Vec<String>,
    /// The fault really took effect (its meaning is the fault's; e.g. a partition cut a
    /// leader off). Start events carry it; a stop event may repeat it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_flag"
    )]
    pub effective: Option<bool>,
    /// The fault hit a Raft leader, for faults that can tell.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_flag"
    )]
    pub leader: Option<bool>,
    /// Stop events: every step of the heal succeeded.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_flag"
    )]
    pub healed: Option<bool>,
    /// How the targets were chosen (`leader`, `one`, `all`, a partition mode, ...).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_text"
    )]
    pub mode: Option<String>,
    /// The key a split was asked at.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_text"
    )]
    pub key: Option<String>,
    /// The split key, in histories that name it so rather than `key`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_text"
    )]
    pub split_key: Option<String>,
    /// What went wrong while applying or healing, one entry per node or step.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_texts"
    )]
    pub errors: Option<Vec<String>>,
    /// The fault's own facts (leaders seen, the grudge, the store's answer, ...).
    #[serde(flatten)]
    pub facts: Map<String, Value>,
}

impl FaultValue {
    /// A value naming only its targets.
    pub fn new(targets: Vec<String>) -> Self {
        FaultValue {
            targets,
            ..Default::default()
        }
    }

    /// The key a split event names: `split_key`, else `key`.
    pub fn split_key(&self) -> Option<&str> {
        self.split_key.as_deref().or(self.key.as_deref())
    }

    /// Adds the fields of `facts` (a struct or map serializing to a JSON object) to
    /// [`FaultValue::facts`]. Anything else is kept under `facts` as one field.
    pub fn with_facts(mut self, facts: impl Serialize) -> Self {
        match serde_json::to_value(facts) {
            Ok(Value::Object(map)) => self.facts.extend(map),
            Ok(Value::Null) => {}
            Ok(other) => {
                self.facts.insert("facts".into(), other);
            }
            Err(e) => {
                self.facts
                    .insert("facts_error".into(), Value::String(e.to_string()));
            }
        }
        self
    }

    /// The fault's own facts read as `T` (the type its fault wrote them as), if they do.
    pub fn facts_as<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        T::deserialize(Value::Object(self.facts.clone())).ok()
    }

    /// The JSON object recorded as the event's `value`.
    pub fn to_json(&self) -> Value {
        // Serializing plain fields and a map into a `Value` cannot fail.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// One nemesis event of a history.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultEvent {
    pub edge: FaultEdge,
    /// The fault's name: `<fault>` in `start-<fault>` (`partition`, `kill`, ...).
    pub fault: String,
    pub value: FaultValue,
}

impl FaultEvent {
    pub fn new(edge: FaultEdge, fault: &str, value: FaultValue) -> Self {
        FaultEvent {
            edge,
            fault: fault.to_string(),
            value,
        }
    }

    /// The event an op records, if it is a nemesis `start-…`/`stop-…` entry.
    pub fn from_op(op: &Op) -> Option<FaultEvent> {
        if op.process != Process::Nemesis {
            return None;
        }
        let (edge, fault) = Self::parse_f(&op.f)?;
        let value = FaultValue::deserialize(&op.value).unwrap_or_default();
        Some(FaultEvent {
            edge,
            fault: fault.to_string(),
            value,
        })
    }

    /// The edge and fault name an `f` such as `start-partition` names.
    pub fn parse_f(f: &str) -> Option<(FaultEdge, &str)> {
        [FaultEdge::Start, FaultEdge::Stop]
            .into_iter()
            .find_map(|e| f.strip_prefix(e.prefix()).map(|k| (e, k)))
    }

    /// The entry's `f`: `start-<fault>` or `stop-<fault>`.
    pub fn f(&self) -> String {
        format!("{}{}", self.edge.prefix(), self.fault)
    }

    /// The history entry recording this event (`index` and `time` are the sink's to set).
    pub fn to_op(&self) -> Op {
        Op {
            index: 0,
            kind: OpType::Info,
            process: Process::Nemesis,
            f: self.f().into(),
            key: None,
            value: self.value.to_json(),
            time: 0,
            node: None,
            error: None,
            meta: None,
        }
    }
}

/// Every nemesis event of `ops`, with its op, in history order.
pub fn fault_events<'a>(
    ops: impl IntoIterator<Item = &'a Op>,
) -> impl Iterator<Item = (&'a Op, FaultEvent)> {
    ops.into_iter()
        .filter_map(|op| FaultEvent::from_op(op).map(|e| (op, e)))
}

pub(super) fn lenient_flag<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(Value::deserialize(d)?.as_bool())
}

pub(super) fn lenient_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Value::deserialize(d)?.as_str().map(str::to_string))
}

/// A non-negative integer; anything else reads as absent.
pub(super) fn lenient_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(Value::deserialize(d)?.as_u64())
}

fn lenient_texts<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    Ok(Value::deserialize(d)?.as_array().map(|a| {
        a.iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    }))
}

/// Node names; a non-string entry is kept as its JSON text so that it still shows.
fn lenient_names<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let names = Value::deserialize(d)?.as_array().map(|a| {
        a.iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            })
            .collect()
    });
    Ok(names.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nemesis_op(f: &str, value: Value) -> Op {
        Op {
            f: f.into(),
            value,
            ..FaultEvent::new(FaultEdge::Start, "x", FaultValue::default()).to_op()
        }
    }

    #[test]
    fn a_recorded_value_reads_back_typed_and_writes_back_byte_for_byte() {
        let text = r#"{"effective":true,"errors":[],"grudge":{"n1":["n2"]},"leader":false,"leaders":{"1":"n2"},"leaders_cut_off":[],"mode":"one","targets":["n1"]}"#;
        let op = nemesis_op("start-partition", serde_json::from_str(text).unwrap());
        let e = FaultEvent::from_op(&op).expect("a nemesis event");
        assert_eq!((e.edge, e.fault.as_str()), (FaultEdge::Start, "partition"));
        assert_eq!(
            (e.value.effective, e.value.leader, e.value.mode.as_deref()),
            (Some(true), Some(false), Some("one"))
        );
        assert_eq!(serde_json::to_string(&e.value.to_json()).unwrap(), text);
    }

    #[test]
    fn nulls_among_the_facts_are_kept() {
        let v = json!({"targets": [], "effective": true, "key": "k", "job_id": null, "job_phase": null});
        let e = FaultEvent::from_op(&nemesis_op("stop-split", v.clone())).unwrap();
        assert_eq!(e.edge, FaultEdge::Stop);
        assert_eq!(e.value.to_json(), v);
    }

    #[test]
    fn fields_of_the_wrong_type_read_as_absent() {
        let e = FaultEvent::from_op(&nemesis_op(
            "start-kill",
            json!({"targets": ["n1", 2], "effective": "yes"}),
        ))
        .unwrap();
        assert_eq!(e.value.targets, ["n1", "2"]);
        assert_eq!(e.value.effective, None);
        let e = FaultEvent::from_op(&nemesis_op("start-kill", json!("not an object"))).unwrap();
        assert_eq!(e.value, FaultValue::default());
    }

    #[test]
    fn only_bracketed_nemesis_entries_are_fault_events() {
        assert!(FaultEvent::from_op(&nemesis_op("split-requested", json!({}))).is_none());
        let mut client = nemesis_op("start-kill", json!({}));
        client.process = Process::Client(1);
        assert!(FaultEvent::from_op(&client).is_none());
    }

    #[test]
    fn split_key_prefers_split_key_over_key() {
        let v: FaultValue =
            serde_json::from_value(json!({"targets": [], "key": "a", "split_key": "b"})).unwrap();
        assert_eq!(v.split_key(), Some("b"));
    }
}

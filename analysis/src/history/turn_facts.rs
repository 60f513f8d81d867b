//! The facts fault turns record about what they did, beside the shared fields of
//! [`FaultValue`], for the faults whose facts a checker reads back: which split job, route
//! and phase a turn acted on ([`JobFacts`]: split, move, abort-move, txn-move) and which
//! nodes a signal reached ([`ProcessFacts`]: kill, pause). `txn-move`'s own facts are
//! [`super::txn_move::TxnMoveFacts`], which include a [`JobFacts`].
//!
//! Invariant: the nemesis writes these types and the checkers read the same types back
//! (`of`), so a renamed field breaks the build rather than silently dropping an annotation.
//! Reading is lenient: facts that do not read as the type (an event written by another
//! tool) read as none, which only costs a witness its annotation.

use super::fault::{lenient_text, lenient_u64};
use super::FaultValue;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The split job a turn acted on, and where it stood. Absent facts are recorded as `null`;
/// a field of the wrong type reads as absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JobFacts {
    /// The route split or moved.
    #[serde(deserialize_with = "lenient_u64")]
    pub route_id: Option<u64>,
    /// The group the moving range goes to.
    #[serde(deserialize_with = "lenient_u64")]
    pub target_group: Option<u64>,
    /// The split job moving it.
    #[serde(deserialize_with = "lenient_u64")]
    pub job_id: Option<u64>,
    /// The job's phase when the turn acted (or gave up waiting for its aimed phase).
    #[serde(deserialize_with = "lenient_text")]
    pub phase_seen: Option<String>,
}

impl JobFacts {
    /// The job facts of an event's value (all `None` when it names none).
    pub fn of(value: &FaultValue) -> JobFacts {
        value.facts_as().unwrap_or_default()
    }
}

/// What a `start-kill` or `start-pause` records: the nodes the signal reached (`killed` or
/// `paused`, as the fault says), the leaders of the view the victims were chosen from, and
/// the groups whose leader was hit (`leaders_killed` or `leaders_paused`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcessFacts {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub killed: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused: Option<Vec<String>>,
    /// Group → its leader's node name.
    pub leaders: BTreeMap<u64, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leaders_killed: Option<Vec<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leaders_paused: Option<Vec<u64>>,
}

impl ProcessFacts {
    /// A kill turn's facts: `hit` killed, the groups of `leaders_hit` lost their leader.
    pub fn killed(hit: Vec<String>, leaders: BTreeMap<u64, String>, leaders_hit: Vec<u64>) -> Self {
        ProcessFacts {
            killed: Some(hit),
            leaders,
            leaders_killed: Some(leaders_hit),
            ..ProcessFacts::default()
        }
    }

    /// A pause turn's facts: `hit` paused, the groups of `leaders_hit` lost their leader.
    pub fn paused(hit: Vec<String>, leaders: BTreeMap<u64, String>, leaders_hit: Vec<u64>) -> Self {
        ProcessFacts {
            paused: Some(hit),
            leaders,
            leaders_paused: Some(leaders_hit),
            ..ProcessFacts::default()
        }
    }

    /// The process facts of an event's value, if they read as such.
    pub fn of(value: &FaultValue) -> Option<ProcessFacts> {
        value.facts_as()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_facts_written_beside_other_facts_read_back_the_same() {
        #[derive(Serialize)]
        struct Asked {
            cross_group: bool,
            #[serde(flatten)]
            job: JobFacts,
        }
        let job = JobFacts {
            route_id: Some(4),
            target_group: Some(2),
            job_id: Some(9),
            phase_seen: None,
        };
        let value = FaultValue::default().with_facts(Asked {
            cross_group: true,
            job: job.clone(),
        });
        let line = serde_json::to_string(&value.to_json()).unwrap();
        assert!(line.contains(r#""phase_seen":null"#), "{line}");
        let reread: FaultValue = serde_json::from_str(&line).unwrap();
        assert_eq!(JobFacts::of(&reread), job);
        assert_eq!(JobFacts::of(&FaultValue::default()), JobFacts::default());
        let odd: FaultValue =
            serde_json::from_value(serde_json::json!({"job_id": 3, "route_id": "seven"})).unwrap();
        assert_eq!(
            JobFacts::of(&odd),
            JobFacts {
                job_id: Some(3),
                ..JobFacts::default()
            },
            "a field of the wrong type reads as absent, the others still read"
        );
    }

    #[test]
    fn a_kill_records_killed_nodes_and_a_pause_paused_ones() {
        let leaders = BTreeMap::from([(1, "n1".to_string())]);
        let kill = ProcessFacts::killed(vec!["n1".into()], leaders.clone(), vec![1]);
        let json = FaultValue::default().with_facts(&kill).to_json();
        assert_eq!(
            json,
            serde_json::json!({"targets": [], "killed": ["n1"], "leaders": {"1": "n1"}, "leaders_killed": [1]})
        );
        let pause = ProcessFacts::paused(vec!["n2".into()], leaders, vec![]);
        let reread: FaultValue =
            serde_json::from_value(FaultValue::default().with_facts(&pause).to_json()).unwrap();
        assert_eq!(ProcessFacts::of(&reread), Some(pause));
        let odd: FaultValue = serde_json::from_value(serde_json::json!({"killed": true})).unwrap();
        assert_eq!(
            ProcessFacts::of(&odd),
            None,
            "a txn-move's `killed` is not a node list"
        );
    }
}

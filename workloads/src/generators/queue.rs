//! The `queue` workload: an SQS FIFO queue, the shape of elastickv's own HT-FIFO suite.
//! Over `--keys` message groups (default 8: `g0`…`g7`), a third of the operations are
//! sends of a unique body `g<i>:<seq>` (the group's next sequence number) to a random
//! group, two thirds consume: a process deletes the oldest message it received and has not deleted, or else
//! receives (up to 10 messages, hidden for [`VISIBILITY_S`] seconds). Judged by the `queue`
//! checker. The final operation is a drain through every node: deletes and receives until a
//! receive finds the queue empty a visibility timeout after the last delivery, so the
//! checker can tell a lost message. Only targets whose client has a queue support it.
//!
//! Invariants: a body is unique across the run (one sequence per group); every group that
//! was sent to is in [`Workload::touched`] (kind `queue-groups`).

use super::{OpSpec, Touched, Workload, WorkloadSpec};
use crate::client::ClientCapability;
use crate::config::{KeyDist, WorkloadConfig};
use crate::queue::{Consume, Receive, SendMessage};
use analysis::checkers::queue;
use rand::rngs::SmallRng;
use rand::RngExt;
use std::collections::BTreeSet;

pub const SPEC: WorkloadSpec =
    WorkloadSpec::new(|cfg| Box::new(QueueWorkload::new(cfg)), &[queue::NAME])
        .with_defaults(|base| WorkloadConfig {
            key_dist: KeyDist::Uniform,
            keys: 8,
            celebrities: 1,
            rate: 100.0,
            ..base
        })
        .needing(&[ClientCapability::Queue]);

/// The visibility timeout every receive asks for, in seconds: short, so that a message
/// whose delete failed comes back within the run and the drain ends soon.
pub const VISIBILITY_S: u32 = 5;
/// The share of operations that consume. A message costs a consumer two operations (its
/// receive, often alone since a FIFO group hands out one message at a time, and its
/// delete) and a sender one, so two consumes per send keep the queue from piling up.
const CONSUME_FRACTION: f64 = 2.0 / 3.0;
/// The name `test.json` records the groups under.
const TOUCHED_KIND: &str = "queue-groups";

pub struct QueueWorkload {
    /// Per group: its next sequence number.
    next_seq: Vec<u64>,
    touched: BTreeSet<String>,
}

impl QueueWorkload {
    pub fn new(cfg: &WorkloadConfig) -> QueueWorkload {
        QueueWorkload {
            next_seq: vec![0; cfg.keys.max(1) as usize],
            touched: BTreeSet::new(),
        }
    }

    fn consume(drain: bool) -> OpSpec {
        OpSpec::new(Consume {
            receive: Receive {
                visibility_s: VISIBILITY_S,
            },
            drain,
        })
    }
}

impl Workload for QueueWorkload {
    fn next_op(&mut self, rng: &mut SmallRng) -> OpSpec {
        if rng.random_bool(CONSUME_FRACTION) {
            return QueueWorkload::consume(false);
        }
        let g = rng.random_range(0..self.next_seq.len());
        let group = format!("g{g}");
        let body = format!("{group}:{}", self.next_seq[g]);
        self.next_seq[g] += 1;
        self.touched.insert(group.clone());
        OpSpec::new(SendMessage { group, body })
    }

    fn touched(&self) -> Touched {
        Touched::of_kind(TOUCHED_KIND, self.touched.clone())
    }

    /// The drain, through every node.
    fn final_ops(&self) -> Vec<OpSpec> {
        vec![QueueWorkload::consume(true)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn sends_have_unique_bodies_in_each_groups_order_and_the_final_op_drains() {
        let cfg = (SPEC.defaults)(WorkloadConfig::default());
        let mut gen = QueueWorkload::new(&cfg);
        let mut rng = SmallRng::seed_from_u64(3);
        let mut bodies = BTreeSet::new();
        let mut fs = BTreeSet::new();
        for _ in 0..2000 {
            let op = gen.next_op(&mut rng);
            fs.insert(op.f());
            if let Some(s) = op.get::<SendMessage>() {
                assert!(s.body.starts_with(&format!("{}:", s.group)), "{s:?}");
                assert!(bodies.insert(s.body.clone()), "{} twice", s.body);
            }
        }
        assert_eq!(fs.into_iter().collect::<Vec<_>>(), ["receive", "send"]);
        assert!(bodies.contains("g7:0") && bodies.contains("g0:1"));
        assert_eq!(gen.touched().kind(TOUCHED_KIND).len(), 8);
        let finals = gen.final_ops();
        assert_eq!(finals.len(), 1);
        assert!(finals[0].get::<Consume>().is_some_and(|c| c.drain));
    }
}

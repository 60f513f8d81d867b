//! `kill`: SIGKILLs a node's server (the hot group's leader, a random node, or every node)
//! and starts it again with the same data directory when healed.
//!
//! Effective when a group's leader was killed, or every node was targeted and one died.

use super::process::{start_process_fault, ProcessAction};
use super::{Ctx, Fault, Started, Style, Turn, Undo};
use analysis::history::ProcessFacts;
use futures::future::BoxFuture;
use rand::rngs::StdRng;

pub struct Kill;

const KILL: ProcessAction =
    ProcessAction { record: ProcessFacts::killed, allow_all: true, act: |ctx, node| ctx.control.kill(node), undo: |nodes| Undo::Restart { nodes } };

impl Fault for Kill {
    fn name(&self) -> &'static str {
        "kill"
    }

    fn effective_means(&self) -> &'static str {
        "a group's leader was killed, or every node was targeted and one died"
    }

    fn style(&self) -> Style {
        Style { rgb: (120, 120, 120), label: "kill" }
    }

    fn start<'a>(&'a self, ctx: &'a Ctx, turn: Turn, rng: &'a mut StdRng) -> BoxFuture<'a, Started> {
        Box::pin(start_process_fault(ctx, &KILL, turn, rng))
    }
}

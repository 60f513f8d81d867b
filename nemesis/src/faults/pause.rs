//! `pause`: freezes a node's server (the hot group's leader or a random node) and
//! unfreezes it when healed — a process that is alive but silent, unlike a kill.
//!
//! Effective when a group's leader was paused.

use super::process::{start_process_fault, ProcessAction};
use super::{Ctx, Fault, Started, Style, Turn, Undo};
use analysis::history::ProcessFacts;
use futures::future::BoxFuture;
use rand::rngs::StdRng;

pub struct Pause;

const PAUSE: ProcessAction =
    ProcessAction { record: ProcessFacts::paused, allow_all: false, act: |ctx, node| ctx.control.pause(node), undo: |nodes| Undo::Resume { nodes } };

impl Fault for Pause {
    fn name(&self) -> &'static str {
        "pause"
    }

    fn effective_means(&self) -> &'static str {
        "a group's leader was paused"
    }

    fn style(&self) -> Style {
        Style { rgb: (80, 160, 220), label: "pause" }
    }

    fn start<'a>(&'a self, ctx: &'a Ctx, turn: Turn, rng: &'a mut StdRng) -> BoxFuture<'a, Started> {
        Box::pin(start_process_fault(ctx, &PAUSE, turn, rng))
    }
}

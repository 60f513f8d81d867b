//! The compact in-memory picture of a run that the report is drawn from: one [`OpSpan`]
//! per client operation (invoke to completion), nemesis intervals, catalog snapshots and
//! the full text of the few ops the timelines show.
//!
//! A 1M-op history must fit comfortably in memory and be drawn in seconds, so client
//! operations are reduced to a few integers each while the history streams past; the
//! catalog route of each op is resolved at that moment (see [`super::catalog`]).

use super::txn_summary::TxnSummary;
use analysis::history::{CatalogSnapshot, Op};
use std::collections::HashMap;

/// How a client operation ended. Operations still pending at the end of the history are
/// `Info`: their outcome is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    Ok,
    Fail,
    Info,
}

impl Outcome {
    pub const ALL: [Outcome; 3] = [Outcome::Ok, Outcome::Fail, Outcome::Info];

    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Fail => "fail",
            Outcome::Info => "info",
        }
    }

    /// The colour used for this outcome in every plot (Jepsen's: blue, red, orange).
    pub fn rgb(self) -> (u8, u8, u8) {
        match self {
            Outcome::Ok => (66, 133, 214),
            Outcome::Fail => (214, 48, 49),
            Outcome::Info => (240, 160, 40),
        }
    }

    pub fn css(self) -> String {
        let (r, g, b) = self.rgb();
        format!("#{r:02x}{g:02x}{b:02x}")
    }
}

/// Marks "no route" in [`OpSpan::route`].
pub const NO_ROUTE: u32 = u32::MAX;
/// Marks "never completed" in [`OpSpan::complete_index`].
pub const PENDING: u64 = u64::MAX;

/// One client operation from its invocation to its completion.
#[derive(Debug, Clone, Copy)]
pub struct OpSpan {
    pub process: u64,
    pub invoke_index: u64,
    /// [`PENDING`] if the history ended before the op completed.
    pub complete_index: u64,
    /// Invocation time, ns since test start.
    pub start: u64,
    /// Completion time (the end of the history for pending ops).
    pub end: u64,
    pub outcome: Outcome,
    /// Index into [`RunModel::functions`].
    pub f: u16,
    /// Index into [`RunModel::routes`], or [`NO_ROUTE`] (no key, no catalog, key not covered).
    pub route: u32,
}

impl OpSpan {
    pub fn latency_ns(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }
}

/// A fault the nemesis applied, from its `start-<kind>` to its `stop-<kind>` event.
#[derive(Debug, Clone)]
pub struct NemesisInterval {
    pub kind: String,
    pub start: u64,
    /// End of the history if the fault was never recorded as healed.
    pub end: u64,
    pub healed: bool,
    pub targets: Vec<String>,
    /// The nemesis said the fault took effect (e.g. the partitioned node was a live leader).
    pub effective: Option<bool>,
}

/// A server process exit the node watcher recorded (`node-exit`).
#[derive(Debug, Clone)]
pub struct NodeExitMark {
    pub time: u64,
    pub index: u64,
    pub node: String,
    /// A kill fault or the teardown caused it; otherwise it is a crash.
    pub expected: bool,
    /// Status and crash line, for the mark's hover title.
    pub label: String,
}

/// A catalog version the watcher observed.
#[derive(Debug, Clone)]
pub struct CatalogEvent {
    pub time: u64,
    pub index: u64,
    pub snapshot: CatalogSnapshot,
}

/// Everything the report draws, read from one run directory.
#[derive(Debug, Default)]
pub struct RunModel {
    pub spans: Vec<OpSpan>,
    pub functions: Vec<String>,
    /// Every route id ever seen in the catalog, in first-seen order; [`OpSpan::route`]
    /// indexes this.
    pub routes: Vec<RouteInfo>,
    pub nemesis: Vec<NemesisInterval>,
    /// Catalog snapshots in history order.
    pub catalog: Vec<CatalogEvent>,
    /// Server process exits in history order.
    pub node_exits: Vec<NodeExitMark>,
    /// Full text of the ops inside the timeline windows, by history index.
    pub kept_ops: HashMap<u64, Op>,
    /// Time of the last entry of the history, ns.
    pub end_time: u64,
    /// Number of history entries read.
    pub entries: u64,
    /// Reader warnings (truncated last line, time going backwards, ...).
    pub warnings: Vec<String>,
    /// The transactions' numbers, when the history has client `txn` ops.
    pub txns: Option<TxnSummary>,
}

/// What the catalog told us about one route over the whole run.
#[derive(Debug, Clone)]
pub struct RouteInfo {
    pub id: u64,
    pub start: String,
    pub end: String,
    pub parent: Option<u64>,
    /// Groups that owned the route, in the order seen (a move adds one).
    pub groups: Vec<u64>,
    pub first_seen: u64,
    /// Last time the route was present in a snapshot (it disappears when split).
    pub last_seen: u64,
    /// Time of the first snapshot without it (`None`: present until the end).
    pub gone_at: Option<u64>,
}

impl RouteInfo {
    pub fn label(&self) -> String {
        let end = if self.end.is_empty() {
            "∞"
        } else {
            self.end.as_str()
        };
        let start = if self.start.is_empty() {
            "−∞"
        } else {
            self.start.as_str()
        };
        let groups: Vec<String> = self.groups.iter().map(|g| format!("g{g}")).collect();
        format!(
            "r{} [{}, {}) {}",
            self.id,
            short(start),
            short(end),
            groups.join("→")
        )
    }
}

/// Shortens a key for a label: control characters (split keys often end in `\0`) shown as
/// `\xNN`, and long keys keep their head and tail.
pub fn short(key: &str) -> String {
    const MAX: usize = 18;
    let visible: String = key
        .chars()
        .map(|c| {
            if c.is_control() {
                format!("\\x{:02x}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect();
    let chars: Vec<char> = visible.chars().collect();
    if chars.len() <= MAX {
        return visible;
    }
    let head: String = chars[..10].iter().collect();
    let tail: String = chars[chars.len() - 6..].iter().collect();
    format!("{head}…{tail}")
}

impl RunModel {
    pub fn count(&self, outcome: Outcome) -> usize {
        self.spans.iter().filter(|s| s.outcome == outcome).count()
    }

    pub fn function_name(&self, f: u16) -> &str {
        self.functions
            .get(f as usize)
            .map(String::as_str)
            .unwrap_or("?")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_keys_show_control_characters_and_elide_the_middle() {
        assert_eq!(short("reg/00001\u{0}"), "reg/00001\\x00");
        assert_eq!(short("hot/000000000000012345"), "hot/000000…012345");
        assert_eq!(short("k1"), "k1");
    }
}

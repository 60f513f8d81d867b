//! The vacuity guard: did the run actually test anything?
//!
//! A run whose faults never took effect, or whose workload barely ran before the first
//! fault, proves nothing even when every other checker passes. This guard is `valid` when
//! each requested nemesis kind took effect at least once (a `start-<kind>` event with
//! `effective: true`; for `kill`, with `leader: true` when the nemesis reports whether it
//! hit a leader) and the acknowledged-op throughput before the first fault reached the
//! floor, and at least one client op was acknowledged (a history whose ops all failed is
//! trivially linearizable, but tested nothing), and, when the workload attempted writes, at
//! least one write was acknowledged (reads of the initial state alone test nothing);
//! otherwise `unknown` with the reasons. It is never `invalid`: a vacuous run is not a bug
//! in the system under test.

use crate::history::{fault_events, FaultEdge, History, Op, OpType, Process};
use crate::verdict::{CheckerResult, Validity};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Checker name in `results.json`.
pub const NAME: &str = "vacuity";

/// Its registry entry (when it judges a history, how it is called).
pub mod entry;
pub use entry::CHECKER;

const NS_PER_S: f64 = 1e9;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct VacuityOptions {
    /// Nemesis kinds the run asked for (fault names such as `partition`, or `all`, see
    /// [`requested_kinds`]).
    pub nemesis: Vec<String>,
    /// Minimum acknowledged client ops per second before the first fault (0 = no floor).
    pub min_ok_ops_per_s: f64,
    /// Shortest fault-free stretch (seconds) over which throughput is measured.
    pub min_measure_s: f64,
    /// Require a kill of a leader: `Some(true)` always, `Some(false)` never, `None` when
    /// any kill event says whether its target was a leader.
    pub require_leader_kill: Option<bool>,
}

impl Default for VacuityOptions {
    fn default() -> Self {
        VacuityOptions {
            nemesis: Vec::new(),
            min_ok_ops_per_s: 0.0,
            min_measure_s: 1.0,
            require_leader_kill: None,
        }
    }
}

/// What an unexpanded `all` stands for here: the faults faultline shipped when the guard
/// was written. The harness never passes `all` (it expands it with the nemesis's registry
/// and passes the faults it ran), so a fault added to the nemesis needs no line here; a
/// nemesis test keeps every name of this list in its registry.
pub const ALL_FAULTS: &[&str] = &["partition", "kill", "pause", "loss", "split"];

/// The kinds `requested` names, with `all` expanded ([`ALL_FAULTS`]), deduplicated, in order.
pub fn requested_kinds(requested: &[String]) -> Vec<String> {
    let mut kinds: Vec<String> = Vec::new();
    for k in requested
        .iter()
        .flat_map(|k| k.split(','))
        .map(str::trim)
        .filter(|k| !k.is_empty() && *k != "none")
    {
        let expanded: &[&str] = if k == "all" {
            ALL_FAULTS
        } else {
            std::slice::from_ref(&k)
        };
        for e in expanded {
            if !kinds.iter().any(|x| x == e) {
                kinds.push(e.to_string());
            }
        }
    }
    kinds
}

/// What the history says about one nemesis kind.
#[derive(Debug, Default)]
struct KindTally {
    starts: u64,
    effective: u64,
    leader_effective: u64,
    reports_leader: bool,
    stops: u64,
    first_effective_op: Option<u64>,
}

fn tally(history: &History, kind: &str) -> KindTally {
    let mut t = KindTally::default();
    for (op, event) in fault_events(&history.ops).filter(|(_, e)| e.fault == kind) {
        if event.edge == FaultEdge::Stop {
            t.stops += 1;
            continue;
        }
        t.starts += 1;
        let leader = event.value.leader;
        t.reports_leader |= leader.is_some();
        if event.value.effective == Some(true) {
            t.effective += 1;
            t.first_effective_op.get_or_insert(op.index);
            if leader == Some(true) {
                t.leader_effective += 1;
            }
        }
    }
    t
}

/// Why `kind` did not take effect, if it did not.
fn kind_shortfall(kind: &str, t: &KindTally, opts: &VacuityOptions) -> Option<String> {
    if t.starts == 0 {
        return Some(format!("nemesis {kind} was requested but never started"));
    }
    if t.effective == 0 {
        return Some(format!(
            "nemesis {kind} started {} time(s) but never took effect",
            t.starts
        ));
    }
    let need_leader = kind == "kill" && opts.require_leader_kill.unwrap_or(t.reports_leader);
    if need_leader && t.leader_effective == 0 {
        return Some(format!(
            "nemesis kill took effect {} time(s) but never killed a leader",
            t.effective
        ));
    }
    None
}

/// The client side of the guard, one entry at a time in history order: acknowledged ops,
/// writes, and the throughput before the first fault (whose time the non-client entries
/// give before the fold starts).
pub struct ClientFold {
    first_fault: Option<u64>,
    /// Time of the first client invoke.
    begin: Option<u64>,
    /// Latest client time, and the acknowledged ops (from `begin` on) at exactly that time.
    max_time: Option<u64>,
    ok_at_max: u64,
    /// Acknowledged ops at or after `begin`, and those before the first fault.
    ok_since_begin: u64,
    ok_before_fault: u64,
    acknowledged: u64,
    writes_invoked: u64,
    writes_acked: u64,
}

impl ClientFold {
    /// A fold for a history whose non-client entries are `events`.
    pub fn new(events: &History) -> ClientFold {
        ClientFold {
            first_fault: fault_events(&events.ops)
                .find(|(_, e)| e.edge == FaultEdge::Start)
                .map(|(op, _)| op.time),
            begin: None,
            max_time: None,
            ok_at_max: 0,
            ok_since_begin: 0,
            ok_before_fault: 0,
            acknowledged: 0,
            writes_invoked: 0,
            writes_acked: 0,
        }
    }

    /// Notes `op` (any entry; only clients' count), which writes when `writes`.
    pub fn observe(&mut self, op: &Op, writes: bool) {
        if !matches!(op.process, Process::Client(_)) {
            return;
        }
        if op.kind == OpType::Invoke && self.begin.is_none() {
            self.begin = Some(op.time);
        }
        let ok = op.kind == OpType::Ok;
        let counted = ok && self.begin.is_some_and(|b| op.time >= b);
        self.note_time(op.time, counted);
        self.acknowledged += u64::from(ok);
        self.ok_since_begin += u64::from(counted);
        if counted && self.first_fault.is_some_and(|f| op.time < f) {
            self.ok_before_fault += 1;
        }
        if writes {
            self.writes_invoked += u64::from(op.kind == OpType::Invoke);
            self.writes_acked += u64::from(ok);
        }
    }

    fn note_time(&mut self, time: u64, counted_ok: bool) {
        match self.max_time {
            Some(max) if time < max => {}
            Some(max) if time == max => self.ok_at_max += u64::from(counted_ok),
            _ => {
                self.max_time = Some(time);
                self.ok_at_max = u64::from(counted_ok);
            }
        }
    }

    /// Acknowledged client ops per second between the first client invoke and the first
    /// fault (or the latest client op when there is no fault), the seconds measured and
    /// the ops counted.
    fn pre_fault_throughput(&self) -> Option<(f64, f64, u64)> {
        let begin = self.begin?;
        let (end, ok) = match self.first_fault {
            Some(fault) => (fault, self.ok_before_fault),
            // Up to (not including) the latest client time.
            None => (
                self.max_time.unwrap_or(begin),
                self.ok_since_begin - self.ok_at_max,
            ),
        };
        let ok = if end > begin { ok } else { 0 };
        let seconds = end.saturating_sub(begin) as f64 / NS_PER_S;
        Some((
            if seconds > 0.0 {
                ok as f64 / seconds
            } else {
                0.0
            },
            seconds,
            ok,
        ))
    }
}

/// The functions that change state (`docs/history-format.md`); every other client `f` reads.
pub const WRITE_FUNCTIONS: &[&str] = &[
    crate::ops::WRITE,
    crate::ops::CAS,
    crate::ops::PUT,
    crate::ops::APPEND,
    crate::ops::ADD,
];

/// The micro-op functions of a transaction that change state (list-append's `append`,
/// rw-register's `w`).
pub const WRITE_MICRO_OPS: &[&str] = &["append", "w"];

/// Whether `op` writes: a write function, or a transaction with a writing micro-op
/// (`value` its micro-ops as JSON).
pub fn writes(op: &Op, value: &serde_json::Value) -> bool {
    if op.f == crate::ops::TXN {
        let mops = value.as_array().map(Vec::as_slice).unwrap_or_default();
        return mops.iter().any(|m| {
            m.get(0)
                .and_then(serde_json::Value::as_str)
                .is_some_and(|f| WRITE_MICRO_OPS.contains(&f))
        });
    }
    WRITE_FUNCTIONS.contains(&op.f.as_str())
}

/// The guard over a whole history. A transaction's micro-ops are read through
/// [`History::txn_value`]: a reader may keep them in the history's compact table and leave
/// the op's `value` null.
pub fn check(history: &History, opts: &VacuityOptions) -> CheckerResult {
    let mut fold = ClientFold::new(history);
    for (position, op) in history.ops.iter().enumerate() {
        let is_write = op.process.client().is_some() && writes(op, &history.txn_value(position));
        fold.observe(op, is_write);
    }
    judge(history, &fold, opts)
}

/// The verdict from the fault events (in `events`, which may hold only the non-client
/// entries) and the client fold.
pub fn judge(events: &History, fold: &ClientFold, opts: &VacuityOptions) -> CheckerResult {
    let mut reasons = Vec::new();
    let mut kinds_json = serde_json::Map::new();
    let kinds = requested_kinds(&opts.nemesis);
    for kind in &kinds {
        let t = tally(events, kind);
        let shortfall = kind_shortfall(kind, &t, opts);
        kinds_json.insert(kind.clone(), json!({
            "starts": t.starts, "effective": t.effective, "leader_effective": t.leader_effective,
            "stops": t.stops, "first_effective_op": t.first_effective_op, "took_effect": shortfall.is_none(),
        }));
        reasons.extend(shortfall);
    }
    let throughput = fold.pre_fault_throughput();
    let acknowledged = fold.acknowledged;
    match throughput {
        None => reasons.push("no client operation in the history: the workload never ran".into()),
        Some(_) if acknowledged == 0 => {
            reasons.push("no client operation was acknowledged: every one failed or timed out, so the run tested nothing".into())
        }
        Some((_, secs, _)) if opts.min_ok_ops_per_s > 0.0 && secs < opts.min_measure_s => reasons.push(format!(
            "only {secs:.2} s of fault-free workload before the first fault (need {:.2} s to measure throughput)",
            opts.min_measure_s
        )),
        Some((rate, _, _)) if rate < opts.min_ok_ops_per_s => reasons.push(format!(
            "throughput before the first fault was {rate:.1} acknowledged ops/s, below the floor of {:.1}",
            opts.min_ok_ops_per_s
        )),
        _ => {}
    }
    let (writes_invoked, writes_acked) = (fold.writes_invoked, fold.writes_acked);
    if acknowledged > 0 && writes_invoked > 0 && writes_acked == 0 {
        reasons.push(format!(
            "none of the {writes_invoked} attempted writes was acknowledged: the reads saw only the initial state, so the run tested nothing"
        ));
    }
    let mut result = CheckerResult::new(if reasons.is_empty() {
        Validity::Valid
    } else {
        Validity::Unknown
    });
    if !reasons.is_empty() {
        result.reason = Some(reasons.join("; "));
    }
    result
        .counts
        .insert("requested-kinds".into(), kinds.len() as u64);
    let effective = kinds_json
        .values()
        .filter(|v| v["took_effect"] == json!(true))
        .count() as u64;
    result.counts.insert("kinds-took-effect".into(), effective);
    if let Some((_, _, ok)) = throughput {
        result.counts.insert("pre-fault-ok-ops".into(), ok);
    }
    result.counts.insert("ok-ops".into(), acknowledged);
    result
        .counts
        .insert("ok-writes".into(), writes_acked);
    result.details = json!({
        "kinds": kinds_json,
        "pre_fault_ok_ops_per_s": throughput.map(|t| t.0),
        "pre_fault_seconds": throughput.map(|t| t.1),
        "min_ok_ops_per_s": opts.min_ok_ops_per_s,
    });
    result
}

//! The `isolation` checker: Elle's transactional isolation analysis of list-append and
//! rw-register histories (ops with `f` = `"txn"`), with this project's `lost-append` rule.
//!
//! It infers version orders per key, finds the non-cycle anomalies (G1a, G1b, internal,
//! incompatible-order, duplicate-elements, ...), builds the transaction dependency graph
//! (ww, wr, rw, process and realtime edges), finds and names its cycles, and judges the
//! anomalies found against a consistency model. Missing evidence never makes a history
//! invalid: it makes it unknown. See `docs/checkers.md` § isolation.

mod cycles;
mod exercise;
mod fault_context;
mod found;
mod graph;
mod list_append;
pub mod models;
mod rw_register;
mod txn_rules;
mod txns;
mod witness;

#[cfg(test)]
mod test_gen;
#[cfg(test)]
mod tests;

use crate::history::History;
use crate::verdict::{CheckerResult, Validity};
use found::{Analysis, Explain};
use graph::{EdgeKind, Graph};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use txns::{Status, Txns};

pub use crate::history::txn::TxnModel;
pub use models::ConsistencyModel;

/// At most this many witnesses of one anomaly type are kept (all are counted).
pub const MAX_WITNESSES_PER_TYPE: usize = 8;

/// The checker's name in results.
pub const NAME: &str = "isolation";

/// Its registry entry (when it judges a history, how it is called).
pub mod entry;
pub use entry::{txn_model, CHECKER};

/// How to check: which workload the transactions are, under which consistency model, and
/// how long the cycle search may take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opts {
    pub model: TxnModel,
    pub consistency: ConsistencyModel,
    /// `None`: no limit. When the cycle search runs out of time the verdict is unknown.
    pub time_budget: Option<Duration>,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            model: TxnModel::ListAppend,
            consistency: ConsistencyModel::StrictSerializable,
            time_budget: None,
        }
    }
}

/// Checks `history`'s transactions under `opts`.
pub fn check(history: &History, opts: &Opts) -> CheckerResult {
    let start = Instant::now();
    let table = history.txn_table();
    let txns = match txns::collect(history, &table, opts.model) {
        Ok(t) => t,
        Err(e) => return unknown(format!("cannot read the transactions: {e}")),
    };
    if txns.count(Status::Ok) == 0 {
        let mut r = unknown("the history has no committed transaction: nothing to judge".into());
        exercise::record(history, &mut r);
        return r;
    }
    let (analysis, explain): (Analysis, Box<dyn Explain + '_>) = match opts.model {
        TxnModel::ListAppend => {
            let (a, o) = list_append::analyze(&txns);
            (a, Box::new(o))
        }
        TxnModel::RwRegister => {
            let (a, r) = rw_register::analyze(&txns);
            (a, Box::new(r))
        }
    };
    let prohibited = models::prohibited_by(opts.consistency);
    let variants = variant_edges(&prohibited);
    let (graph, edge_count) = build_graph(&txns, analysis.edges.clone(), &variants);
    let deadline = opts.time_budget.map(|d| start + d);
    let search = search_cycles(&graph, &variants, deadline);
    let mut result = verdict(
        &txns,
        opts,
        &prohibited,
        analysis,
        explain.as_ref(),
        &graph,
        search,
        edge_count,
    );
    fault_context::annotate(history, &mut result);
    exercise::record(history, &mut result);
    result
}

fn unknown(reason: String) -> CheckerResult {
    let mut r = CheckerResult::new(Validity::Unknown);
    r.reason = Some(reason);
    r
}

/// Which order edges the model needs: realtime when it proscribes a realtime anomaly
/// (realtime order covers process order), else process when it proscribes a process one.
fn variant_edges(prohibited: &BTreeSet<&str>) -> Vec<EdgeKind> {
    if prohibited.iter().any(|a| a.ends_with("-realtime")) {
        vec![EdgeKind::Realtime]
    } else if prohibited.iter().any(|a| a.ends_with("-process")) {
        vec![EdgeKind::Process]
    } else {
        vec![]
    }
}

fn build_graph(txns: &Txns, mut edges: Vec<graph::Edge>, variants: &[EdgeKind]) -> (Graph, usize) {
    let mut points = 0;
    if variants.contains(&EdgeKind::Realtime) {
        points = graph::realtime_edges(txns, &mut edges);
    }
    if variants.contains(&EdgeKind::Process) {
        graph::process_edges(txns, &mut edges);
    }
    let n_txn = txns.txns.len();
    (Graph::build(n_txn, n_txn + points, &edges), edges.len())
}

struct Search {
    cycles: Vec<cycles::Cycle>,
    timed_out: bool,
    components: usize,
    largest: usize,
}

fn search_cycles(g: &Graph, variants: &[EdgeKind], deadline: Option<Instant>) -> Search {
    let comp = cycles::tarjan(g, 0xff);
    let components: Vec<Vec<u32>> = cycles::nontrivial_components(&comp)
        .into_iter()
        .filter(|c| c.iter().filter(|v| g.is_txn(**v)).count() >= 2)
        .collect();
    let mut s = Search {
        cycles: vec![],
        timed_out: false,
        components: components.len(),
        largest: components.iter().map(|c| c.len()).max().unwrap_or(0),
    };
    for c in &components {
        match cycles::search_component(g, c, variants, deadline) {
            Ok(found) => s.cycles.extend(found),
            Err((found, _)) => {
                s.cycles.extend(found);
                s.timed_out = true;
                break;
            }
        }
    }
    s
}

/// Found anomalies by type name: how many, and the first witnesses of each.
type ByType = BTreeMap<String, (u64, Vec<Value>)>;

fn anomalies_by_type(
    txns: &Txns,
    explain: &dyn Explain,
    g: &Graph,
    anomalies: Vec<found::Anomaly>,
    cycles: &[cycles::Cycle],
) -> ByType {
    let mut by_type = ByType::new();
    for a in anomalies {
        tally(&mut by_type, a.name.to_string(), || a.witness);
    }
    for c in cycles {
        tally(&mut by_type, c.name.clone(), || {
            witness::cycle_witness(txns, g, explain, c)
        });
    }
    by_type
}

/// Counts one anomaly of type `name`, keeping its witness while there are few.
fn tally(by_type: &mut ByType, name: String, witness: impl FnOnce() -> Value) {
    let slot = by_type.entry(name).or_default();
    slot.0 += 1;
    if slot.1.len() < MAX_WITNESSES_PER_TYPE {
        slot.1.push(witness());
    }
}

/// Unknown on a problem with the history; invalid on a proscribed anomaly; unknown when the
/// search ran out of time, nothing was observed (no data edge: no transaction saw another,
/// Elle's empty graph) or a suspicion could not be settled (a value appended or written
/// twice to a key makes its version order unreadable: docs/checkers.md); else valid.
fn validity(analysis: &Analysis, search: &Search, violating: &[&str]) -> Validity {
    if !analysis.problems.is_empty() {
        Validity::Unknown
    } else if !violating.is_empty() {
        Validity::Invalid
    } else if search.timed_out || analysis.edges.is_empty() || !analysis.uncertain.is_empty() {
        Validity::Unknown
    } else {
        Validity::Valid
    }
}

fn reason(
    valid: Validity,
    violating: &[&str],
    opts: &Opts,
    analysis: &Analysis,
    search: &Search,
) -> Option<String> {
    match valid {
        Validity::Invalid => Some(format!(
            "{} proscribed by {}",
            violating.join(", "),
            opts.consistency
        )),
        Validity::Unknown => Some(unknown_reason(
            &analysis.problems,
            &analysis.uncertain,
            analysis.edges.is_empty(),
            search.timed_out,
        )),
        _ => None,
    }
}

#[allow(clippy::too_many_arguments)]
fn verdict(
    txns: &Txns,
    opts: &Opts,
    prohibited: &BTreeSet<&str>,
    mut analysis: Analysis,
    explain: &dyn Explain,
    g: &Graph,
    search: Search,
    edge_count: usize,
) -> CheckerResult {
    let anomalies = std::mem::take(&mut analysis.anomalies);
    let by_type = anomalies_by_type(txns, explain, g, anomalies, &search.cycles);
    let types: BTreeSet<&str> = by_type.keys().map(String::as_str).collect();
    let (not, also_not) = models::boundary(&types);
    // As Elle: the anomaly types (and witnesses) reported are those the model proscribes;
    // the boundary (`not`, `also_not`) is computed from every anomaly found.
    let (violating, allowed): (Vec<&str>, Vec<&str>) =
        types.iter().copied().partition(|t| prohibited.contains(t));
    let key_name = |k: &u32| txns.keys[*k as usize].to_json();
    let valid = validity(&analysis, &search, &violating);
    let mut r = CheckerResult::new(valid);
    r.reason = reason(valid, &violating, opts, &analysis, &search);
    for (name, n) in [
        ("committed", txns.count(Status::Ok)),
        ("aborted", txns.count(Status::Fail)),
        ("info", txns.count(Status::Info)),
        ("keys", txns.keys.len() as u64),
        ("edges", edge_count as u64),
    ] {
        r.counts.insert(name.to_string(), n);
    }
    let mut notes = analysis.notes.clone();
    if let Some(note) = unread_note(txns, &analysis.unread_keys) {
        notes.push(note);
    }
    let anomaly_counts: BTreeMap<&str, u64> =
        by_type.iter().map(|(k, v)| (k.as_str(), v.0)).collect();
    r.details = json!({
        "model": opts.model.as_str(),
        "consistency_model": opts.consistency.as_str(),
        "anomaly_types": violating,
        "allowed_anomaly_types": allowed,
        "not": not.iter().map(|m| m.as_str()).collect::<Vec<_>>(),
        "also_not": also_not.iter().map(|m| m.as_str()).collect::<Vec<_>>(),
        "anomaly_counts": anomaly_counts,
        "counts": r.counts,
        "unread_keys": analysis.unread_keys.iter().take(20).map(key_name).collect::<Vec<_>>(),
        "notes": notes,
        "problems": analysis.problems,
        "uncertain": analysis.uncertain,
        "cycle_search": {"components": search.components, "largest_component": search.largest, "timed_out": search.timed_out},
    });
    r.anomalies = by_type
        .into_iter()
        .filter(|(t, _)| prohibited.contains(&t.as_str()))
        .flat_map(|(_, (_, w))| w)
        .collect();
    r
}

fn unknown_reason(
    problems: &[String],
    uncertain: &[String],
    no_edges: bool,
    timed_out: bool,
) -> String {
    let mut parts = Vec::new();
    if timed_out {
        parts.push("the cycle search ran out of its time budget before finishing".to_string());
    }
    parts.extend(problems.iter().cloned());
    parts.extend(uncertain.iter().cloned());
    if no_edges {
        parts.push(
            "no dependency between transactions could be inferred (no committed read observed another transaction's write, or the absence of one): nothing was tested"
                .to_string(),
        );
    }
    parts.join("; ")
}

/// The note on keys written and never read: their writes add only ww edges, which any
/// order satisfies, so they do not make the verdict unknown; but a lost write to them
/// cannot be seen.
fn unread_note(txns: &Txns, unread: &[u32]) -> Option<String> {
    if unread.is_empty() {
        return None;
    }
    let shown: Vec<String> = unread
        .iter()
        .take(5)
        .map(|k| txns.keys[*k as usize].to_string())
        .collect();
    let more = if unread.len() > 5 {
        format!(" and {} more", unread.len() - 5)
    } else {
        String::new()
    };
    Some(format!(
        "{} key(s) written by committed transactions were never read ({}{more}): writes nobody read order freely, so they cannot close a cycle, but a lost append (write) to them cannot be seen",
        unread.len(),
        shown.join(", ")
    ))
}

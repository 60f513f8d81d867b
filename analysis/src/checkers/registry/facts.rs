//! What the registry decides from: [`RunFacts`] (a run's options and its db's declaration,
//! or what a bare history file holds) and [`CheckOptions`] (what the user asked of the
//! checkers: `--model`, `--consistency-model`, budgets).
//!
//! Invariant: facts are gathered once, before any checker runs, and never change after.

use super::super::{isolation, linearizable, set_full, split, zset};
use crate::catalog::is_catalog_event;
use crate::history::txn::TxnModel;
use crate::history::{events, fault_events, CommitMeta, FaultEdge, History, Op, Process};
use std::collections::BTreeSet;
use std::time::Duration;

/// Where the facts come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// A run: its options and its db's declaration.
    Run,
    /// A history file on its own: what it holds.
    Evidence,
}

/// Which client-op checker `--model` asks for (`auto`: the functions in the history decide).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ModelChoice {
    #[default]
    Auto,
    Linearizable(linearizable::Model),
    Set,
    Isolation(TxnModel),
    /// Redis sorted sets (`zset`).
    Zset,
    /// An SQS FIFO-like queue (`queue`).
    Queue,
    /// Object bodies (`objects`).
    Objects,
}

impl ModelChoice {
    /// `auto`, a checker's `--model` name (see [`super::Checker::models`]) or a library
    /// alias (`set-full`, any linearizability model name).
    pub fn from_name(name: &str) -> Option<ModelChoice> {
        match name {
            "auto" => Some(ModelChoice::Auto),
            "set" | "set-full" => Some(ModelChoice::Set),
            "zset" => Some(ModelChoice::Zset),
            "queue" => Some(ModelChoice::Queue),
            "objects" => Some(ModelChoice::Objects),
            other => match other.parse::<TxnModel>() {
                Ok(m) => Some(ModelChoice::Isolation(m)),
                Err(_) => linearizable::Model::from_name(other).map(ModelChoice::Linearizable),
            },
        }
    }
}

/// What the user asked of the checkers. The default is what `faultline analyze` does
/// without options.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    pub model: ModelChoice,
    /// The initial value of every register (bare files: `--initial` or the format's default).
    pub initial: serde_json::Value,
    /// Linearizability's budgets (`model` and `initial` are set per history).
    pub linearizable: linearizable::LinearizableOptions,
    /// Set-full for a bare file (a run's comes from its store's promise).
    pub set_full: set_full::SetFullOptions,
    /// Isolation: the consistency model to check (`--consistency-model`).
    pub consistency: isolation::ConsistencyModel,
    /// Zset: the whole-key search's budget.
    pub zset: zset::ZsetOptions,
    /// Isolation: the cycle search's wall-time budget (`None`: no limit).
    pub isolation_time_budget: Option<Duration>,
}

/// What the checkers may need to know about a history besides its ops.
#[derive(Debug, Clone)]
pub struct RunFacts {
    pub basis: Basis,
    /// The run's workload (`hotspot`, `register`, `set`, ...); empty for evidence.
    pub workload: String,
    /// The checkers the run's workload declares as judging its client operations
    /// (`workloads::generators::WorkloadSpec::checkers`); empty for evidence.
    pub judged_by: Vec<String>,
    /// Nemesis kinds requested (a run) or started (evidence).
    pub nemesis: Vec<String>,
    /// The store's name, for reasons.
    pub store: String,
    /// The store promises linearizable reads.
    pub linearizable_reads: bool,
    /// Commit metadata that attributes writes to route epochs (group, term, route, epoch).
    pub commit_meta: bool,
    /// A versioned route catalog.
    pub catalog: bool,
    /// The store splits ranges at all.
    pub splits: bool,
    /// Splits are expected: a hotspot workload with auto-split on, or the split nemesis
    /// (evidence: the split nemesis started, or the catalog changed).
    pub splits_expected: bool,
    /// Keys of the hot range (the workload's hot prefix), for the split checker.
    pub hot_prefix: Option<String>,
    /// The store's split cooldown in seconds.
    pub split_cooldown_s: Option<f64>,
    /// faultline ran the nodes and watched their processes (evidence: lifecycle events).
    pub lifecycle_watched: bool,
    /// How the nodes ran (`docker`, `netns`, `external`, `in-process`), for reasons; empty
    /// for evidence.
    pub cluster: String,
    /// The client functions the history holds (evidence; empty for a run, whose workload
    /// says which checkers judge it).
    pub functions: BTreeSet<String>,
    /// The history holds at least one entry (evidence).
    pub has_entries: bool,
    /// What the user asked of the checkers.
    pub options: CheckOptions,
}

impl RunFacts {
    /// The facts a history file holds on its own: commit metadata and catalog
    /// observations, splits (the split nemesis started, or the catalog changed), the
    /// faults that started, node-lifecycle events, the client functions.
    pub fn from_evidence(history: &History) -> RunFacts {
        let started: BTreeSet<String> = fault_events(&history.ops)
            .filter(|(_, e)| e.edge == FaultEdge::Start)
            .map(|(_, e)| e.fault)
            .collect();
        let catalog = history.ops.iter().any(is_catalog_event);
        let lifecycle_event = |o: &Op| {
            o.process == Process::Watcher && (o.f == events::NODE_WATCH || o.f == events::NODE_EXIT)
        };
        RunFacts {
            basis: Basis::Evidence,
            workload: String::new(),
            judged_by: Vec::new(),
            splits_expected: catalog
                && (started.contains(split::events::SPLIT_FAULT) || catalog_changed(history)),
            nemesis: started.into_iter().collect(),
            store: "the store".into(),
            linearizable_reads: true,
            commit_meta: history
                .ops
                .iter()
                .any(|o| o.meta.as_deref().is_some_and(attributes_epochs)),
            catalog,
            splits: catalog,
            hot_prefix: None,
            split_cooldown_s: None,
            lifecycle_watched: history.ops.iter().any(lifecycle_event),
            cluster: String::new(),
            functions: client_functions(history),
            has_entries: !history.is_empty(),
            options: CheckOptions::default(),
        }
    }

    /// The same facts with `options`.
    pub fn with_options(mut self, options: CheckOptions) -> RunFacts {
        self.options = options;
        self
    }

    /// The history holds a client op of any of `functions`.
    pub fn holds_any(&self, functions: &[&str]) -> bool {
        functions.iter().any(|f| self.functions.contains(*f))
    }
}

fn client_functions(history: &History) -> BTreeSet<String> {
    let mut fs = BTreeSet::new();
    for op in history.ops.iter().filter(|o| o.process.client().is_some()) {
        if !fs.contains(op.f.as_str()) {
            fs.insert(op.f.to_string());
        }
    }
    fs
}

/// Commit metadata epoch-authority can use: a log index or a serving node alone (what
/// elastickv's RawPut and faultline's leader reads record) attributes nothing to an epoch.
fn attributes_epochs(meta: &CommitMeta) -> bool {
    meta.group.is_some()
        || meta.term.is_some()
        || meta.route_id.is_some()
        || meta.route_epoch.is_some()
        || meta.catalog_version.is_some()
}

/// The watcher saw more than one distinct set of routes.
fn catalog_changed(history: &History) -> bool {
    let mut first: Option<&serde_json::Value> = None;
    for op in history.ops.iter().filter(|o| is_catalog_event(o)) {
        let routes = &op.value["routes"];
        match first {
            None => first = Some(routes),
            Some(f) if f != routes => return true,
            Some(_) => {}
        }
    }
    false
}

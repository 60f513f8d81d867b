//! Reading a run directory: `results.json` (the verdict), `test.json` (the options) and
//! `history.jsonl`, streamed into a [`RunModel`].

use super::catalog::RouteResolver;
use super::model::{NemesisInterval, NodeExitMark, OpSpan, Outcome, RunModel, NO_ROUTE, PENDING};
use super::txn_summary::TxnSummaryBuilder;
use analysis::formats::jsonl::JsonlReader;
use analysis::history::{events, CatalogSnapshot, FaultEdge, FaultEvent, Op, OpType, Process};
use analysis::verdict::Verdict;
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::io::BufReader;
use std::ops::RangeInclusive;
use std::path::Path;

/// Reads `results.json` if present. A run still in progress (or killed) has none.
pub fn read_verdict(run_dir: &Path) -> Result<Option<Verdict>> {
    let path = run_dir.join("results.json");
    if !path.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let verdict = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a faultline verdict", path.display()))?;
    Ok(Some(verdict))
}

/// Reads `test.json` if present, as free-form JSON.
pub fn read_options(run_dir: &Path) -> Result<Option<serde_json::Value>> {
    let path = run_dir.join("test.json");
    if !path.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let value =
        serde_json::from_str(&text).with_context(|| format!("{}: invalid JSON", path.display()))?;
    Ok(Some(value))
}

/// Streams `history.jsonl` into a [`RunModel`], keeping the full text of ops whose index
/// lies in one of `keep` (the timeline windows).
pub fn read_history(run_dir: &Path, keep: &[RangeInclusive<u64>]) -> Result<RunModel> {
    let path = run_dir.join("history.jsonl");
    let file =
        std::fs::File::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
    let source = path.display().to_string();
    let mut reader = JsonlReader::new(BufReader::with_capacity(1 << 20, file), &source);
    let mut builder = Builder::new(keep);
    for op in reader.by_ref() {
        builder.accept(op.map_err(anyhow::Error::new)?);
    }
    let mut model = builder.finish();
    model.warnings.extend(reader.into_report().warnings);
    Ok(model)
}

/// Folds history entries into a [`RunModel`] one at a time.
pub struct Builder<'k> {
    keep: &'k [RangeInclusive<u64>],
    model: RunModel,
    resolver: RouteResolver,
    function_ids: HashMap<String, u16>,
    /// Per client process: the span (position in `model.spans`) of its open invocation,
    /// with the invocation itself (kept for the timeline if the completion falls in a
    /// window while the invocation does not).
    open: HashMap<u64, (usize, Op)>,
    open_faults: Vec<NemesisInterval>,
    txns: TxnSummaryBuilder,
}

impl<'k> Builder<'k> {
    pub fn new(keep: &'k [RangeInclusive<u64>]) -> Self {
        Builder {
            keep,
            model: RunModel::default(),
            resolver: RouteResolver::default(),
            function_ids: HashMap::new(),
            open: HashMap::new(),
            open_faults: Vec::new(),
            txns: TxnSummaryBuilder::default(),
        }
    }

    pub fn accept(&mut self, op: Op) {
        self.model.entries += 1;
        self.model.end_time = self.model.end_time.max(op.time);
        if self.kept(op.index) {
            self.model.kept_ops.insert(op.index, op.clone());
        }
        match op.process {
            Process::Client(p) => self.client_op(p, op),
            Process::Nemesis => self.nemesis_event(op),
            Process::Watcher => self.watcher_event(op),
        }
    }

    fn kept(&self, index: u64) -> bool {
        self.keep.iter().any(|r| r.contains(&index))
    }

    fn function_id(&mut self, f: &str) -> u16 {
        if let Some(&id) = self.function_ids.get(f) {
            return id;
        }
        let id = u16::try_from(self.model.functions.len()).unwrap_or(u16::MAX);
        if id != u16::MAX {
            self.model.functions.push(f.to_string());
            self.function_ids.insert(f.to_string(), id);
        }
        id
    }

    fn client_op(&mut self, process: u64, op: Op) {
        // The JSON Lines reader (JSON form) fills a transaction's `value` with its micro-ops.
        self.txns.accept(&op, &op.value);
        if op.kind == OpType::Invoke {
            let f = self.function_id(&op.f);
            self.model.spans.push(OpSpan {
                process,
                invoke_index: op.index,
                complete_index: PENDING,
                start: op.time,
                end: op.time,
                outcome: Outcome::Info,
                f,
                route: NO_ROUTE,
            });
            self.open.insert(process, (self.model.spans.len() - 1, op));
            return;
        }
        // The reader validated that every completion follows an invoke of its process.
        let Some((pos, invoke)) = self.open.remove(&process) else {
            return;
        };
        if self.kept(op.index) && !self.kept(invoke.index) {
            self.model.kept_ops.insert(invoke.index, invoke.clone());
        }
        let key = op.key.or(invoke.key);
        let route = match &key {
            Some(k) => self.resolver.resolve(pos, op.time, k),
            None => NO_ROUTE,
        };
        let span = &mut self.model.spans[pos];
        span.complete_index = op.index;
        span.end = op.time;
        span.route = route;
        span.outcome = match op.kind {
            OpType::Ok => Outcome::Ok,
            OpType::Fail => Outcome::Fail,
            _ => Outcome::Info,
        };
    }

    fn nemesis_event(&mut self, op: Op) {
        let Some(FaultEvent { edge, fault, value }) = FaultEvent::from_op(&op) else {
            return;
        };
        if edge == FaultEdge::Start {
            self.open_faults.push(NemesisInterval {
                kind: fault,
                start: op.time,
                end: op.time,
                healed: false,
                targets: value.targets,
                effective: value.effective,
            });
        } else if let Some(pos) = self.open_faults.iter().position(|f| f.kind == fault) {
            let mut interval = self.open_faults.remove(pos);
            interval.end = op.time;
            interval.healed = true;
            if let Some(e) = value.effective {
                interval.effective = Some(interval.effective.unwrap_or(false) || e);
            }
            self.model.nemesis.push(interval);
        }
    }

    fn watcher_event(&mut self, op: Op) {
        if op.f == events::NODE_EXIT {
            self.model.node_exits.push(node_exit_mark(&op));
            return;
        }
        if op.f != events::CATALOG {
            return;
        }
        match serde_json::from_value::<CatalogSnapshot>(op.value) {
            Ok(snapshot) => self.resolver.add_snapshot(op.time, op.index, snapshot),
            Err(e) => {
                const MAX_CATALOG_WARNINGS: usize = 5;
                if self.model.warnings.len() < MAX_CATALOG_WARNINGS {
                    self.model.warnings.push(format!(
                        "history entry {}: catalog event ignored: {e}",
                        op.index
                    ));
                }
            }
        }
    }

    pub fn finish(mut self) -> RunModel {
        let end = self.model.end_time;
        for (_, (pos, invoke)) in self.open.drain() {
            self.model.spans[pos].end = end;
            self.txns.never_completed(&invoke, &invoke.value);
        }
        for mut fault in self.open_faults.drain(..) {
            fault.end = end;
            self.model.nemesis.push(fault);
        }
        self.model.nemesis.sort_by_key(|f| f.start);
        let spans = &mut self.model.spans;
        let (routes, catalog) = self.resolver.finish(|pos, slot| spans[pos].route = slot);
        self.model.routes = routes;
        self.model.catalog = catalog;
        self.model.txns = self.txns.finish();
        self.model
    }
}

/// The timeline mark of a `node-exit` event: who, whether it was asked for, and why.
fn node_exit_mark(op: &Op) -> NodeExitMark {
    let v = &op.value;
    let node = analysis::checkers::crashes::exit_node(op)
        .unwrap_or("?")
        .to_string();
    let expected = v.get("expected").and_then(|e| e.as_bool()).unwrap_or(false);
    let status = analysis::checkers::crashes::exit_status(op);
    let what = if expected {
        "exited as asked"
    } else {
        "exited on its own"
    };
    let why = v
        .get("crash_line")
        .and_then(|l| l.as_str())
        .map(|l| format!(": {l}"))
        .unwrap_or_default();
    NodeExitMark {
        time: op.time,
        index: op.index,
        label: format!("{node} {what} ({status}){why}"),
        node,
        expected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn op(
        index: u64,
        time: u64,
        kind: OpType,
        process: Process,
        f: &str,
        key: Option<&str>,
        value: serde_json::Value,
    ) -> Op {
        Op {
            index,
            kind,
            process,
            f: f.into(),
            key: key.map(Into::into),
            value,
            time,
            node: None,
            error: None,
            meta: None,
        }
    }

    /// A write that completes, a catalog, a partition started and healed, a read left
    /// pending and a read that fails.
    fn sample_history() -> Vec<Op> {
        use OpType::*;
        let catalog = json!({"version": 1, "routes": [{"id": 1, "start": "", "end": "", "group": 1, "state": "ACTIVE"}]});
        vec![
            op(
                0,
                0,
                Invoke,
                Process::Client(0),
                "write",
                Some("k"),
                json!(5),
            ),
            op(1, 5, Info, Process::Watcher, "catalog", None, catalog),
            op(
                2,
                10,
                Info,
                Process::Nemesis,
                "start-partition",
                None,
                json!({"targets": ["n1"], "effective": true}),
            ),
            op(3, 20, Ok, Process::Client(0), "write", Some("k"), json!(5)),
            op(
                4,
                30,
                Invoke,
                Process::Client(1),
                "read",
                Some("k"),
                json!(null),
            ),
            op(
                5,
                40,
                Info,
                Process::Nemesis,
                "stop-partition",
                None,
                json!({"targets": ["n1"]}),
            ),
            op(
                6,
                50,
                Invoke,
                Process::Client(0),
                "read",
                Some("k"),
                json!(null),
            ),
            op(
                7,
                60,
                Fail,
                Process::Client(0),
                "read",
                Some("k"),
                json!(null),
            ),
        ]
    }

    #[test]
    fn folds_ops_faults_and_catalog_into_the_model() {
        let ops = sample_history();
        let keep = [3..=3];
        let mut builder = Builder::new(&keep);
        ops.into_iter().for_each(|o| builder.accept(o));
        let model = builder.finish();
        assert_eq!(model.spans.len(), 3);
        let (write, pending, failed) = (&model.spans[0], &model.spans[1], &model.spans[2]);
        assert_eq!(
            (write.outcome, write.latency_ns(), write.route),
            (Outcome::Ok, 20, 0)
        );
        assert_eq!(
            (pending.complete_index, pending.outcome, pending.end),
            (PENDING, Outcome::Info, 60)
        );
        assert_eq!(failed.outcome, Outcome::Fail);
        assert_eq!(model.nemesis.len(), 1);
        assert_eq!(
            (
                model.nemesis[0].start,
                model.nemesis[0].end,
                model.nemesis[0].healed
            ),
            (10, 40, true)
        );
        assert_eq!(model.routes.len(), 1);
        // The completion at index 3 is in a window: its invocation (index 0) is kept too.
        let mut kept: Vec<u64> = model.kept_ops.keys().copied().collect();
        kept.sort();
        assert_eq!(kept, vec![0, 3]);
    }
}

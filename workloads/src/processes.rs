//! Jepsen's interpreter: a fixed number of worker slots, each running one client process
//! at a time against the node it is bound to (slot `i` → node `i mod n`). A process runs
//! one operation at a time: record the invocation, call, record the completion. A process
//! whose operation ended `info` (outcome unknown) may still have that operation in flight,
//! so it is retired and the slot continues as a fresh process with the next unused number
//! and a fresh connection. Starts follow one global schedule of `rate` ops/s with jitter
//! ([`crate::rate`]).
//!
//! Stopping: after `time_limit` no new operation starts and in-flight ones finish (each call
//! has its own deadline). On cancellation, in-flight calls are abandoned and recorded as
//! `cancelled` (indeterminate for mutations), so no invoked operation is left without a
//! completion.

use crate::client::{CallError, Connector, KvTarget, NodeEndpoint};
use crate::config::WorkloadConfig;
use crate::execute::{completion_entry, execute, invoke_entry, Completion};
use crate::generators::{OpSpec, Touched, Workload};
use crate::rate::RateLimiter;
use crate::stats::{Stats, StatsSnapshot};
use analysis::history::{HistorySink, OpType};
use anyhow::{bail, Context};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Where the processes run and report.
#[derive(Clone)]
pub struct ProcessContext {
    pub nodes: Vec<NodeEndpoint>,
    pub connector: Arc<dyn Connector>,
    pub sink: Arc<dyn HistorySink>,
    pub stats: Arc<Stats>,
    pub cancel: CancellationToken,
}

/// What a finished workload run reports to the runner.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WorkloadSummary {
    /// Counts of this run.
    pub stats: StatsSnapshot,
    /// Worker slots (initial processes).
    pub processes: u64,
    /// The first process number not used by the workload (final reads start here).
    pub next_process: u64,
    /// Keys and ranges the workload touched (recorded in `test.json`).
    pub touched: Touched,
    /// The workload's final operations ([`Workload::final_ops`]), run by the final reads;
    /// not recorded (the final reads' own report and the history say what they did).
    #[serde(skip)]
    pub final_ops: Vec<OpSpec>,
    pub elapsed_s: f64,
    /// True when the run was cut short by cancellation.
    pub cancelled: bool,
}

struct Generator {
    workload: Box<dyn Workload>,
    rng: SmallRng,
}

struct Shared {
    ctx: ProcessContext,
    generator: Mutex<Generator>,
    limiter: RateLimiter,
    next_process: AtomicU64,
    stop_at: Instant,
    seed: u64,
}

impl Shared {
    fn next_op(&self) -> OpSpec {
        let mut g = self.generator.lock().unwrap_or_else(|p| p.into_inner());
        let Generator { workload, rng } = &mut *g;
        workload.next_op(rng)
    }
}

/// Runs `workload` with `cfg`'s concurrency, rate and time limit until the time limit
/// passes or `ctx.cancel` fires.
pub async fn run_processes(
    cfg: &WorkloadConfig,
    workload: Box<dyn Workload>,
    ctx: ProcessContext,
) -> anyhow::Result<WorkloadSummary> {
    cfg.validate()?;
    if ctx.nodes.is_empty() {
        bail!("no nodes to run the workload against");
    }
    let processes = cfg.concurrency.processes(ctx.nodes.len());
    if processes == 0 {
        bail!("--concurrency {} gives no processes", cfg.concurrency);
    }
    for node in &ctx.nodes {
        ctx.connector
            .connect(node)
            .with_context(|| format!("cannot make a client for node {}", node.name))?;
    }
    let started = Instant::now();
    let before = ctx.stats.snapshot();
    let shared = Arc::new(Shared {
        generator: Mutex::new(Generator {
            workload,
            rng: SmallRng::seed_from_u64(cfg.seed),
        }),
        limiter: RateLimiter::new(cfg.rate),
        next_process: AtomicU64::new(processes as u64),
        stop_at: started + cfg.time_limit(),
        seed: cfg.seed,
        ctx,
    });
    let mut workers = JoinSet::new();
    for slot in 0..processes {
        workers.spawn(run_slot(shared.clone(), slot));
    }
    let mut first_error = None;
    while let Some(joined) = workers.join_next().await {
        let result = joined.map_err(anyhow::Error::from).and_then(|r| r);
        if let Err(e) = result {
            first_error.get_or_insert(e);
        }
    }
    if let Some(e) = first_error {
        return Err(e.context("a workload process failed"));
    }
    let (touched, final_ops) = {
        let g = shared.generator.lock().unwrap_or_else(|p| p.into_inner());
        (g.workload.touched(), g.workload.final_ops())
    };
    Ok(WorkloadSummary {
        stats: shared.ctx.stats.snapshot().since(&before),
        processes: processes as u64,
        next_process: shared.next_process.load(Ordering::SeqCst),
        touched,
        final_ops,
        elapsed_s: started.elapsed().as_secs_f64(),
        cancelled: shared.ctx.cancel.is_cancelled(),
    })
}

/// One worker slot: a succession of processes bound to one node.
async fn run_slot(shared: Arc<Shared>, slot: usize) -> anyhow::Result<()> {
    let ctx = &shared.ctx;
    let node = &ctx.nodes[slot % ctx.nodes.len()];
    let mut process = slot as u64;
    let mut client: Arc<dyn KvTarget> = ctx.connector.connect(node)?;
    let mut jitter_rng = SmallRng::seed_from_u64(
        shared.seed ^ (slot as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
    );
    loop {
        if ctx.cancel.is_cancelled() {
            break;
        }
        let start_at =
            shared.limiter.reserve(Instant::now()) + shared.limiter.jitter(jitter_rng.random());
        if start_at >= shared.stop_at {
            break;
        }
        // tokio's timer rounds a deadline up to its next 1 ms tick, so sleeping until a
        // slot that is already due would still cost up to 1 ms per operation.
        if start_at > Instant::now() {
            tokio::select! {
                _ = tokio::time::sleep_until(start_at) => {}
                _ = ctx.cancel.cancelled() => break,
            }
        }
        // A store that answers at once (the null store) would otherwise keep this worker
        // thread forever; this yields to the other processes once tokio's budget is spent.
        tokio::task::consume_budget().await;
        let spec = shared.next_op().bind(&*client);
        let outcome = invoke_and_complete(ctx, process, &node.name, &*client, &spec).await;
        if outcome == OpType::Info {
            process = shared.next_process.fetch_add(1, Ordering::SeqCst);
            client = ctx.connector.connect(node)?;
            ctx.stats.record_retirement();
        }
    }
    Ok(())
}

/// Records the invocation, performs the call (abandoning it on cancellation), records the
/// completion; returns the completion's type.
pub async fn invoke_and_complete(
    ctx: &ProcessContext,
    process: u64,
    node: &str,
    client: &dyn KvTarget,
    spec: &OpSpec,
) -> OpType {
    ctx.sink.record(invoke_entry(process, node, spec));
    ctx.stats.record_invoke();
    let completion = tokio::select! {
        biased;
        c = execute(client, spec) => c,
        _ = ctx.cancel.cancelled() => Completion::failed(spec, &CallError::cancelled(spec.call_kind())),
    };
    let kind = completion.kind;
    ctx.sink
        .record(completion_entry(process, node, spec, completion));
    ctx.stats.record_completion(kind);
    kind
}

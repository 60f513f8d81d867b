//! The phases of one run, in order, with Ctrl-C handling: an interrupt cancels whatever
//! phase is running, after which the run still heals, tears down, flushes the history and
//! writes a verdict (at best `unknown`).

use super::analysis_phase::{self, RunFacts};
use super::logging;
use super::plan::Plan;
use super::record::{RunRecord, TestRecord, Versions};
use super::sink::JsonlSink;
use super::store::{write_json, RunDir};
use crate::cluster::{sweep, Cluster};
use crate::image;
use analysis::history::History;
use analysis::verdict::Validity;
use anyhow::{Context, Result};
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;
use workloads::client::NodeEndpoint;

/// Runs `fut` unless `interrupt` fires first (then `None`).
pub(super) async fn unless_interrupted<T>(
    interrupt: &CancellationToken,
    fut: impl Future<Output = T>,
) -> Option<T> {
    tokio::select! {
        _ = interrupt.cancelled() => None,
        v = fut => Some(v),
    }
}

/// Cancels `token` on the first Ctrl-C (SIGINT) or SIGTERM; a second one exits at once
/// (leftovers are swept by the next run or `faultline cleanup`).
fn install_interrupt_handler(token: CancellationToken) {
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        for n in 0..2 {
            let term_recv = async {
                match term.as_mut() {
                    Some(t) => {
                        t.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term_recv => {}
            }
            if n == 0 {
                eprintln!("\nfaultline: interrupted — healing, tearing down and writing a verdict (interrupt again to abort)");
                tracing::warn!("interrupted: healing, tearing down and writing a verdict");
                token.cancel();
            } else {
                eprintln!("faultline: aborted; run `faultline cleanup` to remove the cluster");
                std::process::exit(i32::from(crate::exit::INTERNAL));
            }
        }
    });
}

/// A run stopped before its cluster ran: the exit it ends with is already decided (its
/// `results.json` written).
type Stopped = Result<Validity>;

/// The whole run. Returns the verdict's validity; errors are internal errors (255) or
/// bad arguments (254).
pub async fn run(plan: Plan) -> Result<Validity> {
    let interrupt = CancellationToken::new();
    install_interrupt_handler(interrupt.clone());
    let docker_cluster = plan.spec.cluster == crate::db::ClusterKind::Docker;
    let (run, mut test_json) = open_run(&plan, docker_cluster).await?;
    let started = Instant::now();
    let image = match node_image(&plan, &run, &interrupt, docker_cluster).await {
        Ok(image) => image,
        Err(stopped) => return stopped,
    };
    test_json.image = Some(image.clone());
    write_json(&run.test_json(), &test_json)?;
    let sink = match sweep_and_open_history(&plan, &run, docker_cluster).await {
        Ok(sink) => sink,
        Err(stopped) => return stopped,
    };
    let run_id = format!(
        "fl{:x}",
        (u64::from(std::process::id()) << 20) ^ (plan.seed & 0xfffff)
    );
    let cluster = match start_cluster(&plan, &run, &run_id, image.as_ref(), &sink, &interrupt).await
    {
        Ok(cluster) => cluster,
        Err(stopped) => return stopped,
    };
    test_json.cluster = Some(cluster.describe());
    write_json(&run.test_json(), &test_json)?;

    let outcome = run_cluster(&plan, &cluster, &sink, &run, &interrupt).await;
    // Teardown happens whatever the phases did.
    tear_down(&plan, cluster.as_ref(), &run, &run_id, &interrupt).await;
    // What the cluster and an in-process store hold is freed before the analysis.
    drop(cluster);
    plan.db.forget_data();
    return_free_memory();
    let mut problems = match outcome {
        Ok(report) => {
            test_json.phases = Some(report.json);
            report.problems
        }
        Err(e) => {
            tracing::error!("run failed: {e:#}");
            vec![format!("the run failed: {e:#}")]
        }
    };
    if interrupt.is_cancelled() {
        problems.push("the run was interrupted (Ctrl-C/SIGTERM)".into());
    }
    if let Some(e) = sink.finish() {
        problems.push(format!(
            "history.jsonl could not be written completely: {e}"
        ));
    }
    record_cost(&mut test_json, started);
    write_json(&run.test_json(), &test_json)?;
    analyse_and_report(&plan, &run, sink, problems).await
}

/// Checks what the run needs (the Docker engine, root for netns), creates its directory
/// and log, and writes the first `test.json`.
async fn open_run(plan: &Plan, docker_cluster: bool) -> Result<(RunDir, RunRecord)> {
    let engine = if docker_cluster {
        crate::docker::check_engine().await?
    } else {
        format!("not used (--cluster {})", plan.spec.cluster.name())
    };
    if plan.spec.cluster == crate::db::ClusterKind::Netns {
        crate::cluster::netns::require_root()?;
    }
    let run = RunDir::create(&plan.spec.store, &plan.test_name)?;
    logging::init(&run.log())?;
    tracing::info!("run directory {}", run.dir.display());
    for warning in plan.warnings() {
        tracing::warn!("{warning}");
        eprintln!("faultline: warning: {warning}");
    }
    let test_json = RunRecord {
        test: TestRecord::of(plan),
        versions: Versions {
            faultline: env!("CARGO_PKG_VERSION"),
            git_commit: git_commit().await,
            docker_engine: engine,
        },
        run_dir: run.dir.clone(),
        started_utc: run.timestamp.clone(),
        image: None,
        cluster: None,
        phases: None,
        wall_time_s: None,
        harness_cpu_s: None,
        harness_cpu_share: None,
    };
    write_json(&run.test_json(), &test_json)?;
    Ok((run, test_json))
}

/// The node image of a Docker cluster (`None` for every other cluster).
async fn node_image(
    plan: &Plan,
    run: &RunDir,
    interrupt: &CancellationToken,
    docker_cluster: bool,
) -> std::result::Result<Option<image::NodeImage>, Stopped> {
    if !docker_cluster {
        return Ok(None);
    }
    let building = super::launch::node_image(
        plan.db.as_ref(),
        plan.spec.image.as_deref(),
        plan.spec.db_binary.as_deref(),
    );
    match unless_interrupted(interrupt, building).await {
        Some(Ok(image)) => Ok(Some(image)),
        Some(Err(e)) => Err(fail_before_any_op(
            plan,
            run,
            e.context("building the node image"),
        )),
        None => Err(finish_without_cluster(
            plan,
            run,
            "interrupted while building the image",
        )),
    }
}

/// Sweeps what dead runs left behind (an in-process run creates nothing outside this
/// process, so it sweeps nothing either), then opens `history.jsonl`.
async fn sweep_and_open_history(
    plan: &Plan,
    run: &RunDir,
    docker_cluster: bool,
) -> std::result::Result<Arc<JsonlSink>, Stopped> {
    if plan.spec.cluster != crate::db::ClusterKind::InProcess {
        if let Err(e) = sweep_stale_resources(docker_cluster).await {
            return Err(fail_before_any_op(plan, run, e));
        }
    }
    JsonlSink::create(&run.history())
        .with_context(|| format!("creating {}", run.history().display()))
        .map(Arc::new)
        .map_err(|e| fail_before_any_op(plan, run, e))
}

/// Starts the cluster; a start that fails or is interrupted removes what it had created.
async fn start_cluster(
    plan: &Plan,
    run: &RunDir,
    run_id: &str,
    image: Option<&image::NodeImage>,
    sink: &JsonlSink,
    interrupt: &CancellationToken,
) -> std::result::Result<Arc<dyn Cluster>, Stopped> {
    tracing::info!(
        "starting a {}-node {} cluster (--cluster {})",
        plan.spec.nodes,
        plan.spec.db.name(),
        plan.spec.cluster.name()
    );
    let docker_cluster = plan.spec.cluster == crate::db::ClusterKind::Docker;
    let starting = super::launch::start(plan, run_id.to_string(), &run.dir, image);
    let failure = match unless_interrupted(interrupt, starting).await {
        Some(Ok(cluster)) => return Ok(cluster),
        Some(Err(e)) => Some(e.context("starting the cluster")),
        None => None, // interrupted
    };
    // The start was abandoned half-way: remove whatever it had created.
    remove_half_started(docker_cluster, run_id).await;
    sink.finish();
    Err(match failure {
        Some(e) => fail_before_any_op(plan, run, e),
        None => finish_without_cluster(plan, run, "interrupted while starting the cluster"),
    })
}

/// The phases on the started cluster, watched by the node watcher; then, while it still
/// runs, the store's versions of the keys the history proves stale.
async fn run_cluster(
    plan: &Plan,
    cluster: &Arc<dyn Cluster>,
    sink: &Arc<JsonlSink>,
    run: &RunDir,
    interrupt: &CancellationToken,
) -> Result<super::live::PhaseReport> {
    let node_watch =
        super::node_watch::spawn(cluster.clone(), sink.clone(), plan.spec.restart_crashed);
    let outcome = super::live::with_cluster(plan, cluster.clone(), sink.clone(), interrupt).await;
    if plan
        .db
        .capabilities()
        .has(crate::db::Capability::ProbesVersions)
        && !interrupt.is_cancelled()
    {
        probe_store_versions(plan, cluster.as_ref(), sink, run).await;
    }
    if let Some(watch) = node_watch {
        watch.stop().await;
    }
    outcome
}

/// Collects the node logs and removes the cluster, unless `--leave-running` keeps it up.
async fn tear_down(
    plan: &Plan,
    cluster: &dyn Cluster,
    run: &RunDir,
    run_id: &str,
    interrupt: &CancellationToken,
) {
    if let Err(e) = cluster.collect_logs(&run.nodes()).await {
        tracing::warn!("collecting node logs: {e:#}");
    }
    if plan.spec.leave_running && !interrupt.is_cancelled() {
        tracing::info!(
            "--leave-running: cluster left up ({}); no later run sweeps it: remove it with \
             `faultline cleanup {run_id}`",
            cluster.describe()
        );
    } else if let Err(e) = cluster.teardown().await {
        tracing::error!("tearing down the cluster: {e:#} (run `faultline cleanup`)");
    }
}

/// The run's wall time and the harness' CPU time, into `test.json`.
fn record_cost(test_json: &mut RunRecord, started: Instant) {
    let wall = started.elapsed().as_secs_f64();
    test_json.wall_time_s = Some(wall);
    if let Some(cpu) = own_cpu_seconds() {
        test_json.harness_cpu_s = Some(cpu);
        test_json.harness_cpu_share = Some(cpu / wall.max(1e-9));
        tracing::info!(
            "harness CPU: {cpu:.1} s over {wall:.1} s wall ({:.1}% of one core)",
            100.0 * cpu / wall.max(1e-9)
        );
    }
}

/// The history as `faultline analyze` reads it from `history.jsonl`; empty (with the
/// problem noted) when it cannot be read.
fn read_back(sink: &JsonlSink, problems: &mut Vec<String>) -> History {
    let reading = Instant::now();
    match sink.read_back() {
        Ok(history) => {
            tracing::info!(
                "history.jsonl read back in {:.1} s, as `faultline analyze` reads it",
                reading.elapsed().as_secs_f64()
            );
            history
        }
        Err(e) => {
            problems.push(format!("history.jsonl could not be read back: {e}"));
            History::default()
        }
    }
}

/// Asks the still running cluster which versions it holds for each key the history proves
/// stale (`store-versions.json`, attached to the anomalies by the analysis).
async fn probe_store_versions(plan: &Plan, cluster: &dyn Cluster, sink: &JsonlSink, run: &RunDir) {
    let nodes: Vec<NodeEndpoint> = cluster
        .nodes()
        .iter()
        .map(|n| NodeEndpoint {
            name: n.name.clone(),
            addr: n.addr.clone(),
        })
        .collect();
    let connector = plan.db.connector(plan.client_options(), &nodes);
    let probed =
        super::store_versions::probe_and_write(sink, connector.as_ref(), &nodes, &run.dir).await;
    if probed > 0 {
        tracing::info!(
            "store versions: probed {probed} key(s) with a stale read ({})",
            super::store_versions::FILE
        );
    }
}

/// The commit of the workspace this binary was built from, if it is a git checkout.
async fn git_commit() -> Option<String> {
    let root = image::workspace_root()?;
    let out = tokio::process::Command::new("git")
        .current_dir(root)
        .args(["rev-parse", "HEAD"])
        .output()
        .await
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Removes the containers and network of a Docker cluster whose start failed or was abandoned.
async fn remove_half_started(docker_cluster: bool, run_id: &str) {
    if docker_cluster {
        if let Err(e) = sweep::remove_run(run_id).await {
            tracing::error!("removing the half-started cluster: {e:#} (run `faultline cleanup`)");
        }
    }
}

/// Removes what earlier runs left behind (containers and networks, network namespaces).
async fn sweep_stale_resources(docker_cluster: bool) -> Result<()> {
    if docker_cluster {
        let swept = sweep::sweep_stale()
            .await
            .context("sweeping stale faultline resources")?;
        if swept.containers + swept.networks > 0 {
            tracing::info!(
                "setup: removed {} stale containers and {} networks",
                swept.containers,
                swept.networks
            );
        }
    }
    let stale_netns = crate::cluster::netns::sweep_stale()
        .await
        .context("sweeping stale faultline namespaces")?;
    if !stale_netns.is_empty() {
        tracing::info!("setup: removed the network namespaces of stale runs {stale_netns:?}");
    }
    Ok(())
}

/// The run never started (no image, no cluster): its directory, which `latest` already
/// points at, still gets a `results.json` — `unknown`, the reason naming the failure — and
/// the run then fails with the error (exit 255). See docs/running.md.
fn fail_before_any_op(plan: &Plan, run: &RunDir, e: anyhow::Error) -> Result<Validity> {
    tracing::error!("the run never started: {e:#}");
    if let Err(write_error) =
        finish_without_cluster(plan, run, &format!("the run never started: {e:#}"))
    {
        tracing::error!("writing {}: {write_error:#}", run.results().display());
    }
    Err(e)
}

/// The verdict of a run no checker judged (it ended before any op, or its analysis failed):
/// only the `run` pseudo-checker, `unknown` with `why` (the checkers would judge an empty
/// history, and some would call it valid).
fn finish_without_cluster(plan: &Plan, run: &RunDir, why: &str) -> Result<Validity> {
    let mut problem = analysis::verdict::CheckerResult::new(Validity::Unknown);
    problem.reason = Some(why.to_string());
    let verdict = analysis::verdict::Verdict::from_checkers(
        [("run".to_string(), problem)].into_iter().collect(),
    );
    write_json(&run.results(), &verdict)?;
    write_junit(plan, run, &verdict);
    eprintln!(
        "faultline: {why}; verdict unknown ({})",
        run.results().display()
    );
    Ok(verdict.valid)
}

/// `results.junit.xml` beside `results.json` for CI dashboards; a failure is logged, the
/// verdict stands.
fn write_junit(plan: &Plan, run: &RunDir, verdict: &analysis::verdict::Verdict) {
    if let Err(e) = crate::junit::write(&run.dir, &plan.test_name, verdict) {
        tracing::warn!(
            "writing {}: {e}",
            run.dir.join(crate::junit::FILE_NAME).display()
        );
    }
}

/// `report.html` beside `results.json`; a failure is logged (and `faultline report <run>`
/// can retry), the verdict stands.
async fn write_report(run: &RunDir) {
    let dir = run.dir.clone();
    match tokio::task::spawn_blocking(move || crate::report::generate(&dir, None)).await {
        Ok(Ok(g)) => tracing::info!("report: {} ({} bytes)", g.path.display(), g.bytes),
        Ok(Err(e)) => tracing::warn!("writing the report of {}: {e:#}", run.dir.display()),
        Err(e) => tracing::warn!("the report generator panicked: {e}"),
    }
}

/// From the options as test.json records them: `faultline analyze <run>` derives the same.
fn facts(plan: &Plan) -> RunFacts {
    analysis_phase::run_facts(
        &TestRecord::of(plan),
        plan.db.as_ref(),
        Some(plan.workload.hot_prefix.clone()),
    )
}

async fn analyse_and_report(
    plan: &Plan,
    run: &RunDir,
    sink: Arc<JsonlSink>,
    problems: Vec<String>,
) -> Result<Validity> {
    let facts = facts(plan);
    let path = run.history();
    let checking = Instant::now();
    let analysed = tokio::task::spawn_blocking(move || {
        analysis_phase::analyse_file(
            &path,
            &facts,
            problems,
            analysis_phase::STREAM_ABOVE_BYTES,
            |problems| read_back(&sink, problems),
        )
    })
    .await;
    let mut verdict = match analysed {
        Ok(verdict) => verdict,
        Err(e) => {
            // Each checker's panic is already caught (an `unknown` checker); this is one
            // outside them. The run still gets its results.json, then fails (exit 255).
            let why = format!("the analysis failed (a faultline bug; please report it): {e}");
            if let Err(write_error) = finish_without_cluster(plan, run, &why) {
                tracing::error!("writing {}: {write_error:#}", run.results().display());
            }
            return Err(anyhow::anyhow!(why));
        }
    };
    tracing::info!("checked in {:.1} s", checking.elapsed().as_secs_f64());
    super::store_versions::attach(&mut verdict, &run.dir);
    write_json(&run.results(), &verdict)?;
    write_junit(plan, run, &verdict);
    // The analysis' freed memory goes back to the system before the report reads the
    // history again: a run's peak is its largest phase, not the sum of two.
    return_free_memory();
    write_report(run).await;
    for (name, r) in &verdict.checkers {
        let reason = r
            .reason
            .as_deref()
            .map(|r| format!(" — {r}"))
            .unwrap_or_default();
        eprintln!("  {name:<14} {}{reason}", r.valid.as_str());
    }
    eprintln!(
        "faultline: {} ({})",
        verdict.valid.as_str().to_uppercase(),
        run.results().display()
    );
    Ok(verdict.valid)
}

/// Returns the heap memory freed so far to the system (glibc keeps it otherwise).
fn return_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap memory to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// User + system CPU time of this process so far (`/proc/self/stat`, USER_HZ = 100).
pub(super) fn own_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the command name: field 3 is at index 0, so utime (14) and stime (15) are 11, 12.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

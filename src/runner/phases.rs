//! The phases of one run, in order, with Ctrl-C handling: an interrupt cancels whatever
//! phase is running, after which the run still heals, tears down, flushes the history and
//! writes a verdict (at best `unknown`).

use super::analysis_phase::{self, RunFacts};
use super::oracle::StoreOracle;
use super::plan::Plan;
use super::record::{NemesisCounts, PhasesRecord, RunRecord, TestRecord, Versions};
use super::sink::JsonlSink;
use super::store::{write_json, RunDir};
use super::{logging, progress};
use crate::cluster::{sweep, Cluster};
use crate::image;
use analysis::history::{History, HistorySink, JobPhase};
use analysis::verdict::Validity;
use anyhow::{Context, Result};
use nemesis::faults::Ctx;
use nemesis::{Nemesis, NemesisStatus};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use workloads::client::{Connector, NodeEndpoint};

/// Runs `fut` unless `interrupt` fires first (then `None`).
async fn unless_interrupted<T>(
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

/// The whole run. Returns the verdict's validity; errors are internal errors (255) or
/// bad arguments (254).
pub async fn run(plan: Plan) -> Result<Validity> {
    let interrupt = CancellationToken::new();
    install_interrupt_handler(interrupt.clone());
    let docker_cluster = plan.spec.cluster == crate::db::ClusterKind::Docker;
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
    let started = Instant::now();
    let mut test_json = RunRecord {
        test: TestRecord::of(&plan),
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

    let image = if !docker_cluster {
        None
    } else {
        match unless_interrupted(
            &interrupt,
            super::launch::node_image(
                plan.db.as_ref(),
                plan.spec.image.as_deref(),
                plan.spec.db_binary.as_deref(),
            ),
        )
        .await
        {
            Some(Ok(image)) => Some(image),
            Some(Err(e)) => {
                return fail_before_any_op(&plan, &run, e.context("building the node image"))
            }
            None => {
                return finish_without_cluster(&plan, &run, "interrupted while building the image")
            }
        }
    };
    test_json.image = Some(image.clone());
    write_json(&run.test_json(), &test_json)?;

    // An in-process run creates nothing outside this process, so it sweeps nothing either.
    if plan.spec.cluster != crate::db::ClusterKind::InProcess {
        if let Err(e) = sweep_stale_resources(docker_cluster).await {
            return fail_before_any_op(&plan, &run, e);
        }
    }
    let sink = match JsonlSink::create(&run.history())
        .with_context(|| format!("creating {}", run.history().display()))
    {
        Ok(sink) => Arc::new(sink),
        Err(e) => return fail_before_any_op(&plan, &run, e),
    };
    let run_id = format!(
        "fl{:x}",
        (u64::from(std::process::id()) << 20) ^ (plan.seed & 0xfffff)
    );
    tracing::info!(
        "starting a {}-node {} cluster (--cluster {})",
        plan.spec.nodes,
        plan.spec.db.name(),
        plan.spec.cluster.name()
    );
    let cluster = match unless_interrupted(
        &interrupt,
        super::launch::start(&plan, run_id.clone(), &run.dir, image.as_ref()),
    )
    .await
    {
        Some(Ok(c)) => c,
        Some(Err(e)) => {
            remove_half_started(docker_cluster, &run_id).await;
            sink.finish();
            return fail_before_any_op(&plan, &run, e.context("starting the cluster"));
        }
        None => {
            // The start was abandoned half-way: remove whatever it had created.
            remove_half_started(docker_cluster, &run_id).await;
            sink.finish();
            return finish_without_cluster(&plan, &run, "interrupted while starting the cluster");
        }
    };
    test_json.cluster = Some(cluster.describe());
    write_json(&run.test_json(), &test_json)?;

    let node_watch =
        super::node_watch::spawn(cluster.clone(), sink.clone(), plan.spec.restart_crashed);
    let outcome = with_cluster(&plan, cluster.clone(), sink.clone(), &interrupt).await;
    if plan
        .db
        .capabilities()
        .has(crate::db::Capability::ProbesVersions)
        && !interrupt.is_cancelled()
    {
        probe_store_versions(&plan, cluster.as_ref(), &sink, &run).await;
    }
    if let Some(watch) = node_watch {
        watch.stop().await;
    }

    // Teardown happens whatever the phases did.
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
    write_json(&run.test_json(), &test_json)?;
    let reading = Instant::now();
    let history = match sink.read_back() {
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
    };
    analyse_and_report(&plan, &run, history, &problems).await
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
    history: History,
    problems: &[String],
) -> Result<Validity> {
    tracing::info!("analysing {} history entries", history.ops.len());
    let facts = facts(plan);
    let problems = problems.to_vec();
    let checking = Instant::now();
    let analysed =
        tokio::task::spawn_blocking(move || analysis_phase::analyse(&history, &facts, &problems))
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

/// Records where the store keeps the client's keys, unless it keeps them as they are (a
/// history without the event means that: `docs/history-format.md`).
fn record_store_keys(sink: &JsonlSink, store_keys: &analysis::history::store_keys::StoreKeys) {
    if store_keys.is_identity() {
        return;
    }
    sink.record(analysis::history::Op {
        index: 0,
        kind: analysis::history::OpType::Info,
        process: analysis::history::Process::Watcher,
        f: analysis::history::events::STORE_KEYS.into(),
        key: None,
        value: serde_json::to_value(store_keys).unwrap_or_default(),
        time: 0,
        node: None,
        error: None,
        meta: None,
    });
}

/// What the phases after cluster start report.
struct PhaseReport {
    json: PhasesRecord,
    problems: Vec<String>,
}

/// setup (readiness) → main → heal → recovery → final reads. Teardown is the caller's.
async fn with_cluster(
    plan: &Plan,
    cluster: Arc<dyn Cluster>,
    sink: Arc<JsonlSink>,
    interrupt: &CancellationToken,
) -> Result<PhaseReport> {
    let mut json = PhasesRecord::default();
    let mut problems = Vec::new();
    let nodes: Vec<NodeEndpoint> = cluster
        .nodes()
        .iter()
        .map(|n| NodeEndpoint {
            name: n.name.clone(),
            addr: n.addr.clone(),
        })
        .collect();
    let groups: Vec<u64> = plan.db.groups();
    let cfg = plan.workload.clone();
    json.workload_config = Some(cfg.clone());
    let connector: Arc<dyn Connector> = plan.db.connector(plan.client_options(), &nodes);
    let store_keys = plan.db.store_keys(&plan.client_options());
    record_store_keys(&sink, &store_keys);
    tracing::info!(
        "data operations through the {} protocol",
        plan.protocol().name()
    );

    // Readiness.
    let t = Instant::now();
    let ready = workloads::cluster::wait_ready_with(
        connector.as_ref(),
        &nodes,
        &groups,
        Duration::from_secs(90),
    );
    match unless_interrupted(interrupt, ready).await {
        Some(r) => r.context("waiting for the cluster to become ready")?,
        None => return Ok(PhaseReport { json, problems }),
    }
    tracing::info!("cluster ready in {:.1} s", t.elapsed().as_secs_f64());
    json.ready_s = Some(t.elapsed().as_secs_f64());

    // Main phase: workload, catalog watcher and nemesis together.
    let stats = Arc::new(workloads::stats::Stats::new());
    let watcher_cancel = CancellationToken::new();
    let has_catalog = plan.db.reports().catalog;
    let watcher = tokio::spawn({
        let (connector, nodes, sink, cancel) = (
            connector.clone(),
            nodes.clone(),
            sink.clone(),
            watcher_cancel.clone(),
        );
        async move {
            if !has_catalog {
                cancel.cancelled().await;
                return Ok(Default::default());
            }
            workloads::watcher::run_catalog_watcher_with(
                connector,
                &nodes,
                sink,
                cancel,
                Default::default(),
            )
            .await
        }
    });
    let nemesis_status = Arc::new(NemesisStatus::default());
    let nemesis = Nemesis {
        ctx: Ctx {
            control: cluster.clone(),
            oracle: Arc::new(
                StoreOracle::new(
                    nodes.clone(),
                    connector.clone(),
                    groups.clone(),
                    sink.clone(),
                    has_catalog,
                )
                .with_store_keys(store_keys),
            ),
            sink: sink.clone(),
            loss_probability: plan.spec.loss_probability,
            partition_modes: plan.partition_modes.clone(),
            use_netem: netem_available(cluster.as_ref()).await,
            move_phase: plan.move_phase,
            move_action: plan.move_action,
            abort_phase: plan.abort_phase,
            txn_move_aim: plan.txn_move_aim,
        },
        kinds: plan.nemesis.clone(),
        interval: plan.nemesis_interval,
        seed: plan.seed,
        status: nemesis_status.clone(),
    };
    let main_done = CancellationToken::new();
    let progress_task = tokio::spawn(progress::run(
        sink.clone(),
        nemesis_status.clone(),
        plan.time_limit,
        !plan.spec.no_progress,
        main_done.clone(),
    ));
    let t = Instant::now();
    let cpu_before_main = own_cpu_seconds();
    tracing::info!(
        "main phase: {} workload for {} s, nemesis {:?}",
        cfg.workload,
        plan.time_limit.as_secs(),
        plan.spec.nemesis
    );
    let history: Arc<dyn HistorySink> = sink.clone();
    let generator = match &plan.spec.generator {
        Some(factory) => (factory.0)(&cfg),
        None => workloads::generators::build(&cfg),
    };
    let workload = workloads::run_generator_with(
        &cfg,
        generator,
        connector.clone(),
        &nodes,
        history.clone(),
        stats.clone(),
        interrupt.child_token(),
    );
    let nemesis_cancel = interrupt.child_token();
    let (summary, ()) = tokio::join!(
        async {
            let r = workload.await;
            nemesis_cancel.cancel();
            r
        },
        async {
            // An in-process store has no node to fault or heal (the plan allows it no fault).
            if plan.spec.cluster != crate::db::ClusterKind::InProcess {
                nemesis.run(nemesis_cancel.clone()).await
            }
        }
    );
    // nemesis.run has healed everything by now.
    main_done.cancel();
    let _ = progress_task.await;
    let summary = summary.context("the workload failed")?;
    let main_s = t.elapsed().as_secs_f64();
    let ok_per_s = summary.stats.ok as f64 / summary.elapsed_s.max(1e-9);
    tracing::info!(
        "main phase done in {main_s:.1} s: {} ok, {} fail, {} info ({ok_per_s:.0} ok ops/s)",
        summary.stats.ok,
        summary.stats.fail,
        summary.stats.info
    );
    json.ok_ops_per_s = Some(ok_per_s);
    if let (Some(a), Some(b)) = (cpu_before_main, own_cpu_seconds()) {
        json.main_harness_cpu_share = Some((b - a) / main_s.max(1e-9));
        tracing::info!(
            "harness CPU during the main phase: {:.1}% of one core",
            100.0 * (b - a) / main_s.max(1e-9)
        );
    }
    json.workload = Some(summary.clone());
    json.main_s = Some(t.elapsed().as_secs_f64());
    json.nemesis = Some(NemesisCounts {
        faults_started: nemesis_status
            .faults_started
            .load(std::sync::atomic::Ordering::Relaxed),
        splits_forced: nemesis_status
            .splits_forced
            .load(std::sync::atomic::Ordering::Relaxed),
    });

    // Recovery wait, then final reads (skipped when interrupted), through the nodes that run.
    let nodes = running_nodes(cluster.as_ref(), nodes, &mut json);
    if !interrupt.is_cancelled() {
        let t = Instant::now();
        let recovery = Duration::from_secs(plan.spec.recovery_timeout);
        let recovered = unless_interrupted(
            interrupt,
            recover(
                connector.as_ref(),
                &nodes,
                &groups,
                recovery,
                plan.db.as_ref(),
            ),
        )
        .await;
        match recovered {
            Some(Ok(())) => tracing::info!("recovered in {:.1} s", t.elapsed().as_secs_f64()),
            Some(Err(e)) => {
                tracing::warn!("recovery: {e:#}");
                problems.push(format!("the cluster did not recover after healing: {e:#}"));
            }
            None => {}
        }
        json.recovery_s = Some(t.elapsed().as_secs_f64());
    }
    if !interrupt.is_cancelled() {
        let t = Instant::now();
        let opts = workloads::final_reads::FinalReadsOptions {
            timeout: Duration::from_secs(60),
            ..Default::default()
        };
        let report = workloads::final_reads_with(
            connector.clone(),
            &summary,
            &nodes,
            history,
            stats,
            interrupt.child_token(),
            opts,
        )
        .await;
        tracing::info!(
            "final reads: {} of {} attempts succeeded in {:.1} s",
            report.succeeded,
            report.attempts,
            t.elapsed().as_secs_f64()
        );
        if !report.unread.is_empty() {
            problems.push(format!(
                "final reads never succeeded for {} key/node pairs",
                report.unread.len()
            ));
        }
        json.final_reads = Some(report);
    }
    watcher_cancel.cancel();
    match watcher.await {
        Ok(Ok(w)) => json.watcher = Some(w),
        Ok(Err(e)) => tracing::warn!("catalog watcher: {e:#}"),
        Err(e) => tracing::warn!("catalog watcher task: {e}"),
    }
    Ok(PhaseReport { json, problems })
}

/// `nodes` without those whose server exited on its own and stays down: recovery and final
/// reads cannot wait for them (the `crashes` checker reports the exit).
fn running_nodes(
    cluster: &dyn Cluster,
    nodes: Vec<NodeEndpoint>,
    json: &mut PhasesRecord,
) -> Vec<NodeEndpoint> {
    let down = cluster.down_nodes();
    if down.is_empty() {
        return nodes;
    }
    tracing::warn!(
        "recovery and final reads skip {}: the server exited and was not started again",
        down.join(", ")
    );
    let running = nodes
        .into_iter()
        .filter(|n| !down.contains(&n.name))
        .collect();
    json.nodes_down_after_main = Some(down);
    running
}

/// Waits until every group has a leader again, (for stores that read from a node's own
/// state) every node has caught up, and no split job is still running.
async fn recover(
    connector: &dyn Connector,
    nodes: &[NodeEndpoint],
    groups: &[u64],
    timeout: Duration,
    db: &dyn crate::db::Db,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    workloads::cluster::wait_ready_with(connector, nodes, groups, timeout).await?;
    if db
        .capabilities()
        .has(crate::db::Capability::CatchUpBeforeFinalReads)
    {
        workloads::cluster::wait_caught_up_with(connector, nodes, groups, timeout).await?;
    }
    if !db.reports().catalog {
        return Ok(()); // no split jobs to settle
    }
    loop {
        let mut running = None;
        for n in nodes {
            let Ok(client) = connector.connect(n) else {
                continue;
            };
            if let Ok(catalog) = client.list_routes().await {
                running = Some(
                    catalog
                        .jobs
                        .iter()
                        .filter(|j| !j.job_phase().is_some_and(JobPhase::is_terminal))
                        .count(),
                );
                break;
            }
        }
        match running {
            Some(0) => return Ok(()),
            Some(n) if Instant::now() >= deadline => {
                anyhow::bail!("{n} split jobs still running after {} s", timeout.as_secs())
            }
            None if Instant::now() >= deadline => anyhow::bail!("no node answered ListRoutes"),
            _ => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
}

/// User + system CPU time of this process so far (`/proc/self/stat`, USER_HZ = 100).
fn own_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the command name: field 3 is at index 0, so utime (14) and stime (15) are 11, 12.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

async fn netem_available(cluster: &dyn Cluster) -> bool {
    let Some(first) = cluster.nodes().first() else {
        return false;
    };
    if !cluster.netem_usable() {
        tracing::info!(
            "packet loss via iptables statistic (netem is not used on this kind of cluster)"
        );
        return false;
    }
    match cluster.node_net(&first.name).await {
        Ok(ns) => {
            let ok = nemesis::net::netem_available(&*ns, "eth0").await;
            tracing::info!(
                "tc netem {}",
                if ok {
                    "available: packet loss via netem"
                } else {
                    "not available: packet loss via iptables statistic"
                }
            );
            ok
        }
        Err(_) => false,
    }
}

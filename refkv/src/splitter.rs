//! Wiring of the auto-split library (`autosplit`, a pure detector/scheduler) into the node:
//! the default-group leader pulls every node's sampling window once per window, runs the
//! detector and scheduler, and issues the proposed `SplitRange` calls (catalog-version CAS;
//! target = least-loaded group, which makes it a cross-group move).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::autosplit::{
    AutoSplit, CatalogView, RouteInfo, SplitOutcome, SplitRangeCall, WindowStats,
};
use crate::catalog::{Catalog, RouteState};
use crate::exec::{ExecOp, ExecReply};
use crate::node::NodeCore;
use crate::proto::internal::PullStatsRequest;
use crate::sm::CATALOG_GROUP;
use crate::types::{Command, CommandResult};

pub fn catalog_view(c: &Catalog) -> CatalogView {
    CatalogView {
        version: c.version,
        routes: c
            .sorted_routes()
            .into_iter()
            .map(|r| RouteInfo {
                route_id: r.id,
                start: r.start.clone(),
                end: r.end.clone(),
                group_id: r.group,
                active: r.state == RouteState::Active,
                parent_route_id: (r.parent != 0).then_some(r.parent),
            })
            .collect(),
        group_ids: (1..=c.groups).collect(),
    }
}

async fn pull_windows(core: &NodeCore) -> Vec<WindowStats> {
    let mut windows = vec![core.sampler.snapshot_and_reset(Instant::now())];
    for peer in core.peers.ids().filter(|p| *p != core.id) {
        let Ok(mut client) = core.peers.client(peer) else {
            continue;
        };
        let call = client.pull_stats(PullStatsRequest {});
        if let Ok(Ok(reply)) = tokio::time::timeout(Duration::from_millis(500), call).await {
            match serde_json::from_slice::<WindowStats>(&reply.into_inner().payload) {
                Ok(w) => windows.push(w),
                Err(e) => tracing::warn!(peer, "undecodable sampling window: {e}"),
            }
        }
    }
    windows
}

/// The catalog command for a scheduler call: `StartSplitMigration` (at most one live job)
/// when the right child moves to another group, a same-group `SplitRange` otherwise.
fn split_command(catalog: &Catalog, call: &SplitRangeCall, now_ms: i64) -> Command {
    let source = catalog.routes.get(&call.route_id).map(|r| r.group);
    let (expected_version, route_id, split_key) = (
        call.expected_catalog_version,
        call.route_id,
        call.split_key.clone(),
    );
    match call.target_group_id {
        target if target == 0 || Some(target) == source => Command::Split {
            expected_version,
            route_id,
            split_key,
            target_group: 0,
            now_ms,
        },
        target => Command::StartMigration {
            expected_version,
            route_id,
            split_key,
            target_group: target,
            now_ms,
        },
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

pub fn spawn(core: Arc<NodeCore>) {
    let cfg = core.split_cfg.clone();
    tokio::spawn(async move {
        let mut auto: Option<AutoSplit> = None;
        let mut ticker = tokio::time::interval(cfg.window);
        loop {
            ticker.tick().await;
            let Some(g) = core.group(CATALOG_GROUP) else {
                return;
            };
            if !g.is_leader(core.id) {
                auto = None;
                continue;
            }
            let auto = match &mut auto {
                Some(a) => a,
                None => match AutoSplit::new(cfg.clone()) {
                    Ok(mut a) => {
                        // A new leader has no memory of when earlier splits happened: give
                        // every split child a fresh cooldown rather than none.
                        if let Some(c) = g.shared.read().catalog.as_ref() {
                            let now = Instant::now();
                            for r in c.routes.values().filter(|r| r.parent != 0) {
                                a.start_cooldown(r.id, now);
                            }
                        }
                        auto.insert(a)
                    }
                    Err(e) => {
                        tracing::error!("auto-split disabled: {e}");
                        return;
                    }
                },
            };
            auto.kill_switch().set_enabled(core.auto_split_enabled());
            let windows = pull_windows(&core).await;
            let Some(catalog) = g.shared.read().catalog.clone() else {
                continue;
            };
            let report = auto.tick(Instant::now(), &windows, &catalog_view(&catalog));
            for call in report.calls {
                let cmd = split_command(&catalog, &call, now_ms());
                let outcome = match core.execute(CATALOG_GROUP, ExecOp::Write(cmd), true).await {
                    ExecReply::Committed {
                        result: CommandResult::Split(Ok(out)),
                        ..
                    } => {
                        tracing::info!(
                            route = call.route_id,
                            split_key = %String::from_utf8_lossy(&call.split_key),
                            target = call.target_group_id,
                            version = out.version,
                            job = out.job_id,
                            reason = ?call.reason,
                            score = call.score,
                            "auto-split committed"
                        );
                        SplitOutcome::Committed
                    }
                    other => {
                        tracing::info!(route = call.route_id, "auto-split call failed: {other:?}");
                        SplitOutcome::Failed
                    }
                };
                auto.report_outcome(call.route_id, outcome);
            }
        }
    });
}

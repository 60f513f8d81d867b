//! Removing faultline's Docker resources: one run's (teardown), the stale ones of runs whose
//! harness died (`setup` of the next run), or all of them (`faultline cleanup`). Only
//! containers and networks labelled `faultline=1` are ever touched.

use super::owner;
use crate::docker::{self, LABEL, OWNER_LABEL, RUN_LABEL};
use anyhow::Result;
use std::collections::BTreeSet;

/// What a sweep removed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Swept {
    pub containers: usize,
    pub networks: usize,
    pub runs: BTreeSet<String>,
}

/// Removes every container and network of one run.
pub async fn remove_run(run_id: &str) -> Result<()> {
    let filter = format!("{RUN_LABEL}={run_id}");
    let containers = docker::containers_with(&[LABEL, &filter]).await?;
    unpause_all(&containers).await;
    docker::remove_containers(&containers).await?;
    let networks = docker::networks_with(&[LABEL, &filter]).await?;
    docker::remove_networks(&networks).await?;
    Ok(())
}

/// Removes the resources of runs whose owning harness process is gone. Resources without
/// an owner label (e.g. a docker-compose cluster a person started) are left alone.
pub async fn sweep_stale() -> Result<Swept> {
    let mut swept = Swept::default();
    let mut stale_runs = BTreeSet::new();
    for id in docker::containers_with(&[LABEL]).await? {
        if is_stale("container", &id).await {
            stale_runs.insert(
                docker::label_of("container", &id, RUN_LABEL)
                    .await
                    .unwrap_or_default(),
            );
        }
    }
    for id in docker::networks_with(&[LABEL]).await? {
        if is_stale("network", &id).await {
            stale_runs.insert(
                docker::label_of("network", &id, RUN_LABEL)
                    .await
                    .unwrap_or_default(),
            );
        }
    }
    for run in stale_runs.into_iter().filter(|r| !r.is_empty()) {
        let filter = format!("{RUN_LABEL}={run}");
        let containers = docker::containers_with(&[LABEL, &filter]).await?;
        let networks = docker::networks_with(&[LABEL, &filter]).await?;
        unpause_all(&containers).await;
        docker::remove_containers(&containers).await?;
        docker::remove_networks(&networks).await?;
        tracing::info!(
            "swept stale run {run}: {} containers, {} networks",
            containers.len(),
            networks.len()
        );
        swept.containers += containers.len();
        swept.networks += networks.len();
        swept.runs.insert(run);
    }
    Ok(swept)
}

async fn is_stale(kind: &str, id: &str) -> bool {
    match docker::label_of(kind, id, OWNER_LABEL).await {
        Ok(tag) if !tag.is_empty() => owner::is_stale(&tag),
        _ => false,
    }
}

/// Every run that has containers or networks here, with its owner tag (empty: none).
pub async fn list_runs() -> Result<std::collections::BTreeMap<String, String>> {
    let mut runs = std::collections::BTreeMap::new();
    for (kind, ids) in [
        ("container", docker::containers_with(&[LABEL]).await?),
        ("network", docker::networks_with(&[LABEL]).await?),
    ] {
        for id in ids {
            let run = docker::label_of(kind, &id, RUN_LABEL)
                .await
                .unwrap_or_default();
            let tag = docker::label_of(kind, &id, OWNER_LABEL)
                .await
                .unwrap_or_default();
            if !run.is_empty() {
                runs.entry(run).or_insert(tag);
            }
        }
    }
    Ok(runs)
}

/// Removes every faultline container and network, running or not, owned or not.
pub async fn remove_all() -> Result<Swept> {
    let containers = docker::containers_with(&[LABEL]).await?;
    unpause_all(&containers).await;
    docker::remove_containers(&containers).await?;
    let networks = docker::networks_with(&[LABEL]).await?;
    docker::remove_networks(&networks).await?;
    Ok(Swept {
        containers: containers.len(),
        networks: networks.len(),
        runs: BTreeSet::new(),
    })
}

/// A frozen container cannot always be killed; thaw any paused ones first.
async fn unpause_all(ids: &[String]) {
    for id in ids {
        if docker::container_state(id)
            .await
            .map(|s| s == "paused")
            .unwrap_or(false)
        {
            let _ = docker::docker(&["unpause", id]).await;
        }
    }
}

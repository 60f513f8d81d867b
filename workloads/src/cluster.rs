//! Cluster-level queries over RaftAdmin Status: readiness (every node answers and every
//! group has a leader) and leader discovery for the leader-targeting nemeses.

use crate::client::{Connector, GroupStatus, KvTarget, NodeEndpoint};
use anyhow::bail;
use futures::future::join_all;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How often readiness is re-checked.
const READY_POLL: Duration = Duration::from_millis(200);

/// Each node's view of `group` (or the error that prevented it).
async fn group_views(
    clients: &[(NodeEndpoint, Arc<dyn KvTarget>)],
    group: u64,
) -> Vec<(String, Result<GroupStatus, String>)> {
    let calls = clients.iter().map(|(node, client)| async move {
        let view = client.status(group).await.map_err(|e| e.history_text());
        (node.name.clone(), view)
    });
    join_all(calls).await
}

/// The leader among the views: a node that says it leads *at the highest term any node
/// reports*. A claimant at a lower term is deposed (a leader resumed after a pause, or on the
/// minority side of a partition) even when the new leader did not answer; then none is known.
fn leader_from_views(views: &[(String, Result<GroupStatus, String>)]) -> Option<String> {
    let ok: Vec<(&String, &GroupStatus)> = views
        .iter()
        .filter_map(|(n, v)| v.as_ref().ok().map(|s| (n, s)))
        .collect();
    current_leader(ok.iter().map(|(_, s)| *s)).map(|i| ok[i].0.clone())
}

/// The index (among `statuses`) of the claimant at the highest term any of them reports.
pub fn current_leader<'a>(
    statuses: impl Iterator<Item = &'a GroupStatus> + Clone,
) -> Option<usize> {
    let top = statuses.clone().map(|s| s.term).max()?;
    statuses
        .enumerate()
        .find(|(_, s)| s.is_leader && s.term == top)
        .map(|(i, _)| i)
}

fn connect_all(
    connector: &dyn Connector,
    nodes: &[NodeEndpoint],
) -> anyhow::Result<Vec<(NodeEndpoint, Arc<dyn KvTarget>)>> {
    nodes
        .iter()
        .map(|n| Ok((n.clone(), connector.connect(n)?)))
        .collect()
}

/// The name of the node that currently leads `group` (0 = the default group), or `None`
/// when no reachable node claims leadership.
pub async fn leader_of_group_with(
    connector: &dyn Connector,
    nodes: &[NodeEndpoint],
    group: u64,
) -> Option<String> {
    let clients = connect_all(connector, nodes).ok()?;
    leader_from_views(&group_views(&clients, group).await)
}

/// Why the cluster is not ready, or `None` when it is.
async fn readiness_problem(
    clients: &[(NodeEndpoint, Arc<dyn KvTarget>)],
    groups: &[u64],
) -> Option<String> {
    for &group in groups {
        let views = group_views(clients, group).await;
        let unreachable: Vec<String> = views
            .iter()
            .filter_map(|(n, v)| v.as_ref().err().map(|e| format!("{n}: {e}")))
            .collect();
        if !unreachable.is_empty() {
            return Some(format!("group {group}: {}", unreachable.join("; ")));
        }
        if leader_from_views(&views).is_none() {
            let states: Vec<String> = views
                .iter()
                .filter_map(|(n, v)| v.as_ref().ok().map(|s| format!("{n}={}", s.state)))
                .collect();
            return Some(format!(
                "group {group} has no leader ({})",
                states.join(", ")
            ));
        }
    }
    None
}

/// Waits until every node answers RaftAdmin Status for every group in `groups` and each
/// group has a leader; the error after `timeout` says what was still missing.
pub async fn wait_ready_with(
    connector: &dyn Connector,
    nodes: &[NodeEndpoint],
    groups: &[u64],
    timeout: Duration,
) -> anyhow::Result<()> {
    if nodes.is_empty() {
        bail!("no nodes to wait for");
    }
    let clients = connect_all(connector, nodes)?;
    let deadline = Instant::now() + timeout;
    loop {
        let problem = match readiness_problem(&clients, groups).await {
            None => return Ok(()),
            Some(p) => p,
        };
        if Instant::now() + READY_POLL > deadline {
            bail!(
                "cluster not ready after {:.1} s: {problem}",
                timeout.as_secs_f64()
            );
        }
        tokio::time::sleep(READY_POLL).await;
    }
}

/// The highest commit index a leader of `group` reports, if one answers.
async fn leader_commit(clients: &[(NodeEndpoint, Arc<dyn KvTarget>)], group: u64) -> Option<u64> {
    let views = group_views(clients, group).await;
    views
        .iter()
        .filter_map(|(_, v)| {
            v.as_ref()
                .ok()
                .filter(|s| s.is_leader)
                .map(|s| s.commit_index)
        })
        .max()
}

/// Waits until every node has applied, in every group, what the group's leader had
/// committed when the wait began, so that reads served from a node's own state (elastickv)
/// see at least that. The error after `timeout` names the nodes still behind.
pub async fn wait_caught_up_with(
    connector: &dyn Connector,
    nodes: &[NodeEndpoint],
    groups: &[u64],
    timeout: Duration,
) -> anyhow::Result<()> {
    let clients = connect_all(connector, nodes)?;
    let deadline = Instant::now() + timeout;
    for &group in groups {
        let Some(target) = leader_commit(&clients, group).await else {
            bail!("group {group} has no leader")
        };
        loop {
            let behind: Vec<String> = group_views(&clients, group)
                .await
                .into_iter()
                .filter_map(|(n, v)| match v {
                    Ok(s) if s.applied_index >= target => None,
                    Ok(s) => Some(format!("{n} applied {}", s.applied_index)),
                    Err(e) => Some(format!("{n}: {e}")),
                })
                .collect();
            if behind.is_empty() {
                break;
            }
            if Instant::now() + READY_POLL > deadline {
                bail!(
                    "group {group}: not every node applied the leader's commit index {target}: {}",
                    behind.join("; ")
                );
            }
            tokio::time::sleep(READY_POLL).await;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(name: &str, leader: bool, term: u64) -> (String, Result<GroupStatus, String>) {
        (
            name.to_string(),
            Ok(GroupStatus {
                is_leader: leader,
                term,
                ..Default::default()
            }),
        )
    }

    #[test]
    fn highest_term_claimant_is_the_leader() {
        let views = vec![
            view("n1", true, 3),
            view("n2", true, 5),
            view("n3", false, 5),
            ("n4".into(), Err("down".into())),
        ];
        assert_eq!(leader_from_views(&views).as_deref(), Some("n2"));
        assert_eq!(leader_from_views(&[view("n1", false, 1)]), None);
        let deposed = vec![view("n1", true, 3), view("n2", false, 4)];
        assert_eq!(
            leader_from_views(&deposed),
            None,
            "a follower has seen a newer term than the claimant's"
        );
    }
}

//! `refkv ctl`: a small human client for a running cluster.

use clap::Subcommand;
use tonic::transport::Channel;

use crate::proto::api::distribution_client::DistributionClient;
use crate::proto::api::raft_admin_client::RaftAdminClient;
use crate::proto::api::raw_kv_client::RawKvClient;
use crate::proto::api::*;
use crate::proto::internal::refkv_internal_client::RefkvInternalClient;
use crate::proto::internal::SetAutoSplitRequest;

#[derive(Subcommand, Debug)]
pub enum CtlCommand {
    /// Raft status of every group on this node.
    Status {
        #[arg(long, default_value_t = 3)]
        groups: u64,
    },
    /// The route catalog (and split jobs).
    Routes,
    Put {
        key: String,
        value: String,
    },
    Get {
        key: String,
    },
    Delete {
        key: String,
    },
    Scan {
        #[arg(default_value = "")]
        start: String,
        #[arg(default_value = "")]
        end: String,
        #[arg(long, default_value_t = 100)]
        limit: i64,
    },
    /// Split a route at a key (`--target-group` moves the right child to another group
    /// through StartSplitMigration).
    Split {
        route_id: u64,
        split_key: String,
        #[arg(long)]
        expected_version: Option<u64>,
        #[arg(long, default_value_t = 0)]
        target_group: u64,
    },
    /// List split jobs (ListSplitJobs).
    Jobs,
    /// Abandon a split job before its cutover (AbandonSplitJob).
    Abandon {
        job_id: u64,
    },
    /// Send a FAILED split job back to its retry phase (RetrySplitJob).
    Retry {
        job_id: u64,
    },
    /// Ask a node to take over leadership of a group.
    TransferLeader {
        #[arg(long, default_value_t = 1)]
        group: u64,
        #[arg(long, default_value = "")]
        target: String,
    },
    /// Turn automatic splitting on or off at runtime.
    AutoSplit {
        #[arg(value_parser = ["on", "off"])]
        state: String,
    },
}

fn show_meta(m: &Option<CommitMeta>) -> String {
    match m {
        Some(m) => format!(
            "group={} term={} index={} route={} epoch={} node={} catalog={}",
            m.group_id,
            m.term,
            m.log_index,
            m.route_id,
            m.route_epoch,
            m.node_id,
            m.catalog_version
        ),
        None => "-".into(),
    }
}

fn show_job(j: &SplitJob) -> String {
    let phase = SplitJobPhase::try_from(j.phase)
        .map(|s| s.as_str_name())
        .unwrap_or("?");
    format!(
        "job {} route {} at {:?} group {} -> {} {} {}",
        j.job_id,
        j.source_route_id,
        String::from_utf8_lossy(&j.split_key),
        j.source_group_id,
        j.target_group_id,
        phase,
        j.last_error
    )
}

fn show_routes(version: u64, routes: &[RouteDescriptor], jobs: &[SplitJob]) {
    println!("catalog version {version}");
    for r in routes {
        let state = RouteState::try_from(r.state)
            .map(|s| s.as_str_name())
            .unwrap_or("?");
        println!(
            "route {:>4} [{:?}, {:?}) group {} epoch {} parent {} {}",
            r.route_id,
            String::from_utf8_lossy(&r.start),
            String::from_utf8_lossy(&r.end),
            r.raft_group_id,
            r.epoch,
            r.parent_route_id,
            state
        );
    }
    for j in jobs {
        println!("{}", show_job(j));
    }
}

pub async fn run(addr: &str, cmd: CtlCommand) -> anyhow::Result<()> {
    let channel = Channel::from_shared(format!("http://{addr}"))
        .map_err(|e| anyhow::anyhow!("bad --addr {addr}: {e}"))?
        .connect()
        .await
        .map_err(|e| anyhow::anyhow!("connecting to {addr}: {e}"))?;
    let mut kv = RawKvClient::new(channel.clone());
    let mut dist = DistributionClient::new(channel.clone());
    let mut admin = RaftAdminClient::new(channel.clone());
    match cmd {
        CtlCommand::Status { groups } => {
            for g in 1..=groups {
                let s = admin
                    .status(RaftAdminStatusRequest { group_id: g })
                    .await?
                    .into_inner();
                let state = RaftAdminState::try_from(s.state)
                    .map(|s| s.as_str_name())
                    .unwrap_or("?");
                println!(
                    "group {g}: node {} {state} leader {} ({}) term {} applied {} last_log {} snapshot {}",
                    s.node_id, s.leader_id, s.leader_address, s.term, s.applied_index, s.last_log_index, s.last_snapshot_index
                );
            }
        }
        CtlCommand::Routes => {
            let r = dist.list_routes(ListRoutesRequest {}).await?.into_inner();
            show_routes(r.catalog_version, &r.routes, &r.jobs);
        }
        CtlCommand::Put { key, value } => {
            let r = kv
                .raw_put(RawPutRequest {
                    key: key.into(),
                    value: value.into(),
                    ..Default::default()
                })
                .await?
                .into_inner();
            println!("ok {}", show_meta(&r.meta));
        }
        CtlCommand::Get { key } => {
            let r = kv
                .raw_get(RawGetRequest {
                    key: key.into(),
                    ..Default::default()
                })
                .await?
                .into_inner();
            match r.exists {
                true => println!(
                    "{} {}",
                    String::from_utf8_lossy(&r.value),
                    show_meta(&r.meta)
                ),
                false => println!("(absent) {}", show_meta(&r.meta)),
            }
        }
        CtlCommand::Delete { key } => {
            let r = kv
                .raw_delete(RawDeleteRequest { key: key.into() })
                .await?
                .into_inner();
            println!("ok {}", show_meta(&r.meta));
        }
        CtlCommand::Scan { start, end, limit } => {
            let r = kv
                .raw_scan_at(RawScanAtRequest {
                    start_key: start.into(),
                    end_key: end.into(),
                    limit,
                    ..Default::default()
                })
                .await?
                .into_inner();
            for p in &r.kv {
                println!(
                    "{}\t{}",
                    String::from_utf8_lossy(&p.key),
                    String::from_utf8_lossy(&p.value)
                );
            }
            for m in &r.meta {
                println!("# {}", show_meta(&Some(m.clone())));
            }
        }
        CtlCommand::Split {
            route_id,
            split_key,
            expected_version,
            target_group,
        } => {
            let expected = match expected_version {
                Some(v) => v,
                None => {
                    dist.list_routes(ListRoutesRequest {})
                        .await?
                        .into_inner()
                        .catalog_version
                }
            };
            if target_group != 0 {
                let req = StartSplitMigrationRequest {
                    expected_catalog_version: expected,
                    route_id,
                    split_key: split_key.into(),
                    target_group_id: target_group,
                    options: Default::default(),
                };
                let r = dist.start_split_migration(req).await?.into_inner();
                println!("catalog version {} job {}", r.catalog_version, r.job_id);
                return Ok(());
            }
            let req = SplitRangeRequest {
                expected_catalog_version: expected,
                route_id,
                split_key: split_key.into(),
                ..Default::default()
            };
            let r = dist.split_range(req).await?.into_inner();
            let (l, rr) = (r.left.unwrap_or_default(), r.right.unwrap_or_default());
            println!(
                "catalog version {} left route {} right route {}",
                r.catalog_version, l.route_id, rr.route_id
            );
        }
        CtlCommand::Jobs => {
            for j in dist
                .list_split_jobs(ListSplitJobsRequest::default())
                .await?
                .into_inner()
                .jobs
            {
                println!("{}", show_job(&j));
            }
        }
        CtlCommand::Abandon { job_id } => {
            dist.abandon_split_job(AbandonSplitJobRequest { job_id })
                .await?;
            println!("job {job_id} abandoning");
        }
        CtlCommand::Retry { job_id } => {
            dist.retry_split_job(RetrySplitJobRequest { job_id })
                .await?;
            println!("job {job_id} retried");
        }
        CtlCommand::TransferLeader { group, target } => {
            admin
                .transfer_leadership(RaftAdminTransferLeadershipRequest {
                    target_id: target,
                    target_address: String::new(),
                    group_id: group,
                })
                .await?;
            println!("election triggered");
        }
        CtlCommand::AutoSplit { state } => {
            let mut internal = RefkvInternalClient::new(channel);
            let r = internal
                .set_auto_split(SetAutoSplitRequest {
                    enabled: state == "on",
                })
                .await?
                .into_inner();
            println!("auto-split {}", if r.enabled { "on" } else { "off" });
        }
    }
    Ok(())
}

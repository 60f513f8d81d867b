//! Starting the cluster a run asked for: the target's node image (Docker) or host binary
//! (netns), then a Docker, netns or external cluster running the target's node command.

use super::{ClusterKind, DbKind};
use crate::cluster::docker::{DockerCluster, DockerSpec};
use crate::cluster::external::ExternalCluster;
use crate::cluster::netns::{NetnsCluster, NetnsSpec};
use crate::cluster::Cluster;
use crate::image::{self, NodeImage};
use crate::runner::plan::Plan;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The node image of a non-refkv target (refkv's is built by the runner itself).
pub async fn node_image(plan: &Plan) -> Result<NodeImage> {
    let db = plan.args.db;
    if let Some(tag) = &plan.args.image {
        return image::existing_image(tag).await;
    }
    let server = server_binary(plan).await?;
    let pause_root = image::workspace_root().unwrap_or_else(|| std::env::temp_dir().join("faultline"));
    let pause = image::build_pause(&pause_root).await?;
    super::image::ensure_image(db.name(), &server, &pause).await
}

/// The server binary on this machine: `--db-binary`, refkv built from the workspace, or
/// etcd / redis-server from the PATH.
pub async fn server_binary(plan: &Plan) -> Result<PathBuf> {
    if let Some(p) = &plan.args.db_binary {
        return Ok(p.clone());
    }
    match plan.args.db {
        DbKind::Refkv => match image::workspace_root() {
            Some(root) => image::build_static_server(&root).await,
            None => bail!("the faultline sources are not next to this binary, so refkv cannot be built: pass --db-binary"),
        },
        DbKind::Etcd => super::image::find_etcd(None),
        DbKind::Redis => super::image::find_redis(),
        DbKind::Elastickv => bail!(
            "--db elastickv needs the elastickv server: --db-binary PATH (a binary built from bootjp/elastickv) \
             or, with Docker, --image TAG (see docs/elastickv.md)"
        ),
    }
}

/// Starts the cluster. `image` is the node image for Docker clusters.
pub async fn start(plan: &Plan, run_id: String, run_dir: &Path, image: Option<&NodeImage>) -> Result<Arc<dyn Cluster>> {
    match plan.args.cluster {
        ClusterKind::Docker => {
            let image = image.context("a Docker cluster needs a node image")?;
            let refkv = plan.args.db == DbKind::Refkv;
            let spec = DockerSpec {
                run_id,
                nodes: usize::from(plan.args.nodes),
                image: image.tag.clone(),
                run_dir: run_dir.to_path_buf(),
                server_args: plan.server_args.clone(),
                subnet: plan.subnet,
                db: (!refkv).then(|| plan.db.clone()),
            };
            Ok(Arc::new(DockerCluster::start(spec).await?))
        }
        ClusterKind::Netns => {
            let binary = server_binary(plan).await?;
            let spec = NetnsSpec {
                run_id,
                nodes: usize::from(plan.args.nodes),
                binary,
                run_dir: run_dir.to_path_buf(),
                server_args: plan.server_args.clone(),
                db: plan.db.clone(),
            };
            Ok(Arc::new(NetnsCluster::start(spec).await?))
        }
        ClusterKind::External => {
            let endpoints = plan.args.endpoints.as_deref().context("--cluster external needs --endpoints host:port,...")?;
            Ok(Arc::new(ExternalCluster::new(endpoints)?))
        }
    }
}

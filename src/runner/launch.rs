//! Starting the cluster a run asked for: the target's node image (Docker) or host binary
//! (netns), then a Docker, netns or external cluster running the target's node command.
//! Nothing here depends on which target it is: the [`crate::db::Db`] declares its binary,
//! its image contents and its command line.

use super::plan::Plan;
use crate::cluster::docker::{DockerCluster, DockerSpec};
use crate::cluster::external::ExternalCluster;
use crate::cluster::netns::{NetnsCluster, NetnsSpec};
use crate::cluster::Cluster;
use crate::db::ClusterKind;
use crate::image::{self, NodeImage};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The node image of the run's target: `--image`, or built from its server binary.
pub async fn node_image(plan: &Plan) -> Result<NodeImage> {
    if let Some(tag) = &plan.spec.image {
        return image::existing_image(tag).await;
    }
    let server = server_binary(plan).await?;
    let pause_root = image::workspace_root().unwrap_or_else(|| std::env::temp_dir().join("faultline"));
    let pause = image::build_pause(&pause_root).await?;
    if plan.db.static_binary() {
        image::ensure_image(&server, &pause).await
    } else {
        crate::db::image::ensure_image(plan.db.kind().name(), &server, &pause).await
    }
}

/// The server binary on this machine: `--db-binary`, else the target's default.
pub async fn server_binary(plan: &Plan) -> Result<PathBuf> {
    match &plan.spec.db_binary {
        Some(p) => Ok(p.clone()),
        None => plan.db.default_binary().await,
    }
}

/// Starts the cluster. `image` is the node image for Docker clusters.
pub async fn start(plan: &Plan, run_id: String, run_dir: &Path, image: Option<&NodeImage>) -> Result<Arc<dyn Cluster>> {
    match plan.spec.cluster {
        ClusterKind::Docker => {
            let image = image.context("a Docker cluster needs a node image")?;
            let spec = DockerSpec {
                run_id,
                nodes: usize::from(plan.spec.nodes),
                image: image.tag.clone(),
                run_dir: run_dir.to_path_buf(),
                server_args: plan.server_args.clone(),
                subnet: plan.subnet,
                db: plan.db.clone(),
            };
            Ok(Arc::new(DockerCluster::start(spec).await?))
        }
        ClusterKind::Netns => {
            let binary = server_binary(plan).await?;
            let spec = NetnsSpec {
                run_id,
                nodes: usize::from(plan.spec.nodes),
                binary,
                run_dir: run_dir.to_path_buf(),
                server_args: plan.server_args.clone(),
                db: plan.db.clone(),
            };
            Ok(Arc::new(NetnsCluster::start(spec).await?))
        }
        ClusterKind::External => {
            let endpoints = plan.spec.endpoints.as_deref().context("--cluster external needs --endpoints host:port,...")?;
            Ok(Arc::new(ExternalCluster::new(endpoints)?))
        }
    }
}

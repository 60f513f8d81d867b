//! Starting the cluster a run asked for: the target's node image (Docker) or host binary
//! (netns, uploaded by ssh), then a Docker, netns, ssh or external cluster running the
//! target's node command.
//! Nothing here depends on which target it is: the [`crate::db::Db`] declares its binary,
//! its image contents and its command line.

use super::plan::Plan;
use crate::cluster::docker::{DockerCluster, DockerSpec};
use crate::cluster::external::ExternalCluster;
use crate::cluster::netns::{NetnsCluster, NetnsSpec};
use crate::cluster::ssh::{Binary, SshCluster, SshSpec};
use crate::cluster::Cluster;
use crate::db::{ClusterKind, Db};
use crate::image::{self, NodeImage};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The node image of target `db`: the `existing` image (`--image`), or one built from its
/// server binary (`binary`, else the target's default).
pub async fn node_image(
    db: &dyn Db,
    existing: Option<&str>,
    binary: Option<&Path>,
) -> Result<NodeImage> {
    if let Some(tag) = existing {
        return image::existing_image(tag).await;
    }
    if let Some(p) = binary.filter(|_| db.capabilities().has(crate::db::Capability::StaticBinary)) {
        image::check_static_binary(p)?;
    }
    let server = server_binary(db, binary).await?;
    let pause_root =
        image::workspace_root().unwrap_or_else(|| std::env::temp_dir().join("faultline"));
    let pause = image::build_pause(&pause_root).await?;
    image::ensure_image(db.kind().name(), &server, &pause).await
}

/// The server binary on this machine: `binary` (`--db-binary`), else the target's default.
pub async fn server_binary(db: &dyn Db, binary: Option<&Path>) -> Result<PathBuf> {
    match binary {
        Some(p) => Ok(p.to_path_buf()),
        None => db.default_binary().await,
    }
}

/// Starts the cluster. `image` is the node image for Docker clusters.
pub async fn start(
    plan: &Plan,
    run_id: String,
    run_dir: &Path,
    image: Option<&NodeImage>,
) -> Result<Arc<dyn Cluster>> {
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
                leave_running: plan.spec.leave_running,
            };
            Ok(Arc::new(DockerCluster::start(spec).await?))
        }
        ClusterKind::Netns => {
            let binary = server_binary(plan.db.as_ref(), plan.spec.db_binary.as_deref()).await?;
            let spec = NetnsSpec {
                run_id,
                nodes: usize::from(plan.spec.nodes),
                binary,
                run_dir: run_dir.to_path_buf(),
                server_args: plan.server_args.clone(),
                db: plan.db.clone(),
                leave_running: plan.spec.leave_running,
            };
            Ok(Arc::new(NetnsCluster::start(spec).await?))
        }
        ClusterKind::Ssh => {
            let binary = match &plan.spec.ssh.remote_binary {
                Some(path) => Binary::OnHost(path.clone()),
                None => Binary::Upload(
                    server_binary(plan.db.as_ref(), plan.spec.db_binary.as_deref()).await?,
                ),
            };
            let spec = SshSpec {
                options: plan.spec.ssh.clone(),
                binary,
                server_args: plan.server_args.clone(),
                db: plan.db.clone(),
            };
            Ok(Arc::new(SshCluster::start(spec).await?))
        }
        ClusterKind::External => {
            let endpoints = plan
                .spec
                .endpoints
                .as_deref()
                .context("--cluster external needs --endpoints host:port,...")?;
            Ok(Arc::new(ExternalCluster::new(endpoints)?))
        }
        ClusterKind::InProcess => Ok(Arc::new(ExternalCluster::in_process(usize::from(
            plan.spec.nodes,
        )))),
    }
}

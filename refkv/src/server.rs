//! `refkv serve`: start the node, serve gRPC (client API, health, internal service), and
//! shut down cleanly on SIGTERM/SIGINT.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tonic::{Request, Response, Status};

use crate::api_kv::Api;
use crate::exec::{exec_local, ExecOp, ExecReply};
use crate::node::{self, NodeConfig, NodeCore};
use crate::proto::api::distribution_server::DistributionServer;
use crate::proto::api::raft_admin_server::RaftAdminServer;
use crate::proto::api::raw_kv_server::RawKvServer;
use crate::proto::api::refkv_txn_server::RefkvTxnServer;
use crate::proto::internal::refkv_internal_server::{RefkvInternal, RefkvInternalServer};
use crate::proto::internal::*;

pub struct Internal {
    pub node: Arc<NodeCore>,
}

#[tonic::async_trait]
impl RefkvInternal for Internal {
    async fn raft(&self, req: Request<RaftMessage>) -> Result<Response<RaftReply>, Status> {
        let m = req.into_inner();
        let g = self
            .node
            .group(m.group_id)
            .ok_or_else(|| Status::not_found(format!("unknown raft group {}", m.group_id)))?;
        let kind = RaftKind::try_from(m.kind).unwrap_or(RaftKind::Unspecified);
        let payload = crate::network::handle_raft_message(&g.raft, kind, &m.payload)
            .await
            .map_err(Status::invalid_argument)?;
        Ok(Response::new(RaftReply { payload }))
    }

    async fn execute(
        &self,
        req: Request<ExecuteRequest>,
    ) -> Result<Response<ExecuteReply>, Status> {
        let r = req.into_inner();
        let op: ExecOp = serde_json::from_slice(&r.payload)
            .map_err(|e| Status::invalid_argument(format!("bad op: {e}")))?;
        let reply: ExecReply = exec_local(&self.node, r.group_id, op).await;
        let payload = serde_json::to_vec(&reply).map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(ExecuteReply { payload }))
    }

    async fn elect(&self, req: Request<ElectRequest>) -> Result<Response<ElectReply>, Status> {
        let gid = req.into_inner().group_id;
        let g = self
            .node
            .group(gid)
            .ok_or_else(|| Status::not_found(format!("unknown raft group {gid}")))?;
        g.raft
            .trigger()
            .elect()
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        Ok(Response::new(ElectReply {}))
    }

    async fn set_auto_split(
        &self,
        req: Request<SetAutoSplitRequest>,
    ) -> Result<Response<SetAutoSplitReply>, Status> {
        let on = req.into_inner().enabled;
        self.node.set_auto_split(on);
        tracing::info!(enabled = on, "auto-split switched");
        Ok(Response::new(SetAutoSplitReply { enabled: on }))
    }

    async fn pull_stats(
        &self,
        _: Request<PullStatsRequest>,
    ) -> Result<Response<PullStatsReply>, Status> {
        let window = self
            .node
            .sampler
            .snapshot_and_reset(std::time::Instant::now());
        let payload = serde_json::to_vec(&window).map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(PullStatsReply { payload }))
    }
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("cannot listen for SIGTERM: {e}");
            return std::future::pending().await;
        }
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM received, shutting down"),
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT received, shutting down"),
    }
}

pub async fn serve(cfg: NodeConfig) -> anyhow::Result<()> {
    let addr: SocketAddr = cfg
        .listen
        .parse()
        .map_err(|e| anyhow::anyhow!("--listen {:?}: {e}", cfg.listen))?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("binding {addr}: {e}"))?;
    let dynamo_listener = match &cfg.dynamo_listen {
        Some(a) => {
            let addr: SocketAddr = a
                .parse()
                .map_err(|e| anyhow::anyhow!("--dynamo-listen {a:?}: {e}"))?;
            Some(
                tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(|e| anyhow::anyhow!("binding {addr}: {e}"))?,
            )
        }
        None => None,
    };
    let (core, pristine) = node::start(&cfg).await?;
    if let Some(l) = dynamo_listener {
        let api = Arc::new(crate::dynamo::ops::Dynamo::new(core.clone()));
        tokio::spawn(crate::dynamo::serve(l, api));
    }
    tracing::info!(node = cfg.id, %addr, groups = core.groups.len(), bugs = ?cfg.bugs.names(), pristine = ?pristine, "refkv node starting");
    node::spawn_catalog_follower(core.clone());
    crate::jobs::spawn_driver(core.clone());
    crate::splitter::spawn(core.clone());
    let api = Api { node: core.clone() };
    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_service_status("", tonic_health::ServingStatus::Serving)
        .await;
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .add_service(health_service)
        .add_service(RawKvServer::new(api.clone()))
        .add_service(RaftAdminServer::new(api.clone()))
        .add_service(RefkvTxnServer::new(api.clone()))
        .add_service(DistributionServer::new(api))
        .add_service(
            RefkvInternalServer::new(Internal { node: core.clone() })
                .max_decoding_message_size(256 << 20),
        )
        .serve_with_incoming_shutdown(incoming, async {
            let _ = stop_rx.await;
        });
    let mut server = tokio::spawn(server);
    let boot_core = core.clone();
    tokio::spawn(async move { node::bootstrap(&boot_core, &pristine).await });
    tokio::select! {
        result = &mut server => {
            // The server stopped on its own: an error.
            let result = result.map_err(|e| anyhow::anyhow!("grpc server task: {e}"))?;
            result.map_err(|e| anyhow::anyhow!("grpc server: {e}"))?;
        }
        _ = shutdown_signal() => {
            let _ = stop_tx.send(());
            // Peers and watchers keep connections open; do not wait for them for long.
            if tokio::time::timeout(Duration::from_secs(2), &mut server).await.is_err() {
                tracing::info!("closing remaining client connections");
                server.abort();
            }
        }
    }
    for g in core.groups.values() {
        match tokio::time::timeout(Duration::from_secs(3), g.raft.shutdown()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(group = g.id, "raft shutdown: {e}"),
            Err(_) => tracing::warn!(group = g.id, "raft shutdown timed out"),
        }
    }
    tracing::info!("refkv node stopped");
    Ok(())
}

//! `null`: an in-process, linearizable store (`workloads::null`, one ordered map behind one
//! lock) that answers every call at once, so a run measures and exercises the harness —
//! generator, processes, rate limiter, history sink, checkers — with no server, network or
//! image. `faultline test --db null` runs it; `faultline bench --harness` drives the same
//! store.
//!
//! Invariants: the target declares itself [`Capability::InProcess`], so the plan gives it an
//! in-process cluster (named nodes, all reaching the one map) whatever `--cluster` says, and
//! refuses `--db-binary`, `--image` and every fault up front (there is no node to kill,
//! pause, partition or split; a fault that could not take effect would only make the run
//! `unknown` by vacuity). It reports no commit metadata, catalog or splits, so
//! epoch-authority and split are `not-applicable`; a history recorded against it must
//! check `valid`.

use super::{Capabilities, Capability, Db, DbKind, NodeLayout, Reports};
use futures::future::BoxFuture;
use futures::FutureExt;
use nemesis::{FaultKind, NodeInfo};
use std::path::PathBuf;
use std::sync::Arc;
use workloads::client::{Connector, NodeEndpoint, Protocol};
use workloads::null::NullConnector;
use workloads::{ClientCapability, ClientOptions};

/// The in-process store; every connector it hands out shares its one map.
#[derive(Debug, Clone, Default)]
pub struct Null {
    store: NullConnector,
}

impl Db for Null {
    fn kind(&self) -> DbKind {
        DbKind::Null
    }

    /// No node runs a server: there is no command line.
    fn node_command(&self, _node: &NodeInfo, _all: &[NodeInfo], _layout: &NodeLayout, _extra: &[String]) -> Vec<String> {
        Vec::new()
    }

    /// It says it leads every group; readiness asks for one.
    fn groups(&self) -> Vec<u64> {
        vec![1]
    }

    fn connector(&self, _options: ClientOptions, _nodes: &[NodeEndpoint]) -> Arc<dyn Connector> {
        Arc::new(self.store.clone())
    }

    fn reports(&self) -> Reports {
        Reports { commit_meta: false, catalog: false, splits: false }
    }

    /// In this process, linearizable, with compare-and-set. Every key-value workload, the
    /// hotspot one included: its ops are plain key-value ops, and driving them is what the
    /// target is for (its split checker is `not-applicable`). Not the transactional ones:
    /// its client runs no transactions.
    fn capabilities(&self) -> Capabilities {
        Capabilities::of(&[
            Capability::InProcess,
            Capability::LinearizableReads,
            Capability::HotRangeWithoutSplits,
            Capability::Client(Protocol::Grpc, ClientCapability::Cas),
        ])
    }

    fn faults(&self) -> &'static [FaultKind] {
        &[]
    }

    fn forget_data(&self) {
        self.store.clear();
    }

    fn default_binary(&self) -> BoxFuture<'static, anyhow::Result<PathBuf>> {
        std::future::ready(Err(anyhow::anyhow!("--db null runs inside faultline: it has no server binary"))).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_connector_of_one_target_shares_one_map() {
        let db = Null::default();
        let node = |name: &str| NodeEndpoint { name: name.into(), addr: "in-process".into() };
        let a = db.connector(ClientOptions::default(), &[]).connect(&node("n1")).unwrap();
        let b = db.connector(ClientOptions::default(), &[]).connect(&node("n2")).unwrap();
        a.write(b"k", b"7").await.unwrap();
        assert_eq!(b.read(b"k").await.unwrap().value.as_deref(), Some(&b"7"[..]));
    }
}

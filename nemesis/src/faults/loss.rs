//! `loss`: drops a share of the packets between nodes (`--loss-probability`), with netem
//! on each node's interface when available, else with iptables' `statistic` match.
//!
//! Effective when every node's rule was installed and the probability is above zero.

use super::{Ctx, Fault, Started, Style, Turn, Undo};
use crate::net;
use analysis::history::FaultValue;
use futures::future::BoxFuture;
use rand::rngs::StdRng;

pub struct Loss;

#[derive(serde::Serialize)]
struct Facts {
    probability: f64,
    mechanism: &'static str,
}

impl Fault for Loss {
    fn name(&self) -> &'static str {
        "loss"
    }

    fn effective_means(&self) -> &'static str {
        "every node's loss rule was installed and the probability is above zero"
    }

    fn style(&self) -> Style {
        Style { rgb: (230, 170, 40), label: "loss" }
    }

    fn start<'a>(&'a self, ctx: &'a Ctx, _turn: Turn, _rng: &'a mut StdRng) -> BoxFuture<'a, Started> {
        Box::pin(start_loss(ctx))
    }
}

async fn start_loss(ctx: &Ctx) -> Started {
    let nodes = ctx.control.nodes().to_vec();
    let p = ctx.loss_probability;
    let per_node = nodes.iter().map(|n| async {
        let ns = ctx.control.node_net(&n.name).await?;
        if ctx.use_netem {
            return net::netem_loss(&*ns, "eth0", p).await;
        }
        net::ensure_chain(&*ns).await?;
        for peer in nodes.iter().filter(|o| o.name != n.name) {
            net::lose_inbound_from(&*ns, peer.ip, p).await?;
        }
        anyhow::Ok(())
    });
    let results = futures::future::join_all(per_node).await;
    let errors: Vec<String> = nodes.iter().zip(results).filter_map(|(n, r)| r.err().map(|e| format!("{}: {e:#}", n.name))).collect();
    let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
    let mut value = FaultValue::new(names.clone());
    value.effective = Some(errors.is_empty() && p > 0.0);
    value.errors = Some(errors);
    let mechanism = if ctx.use_netem { "netem" } else { "iptables-statistic" };
    Started {
        value: value.with_facts(Facts { probability: p, mechanism }),
        undo: Undo::Network { nodes: names, netem: ctx.use_netem },
        summary: Some(format!("loss {:.0}%", 100.0 * p)),
    }
}

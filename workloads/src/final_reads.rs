//! Final reads: after the faults are healed, run the workload's final operations
//! ([`crate::generators::Workload::final_ops`]: by default a read of every register key it
//! touched and a scan of every set range; a transaction workload's one-read transactions of
//! its keys) through every node, recorded as ordinary operations (one process per node,
//! numbered after the workload's processes). Each is retried until it succeeds or the
//! deadline passes, so the checkers see the settled state from every node's point of view.
//!
//! An operation settles when an attempt succeeded ([`crate::operation::Operation::settled`]),
//! except the queue's drain ([`crate::queue::Consume`]): its attempts are bound to the
//! client's next step ([`crate::operation::Operation::bind`]: a delete of a message it
//! received, or a receive), and it is done once the client saw the queue stay empty past a
//! visibility timeout.
//!
//! Invariant: every final operation only reads (its call kind is `Read`), so retrying one
//! changes nothing — save the drain's deletes, which remove only messages the drain itself
//! received (already recorded as delivered).

use crate::client::{CallKind, NodeEndpoint};
use crate::generators::{OpSpec, Touched};
use crate::kv_ops::{Read, Scan};
use crate::processes::{invoke_and_complete, ProcessContext};
use analysis::history::OpType;
use futures::future::join_all;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FinalReadsOptions {
    /// Overall deadline for all final reads.
    pub timeout: Duration,
    /// Pause between attempts of a read that failed.
    pub retry_interval: Duration,
}

impl Default for FinalReadsOptions {
    fn default() -> Self {
        FinalReadsOptions {
            timeout: Duration::from_secs(30),
            retry_interval: Duration::from_millis(200),
        }
    }
}

/// What the final reads achieved.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FinalReadsReport {
    /// Operations recorded (attempts, including failed ones).
    pub attempts: u64,
    /// Reads that succeeded.
    pub succeeded: u64,
    /// `node: key-or-range` of reads that never succeeded before the deadline.
    pub unread: Vec<String>,
    /// The first process number not used by the final reads.
    pub next_process: u64,
}

/// The default final reads of a key-value workload: a read of every register `touched`
/// names, then a scan of every set range.
pub fn reads_of(touched: &Touched) -> Vec<OpSpec> {
    let registers = touched
        .registers
        .iter()
        .map(|k| OpSpec::new(Read { key: k.clone() }));
    let ranges = touched.set_ranges.iter().map(|r| {
        OpSpec::new(Scan {
            start: r.start.clone(),
            end: r.end.clone(),
        })
    });
    registers.chain(ranges).collect()
}

/// Runs the final operations `plan` through every node in `ctx.nodes`, starting at process
/// number `first_process`.
pub async fn run_final_reads(
    ctx: &ProcessContext,
    plan: &[OpSpec],
    first_process: u64,
    opts: FinalReadsOptions,
) -> FinalReadsReport {
    let deadline = Instant::now() + opts.timeout;
    let spare = Arc::new(AtomicU64::new(first_process + ctx.nodes.len() as u64));
    let per_node = ctx.nodes.iter().enumerate().map(|(i, node)| {
        let spare = spare.clone();
        async move {
            read_through(
                ctx,
                node,
                first_process + i as u64,
                plan,
                deadline,
                opts.retry_interval,
                &spare,
            )
            .await
        }
    });
    let mut report = FinalReadsReport::default();
    for r in join_all(per_node).await {
        report.attempts += r.attempts;
        report.succeeded += r.succeeded;
        report.unread.extend(r.unread);
    }
    report.next_process = spare.load(Ordering::SeqCst);
    report
}

async fn read_through(
    ctx: &ProcessContext,
    node: &NodeEndpoint,
    mut process: u64,
    plan: &[OpSpec],
    deadline: Instant,
    retry: Duration,
    spare: &AtomicU64,
) -> FinalReadsReport {
    let mut report = FinalReadsReport::default();
    let mut client = match ctx.connector.connect(node) {
        Ok(c) => c,
        Err(e) => {
            report.unread = plan
                .iter()
                .map(|s| format!("{}: {} ({e:#})", node.name, s.describe()))
                .collect();
            return report;
        }
    };
    for spec in plan {
        debug_assert_eq!(spec.call_kind(), CallKind::Read);
        let mut done = false;
        while !done && Instant::now() < deadline && !ctx.cancel.is_cancelled() {
            report.attempts += 1;
            let attempt = spec.bind(&*client);
            let outcome = invoke_and_complete(ctx, process, &node.name, &*client, &attempt).await;
            done = spec.settled(&*client, outcome);
            let pause = !done && spec.pause_before_next(&*client, outcome);
            if outcome == OpType::Info {
                process = spare.fetch_add(1, Ordering::SeqCst);
                if let Ok(c) = ctx.connector.connect(node) {
                    client = c;
                }
            }
            if pause {
                tokio::select! {
                    _ = tokio::time::sleep(retry) => {}
                    _ = ctx.cancel.cancelled() => {}
                }
            }
        }
        if done {
            report.succeeded += 1;
        } else {
            report
                .unread
                .push(format!("{}: {}", node.name, spec.describe()));
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generators::ScanRange;

    #[test]
    fn plan_reads_registers_then_scans_ranges() {
        let touched = Touched {
            registers: ["reg/2".to_string(), "reg/1".to_string()].into(),
            set_ranges: [ScanRange::prefix("hot/")].into(),
            ..Touched::default()
        };
        let plan = reads_of(&touched);
        assert_eq!(
            plan,
            vec![
                OpSpec::new(Read {
                    key: "reg/1".into()
                }),
                OpSpec::new(Read {
                    key: "reg/2".into()
                }),
                OpSpec::new(Scan {
                    start: "hot/".into(),
                    end: "hot0".into()
                }),
            ]
        );
        assert!(plan.iter().all(|s| s.call_kind() == CallKind::Read));
    }
}

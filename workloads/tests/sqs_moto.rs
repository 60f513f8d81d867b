//! Wire conformance of the SQS client (`--client sqs`) and the `queue` workload against a
//! third-party SQS server: moto's ([`moto`]; skipped without it, outside CI). The client
//! creates the run's FIFO queue before its first call; a message sent is received with its
//! group and deleted by its receipt; a group's messages come in send order, one batch at a
//! time; a short run of the workload followed by the drain ends with an `ok` empty receive
//! and the `queue` checker judges it valid with nothing lost; a refused call (a send to a
//! queue that does not exist) and a node that is not listening fail definitely.

mod moto;

use analysis::history::{History, HistorySink, Op, OpType};
use moto::{free_port, moto_or_skip, start_moto};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use workloads::client::sqs::{SqsClient, SqsConnector, SqsOptions, ATTRIBUTE_SETS};
use workloads::client::{Connector, NodeEndpoint, QueueClient};
use workloads::config::{Concurrency, WorkloadConfig};
use workloads::final_reads::FinalReadsOptions;
use workloads::stats::Stats;
use workloads::{Certainty, KvTarget, WorkloadKind};

fn options(queue: &str) -> SqsOptions {
    SqsOptions {
        call_timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(2),
        queue: queue.into(),
    }
}

fn node(addr: &str) -> NodeEndpoint {
    NodeEndpoint {
        name: "n1".into(),
        addr: addr.into(),
    }
}

fn client(connector: &SqsConnector, addr: &str) -> SqsClient {
    connector.client(&node(addr))
}

#[tokio::test]
async fn a_message_is_sent_received_with_its_group_and_deleted() {
    let Some(binary) = moto_or_skip() else {
        return;
    };
    let (_moto, addr) = start_moto(&binary);
    let connector = SqsConnector::new(options("round-trip.fifo"));
    let c = client(&connector, &addr);
    let sent = c.send("g1", "g1:0").await.expect("SendMessage");
    assert!(sent["id"].is_string(), "the message id: {sent}");
    let setup = connector.queue_setup().expect("the queue exists");
    assert_eq!(
        setup
            .attributes
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect::<Vec<_>>(),
        ATTRIBUTE_SETS[0].to_vec(),
        "moto takes the HT-FIFO attributes"
    );
    let got = c.receive(10, 5).await.expect("ReceiveMessage");
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        (got[0].group.as_str(), got[0].body.as_str()),
        ("g1", "g1:0")
    );
    let held = c.take_held().expect("the client holds what it received");
    assert_eq!(held, got[0]);
    assert!(c.take_held().is_none());
    c.delete_message(&held.receipt)
        .await
        .expect("DeleteMessage");
    assert!(
        c.receive(10, 0).await.expect("ReceiveMessage").is_empty(),
        "deleted: not delivered again, even with no visibility timeout"
    );
    let scan = c.scan(b"a", b"z", 10).await.expect_err("no scans");
    assert_eq!(
        (scan.certainty, scan.tag),
        (Certainty::Definite, "unimplemented")
    );
}

#[tokio::test]
async fn a_groups_messages_come_in_send_order_one_in_flight_batch_at_a_time() {
    let Some(binary) = moto_or_skip() else {
        return;
    };
    let (_moto, addr) = start_moto(&binary);
    let connector = SqsConnector::new(options("order.fifo"));
    let (a, b) = (client(&connector, &addr), client(&connector, &addr));
    for seq in 0..6 {
        a.send("g0", &format!("g0:{seq}")).await.expect("send");
    }
    let first = a.receive(3, 30).await.expect("receive");
    let bodies: Vec<&str> = first.iter().map(|m| m.body.as_str()).collect();
    assert_eq!(bodies, ["g0:0", "g0:1", "g0:2"]);
    assert!(
        b.receive(10, 30).await.expect("receive").is_empty(),
        "the group is held back while its earlier messages are in flight"
    );
    while let Some(m) = a.take_held() {
        a.delete_message(&m.receipt).await.expect("delete");
    }
    let rest = b.receive(10, 30).await.expect("receive");
    let bodies: Vec<&str> = rest.iter().map(|m| m.body.as_str()).collect();
    assert_eq!(bodies, ["g0:3", "g0:4", "g0:5"]);
}

/// The runner's sink in memory: indices and monotonic times assigned on record.
struct TimedSink {
    start: Instant,
    ops: Mutex<Vec<Op>>,
}

impl HistorySink for TimedSink {
    fn record(&self, mut op: Op) -> u64 {
        let mut ops = self.ops.lock().unwrap();
        op.index = ops.len() as u64;
        op.time = self.start.elapsed().as_nanos() as u64;
        ops.push(op);
        ops.len() as u64 - 1
    }
}

#[tokio::test]
async fn a_short_run_then_the_drain_is_judged_valid_with_nothing_lost() {
    let Some(binary) = moto_or_skip() else {
        return;
    };
    let (_moto, addr) = start_moto(&binary);
    let connector: Arc<dyn Connector> = Arc::new(SqsConnector::new(options("run.fifo")));
    let nodes = vec![node(&addr)];
    let sink = Arc::new(TimedSink {
        start: Instant::now(),
        ops: Mutex::new(Vec::new()),
    });
    let stats = Arc::new(Stats::default());
    let cfg = WorkloadConfig {
        concurrency: Concurrency::Total(4),
        rate: 60.0,
        time_limit_s: 3.0,
        ..WorkloadConfig::defaults(WorkloadKind::Queue)
    };
    let summary = workloads::run_workload_with(
        &cfg,
        connector.clone(),
        &nodes,
        sink.clone(),
        stats.clone(),
        CancellationToken::new(),
    )
    .await
    .expect("the workload runs");
    let drain_started = Instant::now();
    let report = workloads::final_reads_with(
        connector,
        &summary,
        &nodes,
        sink.clone(),
        stats,
        CancellationToken::new(),
        FinalReadsOptions {
            timeout: Duration::from_secs(40),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(
        (report.succeeded, report.unread.len()),
        (1, 0),
        "{report:?}"
    );
    assert!(
        drain_started.elapsed() >= Duration::from_secs(6),
        "the drain waits a visibility timeout (5 s) and the margin past its start"
    );
    let ops = sink.ops.lock().unwrap().clone();
    let empty_ok_receive = |o: &Op| {
        o.f == "receive" && o.kind == OpType::Ok && o.value.as_array().is_some_and(|v| v.is_empty())
    };
    assert!(
        ops.last().is_some_and(empty_ok_receive),
        "the drain ends on an ok empty receive: {:?}",
        ops.last()
    );
    let result = analysis::checkers::queue::check(&History::new(ops));
    assert_eq!(result.details["drained"], true, "{result:?}");
    assert_eq!(
        result.valid,
        analysis::verdict::Validity::Valid,
        "{result:?}"
    );
    assert_eq!(result.counts["lost-count"], 0);
    assert_eq!(result.counts["never-received-count"], 0, "{result:?}");
    assert!(result.counts["acknowledged-count"] > 20, "{result:?}");
}

#[tokio::test]
async fn a_send_to_a_queue_that_does_not_exist_is_refused_definitely() {
    let Some(binary) = moto_or_skip() else {
        return;
    };
    let (_moto, addr) = start_moto(&binary);
    let sdk = workloads::client::sqs::sdk_client(&addr, &options("unused.fifo"));
    let e = sdk
        .send_message()
        .queue_url(format!("http://{addr}/123456789012/missing.fifo"))
        .message_group_id("g0")
        .message_body("g0:0")
        .send()
        .await
        .expect_err("no such queue");
    let classified =
        workloads::client::sqs::classify_sdk(workloads::client::CallKind::Mutation, &e);
    assert_eq!(
        (classified.certainty, classified.tag),
        (Certainty::Definite, "refused"),
        "{classified}"
    );
}

#[tokio::test]
async fn a_node_that_is_not_listening_fails_definitely() {
    let connector = SqsConnector::new(options("nobody.fifo"));
    let c = client(&connector, &format!("127.0.0.1:{}", free_port()));
    let e = c.send("g0", "g0:0").await.expect_err("nobody listens");
    assert_eq!(e.certainty, Certainty::Definite, "{e}");
    assert_eq!(e.tag, "queue-not-ready", "{e}");
}

//! [`SqsClient`]: the `queue` workload's calls over an SQS-compatible API (`--client
//! sqs`), the shape of elastickv's `sqs_htfifo_workload.clj`: one FIFO queue per run
//! (name [`SqsOptions::queue`]), `SendMessage` with the group as `MessageGroupId` (content-
//! based deduplication on, so no deduplication id), short-poll `ReceiveMessage` asking for
//! each message's `MessageGroupId`, `DeleteMessage` by receipt handle. Through the official
//! AWS SDK for Rust (`aws-sdk-sqs`, the JSON protocol), one SDK client per process bound to
//! its node's endpoint over plain HTTP, static dummy credentials, region `us-east-1`.
//!
//! The queue is created once per run, before a client's first call, with the attributes
//! of the first of [`ATTRIBUTE_SETS`] the server accepts: HT-FIFO (`PartitionCount` 4,
//! `FifoThroughputLimit` `perMessageGroupId`, `DeduplicationScope` `messageGroup`) where
//! the server takes it, else a plain FIFO queue; which one was set is logged and kept
//! ([`SqsConnector::queue_setup`]). An existing queue of that name is used as it is.
//!
//! What it runs: the queue calls ([`QueueClient`]). Register reads and writes, scans and the
//! catalog are not offered (a definite `unimplemented`); the catalog, splits and status go
//! through the target's gRPC control client.
//!
//! Invariants: the SDK never retries (one call = one HTTP request); a call made before the
//! queue exists fails definitely, unsent; every failure is classified by [`classify`]; a
//! process's received messages stay with its client ([`Held`]) until a delete takes them.

pub mod classify;

use super::aws::{self, chain_text, failure_of, AwsFailure};
use super::classify::{CallError, CallKind, Certainty};
use super::{
    CallResult, Connector, GroupStatus, KvTarget, NodeEndpoint, QueueClient, ReadReply, ScanReply,
    SplitReply, SplitRequest, WriteReply,
};
use crate::queue::{Held, Received};
use analysis::history::CatalogSnapshot;
use aws_sdk_sqs::config::http::HttpResponse;
use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use classify::classify_sqs;
use futures::future::BoxFuture;
use serde_json::{json, Value};
use std::error::Error as StdError;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::OnceCell;
use tokio::time::Instant;

/// The queue attributes tried in order at creation: HT-FIFO as elastickv's suite creates
/// it, then a plain FIFO queue (content-based deduplication: the bodies are unique).
pub const ATTRIBUTE_SETS: &[&[(&str, &str)]] = &[
    &[
        ("FifoQueue", "true"),
        ("ContentBasedDeduplication", "true"),
        ("PartitionCount", "4"),
        ("FifoThroughputLimit", "perMessageGroupId"),
        ("DeduplicationScope", "messageGroup"),
    ],
    &[("FifoQueue", "true"), ("ContentBasedDeduplication", "true")],
];

/// The queue's name for a run: unique per run (a FIFO queue's name ends in `.fifo`), so a
/// run against a cluster that outlives it starts on an empty queue.
pub fn run_queue_name() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!("faultline-{ms}.fifo")
}

/// Deadlines and the queue of an [`SqsClient`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqsOptions {
    /// The whole call (connect, send, answer).
    pub call_timeout: Duration,
    pub connect_timeout: Duration,
    /// The queue's name (ends in `.fifo`).
    pub queue: String,
}

/// The run's queue, once created: its URL and the attributes it was created with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueSetup {
    pub url: String,
    pub attributes: Vec<(String, String)>,
}

/// One process's SQS client.
pub struct SqsClient {
    node: String,
    options: SqsOptions,
    sdk: aws_sdk_sqs::Client,
    queue: Arc<OnceCell<QueueSetup>>,
    held: Mutex<Held>,
}

/// The SDK client of one endpoint (`ip:port`, plain HTTP).
pub fn sdk_client(addr: &str, options: &SqsOptions) -> aws_sdk_sqs::Client {
    let config = aws::sdk_config!(aws_sdk_sqs, addr, options).build();
    aws_sdk_sqs::Client::from_conf(config)
}

/// An SDK error of a call of `kind`, classified by [`classify::classify_sqs`].
pub fn classify_sdk<E>(kind: CallKind, e: &SdkError<E, HttpResponse>) -> CallError
where
    E: ProvideErrorMetadata + StdError + 'static,
{
    aws::classify_with(classify_sqs, kind, e)
}

/// Creates the queue with the first of [`ATTRIBUTE_SETS`] the server accepts (a refusal
/// of the request, [`classify::refused_code`], tries the next). A failure is definite: no
/// queue call is sent until this succeeds.
async fn create_queue(sdk: &aws_sdk_sqs::Client, name: &str) -> CallResult<QueueSetup> {
    let mut refusals = Vec::new();
    for set in ATTRIBUTE_SETS {
        let mut call = sdk.create_queue().queue_name(name);
        for (k, v) in *set {
            call = call.attributes(QueueAttributeName::from(*k), *v);
        }
        let e = match call.send().await {
            Ok(out) => {
                let setup = QueueSetup {
                    url: out.queue_url().unwrap_or(name).to_string(),
                    attributes: set
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                };
                tracing::info!(
                    "sqs queue {} created with {:?} (refused before: {refusals:?})",
                    setup.url,
                    setup.attributes
                );
                return Ok(setup);
            }
            Err(e) => e,
        };
        let failure = failure_of(&e);
        let refusal =
            matches!(failure, AwsFailure::Service { code, .. } if classify::refused_code(code));
        let text = format!("creating queue {name}: {}", chain_text(&e));
        if !refusal {
            let why = classify_sqs(CallKind::Read, failure, &text);
            return Err(CallError::new(
                Certainty::Definite,
                "queue-not-ready",
                why.to_string(),
            ));
        }
        refusals.push(text);
    }
    Err(CallError::new(
        Certainty::Definite,
        "queue-not-ready",
        refusals.join("; "),
    ))
}

impl SqsClient {
    /// The SDK client and the queue's URL, once the queue exists (a definite failure,
    /// unsent, otherwise).
    async fn ready(&self) -> CallResult<(&aws_sdk_sqs::Client, &str)> {
        let setup = self
            .queue
            .get_or_try_init(|| create_queue(&self.sdk, &self.options.queue))
            .await?;
        Ok((&self.sdk, setup.url.as_str()))
    }

    async fn send_message(&self, group: &str, body: &str) -> CallResult<Value> {
        let (sdk, url) = self.ready().await?;
        let out = sdk
            .send_message()
            .queue_url(url)
            .message_group_id(group)
            .message_body(body)
            .send()
            .await
            .map_err(|e| classify_sdk(CallKind::Mutation, &e))?;
        Ok(json!({"id": out.message_id(), "seq": out.sequence_number()}))
    }

    async fn receive_messages(&self, max: u32, visibility_s: u32) -> CallResult<Vec<Received>> {
        let (sdk, url) = self.ready().await?;
        let sent = Instant::now();
        let out = sdk
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(max as i32)
            .visibility_timeout(visibility_s as i32)
            .wait_time_seconds(0)
            .message_system_attribute_names(MessageSystemAttributeName::MessageGroupId)
            .send()
            .await
            .map_err(|e| classify_sdk(CallKind::Read, &e))?;
        let got: Vec<Received> = out
            .messages()
            .iter()
            .map(received)
            .collect::<CallResult<_>>()?;
        let visibility = Duration::from_secs(u64::from(visibility_s));
        self.held_mut()
            .received(sent, Instant::now(), visibility, &got);
        Ok(got)
    }

    async fn delete_by_receipt(&self, receipt: &str) -> CallResult<()> {
        let (sdk, url) = self.ready().await?;
        sdk.delete_message()
            .queue_url(url)
            .receipt_handle(receipt)
            .send()
            .await
            .map_err(|e| classify_sdk(CallKind::Mutation, &e))?;
        Ok(())
    }

    fn held_mut(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A received message: its body, its receipt handle and its group as the server reports
/// it (`MessageGroupId`), or, when it reports none, the group the body names (`g3:17`).
/// A message without body or receipt is an unparsable reply.
fn received(m: &aws_sdk_sqs::types::Message) -> CallResult<Received> {
    let bad = |what: &str| {
        CallError::new(
            Certainty::Definite,
            "bad-response",
            format!("a received message without {what}: {m:?}"),
        )
    };
    let body = m.body().ok_or_else(|| bad("a body"))?.to_string();
    let receipt = m
        .receipt_handle()
        .ok_or_else(|| bad("a receipt handle"))?
        .to_string();
    let reported = m
        .attributes()
        .and_then(|a| a.get(&MessageSystemAttributeName::MessageGroupId));
    let group = match reported {
        Some(g) => g.clone(),
        None => body
            .split_once(':')
            .map_or(body.as_str(), |(g, _)| g)
            .to_string(),
    };
    Ok(Received {
        group,
        body,
        receipt,
    })
}

/// What the SQS client does, for the error of a call it does not offer.
const SQS_SCOPE: &str = "the SQS client sends, receives and deletes queue messages only";

fn refuse<T: Send + 'static>(what: &'static str) -> BoxFuture<'static, CallResult<T>> {
    aws::refuse(SQS_SCOPE, what)
}

impl QueueClient for SqsClient {
    fn send<'a>(&'a self, group: &'a str, body: &'a str) -> BoxFuture<'a, CallResult<Value>> {
        Box::pin(self.send_message(group, body))
    }
    fn receive(&self, max: u32, visibility_s: u32) -> BoxFuture<'_, CallResult<Vec<Received>>> {
        Box::pin(self.receive_messages(max, visibility_s))
    }
    fn delete_message<'a>(&'a self, receipt: &'a str) -> BoxFuture<'a, CallResult<()>> {
        Box::pin(self.delete_by_receipt(receipt))
    }
    fn take_held(&self) -> Option<Received> {
        self.held_mut().take()
    }
    fn found_empty(&self) -> bool {
        self.held_mut().found_empty()
    }
    fn drained(&self) -> bool {
        self.held_mut().drained()
    }
}

impl KvTarget for SqsClient {
    fn node(&self) -> &str {
        &self.node
    }
    fn read(&self, _key: &[u8]) -> BoxFuture<'_, CallResult<ReadReply>> {
        refuse("register reads")
    }
    fn write(&self, _key: &[u8], _value: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        refuse("register writes")
    }
    fn delete(&self, _key: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        refuse("register deletes")
    }
    fn scan(&self, _s: &[u8], _e: &[u8], _l: u64) -> BoxFuture<'_, CallResult<ScanReply>> {
        refuse("scans")
    }
    fn list_routes(&self) -> BoxFuture<'_, CallResult<CatalogSnapshot>> {
        refuse("catalog reads")
    }
    fn split(&self, _request: SplitRequest) -> BoxFuture<'_, CallResult<SplitReply>> {
        refuse("splits")
    }
    fn status(&self, _group: u64) -> BoxFuture<'_, CallResult<GroupStatus>> {
        refuse("status calls")
    }
    fn as_queue(&self) -> Option<&dyn QueueClient> {
        Some(self)
    }
}

/// Makes one [`SqsClient`] per process; they share one queue setup.
pub struct SqsConnector {
    options: SqsOptions,
    queue: Arc<OnceCell<QueueSetup>>,
}

impl SqsConnector {
    pub fn new(options: SqsOptions) -> SqsConnector {
        SqsConnector {
            options,
            queue: Arc::new(OnceCell::new()),
        }
    }

    /// A client of the SQS endpoint `node` (its own address, not the gRPC one).
    pub fn client(&self, node: &NodeEndpoint) -> SqsClient {
        SqsClient {
            node: node.name.clone(),
            sdk: sdk_client(&node.addr, &self.options),
            options: self.options.clone(),
            queue: self.queue.clone(),
            held: Mutex::new(Held::new(Instant::now())),
        }
    }

    /// The run's queue, once a client created it.
    pub fn queue_setup(&self) -> Option<&QueueSetup> {
        self.queue.get()
    }
}

impl Connector for SqsConnector {
    fn connect(&self, node: &NodeEndpoint) -> anyhow::Result<Arc<dyn KvTarget>> {
        Ok(Arc::new(self.client(node)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_group_is_the_reported_one_or_else_the_bodys() {
        let message = |group: Option<&str>| {
            let b = aws_sdk_sqs::types::Message::builder()
                .body("g3:17")
                .receipt_handle("r1");
            match group {
                Some(g) => b.attributes(MessageSystemAttributeName::MessageGroupId, g),
                None => b,
            }
            .build()
        };
        assert_eq!(received(&message(None)).unwrap().group, "g3");
        assert_eq!(received(&message(Some("g5"))).unwrap().group, "g5");
        let no_receipt = aws_sdk_sqs::types::Message::builder().body("g0:0").build();
        assert_eq!(received(&no_receipt).unwrap_err().tag, "bad-response");
    }

    #[test]
    fn run_queue_names_are_fifo_names() {
        let name = run_queue_name();
        assert!(
            name.starts_with("faultline-") && name.ends_with(".fifo"),
            "{name}"
        );
        assert!(name.len() <= 80, "SQS caps a queue name at 80 characters");
    }
}

//! [`DynamoClient`]: faultline's transactions over a DynamoDB-compatible API (`--client
//! dynamodb`), through the official AWS SDK for Rust (`aws-sdk-dynamodb`: SigV4, JSON 1.0,
//! its error shapes), one SDK client per process bound to its node's endpoint over plain
//! HTTP, with static dummy credentials in region `us-east-1`.
//!
//! What it runs: the transaction capability ([`txn`]: Elle's list-append as elastickv's
//! `dynamodb_workload.clj` shapes it) and, in a run with `--value-type`, register reads and
//! writes ([`register`]: every attribute type, as `dynamodb_types_workload.clj`). The
//! other key-value calls (delete, scan; read and write without value types) and the
//! cluster calls answer a definite `unimplemented`: a target pairs this data
//! client with its control client (refkv's and elastickv's gRPC) for the catalog, splits
//! and status.
//!
//! Tables: one (`jepsen_append`) or, with `--tables N`, N, a key's item in the table its
//! number names ([`tables::table_of`]). The connector's clients create the tables they use
//! once, before their first call (`CreateTable`, an existing table accepted, then `DescribeTable` until `ACTIVE`;
//! [`tables`]); a call made before that finished fails definitely, unsent.
//!
//! Invariants: the SDK never retries (one call = one HTTP request, so every outcome is
//! the server's answer to that one request); every failure comes back classified by
//! [`classify`].

pub mod classify;
pub mod register;
pub mod tables;
pub mod txn;
pub mod value_types;

use super::aws;
use super::classify::{CallError, CallKind};
use super::{
    CallResult, Connector, GroupStatus, KvTarget, NodeEndpoint, ReadReply, ScanReply, SplitReply,
    SplitRequest, WriteReply,
};
use analysis::history::CatalogSnapshot;
use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use classify::classify_dynamo;
use futures::future::BoxFuture;
use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Duration;

/// Deadlines of a [`DynamoClient`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DynamoOptions {
    /// The whole call (connect, send, answer).
    pub call_timeout: Duration,
    pub connect_timeout: Duration,
    /// A register run's attribute types (`--value-type`); `None`: transactions only.
    pub value_types: Option<value_types::ValueTypes>,
    /// How many list-append tables the run's keys are spread over (`--tables`; 1: the one
    /// table `jepsen_append`).
    pub append_tables: u32,
}

/// One node's DynamoDB client.
pub struct DynamoClient {
    node: String,
    sdk: aws_sdk_dynamodb::Client,
    tables: Arc<tables::TableSetup>,
    value_types: Option<value_types::ValueTypes>,
}

/// The SDK client of one endpoint (`ip:port`, plain HTTP).
pub fn sdk_client(addr: &str, options: DynamoOptions) -> aws_sdk_dynamodb::Client {
    let config = aws::sdk_config!(aws_sdk_dynamodb, addr, options).build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

impl DynamoClient {
    /// The SDK client, once the run's tables exist (a definite failure, unsent, otherwise).
    async fn ready(&self) -> CallResult<&aws_sdk_dynamodb::Client> {
        self.tables.ensure(&self.sdk).await?;
        Ok(&self.sdk)
    }
}

/// An SDK error of a call of `kind`, classified by [`classify::classify_dynamo`].
pub fn classify_sdk<E>(kind: CallKind, e: &SdkError<E, HttpResponse>) -> CallError
where
    E: ProvideErrorMetadata + StdError + 'static,
{
    aws::classify_with(classify_dynamo, kind, e)
}

/// What the DynamoDB client does, for the error of a call it does not offer.
const DYNAMO_SCOPE: &str = "the DynamoDB client runs transactions only";

fn refuse<T: Send + 'static>(what: &'static str) -> BoxFuture<'static, CallResult<T>> {
    aws::refuse(DYNAMO_SCOPE, what)
}

impl KvTarget for DynamoClient {
    fn node(&self) -> &str {
        &self.node
    }
    /// A register read (`GetItem`) when the run has value types.
    fn read(&self, key: &[u8]) -> BoxFuture<'_, CallResult<ReadReply>> {
        let Some(types) = self.value_types else {
            return refuse("plain reads");
        };
        let key = key.to_vec();
        Box::pin(async move { register::get(self.ready().await?, types, &key).await })
    }
    /// A register write (`PutItem`) when the run has value types.
    fn write(&self, key: &[u8], value: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        let Some(types) = self.value_types else {
            return refuse("plain writes");
        };
        let (key, value) = (key.to_vec(), value.to_vec());
        Box::pin(async move { register::put(self.ready().await?, types, &key, &value).await })
    }
    fn delete(&self, _key: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        refuse("deletes")
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
    fn as_txn(&self) -> Option<&dyn super::TxnClient> {
        Some(self)
    }
}

/// Makes one [`DynamoClient`] per process; they share one table setup.
pub struct DynamoConnector {
    options: DynamoOptions,
    tables: Arc<tables::TableSetup>,
}

impl DynamoConnector {
    pub fn new(options: DynamoOptions) -> DynamoConnector {
        let tables = match options.value_types {
            Some(types) => register::tables(types),
            None => tables::append_tables(options.append_tables),
        };
        DynamoConnector {
            options,
            tables: Arc::new(tables::TableSetup::new(tables)),
        }
    }

    /// A client of the DynamoDB endpoint `node` (its own address, not the gRPC one).
    pub fn client(&self, node: &NodeEndpoint) -> DynamoClient {
        DynamoClient {
            node: node.name.clone(),
            sdk: sdk_client(&node.addr, self.options),
            tables: self.tables.clone(),
            value_types: self.options.value_types,
        }
    }
}

impl Connector for DynamoConnector {
    fn connect(&self, node: &NodeEndpoint) -> anyhow::Result<Arc<dyn KvTarget>> {
        Ok(Arc::new(self.client(node)))
    }
}

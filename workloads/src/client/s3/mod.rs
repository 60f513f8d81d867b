//! [`S3Client`]: register reads and writes over an S3-compatible API (`--client s3`), the
//! shape of elastickv's `s3_workload.clj`: each register key is an object of the bucket
//! [`BUCKET`], a write is `PutObject` of the value as the body, a read `GetObject` (`NoSuchKey`
//! reads as absent). Through the official AWS SDK for Rust (`aws-sdk-s3`: SigV4, path-style
//! URLs, its error parsing), one SDK client per process bound to its node's endpoint over
//! plain HTTP, static dummy credentials, region `us-east-1`.
//!
//! What it runs: read, write and delete, and the object capability ([`objects`]: bodies of
//! any size, single or multipart puts). Scans, compare-and-set and transactions are not
//! offered (a scan answers a definite `unimplemented`), so the run's workload is `register`
//! (reads and writes, no cas) or `objects`; the catalog, splits and status go through the
//! target's gRPC control client.
//!
//! Invariants: the SDK never retries (one call = one HTTP request); the bucket is created
//! once before a client's first call (an existing bucket accepted), and a call made before
//! that succeeded fails definitely, unsent; every failure is classified by [`classify`].

pub mod classify;
mod objects;

use super::aws::{self, AwsFailure};
use super::classify::{CallError, CallKind, Certainty};
use super::{
    CallResult, Connector, GroupStatus, KvTarget, NodeEndpoint, ReadReply, ScanReply, SplitReply,
    SplitRequest, WriteReply,
};
use analysis::history::CatalogSnapshot;
use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use classify::classify_s3;
use futures::future::BoxFuture;
use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OnceCell;

/// The bucket every object of a run lives in (elastickv's suite's).
pub const BUCKET: &str = "jepsen-test";

/// Deadlines of an [`S3Client`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct S3Options {
    /// The whole call (connect, send, answer).
    pub call_timeout: Duration,
    pub connect_timeout: Duration,
}

/// One node's S3 client.
pub struct S3Client {
    node: String,
    addr: String,
    options: S3Options,
    sdk: aws_sdk_s3::Client,
    bucket: Arc<OnceCell<()>>,
}

/// The SDK client of one endpoint (`ip:port`, plain HTTP, path-style URLs).
pub fn sdk_client(addr: &str, options: S3Options) -> aws_sdk_s3::Client {
    let config = aws::sdk_config!(aws_sdk_s3, addr, options)
        .force_path_style(true)
        .build();
    aws_sdk_s3::Client::from_conf(config)
}

/// An SDK error of a call of `kind`, classified by [`classify::classify_s3`].
pub fn classify_sdk<E>(kind: CallKind, e: &SdkError<E, HttpResponse>) -> CallError
where
    E: ProvideErrorMetadata + StdError + 'static,
{
    aws::classify_with(classify_s3, kind, e)
}

impl S3Client {
    /// The SDK client, once the bucket exists (a definite failure, unsent, otherwise).
    async fn ready(&self) -> CallResult<&aws_sdk_s3::Client> {
        self.bucket
            .get_or_try_init(|| create_bucket(&self.addr, self.options.call_timeout))
            .await?;
        Ok(&self.sdk)
    }

    async fn get(&self, key: &[u8]) -> CallResult<ReadReply> {
        let sdk = self.ready().await?;
        let reply = sdk
            .get_object()
            .bucket(BUCKET)
            .key(object_key(key))
            .send()
            .await;
        let out = match reply {
            Ok(out) => out,
            Err(SdkError::ServiceError(s)) if s.err().is_no_such_key() => {
                return Ok(ReadReply::default())
            }
            Err(e) => return Err(classify_sdk(CallKind::Read, &e)),
        };
        let body = out.body.collect().await.map_err(|e| {
            classify_s3(
                CallKind::Read,
                AwsFailure::Transport,
                &format!("reading the object's body: {e}"),
            )
        })?;
        Ok(ReadReply {
            value: Some(body.into_bytes().to_vec()),
            meta: None,
        })
    }

    async fn put(&self, key: &[u8], value: &[u8]) -> CallResult<WriteReply> {
        let sdk = self.ready().await?;
        sdk.put_object()
            .bucket(BUCKET)
            .key(object_key(key))
            .content_type("text/plain")
            .body(value.to_vec().into())
            .send()
            .await
            .map_err(|e| classify_sdk(CallKind::Mutation, &e))?;
        Ok(WriteReply {
            applied: true,
            meta: None,
        })
    }

    async fn remove(&self, key: &[u8]) -> CallResult<WriteReply> {
        let sdk = self.ready().await?;
        sdk.delete_object()
            .bucket(BUCKET)
            .key(object_key(key))
            .send()
            .await
            .map_err(|e| classify_sdk(CallKind::Mutation, &e))?;
        Ok(WriteReply {
            applied: true,
            meta: None,
        })
    }
}

/// The object name of a register key (its bytes as text).
fn object_key(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

/// Creates [`BUCKET`] with a plain path-style `PUT /<bucket>` (as elastickv's own suite
/// does); one that exists already (409) is fine. Not the SDK's `CreateBucket`: it sends
/// `PUT /<bucket>/`, which elastickv parses as an object with an empty key in a bucket that
/// does not exist yet (`NoSuchBucket`; `parseS3Path`, `adapter/s3.go` ~1969–1991). A failure
/// is definite: no data call is sent until this succeeds.
async fn create_bucket(addr: &str, timeout: Duration) -> CallResult<()> {
    let not_ready = |why: String| {
        CallError::new(
            Certainty::Definite,
            "bucket-not-ready",
            format!("creating bucket {BUCKET} at {addr}: {why}"),
        )
    };
    let status = tokio::time::timeout(timeout, plain_put_bucket(addr))
        .await
        .map_err(|_| not_ready("timed out".into()))?
        .map_err(|e| not_ready(e.to_string()))?;
    match status {
        200..=299 | 409 => Ok(()),
        other => Err(not_ready(format!("HTTP {other}"))),
    }
}

/// `PUT /<bucket>` over one HTTP/1.1 connection; the reply's status code.
async fn plain_put_bucket(addr: &str) -> std::io::Result<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut conn = tokio::net::TcpStream::connect(addr).await?;
    let request = format!(
        "PUT /{BUCKET} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    conn.write_all(request.as_bytes()).await?;
    let mut head = [0u8; 64];
    let n = conn.read(&mut head).await?;
    status_code(&head[..n]).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "not an HTTP reply: {:?}",
                String::from_utf8_lossy(&head[..n])
            ),
        )
    })
}

/// The status code of an HTTP/1.x status line (`HTTP/1.1 409 Conflict`).
fn status_code(head: &[u8]) -> Option<u16> {
    let line = std::str::from_utf8(head).ok()?.lines().next()?;
    let mut words = line.split_whitespace();
    words.next().filter(|v| v.starts_with("HTTP/1."))?;
    words.next()?.parse().ok()
}

/// What the S3 client does, for the error of a call it does not offer.
const S3_SCOPE: &str = "the S3 client reads and writes objects only";

fn refuse<T: Send + 'static>(what: &'static str) -> BoxFuture<'static, CallResult<T>> {
    aws::refuse(S3_SCOPE, what)
}

impl KvTarget for S3Client {
    fn node(&self) -> &str {
        &self.node
    }
    fn read(&self, key: &[u8]) -> BoxFuture<'_, CallResult<ReadReply>> {
        let key = key.to_vec();
        Box::pin(async move { self.get(&key).await })
    }
    fn write(&self, key: &[u8], value: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        let (key, value) = (key.to_vec(), value.to_vec());
        Box::pin(async move { self.put(&key, &value).await })
    }
    fn delete(&self, key: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        let key = key.to_vec();
        Box::pin(async move { self.remove(&key).await })
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
    fn as_objects(&self) -> Option<&dyn super::ObjectClient> {
        Some(self)
    }
}

/// Makes one [`S3Client`] per process; they share one bucket setup.
pub struct S3Connector {
    options: S3Options,
    bucket: Arc<OnceCell<()>>,
}

impl S3Connector {
    pub fn new(options: S3Options) -> S3Connector {
        S3Connector {
            options,
            bucket: Arc::new(OnceCell::new()),
        }
    }

    /// A client of the S3 endpoint `node` (its own address, not the gRPC one).
    pub fn client(&self, node: &NodeEndpoint) -> S3Client {
        S3Client {
            node: node.name.clone(),
            addr: node.addr.clone(),
            options: self.options,
            sdk: sdk_client(&node.addr, self.options),
            bucket: self.bucket.clone(),
        }
    }
}

impl Connector for S3Connector {
    fn connect(&self, node: &NodeEndpoint) -> anyhow::Result<Arc<dyn KvTarget>> {
        Ok(Arc::new(self.client(node)))
    }
}

#[cfg(test)]
mod tests {
    use super::status_code;

    #[test]
    fn a_status_line_gives_its_code_and_anything_else_none() {
        assert_eq!(status_code(b"HTTP/1.1 409 Conflict\r\n"), Some(409));
        assert_eq!(status_code(b"HTTP/1.0 200 OK\r\nServer: x"), Some(200));
        assert_eq!(status_code(b"SSH-2.0-OpenSSH"), None);
        assert_eq!(status_code(b""), None);
    }
}

//! What the AWS SDK clients (`--client dynamodb`, `--client s3`, `--client sqs`) share:
//! their SDK configuration ([`sdk_config!`]: endpoint, static identity, deadlines, no
//! retries), the mapping of an SDK error to what happened ([`AwsFailure`], [`failure_of`],
//! [`classify_with`]), reading an SDK error's source chain, and the refusal of calls a
//! client does not offer.
//!
//! Invariants: every SDK client is configured the same way (plain HTTP to one node, dummy
//! credentials, region `us-east-1`, the SDK never retries, so one call = one HTTP request);
//! every SDK error is mapped to an [`AwsFailure`] by the one [`failure_of`], and each
//! client's own table (`s3/classify.rs`, `sqs/classify.rs`, `dynamodb/classify.rs`) alone
//! decides what that failure means for its calls. The SDKs re-export the same
//! `aws-credential-types`, `aws-types`, `aws-smithy-types` and `aws-smithy-runtime-api`
//! items, so one value or function here serves each of them.

use super::classify::{CallError, CallKind, Certainty};
use super::CallResult;
use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::config::{Credentials, Region};
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use futures::future::BoxFuture;
use std::error::Error as StdError;
use std::time::Duration;

/// The config builder of SDK crate `$sdk` (`aws_sdk_s3`, `aws_sdk_sqs`, `aws_sdk_dynamodb`)
/// for the endpoint `$addr` (`ip:port`, plain HTTP), with the deadlines of `$options` (a
/// client's options: `call_timeout` for the whole call, `connect_timeout`): static
/// credentials, region, no retries, no stalled stream protection. A client adds what is its
/// own (S3: path-style URLs) and builds it.
macro_rules! sdk_config {
    ($sdk:ident, $addr:expr, $options:expr) => {
        $sdk::Config::builder()
            .behavior_version($sdk::config::BehaviorVersion::latest())
            .region($crate::client::aws::region())
            .credentials_provider($crate::client::aws::static_credentials())
            .endpoint_url(format!("http://{}", $addr))
            .http_client(::aws_smithy_http_client::Builder::new().build_http())
            .retry_config($sdk::config::retry::RetryConfig::disabled())
            .stalled_stream_protection($sdk::config::StalledStreamProtectionConfig::disabled())
            .timeout_config($crate::client::aws::timeouts(
                $options.call_timeout,
                $options.connect_timeout,
            ))
    };
}
pub(crate) use sdk_config;

/// What went wrong with one AWS SDK call, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AwsFailure<'a> {
    /// The SDK refused to build or sign the request: nothing was sent.
    NotBuilt,
    /// The connection could not be opened: nothing was sent.
    NotConnected,
    /// The call's deadline expired (connect, read or the whole operation).
    TimedOut,
    /// The connection failed after the request may have left.
    Transport,
    /// A reply the SDK could not parse.
    Unparsable,
    /// An error reply: HTTP status, the error code (for DynamoDB the `__type` without its
    /// namespace) and the reply's message (empty when it has none).
    Service {
        status: u16,
        code: &'a str,
        message: &'a str,
    },
}

/// What an SDK error says happened.
pub fn failure_of<E>(e: &SdkError<E, HttpResponse>) -> AwsFailure<'_>
where
    E: ProvideErrorMetadata + StdError + 'static,
{
    match e {
        SdkError::ConstructionFailure(_) => AwsFailure::NotBuilt,
        SdkError::TimeoutError(_) => AwsFailure::TimedOut,
        SdkError::DispatchFailure(_) if refused(e) => AwsFailure::NotConnected,
        SdkError::DispatchFailure(d) if d.is_timeout() => AwsFailure::TimedOut,
        SdkError::ResponseError(_) => AwsFailure::Unparsable,
        SdkError::ServiceError(s) => AwsFailure::Service {
            status: s.raw().status().as_u16(),
            code: s.err().code().unwrap_or("unknown"),
            message: s.err().message().unwrap_or_default(),
        },
        _ => AwsFailure::Transport,
    }
}

/// A client's classification table: a failed call of a kind, what happened, and the whole
/// text of the SDK error (its source chain).
pub type Table = fn(CallKind, AwsFailure<'_>, &str) -> CallError;

/// An SDK error of a call of `kind`, classified by a client's `table`.
pub fn classify_with<E>(table: Table, kind: CallKind, e: &SdkError<E, HttpResponse>) -> CallError
where
    E: ProvideErrorMetadata + StdError + 'static,
{
    table(kind, failure_of(e), &chain_text(e))
}

/// Static dummy credentials: the stores under test sign-check at most, they do not
/// authenticate against an account.
pub fn static_credentials() -> Credentials {
    Credentials::new("faultline", "faultline", None, None, "faultline-static")
}

/// The region every request is signed for.
pub fn region() -> Region {
    Region::new("us-east-1")
}

/// A whole call's deadline and its connect deadline.
pub fn timeouts(call: Duration, connect: Duration) -> TimeoutConfig {
    TimeoutConfig::builder()
        .operation_timeout(call)
        .connect_timeout(connect)
        .build()
}

/// A definite `unimplemented` for a call the client does not offer, unsent: `scope` says
/// what the client does ("the S3 client reads and writes objects only"), `what` the call.
pub fn refuse<T: Send + 'static>(
    scope: &'static str,
    what: &'static str,
) -> BoxFuture<'static, CallResult<T>> {
    Box::pin(async move {
        Err(CallError::new(
            Certainty::Definite,
            "unimplemented",
            format!("{scope}, not {what}"),
        ))
    })
}

/// Whether an `io::Error` somewhere in `e`'s source chain says the connection was refused.
pub fn refused(e: &(dyn StdError + 'static)) -> bool {
    std::iter::successors(Some(e), |e: &&(dyn StdError + 'static)| (*e).source()).any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
    })
}

/// The whole chain of `e`'s messages, for the history.
pub fn chain_text(e: &(dyn StdError + 'static)) -> String {
    std::iter::successors(Some(e), |e: &&(dyn StdError + 'static)| (*e).source())
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_connection_is_found_deep_in_the_source_chain() {
        #[derive(Debug)]
        struct Outer(std::io::Error);
        impl std::fmt::Display for Outer {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "dispatch failure")
            }
        }
        impl StdError for Outer {
            fn source(&self) -> Option<&(dyn StdError + 'static)> {
                Some(&self.0)
            }
        }
        let e = Outer(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert!(refused(&e));
        assert!(chain_text(&e).starts_with("dispatch failure: "));
        let reset = Outer(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(!refused(&reset));
    }
}

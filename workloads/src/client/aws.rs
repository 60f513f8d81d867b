//! What the AWS SDK clients (`--client dynamodb`, `--client s3`) share: their static
//! identity (dummy credentials, region `us-east-1`), their deadlines, and reading an SDK
//! error's source chain.
//!
//! Invariant: both SDKs re-export the same `aws-credential-types`, `aws-types` and
//! `aws-smithy-types` items, so one value here configures either.

use super::classify::{CallError, Certainty};
use super::CallResult;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::config::{Credentials, Region};
use futures::future::BoxFuture;
use std::error::Error as StdError;
use std::time::Duration;

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

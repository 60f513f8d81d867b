//! The outcome of every S3 reply the client can get, as a table ([`classify_s3`]). One test
//! per rule below.
//!
//! | what happened                                                   | read   | write |
//! |-----------------------------------------------------------------|--------|-------|
//! | 2xx (a `GetObject` answered `NoSuchKey`: the object is absent)   | ok     | ok    |
//! | the SDK refused to build the request (nothing sent)             | fail   | fail  |
//! | could not connect (connection refused before sending)           | fail   | fail  |
//! | the request timed out, or the connection broke after sending    | fail   | info  |
//! | a reply the SDK cannot parse                                    | fail   | info  |
//! | any error reply (`InternalError`, `SlowDown`, `NoSuchBucket`, …) | fail   | info  |
//!
//! Why no error reply is a definite failure of a write: elastickv's `PutObject`
//! (`adapter/s3.go` ~897–932) uploads the object's chunks, then commits its manifest; a
//! commit error is answered with `writeS3PutObjectCommitError` whether or not the mutation
//! was attempted, and the reply does not say which. Reads change nothing, so every failed
//! read is definite, as for every other client.

use crate::client::aws::AwsFailure;
use crate::client::classify::{CallError, CallKind, Certainty};

/// The table of the module doc: a failed call of `kind`, classified; `text` is what the
/// history records of it.
pub fn classify_s3(kind: CallKind, failure: AwsFailure<'_>, text: &str) -> CallError {
    use Certainty::{Definite, Indeterminate};
    let (tag, sent) = match failure {
        AwsFailure::NotBuilt => ("not-built", false),
        AwsFailure::NotConnected => ("connection-refused", false),
        AwsFailure::TimedOut => ("timeout", true),
        AwsFailure::Transport => ("transport", true),
        AwsFailure::Unparsable => ("bad-response", true),
        AwsFailure::Service { .. } => ("server-error", true),
    };
    let certainty = match (kind, sent) {
        (CallKind::Mutation, true) => Indeterminate,
        _ => Definite,
    };
    let message = match failure {
        AwsFailure::Service { status, code, .. } => format!("HTTP {status} {code}: {text}"),
        _ => text.to_string(),
    };
    CallError::new(certainty, tag, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use CallKind::{Mutation, Read};
    use Certainty::{Definite, Indeterminate};

    fn certainty(kind: CallKind, f: AwsFailure<'_>) -> Certainty {
        classify_s3(kind, f, "x").certainty
    }

    #[test]
    fn a_request_never_built_fails_definitely() {
        assert_eq!(certainty(Mutation, AwsFailure::NotBuilt), Definite);
        assert_eq!(certainty(Read, AwsFailure::NotBuilt), Definite);
    }

    #[test]
    fn a_refused_connection_fails_definitely() {
        assert_eq!(certainty(Mutation, AwsFailure::NotConnected), Definite);
        assert_eq!(certainty(Read, AwsFailure::NotConnected), Definite);
    }

    #[test]
    fn a_timeout_or_broken_connection_leaves_a_write_indeterminate() {
        for f in [AwsFailure::TimedOut, AwsFailure::Transport] {
            assert_eq!(certainty(Mutation, f), Indeterminate);
            assert_eq!(certainty(Read, f), Definite);
        }
    }

    #[test]
    fn an_unparsable_reply_leaves_a_write_indeterminate() {
        assert_eq!(certainty(Mutation, AwsFailure::Unparsable), Indeterminate);
        assert_eq!(certainty(Read, AwsFailure::Unparsable), Definite);
    }

    #[test]
    fn any_error_reply_leaves_a_write_indeterminate_and_names_the_code() {
        for code in [
            "InternalError",
            "SlowDown",
            "NoSuchBucket",
            "ServiceUnavailable",
        ] {
            let f = AwsFailure::Service {
                status: 500,
                code,
                message: "",
            };
            assert_eq!(certainty(Mutation, f), Indeterminate, "{code}");
            assert_eq!(certainty(Read, f), Definite, "{code}");
            assert!(classify_s3(Mutation, f, "boom").to_string().contains(code));
        }
    }
}

//! The outcome of every SQS reply the client can get, as a table ([`classify_sqs`]). One
//! test per rule below.
//!
//! | what happened                                                       | receive | send, delete |
//! |---------------------------------------------------------------------|---------|--------------|
//! | 2xx                                                                 | ok      | ok           |
//! | the SDK refused to build the request (nothing sent)                 | fail    | fail         |
//! | could not connect (connection refused before sending)               | fail    | fail         |
//! | the request timed out, or the connection broke after sending        | fail    | info         |
//! | a reply the SDK cannot parse                                        | fail    | info         |
//! | a refusal of the request itself ([`REFUSED_CODES`]: validation, a missing queue, an invalid receipt, throttling) | fail | fail |
//! | any other error reply (`InternalFailure`, `ServiceUnavailable`, unknown codes) | fail | info |
//!
//! Why a refusal is definite and other error replies are not: elastickv's SQS adapter
//! answers its typed API errors (`newSQSAPIError`: 4xx with the codes of
//! [`REFUSED_CODES`]) and its throttling from the checks it makes before it dispatches the
//! message's transaction, while a failed dispatch (`coordinator.Dispatch`, after which the
//! write may have committed) is answered `ServiceUnavailable` (503) or `InternalFailure`
//! (500) (`writeSQSErrorFromErr`, `adapter/sqs_catalog.go` ~231–264; the send path
//! `adapter/sqs_messages.go` ~502–560). A receive's failure is always definite: the checker
//! reads nothing from a failed receive, and what it may have hidden is visible again after
//! its visibility timeout.

use crate::client::aws::AwsFailure;
use crate::client::classify::{CallError, CallKind, Certainty};

/// Error codes that refuse the request before it is applied (AWS's JSON and query
/// protocol spellings; elastickv's `sqsErr*` constants).
pub const REFUSED_CODES: &[&str] = &[
    "InvalidParameterValue",
    "MissingParameter",
    "InvalidAttributeName",
    "InvalidAttributeValue",
    "AWS.SimpleQueueService.NonExistentQueue",
    "QueueDoesNotExist",
    "ReceiptHandleIsInvalid",
    "InvalidReceiptHandle",
    "Throttling",
    "RequestThrottled",
    "InvalidAction",
    "MalformedQueryString",
    "InvalidSecurity",
    "InvalidClientTokenId",
    "SignatureDoesNotMatch",
];

/// Whether `code` refuses the request before it is applied (the SDK may report the query
/// protocol's `AWS.SimpleQueueService.` prefix on some).
pub fn refused_code(code: &str) -> bool {
    let bare = code.strip_prefix("AWS.SimpleQueueService.").unwrap_or(code);
    REFUSED_CODES.contains(&code) || REFUSED_CODES.contains(&bare)
}

/// The table of the module doc: a failed call of `kind`, classified; `text` is what the
/// history records of it.
pub fn classify_sqs(kind: CallKind, failure: AwsFailure<'_>, text: &str) -> CallError {
    use Certainty::{Definite, Indeterminate};
    let (tag, sent) = match failure {
        AwsFailure::NotBuilt => ("not-built", false),
        AwsFailure::NotConnected => ("connection-refused", false),
        AwsFailure::TimedOut => ("timeout", true),
        AwsFailure::Transport => ("transport", true),
        AwsFailure::Unparsable => ("bad-response", true),
        AwsFailure::Service { code, .. } if refused_code(code) => ("refused", false),
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
        classify_sqs(kind, f, "x").certainty
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
    fn a_timeout_or_broken_connection_leaves_a_send_or_delete_indeterminate() {
        for f in [AwsFailure::TimedOut, AwsFailure::Transport] {
            assert_eq!(certainty(Mutation, f), Indeterminate);
            assert_eq!(certainty(Read, f), Definite);
        }
    }

    #[test]
    fn an_unparsable_reply_leaves_a_send_or_delete_indeterminate() {
        assert_eq!(certainty(Mutation, AwsFailure::Unparsable), Indeterminate);
        assert_eq!(certainty(Read, AwsFailure::Unparsable), Definite);
    }

    #[test]
    fn a_refusal_of_the_request_fails_definitely_and_names_the_code() {
        for code in [
            "InvalidParameterValue",
            "AWS.SimpleQueueService.NonExistentQueue",
            "QueueDoesNotExist",
            "ReceiptHandleIsInvalid",
            "Throttling",
        ] {
            let f = AwsFailure::Service {
                status: 400,
                code,
                message: "",
            };
            assert_eq!(certainty(Mutation, f), Definite, "{code}");
            assert_eq!(certainty(Read, f), Definite, "{code}");
            let e = classify_sqs(Mutation, f, "no");
            assert_eq!(e.tag, "refused");
            assert!(e.to_string().contains(code));
        }
    }

    #[test]
    fn any_other_error_reply_leaves_a_send_or_delete_indeterminate() {
        for (status, code) in [
            (500, "InternalFailure"),
            (503, "ServiceUnavailable"),
            (400, "SomethingNew"),
        ] {
            let f = AwsFailure::Service {
                status,
                code,
                message: "",
            };
            assert_eq!(certainty(Mutation, f), Indeterminate, "{code}");
            assert_eq!(certainty(Read, f), Definite, "{code}");
        }
    }
}

//! The outcome of every DynamoDB reply the client can get, as a table ([`classify_dynamo`]),
//! decided from elastickv's DynamoDB adapter (bootjp/elastickv d9a031d, `adapter/`), the
//! server `--client dynamodb` is written for. One test per rule below.
//!
//! | what happened                                                    | read   | write |
//! |------------------------------------------------------------------|--------|-------|
//! | 2xx                                                              | ok     | ok    |
//! | the SDK refused to build the request (nothing sent)              | fail   | fail  |
//! | could not connect (connection refused before sending)            | fail   | fail  |
//! | the request timed out, or the connection broke after sending     | fail   | info  |
//! | a reply the SDK cannot parse                                     | fail   | info  |
//! | `TransactionCanceledException`, `ConditionalCheckFailedException` | fail  | info  |
//! | `ValidationException`, `ResourceNotFoundException`               | fail   | info  |
//! | `InternalServerError`, `ServiceUnavailable`, any other error     | fail   | info  |
//!
//! Why no error the server answers is a definite failure of a write: elastickv plans and
//! dispatches a write in a retry loop (`transactWriteItemsWithRetry`,
//! `dynamodb_transact.go` ~662–694; `retryItemWriteWithGeneration*`,
//! `dynamodb_item_write.go` ~116–256): a dispatch answered with a write conflict or a lock
//! (`isRetryableTransactWriteError`, ~1107) is planned again from a fresh read, up to 2 s.
//! elastickv's own comments say such a dispatch may have committed (the one-phase dedup
//! note at `dynamodb_item_write.go` ~192–199: "attempt 1 commits at C1 but returns a
//! WriteConflict"), and a later attempt's planning answers every error type above —
//! `TransactionCanceledException` when the condition no longer holds because the first
//! attempt's own write landed (`processTransactWriteItem`, ~796),
//! `ValidationException` for a failed store read (`buildTransactConditionCheckPlan`,
//! ~1019), `ResourceNotFoundException` from the table-generation fence run *after* a
//! successful dispatch (`verifyTableGeneration`, ~1142–1160). The reply does not say which
//! attempt failed, so none of them proves that nothing was proposed. Errors that are not
//! the adapter's own (`writeDynamoErrorFromErr`, `dynamodb_errors.go` ~37–48) are 503
//! `ServiceUnavailable` or 500 `InternalServerError` with the coordinator's error, and a
//! follower's failed proxying to the leader is a 500 too (`dynamoLeaderProxyErrorWriter`,
//! `dynamodb.go` ~324): all may follow a dispatch.
//!
//! Reads (`GetItem`, `TransactGetItems`) change nothing, so every failed read is definite,
//! as for every other client (`super::super::classify`).

use crate::client::aws::AwsFailure;
use crate::client::classify::{CallError, CallKind, Certainty};

/// The short tag of an error type (`TransactionCanceledException` → `transaction-canceled`).
fn service_tag(code: &str) -> &'static str {
    match code {
        "TransactionCanceledException" => "transaction-canceled",
        "ConditionalCheckFailedException" => "conditional-check-failed",
        "ValidationException" => "validation",
        "ResourceNotFoundException" => "resource-not-found",
        "ResourceInUseException" => "resource-in-use",
        "InternalServerError" => "internal",
        "ServiceUnavailable" => "unavailable",
        "TransactionConflictException" => "transaction-conflict",
        "ProvisionedThroughputExceededException" | "ThrottlingException" => "throttled",
        _ => "server-error",
    }
}

/// The table of the module doc: a failed call of `kind`, classified; `text` is what the
/// history records of a failure without an error reply (an error reply records its status,
/// error type and message).
pub fn classify_dynamo(kind: CallKind, failure: AwsFailure<'_>, text: &str) -> CallError {
    use Certainty::{Definite, Indeterminate};
    let (tag, certainty, message) = match failure {
        AwsFailure::NotBuilt => ("not-sent", Definite, text.to_string()),
        AwsFailure::NotConnected => (
            "unavailable",
            Definite,
            format!("{text} (connection failed before sending)"),
        ),
        AwsFailure::TimedOut => ("timed-out", Indeterminate, text.to_string()),
        AwsFailure::Transport => ("connection-broken", Indeterminate, text.to_string()),
        AwsFailure::Unparsable => ("bad-response", Indeterminate, text.to_string()),
        AwsFailure::Service {
            status,
            code,
            message,
        } => (
            service_tag(code),
            Indeterminate,
            format!("{status} {code}: {message}"),
        ),
    };
    let certainty = match kind {
        CallKind::Read => Definite,
        CallKind::Mutation => certainty,
    };
    CallError::new(certainty, tag, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use CallKind::{Mutation, Read};
    use Certainty::{Definite, Indeterminate};

    fn service(code: &str, status: u16) -> AwsFailure<'_> {
        AwsFailure::Service {
            status,
            code,
            message: "m",
        }
    }

    fn outcome(kind: CallKind, f: AwsFailure<'_>) -> (Certainty, &'static str) {
        let e = classify_dynamo(kind, f, "t");
        (e.certainty, e.tag)
    }

    #[test]
    fn a_request_the_sdk_did_not_build_is_a_definite_failure() {
        assert_eq!(
            outcome(Mutation, AwsFailure::NotBuilt),
            (Definite, "not-sent")
        );
    }

    #[test]
    fn a_refused_connection_is_a_definite_failure() {
        let e = classify_dynamo(Mutation, AwsFailure::NotConnected, "10.0.0.1:8000");
        assert_eq!((e.certainty, e.tag), (Definite, "unavailable"));
        assert!(e.message.contains("before sending"), "{e}");
    }

    #[test]
    fn a_timed_out_write_may_have_applied() {
        assert_eq!(
            outcome(Mutation, AwsFailure::TimedOut),
            (Indeterminate, "timed-out")
        );
    }

    #[test]
    fn a_connection_broken_after_sending_leaves_a_write_indeterminate() {
        assert_eq!(
            outcome(Mutation, AwsFailure::Transport),
            (Indeterminate, "connection-broken")
        );
    }

    #[test]
    fn an_unparsable_reply_to_a_write_is_indeterminate() {
        assert_eq!(
            outcome(Mutation, AwsFailure::Unparsable),
            (Indeterminate, "bad-response")
        );
    }

    #[test]
    fn a_canceled_transaction_may_follow_an_attempt_that_committed() {
        assert_eq!(
            outcome(Mutation, service("TransactionCanceledException", 400)),
            (Indeterminate, "transaction-canceled")
        );
        assert_eq!(
            outcome(Mutation, service("ConditionalCheckFailedException", 400)),
            (Indeterminate, "conditional-check-failed")
        );
    }

    #[test]
    fn validation_and_missing_table_errors_of_a_write_are_indeterminate() {
        assert_eq!(
            outcome(Mutation, service("ValidationException", 400)),
            (Indeterminate, "validation")
        );
        assert_eq!(
            outcome(Mutation, service("ResourceNotFoundException", 400)),
            (Indeterminate, "resource-not-found")
        );
    }

    #[test]
    fn server_errors_of_a_write_are_indeterminate() {
        assert_eq!(
            outcome(Mutation, service("InternalServerError", 500)),
            (Indeterminate, "internal")
        );
        assert_eq!(
            outcome(Mutation, service("ServiceUnavailable", 503)),
            (Indeterminate, "unavailable")
        );
        assert_eq!(
            outcome(Mutation, service("SomethingNew", 418)),
            (Indeterminate, "server-error")
        );
    }

    #[test]
    fn every_failed_read_is_definite_and_keeps_its_reason() {
        for f in [
            AwsFailure::TimedOut,
            AwsFailure::Transport,
            AwsFailure::Unparsable,
            service("TransactionCanceledException", 400),
            service("InternalServerError", 500),
        ] {
            let write_tag = outcome(Mutation, f).1;
            assert_eq!(outcome(Read, f), (Definite, write_tag));
        }
    }

    #[test]
    fn the_message_names_status_and_error_type() {
        let e = classify_dynamo(Mutation, service("ValidationException", 400), "t");
        assert_eq!(e.history_text(), "validation: 400 ValidationException: m");
    }
}

//! Outcome classification: turning a failed gRPC call into a *definite* failure (the
//! operation certainly did not take effect → history `fail`) or an *indeterminate* one (it
//! may have taken effect → history `info`).
//!
//! The rules, for calls that have side effects (write, cas, delete, split):
//!
//! | what happened                                              | certainty      |
//! |------------------------------------------------------------|----------------|
//! | could not connect (tonic `ConnectError` in the source chain) | definite     |
//! | `InvalidArgument`, `NotFound`, `AlreadyExists`, `PermissionDenied`, `Unauthenticated`, `FailedPrecondition`, `Aborted`, `OutOfRange`, `Unimplemented`, `ResourceExhausted` | definite |
//! | `Unavailable` sent by the server (refkv: no leader reachable, nothing proposed) | definite |
//! | `Unavailable` from the transport after the request may have left (broken connection, keep-alive timeout) | indeterminate |
//! | `DeadlineExceeded`, our own deadline expiring, `Cancelled`  | indeterminate  |
//! | `Unknown`, `Internal`, `DataLoss` (e.g. stream reset after sending) | indeterminate |
//!
//! Calls without side effects (read, scan, list-routes, status) are always *definite*: a
//! read that timed out cannot have changed the store, so recording it as `fail` is
//! equivalent to Jepsen's practice of dropping indeterminate reads, and it does not retire
//! the process. The error text still says what happened (`timed-out`, `unavailable`, …).
//!
//! A server-sent status carries no Rust `source`; statuses tonic makes from transport
//! errors do. That is how a server's `Unavailable` (definite in refkv's documented mapping)
//! is told apart from a broken connection's.

use std::error::Error as StdError;
use tonic::{Code, Status};

/// Whether a call can change the store, which decides how its unknown outcomes are recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    /// Read, scan, catalog listing, status: no side effects.
    Read,
    /// Write, compare-and-set, delete, split: may change the store.
    Mutation,
}

/// What the client knows about a call that did not succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Certainty {
    /// The operation certainly did not take effect (history `fail`).
    Definite,
    /// The operation may or may not have taken effect (history `info`).
    Indeterminate,
}

/// A failed call, classified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{tag}: {message}")]
pub struct CallError {
    pub certainty: Certainty,
    /// Short machine-friendly reason, e.g. `timed-out`, `unavailable`, `aborted`.
    pub tag: &'static str,
    /// Human-readable detail (the server's message or the transport error).
    pub message: String,
}

/// Longest error message kept in a history entry.
const MAX_MESSAGE: usize = 200;

impl CallError {
    pub fn new(certainty: Certainty, tag: &'static str, message: impl Into<String>) -> Self {
        let mut message = message.into();
        if message.len() > MAX_MESSAGE {
            let mut cut = MAX_MESSAGE;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            message.push('…');
        }
        CallError {
            certainty,
            tag,
            message,
        }
    }

    /// The call did not finish within the client's deadline.
    pub fn timed_out(kind: CallKind) -> Self {
        CallError::new(
            certainty_for(kind, Certainty::Indeterminate),
            "timed-out",
            "client deadline expired",
        )
    }

    /// The test was cancelled while the call was in flight.
    pub fn cancelled(kind: CallKind) -> Self {
        CallError::new(
            certainty_for(kind, Certainty::Indeterminate),
            "cancelled",
            "test cancelled while the call was in flight",
        )
    }

    /// A response the client cannot interpret (e.g. a missing required field).
    pub fn bad_response(kind: CallKind, message: impl Into<String>) -> Self {
        CallError::new(
            certainty_for(kind, Certainty::Indeterminate),
            "bad-response",
            message,
        )
    }

    pub fn is_definite(&self) -> bool {
        self.certainty == Certainty::Definite
    }

    /// The text recorded in the history's `error` field.
    pub fn history_text(&self) -> String {
        if self.message.is_empty() {
            self.tag.to_string()
        } else {
            format!("{}: {}", self.tag, self.message)
        }
    }
}

/// Reads are never indeterminate; mutations keep the certainty the evidence gives.
fn certainty_for(kind: CallKind, mutation_certainty: Certainty) -> Certainty {
    match kind {
        CallKind::Read => Certainty::Definite,
        CallKind::Mutation => mutation_certainty,
    }
}

/// Classifies a gRPC status returned by a call of the given kind.
pub fn classify(kind: CallKind, status: &Status) -> CallError {
    let not_sent = connect_failed(status);
    let local = status.source().is_some();
    let (mut tag, mutation_certainty) = classify_code(status.code(), not_sent, local);
    if in_source_chain::<tonic::TimeoutExpired>(status) || is_server_timeout(status) {
        // tonic enforces the request's grpc-timeout itself (client and server side) and
        // reports it as `Cancelled`.
        tag = "timed-out";
    }
    let message = if not_sent {
        format!("{} (connection failed before sending)", status.message())
    } else {
        status.message().to_string()
    };
    CallError::new(certainty_for(kind, mutation_certainty), tag, message)
}

/// The table itself: tag and certainty for a mutation, by code. `not_sent`: the transport
/// failed to connect, so the request never left; `local`: tonic made the status from a
/// transport error rather than receiving it from the server.
pub fn classify_code(code: Code, not_sent: bool, local: bool) -> (&'static str, Certainty) {
    use Certainty::{Definite, Indeterminate};
    if not_sent {
        return ("unavailable", Definite);
    }
    match code {
        Code::Ok => ("ok", Definite),
        Code::Cancelled => ("cancelled", Indeterminate),
        Code::Unknown => ("unknown", Indeterminate),
        Code::InvalidArgument => ("invalid-argument", Definite),
        Code::DeadlineExceeded => ("timed-out", Indeterminate),
        Code::NotFound => ("not-found", Definite),
        Code::AlreadyExists => ("already-exists", Definite),
        Code::PermissionDenied => ("permission-denied", Definite),
        Code::ResourceExhausted => ("resource-exhausted", Definite),
        Code::FailedPrecondition => ("failed-precondition", Definite),
        Code::Aborted => ("aborted", Definite),
        Code::OutOfRange => ("out-of-range", Definite),
        Code::Unimplemented => ("unimplemented", Definite),
        Code::Internal => ("internal", Indeterminate),
        Code::Unavailable if local => ("unavailable", Indeterminate),
        Code::Unavailable => ("unavailable", Definite),
        Code::DataLoss => ("data-loss", Indeterminate),
        Code::Unauthenticated => ("unauthenticated", Definite),
    }
}

/// True when the status was caused by a failure to establish the connection.
fn connect_failed(status: &Status) -> bool {
    in_source_chain::<tonic::ConnectError>(status)
        || sources(status).any(|e| {
            e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
        })
}

/// A tonic server that hit the request's grpc-timeout answers `Cancelled` with this text.
fn is_server_timeout(status: &Status) -> bool {
    status.code() == Code::Cancelled && status.message() == "Timeout expired"
}

fn sources(status: &Status) -> impl Iterator<Item = &(dyn StdError + 'static)> {
    std::iter::successors(status.source(), |e: &&(dyn StdError + 'static)| {
        (*e).source()
    })
}

fn in_source_chain<E: StdError + 'static>(status: &Status) -> bool {
    sources(status).any(|e| e.downcast_ref::<E>().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use Certainty::{Definite, Indeterminate};

    const ALL_CODES: [Code; 17] = [
        Code::Cancelled,
        Code::Unknown,
        Code::InvalidArgument,
        Code::DeadlineExceeded,
        Code::NotFound,
        Code::AlreadyExists,
        Code::PermissionDenied,
        Code::ResourceExhausted,
        Code::FailedPrecondition,
        Code::Aborted,
        Code::OutOfRange,
        Code::Unimplemented,
        Code::Internal,
        Code::Unavailable,
        Code::DataLoss,
        Code::Unauthenticated,
        Code::Ok,
    ];

    #[test]
    fn server_sent_codes_for_mutations() {
        let expected = [
            (Code::Cancelled, Indeterminate),
            (Code::Unknown, Indeterminate),
            (Code::InvalidArgument, Definite),
            (Code::DeadlineExceeded, Indeterminate),
            (Code::NotFound, Definite),
            (Code::AlreadyExists, Definite),
            (Code::PermissionDenied, Definite),
            (Code::ResourceExhausted, Definite),
            (Code::FailedPrecondition, Definite),
            (Code::Aborted, Definite),
            (Code::OutOfRange, Definite),
            (Code::Unimplemented, Definite),
            (Code::Internal, Indeterminate),
            (Code::Unavailable, Definite),
            (Code::DataLoss, Indeterminate),
            (Code::Unauthenticated, Definite),
        ];
        for (code, certainty) in expected {
            let err = classify(CallKind::Mutation, &Status::new(code, "from server"));
            assert_eq!(err.certainty, certainty, "{code:?}");
            assert_eq!(err.message, "from server");
        }
    }

    #[test]
    fn reads_are_always_definite() {
        for code in ALL_CODES {
            let err = classify(CallKind::Read, &Status::new(code, "x"));
            assert_eq!(err.certainty, Definite, "{code:?}");
        }
        assert!(CallError::timed_out(CallKind::Read).is_definite());
        assert!(CallError::cancelled(CallKind::Read).is_definite());
    }

    #[test]
    fn own_deadline_and_cancellation_are_indeterminate_for_mutations() {
        let t = CallError::timed_out(CallKind::Mutation);
        assert_eq!((t.certainty, t.tag), (Indeterminate, "timed-out"));
        let c = CallError::cancelled(CallKind::Mutation);
        assert_eq!((c.certainty, c.tag), (Indeterminate, "cancelled"));
    }

    #[test]
    fn connect_error_in_source_chain_is_definite() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let connect = tonic::ConnectError(Box::new(io));
        let status = Status::from_error(Box::new(connect));
        assert_eq!(status.code(), Code::Unavailable);
        let err = classify(CallKind::Mutation, &status);
        assert_eq!((err.certainty, err.tag), (Definite, "unavailable"));
        assert!(err.message.contains("before sending"));
    }

    #[derive(Debug)]
    struct Wrapper(Box<dyn StdError + Send + Sync>);
    impl std::fmt::Display for Wrapper {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("transport error")
        }
    }
    impl StdError for Wrapper {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&*self.0)
        }
    }

    #[test]
    fn nested_connect_error_is_found() {
        let io = std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timeout");
        let wrapped = Wrapper(Box::new(tonic::ConnectError(Box::new(io))));
        let status = Status::from_error(Box::new(wrapped));
        assert!(classify(CallKind::Mutation, &status).is_definite());
    }

    #[test]
    fn transport_unavailable_after_send_is_indeterminate() {
        // A broken connection (not a connect failure) surfaces as a status with a source.
        let io = std::io::Error::new(std::io::ErrorKind::BrokenPipe, "broken pipe");
        let mut status = Status::unavailable("connection reset");
        status.set_source(Arc::new(io));
        let err = classify(CallKind::Mutation, &status);
        assert_eq!((err.certainty, err.tag), (Indeterminate, "unavailable"));
    }

    #[test]
    fn transport_unknown_after_send_is_indeterminate() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        let status = Status::from_error(Box::new(io));
        assert_eq!(status.code(), Code::Unknown);
        assert!(!classify(CallKind::Mutation, &status).is_definite());
    }

    #[test]
    fn connection_refused_io_error_is_definite() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let status = Status::from_error(Box::new(io));
        assert!(classify(CallKind::Mutation, &status).is_definite());
    }

    #[test]
    fn tonic_client_timeout_is_tagged_timed_out() {
        let status = Status::from_error(Box::new(tonic::TimeoutExpired(())));
        assert_eq!(status.code(), Code::Cancelled);
        let write = classify(CallKind::Mutation, &status);
        assert_eq!((write.certainty, write.tag), (Indeterminate, "timed-out"));
        let read = classify(CallKind::Read, &status);
        assert_eq!((read.certainty, read.tag), (Definite, "timed-out"));
        let from_server = Status::cancelled("Timeout expired");
        let write = classify(CallKind::Mutation, &from_server);
        assert_eq!((write.certainty, write.tag), (Indeterminate, "timed-out"));
        assert_eq!(
            classify(CallKind::Mutation, &Status::cancelled("client went away")).tag,
            "cancelled"
        );
    }

    #[test]
    fn long_messages_are_truncated_on_a_char_boundary() {
        let err = CallError::new(Definite, "x", "é".repeat(300));
        assert!(err.message.len() <= MAX_MESSAGE + '…'.len_utf8());
        assert!(err.message.ends_with('…'));
    }

    #[test]
    fn history_text_has_tag_first() {
        let err = CallError::new(Definite, "aborted", "epoch 3 is stale");
        assert_eq!(err.history_text(), "aborted: epoch 3 is stale");
        assert_eq!(
            CallError::new(Definite, "aborted", "").history_text(),
            "aborted"
        );
    }
}

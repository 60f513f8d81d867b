//! Classification of etcd's failed calls as definite (`fail`) or indeterminate (`info`).
//!
//! Transport failures (could not connect, broken connection, our own deadline) are judged
//! exactly as for refkv by [`crate::client::classify::classify`]. etcd differs from refkv in
//! what its *server-sent* `Unavailable` means: etcd answers `Unavailable` both before it
//! proposes anything (no leader) and after a proposal was handed to Raft and may still
//! commit (request timed out, leader changed, server stopped). So server-sent statuses go
//! through etcd's own error texts first:
//!
//! | server-sent status (etcd 3.4 text)                          | mutation      |
//! |-------------------------------------------------------------|---------------|
//! | `Unavailable` "etcdserver: no leader"                        | definite      |
//! | `Unavailable` "etcdserver: not leader"                       | definite      |
//! | `ResourceExhausted` "etcdserver: too many requests"          | definite      |
//! | `InvalidArgument` (request too large, key not found, ...)    | definite      |
//! | `Unavailable` "etcdserver: request timed out..." (all forms) | indeterminate |
//! | `Unavailable` "etcdserver: leader changed"                   | indeterminate |
//! | `Unavailable` "etcdserver: server stopped"                   | indeterminate |
//! | any other server-sent `Unavailable`                          | indeterminate |
//! | other codes                                                  | as for refkv  |
//!
//! Reads (Range, Status) are always definite, as everywhere in faultline: a read that did
//! not answer changed nothing.

use crate::client::classify::{classify, CallKind};
use crate::client::{CallError, Certainty};
use std::error::Error as _;
use tonic::{Code, Status};

/// Tag and certainty of a *mutation* that failed with a server-sent etcd status, or `None`
/// when etcd's texts say nothing beyond the code (the generic table applies).
pub fn etcd_rule(code: Code, message: &str) -> Option<(&'static str, Certainty)> {
    use Certainty::{Definite, Indeterminate};
    let text = message.trim();
    match code {
        Code::Unavailable if text == "etcdserver: no leader" => Some(("no-leader", Definite)),
        Code::Unavailable if text == "etcdserver: not leader" => Some(("not-leader", Definite)),
        Code::Unavailable if text.starts_with("etcdserver: request timed out") => {
            Some(("timed-out", Indeterminate))
        }
        Code::Unavailable if text == "etcdserver: leader changed" => {
            Some(("leader-changed", Indeterminate))
        }
        Code::Unavailable if text == "etcdserver: server stopped" => {
            Some(("server-stopped", Indeterminate))
        }
        Code::Unavailable => Some(("unavailable", Indeterminate)),
        Code::ResourceExhausted if text == "etcdserver: too many requests" => {
            Some(("too-many-requests", Definite))
        }
        _ => None,
    }
}

/// Classifies a failed etcd call of the given kind.
pub fn classify_etcd(kind: CallKind, status: &Status) -> CallError {
    let generic = classify(kind, status);
    // Statuses tonic made from transport errors carry a source; the generic rules know them.
    if status.source().is_some() {
        return generic;
    }
    match etcd_rule(status.code(), status.message()) {
        Some((tag, certainty)) => {
            let certainty = if kind == CallKind::Read {
                Certainty::Definite
            } else {
                certainty
            };
            CallError::new(certainty, tag, status.message())
        }
        None => generic,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Certainty::{Definite, Indeterminate};

    #[test]
    fn server_sent_etcd_errors_for_mutations() {
        let table = [
            (
                Code::Unavailable,
                "etcdserver: no leader",
                "no-leader",
                Definite,
            ),
            (
                Code::Unavailable,
                "etcdserver: not leader",
                "not-leader",
                Definite,
            ),
            (
                Code::Unavailable,
                "etcdserver: request timed out",
                "timed-out",
                Indeterminate,
            ),
            (
                Code::Unavailable,
                "etcdserver: request timed out, possibly due to previous leader failure",
                "timed-out",
                Indeterminate,
            ),
            (
                Code::Unavailable,
                "etcdserver: request timed out, possibly due to connection lost",
                "timed-out",
                Indeterminate,
            ),
            (
                Code::Unavailable,
                "etcdserver: leader changed",
                "leader-changed",
                Indeterminate,
            ),
            (
                Code::Unavailable,
                "etcdserver: server stopped",
                "server-stopped",
                Indeterminate,
            ),
            (
                Code::Unavailable,
                "something new",
                "unavailable",
                Indeterminate,
            ),
            (
                Code::ResourceExhausted,
                "etcdserver: too many requests",
                "too-many-requests",
                Definite,
            ),
            (
                Code::InvalidArgument,
                "etcdserver: request is too large",
                "invalid-argument",
                Definite,
            ),
            (
                Code::DeadlineExceeded,
                "context deadline exceeded",
                "timed-out",
                Indeterminate,
            ),
            (
                Code::Cancelled,
                "context canceled",
                "cancelled",
                Indeterminate,
            ),
            (Code::Internal, "oops", "internal", Indeterminate),
        ];
        for (code, text, tag, certainty) in table {
            let err = classify_etcd(CallKind::Mutation, &Status::new(code, text));
            assert_eq!(
                (err.tag, err.certainty),
                (tag, certainty),
                "{code:?} {text:?}"
            );
            assert_eq!(err.message, text);
        }
    }

    #[test]
    fn reads_are_always_definite() {
        for text in [
            "etcdserver: request timed out",
            "etcdserver: leader changed",
            "etcdserver: no leader",
        ] {
            let err = classify_etcd(CallKind::Read, &Status::new(Code::Unavailable, text));
            assert_eq!(err.certainty, Definite, "{text}");
        }
    }

    #[test]
    fn etcd_is_stricter_than_refkv_about_server_unavailable() {
        // refkv documents a server-sent Unavailable as "nothing proposed"; etcd does not.
        let status = Status::new(Code::Unavailable, "etcdserver: request timed out");
        assert_eq!(classify(CallKind::Mutation, &status).certainty, Definite);
        assert_eq!(
            classify_etcd(CallKind::Mutation, &status).certainty,
            Indeterminate
        );
    }
}

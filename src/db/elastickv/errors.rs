//! elastickv's error texts, as a table: what a failed *mutation* means when its message
//! ends with (or, for indeterminate rules only, contains) a phrase elastickv's own code
//! raises. elastickv returns coordinator errors as plain texts (gRPC `Unknown`, which the
//! generic table must treat as indeterminate); these texts say more. Citations are to
//! elastickv at d9a031d.
//!
//! Invariants:
//! - A *definite* rule matches only a suffix, as elastickv itself does (`adapter/redis.go`
//!   ~440, `kv/coordinator.go` ~706): wrapping (`errors.Wrapf`, gRPC's `desc = …`) puts the
//!   sentinel's text at the end, and a key quoted earlier in the message may contain any
//!   phrase. A false "definite" could create a violation; a false "indeterminate" cannot.
//! - Indeterminate rules come first, so that a message matching both is indeterminate.
//! - Errors the client made itself (timeouts, connection failures) keep their generic
//!   classification: elastickv's texts only come from the server.

use workloads::{CallError, Certainty};

/// How a rule matches the lower-cased message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// The message ends with the phrase.
    Suffix,
    /// The phrase appears anywhere (indeterminate rules only).
    Contains,
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub phrase: &'static str,
    pub how: Match,
    pub tag: &'static str,
    pub certainty: Certainty,
    /// Where elastickv raises it, and why the certainty follows (read by the tests, which
    /// require one for every rule).
    #[allow(dead_code)]
    pub source: &'static str,
}

const fn rule(phrase: &'static str, how: Match, tag: &'static str, certainty: Certainty, source: &'static str) -> Rule {
    Rule { phrase, how, tag, certainty, source }
}

use Certainty::{Definite, Indeterminate};
use Match::{Contains, Suffix};

/// The table, in the order it is applied.
pub const RULES: [Rule; 8] = [
    rule(
        "leader forward failed after",
        Contains,
        "leader-forward-failed",
        Indeterminate,
        "kv/leader_proxy.go ~208: a forwarded request's last attempt failed with a non-leader error; the leader may have applied it",
    ),
    rule(
        "not leader",
        Suffix,
        "not-leader",
        Indeterminate,
        "internal/raftengine/etcd/engine.go ~128 errNotLeader: also failPending (~3699, ~3817) for proposals already appended when the leader steps down",
    ),
    rule(
        "leader proxy circuit open",
        Suffix,
        "leader-proxy-circuit-open",
        Definite,
        "kv/leader_proxy_breaker.go ~23: refused before forwarding",
    ),
    rule(
        "hlc: physical/logical ceiling exhausted; refusing to issue persistence timestamp",
        Suffix,
        "hlc-ceiling-exhausted",
        Definite,
        "kv/hlc.go ~29, raised while allocating the write's timestamp (kv/sharded_coordinator.go ~2140), before any proposal",
    ),
    rule(
        "startup rotation has not completed",
        Suffix,
        "startup-gate",
        Definite,
        "main.go ~2210, ~2329: the startup gate refuses before dispatch (gRPC Unavailable)",
    ),
    rule(
        "leadership transfer in progress",
        Suffix,
        "leadership-transfer",
        Definite,
        "internal/raftengine/etcd/engine.go ~1953: refused before the proposal is stored",
    ),
    rule(
        "raft proposal dropped",
        Suffix,
        "proposal-dropped",
        Definite,
        "internal/raftengine/etcd/engine.go ~1958: etcd raft's Propose refused it, nothing appended",
    ),
    rule(
        "leader not found",
        Suffix,
        "leader-not-found",
        Definite,
        "kv/coordinator.go ~1250 ErrLeaderNotFound: no leader to send to, nothing proposed",
    ),
];

/// The first rule whose phrase the message carries, if any.
pub fn rule_for(message: &str) -> Option<&'static Rule> {
    let m = message.trim_end().to_ascii_lowercase();
    RULES.iter().find(|r| match r.how {
        Suffix => m.ends_with(r.phrase),
        Contains => m.contains(r.phrase),
    })
}

/// Re-classifies a failed mutation by elastickv's texts.
pub fn reclassify_mutation(err: CallError) -> CallError {
    let from_client = matches!(err.tag, "timed-out" | "cancelled" | "bad-response") || err.message.contains("connection failed before sending");
    match rule_for(&err.message) {
        Some(r) if !from_client => CallError::new(r.certainty, r.tag, err.message),
        _ => err,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify(message: &str) -> (&'static str, Certainty) {
        let err = reclassify_mutation(CallError::new(Indeterminate, "unknown", message));
        (err.tag, err.certainty)
    }

    #[test]
    fn not_leader_is_indeterminate_because_appended_proposals_fail_with_it_too() {
        assert_eq!(classify("etcd raft engine is not leader"), ("not-leader", Indeterminate));
        assert_eq!(classify("dispatch: not leader"), ("not-leader", Indeterminate));
    }

    #[test]
    fn a_failed_forward_is_indeterminate_wherever_the_phrase_is() {
        let m = "leader forward failed after 3 retries: rpc error: code = Unavailable desc = connection reset";
        assert_eq!(classify(m), ("leader-forward-failed", Indeterminate));
    }

    #[test]
    fn an_open_leader_proxy_circuit_is_definite() {
        assert_eq!(classify("forward to n2: leader proxy circuit open"), ("leader-proxy-circuit-open", Definite));
    }

    #[test]
    fn an_exhausted_hlc_ceiling_is_definite() {
        let m = "allocate sharded raw log ts: hlc: physical/logical ceiling exhausted; refusing to issue persistence timestamp";
        assert_eq!(classify(m), ("hlc-ceiling-exhausted", Definite));
    }

    #[test]
    fn the_startup_gate_is_definite() {
        assert_eq!(classify("startup rotation has not completed"), ("startup-gate", Definite));
    }

    #[test]
    fn a_leadership_transfer_is_definite() {
        assert_eq!(classify("raft engine: leadership transfer in progress"), ("leadership-transfer", Definite));
    }

    #[test]
    fn a_dropped_proposal_is_definite() {
        assert_eq!(classify("propose: raft proposal dropped"), ("proposal-dropped", Definite));
    }

    #[test]
    fn leader_not_found_is_definite() {
        assert_eq!(classify("leader not found"), ("leader-not-found", Definite));
    }

    #[test]
    fn a_phrase_inside_a_key_is_not_a_definite_verdict() {
        // A key quoted before the cause may contain any phrase; only the end counts.
        let m = r#"write "k: leader proxy circuit open" failed: connection reset"#;
        assert_eq!(classify(m), ("unknown", Indeterminate));
    }

    #[test]
    fn leadership_lost_has_no_rule_any_more() {
        // hashicorp raft's ErrLeadershipLost; elastickv runs etcd raft only.
        assert!(rule_for("leadership lost").is_none());
    }

    #[test]
    fn client_side_failures_keep_their_classification() {
        let timed_out = CallError::new(Indeterminate, "timed-out", "client deadline expired: leader not found");
        assert_eq!(reclassify_mutation(timed_out.clone()), timed_out);
    }

    #[test]
    fn every_rule_cites_elastickvs_source() {
        for r in RULES {
            assert!(r.source.contains(".go ~"), "{}: {}", r.phrase, r.source);
        }
    }

    #[test]
    fn every_definite_rule_matches_by_suffix() {
        for r in RULES.iter().filter(|r| r.certainty == Definite) {
            assert_eq!(r.how, Suffix, "{}", r.phrase);
        }
    }
}

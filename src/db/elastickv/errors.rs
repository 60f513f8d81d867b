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
//! - A message of several lines is an `errors.Join` (e.g. `kv/tso.go` ~212–216): each line
//!   is matched on its own; an indeterminate line makes the whole indeterminate, and the
//!   whole is definite only when *every* line ends with a definite phrase.
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
pub const RULES: [Rule; 9] = [
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
        Indeterminate,
        "kv/leader_proxy_breaker.go ~23, ~172: refused before *this* forward, but kv/leader_proxy.go ~98–150 retries one request, so an earlier attempt may have reached the leader (seen on d9a031d: a write failed so was read back)",
    ),
    rule(
        "hlc: physical/logical ceiling exhausted; refusing to issue persistence timestamp",
        Suffix,
        "hlc-ceiling-exhausted",
        Definite,
        "kv/hlc.go ~29, raised while allocating the write's timestamp (kv/sharded_coordinator.go ~2140), before any proposal",
    ),
    rule(
        "hlc lease recovery unavailable",
        Suffix,
        "hlc-lease-recovery-unavailable",
        Definite,
        "kv/tso.go ~20, joined to the ceiling error when timestamp allocation could not renew the HLC lease (~201–216), before any proposal",
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
    rule("leader not found", Suffix, "leader-not-found", Definite, "kv/coordinator.go ~1250 ErrLeaderNotFound: no leader to send to, nothing proposed"),
];

/// The first rule whose phrase one line carries, if any.
fn rule_for_line(line: &str) -> Option<&'static Rule> {
    let m = line.trim_end().to_ascii_lowercase();
    RULES.iter().find(|r| match r.how {
        Suffix => m.ends_with(r.phrase),
        Contains => m.contains(r.phrase),
    })
}

/// The rule the whole message falls under, if any (see the invariants above).
pub fn rule_for(message: &str) -> Option<&'static Rule> {
    let lines: Vec<Option<&'static Rule>> = message.lines().filter(|l| !l.trim().is_empty()).map(rule_for_line).collect();
    if let Some(r) = lines.iter().flatten().find(|r| r.certainty == Indeterminate) {
        return Some(r);
    }
    if lines.iter().all(Option::is_some) {
        return lines.first().copied().flatten();
    }
    None
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
    fn an_open_leader_proxy_circuit_is_indeterminate_because_an_earlier_attempt_may_have_landed() {
        assert_eq!(classify("forward to n2: leader proxy circuit open"), ("leader-proxy-circuit-open", Indeterminate));
    }

    #[test]
    fn an_exhausted_hlc_ceiling_is_definite() {
        let m = "allocate sharded raw log ts: hlc: physical/logical ceiling exhausted; refusing to issue persistence timestamp";
        assert_eq!(classify(m), ("hlc-ceiling-exhausted", Definite));
    }

    #[test]
    fn a_joined_hlc_lease_failure_is_definite_when_every_line_is() {
        // Seen on d9a031d under partitions (errors.Join of kv/tso.go ~212–216).
        let m = "allocate sharded raw log ts: on-demand HLC lease renewal failed: hlc: physical/logical ceiling exhausted; refusing to issue persistence timestamp\nhlc lease recovery: hlc lease recovery unavailable";
        assert_eq!(classify(m), ("hlc-ceiling-exhausted", Definite));
        let unknown_line = "hlc: physical/logical ceiling exhausted; refusing to issue persistence timestamp\nsomething else";
        assert_eq!(classify(unknown_line), ("unknown", Indeterminate), "one line without a rule keeps it generic");
        let mixed = "leader not found\netcd raft engine is not leader";
        assert_eq!(classify(mixed), ("not-leader", Indeterminate));
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
        let m = r#"write "k: leader not found" failed: connection reset"#;
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

//! Outcome classification for the Redis client: a failed Redis command becomes a
//! *definite* failure (certainly not applied → history `fail`) or an *indeterminate* one
//! (may have been applied → history `info`), as [`super::classify`] does for gRPC.
//!
//! Transport failures first:
//!
//! | what happened                                                  | mutation      |
//! |----------------------------------------------------------------|---------------|
//! | could not connect (nothing was sent)                           | definite      |
//! | connection broke or our deadline expired after sending         | indeterminate |
//!
//! Then error replies, by [`REPLY_RULES`] (first match wins, matched on the reply text):
//!
//! | reply                                   | mutation      | why (elastickv d9a031d; Redis)                              |
//! |-----------------------------------------|---------------|-------------------------------------------------------------|
//! | `NOSCRIPT …`                            | definite      | EVALSHA looks the script up before running it (`adapter/redis_lua.go` ~83–88) |
//! | `ERR leader redis address unknown …`    | definite      | the receiving node found no Redis address for the leader and forwarded nothing (`adapter/redis_proxy_leader.go` ~370–378) |
//! | `dial tcp …` (a Go dial error)           | indeterminate | a follower's proxy to the leader uses go-redis with its default retries (`adapter/redis_proxy_leader.go` ~301: `redis.Options` without `MaxRetries`, i.e. 3), so a dial error can follow an attempt whose connection broke after the leader got it — seen: adds answered `dial tcp …: connection refused` were read back (run `redis-hotspot-g1-mget2`) |
//! | `NOTLEADER …` (any leader phrase)       | indeterminate | the coordinator retries leader errors for up to 5 s (`kv/coordinator.go` ~399–470) and the Raft engine answers *pending* proposals with the same "etcd raft engine is not leader" when it steps down (`internal/raftengine/etcd/engine.go` ~3700) as when it refuses one (~1945): the text cannot tell a proposed write from a refused one |
//! | `ERR syntax error`, `ERR wrong number of arguments …`, `ERR unknown command …`, `ERR unsupported command …` (elastickv, `adapter/redis.go` ~837), `WRONGTYPE …` | definite | rejected while parsing, before anything runs |
//! | `LOADING …`, `BUSY …`, `MASTERDOWN …`, `READONLY …`, `OOM …`, `NOPERM …` | definite | Redis refuses the command before executing it; elastickv's `BUSY server overloaded` is its heavy-command pool refusing before running (`adapter/redis.go` ~768–772) |
//! | any other error reply                   | indeterminate | e.g. `ERR Error running script`: Redis keeps a script's writes made before the error |
//!
//! The one `NOTLEADER` that is definite is the answer to the *leader probe*, a read-only
//! `EVAL "return 1" 0`: a script's first step is a lease read of the default group
//! (`adapter/redis_lua_context.go` ~267–275), which a follower refuses with `NOTLEADER`
//! before anything could be proposed. The probe is a read, and reads are always definite:
//! a command without side effects cannot have changed the store.

use super::classify::{CallError, CallKind, Certainty};

/// How a Redis command failed, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisFailure<'a> {
    /// The connection could not be opened: the command never left.
    NotConnected(&'a str),
    /// The server answered with an error reply (its whole text, code first).
    Reply(&'a str),
    /// The connection failed after the command may have been sent.
    Transport(&'a str),
    /// Our deadline expired while waiting for the reply.
    TimedOut,
}

/// One row of the reply table.
#[derive(Debug, Clone, Copy)]
pub struct ReplyRule {
    /// Matches when the reply text starts with this (compared case-insensitively).
    pub prefix: &'static str,
    pub tag: &'static str,
    /// Certainty for a mutation (reads are always definite).
    pub certainty: Certainty,
}

const fn rule(prefix: &'static str, tag: &'static str, certainty: Certainty) -> ReplyRule {
    ReplyRule {
        prefix,
        tag,
        certainty,
    }
}

/// The reply rules in the order they are tried; see the module table for the reasons.
pub const REPLY_RULES: &[ReplyRule] = &[
    rule("NOSCRIPT", "no-script", Certainty::Definite),
    rule(
        "ERR leader redis address unknown",
        "leader-unknown",
        Certainty::Definite,
    ),
    rule("dial tcp", "leader-unreachable", Certainty::Indeterminate),
    rule("NOTLEADER", "not-leader", Certainty::Indeterminate),
    rule("ERR syntax error", "syntax-error", Certainty::Definite),
    rule(
        "ERR wrong number of arguments",
        "syntax-error",
        Certainty::Definite,
    ),
    rule(
        "ERR unknown command",
        "unknown-command",
        Certainty::Definite,
    ),
    rule(
        "ERR unsupported command",
        "unknown-command",
        Certainty::Definite,
    ),
    rule("WRONGTYPE", "wrong-type", Certainty::Definite),
    rule("LOADING", "loading", Certainty::Definite),
    rule("BUSY", "busy", Certainty::Definite),
    rule("MASTERDOWN", "master-down", Certainty::Definite),
    rule("READONLY", "read-only", Certainty::Definite),
    rule("OOM", "out-of-memory", Certainty::Definite),
    rule("NOPERM", "no-permission", Certainty::Definite),
];

/// The tag and mutation certainty of an error reply.
pub fn reply_rule(text: &str) -> (&'static str, Certainty) {
    let text = text.trim_start();
    REPLY_RULES
        .iter()
        .find(|r| {
            text.len() >= r.prefix.len()
                && text.is_char_boundary(r.prefix.len())
                && text[..r.prefix.len()].eq_ignore_ascii_case(r.prefix)
        })
        .map_or(("error-reply", Certainty::Indeterminate), |r| {
            (r.tag, r.certainty)
        })
}

/// Classifies a failed command of the given kind.
pub fn classify_redis(kind: CallKind, failure: RedisFailure<'_>) -> CallError {
    let (tag, certainty, message) = match failure {
        RedisFailure::NotConnected(m) => (
            "unavailable",
            Certainty::Definite,
            format!("{m} (connection failed before sending)"),
        ),
        RedisFailure::Transport(m) => ("connection-lost", Certainty::Indeterminate, m.to_string()),
        RedisFailure::TimedOut => return CallError::timed_out(kind),
        RedisFailure::Reply(text) => {
            let (tag, certainty) = reply_rule(text);
            (tag, certainty, text.to_string())
        }
    };
    let certainty = if kind == CallKind::Read {
        Certainty::Definite
    } else {
        certainty
    };
    CallError::new(certainty, tag, message)
}

/// True when a reply says the node cannot run scripts because it does not lead (the
/// answer to the leader probe that sends the client to the next node).
pub fn is_not_leader(err: &CallError) -> bool {
    err.tag == "not-leader"
}

#[cfg(test)]
mod tests {
    use super::*;
    use Certainty::{Definite, Indeterminate};

    fn mutation(text: &str) -> (&'static str, Certainty) {
        let e = classify_redis(CallKind::Mutation, RedisFailure::Reply(text));
        assert_eq!(e.message, text, "the reply is kept as sent");
        (e.tag, e.certainty)
    }

    #[test]
    fn noscript_is_definite() {
        assert_eq!(
            mutation("NOSCRIPT No matching script. Please use EVAL."),
            ("no-script", Definite)
        );
    }

    #[test]
    fn unknown_leader_redis_address_is_definite() {
        assert_eq!(
            mutation("ERR leader redis address unknown for 10.0.0.3:50053"),
            ("leader-unknown", Definite)
        );
    }

    #[test]
    fn a_proxy_dial_error_is_indeterminate_because_the_proxy_retries() {
        for text in [
            "dial tcp 10.77.3.11:6379: connect: connection refused",
            "dial tcp 10.77.3.11:6379: i/o timeout",
        ] {
            assert_eq!(
                mutation(text),
                ("leader-unreachable", Indeterminate),
                "{text}"
            );
        }
    }

    #[test]
    fn notleader_after_a_mutation_was_sent_is_indeterminate_for_every_leader_phrase() {
        for phrase in [
            "etcd raft engine is not leader",
            "leader not found",
            "raft engine: leadership lost",
            "leadership transfer in progress",
            "leader proxy circuit open",
            "not leader",
        ] {
            assert_eq!(
                mutation(&format!("NOTLEADER {phrase}")),
                ("not-leader", Indeterminate),
                "{phrase}"
            );
        }
        assert_eq!(
            mutation("notleader lower case"),
            ("not-leader", Indeterminate),
            "codes compare case-insensitively"
        );
    }

    #[test]
    fn parse_errors_are_definite() {
        assert_eq!(mutation("ERR syntax error"), ("syntax-error", Definite));
        assert_eq!(
            mutation("ERR wrong number of arguments for 'set' command"),
            ("syntax-error", Definite)
        );
        assert_eq!(
            mutation("ERR unknown command 'FOO', with args beginning with: "),
            ("unknown-command", Definite)
        );
        assert_eq!(
            mutation("ERR unsupported command 'MGET'"),
            ("unknown-command", Definite),
            "elastickv's text"
        );
    }

    #[test]
    fn wrongtype_is_definite() {
        assert_eq!(
            mutation("WRONGTYPE Operation against a key holding the wrong kind of value"),
            ("wrong-type", Definite)
        );
    }

    #[test]
    fn refusals_before_execution_are_definite() {
        for (text, tag) in [
            ("LOADING Redis is loading the dataset in memory", "loading"),
            ("BUSY Redis is busy running a script.", "busy"),
            ("MASTERDOWN Link with MASTER is down", "master-down"),
            (
                "READONLY You can't write against a read only replica.",
                "read-only",
            ),
            (
                "OOM command not allowed when used memory > 'maxmemory'.",
                "out-of-memory",
            ),
            ("NOPERM this user has no permissions", "no-permission"),
        ] {
            assert_eq!(mutation(text), (tag, Definite), "{text}");
        }
    }

    #[test]
    fn any_other_reply_is_indeterminate() {
        assert_eq!(
            mutation("ERR Error running script (call to f_x): @user_script:1: oops"),
            ("error-reply", Indeterminate)
        );
        assert_eq!(
            mutation("rpc error: code = Unknown desc = something new"),
            ("error-reply", Indeterminate)
        );
        assert_eq!(mutation(""), ("error-reply", Indeterminate));
    }

    #[test]
    fn not_connected_is_definite() {
        let e = classify_redis(
            CallKind::Mutation,
            RedisFailure::NotConnected("connection refused"),
        );
        assert_eq!((e.tag, e.certainty), ("unavailable", Definite));
        assert!(e.message.contains("before sending"));
    }

    #[test]
    fn a_broken_connection_after_sending_is_indeterminate() {
        let e = classify_redis(CallKind::Mutation, RedisFailure::Transport("broken pipe"));
        assert_eq!((e.tag, e.certainty), ("connection-lost", Indeterminate));
    }

    #[test]
    fn our_deadline_is_indeterminate_for_mutations() {
        let e = classify_redis(CallKind::Mutation, RedisFailure::TimedOut);
        assert_eq!((e.tag, e.certainty), ("timed-out", Indeterminate));
    }

    #[test]
    fn reads_and_the_leader_probe_are_always_definite() {
        for failure in [
            RedisFailure::Reply("NOTLEADER etcd raft engine is not leader"),
            RedisFailure::Transport("reset"),
            RedisFailure::TimedOut,
            RedisFailure::Reply("ERR x"),
        ] {
            let e = classify_redis(CallKind::Read, failure);
            assert_eq!(e.certainty, Definite, "{failure:?}");
        }
        let probe = classify_redis(
            CallKind::Read,
            RedisFailure::Reply("NOTLEADER etcd raft engine is not leader"),
        );
        assert!(
            is_not_leader(&probe),
            "the probe's NOTLEADER sends the client to the next node"
        );
    }
}

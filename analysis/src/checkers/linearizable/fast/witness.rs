//! The witness of a fast-path violation, in the shape of the search's witness (`type`,
//! `key`, `op`, `explanation`, `state_after_prefix`, `prefix`, `concurrent`) so the
//! report's anomaly timeline reads both alike. Here `prefix` lists the ops that force
//! the violation (the write a read observed, the write that must have overwritten it,
//! ...) in call order, not a linearizable prefix; `engine` says which.

use super::super::model::Action;
use super::super::prepare::KeyHistory;
use super::super::witness::{concurrent_ops, op_json};
use super::chains::Zone;
use super::versions::NONE;
use super::Violation;
use crate::history::History;
use serde_json::{json, Value};

/// Builds the anomaly object for `violation` on `key`.
pub fn witness(history: &History, key: &KeyHistory, violation: &Violation) -> Value {
    let (culprit, mut forcing, explanation) = describe(history, key, violation);
    forcing.retain(|&o| o != NONE && o != culprit);
    forcing.sort_by_key(|&o| key.ops[o as usize].call);
    forcing.dedup();
    let prefix: Vec<Value> = forcing
        .iter()
        .map(|&o| op_json(history, &key.ops[o as usize]))
        .collect();
    json!({
        "type": "not-linearizable",
        "engine": "fast-path",
        "key": key.key,
        "op": op_json(history, &key.ops[culprit as usize]),
        "explanation": explanation,
        "state_after_prefix": state_against(key, violation).map_or(Value::Null, |v| key.values.json(v)),
        "prefix_length": prefix.len(),
        "prefix_truncated": false,
        "prefix": prefix,
        "concurrent": concurrent_ops(history, key, culprit, |i| forcing.contains(&(i as u32))),
    })
}

/// The culprit, the ops that force its violation, and the explanation.
fn describe(history: &History, key: &KeyHistory, violation: &Violation) -> (u32, Vec<u32>, String) {
    let name = |o: u32| op_name(history, key, o);
    match *violation {
        Violation::Unwritten { op } if is_read_of_appends(key, op) => (
            op,
            vec![],
            format!(
                "{} cannot be linearized: no put (or the initial value) followed by appends that did not fail spells \
                 it with each op invoked before it completed, each append completed after its put was invoked and \
                 none used twice",
                name(op)
            ),
        ),
        Violation::Unwritten { op } => {
            let v = seen_value(key, op).map_or(Value::Null, |v| key.values.json(v));
            (op, vec![], format!("{} cannot be linearized: no op that did not fail wrote {v}", name(op)))
        }
        Violation::SecondSuccessor { op, first } => {
            let v = seen_value(key, op).map_or(Value::Null, |v| key.values.json(v));
            let text = format!(
                "{} cannot be linearized: {} already replaced {v}, and with unique values {v} never comes back",
                name(op),
                name(first)
            );
            (op, vec![first], text)
        }
        Violation::Unrooted { op } => {
            let text = format!(
                "{} cannot be linearized: the value it expects is written only by cas ops that depend on it in turn, \
                 so none of them can go first",
                name(op)
            );
            (op, vec![], text)
        }
        Violation::TooLate { op, after } => {
            let text = format!(
                "{} cannot be linearized: it completed before {} was invoked, yet the values they saw and wrote \
                 put that op first",
                name(op),
                name(after)
            );
            (op, vec![after], text)
        }
        Violation::Diverged { op, other } => {
            let text = format!(
                "{} cannot be linearized: appends only grow a string, yet neither its string nor that of {} \
                 begins the other",
                name(op),
                name(other)
            );
            (op, vec![other], text)
        }
        Violation::StaleRoot { op, root: NONE, by } => {
            let text = format!(
                "{} cannot be linearized: its string starts from the initial value, yet {} was acknowledged before \
                 it was invoked and a put replaces the whole string",
                name(op),
                name(by)
            );
            (op, vec![by], text)
        }
        Violation::StaleRoot { op, root, by } => {
            let text = format!(
                "{} cannot be linearized: its string starts with the value of {}, yet {} was invoked after that put \
                 completed and acknowledged before the read was invoked, and a put replaces the whole string",
                name(op),
                name(root),
                name(by)
            );
            (op, vec![root, by], text)
        }
        Violation::NoAppend { op, text_op } => {
            let text = format!(
                "{} cannot be linearized: none of the appends of the text {} appended can be the one its string \
                 holds at that place (each was invoked after a read holding it completed, or completed before a \
                 read of the same put without it, or the put, was invoked)",
                name(op),
                name(text_op)
            );
            (op, vec![text_op], text)
        }
        Violation::Zones(c) => zones_text(history, key, &c.outer, &c.inner),
    }
}

fn zones_text(
    history: &History,
    key: &KeyHistory,
    outer: &Zone,
    inner: &Zone,
) -> (u32, Vec<u32>, String) {
    let name = |o: u32| op_name(history, key, o);
    let culprit = outer.max_call_op;
    let held_from = match outer.min_ret_op {
        NONE => format!("{} is the initial value", key.values.json(outer.root)),
        o => format!(
            "{} was in place by the completion of {}",
            version(key, outer),
            name(o)
        ),
    };
    let others = if inner.min_ret_op == inner.max_call_op {
        name(inner.min_ret_op)
    } else {
        format!(
            "{} (completed) and {} (invoked)",
            name(inner.min_ret_op),
            name(inner.max_call_op)
        )
    };
    let text = format!(
        "{} cannot be linearized: {held_from} and is still seen by it, yet {others} must fall in between, \
         so another value overwrote it meanwhile: a key holds one value at a time",
        name(culprit)
    );
    (
        culprit,
        vec![outer.min_ret_op, inner.min_ret_op, inner.max_call_op],
        text,
    )
}

/// The value the key held when the culprit needed another one, where the violation says:
/// the value written by the op that replaced (or overwrote) the culprit's version.
fn state_against(key: &KeyHistory, violation: &Violation) -> Option<u32> {
    let written_by = |op: u32| match key.ops.get(op as usize)?.action {
        Action::Write(v) | Action::Cas { new: v, .. } | Action::CasMaybe { new: v, .. } => Some(v),
        _ => None,
    };
    match *violation {
        Violation::SecondSuccessor { first, .. } => written_by(first),
        Violation::Zones(c) if c.inner.root != NONE => Some(c.inner.root),
        Violation::Zones(c) => written_by(c.inner.min_ret_op),
        _ => None,
    }
}

fn version(key: &KeyHistory, zone: &Zone) -> String {
    match zone.root {
        NONE => "the value".into(),
        v => format!(
            "the value {} (or a cas successor of it)",
            key.values.json(v)
        ),
    }
}

fn is_read_of_appends(key: &KeyHistory, op: u32) -> bool {
    matches!(key.ops[op as usize].action, Action::Read(_))
        && key
            .ops
            .iter()
            .any(|o| matches!(o.action, Action::Append(_)))
}

/// The value an op reads or expects, if any.
fn seen_value(key: &KeyHistory, op: u32) -> Option<u32> {
    match key.ops[op as usize].action {
        Action::Read(v)
        | Action::Cas { expected: v, .. }
        | Action::CasMaybe { expected: v, .. } => Some(v),
        Action::Write(v) => Some(v),
        Action::Append(_) => None,
    }
}

/// "op index 12 (read returned 3)", with history indices.
fn op_name(history: &History, key: &KeyHistory, op: u32) -> String {
    let o = &key.ops[op as usize];
    let invoke = &history.ops[o.call as usize];
    let what = match o.action {
        Action::Read(_) => {
            format!(
                "{} returned {}",
                invoke.f,
                history
                    .ops
                    .get(o.ret as usize)
                    .map(|c| c.value.to_string())
                    .unwrap_or_default()
            )
        }
        _ if !o.is_determinate() => format!("{} {}, outcome unknown", invoke.f, invoke.value),
        _ => format!("{} {}", invoke.f, invoke.value),
    };
    format!("op index {} ({what})", invoke.index)
}

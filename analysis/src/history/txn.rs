//! Transactions in a history: the micro-op model of Elle's list-append and rw-register
//! workloads, parsed from (and written back to) an op's JSON `value`.
//!
//! A transaction is an op with `f` = [`TXN`] whose `value` is a list of micro-ops:
//! `["append", k, v]`, `["r", k, null | [..]]` (list-append) or `["w", k, v]`,
//! `["r", k, null | v]` (rw-register). Keys and written values are scalars (an integer or a
//! string; EDN keywords arrive as strings). Two keys are the same iff their JSON forms are
//! equal, so `1` and `"1"` are different keys.
//!
//! Invariants: a parsed [`MicroOp`] of kind append or write always holds a
//! [`MopValue::Scalar`]; a read holds [`MopValue::Null`] (not read yet on an invoke, or
//! read nothing in rw-register), a scalar or a list. [`parse_txn_as`] additionally enforces
//! one workload's shapes (no `w` in list-append, reads are lists there, etc.).
//! Serialising a parsed micro-op gives back JSON that parses to the same micro-op.

use serde_json::Value;
use std::fmt;

/// `Op.f` of a transaction.
pub const TXN: &str = "txn";

/// How a history's transactions are to be read: Elle's two workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TxnModel {
    /// Appends of unique elements to lists; reads return the whole list.
    ListAppend,
    /// Writes of unique values to registers; reads return the current value.
    RwRegister,
}

impl TxnModel {
    pub const NAMES: &'static [&'static str] = &["list-append", "rw-register"];

    pub fn as_str(self) -> &'static str {
        match self {
            TxnModel::ListAppend => "list-append",
            TxnModel::RwRegister => "rw-register",
        }
    }
}

impl fmt::Display for TxnModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for TxnModel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "list-append" => Ok(TxnModel::ListAppend),
            "rw-register" => Ok(TxnModel::RwRegister),
            other => Err(format!(
                "unknown transaction model {other:?} (expected list-append or rw-register)"
            )),
        }
    }
}

/// The function of a micro-op.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MopKind {
    /// `"append"`: append the value to the key's list.
    Append,
    /// `"r"`: read the key.
    Read,
    /// `"w"`: overwrite the key's register.
    Write,
}

impl MopKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MopKind::Append => "append",
            MopKind::Read => "r",
            MopKind::Write => "w",
        }
    }
}

/// A key or a written value: an integer or a string.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxnScalar {
    Int(i64),
    Str(String),
}

/// A key as written in the history.
pub type TxnKey = TxnScalar;

impl TxnScalar {
    pub fn to_json(&self) -> Value {
        match self {
            TxnScalar::Int(i) => Value::from(*i),
            TxnScalar::Str(s) => Value::from(s.as_str()),
        }
    }

    fn from_json(v: &Value) -> Option<TxnScalar> {
        match v {
            Value::Number(n) => n.as_i64().map(TxnScalar::Int),
            Value::String(s) => Some(TxnScalar::Str(s.clone())),
            _ => None,
        }
    }
}

impl fmt::Display for TxnScalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TxnScalar::Int(i) => write!(f, "{i}"),
            TxnScalar::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// The value part of a micro-op.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MopValue {
    /// JSON `null`: a read not performed yet (invoke), or rw-register's read of nothing.
    Null,
    /// The value written, or the value an rw-register read returned.
    Scalar(TxnScalar),
    /// The list a list-append read returned.
    List(Vec<TxnScalar>),
}

impl MopValue {
    pub fn to_json(&self) -> Value {
        match self {
            MopValue::Null => Value::Null,
            MopValue::Scalar(s) => s.to_json(),
            MopValue::List(l) => Value::Array(l.iter().map(TxnScalar::to_json).collect()),
        }
    }
}

/// One micro-op of a transaction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MicroOp {
    pub kind: MopKind,
    pub key: TxnKey,
    pub value: MopValue,
}

impl MicroOp {
    /// `["append", k, v]`, `["r", k, null | [..] | v]` or `["w", k, v]`.
    pub fn to_json(&self) -> Value {
        Value::Array(vec![
            Value::from(self.kind.as_str()),
            self.key.to_json(),
            self.value.to_json(),
        ])
    }
}

/// A transaction's micro-ops back to the JSON of an op's `value`.
pub fn txn_to_json(mops: &[MicroOp]) -> Value {
    Value::Array(mops.iter().map(MicroOp::to_json).collect())
}

/// Why a transaction's `value` could not be read. `Display` says what is wrong and echoes
/// at most 80 characters of the offending JSON.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TxnParseError {
    #[error("transaction value is not a list of micro-ops: {0}")]
    NotAList(String),
    #[error("micro-op {index}: expected [function, key, value], got {got}")]
    BadShape { index: usize, got: String },
    #[error("micro-op {index}: unknown function {got} (expected append, r or w)")]
    UnknownFunction { index: usize, got: String },
    #[error("micro-op {index}: key is not an integer or a string: {got}")]
    BadKey { index: usize, got: String },
    #[error("micro-op {index}: {what} value of key {key} is not an integer or a string: {got}")]
    BadScalar {
        index: usize,
        what: &'static str,
        key: String,
        got: String,
    },
    #[error("micro-op {index}: read value of key {key} is not a list: {got}")]
    ReadNotList {
        index: usize,
        key: String,
        got: String,
    },
    #[error("micro-op {index}: read value of key {key} has an element that is not an integer or a string: {got}")]
    BadElement {
        index: usize,
        key: String,
        got: String,
    },
    #[error("micro-op {index}: read value of key {key} is a list, but rw-register reads return one value: {got}")]
    ReadIsList {
        index: usize,
        key: String,
        got: String,
    },
    #[error("micro-op {index}: {function:?} is not a {model} micro-op")]
    WrongModel {
        index: usize,
        function: &'static str,
        model: TxnModel,
    },
}

/// At most 80 characters of a JSON value, for error messages.
fn echo(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() <= 80 {
        s
    } else {
        let cut: String = s.chars().take(77).collect();
        format!("{cut}...")
    }
}

/// Parses a transaction's `value` without deciding the workload: reads may hold `null`, a
/// scalar or a list. Micro-ops are numbered from 1 in errors.
pub fn parse_txn(value: &Value) -> Result<Vec<MicroOp>, TxnParseError> {
    let items = value
        .as_array()
        .ok_or_else(|| TxnParseError::NotAList(echo(value)))?;
    items
        .iter()
        .enumerate()
        .map(|(i, m)| parse_mop(i + 1, m))
        .collect()
}

/// [`parse_txn`], then checks the shapes of one workload: list-append has only `append` and
/// `r`, its reads are `null` or lists; rw-register has only `w` and `r`, its reads are
/// `null` or a scalar.
pub fn parse_txn_as(value: &Value, model: TxnModel) -> Result<Vec<MicroOp>, TxnParseError> {
    let mops = parse_txn(value)?;
    for (i, m) in mops.iter().enumerate() {
        check_mop_shape(i + 1, m, model)?;
    }
    Ok(mops)
}

/// Whether micro-op number `index` (from 1), `m`, has one of `model`'s shapes.
pub fn check_mop_shape(index: usize, m: &MicroOp, model: TxnModel) -> Result<(), TxnParseError> {
    let wrong = || TxnParseError::WrongModel {
        index,
        function: m.kind.as_str(),
        model,
    };
    match (model, m.kind, &m.value) {
        (TxnModel::ListAppend, MopKind::Write, _) | (TxnModel::RwRegister, MopKind::Append, _) => {
            Err(wrong())
        }
        (TxnModel::ListAppend, MopKind::Read, MopValue::Scalar(s)) => {
            Err(TxnParseError::ReadNotList {
                index,
                key: m.key.to_string(),
                got: echo(&s.to_json()),
            })
        }
        (TxnModel::RwRegister, MopKind::Read, v @ MopValue::List(_)) => {
            Err(TxnParseError::ReadIsList {
                index,
                key: m.key.to_string(),
                got: echo(&v.to_json()),
            })
        }
        _ => Ok(()),
    }
}

fn parse_mop(index: usize, m: &Value) -> Result<MicroOp, TxnParseError> {
    let parts = match m.as_array() {
        Some(p) if p.len() == 3 => p,
        _ => {
            return Err(TxnParseError::BadShape {
                index,
                got: echo(m),
            })
        }
    };
    let kind = match parts[0].as_str() {
        Some("append") => MopKind::Append,
        Some("r") => MopKind::Read,
        Some("w") => MopKind::Write,
        _ => {
            return Err(TxnParseError::UnknownFunction {
                index,
                got: echo(&parts[0]),
            })
        }
    };
    let key = TxnScalar::from_json(&parts[1]).ok_or_else(|| TxnParseError::BadKey {
        index,
        got: echo(&parts[1]),
    })?;
    let value = parse_value(index, kind, &key, &parts[2])?;
    Ok(MicroOp { kind, key, value })
}

fn parse_value(
    index: usize,
    kind: MopKind,
    key: &TxnKey,
    v: &Value,
) -> Result<MopValue, TxnParseError> {
    let scalar = |what: &'static str| {
        TxnScalar::from_json(v)
            .map(MopValue::Scalar)
            .ok_or_else(|| TxnParseError::BadScalar {
                index,
                what,
                key: key.to_string(),
                got: echo(v),
            })
    };
    match kind {
        MopKind::Append => scalar("appended"),
        MopKind::Write => scalar("written"),
        MopKind::Read => match v {
            Value::Null => Ok(MopValue::Null),
            Value::Array(items) => items
                .iter()
                .map(|e| {
                    TxnScalar::from_json(e).ok_or_else(|| TxnParseError::BadElement {
                        index,
                        key: key.to_string(),
                        got: echo(e),
                    })
                })
                .collect::<Result<Vec<_>, _>>()
                .map(MopValue::List),
            Value::Number(_) | Value::String(_) => scalar("read"),
            other => Err(TxnParseError::ReadNotList {
                index,
                key: key.to_string(),
                got: echo(other),
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(v: Value) -> String {
        parse_txn(&v).unwrap_err().to_string()
    }

    #[test]
    fn parses_list_append_txn_and_round_trips() {
        let v = json!([["append", 1, 2], ["r", 1, null], ["r", "x", [1, "a"]]]);
        let mops = parse_txn_as(&v, TxnModel::ListAppend).unwrap();
        assert_eq!(
            mops[0],
            MicroOp {
                kind: MopKind::Append,
                key: TxnScalar::Int(1),
                value: MopValue::Scalar(TxnScalar::Int(2))
            }
        );
        assert_eq!(mops[1].value, MopValue::Null);
        assert_eq!(mops[2].key, TxnScalar::Str("x".into()));
        assert_eq!(
            mops[2].value,
            MopValue::List(vec![TxnScalar::Int(1), TxnScalar::Str("a".into())])
        );
        assert_eq!(txn_to_json(&mops), v);
    }

    #[test]
    fn parses_rw_register_txn_and_round_trips() {
        let v = json!([["w", 1, 5], ["r", 1, 5], ["r", 2, null]]);
        let mops = parse_txn_as(&v, TxnModel::RwRegister).unwrap();
        assert_eq!(mops[1].value, MopValue::Scalar(TxnScalar::Int(5)));
        assert_eq!(txn_to_json(&mops), v);
    }

    #[test]
    fn keys_one_and_string_one_differ() {
        let mops = parse_txn(&json!([["r", 1, null], ["r", "1", null]])).unwrap();
        assert_ne!(mops[0].key, mops[1].key);
    }

    #[test]
    fn not_a_list_is_an_error() {
        assert_eq!(
            err(json!({"a": 1})),
            "transaction value is not a list of micro-ops: {\"a\":1}"
        );
        assert_eq!(
            err(json!(null)),
            "transaction value is not a list of micro-ops: null"
        );
    }

    #[test]
    fn micro_op_of_wrong_arity_is_an_error() {
        assert_eq!(
            err(json!([["r", 1, null], ["r", 1]])),
            "micro-op 2: expected [function, key, value], got [\"r\",1]"
        );
        assert_eq!(
            err(json!([5])),
            "micro-op 1: expected [function, key, value], got 5"
        );
    }

    #[test]
    fn unknown_function_is_an_error() {
        assert_eq!(
            err(json!([["r", 1, null], ["incr", 1, 1]])),
            "micro-op 2: unknown function \"incr\" (expected append, r or w)"
        );
    }

    #[test]
    fn bad_key_and_values_are_errors() {
        assert_eq!(
            err(json!([["r", [1], null]])),
            "micro-op 1: key is not an integer or a string: [1]"
        );
        assert_eq!(
            err(json!([["r", 1.5, null]])),
            "micro-op 1: key is not an integer or a string: 1.5"
        );
        assert_eq!(
            err(json!([["append", 3, null]])),
            "micro-op 1: appended value of key 3 is not an integer or a string: null"
        );
        assert_eq!(
            err(json!([["w", 3, [1]]])),
            "micro-op 1: written value of key 3 is not an integer or a string: [1]"
        );
        assert_eq!(
            err(json!([["r", 3, [1, {"x": 1}]]])),
            "micro-op 1: read value of key 3 has an element that is not an integer or a string: {\"x\":1}"
        );
        assert_eq!(
            err(json!([["r", 3, true]])),
            "micro-op 1: read value of key 3 is not a list: true"
        );
    }

    #[test]
    fn workload_shapes_are_enforced() {
        let la = |v: Value| {
            parse_txn_as(&v, TxnModel::ListAppend)
                .unwrap_err()
                .to_string()
        };
        let rw = |v: Value| {
            parse_txn_as(&v, TxnModel::RwRegister)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            la(json!([["r", 3, 5]])),
            "micro-op 1: read value of key 3 is not a list: 5"
        );
        assert_eq!(
            la(json!([["w", 3, 5]])),
            "micro-op 1: \"w\" is not a list-append micro-op"
        );
        assert_eq!(
            rw(json!([["append", 3, 5]])),
            "micro-op 1: \"append\" is not a rw-register micro-op"
        );
        assert_eq!(
            rw(json!([["r", 3, [5]]])),
            "micro-op 1: read value of key 3 is a list, but rw-register reads return one value: [5]"
        );
    }

    #[test]
    fn long_values_are_echoed_to_eighty_chars() {
        let long = "x".repeat(200);
        let msg = err(json!([["r", 1, null], [long, 1, 1]]));
        let echoed = msg
            .trim_start_matches("micro-op 2: unknown function ")
            .trim_end_matches(" (expected append, r or w)");
        assert_eq!(echoed.chars().count(), 80, "{msg}");
        assert!(echoed.ends_with("..."), "{msg}");
    }

    #[test]
    fn model_names_parse_and_print() {
        for name in TxnModel::NAMES {
            assert_eq!(name.parse::<TxnModel>().unwrap().to_string(), *name);
        }
        assert!("bank".parse::<TxnModel>().is_err());
    }
}

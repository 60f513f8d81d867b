//! Reads a transaction's micro-ops straight from the JSON text of its `value`, without
//! building a `serde_json::Value` tree first (a read list of a hundred elements would be a
//! hundred and one allocations of which nothing is kept).
//!
//! Invariant: [`mops_of_json`] returns `Some(m)` only when `parse_txn` of the same text
//! parsed as a `Value` returns `Ok(m)`: the same serde_json number and string rules apply
//! (integers that fit an `i64`; floats, `-0` and larger numbers are refused), and any
//! deviation from the plain shape returns `None`, whereupon the caller parses the `Value`
//! and lets [`crate::history::txn::parse_txn`] say exactly what is wrong.

use crate::history::txn::{MicroOp, MopKind, MopValue, TxnScalar};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, SeqAccess, Visitor};
use std::cell::Cell;
use std::fmt;

thread_local! {
    /// The buffer list reads are gathered in, one per parsing thread.
    static SCRATCH: Cell<Vec<TxnScalar>> = const { Cell::new(Vec::new()) };
}

/// The micro-ops of a transaction whose `value` is the JSON text `raw`, when it is a
/// well-formed transaction; `None` otherwise (the caller then finds out why).
pub fn mops_of_json(raw: &str) -> Option<Vec<MicroOp>> {
    let mut de = serde_json::Deserializer::from_str(raw);
    let mops = de.deserialize_seq(Mops).ok()?;
    de.end().ok()?;
    Some(mops)
}

struct Mops;

impl<'de> Visitor<'de> for Mops {
    type Value = Vec<MicroOp>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of micro-ops")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<MicroOp>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(4));
        while let Some(m) = seq.next_element_seed(Mop)? {
            out.push(m);
        }
        Ok(out)
    }
}

/// `[function, key, value]`.
struct Mop;

impl<'de> DeserializeSeed<'de> for Mop {
    type Value = MicroOp;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<MicroOp, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Mop {
    type Value = MicroOp;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("[function, key, value]")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MicroOp, A::Error> {
        let missing = || de::Error::custom("a micro-op has three parts");
        let kind = seq.next_element_seed(Function)?.ok_or_else(missing)?;
        let key = seq.next_element_seed(Scalar)?.ok_or_else(missing)?;
        let value = seq.next_element_seed(Arg)?.ok_or_else(missing)?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(missing());
        }
        let fits = matches!(
            (kind, &value),
            (MopKind::Read, _) | (_, MopValue::Scalar(_))
        );
        if !fits {
            return Err(de::Error::custom("an append or a write has a scalar value"));
        }
        Ok(MicroOp { kind, key, value })
    }
}

/// `"append"`, `"r"` or `"w"`.
struct Function;

impl<'de> DeserializeSeed<'de> for Function {
    type Value = MopKind;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<MopKind, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Function {
    type Value = MopKind;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("append, r or w")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<MopKind, E> {
        match v {
            "append" => Ok(MopKind::Append),
            "r" => Ok(MopKind::Read),
            "w" => Ok(MopKind::Write),
            _ => Err(E::custom("unknown function")),
        }
    }
}

/// An integer that fits an `i64`, or a string.
struct Scalar;

impl<'de> DeserializeSeed<'de> for Scalar {
    type Value = TxnScalar;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<TxnScalar, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Scalar {
    type Value = TxnScalar;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an integer or a string")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<TxnScalar, E> {
        Ok(TxnScalar::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<TxnScalar, E> {
        i64::try_from(v)
            .map(TxnScalar::Int)
            .map_err(|_| E::custom("integer beyond i64"))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<TxnScalar, E> {
        Ok(TxnScalar::Str(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<TxnScalar, E> {
        Ok(TxnScalar::Str(v))
    }
}

/// A micro-op's value: `null`, a scalar, or a list of scalars.
struct Arg;

impl<'de> DeserializeSeed<'de> for Arg {
    type Value = MopValue;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<MopValue, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Arg {
    type Value = MopValue;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("null, a scalar or a list of scalars")
    }
    fn visit_unit<E: de::Error>(self) -> Result<MopValue, E> {
        Ok(MopValue::Null)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<MopValue, E> {
        Scalar.visit_i64(v).map(MopValue::Scalar)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<MopValue, E> {
        Scalar.visit_u64(v).map(MopValue::Scalar)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<MopValue, E> {
        Scalar.visit_str(v).map(MopValue::Scalar)
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<MopValue, E> {
        Scalar.visit_string(v).map(MopValue::Scalar)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MopValue, A::Error> {
        // Gathered in a reused buffer, then copied once into a list of the exact length:
        // one allocation per list instead of one per doubling.
        SCRATCH.with(|scratch| {
            let mut items = scratch.take();
            items.clear();
            let read = (|| {
                while let Some(s) = seq.next_element_seed(Scalar)? {
                    items.push(s);
                }
                // Copied out, not taken: the scratch buffer keeps its capacity for the next
                // list, and the list gets an allocation of its exact length.
                #[allow(clippy::drain_collect)]
                Ok(MopValue::List(items.drain(..).collect()))
            })();
            scratch.set(items);
            read
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::txn::parse_txn;
    use serde_json::Value;

    /// The fast reader agrees with `parse_txn` of the parsed `Value`, or declines.
    fn agrees(raw: &str) -> Option<Vec<MicroOp>> {
        let fast = mops_of_json(raw);
        let slow = serde_json::from_str::<Value>(raw)
            .ok()
            .and_then(|v| parse_txn(&v).ok());
        if fast.is_some() {
            assert_eq!(fast, slow, "{raw}");
        }
        fast
    }

    #[test]
    fn well_formed_transactions_read_as_parse_txn_reads_them() {
        for raw in [
            r#"[["append",1,2],["r",1,null],["r","x",[1,"a",-3]]]"#,
            r#" [ [ "w" , "k\"\u00e9" , 5 ] , ["r", 1, 5], ["r", 2, "s"] ] "#,
            r#"[]"#,
            r#"[["r",9223372036854775807,[-9223372036854775808]]]"#,
        ] {
            assert!(agrees(raw).is_some(), "{raw}");
        }
    }

    #[test]
    fn anything_else_is_declined_for_the_slow_parser_to_explain() {
        for raw in [
            r#"[["append",1,null]]"#,
            r#"[["w",1,[1]]]"#,
            r#"[["r",1,1.5]]"#,
            r#"[["r",1,-0]]"#,
            r#"[["r",1.0,null]]"#,
            r#"[["r",9223372036854775808,null]]"#,
            r#"[["r",1,[true]]]"#,
            r#"[["r",1]]"#,
            r#"[["r",1,null,4]]"#,
            r#"[["incr",1,1]]"#,
            r#"{"a":1}"#,
            r#"null"#,
            r#"[["r",1,null]] x"#,
            r#"[["r",1,{"a":1}]]"#,
        ] {
            assert!(agrees(raw).is_none(), "{raw}");
        }
    }
}

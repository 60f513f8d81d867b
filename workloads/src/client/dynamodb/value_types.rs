//! The DynamoDB attribute types a register run writes (`--value-type`, the shape of
//! elastickv's `dynamodb_types_workload.clj`): how a write's number `n` becomes an item's
//! attributes, how the attributes read come back to a write's number, and equality as
//! DynamoDB defines it (sets unordered, numbers by value, binary by bytes, maps by key).
//!
//! | type | attributes of write `n` (besides the hash key) |
//! |---|---|
//! | `S` | `val` = `"v-n"` |
//! | `N` | `val` = `n` |
//! | `B` | `val` = the bytes of `"v-n"` |
//! | `BOOL` | `val` = `n` is odd, `w` (N) = `n` |
//! | `NULL` | `val` = NULL, `w` (N) = `n` |
//! | `SS` | `val` = {`"v-n"`, `"w-n"`} |
//! | `NS` | `val` = {`n`, `n + 1000`} |
//! | `BS` | `val` = {bytes of `"v-n"`, bytes of `"w-n"`} |
//! | `L` | `val` = [`n`, `n + 1`] (numbers) |
//! | `M` | `val` = {`a`: `n`, `b`: `n + 1`} (numbers) |
//!
//! A boolean or a null cannot tell two writes apart, so those items carry the write's
//! number in `w` as well; `val` is still checked to be exactly the type's value for `n`.
//!
//! Invariant: [`decode`] gives back `n` only when the attributes read are, by DynamoDB's
//! equality, exactly those of write `n` ([`attributes`]); anything else (another type, a
//! missing or extra attribute, a set with an element too many) is [`Decoded::Unexpected`]
//! with a description of what was read, never mapped to a write.

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::str::FromStr;

/// The attribute holding the register's value.
pub const VALUE_ATTR: &str = "val";
/// The attribute holding the write's number in `BOOL` and `NULL` items.
pub const WRITE_ATTR: &str = "w";

/// One DynamoDB attribute type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ValueType {
    S,
    N,
    B,
    Bool,
    Null,
    Ss,
    Ns,
    Bs,
    L,
    M,
}

impl ValueType {
    /// Every type, in `--value-type all`'s order (key `i` gets `ALL[i mod 10]`).
    pub const ALL: [ValueType; 10] = [
        ValueType::S,
        ValueType::N,
        ValueType::B,
        ValueType::Bool,
        ValueType::Null,
        ValueType::Ss,
        ValueType::Ns,
        ValueType::Bs,
        ValueType::L,
        ValueType::M,
    ];

    /// DynamoDB's name of the type (`S`, `BOOL`, `SS`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ValueType::S => "S",
            ValueType::N => "N",
            ValueType::B => "B",
            ValueType::Bool => "BOOL",
            ValueType::Null => "NULL",
            ValueType::Ss => "SS",
            ValueType::Ns => "NS",
            ValueType::Bs => "BS",
            ValueType::L => "L",
            ValueType::M => "M",
        }
    }

    /// The type's table (elastickv's suite's names).
    pub fn table(self) -> &'static str {
        match self {
            ValueType::S => "jepsen_types_string",
            ValueType::N => "jepsen_types_number",
            ValueType::B => "jepsen_types_binary",
            ValueType::Bool => "jepsen_types_bool",
            ValueType::Null => "jepsen_types_null",
            ValueType::Ss => "jepsen_types_string_set",
            ValueType::Ns => "jepsen_types_number_set",
            ValueType::Bs => "jepsen_types_binary_set",
            ValueType::L => "jepsen_types_list",
            ValueType::M => "jepsen_types_map",
        }
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `--value-type`: one type for every key, or all ten spread over the keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum ValueTypes {
    One(ValueType),
    All,
}

impl ValueTypes {
    /// The types in play, each once.
    pub fn types(self) -> Vec<ValueType> {
        match self {
            ValueTypes::One(t) => vec![t],
            ValueTypes::All => ValueType::ALL.to_vec(),
        }
    }

    /// The type of a register key: the one type, or with `all` the key's number (its
    /// trailing digits, as the register workload names keys) modulo ten.
    pub fn of_key(self, key: &str) -> ValueType {
        match self {
            ValueTypes::One(t) => t,
            ValueTypes::All => ValueType::ALL[(key_number(key) % 10) as usize],
        }
    }
}

/// The number at the end of `key` (`reg/00013` → 13); a key without one hashes (FNV-1a).
fn key_number(key: &str) -> u64 {
    let digits: String = key
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().unwrap_or_else(|_| {
        key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        })
    })
}

impl FromStr for ValueTypes {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.eq_ignore_ascii_case("all") {
            return Ok(ValueTypes::All);
        }
        ValueType::ALL
            .iter()
            .find(|t| t.name().eq_ignore_ascii_case(s))
            .map(|t| ValueTypes::One(*t))
            .ok_or_else(|| {
                format!("unknown --value-type {s:?}: expected S, N, B, BOOL, NULL, SS, NS, BS, L, M or all")
            })
    }
}

impl fmt::Display for ValueTypes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueTypes::One(t) => t.fmt(f),
            ValueTypes::All => f.write_str("all"),
        }
    }
}

impl TryFrom<String> for ValueTypes {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<ValueTypes> for String {
    fn from(v: ValueTypes) -> String {
        v.to_string()
    }
}

fn number(n: i64) -> AttributeValue {
    AttributeValue::N(n.to_string())
}

fn bytes(s: String) -> Blob {
    Blob::new(s.into_bytes())
}

/// The non-key attributes of write `n` in type `t` (the table in the module comment).
pub fn attributes(t: ValueType, n: i64) -> HashMap<String, AttributeValue> {
    let val = match t {
        ValueType::S => AttributeValue::S(format!("v-{n}")),
        ValueType::N => number(n),
        ValueType::B => AttributeValue::B(bytes(format!("v-{n}"))),
        ValueType::Bool => AttributeValue::Bool(n % 2 != 0),
        ValueType::Null => AttributeValue::Null(true),
        ValueType::Ss => AttributeValue::Ss(vec![format!("v-{n}"), format!("w-{n}")]),
        ValueType::Ns => AttributeValue::Ns(vec![n.to_string(), (n + 1000).to_string()]),
        ValueType::Bs => AttributeValue::Bs(vec![bytes(format!("v-{n}")), bytes(format!("w-{n}"))]),
        ValueType::L => AttributeValue::L(vec![number(n), number(n + 1)]),
        ValueType::M => AttributeValue::M(HashMap::from([
            ("a".to_string(), number(n)),
            ("b".to_string(), number(n + 1)),
        ])),
    };
    let mut item = HashMap::from([(VALUE_ATTR.to_string(), val)]);
    if matches!(t, ValueType::Bool | ValueType::Null) {
        item.insert(WRITE_ATTR.to_string(), number(n));
    }
    item
}

/// What a read of a register item came back as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// Exactly the attributes of write `n`.
    Written(i64),
    /// Attributes no write of this type produces, described (`{"val":{"SS":[...]}}`).
    Unexpected(String),
}

/// The write whose attributes `attrs` (the item without its hash key) are, by DynamoDB's
/// equality; [`Decoded::Unexpected`] if there is none.
pub fn decode(t: ValueType, attrs: &HashMap<String, AttributeValue>) -> Decoded {
    match candidate(t, attrs) {
        Some(n) if same_item(&attributes(t, n), attrs) => Decoded::Written(n),
        _ => Decoded::Unexpected(describe_item(attrs)),
    }
}

/// The only write `attrs` can be, read off one part of them (checked whole by [`decode`]).
fn candidate(t: ValueType, attrs: &HashMap<String, AttributeValue>) -> Option<i64> {
    let prefixed = |s: &str| s.strip_prefix("v-").and_then(|n| n.parse::<i64>().ok());
    let prefixed_bytes = |b: &Blob| std::str::from_utf8(b.as_ref()).ok().and_then(prefixed);
    let val = attrs.get(VALUE_ATTR)?;
    match (t, val) {
        (ValueType::S, AttributeValue::S(s)) => prefixed(s),
        (ValueType::N, AttributeValue::N(s)) => Decimal::parse(s)?.to_i64(),
        (ValueType::B, AttributeValue::B(b)) => prefixed_bytes(b),
        (ValueType::Bool | ValueType::Null, _) => match attrs.get(WRITE_ATTR)? {
            AttributeValue::N(s) => Decimal::parse(s)?.to_i64(),
            _ => None,
        },
        (ValueType::Ss, AttributeValue::Ss(v)) => v.iter().find_map(|s| prefixed(s)),
        (ValueType::Ns, AttributeValue::Ns(v)) => {
            v.iter().filter_map(|s| Decimal::parse(s)?.to_i64()).min()
        }
        (ValueType::Bs, AttributeValue::Bs(v)) => v.iter().find_map(prefixed_bytes),
        (ValueType::L, AttributeValue::L(v)) => match v.first()? {
            AttributeValue::N(s) => Decimal::parse(s)?.to_i64(),
            _ => None,
        },
        (ValueType::M, AttributeValue::M(m)) => match m.get("a")? {
            AttributeValue::N(s) => Decimal::parse(s)?.to_i64(),
            _ => None,
        },
        _ => None,
    }
}

/// Two items' attributes are equal: the same names, each value [`same`].
pub fn same_item(a: &HashMap<String, AttributeValue>, b: &HashMap<String, AttributeValue>) -> bool {
    a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same(v, w)))
}

/// DynamoDB's equality of two attribute values: numbers by value, sets as sets (order and
/// number forms aside), lists element by element, maps by key, binary by bytes.
pub fn same(a: &AttributeValue, b: &AttributeValue) -> bool {
    use AttributeValue as A;
    match (a, b) {
        (A::S(x), A::S(y)) => x == y,
        (A::N(x), A::N(y)) => same_number(x, y),
        (A::B(x), A::B(y)) => x.as_ref() == y.as_ref(),
        (A::Bool(x), A::Bool(y)) => x == y,
        (A::Null(x), A::Null(y)) => x == y,
        (A::Ss(x), A::Ss(y)) => set_of(x, |s| s.clone()) == set_of(y, |s| s.clone()),
        (A::Ns(x), A::Ns(y)) => number_set(x) == number_set(y),
        (A::Bs(x), A::Bs(y)) => {
            set_of(x, |b| b.as_ref().to_vec()) == set_of(y, |b| b.as_ref().to_vec())
        }
        (A::L(x), A::L(y)) => x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w)),
        (A::M(x), A::M(y)) => same_item(x, y),
        _ => false,
    }
}

fn set_of<T, K: Ord>(items: &[T], key: impl Fn(&T) -> K) -> BTreeSet<K> {
    items.iter().map(key).collect()
}

/// A number set by value (a member that is not a number stands for itself).
fn number_set(items: &[String]) -> BTreeSet<Result<Decimal, String>> {
    set_of(items, |s| Decimal::parse(s).ok_or_else(|| s.clone()))
}

/// Two DynamoDB numbers are equal by value (`1.0` = `1` = `1E0`); text that is not a
/// number equals only the same text.
pub fn same_number(a: &str, b: &str) -> bool {
    match (Decimal::parse(a), Decimal::parse(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// A decimal number in one form per value: sign, significant digits (no leading or
/// trailing zero), and the exponent of the first digit (value = 0.digits × 10^exp).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Decimal {
    negative: bool,
    digits: String,
    exp: i64,
}

impl Decimal {
    /// `[+-]digits[.digits][e[+-]digits]`; `None` for anything else.
    pub fn parse(s: &str) -> Option<Decimal> {
        let (negative, rest) = match s.as_bytes().first()? {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let (mantissa, exp) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
            None => (rest, 0),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let all_digits = |p: &str| p.bytes().all(|c| c.is_ascii_digit());
        if int.is_empty() && frac.is_empty() || !all_digits(int) || !all_digits(frac) {
            return None;
        }
        let joined = format!("{int}{frac}");
        let lead = joined.len() - joined.trim_start_matches('0').len();
        let digits = joined.trim_matches('0').to_string();
        if digits.is_empty() {
            return Some(Decimal {
                negative: false,
                digits,
                exp: 0,
            });
        }
        let exp = exp.checked_add(int.len() as i64 - lead as i64)?;
        Some(Decimal {
            negative,
            digits,
            exp,
        })
    }

    /// The value as an `i64`, if it is a whole number in range.
    pub fn to_i64(&self) -> Option<i64> {
        if self.digits.is_empty() {
            return Some(0);
        }
        let zeros = usize::try_from(self.exp.checked_sub(self.digits.len() as i64)?).ok()?;
        if zeros > 19 {
            return None;
        }
        let text = format!(
            "{}{}{}",
            if self.negative { "-" } else { "" },
            self.digits,
            "0".repeat(zeros)
        );
        text.parse().ok()
    }
}

/// An item's attributes as JSON text in DynamoDB's wire shape (binary as hex), names sorted.
pub fn describe_item(attrs: &HashMap<String, AttributeValue>) -> String {
    describe_map(attrs).to_string()
}

fn describe_map(m: &HashMap<String, AttributeValue>) -> serde_json::Value {
    let sorted: std::collections::BTreeMap<_, _> =
        m.iter().map(|(k, v)| (k.clone(), describe(v))).collect();
    serde_json::json!(sorted)
}

fn hex(b: &Blob) -> String {
    b.as_ref().iter().map(|x| format!("{x:02x}")).collect()
}

fn describe(v: &AttributeValue) -> serde_json::Value {
    use serde_json::json;
    use AttributeValue as A;
    match v {
        A::S(s) => json!({ "S": s }),
        A::N(s) => json!({ "N": s }),
        A::B(b) => json!({ "B": hex(b) }),
        A::Bool(b) => json!({ "BOOL": b }),
        A::Null(b) => json!({ "NULL": b }),
        A::Ss(v) => json!({ "SS": v }),
        A::Ns(v) => json!({ "NS": v }),
        A::Bs(v) => json!({ "BS": v.iter().map(hex).collect::<Vec<_>>() }),
        A::L(v) => json!({ "L": v.iter().map(describe).collect::<Vec<_>>() }),
        A::M(m) => json!({ "M": describe_map(m) }),
        other => json!({ "unknown": format!("{other:?}") }),
    }
}

#[cfg(test)]
mod tests;

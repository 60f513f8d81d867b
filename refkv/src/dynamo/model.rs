//! The DynamoDB JSON subset refkv serves, as data: attribute values, item keys and where
//! they are stored, and the update and condition expressions it understands. Pure (no I/O).
//!
//! The subset (docs/dynamodb.md): a table has one string hash key; the expressions below
//! work on an item's attribute `val`, a list of numbers (stored as refkv's transactional
//! list of `i64`); `PutItem` and `GetItem` also serve items of any attribute types
//! (`typed`). A list number of `i64::MIN` is refused (it marks a packed item). Update expressions: `SET v = list_append(if_not_exists(v, :e), :l)` (an
//! append of the list `:l`); conditions: `v = :l`, `attribute_not_exists(v)`,
//! `attribute_exists(v)`; names may be given through `ExpressionAttributeNames`.
//!
//! Invariant: whatever is not in the subset is refused (`Invalid`) before anything runs, so
//! the server never half-understands a request.

use serde_json::{json, Map, Value};

/// The one non-key attribute an item may have.
pub const LIST_ATTR: &str = "val";

/// A request refkv refuses as malformed or outside its subset (`ValidationException`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(pub String);

fn invalid<T>(why: impl Into<String>) -> Result<T, Invalid> {
    Err(Invalid(why.into()))
}

/// Where a table's existence is recorded.
pub fn table_key(table: &str) -> Vec<u8> {
    let mut k = b"\x00ddb/table/".to_vec();
    k.extend_from_slice(table.as_bytes());
    k
}

/// Where an item is stored: its hash key first (so items are spread over the routes as
/// their keys are), then a 0 byte and the table's name.
pub fn item_key(table: &str, pk: &str) -> Vec<u8> {
    let mut k = pk.as_bytes().to_vec();
    k.push(0);
    k.extend_from_slice(table.as_bytes());
    k
}

/// A request's string field.
pub fn field<'a>(req: &'a Value, name: &str) -> Result<&'a str, Invalid> {
    match req.get(name).and_then(Value::as_str) {
        Some(s) if !s.is_empty() => Ok(s),
        _ => invalid(format!("missing {name}")),
    }
}

/// A `Key` map: the name and value of its one string attribute.
pub fn hash_key(key: &Value) -> Result<(String, String), Invalid> {
    let Some(map) = key.as_object() else {
        return invalid("Key is not a map");
    };
    match map.iter().collect::<Vec<_>>().as_slice() {
        [(name, v)] => match v.get("S").and_then(Value::as_str) {
            Some(s) if !s.is_empty() => Ok((name.to_string(), s.to_string())),
            _ => invalid(format!("key attribute {name} is not a non-empty string")),
        },
        _ => invalid("the key must be one string hash key attribute"),
    }
}

/// A list of numbers as a DynamoDB attribute value.
pub fn list_json(values: &[i64]) -> Value {
    json!({ "L": values.iter().map(|v| json!({ "N": v.to_string() })).collect::<Vec<_>>() })
}

/// The numbers of a list attribute value.
pub fn numbers(v: &Value) -> Result<Vec<i64>, Invalid> {
    let Some(list) = v.get("L").and_then(Value::as_array) else {
        return invalid(format!("{v} is not a list"));
    };
    list.iter()
        .map(
            |e| match e.get("N").and_then(Value::as_str).map(str::parse::<i64>) {
                Some(Ok(n)) if n != super::typed::PACKED => Ok(n),
                _ => invalid(format!("list element {e} is not an integer number")),
            },
        )
        .collect()
}

/// An item as returned: its key and, if present, its list.
pub fn item_json(key_name: &str, pk: &str, list: Option<&[i64]>) -> Value {
    let mut item = Map::new();
    item.insert(key_name.to_string(), json!({ "S": pk }));
    if let Some(l) = list {
        item.insert(LIST_ATTR.to_string(), list_json(l));
    }
    Value::Object(item)
}

/// A request's expression context: attribute names and values.
pub struct Context<'a> {
    names: Option<&'a Map<String, Value>>,
    values: Option<&'a Map<String, Value>>,
}

impl<'a> Context<'a> {
    pub fn of(req: &'a Value) -> Context<'a> {
        Context {
            names: req
                .get("ExpressionAttributeNames")
                .and_then(Value::as_object),
            values: req
                .get("ExpressionAttributeValues")
                .and_then(Value::as_object),
        }
    }

    /// An attribute path: `#x` through the names, else literal; it must be the list.
    fn attr(&self, token: &str) -> Result<(), Invalid> {
        let name = match token.strip_prefix('#') {
            Some(_) => self
                .names
                .and_then(|n| n.get(token))
                .and_then(Value::as_str)
                .ok_or_else(|| Invalid(format!("undefined attribute name {token}")))?,
            None => token,
        };
        if name == LIST_ATTR {
            Ok(())
        } else {
            invalid(format!(
                "attribute {name}: only {LIST_ATTR} (a list of numbers) is served"
            ))
        }
    }

    fn value(&self, token: &str) -> Result<&'a Value, Invalid> {
        self.values
            .and_then(|v| v.get(token))
            .ok_or_else(|| Invalid(format!("undefined attribute value {token}")))
    }
}

/// Without spaces, for matching.
fn squeeze(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// `inner` of `prefix(inner)` (case-insensitive prefix), if `s` has that shape.
fn call<'s>(s: &'s str, prefix: &str) -> Option<&'s str> {
    let head = s.get(..prefix.len() + 1)?;
    (head.eq_ignore_ascii_case(&format!("{prefix}(")) && s.ends_with(')'))
        .then(|| &s[prefix.len() + 1..s.len() - 1])
}

/// The values an update expression appends to the list.
pub fn parse_append(expr: &str, cx: &Context<'_>) -> Result<Vec<i64>, Invalid> {
    let e = squeeze(expr);
    let not_served = || {
        Invalid(format!("update expression {expr:?}: only SET v = list_append(if_not_exists(v, :empty), :list) is served"))
    };
    let body = e
        .get(..3)
        .filter(|h| h.eq_ignore_ascii_case("SET"))
        .map(|_| &e[3..])
        .ok_or_else(not_served)?;
    let (lhs, rhs) = body.split_once('=').ok_or_else(not_served)?;
    cx.attr(lhs)?;
    let args = call(rhs, "list_append").ok_or_else(not_served)?;
    let (first, list) = args.rsplit_once(',').ok_or_else(not_served)?;
    let (attr, empty) = call(first, "if_not_exists")
        .and_then(|a| a.split_once(','))
        .ok_or_else(not_served)?;
    cx.attr(attr)?;
    if !numbers(cx.value(empty)?)?.is_empty() {
        return invalid("if_not_exists's default must be the empty list");
    }
    numbers(cx.value(list)?)
}

/// A condition on an item's list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    Equals(Vec<i64>),
    NotExists,
    Exists,
}

impl Condition {
    pub fn holds(&self, list: &Option<Vec<i64>>) -> bool {
        match self {
            Condition::Equals(want) => list.as_ref() == Some(want),
            Condition::NotExists => list.is_none(),
            Condition::Exists => list.is_some(),
        }
    }
}

/// A condition expression (`None`: no condition).
pub fn parse_condition(expr: Option<&str>, cx: &Context<'_>) -> Result<Option<Condition>, Invalid> {
    let Some(expr) = expr else {
        return Ok(None);
    };
    let e = squeeze(expr);
    if let Some(a) = call(&e, "attribute_not_exists") {
        cx.attr(a)?;
        return Ok(Some(Condition::NotExists));
    }
    if let Some(a) = call(&e, "attribute_exists") {
        cx.attr(a)?;
        return Ok(Some(Condition::Exists));
    }
    match e.split_once('=') {
        Some((a, v)) if !v.contains('=') => {
            cx.attr(a)?;
            Ok(Some(Condition::Equals(numbers(cx.value(v)?)?)))
        }
        _ => invalid(format!("condition {expr:?}: only v = :list, attribute_not_exists(v) and attribute_exists(v) are served")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> Value {
        json!({
            "ExpressionAttributeNames": {"#v": "val", "#o": "other"},
            "ExpressionAttributeValues": {":empty": {"L": []}, ":val": list_json(&[7, 8]), ":cv": list_json(&[1])}
        })
    }

    #[test]
    fn the_append_expression_yields_its_values_in_any_spacing() {
        let r = req();
        let cx = Context::of(&r);
        let e = "SET #v = list_append(if_not_exists(#v, :empty), :val)";
        assert_eq!(parse_append(e, &cx), Ok(vec![7, 8]));
        let tight = "set val=list_append(if_not_exists(val,:empty),:val)";
        assert_eq!(parse_append(tight, &cx), Ok(vec![7, 8]));
    }

    #[test]
    fn other_updates_and_attributes_are_refused() {
        let r = req();
        let cx = Context::of(&r);
        assert!(parse_append("SET #v = :val", &cx).is_err());
        assert!(
            parse_append("SET #o = list_append(if_not_exists(#o, :empty), :val)", &cx).is_err()
        );
        assert!(
            parse_append("SET #v = list_append(if_not_exists(#v, :val), :val)", &cx).is_err(),
            "non-empty default"
        );
        assert!(parse_append(
            "SET #v = list_append(if_not_exists(#v, :empty), :nope)",
            &cx
        )
        .is_err());
    }

    #[test]
    fn conditions_parse_and_hold_as_dynamodb_compares_lists() {
        let r = req();
        let cx = Context::of(&r);
        let eq = parse_condition(Some("#v = :cv"), &cx).unwrap().unwrap();
        assert!(eq.holds(&Some(vec![1])));
        assert!(!eq.holds(&Some(vec![1, 2])) && !eq.holds(&None));
        let absent = parse_condition(Some("attribute_not_exists(#v)"), &cx)
            .unwrap()
            .unwrap();
        assert!(absent.holds(&None) && !absent.holds(&Some(vec![])));
        let present = parse_condition(Some("attribute_exists(val)"), &cx)
            .unwrap()
            .unwrap();
        assert!(present.holds(&Some(vec![])));
        assert_eq!(parse_condition(None, &cx), Ok(None));
        assert!(parse_condition(Some("#v <> :cv"), &cx).is_err());
    }

    #[test]
    fn keys_values_and_items_round_trip() {
        assert_eq!(
            hash_key(&json!({"pk": {"S": "a/1"}})),
            Ok(("pk".into(), "a/1".into()))
        );
        assert!(hash_key(&json!({"pk": {"N": "1"}})).is_err());
        assert!(hash_key(&json!({"pk": {"S": "a"}, "sk": {"S": "b"}})).is_err());
        assert_eq!(numbers(&list_json(&[3, -4])), Ok(vec![3, -4]));
        assert!(numbers(&json!({"L": [{"S": "x"}]})).is_err());
        assert_eq!(item_json("pk", "k", None), json!({"pk": {"S": "k"}}));
        assert_eq!(
            item_json("pk", "k", Some(&[2])),
            json!({"pk": {"S": "k"}, "val": {"L": [{"N": "2"}]}})
        );
    }

    #[test]
    fn an_item_is_stored_under_its_hash_key_first() {
        assert_eq!(item_key("t", "c/la/1"), b"c/la/1\x00t".to_vec());
        assert!(
            item_key("t", "c") < item_key("t", "c0"),
            "items keep their keys' order"
        );
        assert!(table_key("t") < item_key("t", "a"));
    }
}

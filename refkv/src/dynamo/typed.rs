//! Items of any attribute type: how refkv keeps an item whose attributes are not one list
//! of numbers (a `PutItem` of strings, numbers, binary, booleans, nulls, sets, lists, maps),
//! and how it checks that each attribute value is a well-formed DynamoDB value. Pure.
//!
//! refkv's transactional store holds a list of `i64` per key. A list item (`val`, a list of
//! integer numbers, what `UpdateItem`'s `list_append` extends) is stored as that list; any
//! other item is stored *packed*: [`PACKED`], the byte length, then the JSON text of its
//! non-key attributes (as the client sent them: DynamoDB's wire form) eight bytes per
//! `i64`. A table's record packs its hash key's name the same way after a leading `1`.
//!
//! Invariants: [`PACKED`] never starts a list item (`model::numbers` refuses it as a
//! number), so the two forms cannot be confused; [`unpack`] answers `None` for anything
//! [`pack`] did not produce whole (e.g. a packed item that a `list_append` extended), and
//! the caller reports it rather than guessing.

use serde_json::{Map, Value};

/// The first element of a packed item (refused as a list number).
pub const PACKED: i64 = i64::MIN;

/// `bytes` as [`PACKED`], their length, then eight bytes per element (the last padded).
pub fn pack(bytes: &[u8]) -> Vec<i64> {
    let mut out = vec![PACKED, bytes.len() as i64];
    out.extend(bytes.chunks(8).map(|c| {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        i64::from_be_bytes(b)
    }));
    out
}

/// The bytes [`pack`] packed into `list`, if `list` is exactly such a packing.
pub fn unpack(list: &[i64]) -> Option<Vec<u8>> {
    let (&[PACKED, len], rest) = list.split_at_checked(2)? else {
        return None;
    };
    let len = usize::try_from(len).ok()?;
    if rest.len() != len.div_ceil(8) {
        return None;
    }
    let mut bytes: Vec<u8> = rest.iter().flat_map(|v| v.to_be_bytes()).collect();
    if bytes[len..].iter().any(|b| *b != 0) {
        return None;
    }
    bytes.truncate(len);
    Some(bytes)
}

/// Non-key attributes, packed.
pub fn pack_attributes(attrs: &Map<String, Value>) -> Vec<i64> {
    pack(Value::Object(attrs.clone()).to_string().as_bytes())
}

/// The non-key attributes of a packed item.
pub fn unpack_attributes(list: &[i64]) -> Option<Map<String, Value>> {
    match serde_json::from_slice(&unpack(list)?).ok()? {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// A DynamoDB number's text: `[+-]digits[.digits][e[+-]digits]`.
fn is_number(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |p: &str| p.bytes().all(|c| c.is_ascii_digit());
    let exp_ok = exp.is_none_or(|e| {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    !(int.is_empty() && frac.is_empty()) && digits(int) && digits(frac) && exp_ok
}

/// A non-empty array of strings, each passing `ok`, none twice (a set's members).
fn set_of(v: &Value, ok: impl Fn(&str) -> bool) -> Result<(), String> {
    let Some(items) = v.as_array().filter(|a| !a.is_empty()) else {
        return Err(format!("{v} is not a non-empty set"));
    };
    let mut seen = std::collections::HashSet::new();
    for i in items {
        match i.as_str() {
            Some(s) if ok(s) && seen.insert(s) => {}
            _ => return Err(format!("set member {i} is invalid or repeated")),
        }
    }
    Ok(())
}

/// Checks that `v` is one DynamoDB attribute value (`{"S": …}`, `{"NS": […]}`, …),
/// recursively for lists and maps.
pub fn check_value(v: &Value) -> Result<(), String> {
    let Some((kind, body)) = v
        .as_object()
        .filter(|m| m.len() == 1)
        .and_then(|m| m.iter().next())
    else {
        return Err(format!("{v} is not an attribute value"));
    };
    let ok = match kind.as_str() {
        "S" | "B" => body.is_string(),
        "N" => body.as_str().is_some_and(is_number),
        "BOOL" => body.is_boolean(),
        "NULL" => body.as_bool() == Some(true),
        "SS" | "BS" => return set_of(body, |_| true),
        "NS" => return set_of(body, is_number),
        "L" => {
            let Some(items) = body.as_array() else {
                return Err(format!("{v}: L is not an array"));
            };
            return items.iter().try_for_each(check_value);
        }
        "M" => {
            let Some(m) = body.as_object() else {
                return Err(format!("{v}: M is not a map"));
            };
            return m.values().try_for_each(check_value);
        }
        other => return Err(format!("unknown attribute type {other}")),
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{v} is not a valid {kind}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn packing_round_trips_any_length() {
        for len in [0usize, 1, 7, 8, 9, 16, 100] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8 + 1).collect();
            let packed = pack(&bytes);
            assert_eq!(packed.len(), 2 + len.div_ceil(8));
            assert_eq!(unpack(&packed), Some(bytes), "{len}");
        }
    }

    #[test]
    fn a_packing_extended_or_cut_or_a_plain_list_does_not_unpack() {
        let mut packed = pack(b"{\"val\":{\"S\":\"v-1\"}}");
        assert!(unpack(&[1, 2, 3]).is_none());
        assert!(unpack(&packed[..packed.len() - 1]).is_none());
        packed.push(5);
        assert!(
            unpack(&packed).is_none(),
            "a list_append onto a packed item"
        );
        let mut padded = pack(b"abc");
        padded[2] |= 1;
        assert!(unpack(&padded).is_none(), "padding must be zero");
    }

    #[test]
    fn attributes_of_every_type_round_trip_as_sent() {
        let attrs = json!({
            "s": {"S": "v-1"}, "n": {"N": "1.0"}, "b": {"B": "di0x"}, "t": {"BOOL": true},
            "z": {"NULL": true}, "ss": {"SS": ["w-1", "v-1"]}, "ns": {"NS": ["1001", "1"]},
            "bs": {"BS": ["di0x", "dy0x"]}, "l": {"L": [{"N": "1"}, {"S": "x"}]},
            "m": {"M": {"a": {"N": "1"}, "b": {"M": {}}}}
        });
        let map = attrs.as_object().unwrap();
        for v in map.values() {
            assert_eq!(check_value(v), Ok(()), "{v}");
        }
        assert_eq!(unpack_attributes(&pack_attributes(map)).as_ref(), Some(map));
    }

    #[test]
    fn malformed_attribute_values_are_refused() {
        for bad in [
            json!({"S": 1}),
            json!({"N": "1x"}),
            json!({"N": "1e"}),
            json!({"NULL": false}),
            json!({"SS": []}),
            json!({"SS": ["a", "a"]}),
            json!({"NS": ["1", "y"]}),
            json!({"L": [{"Q": "1"}]}),
            json!({"M": {"a": {"N": "x"}}}),
            json!({"S": "a", "N": "1"}),
            json!("v-1"),
        ] {
            assert!(check_value(&bad).is_err(), "{bad}");
        }
    }
}

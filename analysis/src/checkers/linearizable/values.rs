//! Interning of JSON values to dense `u32` ids, one table per key, so that the search
//! compares integers instead of `serde_json::Value`s.
//!
//! Two values get the same id exactly when they are equal JSON (integers by value, strings
//! by content, anything else by its canonical serialisation). Id 0 is always `null`,
//! which the register models read as "absent".

use rustc_hash::FxHashMap;
use serde_json::Value;

/// Dense ids for the distinct values of one key.
#[derive(Debug, Default)]
pub struct ValueTable {
    ints: FxHashMap<i64, u32>,
    strings: FxHashMap<Box<str>, u32>,
    /// Everything else (bools, floats, big unsigned numbers, arrays, objects), keyed by
    /// its JSON text.
    others: FxHashMap<String, u32>,
    /// The value of each id, for witnesses and for models that need the content.
    values: Vec<Value>,
}

impl ValueTable {
    /// The id of `null`.
    pub const NULL: u32 = 0;

    pub fn new() -> Self {
        ValueTable {
            values: vec![Value::Null],
            ..Default::default()
        }
    }

    /// The id of `value`, allocating one if it is new. `None` only if there are more than
    /// `u32::MAX` distinct values.
    pub fn intern(&mut self, value: &Value) -> Option<u32> {
        let next = u32::try_from(self.values.len()).ok()?;
        let id = match value {
            Value::Null => return Some(Self::NULL),
            Value::Number(n) if n.is_i64() => *self.ints.entry(n.as_i64()?).or_insert(next),
            Value::String(s) => match self.strings.get(s.as_str()) {
                Some(id) => *id,
                None => {
                    self.strings.insert(s.as_str().into(), next);
                    next
                }
            },
            other => *self.others.entry(other.to_string()).or_insert(next),
        };
        if id == next {
            self.values.push(value.clone());
        }
        Some(id)
    }

    /// The id of a string value if it was interned.
    pub fn string_id(&self, s: &str) -> Option<u32> {
        self.strings.get(s).copied()
    }

    /// The value of an id, as JSON.
    pub fn json(&self, id: u32) -> Value {
        self.values.get(id as usize).cloned().unwrap_or(Value::Null)
    }

    /// The value of an id if it is a string.
    pub fn as_str(&self, id: u32) -> Option<&str> {
        self.values.get(id as usize).and_then(Value::as_str)
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_json_gets_equal_ids_and_types_stay_apart() {
        let mut t = ValueTable::new();
        let one = t.intern(&json!(1)).unwrap();
        let one_str = t.intern(&json!("1")).unwrap();
        let pair = t.intern(&json!([1, 2])).unwrap();
        assert_eq!(t.intern(&json!(null)), Some(ValueTable::NULL));
        assert_ne!(one, one_str);
        assert_eq!(t.intern(&json!(1)), Some(one));
        assert_eq!(t.intern(&json!("1")), Some(one_str));
        assert_eq!(t.intern(&json!([1, 2])), Some(pair));
        assert_eq!(t.json(pair), json!([1, 2]));
        assert_eq!(t.as_str(one_str), Some("1"));
        assert_eq!(t.len(), 4);
    }
}

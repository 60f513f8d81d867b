//! `--workload register` through DynamoDB (`--value-type`): a register write is one
//! `PutItem` of the write's number in the key's attribute type (`value_types`), a read one
//! `GetItem` with `ConsistentRead`, in the type's table (`pk` = the register's key).
//!
//! History (`docs/history-format.md`): writes record their number as every register write
//! does; a read records the number of the write whose attributes it returned (by DynamoDB's
//! equality), `null` for a missing item, and anything else as the string
//! `"unexpected DynamoDB item: <attributes as JSON>"`, a value no write wrote (so the
//! linearizability checker reports it, never maps it to a write).
//!
//! Outcomes: `PutItem` runs through the same retried item-write path as `UpdateItem` in
//! elastickv (`retryItemWriteWithGeneration`, `adapter/dynamodb_item_write.go` ~97–147), so
//! the rules of `classify` for writes apply unchanged; reads fail definitely.

use super::value_types::{self, Decoded, ValueType, ValueTypes};
use super::{classify_sdk, tables::TableDef};
use crate::client::classify::{CallError, CallKind, Certainty};
use crate::client::{CallResult, ReadReply, WriteReply};
use aws_sdk_dynamodb::types::AttributeValue;

/// The hash key attribute of every register table.
pub const HASH_KEY: &str = "pk";
/// How an unexpected read is recorded (followed by the attributes read, as JSON).
pub const UNEXPECTED_PREFIX: &str = "unexpected DynamoDB item: ";

/// The tables of a register run with these value types.
pub fn tables(types: ValueTypes) -> Vec<TableDef> {
    types
        .types()
        .into_iter()
        .map(|t| TableDef {
            name: t.table(),
            hash_key: HASH_KEY,
        })
        .collect()
}

fn not_sent(why: String) -> CallError {
    CallError::new(Certainty::Definite, "not-sent", why)
}

/// A register key as text.
fn key_text(key: &[u8]) -> CallResult<&str> {
    std::str::from_utf8(key)
        .map_err(|_| not_sent(format!("key {key:?} is not UTF-8 (a DynamoDB string key)")))
}

/// A register write's number (register values travel as decimal text).
fn write_number(value: &[u8]) -> CallResult<i64> {
    std::str::from_utf8(value)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            not_sent(format!(
                "value {:?} is not a register write's number",
                String::from_utf8_lossy(value)
            ))
        })
}

/// `PutItem` of write `value` under `key` in its type's table.
pub async fn put(
    sdk: &aws_sdk_dynamodb::Client,
    types: ValueTypes,
    key: &[u8],
    value: &[u8],
) -> CallResult<WriteReply> {
    let key = key_text(key)?;
    let n = write_number(value)?;
    let t = types.of_key(key);
    let mut item = value_types::attributes(t, n);
    item.insert(HASH_KEY.to_string(), AttributeValue::S(key.to_string()));
    sdk.put_item()
        .table_name(t.table())
        .set_item(Some(item))
        .send()
        .await
        .map_err(|e| classify_sdk(CallKind::Mutation, &e))?;
    Ok(WriteReply {
        applied: true,
        meta: None,
    })
}

/// `GetItem` with `ConsistentRead` of `key` in its type's table, decoded.
pub async fn get(
    sdk: &aws_sdk_dynamodb::Client,
    types: ValueTypes,
    key: &[u8],
) -> CallResult<ReadReply> {
    let key = key_text(key)?;
    let t = types.of_key(key);
    let out = sdk
        .get_item()
        .table_name(t.table())
        .key(HASH_KEY, AttributeValue::S(key.to_string()))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| classify_sdk(CallKind::Read, &e))?;
    Ok(ReadReply {
        value: out.item.map(|item| recorded(t, key, item)),
        meta: None,
    })
}

/// What a read of `item` records: the write's number as decimal text, or the
/// unexpected-item text (also when the hash key is not the key asked for).
fn recorded(
    t: ValueType,
    key: &str,
    mut item: std::collections::HashMap<String, AttributeValue>,
) -> Vec<u8> {
    let pk = item.remove(HASH_KEY);
    let decoded = match pk {
        Some(AttributeValue::S(k)) if k == key => value_types::decode(t, &item),
        other => {
            if let Some(v) = other {
                item.insert(HASH_KEY.to_string(), v);
            }
            Decoded::Unexpected(value_types::describe_item(&item))
        }
    };
    match decoded {
        Decoded::Written(n) => n.to_string().into_bytes(),
        Decoded::Unexpected(what) => format!("{UNEXPECTED_PREFIX}{what}").into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execute::decode_value;
    use serde_json::Value;

    fn with_key(
        t: ValueType,
        key: &str,
        n: i64,
    ) -> std::collections::HashMap<String, AttributeValue> {
        let mut item = value_types::attributes(t, n);
        item.insert(HASH_KEY.into(), AttributeValue::S(key.into()));
        item
    }

    #[test]
    fn a_read_of_a_write_records_its_number_as_the_history_reads_numbers() {
        for t in ValueType::ALL {
            let bytes = recorded(t, "reg/00001", with_key(t, "reg/00001", 42));
            assert_eq!(decode_value(&bytes), Value::from(42), "{t}");
        }
    }

    #[test]
    fn an_unexpected_item_is_recorded_as_text_no_write_wrote() {
        let mut item = with_key(ValueType::Ss, "reg/00005", 3);
        item.insert(
            "val".into(),
            AttributeValue::Ss(vec!["v-3".into(), "w-4".into()]),
        );
        let v = decode_value(&recorded(ValueType::Ss, "reg/00005", item));
        assert_eq!(
            v,
            Value::from(r#"unexpected DynamoDB item: {"val":{"SS":["v-3","w-4"]}}"#)
        );
        let other_key = recorded(
            ValueType::S,
            "reg/00001",
            with_key(ValueType::S, "reg/00002", 3),
        );
        assert!(
            decode_value(&other_key)
                .as_str()
                .is_some_and(|s| s.starts_with(UNEXPECTED_PREFIX)),
            "an item of another key is not this key's write"
        );
    }
    #[test]
    fn a_write_value_that_is_not_a_number_is_refused_unsent() {
        assert_eq!(write_number(b"17").ok(), Some(17));
        let e = write_number(b"x").unwrap_err();
        assert_eq!(e.certainty, Certainty::Definite);
        assert!(key_text(&[0xff]).is_err());
    }

    #[test]
    fn a_run_gets_one_table_per_value_type() {
        assert_eq!(tables(ValueTypes::All).len(), 10);
        let one = tables(ValueTypes::One(ValueType::Bs));
        assert_eq!(
            one,
            vec![TableDef {
                name: "jepsen_types_binary_set",
                hash_key: "pk"
            }]
        );
    }
}

//! List-append transactions over DynamoDB, the shape of elastickv's
//! `jepsen/src/elastickv/dynamodb_workload.clj`: an item of table `jepsen_append` per key
//! (`pk` S = the key, `val` a list of numbers); with `--tables N`, of the table
//! [`super::tables::table_of`] names (`dynamodb_multi_table_workload.clj`), so one
//! transaction's items may be in several tables.
//!
//! - one micro-op: an append is `UpdateItem SET #v = list_append(if_not_exists(#v, :empty),
//!   :val)`; a read is `GetItem` with `ConsistentRead`;
//! - two or more: `TransactGetItems` of every key the transaction touches, then — when it
//!   writes — one `TransactWriteItems` with an `Update` per written key (all its appends in
//!   one `list_append`) conditioned on the value read (`#v = :cv`, or
//!   `attribute_not_exists(#v)` for a key without a list), and a `ConditionCheck` of the
//!   same condition per key it only reads. The reads the transaction reports are the
//!   values `TransactGetItems` returned with the transaction's own earlier appends added,
//!   which the conditions make true at the commit.
//!
//! Register writes (`rw-register`) are not mapped: a transaction with one fails
//! definitely, unsent.
//!
//! Invariant: a write is sent only as one `UpdateItem` or one `TransactWriteItems`, so a
//! transaction is applied whole or not at all by a store that keeps DynamoDB's promises.

use super::classify_sdk;
use super::tables::{table_of, TableDef, APPEND_ATTR, APPEND_TABLE};
use super::DynamoClient;
use crate::client::classify::{CallError, CallKind, Certainty};
use crate::client::{CallResult, TxnClient};
use crate::txn::{writes, Mop};
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Get, TransactGetItem, TransactWriteItem, Update,
};
use futures::future::BoxFuture;
use serde_json::Value as Json;
use std::collections::{BTreeMap, HashMap};

/// The update expression of an append.
pub const APPEND_EXPRESSION: &str = "SET #v = list_append(if_not_exists(#v, :empty), :val)";
/// The condition of a key whose list was read as `:cv`.
pub const EQUALS_READ: &str = "#v = :cv";
/// The condition of a key read without a list.
pub const NO_LIST: &str = "attribute_not_exists(#v)";

/// A list of numbers as an attribute value.
pub fn list_value(values: &[i64]) -> AttributeValue {
    AttributeValue::L(
        values
            .iter()
            .map(|v| AttributeValue::N(v.to_string()))
            .collect(),
    )
}

/// The numbers of an item's list (`None`: no item, or an item without the list).
pub fn item_list(
    item: Option<&HashMap<String, AttributeValue>>,
) -> Result<Option<Vec<i64>>, String> {
    let Some(v) = item.and_then(|i| i.get(APPEND_ATTR)) else {
        return Ok(None);
    };
    let AttributeValue::L(elements) = v else {
        return Err(format!("{APPEND_ATTR} is not a list: {v:?}"));
    };
    elements
        .iter()
        .map(|e| match e {
            AttributeValue::N(n) => n
                .parse::<i64>()
                .map_err(|_| format!("list element {n:?} is not an integer")),
            other => Err(format!("list element {other:?} is not a number")),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn key_of(key: &str) -> HashMap<String, AttributeValue> {
    HashMap::from([(
        APPEND_TABLE.hash_key.to_string(),
        AttributeValue::S(key.into()),
    )])
}

/// Each key the transaction touches, in key order, with the values it appends there.
pub fn appends_by_key(mops: &[Mop]) -> BTreeMap<&str, Vec<i64>> {
    let mut keys: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for m in mops {
        let appended = keys.entry(m.key()).or_default();
        if let Mop::Append { value, .. } = m {
            appended.push(*value);
        }
    }
    keys
}

/// What each micro-op reports: a read sees the value read plus the transaction's own
/// earlier appends; a write reports `null`.
pub fn reported(mops: &[Mop], read: &BTreeMap<&str, Option<Vec<i64>>>) -> Vec<Json> {
    let mut current: BTreeMap<&str, Vec<i64>> = read
        .iter()
        .map(|(k, v)| (*k, v.clone().unwrap_or_default()))
        .collect();
    mops.iter()
        .map(|m| match m {
            Mop::Append { key, value } => {
                current.entry(key.as_str()).or_default().push(*value);
                Json::Null
            }
            Mop::Read { key, .. } => {
                Json::from(current.get(key.as_str()).cloned().unwrap_or_default())
            }
            Mop::Write { .. } => Json::Null,
        })
        .collect()
}

/// The condition on a key whose list was read as `read`, and its `:cv` value if any.
fn condition(read: &Option<Vec<i64>>) -> (&'static str, Option<AttributeValue>) {
    match read {
        Some(list) => (EQUALS_READ, Some(list_value(list))),
        None => (NO_LIST, None),
    }
}

/// The `TransactWriteItems` of a transaction that read `read` (every key it touches), each
/// key's item in its table among `tables`.
pub fn write_items(
    tables: &[TableDef],
    appends: &BTreeMap<&str, Vec<i64>>,
    read: &BTreeMap<&str, Option<Vec<i64>>>,
) -> Result<Vec<TransactWriteItem>, String> {
    let mut items = Vec::with_capacity(appends.len());
    for (key, values) in appends {
        let (cond, cv) = condition(read.get(key).unwrap_or(&None));
        let item = if values.is_empty() {
            let check = ConditionCheck::builder()
                .table_name(table_of(tables, key).name)
                .set_key(Some(key_of(key)))
                .condition_expression(cond)
                .expression_attribute_names("#v", APPEND_ATTR)
                .set_expression_attribute_values(cv.map(|v| HashMap::from([(":cv".into(), v)])))
                .build()
                .map_err(|e| e.to_string())?;
            TransactWriteItem::builder().condition_check(check).build()
        } else {
            let mut values_map = HashMap::from([
                (":empty".to_string(), list_value(&[])),
                (":val".to_string(), list_value(values)),
            ]);
            if let Some(v) = cv {
                values_map.insert(":cv".into(), v);
            }
            let update = Update::builder()
                .table_name(table_of(tables, key).name)
                .set_key(Some(key_of(key)))
                .update_expression(APPEND_EXPRESSION)
                .condition_expression(cond)
                .expression_attribute_names("#v", APPEND_ATTR)
                .set_expression_attribute_values(Some(values_map))
                .build()
                .map_err(|e| e.to_string())?;
            TransactWriteItem::builder().update(update).build()
        };
        items.push(item);
    }
    Ok(items)
}

fn kind_of(mops: &[Mop]) -> CallKind {
    if writes(mops) {
        CallKind::Mutation
    } else {
        CallKind::Read
    }
}

fn not_built(why: String) -> CallError {
    CallError::new(Certainty::Definite, "not-sent", why)
}

impl DynamoClient {
    /// The name of `key`'s table.
    fn table(&self, key: &str) -> &'static str {
        table_of(self.tables.tables(), key).name
    }

    async fn run_txn(&self, mops: &[Mop]) -> CallResult<Vec<Json>> {
        if mops.iter().any(|m| matches!(m, Mop::Write { .. })) {
            return Err(CallError::new(
                Certainty::Definite,
                "unimplemented",
                "register writes are not mapped to DynamoDB (list-append only)",
            ));
        }
        match mops {
            [Mop::Append { key, value }] => {
                self.append(key, *value).await.map(|()| vec![Json::Null])
            }
            [Mop::Read { key, .. }] => {
                let list = self.get(key).await?;
                Ok(vec![Json::from(list.unwrap_or_default())])
            }
            _ => self.multi(mops).await,
        }
    }

    async fn append(&self, key: &str, value: i64) -> CallResult<()> {
        let sdk = self.ready().await?;
        sdk.update_item()
            .table_name(self.table(key))
            .set_key(Some(key_of(key)))
            .update_expression(APPEND_EXPRESSION)
            .expression_attribute_names("#v", APPEND_ATTR)
            .expression_attribute_values(":empty", list_value(&[]))
            .expression_attribute_values(":val", list_value(&[value]))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| classify_sdk(CallKind::Mutation, &e))
    }

    async fn get(&self, key: &str) -> CallResult<Option<Vec<i64>>> {
        let sdk = self.ready().await?;
        let out = sdk
            .get_item()
            .table_name(self.table(key))
            .set_key(Some(key_of(key)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| classify_sdk(CallKind::Read, &e))?;
        item_list(out.item()).map_err(|e| CallError::bad_response(CallKind::Read, e))
    }

    /// `TransactGetItems` of `keys`: each key's list, in order.
    async fn transact_get(&self, keys: &[&str]) -> CallResult<Vec<Option<Vec<i64>>>> {
        let sdk = self.ready().await?;
        let mut gets = Vec::with_capacity(keys.len());
        for k in keys {
            let get = Get::builder()
                .table_name(self.table(k))
                .set_key(Some(key_of(k)))
                .build()
                .map_err(|e| not_built(e.to_string()))?;
            gets.push(TransactGetItem::builder().get(get).build());
        }
        let out = sdk
            .transact_get_items()
            .set_transact_items(Some(gets))
            .send()
            .await
            .map_err(|e| classify_sdk(CallKind::Read, &e))?;
        let responses = out.responses();
        if responses.len() != keys.len() {
            return Err(CallError::bad_response(
                CallKind::Read,
                format!(
                    "TransactGetItems of {} keys answered {}",
                    keys.len(),
                    responses.len()
                ),
            ));
        }
        responses
            .iter()
            .map(|r| item_list(r.item()).map_err(|e| CallError::bad_response(CallKind::Read, e)))
            .collect()
    }

    async fn multi(&self, mops: &[Mop]) -> CallResult<Vec<Json>> {
        let appends = appends_by_key(mops);
        let keys: Vec<&str> = appends.keys().copied().collect();
        let lists = self.transact_get(&keys).await?;
        let read: BTreeMap<&str, Option<Vec<i64>>> = keys.iter().copied().zip(lists).collect();
        let answer = reported(mops, &read);
        if kind_of(mops) == CallKind::Read {
            return Ok(answer);
        }
        let items = write_items(self.tables.tables(), &appends, &read).map_err(not_built)?;
        self.ready()
            .await?
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await
            .map_err(|e| classify_sdk(CallKind::Mutation, &e))?;
        Ok(answer)
    }
}

impl TxnClient for DynamoClient {
    fn transact<'a>(&'a self, mops: &'a [Mop]) -> BoxFuture<'a, CallResult<Vec<Json>>> {
        Box::pin(self.run_txn(mops))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txn::ReadShape;
    use serde_json::json;

    fn read(key: &str) -> Mop {
        Mop::Read {
            key: key.into(),
            shape: ReadShape::List,
        }
    }

    fn append(key: &str, value: i64) -> Mop {
        Mop::Append {
            key: key.into(),
            value,
        }
    }

    #[test]
    fn appends_are_grouped_per_key_and_read_keys_kept() {
        let mops = [append("b", 1), read("a"), append("b", 2)];
        let by_key = appends_by_key(&mops);
        assert_eq!(by_key, BTreeMap::from([("a", vec![]), ("b", vec![1, 2])]));
    }

    #[test]
    fn reads_see_what_was_read_plus_the_transactions_own_earlier_appends() {
        let mops = [read("a"), append("a", 3), read("a"), read("b")];
        let snapshot = BTreeMap::from([("a", Some(vec![1, 2])), ("b", None)]);
        assert_eq!(
            reported(&mops, &snapshot),
            vec![json!([1, 2]), Json::Null, json!([1, 2, 3]), json!([])]
        );
    }

    #[test]
    fn written_keys_get_a_conditional_update_and_read_keys_a_condition_check() {
        let mops = [append("a", 5), append("a", 6), read("b")];
        let appends = appends_by_key(&mops);
        let snapshot = BTreeMap::from([("a", None), ("b", Some(vec![9]))]);
        let items = write_items(&[APPEND_TABLE], &appends, &snapshot).unwrap();
        assert_eq!(items.len(), 2);
        let update = items[0].update().expect("a is written");
        assert_eq!(update.update_expression(), APPEND_EXPRESSION);
        assert_eq!(update.condition_expression(), Some(NO_LIST));
        assert_eq!(
            update.expression_attribute_values().unwrap()[":val"],
            list_value(&[5, 6])
        );
        assert!(!update
            .expression_attribute_values()
            .unwrap()
            .contains_key(":cv"));
        let check = items[1].condition_check().expect("b is only read");
        assert_eq!(check.condition_expression(), EQUALS_READ);
        assert_eq!(
            check.expression_attribute_values().unwrap()[":cv"],
            list_value(&[9])
        );
        assert_eq!(
            check.key()[APPEND_TABLE.hash_key],
            AttributeValue::S("b".into())
        );
    }

    #[test]
    fn an_items_list_is_read_back_and_a_foreign_shape_refused() {
        let item = HashMap::from([(APPEND_ATTR.to_string(), list_value(&[4, -2]))]);
        assert_eq!(item_list(Some(&item)), Ok(Some(vec![4, -2])));
        assert_eq!(item_list(None), Ok(None));
        assert_eq!(item_list(Some(&HashMap::new())), Ok(None));
        let scalar = HashMap::from([(APPEND_ATTR.to_string(), AttributeValue::N("1".into()))]);
        assert!(item_list(Some(&scalar)).is_err());
        let text = HashMap::from([(
            APPEND_ATTR.to_string(),
            AttributeValue::L(vec![AttributeValue::S("x".into())]),
        )]);
        assert!(item_list(Some(&text)).is_err());
    }

    #[test]
    fn each_keys_item_is_written_in_its_own_table() {
        let tables = super::super::tables::append_tables(4);
        let mops = [
            append("a/la/000001", 1),
            read("b/la/000002"),
            append("c/la/000004", 2),
        ];
        let appends = appends_by_key(&mops);
        let snapshot = BTreeMap::new();
        let items = write_items(&tables, &appends, &snapshot).unwrap();
        let names: Vec<&str> = items
            .iter()
            .map(|i| match (i.update(), i.condition_check()) {
                (Some(u), _) => u.table_name(),
                (_, Some(c)) => c.table_name(),
                _ => "",
            })
            .collect();
        assert_eq!(
            names,
            ["jepsen_append_t2", "jepsen_append_t3", "jepsen_append_t1"]
        );
    }
}

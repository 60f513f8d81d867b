//! The DynamoDB operations refkv serves, each one refkv transaction (`txn.rs`):
//!
//! | operation            | transaction                                                    |
//! |----------------------|----------------------------------------------------------------|
//! | `CreateTable`        | read the table's key, write it if absent (else `ResourceInUse`) |
//! | `DescribeTable`      | read-only: the table's key                                     |
//! | `GetItem`            | read-only: the item (every read is consistent)                 |
//! | `TransactGetItems`   | read-only: every item at one snapshot                          |
//! | `PutItem`            | replace the item: its list, or its attributes packed (`typed`) |
//! | `UpdateItem`         | append to the item's list (the `list_append` expression)       |
//! | `TransactWriteItems` | read every conditioned item, append every update's values, commit only if every condition holds on the snapshot |
//!
//! A table must exist before its items are touched (checked by a read-only transaction,
//! then remembered: tables are never deleted). Outcomes: [`Refused`] says which DynamoDB
//! error a failed operation answers; an operation that may have committed answers
//! `InternalServerError` (refkv's "outcome unknown").
//!
//! Invariant: every write is one transaction, so it applies whole or not at all, and a
//! conditioned write commits only while its conditions hold (the snapshot's read locks).

use super::model::{self, Condition, Context, Invalid};
use super::typed;
use crate::node::NodeCore;
use crate::txn::{Mop, Snapshot, TxnError};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// Why an operation did not succeed, as a DynamoDB error type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    Validation(String),
    ResourceNotFound(String),
    ResourceInUse(String),
    /// A condition of `TransactWriteItems` failed, or it conflicted: nothing written.
    TransactionCanceled {
        reason: &'static str,
        message: String,
    },
    ConditionalCheckFailed(String),
    /// A single-item write conflicted with a transaction: nothing written.
    TransactionConflict(String),
    /// Not started: nothing written.
    Unavailable(String),
    /// May or may not have committed.
    Internal(String),
}

impl From<Invalid> for Refused {
    fn from(e: Invalid) -> Refused {
        Refused::Validation(e.0)
    }
}

/// A failed transaction of a write that has no condition of its own.
fn write_refusal(e: TxnError) -> Refused {
    match e {
        TxnError::Invalid(m) => Refused::Validation(m),
        TxnError::NotStarted(m) => Refused::Unavailable(m),
        TxnError::Aborted(m) => Refused::TransactionConflict(m),
        TxnError::ConditionFailed(m) => Refused::ConditionalCheckFailed(m),
        TxnError::Unknown(m) => Refused::Internal(m),
    }
}

/// A failed `TransactWriteItems`.
fn transact_refusal(e: TxnError) -> Refused {
    match e {
        TxnError::Aborted(message) => Refused::TransactionCanceled {
            reason: "TransactionConflict",
            message,
        },
        TxnError::ConditionFailed(message) => Refused::TransactionCanceled {
            reason: "ConditionalCheckFailed",
            message,
        },
        other => write_refusal(other),
    }
}

/// A failed read-only transaction (never committed anything).
fn read_refusal(e: TxnError) -> Refused {
    match e {
        TxnError::Invalid(m) => Refused::Validation(m),
        other => Refused::Unavailable(other.to_string()),
    }
}

/// One node's DynamoDB API.
pub struct Dynamo {
    pub node: Arc<NodeCore>,
    /// Tables known to exist, with their hash key's name.
    tables: Mutex<HashMap<String, String>>,
}

type Reply = Result<Value, Refused>;

impl Dynamo {
    pub fn new(node: Arc<NodeCore>) -> Dynamo {
        Dynamo {
            node,
            tables: Mutex::new(HashMap::new()),
        }
    }

    /// Runs the operation `name` (`X-Amz-Target` without its prefix) on `req`.
    pub async fn call(&self, name: &str, req: &Value) -> Reply {
        match name {
            "CreateTable" => self.create_table(req).await,
            "DescribeTable" => self.describe_table(req).await,
            "GetItem" => self.get_item(req).await,
            "TransactGetItems" => self.transact_get_items(req).await,
            "PutItem" => self.put_item(req).await,
            "UpdateItem" => self.update_item(req).await,
            "TransactWriteItems" => self.transact_write_items(req).await,
            other => Err(Refused::Validation(format!(
                "unsupported operation {other}"
            ))),
        }
    }

    async fn read_lists(&self, keys: Vec<Vec<u8>>) -> Result<Vec<Option<Vec<i64>>>, Refused> {
        let mops: Vec<Mop> = keys.into_iter().map(|key| Mop::Read { key }).collect();
        Ok(self
            .node
            .transact(&mops)
            .await
            .map_err(read_refusal)?
            .results)
    }

    /// The table's hash key name, if the table exists.
    async fn table_key_name(&self, table: &str) -> Result<Option<String>, Refused> {
        if let Some(name) = self
            .tables
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(table)
        {
            return Ok(Some(name.clone()));
        }
        let record = self
            .read_lists(vec![model::table_key(table)])
            .await?
            .remove(0);
        let Some(record) = record else {
            return Ok(None);
        };
        let name = record
            .get(1..)
            .and_then(typed::unpack)
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| Refused::Internal(format!("table {table}: unreadable record")))?;
        self.tables
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(table.to_string(), name.clone());
        Ok(Some(name))
    }

    /// The table's hash key name; `ResourceNotFound` if it does not exist.
    async fn require_table(&self, table: &str) -> Result<String, Refused> {
        self.table_key_name(table)
            .await?
            .ok_or_else(|| Refused::ResourceNotFound(format!("table {table} not found")))
    }

    async fn create_table(&self, req: &Value) -> Reply {
        let table = model::field(req, "TableName")?;
        let schema = req
            .get("KeySchema")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let key_name = match schema.as_slice() {
            [k] if k.get("KeyType").and_then(Value::as_str) == Some("HASH") => {
                model::field(k, "AttributeName")?
            }
            _ => {
                return Err(Refused::Validation(
                    "only a table with one HASH key is served".into(),
                ))
            }
        };
        let key = model::table_key(table);
        let mut mops = vec![
            Mop::Read { key: key.clone() },
            Mop::Write {
                key: key.clone(),
                value: 1,
            },
        ];
        mops.extend(
            typed::pack(key_name.as_bytes())
                .into_iter()
                .map(|value| Mop::Append {
                    key: key.clone(),
                    value,
                }),
        );
        let absent = |snapshot: &Snapshot| match snapshot.values().next() {
            Some(None) => Ok(()),
            _ => Err("the table exists".to_string()),
        };
        match self.node.transact_if(&mops, &absent).await {
            Ok(_) => Ok(json!({ "TableDescription": description(table, req) })),
            Err(TxnError::ConditionFailed(_)) => {
                Err(Refused::ResourceInUse(format!("table {table} exists")))
            }
            Err(e) => Err(write_refusal(e)),
        }
    }

    async fn describe_table(&self, req: &Value) -> Reply {
        let table = model::field(req, "TableName")?;
        self.require_table(table).await?;
        Ok(json!({ "Table": description(table, req) }))
    }

    async fn get_item(&self, req: &Value) -> Reply {
        let table = model::field(req, "TableName")?;
        let (key_name, pk) = model::hash_key(req.get("Key").unwrap_or(&Value::Null))?;
        self.require_table(table).await?;
        let list = self
            .read_lists(vec![model::item_key(table, &pk)])
            .await?
            .remove(0);
        item_reply(&key_name, &pk, list)
    }

    async fn transact_get_items(&self, req: &Value) -> Reply {
        let items = req
            .get("TransactItems")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut keys = Vec::with_capacity(items.len());
        for item in &items {
            let get = item
                .get("Get")
                .ok_or_else(|| Invalid("a TransactGetItem without Get".into()))?;
            let table = model::field(get, "TableName")?;
            let (name, pk) = model::hash_key(get.get("Key").unwrap_or(&Value::Null))?;
            self.require_table(table).await?;
            keys.push((table.to_string(), name, pk));
        }
        let lists = self
            .read_lists(
                keys.iter()
                    .map(|(t, _, pk)| model::item_key(t, pk))
                    .collect(),
            )
            .await?;
        let responses = keys
            .iter()
            .zip(lists)
            .map(|((_, name, pk), list)| item_reply(name, pk, list))
            .collect::<Result<Vec<Value>, Refused>>()?;
        Ok(json!({ "Responses": responses }))
    }

    async fn put_item(&self, req: &Value) -> Reply {
        let table = model::field(req, "TableName")?;
        if req.get("ConditionExpression").is_some() {
            return Err(Refused::Validation(
                "PutItem with a condition is not served".into(),
            ));
        }
        let mut item = req
            .get("Item")
            .and_then(Value::as_object)
            .cloned()
            .ok_or_else(|| Invalid("missing Item".into()))?;
        let key_name = self.require_table(table).await?;
        let key = item.remove(&key_name).unwrap_or(Value::Null);
        let pk = match key
            .as_object()
            .filter(|k| k.len() == 1)
            .and_then(|k| k.get("S"))
        {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => {
                return Err(Refused::Validation(format!(
                    "key attribute {key_name} is not a non-empty string: {key}"
                )))
            }
        };
        for (name, v) in &item {
            typed::check_value(v).map_err(|e| Invalid(format!("attribute {name}: {e}")))?;
        }
        let stored = match item.get(model::LIST_ATTR).map(model::numbers) {
            Some(Ok(list)) if item.len() == 1 && !list.is_empty() => list,
            _ => typed::pack_attributes(&item),
        };
        let key = model::item_key(table, &pk);
        let mops: Vec<Mop> = stored
            .iter()
            .enumerate()
            .map(|(i, value)| {
                let (key, value) = (key.clone(), *value);
                if i == 0 {
                    Mop::Write { key, value }
                } else {
                    Mop::Append { key, value }
                }
            })
            .collect();
        self.node.transact(&mops).await.map_err(write_refusal)?;
        Ok(json!({}))
    }

    async fn update_item(&self, req: &Value) -> Reply {
        let table = model::field(req, "TableName")?;
        let (_, pk) = model::hash_key(req.get("Key").unwrap_or(&Value::Null))?;
        let cx = Context::of(req);
        let values = model::parse_append(model::field(req, "UpdateExpression")?, &cx)?;
        let condition =
            model::parse_condition(req.get("ConditionExpression").and_then(Value::as_str), &cx)?;
        self.require_table(table).await?;
        let key = model::item_key(table, &pk);
        let planned = Planned {
            key,
            values,
            condition,
        };
        let (mops, conditions) = plan(std::slice::from_ref(&planned));
        if mops.is_empty() {
            return Ok(json!({}));
        }
        self.node
            .transact_if(&mops, &check(&conditions))
            .await
            .map_err(write_refusal)?;
        Ok(json!({}))
    }

    async fn transact_write_items(&self, req: &Value) -> Reply {
        let items = req
            .get("TransactItems")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if items.is_empty() {
            return Err(Refused::Validation("TransactItems is empty".into()));
        }
        let mut planned = Vec::with_capacity(items.len());
        for item in &items {
            let p = planned_item(item)?;
            if planned
                .iter()
                .any(|q: &(String, Planned)| q.1.key == p.1.key)
            {
                return Err(Refused::Validation(
                    "Transaction request cannot include multiple operations on one item".into(),
                ));
            }
            planned.push(p);
        }
        for (table, _) in &planned {
            self.require_table(table).await?;
        }
        let planned: Vec<Planned> = planned.into_iter().map(|(_, p)| p).collect();
        let (mops, conditions) = plan(&planned);
        self.node
            .transact_if(&mops, &check(&conditions))
            .await
            .map_err(transact_refusal)?;
        Ok(json!({}))
    }
}

/// A `GetItem`-shaped reply for what a key holds: nothing, a list item, or a packed item.
fn item_reply(key_name: &str, pk: &str, stored: Option<Vec<i64>>) -> Reply {
    let Some(list) = stored else {
        return Ok(json!({}));
    };
    if list.first() != Some(&typed::PACKED) {
        return Ok(json!({ "Item": model::item_json(key_name, pk, Some(&list)) }));
    }
    let mut attrs = typed::unpack_attributes(&list).ok_or_else(|| {
        Refused::Internal(format!(
            "item {pk}: a non-list value was extended by list_append; refkv cannot read it"
        ))
    })?;
    attrs.insert(key_name.to_string(), json!({ "S": pk }));
    Ok(json!({ "Item": attrs }))
}

/// One item of a write: its key, the values appended, its condition.
struct Planned {
    key: Vec<u8>,
    values: Vec<i64>,
    condition: Option<Condition>,
}

/// A `TransactWriteItems` entry (`Update` or `ConditionCheck`) with its table.
fn planned_item(item: &Value) -> Result<(String, Planned), Refused> {
    let (kind, body) = ["Update", "ConditionCheck"]
        .iter()
        .find_map(|k| item.get(*k).map(|b| (*k, b)))
        .ok_or_else(|| Invalid("only Update and ConditionCheck entries are served".into()))?;
    let table = model::field(body, "TableName")?;
    let (_, pk) = model::hash_key(body.get("Key").unwrap_or(&Value::Null))?;
    let cx = Context::of(body);
    let condition =
        model::parse_condition(body.get("ConditionExpression").and_then(Value::as_str), &cx)?;
    let values = match kind {
        "Update" => model::parse_append(model::field(body, "UpdateExpression")?, &cx)?,
        _ if condition.is_none() => {
            return Err(Refused::Validation(
                "a ConditionCheck needs a ConditionExpression".into(),
            ))
        }
        _ => Vec::new(),
    };
    Ok((
        table.to_string(),
        Planned {
            key: model::item_key(table, &pk),
            values,
            condition,
        },
    ))
}

/// The micro-ops of a write (a read of every conditioned key, then the appends) and the
/// conditions by key.
fn plan(items: &[Planned]) -> (Vec<Mop>, BTreeMap<Vec<u8>, Condition>) {
    let mut mops = Vec::new();
    let mut conditions = BTreeMap::new();
    for p in items {
        if let Some(c) = &p.condition {
            mops.push(Mop::Read { key: p.key.clone() });
            conditions.insert(p.key.clone(), c.clone());
        }
        mops.extend(p.values.iter().map(|v| Mop::Append {
            key: p.key.clone(),
            value: *v,
        }));
    }
    (mops, conditions)
}

/// The guard that holds when every condition holds on the snapshot.
fn check(
    conditions: &BTreeMap<Vec<u8>, Condition>,
) -> impl Fn(&Snapshot) -> Result<(), String> + Send + Sync + '_ {
    move |snapshot| {
        for (key, c) in conditions {
            let list = snapshot.get(key).cloned().flatten();
            if !c.holds(&list) {
                return Err(format!(
                    "condition {c:?} failed on {}",
                    String::from_utf8_lossy(key)
                ));
            }
        }
        Ok(())
    }
}

/// A table's description: active at once (tables are created synchronously).
fn description(table: &str, req: &Value) -> Value {
    let mut d = json!({ "TableName": table, "TableStatus": "ACTIVE" });
    for field in ["KeySchema", "AttributeDefinitions"] {
        if let Some(v) = req.get(field) {
            d[field] = v.clone();
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conditioned_write_reads_its_key_first_and_the_guard_checks_it() {
        let items = [
            Planned {
                key: b"a".to_vec(),
                values: vec![1, 2],
                condition: Some(Condition::NotExists),
            },
            Planned {
                key: b"b".to_vec(),
                values: vec![],
                condition: Some(Condition::Equals(vec![5])),
            },
            Planned {
                key: b"c".to_vec(),
                values: vec![3],
                condition: None,
            },
        ];
        let (mops, conditions) = plan(&items);
        assert_eq!(
            mops,
            vec![
                Mop::Read { key: b"a".to_vec() },
                Mop::Append {
                    key: b"a".to_vec(),
                    value: 1
                },
                Mop::Append {
                    key: b"a".to_vec(),
                    value: 2
                },
                Mop::Read { key: b"b".to_vec() },
                Mop::Append {
                    key: b"c".to_vec(),
                    value: 3
                },
            ]
        );
        let guard = check(&conditions);
        let snapshot = |a: Option<Vec<i64>>, b: Option<Vec<i64>>| {
            BTreeMap::from([(b"a".to_vec(), a), (b"b".to_vec(), b)])
        };
        assert!(guard(&snapshot(None, Some(vec![5]))).is_ok());
        assert!(guard(&snapshot(Some(vec![]), Some(vec![5]))).is_err());
        assert!(guard(&snapshot(None, Some(vec![5, 6]))).is_err());
    }

    #[test]
    fn only_an_unknown_outcome_answers_an_internal_error() {
        assert_eq!(
            write_refusal(TxnError::Unknown("x".into())),
            Refused::Internal("x".into())
        );
        assert_eq!(
            write_refusal(TxnError::Aborted("x".into())),
            Refused::TransactionConflict("x".into())
        );
        assert_eq!(
            transact_refusal(TxnError::ConditionFailed("x".into())),
            Refused::TransactionCanceled {
                reason: "ConditionalCheckFailed",
                message: "x".into()
            }
        );
        assert_eq!(
            write_refusal(TxnError::NotStarted("x".into())),
            Refused::Unavailable("x".into())
        );
        assert_eq!(
            read_refusal(TxnError::Unknown("x".into())),
            Refused::Unavailable("outcome unknown: x".into())
        );
    }

    #[test]
    fn a_stored_item_is_answered_as_a_list_or_as_the_attributes_it_was_put_with() {
        assert_eq!(item_reply("pk", "k", None), Ok(json!({})));
        assert_eq!(
            item_reply("pk", "k", Some(vec![4, 5])),
            Ok(json!({"Item": {"pk": {"S": "k"}, "val": {"L": [{"N": "4"}, {"N": "5"}]}}}))
        );
        let attrs = json!({"val": {"SS": ["w-1", "v-1"]}, "w": {"N": "1.0"}});
        let packed = typed::pack_attributes(attrs.as_object().unwrap());
        assert_eq!(
            item_reply("id", "k", Some(packed.clone())),
            Ok(
                json!({"Item": {"id": {"S": "k"}, "val": {"SS": ["w-1", "v-1"]}, "w": {"N": "1.0"}}})
            )
        );
        let mut appended = packed;
        appended.push(9);
        assert!(matches!(
            item_reply("id", "k", Some(appended)),
            Err(Refused::Internal(_))
        ));
    }

    #[test]
    fn transact_entries_other_than_update_and_condition_check_are_refused() {
        let put = json!({"Put": {"TableName": "t", "Item": {}}});
        assert!(matches!(planned_item(&put), Err(Refused::Validation(_))));
        let bare_check = json!({"ConditionCheck": {"TableName": "t", "Key": {"pk": {"S": "k"}}}});
        assert!(matches!(
            planned_item(&bare_check),
            Err(Refused::Validation(_))
        ));
    }
}

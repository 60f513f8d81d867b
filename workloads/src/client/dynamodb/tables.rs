//! The tables a DynamoDB run uses, created once per run before the first call:
//! `CreateTable` of each (a string hash key, on-demand billing; a table that already
//! exists is accepted), then `DescribeTable` until it is `ACTIVE`.
//!
//! A list-append run has one table (`jepsen_append`) or, with `--tables N`, N tables
//! (`jepsen_append_t1` … `_tN`), key `k` in the one [`table_of`] names.
//!
//! Invariant: no operation of the workload is sent before every table is active; a setup
//! that fails is tried again by the next call, and the call that found it failing fails
//! definitely (nothing of it was sent).

use super::classify_sdk;
use crate::client::classify::{CallError, CallKind, Certainty};
use crate::client::CallResult;
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType, TableStatus,
};
use std::time::Duration;
use tokio::time::Instant;

/// A table: its name and its string hash key's attribute name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableDef {
    pub name: &'static str,
    pub hash_key: &'static str,
}

/// The list-append table (elastickv's `dynamodb_workload.clj`): `pk` (S) and a list `val`.
pub const APPEND_TABLE: TableDef = TableDef {
    name: "jepsen_append",
    hash_key: "pk",
};
/// The list attribute of an append item.
pub const APPEND_ATTR: &str = "val";
/// Every table the transaction workloads use with one table.
pub const APPEND_TABLES: &[TableDef] = &[APPEND_TABLE];
/// The most tables `--tables` may ask for.
pub const MAX_APPEND_TABLES: u32 = 8;
/// The tables of a multi-table run (`--tables N`, N > 1), the names elastickv's
/// `dynamodb_multi_table_workload.clj` gives them: the run uses the first N.
const MULTI_TABLE_NAMES: [&str; MAX_APPEND_TABLES as usize] = [
    "jepsen_append_t1",
    "jepsen_append_t2",
    "jepsen_append_t3",
    "jepsen_append_t4",
    "jepsen_append_t5",
    "jepsen_append_t6",
    "jepsen_append_t7",
    "jepsen_append_t8",
];

/// The list-append tables of a run of `n` tables: `jepsen_append` alone for one (so a
/// one-table run is the same as before multi-table runs existed), `jepsen_append_t1` …
/// `jepsen_append_t<n>` for more; `n` is clamped to 1..=[`MAX_APPEND_TABLES`] (the CLI
/// refuses anything else).
pub fn append_tables(n: u32) -> Vec<TableDef> {
    match n.clamp(1, MAX_APPEND_TABLES) {
        1 => APPEND_TABLES.to_vec(),
        n => MULTI_TABLE_NAMES[..n as usize]
            .iter()
            .map(|name| TableDef {
                name,
                hash_key: APPEND_TABLE.hash_key,
            })
            .collect(),
    }
}

/// The names of [`append_tables`]`(n)`, in order (what [`StoreKeys`] records).
///
/// [`StoreKeys`]: analysis::history::store_keys::StoreKeys
pub fn append_table_names(n: u32) -> Vec<String> {
    append_tables(n)
        .iter()
        .map(|t| t.name.to_string())
        .collect()
}

/// The table of `key` among `tables` (elastickv's `dynamodb_multi_table_workload.clj`
/// rule, [`analysis::history::store_keys::table_index`]: the key's number modulo N).
pub fn table_of(tables: &[TableDef], key: &str) -> TableDef {
    let i = analysis::history::store_keys::table_index(key, tables.len());
    tables.get(i).copied().unwrap_or(APPEND_TABLE)
}

/// How long a table may take to become active.
const ACTIVE_WITHIN: Duration = Duration::from_secs(60);
/// Pause between two `DescribeTable`s.
const POLL: Duration = Duration::from_millis(100);

/// The run's tables, created once.
pub struct TableSetup {
    tables: Vec<TableDef>,
    done: tokio::sync::OnceCell<()>,
}

fn not_ready(why: String) -> CallError {
    CallError::new(
        Certainty::Definite,
        "tables-not-ready",
        format!("nothing sent: the run's tables are not ready: {why}"),
    )
}

impl TableSetup {
    /// The run's tables, in order (a key's table is [`table_of`] them).
    pub fn tables(&self) -> &[TableDef] {
        &self.tables
    }

    pub fn new(tables: Vec<TableDef>) -> TableSetup {
        TableSetup {
            tables,
            done: tokio::sync::OnceCell::new(),
        }
    }

    /// Creates every table and waits until each is active (once; later calls return at once).
    pub async fn ensure(&self, sdk: &aws_sdk_dynamodb::Client) -> CallResult<()> {
        self.done
            .get_or_try_init(|| async {
                for t in &self.tables {
                    create(sdk, *t).await.map_err(not_ready)?;
                    wait_active(sdk, t.name).await.map_err(not_ready)?;
                }
                Ok(())
            })
            .await
            .map(|_| ())
    }
}

/// `CreateTable`; an existing table (`ResourceInUseException`) is accepted.
async fn create(sdk: &aws_sdk_dynamodb::Client, t: TableDef) -> Result<(), String> {
    let bad = |e: aws_sdk_dynamodb::error::BuildError| format!("{}: {e}", t.name);
    let key = KeySchemaElement::builder()
        .attribute_name(t.hash_key)
        .key_type(KeyType::Hash)
        .build()
        .map_err(bad)?;
    let attr = AttributeDefinition::builder()
        .attribute_name(t.hash_key)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .map_err(bad)?;
    let sent = sdk
        .create_table()
        .table_name(t.name)
        .key_schema(key)
        .attribute_definitions(attr)
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await;
    match sent {
        Ok(_) => Ok(()),
        Err(e) if e.code() == Some("ResourceInUseException") => Ok(()),
        Err(e) => Err(format!(
            "CreateTable {}: {}",
            t.name,
            classify_sdk(CallKind::Read, &e).history_text()
        )),
    }
}

/// `DescribeTable` until the table is `ACTIVE` (a reply without a status counts as active:
/// some servers create tables synchronously and omit it).
async fn wait_active(sdk: &aws_sdk_dynamodb::Client, name: &str) -> Result<(), String> {
    let deadline = Instant::now() + ACTIVE_WITHIN;
    let mut last = String::from("never described");
    while Instant::now() < deadline {
        match sdk.describe_table().table_name(name).send().await {
            Ok(out) => match out.table().and_then(|t| t.table_status()) {
                Some(TableStatus::Active) | None => return Ok(()),
                Some(other) => last = format!("status {other:?}"),
            },
            Err(e) => last = classify_sdk(CallKind::Read, &e).history_text(),
        }
        tokio::time::sleep(POLL).await;
    }
    Err(format!(
        "table {name} not active within {}s ({last})",
        ACTIVE_WITHIN.as_secs()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_table_is_the_single_table_run_and_more_are_named_as_elastickvs_workload_names_them() {
        assert_eq!(append_tables(1), vec![APPEND_TABLE]);
        assert_eq!(append_table_names(0), vec!["jepsen_append"]);
        assert_eq!(
            append_table_names(4),
            [
                "jepsen_append_t1",
                "jepsen_append_t2",
                "jepsen_append_t3",
                "jepsen_append_t4"
            ]
        );
        let four = append_tables(4);
        assert_eq!(table_of(&four, "a/la/000000").name, "jepsen_append_t1");
        assert_eq!(table_of(&four, "h/la/000007").name, "jepsen_append_t4");
        assert_eq!(table_of(&append_tables(1), "h/la/000007"), APPEND_TABLE);
    }
}

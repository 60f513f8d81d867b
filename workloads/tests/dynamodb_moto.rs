//! Wire conformance of the DynamoDB client against a third-party DynamoDB server: moto's
//! (`moto[server]` from PyPI, pinned in `.ci/run`), started here on a loopback port. The
//! client creates its table (`CreateTable`, `DescribeTable`; a second setup finds it
//! existing), then single-item calls (`UpdateItem` with `list_append`, `GetItem`) and one
//! transaction (`TransactGetItems` + `TransactWriteItems` with conditions) must do what
//! DynamoDB documents; a node that is not listening is a definite failure, nothing sent.
//!
//! Registers of every attribute type (`--value-type all`): `PutItem` of each type's value
//! and `GetItem` with `ConsistentRead` must give back exactly what was written, a number
//! put in another form (`75.0`) must read as the same number, and a set with a member no
//! write puts must read as unexpected.
//!
//! moto's transactions are not isolated under concurrency, so only one call at a time runs
//! here: this checks the wire protocol, not isolation (docs/dynamodb.md).
//!
//! The server: [`moto`] (skipped without it, outside CI).

mod moto;

use aws_sdk_dynamodb::types::AttributeValue;
use moto::{free_port, moto_or_skip, start_moto};
use serde_json::{json, Value};
use std::time::Duration;
use workloads::client::dynamodb::register::UNEXPECTED_PREFIX;
use workloads::client::dynamodb::value_types::{ValueType, ValueTypes};
use workloads::client::dynamodb::{sdk_client, DynamoConnector, DynamoOptions};
use workloads::client::NodeEndpoint;
use workloads::txn::{Mop, ReadShape};
use workloads::{Certainty, KvTarget};

fn options() -> DynamoOptions {
    DynamoOptions {
        call_timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(2),
        value_types: None,
        append_tables: 1,
    }
}

fn client(addr: &str) -> Box<dyn KvTarget> {
    client_of(addr, options())
}

fn client_of(addr: &str, options: DynamoOptions) -> Box<dyn KvTarget> {
    let node = NodeEndpoint {
        name: "n1".into(),
        addr: addr.into(),
    };
    Box::new(DynamoConnector::new(options).client(&node))
}

/// What a register read of `key` recorded, as the history reads it.
async fn register_read(c: &dyn KvTarget, key: &str) -> Value {
    let r = c
        .read(key.as_bytes())
        .await
        .unwrap_or_else(|e| panic!("GetItem {key}: {e}"));
    r.value.map_or(Value::Null, |v| {
        let text = String::from_utf8(v).expect("UTF-8");
        text.parse::<i64>().map_or(Value::String(text), Value::from)
    })
}

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

async fn run(c: &dyn KvTarget, mops: &[Mop]) -> Vec<Value> {
    c.as_txn()
        .expect("the DynamoDB client runs transactions")
        .transact(mops)
        .await
        .unwrap_or_else(|e| panic!("{mops:?}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_item_calls_and_one_transaction_conform_against_moto() {
    let Some(binary) = moto_or_skip() else {
        return;
    };
    let (_moto, addr) = start_moto(&binary);
    let c = client(&addr);
    assert_eq!(
        run(c.as_ref(), &[read("a")]).await,
        [json!([])],
        "a key never written reads as []"
    );
    assert_eq!(run(c.as_ref(), &[append("a", 5)]).await, [Value::Null]);
    assert_eq!(run(c.as_ref(), &[append("a", 6)]).await, [Value::Null]);
    assert_eq!(
        run(c.as_ref(), &[read("a")]).await,
        [json!([5, 6])],
        "UpdateItem list_append keeps order"
    );
    // A second client setup finds the table existing (ResourceInUseException accepted).
    let again = client(&addr);
    let txn = [read("a"), append("b", 7), read("b"), append("a", 8)];
    assert_eq!(
        run(again.as_ref(), &txn).await,
        [json!([5, 6]), Value::Null, json!([7]), Value::Null],
        "a transaction's reads see the snapshot plus its own earlier appends"
    );
    assert_eq!(
        run(c.as_ref(), &[read("a"), read("b")]).await,
        [json!([5, 6, 8]), json!([7])]
    );
}

#[tokio::test]
async fn a_node_that_is_not_listening_is_a_definite_failure() {
    let c = client(&format!("127.0.0.1:{}", free_port()));
    let e = c
        .as_txn()
        .unwrap()
        .transact(&[append("a", 1)])
        .await
        .unwrap_err();
    assert_eq!(e.certainty, Certainty::Definite, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registers_of_every_attribute_type_read_back_what_was_put() {
    let Some(binary) = moto_or_skip() else {
        return;
    };
    let (_moto, addr) = start_moto(&binary);
    let c = client_of(
        &addr,
        DynamoOptions {
            value_types: Some(ValueTypes::All),
            ..options()
        },
    );
    for i in 0..10_u64 {
        let key = format!("reg/{i:05}");
        let t = ValueTypes::All.of_key(&key);
        assert_eq!(
            register_read(c.as_ref(), &key).await,
            Value::Null,
            "{t}: never written"
        );
        for n in [i as i64 + 1, i as i64 + 12] {
            c.write(key.as_bytes(), n.to_string().as_bytes())
                .await
                .unwrap_or_else(|e| panic!("PutItem {t} {n}: {e}"));
            assert_eq!(register_read(c.as_ref(), &key).await, json!(n), "{t} {n}");
        }
    }
    // Written behind the register client's back: a number in another form, and a set
    // with a member no write puts.
    let sdk = sdk_client(&addr, options());
    let put = |table: &'static str, key: &'static str, val: AttributeValue| {
        sdk.put_item()
            .table_name(table)
            .item("pk", AttributeValue::S(key.into()))
            .item("val", val)
            .send()
    };
    assert_eq!(ValueTypes::All.of_key("reg/00001"), ValueType::N);
    put(
        ValueType::N.table(),
        "reg/00001",
        AttributeValue::N("75.0".into()),
    )
    .await
    .expect("PutItem N 75.0");
    assert_eq!(
        register_read(c.as_ref(), "reg/00001").await,
        json!(75),
        "numbers by value"
    );
    assert_eq!(ValueTypes::All.of_key("reg/00005"), ValueType::Ss);
    let three = AttributeValue::Ss(vec!["v-3".into(), "w-3".into(), "x".into()]);
    put(ValueType::Ss.table(), "reg/00005", three)
        .await
        .expect("PutItem SS");
    let garbage = register_read(c.as_ref(), "reg/00005").await;
    assert!(
        garbage
            .as_str()
            .is_some_and(|s| s.starts_with(UNEXPECTED_PREFIX)),
        "{garbage}"
    );
}

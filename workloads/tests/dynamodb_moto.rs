//! Wire conformance of the DynamoDB client against a third-party DynamoDB server: moto's
//! (`moto[server]` from PyPI, pinned in `.ci/run`), started here on a loopback port. The
//! client creates its table (`CreateTable`, `DescribeTable`; a second setup finds it
//! existing), then single-item calls (`UpdateItem` with `list_append`, `GetItem`) and one
//! transaction (`TransactGetItems` + `TransactWriteItems` with conditions) must do what
//! DynamoDB documents; a node that is not listening is a definite failure, nothing sent.
//!
//! moto's transactions are not isolated under concurrency, so only one call at a time runs
//! here: this checks the wire protocol, not isolation (docs/dynamodb.md).
//!
//! The server is `$FAULTLINE_MOTO_SERVER`, else `moto_server` on the PATH; without it the
//! test prints `skipped:` (and fails under `CI=true`, where `.ci/run` installs it).

use serde_json::{json, Value};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use workloads::client::dynamodb::{DynamoConnector, DynamoOptions};
use workloads::client::NodeEndpoint;
use workloads::txn::{Mop, ReadShape};
use workloads::{Certainty, KvTarget};

/// The moto server process, killed when dropped.
struct Moto(Child);

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn moto_binary() -> Option<String> {
    if let Ok(p) = std::env::var("FAULTLINE_MOTO_SERVER") {
        return Some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("moto_server"))
        .find(|p| p.is_file())
        .map(|p| p.display().to_string())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Starts moto on a free loopback port and waits until it accepts connections.
fn start_moto(binary: &str) -> (Moto, String) {
    let port = free_port();
    let child = Command::new(binary)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {binary}: {e}"));
    let moto = Moto(child);
    let addr = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            Instant::now() < deadline,
            "moto did not listen on {addr} within 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (moto, addr)
}

fn options() -> DynamoOptions {
    DynamoOptions {
        call_timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(2),
        append_tables: 1,
    }
}

fn client(addr: &str) -> Box<dyn KvTarget> {
    let node = NodeEndpoint {
        name: "n1".into(),
        addr: addr.into(),
    };
    Box::new(DynamoConnector::new(options()).client(&node))
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
    let Some(binary) = moto_binary() else {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "moto_server is missing under CI=true (.ci/run installs it)"
        );
        eprintln!("skipped: no moto_server (set FAULTLINE_MOTO_SERVER or put it on the PATH)");
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

//! Wire conformance of the S3 client (`--client s3`) against a third-party S3 server: moto's
//! ([`moto`]; skipped without it, outside CI). The client creates its bucket before its first
//! call (a second client finds it existing), then `PutObject` / `GetObject` / `DeleteObject`
//! must do what S3 documents: a read gives back exactly the body written, an object never
//! written or deleted reads as absent (`NoSuchKey`). A node that is not listening is a
//! definite failure, nothing sent; what the client does not offer (scans) is a definite
//! `unimplemented`. The object capability (the `objects` workload): a 3 MiB body (more
//! than one of elastickv's 1 MiB chunks) by `PutObject` and a 5 MiB + 1 KiB body by
//! multipart upload come back as exactly their write's body, and the operations record the
//! write number the body proves.

mod moto;

use moto::{free_port, moto_or_skip, start_moto};
use std::time::Duration;
use workloads::client::s3::{S3Connector, S3Options};
use workloads::client::NodeEndpoint;
use workloads::objects::body::{self, BodyCheck};
use workloads::objects::{ObjectRead, ObjectWrite, Upload};
use workloads::operation::OpSpec;
use workloads::{Certainty, KvTarget};

fn client(addr: &str) -> Box<dyn KvTarget> {
    let options = S3Options {
        call_timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(2),
    };
    let node = NodeEndpoint {
        name: "n1".into(),
        addr: addr.into(),
    };
    Box::new(S3Connector::new(options).client(&node))
}

async fn read(c: &dyn KvTarget, key: &str) -> Option<String> {
    let reply = c
        .read(key.as_bytes())
        .await
        .unwrap_or_else(|e| panic!("GetObject {key}: {e}"));
    reply
        .value
        .map(|v| String::from_utf8(v).expect("a UTF-8 body"))
}

#[tokio::test]
async fn objects_are_written_read_back_whole_and_deleted() {
    let Some(binary) = moto_or_skip() else {
        return;
    };
    let (_moto, addr) = start_moto(&binary);
    let c = client(&addr);
    assert_eq!(read(c.as_ref(), "k1").await, None, "never written");
    c.write(b"k1", b"17").await.expect("PutObject k1");
    c.write(b"k2", b"4").await.expect("PutObject k2");
    c.write(b"k1", b"23").await.expect("PutObject k1 again");
    assert_eq!(read(c.as_ref(), "k1").await.as_deref(), Some("23"));
    assert_eq!(read(c.as_ref(), "k2").await.as_deref(), Some("4"));
    c.delete(b"k2").await.expect("DeleteObject k2");
    assert_eq!(read(c.as_ref(), "k2").await, None, "deleted");

    let second = client(&addr);
    assert_eq!(
        read(second.as_ref(), "k1").await.as_deref(),
        Some("23"),
        "a second client's bucket setup finds the bucket and its objects"
    );
    let scan = second.scan(b"a", b"z", 10).await.expect_err("no scans");
    assert_eq!(
        (scan.certainty, scan.tag),
        (Certainty::Definite, "unimplemented")
    );
}

#[tokio::test]
async fn a_node_that_is_not_listening_fails_definitely() {
    let c = client(&format!("127.0.0.1:{}", free_port()));
    let e = c.write(b"k", b"1").await.expect_err("nobody listens");
    assert_eq!(e.certainty, Certainty::Definite, "{e}");
    assert_eq!(e.tag, "bucket-not-ready", "{e}");
}

const MIB: u64 = 1 << 20;

#[tokio::test]
async fn large_and_multipart_objects_come_back_whole() {
    let Some(binary) = moto_or_skip() else {
        return;
    };
    let (_moto, addr) = start_moto(&binary);
    let c = client(&addr);
    let objects = c.as_objects().expect("the S3 client has object calls");
    let cases = [
        ("obj/big", 1, 3 * MIB + 17, Upload::Single),
        (
            "obj/multi",
            2,
            5 * MIB + 1024,
            Upload::Multipart { part_size: 5 * MIB },
        ),
    ];
    for (key, write, length, upload) in cases {
        let sent = body::body(key, write, length).unwrap();
        objects
            .put_object(key, sent, upload)
            .await
            .unwrap_or_else(|e| panic!("{key} by {upload:?}: {e}"));
        let got = objects
            .get_object(key)
            .await
            .unwrap_or_else(|e| panic!("GetObject {key}: {e}"))
            .expect("the object exists");
        assert_eq!(got.len() as u64, length, "{key}");
        assert_eq!(body::verify(key, &got), BodyCheck::Whole(write), "{key}");
    }
    assert_eq!(objects.get_object("obj/never").await.unwrap(), None);
}

#[tokio::test]
async fn the_operations_record_the_write_their_body_proves() {
    let Some(binary) = moto_or_skip() else {
        return;
    };
    let (_moto, addr) = start_moto(&binary);
    let c = client(&addr);
    let key = "obj/00000".to_string();
    let read = OpSpec::new(ObjectRead { key: key.clone() });
    assert_eq!(
        read.run(c.as_ref()).await.unwrap().value,
        serde_json::Value::Null
    );
    for (write, length, upload) in [
        (7, 5 * MIB + 5, Upload::Multipart { part_size: 5 * MIB }),
        (8, 64, Upload::Single),
    ] {
        let op = OpSpec::new(ObjectWrite {
            key: key.clone(),
            write,
            length,
            upload,
        });
        let done = op.run(c.as_ref()).await.expect("the write");
        assert_eq!(done.value, serde_json::json!(write));
        let seen = read.run(c.as_ref()).await.expect("the read").value;
        assert_eq!(seen, serde_json::json!(write), "after write {write}");
    }
}

//! Tests against a real single-member etcd (Debian's `etcd-server`, installed by `.ci/run`)
//! on loopback, and pure tests of the request mapping.

use super::*;
use crate::client::CasClient;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A single-member etcd in a temporary data dir, killed on drop (also used by `super::txn_tests`).
pub(super) struct LocalEtcd {
    pub(super) child: Child,
    addr: String,
    _dir: tempfile::TempDir,
}

impl LocalEtcd {
    pub(super) fn start() -> LocalEtcd {
        let dir = tempfile::tempdir().expect("a temp dir");
        let (client, peer) = (free_port(), free_port());
        let addr = format!("127.0.0.1:{client}");
        let child = Command::new("etcd")
            .args(["--name", "t1", "--data-dir"])
            .arg(dir.path().join("etcd"))
            .args(["--listen-client-urls", &format!("http://{addr}")])
            .args(["--advertise-client-urls", &format!("http://{addr}")])
            .args(["--listen-peer-urls", &format!("http://127.0.0.1:{peer}")])
            .args([
                "--initial-advertise-peer-urls",
                &format!("http://127.0.0.1:{peer}"),
            ])
            .args(["--initial-cluster", &format!("t1=http://127.0.0.1:{peer}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the etcd binary (apt-get install etcd-server)");
        LocalEtcd {
            child,
            addr,
            _dir: dir,
        }
    }

    pub(super) fn client(&self) -> EtcdClient {
        EtcdClient::connect_lazy(
            &NodeEndpoint {
                name: "n1".into(),
                addr: self.addr.clone(),
            },
            &ClientOptions::default(),
        )
        .expect("a valid address")
    }
}

impl Drop for LocalEtcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client made after its only member was killed (once it had a leader): every call
/// meets a refused connection.
pub(super) async fn client_of_a_dead_member() -> (LocalEtcd, EtcdClient) {
    let mut etcd = LocalEtcd::start();
    wait_leader(&etcd.client()).await;
    etcd.child.kill().unwrap();
    etcd.child.wait().unwrap();
    let fresh = etcd.client();
    (etcd, fresh)
}

pub(super) async fn wait_leader(client: &EtcdClient) -> GroupStatus {
    for _ in 0..100 {
        if let Ok(s) = client.status(1).await {
            if s.is_leader {
                return s;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("etcd never elected itself");
}

#[tokio::test]
async fn register_operations_against_a_real_etcd() {
    let etcd = LocalEtcd::start();
    let c = etcd.client();
    let status = wait_leader(&c).await;
    assert_eq!(status.state, "LEADER");
    assert_eq!(status.leader_id, status.node_id);
    assert!(status.term >= 1);

    assert_eq!(c.read(b"k").await.unwrap().value, None);
    assert!(
        !c.cas(b"k", Some(b"1"), b"2").await.unwrap().applied,
        "cas on an absent key fails"
    );
    assert!(
        c.cas(b"k", None, b"1").await.unwrap().applied,
        "cas expecting absence creates"
    );
    assert!(
        !c.cas(b"k", None, b"9").await.unwrap().applied,
        "the key exists now"
    );
    assert!(c.cas(b"k", Some(b"1"), b"2").await.unwrap().applied);
    assert_eq!(
        c.read(b"k").await.unwrap().value.as_deref(),
        Some(&b"2"[..])
    );
    assert!(c.write(b"k", b"3").await.unwrap().applied);
    assert_eq!(
        c.read(b"k").await.unwrap().value.as_deref(),
        Some(&b"3"[..])
    );
    c.delete(b"k").await.unwrap();
    assert_eq!(c.read(b"k").await.unwrap().value, None);
}

#[tokio::test]
async fn scans_are_half_open_and_unbounded_with_an_empty_end() {
    let etcd = LocalEtcd::start();
    let c = etcd.client();
    wait_leader(&c).await;
    for k in ["s/1", "s/2", "s/3", "t"] {
        c.write(k.as_bytes(), b"x").await.unwrap();
    }
    let keys = |r: ScanReply| {
        r.pairs
            .into_iter()
            .map(|(k, _)| String::from_utf8(k).unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        keys(c.scan(b"s/", b"s0", 0).await.unwrap()),
        ["s/1", "s/2", "s/3"]
    );
    assert_eq!(
        keys(c.scan(b"s/2", b"", 0).await.unwrap()),
        ["s/2", "s/3", "t"]
    );
    assert_eq!(keys(c.scan(b"", b"", 2).await.unwrap()), ["s/1", "s/2"]);
    let err = c.list_routes().await.unwrap_err();
    assert_eq!(
        (err.tag, err.certainty),
        ("unimplemented", Certainty::Definite)
    );
}

#[tokio::test]
async fn a_dead_member_gives_definite_failures_for_writes() {
    let (_etcd, fresh) = client_of_a_dead_member().await;
    let err = fresh.write(b"k", b"1").await.unwrap_err();
    assert_eq!(
        err.certainty,
        Certainty::Definite,
        "connection refused: nothing was sent ({err})"
    );
}

#[test]
fn empty_range_ends_mean_unbounded() {
    assert_eq!(range_end(b""), vec![0]);
    assert_eq!(range_end(b"s0"), b"s0".to_vec());
}

#[test]
fn cas_compares_value_or_absence() {
    use pb::compare::{CompareResult, CompareTarget, TargetUnion};
    let c = cas_compare(b"k", Some(b"5"));
    assert_eq!(
        (c.result, c.target),
        (CompareResult::Equal as i32, CompareTarget::Value as i32)
    );
    assert_eq!(c.target_union, Some(TargetUnion::Value(b"5".to_vec())));
    let c = cas_compare(b"k", None);
    assert_eq!(c.target, CompareTarget::Create as i32);
    assert_eq!(c.target_union, Some(TargetUnion::CreateRevision(0)));
}

#[test]
fn status_names_the_leader_only_when_it_is_this_member() {
    let resp = |leader| pb::StatusResponse {
        leader,
        raft_term: 4,
        raft_index: 9,
        ..Default::default()
    };
    let s = group_status(0xabc, &resp(0xabc));
    assert!(s.is_leader);
    assert_eq!(
        (s.state.as_str(), s.node_id.as_str(), s.term),
        ("LEADER", "abc", 4)
    );
    let s = group_status(0xabc, &resp(0xdef));
    assert!(!s.is_leader);
    assert_eq!(
        (s.state.as_str(), s.leader_id.as_str()),
        ("FOLLOWER", "def")
    );
    let s = group_status(0xabc, &resp(0));
    assert_eq!((s.state.as_str(), s.leader_id.as_str()), ("CANDIDATE", ""));
}

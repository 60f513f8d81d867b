//! The Redis client against [`resp_double`]s that answer as elastickv's Redis adapter does
//! (d9a031d): every node serves `GET`/`SET`/`SCAN`/`MGET` (followers proxy to the leader,
//! `adapter/redis_proxy_leader.go` ~384), only the leader runs scripts (`NOTLEADER etcd raft
//! engine is not leader` elsewhere), and each node has its own script cache (`NOSCRIPT`
//! before a first `EVAL`, `adapter/redis_lua.go` ~76–90).

use super::*;
use crate::client::resp_double::{self, array, bulk, error, int, nil, Handler, Log, RespDouble};
use crate::client::CasClient;
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};

const NOT_LEADER: &str = "NOTLEADER etcd raft engine is not leader";

/// The shared state of a doubled elastickv cluster.
#[derive(Default)]
struct Cluster {
    data: Mutex<BTreeMap<Vec<u8>, Vec<u8>>>,
    /// Set: the leader answers the cas script with NOTLEADER (it stepped down while committing).
    step_down_in_commit: AtomicBool,
}

fn apply_cas(cluster: &Cluster, args: &[Vec<u8>]) -> Vec<u8> {
    if cluster.step_down_in_commit.load(Ordering::SeqCst) {
        return error(NOT_LEADER);
    }
    let (key, absent, expected, new) = (&args[0], args[1] == b"1", &args[2], &args[3]);
    let mut data = cluster.data.lock().unwrap();
    let matches = match data.get(key) {
        None => absent,
        Some(v) => !absent && v == expected,
    };
    if matches {
        data.insert(key.clone(), new.clone());
    }
    int(i64::from(matches))
}

fn scripts(cluster: &Cluster, cache: &Mutex<HashSet<String>>, cmd: &[Vec<u8>]) -> Vec<u8> {
    let name = String::from_utf8_lossy(&cmd[0]).to_uppercase();
    let body = if name == "EVALSHA" {
        let sha = String::from_utf8_lossy(&cmd[1]).to_string();
        if !cache.lock().unwrap().contains(&sha) {
            return error("NOSCRIPT No matching script. Please use EVAL.");
        }
        CAS_SCRIPT.as_bytes().to_vec()
    } else {
        cache.lock().unwrap().insert(
            redis::Script::new(&String::from_utf8_lossy(&cmd[1]))
                .get_hash()
                .to_string(),
        );
        cmd[1].clone()
    };
    if body == PROBE_SCRIPT.as_bytes() {
        return int(1);
    }
    assert_eq!(
        body,
        CAS_SCRIPT.as_bytes(),
        "only the cas and probe scripts are sent"
    );
    apply_cas(cluster, &cmd[3..])
}

fn plain(cluster: &Cluster, cmd: &[Vec<u8>]) -> Vec<u8> {
    let mut data = cluster.data.lock().unwrap();
    match String::from_utf8_lossy(&cmd[0]).to_uppercase().as_str() {
        "GET" => data.get(&cmd[1]).map_or_else(nil, |v| bulk(v)),
        "SET" => {
            data.insert(cmd[1].clone(), cmd[2].clone());
            // As elastickv relays a SET it proxied to the leader.
            bulk(b"OK")
        }
        "DEL" => int(i64::from(data.remove(&cmd[1]).is_some())),
        "MGET" => array(
            &cmd[1..]
                .iter()
                .map(|k| data.get(k).map_or_else(nil, |v| bulk(v)))
                .collect::<Vec<_>>(),
        ),
        "PING" => b"+PONG\r\n".to_vec(),
        other => error(&format!("ERR unknown command '{other}'")),
    }
}

fn ekv_node(cluster: Arc<Cluster>, leader: bool) -> Handler {
    let cache = Arc::new(Mutex::new(HashSet::new()));
    Arc::new(move |cmd: &[Vec<u8>]| {
        let name = String::from_utf8_lossy(&cmd[0]).to_uppercase();
        match (name.as_str(), leader) {
            ("EVAL" | "EVALSHA", false) => error(NOT_LEADER),
            ("EVAL" | "EVALSHA", true) => scripts(&cluster, &cache, cmd),
            _ => plain(&cluster, cmd),
        }
    })
}

fn options(set_read: SetRead) -> RedisOptions {
    RedisOptions {
        call_timeout: Duration::from_secs(2),
        connect_timeout: Duration::from_millis(500),
        set_read,
    }
}

/// Three doubled nodes, n2 the leader; the client is bound to `bound`.
async fn three_nodes(
    bound: &str,
    set_read: SetRead,
) -> (Vec<RespDouble>, Arc<Cluster>, Log, RedisClient) {
    let cluster = Arc::new(Cluster::default());
    let log: Log = Arc::default();
    let mut doubles = Vec::new();
    for (name, leader) in [("n1", false), ("n2", true), ("n3", false)] {
        doubles
            .push(resp_double::start(name, log.clone(), ekv_node(cluster.clone(), leader)).await);
    }
    let nodes: Vec<NodeEndpoint> = doubles
        .iter()
        .zip(["n1", "n2", "n3"])
        .map(|(d, n)| NodeEndpoint {
            name: n.into(),
            addr: d.addr.clone(),
        })
        .collect();
    let own = nodes.iter().find(|n| n.name == bound).unwrap().clone();
    let client = RedisClient::new(&own, &nodes, options(set_read), Arc::default()).unwrap();
    (doubles, cluster, log, client)
}

fn commands(log: &Log) -> Vec<(String, String)> {
    log.lock()
        .unwrap()
        .iter()
        .map(|(n, c)| (n.clone(), c[0].to_uppercase()))
        .collect()
}

#[tokio::test]
async fn cas_on_a_follower_probes_for_the_leader_and_runs_the_script_there() {
    let (_d, cluster, log, client) = three_nodes("n1", SetRead::Scan).await;
    let first = client
        .cas(b"reg/1", None, b"5")
        .await
        .expect("cas of an absent key");
    assert!(first.applied);
    let mismatch = client
        .cas(b"reg/1", Some(b"4"), b"6")
        .await
        .expect("cas with a wrong expectation");
    assert!(!mismatch.applied, "4 is not the current value");
    assert!(
        client
            .cas(b"reg/1", Some(b"5"), b"6")
            .await
            .unwrap()
            .applied
    );
    assert_eq!(
        cluster.data.lock().unwrap().get(b"reg/1".as_slice()),
        Some(&b"6".to_vec())
    );
    let sent = commands(&log);
    let scripts: Vec<&(String, String)> =
        sent.iter().filter(|(_, c)| c.starts_with("EVAL")).collect();
    // n1 refuses the probe, n2 answers it; the first EVALSHA meets NOSCRIPT, EVAL caches it.
    assert_eq!(
        scripts
            .iter()
            .map(|(n, c)| format!("{n}:{c}"))
            .collect::<Vec<_>>(),
        [
            "n1:EVAL",
            "n2:EVAL",
            "n2:EVALSHA",
            "n2:EVAL",
            "n2:EVALSHA",
            "n2:EVALSHA"
        ]
    );
}

#[tokio::test]
async fn a_notleader_answer_to_the_script_itself_is_indeterminate_and_the_leader_is_found_again() {
    let (_d, cluster, log, client) = three_nodes("n2", SetRead::Scan).await;
    assert!(client.cas(b"k", None, b"1").await.unwrap().applied);
    cluster.step_down_in_commit.store(true, Ordering::SeqCst);
    let err = client
        .cas(b"k", Some(b"1"), b"2")
        .await
        .expect_err("the leader stepped down");
    assert_eq!(
        (err.tag, err.certainty),
        ("not-leader", Certainty::Indeterminate),
        "{err:?}"
    );
    cluster.step_down_in_commit.store(false, Ordering::SeqCst);
    log.lock().unwrap().clear();
    assert!(client.cas(b"k", Some(b"1"), b"2").await.unwrap().applied);
    assert_eq!(
        commands(&log)[0],
        ("n2".to_string(), "EVAL".to_string()),
        "a fresh probe after NOTLEADER"
    );
}

#[tokio::test]
async fn no_node_running_scripts_is_a_definite_failure() {
    let cluster = Arc::new(Cluster::default());
    let log: Log = Arc::default();
    let follower = resp_double::start("n1", log.clone(), ekv_node(cluster.clone(), false)).await;
    let node = NodeEndpoint {
        name: "n1".into(),
        addr: follower.addr.clone(),
    };
    let client = RedisClient::new(
        &node,
        std::slice::from_ref(&node),
        options(SetRead::Scan),
        Arc::default(),
    )
    .unwrap();
    let err = client
        .cas(b"k", None, b"1")
        .await
        .expect_err("nobody leads");
    assert_eq!(
        (err.tag, err.certainty),
        ("leader-not-found", Certainty::Definite)
    );
    assert!(err.message.contains("not-leader"), "{err:?}");
    assert!(cluster.data.lock().unwrap().is_empty());
}

#[tokio::test]
async fn reads_writes_and_deletes_go_to_the_bound_node() {
    let (_d, _cluster, log, client) = three_nodes("n3", SetRead::Scan).await;
    assert_eq!(client.read(b"a").await.unwrap().value, None);
    assert!(client.write(b"a", b"7").await.unwrap().applied);
    assert_eq!(
        client.read(b"a").await.unwrap().value.as_deref(),
        Some(b"7".as_slice())
    );
    assert!(client.delete(b"a").await.unwrap().applied);
    assert!(commands(&log).iter().all(|(n, _)| n == "n3"));
}

#[tokio::test]
async fn scan_pages_until_cursor_zero_and_keeps_the_range_sorted_and_unique() {
    let log: Log = Arc::default();
    let handler: Handler = Arc::new(|cmd: &[Vec<u8>]| {
        assert_eq!(cmd[0], b"SCAN");
        assert_eq!(
            (cmd[2].as_slice(), cmd[3].as_slice()),
            (b"MATCH".as_slice(), b"set*".as_slice())
        );
        let page = |cursor: &str, keys: &[&str]| {
            array(&[
                bulk(cursor.as_bytes()),
                array(&keys.iter().map(|k| bulk(k.as_bytes())).collect::<Vec<_>>()),
            ])
        };
        match cmd[1].as_slice() {
            b"0" => page("17", &["set/3", "set/1", "setx"]),
            b"17" => page("4", &[]),
            b"4" => page("0", &["set/1", "set/2", "set0"]),
            other => panic!("unexpected cursor {other:?}"),
        }
    });
    let double = resp_double::start("n1", log.clone(), handler).await;
    let node = NodeEndpoint {
        name: "n1".into(),
        addr: double.addr.clone(),
    };
    let client = RedisClient::new(&node, &[], options(SetRead::Scan), Arc::default()).unwrap();
    let reply = client.scan(b"set/", b"set0", 0).await.unwrap();
    let keys: Vec<&[u8]> = reply.pairs.iter().map(|(k, _)| k.as_slice()).collect();
    assert_eq!(keys, [b"set/1".as_slice(), b"set/2", b"set/3"]);
    assert_eq!(log.lock().unwrap().len(), 3, "three pages");
}

#[tokio::test]
async fn mget_reads_every_attempted_key_of_the_range_in_batches() {
    let (_d, cluster, log, client) = three_nodes("n1", SetRead::Mget).await;
    let keys: Vec<String> = (0..MGET_BATCH + 3).map(|i| format!("set/{i:06}")).collect();
    for k in &keys {
        client.write(k.as_bytes(), b"1").await.unwrap();
    }
    client.write(b"reg/1", b"1").await.unwrap();
    cluster.data.lock().unwrap().remove(keys[5].as_bytes());
    log.lock().unwrap().clear();
    let reply = client.scan(b"set/", b"set0", 0).await.unwrap();
    assert_eq!(
        reply.pairs.len(),
        keys.len() - 1,
        "the lost key is absent, reg/1 is out of range"
    );
    assert!(reply
        .pairs
        .iter()
        .all(|(k, v)| k.starts_with(b"set/") && v == b"1"));
    let sent = commands(&log);
    assert_eq!(
        sent.iter().filter(|(_, c)| c == "MGET").count(),
        2,
        "{sent:?}"
    );
}

#[tokio::test]
async fn without_mget_the_batch_is_read_by_pipelined_gets() {
    let cluster = Arc::new(Cluster::default());
    let log: Log = Arc::default();
    let inner = ekv_node(cluster.clone(), true);
    // elastickv d9a031d has no MGET.
    let handler: Handler = Arc::new(move |cmd: &[Vec<u8>]| {
        if cmd[0].eq_ignore_ascii_case(b"MGET") {
            error("ERR unsupported command 'MGET'")
        } else {
            inner(cmd)
        }
    });
    let double = resp_double::start("n1", log.clone(), handler).await;
    let node = NodeEndpoint {
        name: "n1".into(),
        addr: double.addr.clone(),
    };
    let client = RedisClient::new(&node, &[], options(SetRead::Mget), Arc::default()).unwrap();
    for k in ["set/1", "set/2", "set/3"] {
        client.write(k.as_bytes(), b"1").await.unwrap();
    }
    cluster.data.lock().unwrap().remove(b"set/2".as_slice());
    for _ in 0..2 {
        let keys: Vec<Vec<u8>> = client
            .scan(b"set/", b"set0", 0)
            .await
            .unwrap()
            .pairs
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, [b"set/1".to_vec(), b"set/3".to_vec()]);
    }
    let sent = commands(&log);
    assert_eq!(
        sent.iter().filter(|(_, c)| c == "MGET").count(),
        1,
        "MGET is not retried once refused: {sent:?}"
    );
    assert_eq!(sent.iter().filter(|(_, c)| c == "GET").count(), 6);
}

#[tokio::test]
async fn an_unreachable_node_is_a_definite_failure() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let node = NodeEndpoint {
        name: "n1".into(),
        addr: closed,
    };
    let client = RedisClient::new(&node, &[], options(SetRead::Scan), Arc::default()).unwrap();
    let err = client.write(b"k", b"1").await.expect_err("nothing listens");
    assert_eq!(
        (err.tag, err.certainty),
        ("unavailable", Certainty::Definite),
        "{err:?}"
    );
}

#[test]
fn match_patterns_use_the_common_prefix_escaped() {
    assert_eq!(match_pattern(b"set/", b"set0"), b"set*");
    assert_eq!(match_pattern(b"hot/000000000003", b"hot0"), b"hot*");
    assert_eq!(match_pattern(b"a*b", b""), b"a\\*b*");
    assert_eq!(match_pattern(b"", b""), b"*");
}

#[test]
fn scan_pages_with_a_bad_cursor_are_bad_responses() {
    let page = Value::Array(vec![Value::BulkString(b"x".to_vec()), Value::Array(vec![])]);
    assert_eq!(scan_page(page).unwrap_err().tag, "bad-response");
    let page = Value::Array(vec![
        Value::BulkString(b"12".to_vec()),
        Value::Array(vec![Value::BulkString(b"k".to_vec())]),
    ]);
    assert_eq!(scan_page(page).unwrap(), (12, vec![b"k".to_vec()]));
}

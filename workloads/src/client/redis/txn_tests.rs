//! The Redis transaction client: one test per outcome rule of [`super::txn`] (on the
//! replies as the `redis` crate hands them over), and the wire shape against a RESP double
//! that queues between `MULTI` and `EXEC` as Redis and elastickv's adapter do
//! (`adapter/redis_txn.go` `multi`/`exec`: `+OK`, `+QUEUED` per command, the results array).

use super::txn::exec_outcome;
use super::*;
use crate::client::resp_double::{self, array, bulk, error, int, Log};
use crate::txn::{Mop, ReadShape};
use serde_json::json;
use Certainty::{Definite, Indeterminate};

fn append(key: &str, value: i64) -> Mop {
    Mop::Append {
        key: key.into(),
        value,
    }
}

fn read(key: &str) -> Mop {
    Mop::Read {
        key: key.into(),
        shape: ReadShape::List,
    }
}

/// An error reply as the crate parses it off the wire.
fn err(text: &str) -> Value {
    let v =
        redis::parse_redis_value(format!("-{text}\r\n").as_bytes()).expect("an error reply parses");
    assert!(matches!(v, Value::ServerError(_)), "{v:?}");
    v
}

/// `MULTI` → OK, one QUEUED per command, then `exec`.
fn replies(n: usize, exec: Value) -> Vec<Value> {
    let mut v = vec![Value::Okay];
    v.extend((0..n).map(|_| Value::SimpleString("QUEUED".into())));
    v.push(exec);
    v
}

fn failure(r: CallResult<Vec<serde_json::Value>>) -> (String, Certainty) {
    let e = r.expect_err("a failure");
    (e.tag.to_string(), e.certainty)
}

#[test]
fn an_exec_array_fills_each_read_with_the_list_it_returned() {
    let mops = [append("la/1", 3), read("la/1")];
    let exec = Value::Array(vec![
        Value::Int(2),
        Value::Array(vec![
            Value::BulkString(b"1".to_vec()),
            Value::BulkString(b"3".to_vec()),
        ]),
    ]);
    assert_eq!(
        exec_outcome(&mops, replies(2, exec)).unwrap(),
        vec![json!(null), json!([1, 3])]
    );
}

#[test]
fn an_error_inside_the_exec_array_makes_a_writing_transaction_indeterminate() {
    let mops = [append("la/1", 3), read("la/1")];
    let exec = Value::Array(vec![
        Value::Int(1),
        err("WRONGTYPE Operation against a key holding the wrong kind of value"),
    ]);
    assert_eq!(
        failure(exec_outcome(&mops, replies(2, exec))),
        ("exec-array-error".into(), Indeterminate)
    );
}

#[test]
fn an_error_inside_the_exec_array_of_a_read_only_transaction_is_definite() {
    let mops = [read("la/1"), read("la/2")];
    let exec = Value::Array(vec![Value::Array(vec![]), err("ERR boom")]);
    assert_eq!(
        failure(exec_outcome(&mops, replies(2, exec))),
        ("exec-array-error".into(), Definite)
    );
}

#[test]
fn execabort_is_definite_because_redis_discarded_the_transaction() {
    let mops = [append("la/1", 3), append("la/2", 4)];
    let mut r = replies(
        2,
        err("EXECABORT Transaction discarded because of previous errors."),
    );
    r[2] = err("ERR wrong number of arguments for 'rpush' command");
    let e = exec_outcome(&mops, r).unwrap_err();
    assert_eq!((e.tag, e.certainty), ("exec-abort", Definite));
    assert!(
        e.message.contains("wrong number of arguments"),
        "the queued error is kept: {}",
        e.message
    );
}

#[test]
fn an_exec_error_reply_follows_the_reply_table() {
    let mops = [append("la/1", 3), append("la/2", 4)];
    let cases = [
        (
            "NOTLEADER etcd raft engine is not leader",
            "not-leader",
            Indeterminate,
        ),
        (
            "ERR leader redis address unknown for raft address 10.0.0.3:50053",
            "leader-unknown",
            Definite,
        ),
        (
            "ERR EXEC read fence route changed after ambiguous dispatch",
            "error-reply",
            Indeterminate,
        ),
    ];
    for (text, tag, certainty) in cases {
        assert_eq!(
            failure(exec_outcome(&mops, replies(2, err(text)))),
            (tag.into(), certainty),
            "{text}"
        );
    }
}

#[test]
fn a_nil_exec_is_a_discarded_transaction() {
    let mops = [append("la/1", 3), read("la/1")];
    assert_eq!(
        failure(exec_outcome(&mops, replies(2, Value::Nil))),
        ("exec-discarded".into(), Definite)
    );
}

#[test]
fn a_refused_multi_is_indeterminate_for_a_writing_transaction() {
    let mops = [append("la/1", 3), read("la/1")];
    let mut r = replies(2, Value::Array(vec![Value::Int(1), Value::Array(vec![])]));
    r[0] = err("ERR MULTI calls can not be nested");
    assert_eq!(
        failure(exec_outcome(&mops, r)),
        ("multi-refused".into(), Indeterminate)
    );
}

#[test]
fn an_exec_answer_that_is_not_the_transactions_is_a_bad_response() {
    let mops = [append("la/1", 3), read("la/1")];
    let short = Value::Array(vec![Value::Int(1)]);
    assert_eq!(
        failure(exec_outcome(&mops, replies(2, short))).1,
        Indeterminate
    );
    let not_a_list = Value::Array(vec![Value::Int(1), Value::Int(7)]);
    assert_eq!(
        failure(exec_outcome(&mops, replies(2, not_a_list))).1,
        Indeterminate
    );
}

/// The double's lists, by key.
type Lists = std::collections::BTreeMap<Vec<u8>, Vec<Vec<u8>>>;
/// The commands queued since MULTI (`None`: not in a transaction).
type Queue = Option<Vec<Vec<Vec<u8>>>>;

/// A node that keeps lists and queues between MULTI and EXEC (one connection per client).
fn list_node(exec_error: Option<&'static str>) -> resp_double::Handler {
    let lists: Arc<Mutex<Lists>> = Arc::default();
    let queue: Arc<Mutex<Queue>> = Arc::default();
    let run = move |lists: &Mutex<Lists>, cmd: &[Vec<u8>]| -> Vec<u8> {
        let mut lists = lists.lock().unwrap();
        match String::from_utf8_lossy(&cmd[0]).to_uppercase().as_str() {
            "RPUSH" => {
                let l = lists.entry(cmd[1].clone()).or_default();
                l.push(cmd[2].clone());
                int(l.len() as i64)
            }
            "LRANGE" => array(
                &lists
                    .get(&cmd[1])
                    .map(|l| l.iter().map(|e| bulk(e)).collect::<Vec<_>>())
                    .unwrap_or_default(),
            ),
            other => error(&format!("ERR unknown command '{other}'")),
        }
    };
    Arc::new(move |cmd: &[Vec<u8>]| {
        let name = String::from_utf8_lossy(&cmd[0]).to_uppercase();
        let mut q = queue.lock().unwrap();
        match (name.as_str(), q.as_mut()) {
            ("MULTI", None) => {
                *q = Some(Vec::new());
                resp_double::ok()
            }
            ("EXEC", Some(_)) => {
                let queued = q.take().unwrap();
                if let Some(e) = exec_error {
                    return error(e);
                }
                let results: Vec<Vec<u8>> = queued.iter().map(|c| run(&lists, c)).collect();
                array(&results)
            }
            (_, Some(queued)) => {
                queued.push(cmd.to_vec());
                b"+QUEUED\r\n".to_vec()
            }
            (_, None) => run(&lists, cmd),
        }
    })
}

async fn client_of(handler: resp_double::Handler) -> (resp_double::RespDouble, Log, RedisClient) {
    let log: Log = Arc::default();
    let double = resp_double::start("n1", log.clone(), handler).await;
    let node = NodeEndpoint {
        name: "n1".into(),
        addr: double.addr.clone(),
    };
    let options = RedisOptions {
        call_timeout: Duration::from_secs(2),
        connect_timeout: Duration::from_millis(500),
        set_read: SetRead::Scan,
    };
    let client =
        RedisClient::new(&node, std::slice::from_ref(&node), options, Arc::default()).unwrap();
    (double, log, client)
}

fn sent(log: &Log) -> Vec<String> {
    log.lock()
        .unwrap()
        .iter()
        .map(|(_, c)| c[0].to_uppercase())
        .collect()
}

#[tokio::test]
async fn one_micro_op_is_sent_bare_and_several_inside_multi_exec() {
    let (_d, log, client) = client_of(list_node(None)).await;
    let t = client.as_txn().expect("the Redis client runs transactions");
    assert_eq!(
        t.transact(&[append("la/1", 1)]).await.unwrap(),
        vec![json!(null)]
    );
    assert_eq!(sent(&log), ["RPUSH"]);
    log.lock().unwrap().clear();
    let got = t
        .transact(&[append("la/1", 2), read("la/1"), read("la/9")])
        .await
        .unwrap();
    assert_eq!(got, vec![json!(null), json!([1, 2]), json!([])]);
    assert_eq!(sent(&log), ["MULTI", "RPUSH", "LRANGE", "LRANGE", "EXEC"]);
}

#[tokio::test]
async fn an_exec_error_over_the_wire_comes_back_classified() {
    let (_d, _log, client) =
        client_of(list_node(Some("NOTLEADER etcd raft engine is not leader"))).await;
    let t = client.as_txn().unwrap();
    let e = t
        .transact(&[append("la/1", 1), append("la/2", 2)])
        .await
        .unwrap_err();
    assert_eq!((e.tag, e.certainty), ("not-leader", Indeterminate));
    let e = t.transact(&[read("la/1"), read("la/2")]).await.unwrap_err();
    assert_eq!(
        e.certainty, Definite,
        "a read-only transaction changed nothing"
    );
}

#[tokio::test]
async fn an_error_inside_exec_over_the_wire_is_seen_not_swallowed() {
    // RPUSH of a key the node refuses inside EXEC: the crate must hand the error back in place.
    let (_d, _log, client) = client_of(list_node(None)).await;
    let t = client.as_txn().unwrap();
    let wrong = Mop::Write {
        key: "la/1".into(),
        value: 1,
    };
    let e = t.transact(&[append("la/1", 1), wrong]).await.unwrap_err();
    assert_eq!(
        (e.tag, e.certainty),
        ("exec-array-error", Indeterminate),
        "{}",
        e.message
    );
}

//! The queue checker: each finding caught by name on a history that shows it, and silent
//! on its near misses (concurrent sends in either order, a redelivery after a failed
//! delete or after the visibility timeout, an indeterminate send never received).

use analysis::checkers::queue::check;
use analysis::history::{FaultEdge, FaultEvent, FaultValue, History, Op, OpType, Process};
use analysis::verdict::{CheckerResult, Validity};
use serde_json::{json, Value};

/// Visibility timeout of every receive here: 10 ms (one step is 1 ms).
const VT: f64 = 0.010;

#[derive(Default)]
struct Q {
    ops: Vec<Op>,
}

impl Q {
    fn push(
        &mut self,
        p: u64,
        kind: OpType,
        f: &str,
        key: Option<&str>,
        value: Value,
    ) -> &mut Self {
        let index = self.ops.len() as u64;
        self.ops.push(Op {
            index,
            kind,
            process: Process::Client(p),
            f: f.into(),
            key: key.map(Into::into),
            value,
            time: index * 1_000_000,
            node: None,
            error: None,
            meta: None,
        });
        self
    }
    fn send(&mut self, p: u64, body: &str, end: OpType) -> &mut Self {
        let g = body.split(':').next().unwrap().to_string();
        self.push(p, OpType::Invoke, "send", Some(&g), json!(body));
        self.push(p, end, "send", Some(&g), json!(body))
    }
    fn send_invoke(&mut self, p: u64, body: &str) -> &mut Self {
        let g = body.split(':').next().unwrap().to_string();
        self.push(p, OpType::Invoke, "send", Some(&g), json!(body))
    }
    fn send_ok(&mut self, p: u64, body: &str) -> &mut Self {
        let g = body.split(':').next().unwrap().to_string();
        self.push(p, OpType::Ok, "send", Some(&g), json!(body))
    }
    fn receive(&mut self, p: u64, bodies: &[&str]) -> &mut Self {
        let got: Vec<Value> = bodies
            .iter()
            .map(|b| json!({"group": b.split(':').next().unwrap(), "body": b}))
            .collect();
        self.push(
            p,
            OpType::Invoke,
            "receive",
            None,
            json!({"visibility_timeout_s": VT}),
        );
        self.push(p, OpType::Ok, "receive", None, json!(got))
    }
    fn delete(&mut self, p: u64, body: &str, end: OpType) -> &mut Self {
        let g = body.split(':').next().unwrap().to_string();
        self.push(p, OpType::Invoke, "delete-message", Some(&g), json!(body));
        self.push(p, end, "delete-message", Some(&g), json!(body))
    }
    /// Time passes (nemesis-free filler entries are not needed: times follow indices).
    fn wait(&mut self, steps: u64) -> &mut Self {
        for _ in 0..steps {
            let index = self.ops.len() as u64;
            self.ops.push(Op {
                index,
                kind: OpType::Info,
                process: Process::Watcher,
                f: "catalog-poll".into(),
                key: None,
                value: Value::Null,
                time: index * 1_000_000,
                node: None,
                error: None,
                meta: None,
            });
        }
        self
    }
    /// The drain: an empty receive a visibility timeout after everything.
    fn drain(&mut self) -> &mut Self {
        self.wait(12).receive(9, &[])
    }
    fn judge(&self) -> CheckerResult {
        check(&History::new(self.ops.clone()))
    }
}

fn kinds(r: &CheckerResult) -> Vec<&str> {
    r.anomalies
        .iter()
        .map(|a| a["kind"].as_str().unwrap())
        .collect()
}

fn assert_caught<'r>(r: &'r CheckerResult, kind: &str) -> &'r Value {
    assert_eq!(r.valid, Validity::Invalid, "{r:?}");
    r.anomalies
        .iter()
        .find(|a| a["kind"] == kind)
        .unwrap_or_else(|| panic!("{kind} not in {:?}", kinds(r)))
}

fn clean() -> Q {
    let mut q = Q::default();
    q.send(0, "g0:0", OpType::Ok).send(0, "g0:1", OpType::Ok);
    q.receive(1, &["g0:0"]).delete(1, "g0:0", OpType::Ok);
    q.receive(1, &["g0:1"]).delete(1, "g0:1", OpType::Ok);
    q
}

#[test]
fn a_clean_history_with_a_drain_is_valid() {
    let mut q = clean();
    q.drain();
    let r = q.judge();
    assert_eq!(r.valid, Validity::Valid, "{r:?}");
    assert_eq!(r.details["drained"], true);
}

#[test]
fn nothing_sent_or_nothing_received_is_unknown() {
    let mut q = Q::default();
    q.receive(1, &[]);
    assert_eq!(q.judge().valid, Validity::Unknown);
    let mut q = Q::default();
    q.send(0, "g0:0", OpType::Ok);
    assert_eq!(q.judge().valid, Validity::Unknown);
}

#[test]
fn lost() {
    let mut q = clean();
    q.send(0, "g1:0", OpType::Ok).drain();
    let w = assert_caught(&q.judge(), "lost").clone();
    assert_eq!(w["message"], "g1:0");
    assert_eq!(
        w["sends"],
        json!([q
            .ops
            .iter()
            .find(|o| o.value == "g1:0" && o.kind == OpType::Ok)
            .unwrap()
            .index])
    );
}

#[test]
fn an_unreceived_message_without_a_drain_is_unknown_not_lost() {
    let mut q = clean();
    q.send(0, "g1:0", OpType::Ok);
    let r = q.judge();
    assert_eq!(r.valid, Validity::Unknown, "{r:?}");
    assert_eq!(r.counts["never-received-count"], 1);
}

#[test]
fn an_indeterminate_send_may_never_arrive() {
    let mut q = clean();
    q.send(0, "g1:0", OpType::Info).drain();
    assert_eq!(q.judge().valid, Validity::Valid);
}

#[test]
fn duplicated_after_an_acknowledged_delete() {
    let mut q = clean();
    q.wait(12).receive(2, &["g0:0"]).drain();
    let w = assert_caught(&q.judge(), "duplicated").clone();
    assert_eq!(w["message"], "g0:0");
}

#[test]
fn a_redelivery_after_a_failed_or_indeterminate_delete_is_no_duplicate() {
    for end in [OpType::Fail, OpType::Info] {
        let mut q = Q::default();
        q.send(0, "g0:0", OpType::Ok);
        q.receive(1, &["g0:0"]).delete(1, "g0:0", end);
        q.wait(12)
            .receive(2, &["g0:0"])
            .delete(2, "g0:0", OpType::Ok);
        q.drain();
        assert_eq!(q.judge().valid, Validity::Valid, "{end:?}: {:?}", q.judge());
    }
}

#[test]
fn a_delete_acknowledged_after_the_visibility_timeout_proves_nothing() {
    let mut q = Q::default();
    q.send(0, "g0:0", OpType::Ok);
    q.receive(1, &["g0:0"])
        .wait(12)
        .delete(1, "g0:0", OpType::Ok);
    q.receive(2, &["g0:0"]).delete(2, "g0:0", OpType::Ok);
    q.drain();
    assert_eq!(q.judge().valid, Validity::Valid, "{:?}", q.judge());
}

#[test]
fn unexpected_never_sent_failed_or_received_before_sent() {
    let mut q = clean();
    q.receive(1, &["g5:0"]);
    q.send(0, "g6:0", OpType::Fail).receive(1, &["g6:0"]);
    q.drain();
    let r = q.judge();
    let whys: Vec<&str> = r
        .anomalies
        .iter()
        .filter(|a| a["kind"] == "unexpected")
        .map(|a| a["why"].as_str().unwrap())
        .collect();
    assert_eq!(whys, ["never sent", "its every send failed"]);
    let mut q = clean();
    q.receive(1, &["g7:0"]).send(0, "g7:0", OpType::Ok).drain();
    assert_eq!(
        assert_caught(&q.judge(), "unexpected")["why"],
        "received before it was sent"
    );
}

#[test]
fn order_within_a_group() {
    let mut q = Q::default();
    q.send(0, "g0:0", OpType::Ok).send(0, "g0:1", OpType::Ok);
    q.receive(1, &["g0:1"]).delete(1, "g0:1", OpType::Ok);
    q.receive(1, &["g0:0"]).delete(1, "g0:0", OpType::Ok);
    q.drain();
    let w = assert_caught(&q.judge(), "order").clone();
    assert_eq!(
        (w["message"].as_str(), w["before"].as_str()),
        (Some("g0:1"), Some("g0:0"))
    );
    // within one batch too
    let mut q = Q::default();
    q.send(0, "g0:0", OpType::Ok).send(0, "g0:1", OpType::Ok);
    q.receive(1, &["g0:1", "g0:0"]).drain();
    assert_caught(&q.judge(), "order");
}

#[test]
fn concurrent_sends_may_be_delivered_in_either_order() {
    let mut q = Q::default();
    q.send_invoke(0, "g0:0")
        .send_invoke(3, "g0:1")
        .send_ok(3, "g0:1")
        .send_ok(0, "g0:0");
    q.receive(1, &["g0:1", "g0:0"])
        .delete(1, "g0:1", OpType::Ok)
        .delete(1, "g0:0", OpType::Ok);
    q.drain();
    assert_eq!(q.judge().valid, Validity::Valid, "{:?}", q.judge());
}

#[test]
fn different_groups_have_no_order() {
    let mut q = Q::default();
    q.send(0, "g0:0", OpType::Ok).send(0, "g1:0", OpType::Ok);
    q.receive(1, &["g1:0", "g0:0"])
        .delete(1, "g1:0", OpType::Ok)
        .delete(1, "g0:0", OpType::Ok);
    q.drain();
    assert_eq!(q.judge().valid, Validity::Valid);
}

#[test]
fn witnesses_name_the_faults_in_flight() {
    let mut q = Q::default();
    let mut start = FaultEvent::new(
        FaultEdge::Start,
        "partition",
        FaultValue::new(vec!["n2".into()]),
    )
    .to_op();
    start.index = 0;
    q.ops.push(start);
    q.send(0, "g0:0", OpType::Ok).send(0, "g0:1", OpType::Ok);
    q.receive(1, &["g0:1", "g0:0"]).drain();
    let w = assert_caught(&q.judge(), "order").clone();
    assert_eq!(w["faults"][0]["kind"], "partition");
}

#[test]
fn a_completion_without_an_invoke_is_unknown_with_the_op_named() {
    let mut q = Q::default();
    q.push(0, OpType::Ok, "send", Some("g0"), json!("g0:0"));
    let r = q.judge();
    assert_eq!(r.valid, Validity::Unknown);
    assert!(r.reason.unwrap().contains("op 0"));
}

//! Set-full checker on hand-built histories: each outcome and anomaly, and the verdict it
//! leads to.

use analysis::checkers::set_full::{check, SetFullOptions};
use analysis::history::{History, Op, OpType, Process};
use analysis::verdict::Validity;
use serde_json::{json, Value};

/// Builds histories op by op; index = position, time = 10 × position.
#[derive(Default)]
struct H {
    ops: Vec<Op>,
}

impl H {
    fn op(&mut self, kind: OpType, p: u64, f: &str, key: Option<&str>, value: Value) -> &mut Self {
        let index = self.ops.len() as u64;
        self.ops.push(Op {
            index,
            kind,
            process: Process::Client(p),
            f: f.into(),
            key: key.map(String::from).map(Into::into),
            value,
            time: index * 10,
            node: None,
            error: None,
            meta: None,
        });
        self
    }
    fn add(&mut self, p: u64, v: i64, done: OpType) -> &mut Self {
        self.op(OpType::Invoke, p, "add", None, json!(v))
            .op(done, p, "add", None, json!(v))
    }
    fn read(&mut self, p: u64, seen: Value) -> &mut Self {
        self.op(OpType::Invoke, p, "read-set", None, Value::Null)
            .op(OpType::Ok, p, "read-set", None, seen)
    }
    fn history(&self) -> History {
        History::new(self.ops.clone())
    }
}

fn run(h: &H) -> analysis::verdict::CheckerResult {
    check(&h.history(), &SetFullOptions::default())
}

fn kinds(r: &analysis::verdict::CheckerResult) -> Vec<String> {
    r.anomalies
        .iter()
        .map(|a| a["kind"].as_str().unwrap_or("?").to_string())
        .collect()
}

#[test]
fn every_acknowledged_add_read_back_is_valid() {
    let mut h = H::default();
    h.add(0, 1, OpType::Ok)
        .add(1, 2, OpType::Ok)
        .read(2, json!([1, 2]));
    let r = run(&h);
    assert_eq!(r.valid, Validity::Valid, "{r:?}");
    assert_eq!(r.counts["stable-count"], 2);
    assert_eq!(r.counts["lost-count"], 0);
    assert!(r.details["stable-latencies-ms"].is_object());
}

#[test]
fn an_element_missing_from_a_later_read_is_lost_and_named() {
    let mut h = H::default();
    h.add(0, 1, OpType::Ok)
        .add(0, 2, OpType::Ok)
        .read(1, json!([1, 2]))
        .read(1, json!([2]));
    let r = run(&h);
    assert_eq!(r.valid, Validity::Invalid);
    assert_eq!(r.counts["lost-count"], 1);
    let a = &r.anomalies[0];
    assert_eq!(a["kind"], "lost");
    assert_eq!(a["element"], json!(1));
    assert_eq!(a["add"], json!(0), "add invoke index");
    assert_eq!(a["last-present-read"], json!(4));
    assert_eq!(a["last-absent-read"], json!(6));
    assert!(r.details["lost-latencies-ms"].is_object());
    assert!(
        r.reason.as_deref().unwrap_or("").contains("1 lost"),
        "{:?}",
        r.reason
    );
}

#[test]
fn acknowledged_but_never_seen_by_a_later_read_is_lost_with_zero_latency() {
    let mut h = H::default();
    h.add(0, 1, OpType::Ok).read(1, json!([]));
    let r = run(&h);
    assert_eq!(r.counts["lost-count"], 1);
    assert_eq!(r.anomalies[0]["lost-latency-ms"], json!(0.0));
}

#[test]
fn a_read_concurrent_with_the_add_that_misses_it_is_not_loss() {
    let mut h = H::default();
    h.op(OpType::Invoke, 1, "read-set", None, Value::Null)
        .add(0, 1, OpType::Ok)
        .op(OpType::Ok, 1, "read-set", None, json!([]));
    let r = run(&h);
    assert_eq!(r.counts["lost-count"], 0);
    assert_eq!(r.counts["never-read-count"], 1);
    assert_eq!(r.valid, Validity::Unknown, "nothing was stably read: {r:?}");
}

#[test]
fn stale_elements_are_counted_and_invalid_only_when_linearizable() {
    let mut h = H::default();
    h.add(0, 1, OpType::Ok)
        .read(1, json!([]))
        .read(1, json!([1]));
    let r = run(&h);
    assert_eq!(r.valid, Validity::Valid);
    assert_eq!(r.counts["stale-count"], 1);
    assert_eq!(r.details["worst-stale"][0]["element"], json!(1));
    let strict = check(&h.history(), &SetFullOptions { linearizable: true });
    assert_eq!(strict.valid, Validity::Invalid);
    assert!(kinds(&strict).contains(&"stale".to_string()));
}

#[test]
fn an_element_twice_in_one_read_is_duplicated() {
    let mut h = H::default();
    h.add(0, 1, OpType::Ok).read(1, json!([1, 1, 1]));
    let r = run(&h);
    assert_eq!(r.valid, Validity::Invalid);
    assert_eq!(r.counts["duplicated-count"], 1);
    assert_eq!(r.anomalies[0]["kind"], "duplicated");
    assert_eq!(r.anomalies[0]["copies"], json!(3));
    assert_eq!(r.anomalies[0]["read"], json!(3));
}

#[test]
fn elements_never_attempted_or_read_before_their_add_are_unexpected() {
    let mut h = H::default();
    h.read(1, json!([7]))
        .add(0, 7, OpType::Ok)
        .read(1, json!([7, 9]));
    let r = run(&h);
    assert_eq!(r.valid, Validity::Invalid);
    assert_eq!(r.counts["unexpected-count"], 2);
    let whys: Vec<&str> = r
        .anomalies
        .iter()
        .filter_map(|a| a["why"].as_str())
        .collect();
    assert_eq!(whys, ["read before its add was invoked", "never added"]);
}

#[test]
fn crashed_adds_are_recovered_when_seen_and_never_read_otherwise() {
    let mut h = H::default();
    h.add(0, 1, OpType::Info)
        .add(2, 2, OpType::Info)
        .read(1, json!([1]))
        .add(3, 3, OpType::Ok)
        .read(1, json!([1, 3]));
    let r = run(&h);
    assert_eq!(r.valid, Validity::Valid, "{r:?}");
    assert_eq!(r.counts["recovered-count"], 1);
    assert_eq!(r.counts["never-read-count"], 1);
    assert_eq!(r.details["recovered"], json!([1]));
}

#[test]
fn a_failed_add_that_shows_up_is_an_anomaly() {
    let mut h = H::default();
    h.add(0, 1, OpType::Fail)
        .add(0, 2, OpType::Ok)
        .read(1, json!([1, 2]));
    let r = run(&h);
    assert_eq!(r.valid, Validity::Invalid);
    assert!(kinds(&r).contains(&"failed-add-observed".to_string()));
}

#[test]
fn scans_speak_only_about_keys_in_their_range() {
    let mut h = H::default();
    h.op(OpType::Invoke, 0, "add", Some("a1"), json!("v"))
        .op(OpType::Ok, 0, "add", Some("a1"), json!("v"))
        .op(OpType::Invoke, 0, "add", Some("b1"), json!("v"))
        .op(OpType::Ok, 0, "add", Some("b1"), json!("v"))
        // Scan of [a, b): sees a1; says nothing about b1.
        .op(
            OpType::Invoke,
            1,
            "scan",
            None,
            json!({"start": "a", "end": "b"}),
        )
        .op(OpType::Ok, 1, "scan", None, json!(["a1"]))
        // Unbounded scan from b: sees b1.
        .op(
            OpType::Invoke,
            1,
            "scan",
            None,
            json!({"start": "b", "end": ""}),
        )
        .op(OpType::Ok, 1, "scan", None, json!(["b1"]));
    let r = run(&h);
    assert_eq!(r.valid, Validity::Valid, "{r:?}");
    assert_eq!(r.counts["stable-count"], 2);

    // A later scan of [a, b) that misses a1 loses it; b1 is untouched.
    h.op(
        OpType::Invoke,
        1,
        "scan",
        None,
        json!({"start": "a", "end": "b"}),
    )
    .op(OpType::Ok, 1, "scan", None, json!([]));
    let r = run(&h);
    assert_eq!(r.counts["lost-count"], 1);
    assert_eq!(r.anomalies[0]["element"], json!("a1"));
}

#[test]
fn a_scan_returning_a_key_outside_its_range_is_invalid() {
    let mut h = H::default();
    h.op(OpType::Invoke, 0, "add", Some("z"), json!(1))
        .op(OpType::Ok, 0, "add", Some("z"), json!(1))
        .op(
            OpType::Invoke,
            1,
            "scan",
            None,
            json!({"start": "a", "end": "b"}),
        )
        .op(OpType::Ok, 1, "scan", None, json!(["z"]));
    let r = run(&h);
    assert_eq!(r.valid, Validity::Invalid);
    assert!(kinds(&r).contains(&"scan-out-of-range".to_string()));
}

#[test]
fn malformed_reads_make_the_result_unknown_naming_the_op() {
    let mut h = H::default();
    h.add(0, 1, OpType::Ok).read(1, json!({"not": "an array"}));
    let r = run(&h);
    assert_eq!(r.valid, Validity::Unknown);
    assert!(
        r.reason.as_deref().unwrap_or("").starts_with("op 3: "),
        "{:?}",
        r.reason
    );

    let mut h = H::default();
    h.op(OpType::Invoke, 1, "scan", None, json!(["a", "b"])).op(
        OpType::Ok,
        1,
        "scan",
        None,
        json!([]),
    );
    assert!(run(&h)
        .reason
        .unwrap_or_default()
        .contains("{\"start\": key"));
}

#[test]
fn register_ops_in_a_mixed_history_are_ignored() {
    let mut h = H::default();
    h.op(OpType::Invoke, 5, "write", Some("k"), json!(3))
        .add(0, 1, OpType::Ok);
    h.op(OpType::Ok, 5, "write", Some("k"), json!(3))
        .read(1, json!([1]));
    assert_eq!(run(&h).valid, Validity::Valid);
}

#[test]
fn a_scan_returning_register_keys_does_not_call_them_unexpected() {
    let mut h = H::default();
    h.op(OpType::Invoke, 5, "write", Some("celebrity"), json!(3))
        .op(OpType::Ok, 5, "write", Some("celebrity"), json!(3))
        .op(OpType::Invoke, 0, "add", Some("hot/1"), json!(1))
        .op(OpType::Ok, 0, "add", Some("hot/1"), json!(1))
        .op(
            OpType::Invoke,
            1,
            "scan",
            None,
            json!({"start": "", "end": ""}),
        )
        .op(
            OpType::Ok,
            1,
            "scan",
            None,
            json!(["celebrity", "hot/1", "stranger"]),
        );
    let r = run(&h);
    assert_eq!(r.counts["unexpected-count"], 1, "{r:?}");
    assert_eq!(r.anomalies[0]["element"], json!("stranger"));
}

#[test]
fn an_add_completion_belongs_to_its_invoke_whatever_its_value() {
    let mut h = H::default();
    h.op(OpType::Invoke, 0, "add", Some("a"), json!(1))
        .op(OpType::Ok, 0, "add", None, Value::Null)
        .op(
            OpType::Invoke,
            1,
            "scan",
            None,
            json!({"start": "a", "end": "b"}),
        )
        .op(OpType::Ok, 1, "scan", None, json!([]));
    let r = run(&h);
    assert_eq!(r.counts["acknowledged-count"], 1);
    assert_eq!(
        r.counts["lost-count"], 1,
        "acknowledged, then missing from a later scan"
    );
}

#[test]
fn nothing_read_is_unknown_not_valid() {
    let mut h = H::default();
    h.add(0, 1, OpType::Ok);
    let r = run(&h);
    assert_eq!(r.valid, Validity::Unknown);
    assert!(r
        .reason
        .unwrap_or_default()
        .contains("no successful read-set or scan"));
}

// Adds of one element merge: acknowledged if any ended `ok`, indeterminate if any ended
// `info` or never completed, failed only if every one failed.

#[test]
fn a_failed_add_then_an_acknowledged_re_add_that_is_read_is_valid() {
    let mut h = H::default();
    h.add(0, 1, OpType::Fail)
        .add(1, 1, OpType::Ok)
        .read(2, json!([1]));
    let r = run(&h);
    assert_eq!(r.valid, Validity::Valid, "{r:?}");
    assert_eq!(r.counts["failed-add-observed-count"], 0);
    assert_eq!(r.counts["acknowledged-count"], 1);
    assert_eq!(r.counts["re-add-count"], 1);
}

#[test]
fn an_indeterminate_add_then_an_acknowledged_re_add_missing_from_later_reads_is_lost() {
    let mut h = H::default();
    h.add(0, 1, OpType::Info)
        .add(1, 1, OpType::Ok)
        .read(2, json!([]))
        .read(2, json!([]));
    let r = run(&h);
    assert_eq!(r.valid, Validity::Invalid, "{r:?}");
    assert_eq!(r.counts["lost-count"], 1);
    assert_eq!(r.counts["acknowledged-count"], 1);
    let lost = &r.anomalies[0];
    assert_eq!(lost["kind"], "lost");
    assert_eq!(
        lost["known"],
        json!(3),
        "known from the acknowledged re-add's completion"
    );
    assert_eq!(lost["add-completion"], json!({"type": "ok", "index": 3}));
}

#[test]
fn an_element_whose_every_add_failed_and_that_is_read_is_failed_add_observed() {
    let mut h = H::default();
    h.add(0, 1, OpType::Fail)
        .add(1, 1, OpType::Fail)
        .read(2, json!([1]));
    let r = run(&h);
    assert_eq!(r.valid, Validity::Invalid, "{r:?}");
    assert_eq!(r.counts["failed-add-observed-count"], 1);
    assert_eq!(
        r.anomalies[0]["add-completion"],
        json!({"type": "fail", "index": 1})
    );
}

#[test]
fn a_failed_add_then_an_indeterminate_or_unfinished_re_add_that_is_read_is_recovered() {
    let mut h = H::default();
    h.add(0, 1, OpType::Fail)
        .add(1, 1, OpType::Info)
        .read(2, json!([1]));
    let r = run(&h);
    assert_eq!(r.valid, Validity::Valid, "{r:?}");
    assert_eq!(r.counts["recovered-count"], 1);

    let mut h = H::default();
    h.add(0, 1, OpType::Fail)
        .op(OpType::Invoke, 1, "add", None, json!(1))
        .read(2, json!([1]));
    let r = run(&h);
    assert_eq!(
        r.valid,
        Validity::Valid,
        "a re-add that never completed may have taken effect: {r:?}"
    );
    assert_eq!(r.counts["recovered-count"], 1);
}

#[test]
fn a_read_that_saw_an_element_before_any_add_of_it_that_could_succeed_began_is_failed_add_observed()
{
    // The read completed while the only add invoked so far had failed; the later
    // acknowledged re-add cannot explain it.
    let mut h = H::default();
    h.add(0, 1, OpType::Fail)
        .read(2, json!([1]))
        .add(1, 1, OpType::Ok)
        .read(2, json!([1]));
    let r = run(&h);
    assert_eq!(r.valid, Validity::Invalid, "{r:?}");
    assert_eq!(r.counts["failed-add-observed-count"], 1);
}

//! Exactness of the unique-value fast path: on thousands of random small histories with
//! unique written values (concurrency up to 8, crashed and never-completed ops, stale
//! reads, lost writes, lying cas outcomes, values read before they are written or never
//! written), its verdict equals the brute-force oracle's and the search's; and its
//! witnesses name the ops that force the violation.

use analysis::checkers::linearizable::{check, LinearizableOptions, Model, NullReads};
use analysis::history::{History, Op, OpType, Process};
use analysis::verdict::{CheckerResult, Validity};
use proptest::prelude::*;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde_json::{json, Value};
use std::time::Duration;

mod lin_support;
use lin_support::Rec;

/// How a random history is made.
#[derive(Debug, Clone, Copy)]
struct Shape {
    ops: usize,
    procs: usize,
    /// Probability that an op is tampered with (stale or invented read, lost write, a cas
    /// outcome that lies).
    fault: f64,
    cas: bool,
    initial_null: bool,
    /// Reads, appends and puts of unique strings (the kv model) instead of register ops.
    appends: bool,
    /// With `appends`: puts and appends draw their texts from a pool of [`POOL`], so a text
    /// is put or appended more than once, by puts and appends alike.
    repeats: bool,
}

/// Distinct texts of a history with `repeats`.
const POOL: i64 = 6;

/// A process's op in flight: its record and the read value or outcome decided when it
/// took effect.
#[derive(Clone, Copy)]
enum Phase {
    Idle,
    Invoked(usize),
    Applied(usize),
    Dead,
}

struct Sim {
    rng: Xoshiro256PlusPlus,
    shape: Shape,
    state: Value,
    /// Every value written so far, the initial one first.
    seen: Vec<Value>,
    next_value: i64,
    ops: Vec<Op>,
    recs: Vec<Rec>,
}

impl Sim {
    fn push(&mut self, kind: OpType, p: usize, f: &str, value: Value) -> usize {
        let index = self.ops.len();
        self.ops.push(Op {
            index: index as u64,
            kind,
            process: Process::Client(p as u64),
            f: f.into(),
            key: None,
            value,
            time: index as u64,
            node: None,
            error: None,
            meta: None,
        });
        index
    }

    /// Some value that is wrong now: an older one, the next one to be written, or one
    /// nobody ever writes.
    fn wrong_value(&mut self) -> Value {
        let old = self.seen[self.rng.random_range(0..self.seen.len())].clone();
        match (self.rng.random_range(0..3), self.shape.appends) {
            (0, _) => old,
            (1, false) => json!(self.next_value),
            (1, true) => concat(&old, &append_text(self.next_value)),
            (_, false) => json!(1000 + self.rng.random_range(0..3)),
            (_, true) => concat(&old, "x"),
        }
    }

    fn invoke(&mut self, p: usize) -> usize {
        let f = match self.rng.random_range(0..10) {
            0..4 => "read",
            4 if self.shape.appends => "write",
            _ if self.shape.appends => "append",
            4..7 if self.shape.cas => "cas",
            _ => "write",
        };
        let value = match f {
            "read" => Value::Null,
            "write" | "append" if self.shape.repeats => {
                json!(append_text(self.rng.random_range(1..=POOL)))
            }
            "write" if self.shape.appends => json!(format!("p{}q", self.take_value())),
            "write" => json!(self.take_value()),
            "append" => json!(append_text(self.take_value())),
            _ => {
                let expected = if self.rng.random_bool(0.7) {
                    self.state.clone()
                } else {
                    self.wrong_value()
                };
                json!([expected, self.take_value()])
            }
        };
        let call = self.push(OpType::Invoke, p, f, value.clone());
        self.recs.push(Rec {
            f,
            value,
            outcome: OpType::Invoke,
            read: Value::Null,
            call,
            ret: usize::MAX,
        });
        self.recs.len() - 1
    }

    fn take_value(&mut self) -> i64 {
        self.next_value += 1;
        self.next_value - 1
    }

    /// The op takes effect (or not) now; returns false if its process dies with it.
    fn apply(&mut self, r: usize) -> bool {
        let faulty = self.rng.random_bool(self.shape.fault);
        let crashed = self.rng.random_bool(0.15);
        let rec = self.recs[r].clone();
        let (outcome, read) = match rec.f {
            "read" if faulty => (OpType::Ok, self.wrong_value()),
            "read" => (OpType::Ok, self.state.clone()),
            "write" | "append" => {
                if !faulty && (!crashed || self.rng.random_bool(0.5)) {
                    let new = if rec.f == "append" {
                        concat(&self.state, rec.value.as_str().unwrap())
                    } else {
                        rec.value.clone()
                    };
                    self.set(new);
                }
                (OpType::Ok, rec.value.clone())
            }
            _ => {
                let matches = rec.value[0] == self.state;
                if matches && (!crashed || self.rng.random_bool(0.5)) {
                    self.set(rec.value[1].clone());
                }
                (
                    if matches != faulty {
                        OpType::Ok
                    } else {
                        OpType::Fail
                    },
                    rec.value.clone(),
                )
            }
        };
        let (outcome, read) = if crashed {
            (OpType::Info, rec.value.clone())
        } else {
            (outcome, read)
        };
        self.recs[r].outcome = outcome;
        self.recs[r].read = read;
        if crashed && self.rng.random_bool(0.3) {
            // The process dies: the op never completes.
            self.recs[r].outcome = OpType::Info;
            return false;
        }
        true
    }

    fn set(&mut self, v: Value) {
        self.seen.push(v.clone());
        self.state = v;
    }

    fn complete(&mut self, p: usize, r: usize) {
        let (outcome, f, read) = (
            self.recs[r].outcome,
            self.recs[r].f,
            self.recs[r].read.clone(),
        );
        self.recs[r].ret = self.push(outcome, p, f, read);
    }
}

fn append_text(n: i64) -> String {
    format!("x{n}y")
}

/// `value` (a string, or absent) with `suffix` appended.
fn concat(value: &Value, suffix: &str) -> Value {
    Value::String(format!("{}{suffix}", value.as_str().unwrap_or("")))
}

/// A random history of a register store with unique written values, and its records.
fn unique_history(seed: u64, shape: Shape) -> (History, Vec<Rec>, Value) {
    let initial = match (shape.initial_null, shape.appends) {
        (true, _) => Value::Null,
        (false, true) => json!(""),
        (false, false) => json!(0),
    };
    let mut sim = Sim {
        rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        shape,
        state: initial.clone(),
        seen: vec![initial.clone()],
        next_value: 1,
        ops: Vec::new(),
        recs: Vec::new(),
    };
    let mut phases = vec![Phase::Idle; shape.procs];
    let mut started = 0;
    loop {
        let live: Vec<usize> = (0..shape.procs)
            .filter(|&p| match phases[p] {
                Phase::Idle => started < shape.ops,
                Phase::Dead => false,
                _ => true,
            })
            .collect();
        if live.is_empty() {
            break;
        }
        let p = live[sim.rng.random_range(0..live.len())];
        phases[p] = match phases[p] {
            Phase::Idle => {
                started += 1;
                Phase::Invoked(sim.invoke(p))
            }
            Phase::Invoked(r) if sim.apply(r) => Phase::Applied(r),
            Phase::Invoked(_) => Phase::Dead,
            Phase::Applied(r) => {
                sim.complete(p, r);
                Phase::Idle
            }
            Phase::Dead => Phase::Dead,
        };
    }
    (History::new(sim.ops), sim.recs, initial)
}

fn run(history: &History, shape: &Shape, initial: &Value, fast_path: bool) -> CheckerResult {
    let model = if shape.appends {
        Model::Kv
    } else {
        Model::CasRegister
    };
    // The search gets little time: where it runs out (`unknown`) there is nothing to compare.
    let per_key_time = Duration::from_secs(1);
    let opts = LinearizableOptions {
        model,
        initial: initial.clone(),
        null_reads: NullReads::Absent,
        fast_path,
        per_key_time,
        ..Default::default()
    };
    check(history, &opts)
}

fn shapes(max_ops: usize) -> impl Strategy<Value = Shape> {
    let fault = prop_oneof![Just(0.0), Just(0.05), Just(0.3)];
    (
        1..max_ops,
        1usize..9,
        fault,
        any::<bool>(),
        any::<bool>(),
        prop::bool::weighted(0.3),
    )
        .prop_map(|(ops, procs, fault, cas, initial_null, appends)| Shape {
            ops,
            procs,
            fault,
            cas,
            initial_null,
            appends,
            repeats: false,
        })
}

/// kv histories whose put and append texts repeat.
fn repeat_shapes(max_ops: usize) -> impl Strategy<Value = Shape> {
    shapes(max_ops).prop_map(|s| Shape {
        appends: true,
        repeats: true,
        ..s
    })
}

fn lines(history: &History) -> Vec<String> {
    history
        .ops
        .iter()
        .map(|o| serde_json::to_string(o).unwrap())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn fast_path_matches_the_brute_force_oracle(seed in any::<u64>(), shape in shapes(10)) {
        let (history, recs, initial) = unique_history(seed, shape);
        let got = run(&history, &shape, &initial, true);
        prop_assert_eq!(got.counts["keys-wgl"], 0, "unique values always take the fast path");
        if got.counts["ops-checked"] == 0 {
            return Ok(());
        }
        let want = if lin_support::linearizable(&recs, &initial) { Validity::Valid } else { Validity::Invalid };
        prop_assert_eq!(got.valid, want, "{:?}\n{:#?}", shape, lines(&history));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Repeated texts: the fast path decides a key only when real time names every op a
    /// read shows; its verdict (or the search's, where it falls back) is the oracle's.
    #[test]
    fn repeated_kv_texts_match_the_brute_force_oracle(seed in any::<u64>(), shape in repeat_shapes(10)) {
        let (history, recs, initial) = unique_history(seed, shape);
        let got = run(&history, &shape, &initial, true);
        if got.counts["ops-checked"] == 0 || got.valid == Validity::Unknown {
            return Ok(());
        }
        let want = if lin_support::linearizable(&recs, &initial) { Validity::Valid } else { Validity::Invalid };
        prop_assert_eq!(got.valid, want, "{:?}\n{:#?}", shape, lines(&history));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn repeated_kv_texts_give_the_search_verdict(seed in any::<u64>(), shape in repeat_shapes(40)) {
        let (history, _, initial) = unique_history(seed, shape);
        let fast = run(&history, &shape, &initial, true);
        let search = run(&history, &shape, &initial, false);
        if fast.counts["ops-checked"] == 0 || search.valid == Validity::Unknown || fast.valid == Validity::Unknown {
            return Ok(());
        }
        prop_assert_eq!(fast.valid, search.valid, "{:?}\n{:#?}", shape, lines(&history));
        prop_assert_eq!(fast.anomalies.len(), search.anomalies.len());
    }
}

/// The property tests above would pass with a fast path that always falls back; this
/// shows it decides repeated texts: over fixed seeds, keys both valid and invalid.
#[test]
fn repeated_kv_texts_are_often_decided_by_the_fast_path() {
    let (mut valid, mut invalid, mut fallback) = (0, 0, 0);
    for seed in 0..400 {
        let shape = Shape {
            ops: 12,
            procs: 3,
            fault: 0.05,
            cas: false,
            initial_null: false,
            appends: true,
            repeats: true,
        };
        let (history, _, initial) = unique_history(seed, shape);
        let r = run(&history, &shape, &initial, true);
        fallback += r.counts["keys-wgl"];
        if r.counts["keys-fast-path"] == 1 {
            match r.valid {
                Validity::Valid => valid += 1,
                _ => invalid += 1,
            }
        }
    }
    eprintln!("fast path: {valid} valid, {invalid} invalid; search: {fallback}");
    assert!(
        valid >= 40 && invalid >= 40,
        "fast path: {valid} valid, {invalid} invalid; search: {fallback}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn fast_path_matches_the_search(seed in any::<u64>(), shape in shapes(40)) {
        let (history, _, initial) = unique_history(seed, shape);
        let fast = run(&history, &shape, &initial, true);
        let search = run(&history, &shape, &initial, false);
        prop_assert_eq!(fast.counts["keys-wgl"], 0);
        prop_assert_eq!(search.counts["keys-fast-path"], 0);
        if fast.counts["ops-checked"] == 0 || search.valid == Validity::Unknown {
            // Nothing to check, or the search ran out of time (appends that no read saw
            // make it try their orders); the brute-force test covers such shapes.
            return Ok(());
        }
        prop_assert_eq!(fast.valid, search.valid, "{:?}\n{:#?}", shape, lines(&history));
        prop_assert_eq!(fast.anomalies.len(), search.anomalies.len());
    }
}

/// A hand-written history: `(process, type, f, value)` rows, one position each.
fn history(rows: &[(u64, &str, &str, Value)]) -> History {
    let ops = rows
        .iter()
        .enumerate()
        .map(|(i, (p, kind, f, value))| Op {
            index: i as u64,
            kind: serde_json::from_value(json!(kind)).unwrap(),
            process: Process::Client(*p),
            f: (*f).into(),
            key: Some("k".into()),
            value: value.clone(),
            time: 100 * i as u64,
            node: None,
            error: None,
            meta: None,
        })
        .collect();
    History::new(ops)
}

fn indices(ops: &Value) -> Vec<u64> {
    ops.as_array()
        .unwrap()
        .iter()
        .map(|o| o["index"].as_u64().unwrap())
        .collect()
}

#[test]
fn a_stale_read_names_the_write_it_saw_and_the_write_that_overwrote_it() {
    let n = Value::Null;
    let h = history(&[
        (0, "invoke", "write", json!(1)),
        (0, "ok", "write", json!(1)),
        (1, "invoke", "write", json!(2)),
        (1, "ok", "write", json!(2)),
        (2, "invoke", "read", n.clone()),
        (2, "ok", "read", json!(1)),
    ]);
    let r = check(&h, &LinearizableOptions::default());
    assert_eq!(r.valid, Validity::Invalid);
    assert_eq!(r.counts["keys-fast-path"], 1);
    let w = &r.anomalies[0];
    assert_eq!(w["engine"], "fast-path");
    assert_eq!(w["op"]["index"], 4, "the stale read is the culprit");
    assert_eq!(
        indices(&w["prefix"]),
        vec![0, 2],
        "the write it saw, the write that overwrote it"
    );
    assert_eq!(w["op"]["completion_time"], 500);
    assert!(
        w["explanation"]
            .as_str()
            .unwrap()
            .contains("op index 2 (write 2)"),
        "{}",
        w["explanation"]
    );
}

#[test]
fn reads_of_failed_or_future_writes_and_double_cas_are_violations() {
    let n = Value::Null;
    let failed = history(&[
        (0, "invoke", "write", json!(1)),
        (0, "fail", "write", json!(1)),
        (1, "invoke", "read", n.clone()),
        (1, "ok", "read", json!(1)),
    ]);
    let future = history(&[
        (1, "invoke", "read", n.clone()),
        (1, "ok", "read", json!(1)),
        (0, "invoke", "write", json!(1)),
        (0, "ok", "write", json!(1)),
    ]);
    let double_cas = history(&[
        (0, "invoke", "write", json!(1)),
        (0, "ok", "write", json!(1)),
        (1, "invoke", "cas", json!([1, 2])),
        (2, "invoke", "cas", json!([1, 3])),
        (1, "ok", "cas", json!([1, 2])),
        (2, "ok", "cas", json!([1, 3])),
    ]);
    for (h, culprit) in [(failed, 2), (future, 0), (double_cas, 3)] {
        let r = check(&h, &LinearizableOptions::default());
        assert_eq!(
            (r.valid, r.counts["keys-fast-path"]),
            (Validity::Invalid, 1)
        );
        assert_eq!(
            r.anomalies[0]["op"]["index"], culprit,
            "{:#}",
            r.anomalies[0]
        );
        assert_eq!(
            check(
                &h,
                &LinearizableOptions {
                    fast_path: false,
                    ..Default::default()
                }
            )
            .valid,
            Validity::Invalid
        );
    }
}

#[test]
fn an_observed_crashed_write_took_effect_and_an_unobserved_one_constrains_nothing() {
    let n = Value::Null;
    let h = history(&[
        (0, "invoke", "write", json!(1)),
        (0, "info", "write", json!(1)),
        (1, "invoke", "write", json!(2)),
        (1, "info", "write", json!(2)),
        (2, "invoke", "read", n.clone()),
        (2, "ok", "read", json!(1)),
        (2, "invoke", "read", n.clone()),
        (2, "ok", "read", json!(1)),
    ]);
    let r = check(&h, &LinearizableOptions::default());
    assert_eq!((r.valid, r.counts["keys-fast-path"]), (Validity::Valid, 1));
}

#[test]
fn a_value_written_twice_falls_back_to_the_search_and_says_why() {
    let n = Value::Null;
    let h = history(&[
        (0, "invoke", "write", json!(1)),
        (0, "ok", "write", json!(1)),
        (0, "invoke", "write", json!(1)),
        (0, "ok", "write", json!(1)),
        (1, "invoke", "read", n.clone()),
        (1, "ok", "read", json!(1)),
    ]);
    let r = check(&h, &LinearizableOptions::default());
    assert_eq!(
        (r.valid, r.counts["keys-wgl"], r.counts["keys-fast-path"]),
        (Validity::Valid, 1, 0)
    );
    let why = r.details["keys"][0]["fast-path-skipped"].as_str().unwrap();
    assert!(why.contains("written more than once"), "{why}");
}

fn kv_opts() -> LinearizableOptions {
    LinearizableOptions {
        model: Model::Kv,
        initial: json!(""),
        ..Default::default()
    }
}

#[test]
fn a_kv_read_from_a_replaced_put_names_the_put_and_its_replacement() {
    let h = history(&[
        (0, "invoke", "put", json!("x1y")),
        (0, "ok", "put", json!("x1y")),
        (1, "invoke", "put", json!("x2y")),
        (1, "ok", "put", json!("x2y")),
        (2, "invoke", "get", Value::Null),
        (2, "ok", "get", json!("x1yx3y")),
        (3, "invoke", "append", json!("x3y")),
        (3, "ok", "append", json!("x3y")),
    ]);
    let r = check(&h, &kv_opts());
    assert_eq!(
        (r.valid, r.counts["keys-fast-path"]),
        (Validity::Invalid, 1)
    );
    let w = &r.anomalies[0];
    assert_eq!(w["op"]["index"], 4, "the read is the culprit");
    assert_eq!(
        indices(&w["prefix"]),
        vec![0, 2],
        "the put it started from, the put that replaced it"
    );
    let explanation = w["explanation"].as_str().unwrap();
    assert!(
        explanation.contains("acknowledged before the read was invoked"),
        "{explanation}"
    );
    assert_eq!(
        check(
            &h,
            &LinearizableOptions {
                fast_path: false,
                ..kv_opts()
            }
        )
        .valid,
        Validity::Invalid
    );
}

#[test]
fn a_repeated_kv_text_is_attributed_by_real_time() {
    let rows = |last: &str| {
        history(&[
            (0, "invoke", "append", json!("x1y")),
            (0, "ok", "append", json!("x1y")),
            (1, "invoke", "get", Value::Null),
            (1, "ok", "get", json!("x1y")),
            (0, "invoke", "put", json!("x2y")),
            (0, "ok", "put", json!("x2y")),
            (0, "invoke", "append", json!("x1y")),
            (0, "ok", "append", json!("x1y")),
            (1, "invoke", "get", Value::Null),
            (1, "ok", "get", json!(last)),
        ])
    };
    // The second x1y can only be the append after the put; twice, it would be used twice.
    let cases = [
        ("x2yx1y", Validity::Valid),
        ("x2yx1yx1y", Validity::Invalid),
        ("x1yx1y", Validity::Invalid),
    ];
    for (last, valid) in cases {
        let h = rows(last);
        let r = check(&h, &kv_opts());
        assert_eq!(
            (r.valid, r.counts["keys-fast-path"]),
            (valid, 1),
            "{last}: {:?}",
            r.reason
        );
        assert_eq!(
            check(
                &h,
                &LinearizableOptions {
                    fast_path: false,
                    ..kv_opts()
                }
            )
            .valid,
            valid,
            "{last}"
        );
    }
}

#[test]
fn a_kv_text_two_ops_could_have_written_falls_back_to_the_search() {
    let h = history(&[
        (0, "invoke", "append", json!("x1y")),
        (1, "invoke", "append", json!("x1y")),
        (0, "ok", "append", json!("x1y")),
        (1, "ok", "append", json!("x1y")),
        (2, "invoke", "get", Value::Null),
        (2, "ok", "get", json!("x1yx1y")),
    ]);
    let r = check(&h, &kv_opts());
    assert_eq!((r.valid, r.counts["keys-wgl"]), (Validity::Valid, 1));
    let why = r.details["keys"][0]["fast-path-skipped"].as_str().unwrap();
    assert!(why.contains("more than one op"), "{why}");
}

//! The search against a brute-force oracle: on thousands of small random cas-register
//! histories (random interleavings of random ops with random outcomes, most of them not
//! linearizable), the checker's verdict must equal that of an exhaustive enumeration of
//! every order of every allowed subset of ops. This exercises the search, its cache and
//! its reductions (pruning, lazy indeterminate ops, twins, no-op skipping).

use analysis::checkers::linearizable::{check, LinearizableOptions, NullReads};
use analysis::history::{History, Op, OpType, Process};
use analysis::verdict::Validity;
use proptest::prelude::*;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde_json::{json, Value};

mod lin_support;
use lin_support::{oracle, oracle_ops, Rec};

fn random_value(rng: &mut Xoshiro256PlusPlus, values: i64) -> Value {
    match rng.random_range(0..=values) {
        0 => Value::Null,
        v => json!(v - 1),
    }
}

/// A random history of `n` ops over `procs` processes writing `values` distinct values
/// (many values make unobserved writes, which pruning removes); every op completes.
fn random_history(seed: u64, n: usize, procs: usize, values: i64) -> (History, Vec<Rec>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut ops: Vec<Op> = Vec::new();
    let mut recs: Vec<Rec> = Vec::new();
    let mut pending: Vec<Option<usize>> = vec![None; procs];
    let mut started = 0;
    let push = |ops: &mut Vec<Op>, kind, p: usize, f: &str, value: Value| {
        ops.push(Op {
            index: ops.len() as u64,
            kind,
            process: Process::Client(p as u64),
            f: f.into(),
            key: None,
            value,
            time: ops.len() as u64,
            node: None,
            error: None,
            meta: None,
        })
    };
    while started < n || pending.iter().any(Option::is_some) {
        let p = rng.random_range(0..procs);
        match pending[p] {
            None if started < n => {
                let (f, value) = match rng.random_range(0..3) {
                    0 => ("read", Value::Null),
                    1 => ("write", json!(rng.random_range(0..values))),
                    _ => (
                        "cas",
                        json!([rng.random_range(0..values), rng.random_range(0..values)]),
                    ),
                };
                pending[p] = Some(recs.len());
                recs.push(Rec {
                    f,
                    value: value.clone(),
                    outcome: OpType::Invoke,
                    read: Value::Null,
                    call: ops.len(),
                    ret: 0,
                });
                push(&mut ops, OpType::Invoke, p, f, value);
                started += 1;
            }
            None => {}
            Some(i) => {
                let outcome = match rng.random_range(0..10) {
                    0..6 => OpType::Ok,
                    6..8 => OpType::Info,
                    _ => OpType::Fail,
                };
                let rec = &mut recs[i];
                rec.outcome = outcome;
                rec.ret = ops.len();
                let value = if rec.f == "read" && outcome == OpType::Ok {
                    random_value(&mut rng, values)
                } else {
                    rec.value.clone()
                };
                rec.read = value.clone();
                let f = rec.f;
                push(&mut ops, outcome, p, f, value);
                pending[p] = None;
            }
        }
    }
    (History::new(ops), recs)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn verdicts_match_exhaustive_enumeration(
        seed in any::<u64>(), n in 1usize..10, procs in 1usize..5, initial in 0usize..2, values in prop_oneof![Just(3i64), Just(8i64)],
    ) {
        let (history, recs) = random_history(seed, n, procs, values);
        let initial = if initial == 0 { Value::Null } else { json!(0) };
        let ops = oracle_ops(&recs);
        let expected = oracle(&ops, &mut vec![false; ops.len()], &initial);
        for exact_cache_max_ops in [usize::MAX, 0] {
            let opts = LinearizableOptions {
                initial: initial.clone(),
                null_reads: NullReads::Absent,
                exact_cache_max_ops,
                ..Default::default()
            };
            let got = check(&history, &opts);
            let want = if expected { Validity::Valid } else { Validity::Invalid };
            prop_assert_eq!(got.valid, want, "history {:?}", history.ops.iter().map(|o| serde_json::to_string(o).unwrap()).collect::<Vec<_>>());
        }
    }
}

//! The linearizability checker on small hand-written histories: the semantics of `ok`,
//! `fail` and `info`, the models, per-key independence, witnesses, counts, budgets and
//! input it cannot judge.

mod lin_support;

use analysis::checkers::linearizable::{check, LinearizableOptions, Model};
use analysis::synth::{generate, SynthConfig};
use analysis::verdict::{CheckerResult, Validity};
use lin_support::{history, Line};
use serde_json::{json, Value};
use std::time::Duration;

fn cas_register(lines: &[Line]) -> CheckerResult {
    check(&history(lines), &LinearizableOptions::default())
}

const N: Value = Value::Null;

#[test]
fn an_indeterminate_write_may_take_effect_late_or_never_but_not_undo_itself() {
    let base = [
        (0, "invoke", "write", None, json!(1)),
        (0, "info", "write", None, json!(1)),
    ];
    let later = |reads: &[Value]| {
        let mut lines = base.to_vec();
        for v in reads {
            lines.push((1, "invoke", "read", None, N));
            lines.push((1, "ok", "read", None, v.clone()));
        }
        cas_register(&lines).valid
    };
    assert_eq!(later(&[json!(1)]), Validity::Valid, "took effect");
    assert_eq!(later(&[N, N]), Validity::Valid, "never took effect");
    assert_eq!(later(&[N, json!(1)]), Validity::Valid, "took effect late");
    assert_eq!(
        later(&[N, json!(1), N]),
        Validity::Invalid,
        "a write cannot be undone"
    );
}

#[test]
fn a_failed_write_took_no_effect() {
    let r = cas_register(&[
        (0, "invoke", "write", None, json!(1)),
        (0, "fail", "write", None, json!(1)),
        (1, "invoke", "read", None, N),
        (1, "ok", "read", None, json!(1)),
    ]);
    assert_eq!(r.valid, Validity::Invalid);
    assert_eq!(r.counts["failed-dropped"], 1);
}

#[test]
fn a_read_concurrent_with_a_write_may_see_either_value() {
    for seen in [N, json!(1)] {
        let r = cas_register(&[
            (0, "invoke", "write", None, json!(1)),
            (1, "invoke", "read", None, N),
            (1, "ok", "read", None, seen.clone()),
            (0, "ok", "write", None, json!(1)),
        ]);
        assert_eq!(r.valid, Validity::Valid, "read {seen}");
    }
}

#[test]
fn a_stale_read_is_invalid_and_the_witness_points_at_it() {
    let r = cas_register(&[
        (0, "invoke", "write", Some("x"), json!(1)),
        (0, "ok", "write", Some("x"), json!(1)),
        (0, "invoke", "write", Some("x"), json!(2)),
        (0, "ok", "write", Some("x"), json!(2)),
        (2, "invoke", "read", Some("x"), N),
        (1, "invoke", "read", Some("x"), N),
        (1, "ok", "read", Some("x"), json!(1)),
        (2, "ok", "read", Some("x"), json!(2)),
    ]);
    assert_eq!(r.valid, Validity::Invalid);
    let w = &r.anomalies[0];
    assert_eq!(w["key"], "x");
    assert_eq!(w["op"]["index"], 5, "the read");
    assert_eq!(w["op"]["completion_index"], 6);
    assert_eq!(w["op"]["result"], 1);
    let prefix: Vec<u64> = w["prefix"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["index"].as_u64().unwrap())
        .collect();
    assert_eq!(
        prefix,
        vec![0, 2, 4],
        "both writes and the other read linearize, the stale read cannot follow"
    );
    assert_eq!(w["state_after_prefix"], 2);
    let concurrent: Vec<u64> = w["concurrent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["index"].as_u64().unwrap())
        .collect();
    assert_eq!(concurrent, vec![4], "the other read overlaps the stale one");
    assert_eq!(w["concurrent"][0]["in_prefix"], true);
    assert!(r.reason.unwrap().contains("op index 5"));
}

#[test]
fn cas_must_match_unless_its_outcome_is_unknown() {
    let opts = LinearizableOptions {
        initial: json!(0),
        ..Default::default()
    };
    let run = |cas_type: &str, expected: i64| {
        let lines = [
            (0, "invoke", "cas", None, json!([expected, 1])),
            (0, cas_type, "cas", None, json!([expected, 1])),
            (1, "invoke", "read", None, N),
            (1, "ok", "read", None, json!(1)),
        ];
        check(&history(&lines), &opts).valid
    };
    assert_eq!(run("ok", 0), Validity::Valid);
    assert_eq!(
        run("ok", 5),
        Validity::Invalid,
        "a successful cas needs its expected value"
    );
    assert_eq!(
        run("info", 0),
        Validity::Valid,
        "an indeterminate cas may have succeeded"
    );
    assert_eq!(
        run("info", 5),
        Validity::Invalid,
        "...but only if it could have"
    );
    assert_eq!(
        run("fail", 0),
        Validity::Invalid,
        "a failed cas took no effect"
    );
}

#[test]
fn keys_are_checked_independently_and_the_witness_names_the_bad_key() {
    let r = cas_register(&[
        (0, "invoke", "write", Some("a"), json!(1)),
        (0, "ok", "write", Some("a"), json!(1)),
        (1, "invoke", "read", Some("b"), N),
        (1, "ok", "read", Some("b"), N),
        (1, "invoke", "read", Some("a"), N),
        (1, "ok", "read", Some("a"), json!(1)),
        (2, "invoke", "read", Some("b"), N),
        (2, "ok", "read", Some("b"), json!(1)),
    ]);
    assert_eq!(r.valid, Validity::Invalid);
    assert_eq!(r.counts["keys"], 2);
    assert_eq!(r.counts["keys-invalid"], 1);
    assert_eq!(r.anomalies.len(), 1);
    assert_eq!(r.anomalies[0]["key"], "b", "key b was never written");
}

#[test]
fn kv_appends_concatenate_per_key() {
    // The search's kv model and witness (the fast path reaches the same verdicts, see lin_fast_path).
    let opts = LinearizableOptions {
        model: Model::Kv,
        initial: json!(""),
        fast_path: false,
        ..Default::default()
    };
    let run = |read: &str| {
        let lines = [
            (0, "invoke", "put", Some("k"), json!("a")),
            (0, "ok", "put", Some("k"), json!("a")),
            (0, "invoke", "append", Some("k"), json!("b")),
            (0, "ok", "append", Some("k"), json!("b")),
            (1, "invoke", "append", Some("j"), json!("z")),
            (1, "ok", "append", Some("j"), json!("z")),
            (1, "invoke", "get", Some("k"), N),
            (1, "ok", "get", Some("k"), json!(read)),
        ];
        check(&history(&lines), &opts)
    };
    assert_eq!(run("ab").valid, Validity::Valid);
    let bad = run("ba");
    assert_eq!(bad.valid, Validity::Invalid);
    assert_eq!(bad.anomalies[0]["state_after_prefix"], "ab");
}

#[test]
fn functions_the_model_does_not_check_are_counted_and_named() {
    let lines = [
        (0, "invoke", "write", Some("a"), json!(1)),
        (0, "ok", "write", Some("a"), json!(1)),
        (0, "invoke", "add", Some("e1"), json!(5)),
        (0, "ok", "add", Some("e1"), json!(5)),
        (0, "invoke", "read-set", None, N),
        (0, "ok", "read-set", None, json!(["e1"])),
        (
            -1,
            "info",
            "start-partition",
            None,
            json!({"targets": ["n1"]}),
        ),
    ];
    let r = check(
        &history(&lines),
        &LinearizableOptions {
            model: Model::Register,
            ..Default::default()
        },
    );
    assert_eq!(
        r.valid,
        Validity::Valid,
        "set ops on keys no register op uses are not register changes"
    );
    assert_eq!(r.counts["unsupported-ops"], 2);
    assert_eq!(r.counts["non-client-events"], 1);
    let reason = r.reason.unwrap();
    assert!(
        reason.contains("add×1") && reason.contains("read-set×1"),
        "the ignored functions are named: {reason}"
    );

    let cas = [
        (0, "invoke", "cas", None, json!([1, 2])),
        (0, "ok", "cas", None, json!([1, 2])),
    ];
    let only_cas = &cas[..];
    let r = check(
        &history(only_cas),
        &LinearizableOptions {
            model: Model::Register,
            ..Default::default()
        },
    );
    assert_eq!(r.valid, Validity::Unknown, "nothing checked is not valid");
    assert!(r
        .reason
        .unwrap()
        .contains("no operation this model can check"));
}

#[test]
fn malformed_ops_make_the_verdict_unknown_with_the_op_named() {
    let r = cas_register(&[
        (0, "invoke", "cas", None, json!(7)),
        (0, "ok", "cas", None, json!(7)),
        (1, "ok", "read", None, json!(3)),
    ]);
    assert_eq!(r.valid, Validity::Unknown);
    assert_eq!(r.counts["malformed"], 2);
    let reason = r.reason.unwrap();
    assert!(
        reason.contains("2 malformed op(s)") && reason.contains("entry index 2"),
        "{reason}"
    );
    let examples = r.details["malformed-examples"].to_string();
    assert!(
        examples.contains("op at index 0: cas value must be [expected, new], got 7"),
        "{examples}"
    );
}

#[test]
fn unobserved_indeterminate_writes_are_pruned() {
    let r = cas_register(&[
        (0, "invoke", "write", None, json!(1)),
        (0, "info", "write", None, json!(1)),
        (1, "invoke", "write", None, json!(2)),
        (1, "info", "write", None, json!(2)),
        (2, "invoke", "read", None, N),
        (2, "ok", "read", None, json!(2)),
        (3, "invoke", "read", None, N),
        (3, "info", "read", None, N),
    ]);
    assert_eq!(r.valid, Validity::Valid);
    assert_eq!(r.counts["pruned"], 1, "write 1 was never observed");
    assert_eq!(r.counts["indeterminate-reads-dropped"], 1);
    assert_eq!(r.counts["ops-checked"], 2);
}

#[test]
fn a_search_over_budget_is_unknown_and_names_its_key() {
    let synth = generate(&SynthConfig {
        ops: 20_000,
        keys: 1,
        concurrency: 10,
        seed: 5,
        ..Default::default()
    })
    .unwrap();
    for (opts, budget) in [
        // The search's budget: the fast path, which would decide these unique-value keys, is off.
        (
            LinearizableOptions {
                per_key_time: Duration::ZERO,
                fast_path: false,
                ..Default::default()
            },
            "time budget",
        ),
        (
            LinearizableOptions {
                per_key_memory_bytes: 0,
                fast_path: false,
                ..Default::default()
            },
            "memory budget",
        ),
    ] {
        let r = check(&synth.history, &opts);
        assert_eq!(r.valid, Validity::Unknown);
        let reason = r.reason.unwrap();
        assert!(
            reason.contains("key \"k0\"") && reason.contains(budget),
            "{reason}"
        );
        assert_eq!(r.counts["keys-unknown"], 1);
    }
    assert_eq!(
        check(&synth.history, &LinearizableOptions::default()).valid,
        Validity::Valid
    );
}

#[test]
fn the_total_time_budget_bounds_a_check_of_many_keys() {
    let synth = generate(&SynthConfig {
        ops: 40_000,
        keys: 4,
        concurrency: 10,
        seed: 6,
        ..Default::default()
    })
    .unwrap();
    let opts = LinearizableOptions {
        total_time: Duration::ZERO,
        fast_path: false,
        ..Default::default()
    };
    let r = check(&synth.history, &opts);
    assert_eq!(r.valid, Validity::Unknown);
    assert_eq!(
        r.counts["keys-unknown"], 4,
        "every key ran out of the shared budget"
    );
    assert!(r.reason.unwrap().contains("total time budget ran out"));
}

#[test]
fn both_caches_reach_the_same_verdicts() {
    for seed in 0..20 {
        let cfg = SynthConfig {
            ops: 300,
            keys: 2,
            concurrency: 6,
            indeterminate: 0.2,
            seed,
            ..Default::default()
        };
        let synth = generate(&cfg).unwrap();
        let exact = check(
            &synth.history,
            &LinearizableOptions {
                fast_path: false,
                ..Default::default()
            },
        );
        let fingerprint = check(
            &synth.history,
            &LinearizableOptions {
                exact_cache_max_ops: 0,
                fast_path: false,
                ..Default::default()
            },
        );
        assert_eq!(exact.valid, Validity::Valid);
        assert_eq!(exact.valid, fingerprint.valid);
        assert_eq!(
            exact.counts["configurations"], fingerprint.counts["configurations"],
            "seed {seed}"
        );
    }
}

/// A tiny key with a stale read next to a hard key for the search (one hot key, many
/// processes, the fast path off so the search must run).
fn one_bad_key_beside_a_hard_one() -> analysis::history::History {
    let hard = generate(&SynthConfig {
        ops: 30_000,
        keys: 1,
        concurrency: 100,
        seed: 9,
        ..Default::default()
    })
    .unwrap();
    let mut ops = hard.history.ops;
    let stale = [
        (0, "invoke", "write", json!(1)),
        (0, "ok", "write", json!(1)),
        (0, "invoke", "write", json!(2)),
        (0, "ok", "write", json!(2)),
        (0, "invoke", "read", N),
        (0, "ok", "read", json!(1)),
    ];
    for (p, kind, f, value) in stale {
        let mut op = ops[0].clone();
        op.index = ops.len() as u64;
        op.kind = serde_json::from_value(json!(kind)).unwrap();
        op.process = analysis::history::Process::Client(1_000_000 + p);
        op.f = f.into();
        op.key = Some("bad".into());
        op.value = value;
        ops.push(op);
    }
    analysis::history::History::new(ops)
}

#[test]
fn once_a_key_is_invalid_the_others_stop_after_the_grace_unless_all_anomalies() {
    let h = one_bad_key_beside_a_hard_one();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let opts = LinearizableOptions {
        fast_path: false,
        per_key_time: Duration::from_secs(60),
        ..Default::default()
    };
    let r = pool.install(|| check(&h, &opts));
    assert_eq!(r.valid, Validity::Invalid);
    // Not a wall-clock bound (load decides that): the hard key is reported stopped by the
    // first verdict (`keys-not-checked`), which it is only when its search was cut off or
    // never started, not run to its 60 s budget.
    assert_eq!(
        (r.counts["keys-invalid"], r.counts["keys-not-checked"]),
        (1, 1)
    );
    assert!(r
        .reason
        .unwrap()
        .contains("not checked (history already invalid)"));
    let all = LinearizableOptions {
        first_invalid_grace: None,
        per_key_time: Duration::from_millis(300),
        ..opts
    };
    let r = pool.install(|| check(&h, &all));
    assert_eq!(
        r.counts["keys-not-checked"], 0,
        "--all-anomalies waits for every key (here to its budget)"
    );
}

/// A hard key (the search cannot finish it) smaller than an invalid key the search
/// decides at once: searched smallest first, the hard key goes first and would hold the
/// only thread for its whole budget, but it gets a short budget first, so the invalid key
/// is decided next and the hard key's full search is never started.
#[test]
fn a_budget_bound_key_searched_first_does_not_hold_back_the_first_verdict() {
    let mut h = one_bad_key_beside_a_hard_one();
    let hard_ops = h.ops.len();
    let template = h.ops[0].clone();
    // Make the bad key the larger: a long sequential prefix of writes and reads before
    // its stale read, linear work for the search.
    let mut ops = Vec::new();
    for i in 0..(hard_ops / 4 + 10) as i64 {
        for (kind, f) in [
            ("invoke", "write"),
            ("ok", "write"),
            ("invoke", "read"),
            ("ok", "read"),
        ] {
            let mut op = template.clone();
            op.kind = serde_json::from_value(json!(kind)).unwrap();
            op.process = analysis::history::Process::Client(2_000_000);
            op.f = f.into();
            op.key = Some("bad".into());
            op.value = if kind == "invoke" && f == "read" {
                N
            } else {
                json!(1000 + i)
            };
            ops.push(op);
        }
    }
    ops.append(&mut h.ops);
    for (i, op) in ops.iter_mut().enumerate() {
        op.index = i as u64;
    }
    let h = analysis::history::History::new(ops);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let opts = LinearizableOptions {
        fast_path: false,
        per_key_time: Duration::from_secs(60),
        ..Default::default()
    };
    let r = pool.install(|| check(&h, &opts));
    assert_eq!(r.valid, Validity::Invalid, "{:?}", r.reason);
    // Not a wall-clock bound (load decides that): the hard key is reported stopped by the
    // first verdict (`keys-not-checked`), which it is only when its search was cut off or
    // never started, not run to its 60 s budget.
    assert_eq!(
        (r.counts["keys-invalid"], r.counts["keys-not-checked"]),
        (1, 1)
    );
    let keys = r.details["keys"].as_array().unwrap();
    let bad = keys.iter().find(|k| k["key"] == "bad").unwrap();
    let hard = keys.iter().find(|k| k["key"] != "bad").unwrap();
    assert!(
        bad["ops"].as_u64() > hard["ops"].as_u64(),
        "the invalid key is the larger one: {bad} {hard}"
    );
}

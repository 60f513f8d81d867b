//! The isolation checker against a brute-force oracle, on thousands of small random
//! transaction histories: the generator's (tiny sizes, with and without an injected
//! anomaly, crashes, failures and final reads) and mutations of them (a read dropped or
//! altered, list elements swapped, a transaction marked `fail` or `info`, two entries
//! reordered).
//!
//! What is asserted, per history, under serializable, strong-session-serializable and
//! strict-serializable (the oracle restricts serial orders by nothing, by process order,
//! by real time):
//! - soundness, always: the checker says invalid only if the oracle finds no serial order.
//!   Under every weaker model too (on every third history, for time): invalid under a
//!   model that serializable (or strict serializable) implies means the oracle finds no
//!   order under serializable (strict).
//! - completeness, where the theory says Elle's inference is complete: the checker says
//!   invalid whenever the oracle finds no order (and never unknown then).
//!   * list-append: Elle recovers the whole version order of a key from its longest read
//!     and places appends no read observed after the last observed element, which is
//!     exactly where any serial order must put them; with ww, wr and rw edges between
//!     consecutive versions the dependency graph is Adya's, and (plus real-time or process
//!     edges) it is acyclic iff a serial order exists, once the non-cycle anomalies (G1a,
//!     G1b, internal, duplicates, incompatible orders, dirty updates) are excluded. Elle
//!     has no rule for a read that shows one transaction's appends out of the order it
//!     made them (`[2 1]` after one txn appended 1 then 2: no cycle, the txn is one node),
//!     so such histories are outside the claim, as are `null` reads in `ok` transactions
//!     (the contract reads them as unknown). Elle has no rule for an element nobody
//!     appended either, but this checker's `garbage-read` (proscribed by every model)
//!     covers it, so those histories are inside.
//!   * rw-register: registers keep no history, so the version order between two written
//!     values is generally unknown (Elle infers only "the initial `null` comes first").
//!     The claim is made only where that is the whole order: each key has at most one
//!     writing transaction that did not fail, and a crashed writer's values are never read
//!     (reads of values nobody wrote are inside: `garbage-read`). Also outside: a
//!     transaction reading a
//!     value it writes itself only later (a "future read": Elle's rw-register has no rule
//!     for it, and the reader's wr edge to itself is no edge).
//! - implications between models (same histories): valid under a stronger model implies
//!   valid under every weaker one (Elle's model graph, see `isolation_support::IMPLIES`).
//!
//! Disagreements are collected and reported together, smallest history first, as JSON
//! Lines ready to become a regression test (`ISOLATION_ORACLE_DUMP=<path>` also writes
//! them all to `<path>.<workload>`). `--nocapture` prints the counts compared.

mod isolation_support;

use analysis::checkers::isolation::{ConsistencyModel, TxnModel};
use analysis::history::{History, OpType};
use analysis::txn_synth::generate_txn;
use analysis::verdict::Validity;
use isolation_support::domain::complete_domain;
use isolation_support::oracle::{self, Restrict};
use isolation_support::{adya, misbehave};
use isolation_support::{implies, models, mutate, run, small_config, workload};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use std::collections::{BTreeMap, HashMap};

/// The oracle's restriction for each model it decides exactly.
const EXACT: [(ConsistencyModel, Restrict); 3] = [
    (ConsistencyModel::Serializable, oracle::SERIALIZABLE),
    (
        ConsistencyModel::StrongSessionSerializable,
        oracle::STRONG_SESSION,
    ),
    (ConsistencyModel::StrictSerializable, oracle::STRICT),
];

/// What the run saw, for the final assertion and its message.
#[derive(Default)]
struct Tally {
    histories: usize,
    mutated: usize,
    complete: usize,
    /// Histories also judged under every transactional model.
    all_models: usize,
    /// (model, oracle verdict, checker verdict) -> count.
    verdicts: BTreeMap<(String, bool, &'static str), usize>,
    mutations: BTreeMap<&'static str, usize>,
    failures: Vec<(usize, String)>,
}

impl Tally {
    fn fail(&mut self, h: &History, what: String) {
        let lines: Vec<String> = h
            .ops
            .iter()
            .map(|op| serde_json::to_string(op).expect("op serialises"))
            .collect();
        self.failures
            .push((h.ops.len(), format!("{what}\n{}", lines.join("\n"))));
    }

    fn assert_clean(mut self, name: &str) {
        eprintln!(
            "{name}: {} histories ({} mutated, {} in the complete domain, {} under all {} models); mutations {:?}",
            self.histories,
            self.mutated,
            self.complete,
            self.all_models,
            models().len(),
            self.mutations
        );
        for ((model, truth, got), n) in &self.verdicts {
            eprintln!(
                "  {model}: oracle {} / checker {got}: {n}",
                if *truth { "valid" } else { "invalid" }
            );
        }
        self.failures.sort();
        if let Ok(path) = std::env::var("ISOLATION_ORACLE_DUMP") {
            let all: Vec<&str> = self.failures.iter().map(|(_, s)| s.as_str()).collect();
            std::fs::write(format!("{path}.{name}"), all.join("\n---\n")).expect("dump written");
        }
        let shown: Vec<&str> = self
            .failures
            .iter()
            .take(3)
            .map(|(_, s)| s.as_str())
            .collect();
        assert!(
            self.failures.is_empty(),
            "{} disagreements with the oracle; the smallest:\n{}",
            self.failures.len(),
            shown.join("\n---\n")
        );
    }
}

fn compare(h: &History, model: TxnModel, tally: &mut Tally) {
    tally.histories += 1;
    let complete = complete_domain(h, model);
    tally.complete += complete as usize;
    let mut truth: HashMap<ConsistencyModel, bool> = HashMap::new();
    for (cm, restrict) in EXACT {
        let serial = oracle::serializable(h, workload(model), restrict);
        truth.insert(cm, serial);
        let r = run(h, model, cm);
        let got = r.valid.as_str();
        *tally
            .verdicts
            .entry((format!("{model} {cm}"), serial, got))
            .or_default() += 1;
        let wrong = match r.valid {
            Validity::Invalid => serial,
            Validity::Valid | Validity::Unknown => !serial && complete,
            Validity::NotApplicable => true,
        };
        if wrong {
            let names = isolation_support::anomaly_types(&r);
            tally.fail(
                h,
                format!(
                    "{model} {cm}: checker {got} {names:?} ({}), oracle {} (complete domain: {complete})",
                    r.reason.clone().unwrap_or_default(),
                    if serial { "serializable" } else { "not serializable" }
                ),
            );
        }
    }
    // Judging under every model is most of the cost: every third history is plenty.
    if tally.histories.is_multiple_of(3) {
        check_weaker_models(h, model, &truth, tally);
        tally.all_models += 1;
    }
}

/// Soundness under every model and the implications between the checker's verdicts.
fn check_weaker_models(
    h: &History,
    model: TxnModel,
    truth: &HashMap<ConsistencyModel, bool>,
    tally: &mut Tally,
) {
    let verdicts: Vec<(ConsistencyModel, Validity)> = models()
        .into_iter()
        .map(|m| (m, run(h, model, m).valid))
        .collect();
    for (m, v) in &verdicts {
        for (exact, serial) in truth {
            if *v == Validity::Invalid && *serial && implies(exact.as_str(), m.as_str()) {
                tally.fail(h, format!("{model}: invalid under {m} but the oracle finds a serial order under {exact}"));
            }
        }
    }
    for (strong, vs) in &verdicts {
        for (weak, vw) in &verdicts {
            if strong != weak
                && implies(strong.as_str(), weak.as_str())
                && *vs == Validity::Valid
                && *vw != Validity::Valid
            {
                tally.fail(
                    h,
                    format!(
                        "{model}: valid under {strong} but {} under the weaker {weak}",
                        vw.as_str()
                    ),
                );
            }
        }
    }
}

fn run_cases(model: TxnModel, cases: u64, seed: u64) -> Tally {
    let mut tally = Tally::default();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    for case in 0..cases {
        let cfg = small_config(&mut rng, model, seed ^ case);
        let h = generate_txn(&cfg).expect("small configs are valid").history;
        compare(&h, model, &mut tally);
        let mut m = h.clone();
        let mut applied = false;
        for _ in 0..rng.random_range(1..=2) {
            if let Some(kind) = mutate::mutate(&mut m, &mut rng, model == TxnModel::ListAppend) {
                *tally.mutations.entry(kind).or_default() += 1;
                applied = true;
            }
        }
        if applied {
            tally.mutated += 1;
            compare(&m, model, &mut tally);
        }
    }
    tally
}

#[test]
fn list_append_verdicts_equal_the_oracle() {
    run_cases(TxnModel::ListAppend, 800, 0x11a).assert_clean("list-append");
}

#[test]
fn rw_register_verdicts_equal_the_oracle() {
    run_cases(TxnModel::RwRegister, 800, 0x4e6).assert_clean("rw-register");
}

/// Histories of a store that misbehaves on purpose (stale reads, dropped, partial and
/// duplicated writes, reordered reads, failed transactions whose writes show, info
/// transactions; several reads of a key per transaction): the same comparison with the
/// oracle, and Adya's G1a and G1b read off every read must be exactly what the checker
/// names under read-committed.
fn run_misbehaving(model: TxnModel, cases: u64, seed: u64) -> Tally {
    let mut tally = Tally::default();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let list_append = model == TxnModel::ListAppend;
    for _ in 0..cases {
        let m = misbehave::generate(&mut rng, list_append);
        for f in &m.faults {
            *tally.mutations.entry(f).or_default() += 1;
        }
        let h = &m.history;
        compare(h, model, &mut tally);
        let txns = oracle::transactions(h);
        let r = run(h, model, ConsistencyModel::ReadCommitted);
        let names = isolation_support::anomaly_types(&r);
        let expect = [
            ("G1a", adya::g1a(&txns), adya::g1a(&txns)),
            ("G1b", adya::g1b(&txns, false), adya::g1b(&txns, true)),
        ];
        for (name, surely, possibly) in expect {
            let named = names.contains(name);
            if (surely && !named) || (named && !possibly) {
                tally.fail(
                    h,
                    format!(
                        "{model} read-committed: Adya's {name} {surely}, checker names {names:?}"
                    ),
                );
            }
        }
    }
    tally
}

#[test]
fn list_append_misbehaving_store_agrees_with_the_oracle_and_adya() {
    run_misbehaving(TxnModel::ListAppend, 700, 0xbad1).assert_clean("list-append misbehaving");
}

#[test]
fn rw_register_misbehaving_store_agrees_with_the_oracle_and_adya() {
    run_misbehaving(TxnModel::RwRegister, 700, 0xbad2).assert_clean("rw-register misbehaving");
}

/// The oracle itself, on histories whose answer is known by hand.
mod oracle_self_test {
    use super::isolation_support::oracle::{self, Workload};
    use analysis::history::{History, Op, OpType, Process};
    use serde_json::{json, Value};

    /// `(process, type, value)` entries, indexed in order.
    fn h(entries: &[(u64, &str, Value)]) -> History {
        History::new(
            entries
                .iter()
                .enumerate()
                .map(|(i, (p, t, v))| Op {
                    index: i as u64,
                    kind: serde_json::from_value(json!(t)).unwrap(),
                    process: Process::Client(*p),
                    f: "txn".into(),
                    key: None,
                    value: v.clone(),
                    time: i as u64,
                    node: None,
                    error: None,
                    meta: None,
                })
                .collect(),
        )
    }

    #[test]
    fn circular_information_flow_has_no_serial_order() {
        let g1c = h(&[
            (0, "invoke", json!([["append", "x", 1], ["r", "y", null]])),
            (1, "invoke", json!([["append", "y", 1], ["r", "x", null]])),
            (0, "ok", json!([["append", "x", 1], ["r", "y", [1]]])),
            (1, "ok", json!([["append", "y", 1], ["r", "x", [1]]])),
        ]);
        assert!(!oracle::serializable(
            &g1c,
            Workload::ListAppend,
            oracle::SERIALIZABLE
        ));
    }

    #[test]
    fn a_stale_read_is_serializable_but_not_strict() {
        let stale = h(&[
            (0, "invoke", json!([["w", "x", 1]])),
            (0, "ok", json!([["w", "x", 1]])),
            (1, "invoke", json!([["r", "x", null]])),
            (1, "ok", json!([["r", "x", null]])),
        ]);
        assert!(oracle::serializable(
            &stale,
            Workload::RwRegister,
            oracle::SERIALIZABLE
        ));
        assert!(!oracle::serializable(
            &stale,
            Workload::RwRegister,
            oracle::STRICT
        ));
        let same_process = h(&[
            (0, "invoke", json!([["w", "x", 1]])),
            (0, "ok", json!([["w", "x", 1]])),
            (0, "invoke", json!([["r", "x", null]])),
            (0, "ok", json!([["r", "x", null]])),
        ]);
        assert!(!oracle::serializable(
            &same_process,
            Workload::RwRegister,
            oracle::STRONG_SESSION
        ));
    }

    #[test]
    fn a_crashed_write_may_or_may_not_have_happened() {
        let seen = |read: Value| {
            h(&[
                (0, "invoke", json!([["append", 5, 1]])),
                (0, "info", json!([["append", 5, 1]])),
                (1, "invoke", json!([["r", 5, null]])),
                (1, "ok", json!([["r", 5, read]])),
            ])
        };
        assert!(oracle::serializable(
            &seen(json!([1])),
            Workload::ListAppend,
            oracle::STRICT
        ));
        assert!(oracle::serializable(
            &seen(json!([])),
            Workload::ListAppend,
            oracle::STRICT
        ));
        assert!(!oracle::serializable(
            &seen(json!([1, 1])),
            Workload::ListAppend,
            oracle::STRICT
        ));
    }

    #[test]
    fn a_failed_write_never_happened() {
        let g1a = h(&[
            (0, "invoke", json!([["w", 5, 1]])),
            (0, "fail", json!([["w", 5, 1]])),
            (1, "invoke", json!([["r", 5, null]])),
            (1, "ok", json!([["r", 5, 1]])),
        ]);
        assert!(!oracle::serializable(
            &g1a,
            Workload::RwRegister,
            oracle::SERIALIZABLE
        ));
    }

    #[test]
    fn reads_see_their_own_writes() {
        let internal = |read: Value| {
            h(&[
                (0, "invoke", json!([["append", 1, 7], ["r", 1, null]])),
                (0, "ok", json!([["append", 1, 7], ["r", 1, read]])),
            ])
        };
        assert!(oracle::serializable(
            &internal(json!([7])),
            Workload::ListAppend,
            oracle::STRICT
        ));
        assert!(!oracle::serializable(
            &internal(json!([])),
            Workload::ListAppend,
            oracle::SERIALIZABLE
        ));
        let _ = OpType::Ok;
    }
}

/// The generator's histories without injection are strict-serializable by construction;
/// the oracle agrees on hundreds of them (this checks the generator and the oracle
/// against each other, independently of the checker).
#[test]
fn generated_histories_without_anomaly_are_strict_serializable() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    for model in [TxnModel::ListAppend, TxnModel::RwRegister] {
        for case in 0..400 {
            let mut cfg = small_config(&mut rng, model, case);
            cfg.anomaly = analysis::txn_synth::TxnAnomaly::None;
            let h = generate_txn(&cfg).unwrap().history;
            assert!(
                oracle::serializable(&h, workload(model), oracle::STRICT),
                "{model} case {case}: {cfg:?}"
            );
            assert!(
                oracle::serializable(&h, workload(model), oracle::STRONG_SESSION),
                "{model} case {case}"
            );
        }
    }
}

/// Every injected anomaly makes the history non-serializable (realtime: non-strict only),
/// by the oracle, on small histories.
#[test]
fn injected_anomalies_are_provable_by_the_oracle() {
    use analysis::txn_synth::TxnAnomaly;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(8);
    for model in [TxnModel::ListAppend, TxnModel::RwRegister] {
        for anomaly in TxnAnomaly::ALL
            .into_iter()
            .filter(|a| *a != TxnAnomaly::None && a.applies_to(model))
        {
            for case in 0..30 {
                let mut cfg = small_config(&mut rng, model, case);
                cfg.anomaly = anomaly;
                let synth = generate_txn(&cfg).unwrap();
                let h = &synth.history;
                assert!(synth.injected.is_some());
                assert!(
                    !oracle::serializable(h, workload(model), oracle::STRICT),
                    "{model} {anomaly} case {case}"
                );
                let serial = oracle::serializable(h, workload(model), oracle::SERIALIZABLE);
                assert_eq!(
                    serial,
                    anomaly == TxnAnomaly::Realtime,
                    "{model} {anomaly} case {case}"
                );
            }
        }
    }
    let _ = OpType::Ok;
}

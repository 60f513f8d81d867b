//! `gen-history --mode zset|queue`: every anomaly it injects is caught by its checker by
//! name, and its clean histories (simulated stores, with crashes) are judged valid — the
//! simulators being the oracle for what the store may do.

use analysis::checkers::{queue, zset};
use analysis::queue_synth::{generate_queue, QueueSynthConfig};
use analysis::verdict::{CheckerResult, Validity};
use analysis::zset_synth::{generate_zset, ZsetSynthConfig};

fn has(r: &CheckerResult, kind: &str) -> bool {
    r.anomalies.iter().any(|a| a["kind"] == kind)
}

#[test]
fn every_zset_anomaly_is_caught_by_name() {
    for kind in zset::KINDS {
        let cfg = ZsetSynthConfig {
            ops: 300,
            concurrency: 4,
            indeterminate: 0.05,
            seed: 7,
            anomaly: Some(kind.to_string()),
            ..Default::default()
        };
        let r = zset::check(&generate_zset(&cfg).unwrap(), &Default::default());
        assert_eq!(r.valid, Validity::Invalid, "{kind}: {r:?}");
        assert!(has(&r, kind), "{kind} not found: {:?}", r.reason);
        assert!(
            r.anomalies.iter().all(|a| a["key"] == "zset-anomaly"),
            "{kind}: a finding outside the scenario: {:?}",
            r.anomalies
        );
    }
}

#[test]
fn clean_zset_histories_are_valid() {
    for seed in 0..40 {
        let cfg = ZsetSynthConfig {
            ops: 200,
            keys: 2,
            members: 4,
            concurrency: 1 + (seed % 6) as u32,
            indeterminate: if seed % 2 == 0 { 0.0 } else { 0.1 },
            seed,
            anomaly: None,
        };
        let r = zset::check(&generate_zset(&cfg).unwrap(), &Default::default());
        assert_eq!(r.valid, Validity::Valid, "seed {seed}: {r:?}");
    }
}

#[test]
fn every_queue_anomaly_is_caught_by_name() {
    for kind in queue::KINDS {
        let cfg = QueueSynthConfig {
            ops: 300,
            indeterminate: 0.05,
            seed: 3,
            anomaly: Some(kind.to_string()),
            ..Default::default()
        };
        let r = queue::check(&generate_queue(&cfg).unwrap());
        assert_eq!(r.valid, Validity::Invalid, "{kind}: {r:?}");
        assert!(has(&r, kind), "{kind} not found: {:?}", r.reason);
        assert!(
            r.anomalies.iter().all(|a| a["group"] == "ganomaly"),
            "{kind}: a finding outside the scenario: {:?}",
            r.anomalies
        );
    }
}

#[test]
fn clean_queue_histories_are_valid() {
    for seed in 0..200 {
        let cfg = QueueSynthConfig {
            ops: 200,
            groups: 1 + (seed % 4) as u32,
            concurrency: 1 + (seed % 5) as u32,
            indeterminate: if seed % 2 == 0 { 0.0 } else { 0.15 },
            seed,
            anomaly: None,
        };
        let r = queue::check(&generate_queue(&cfg).unwrap());
        assert_eq!(r.valid, Validity::Valid, "seed {seed}: {r:?}");
        assert_eq!(r.details["drained"], true);
    }
}

#[test]
fn an_unknown_anomaly_is_refused_with_the_list() {
    let e = generate_zset(&ZsetSynthConfig {
        anomaly: Some("bogus".into()),
        ..Default::default()
    })
    .unwrap_err();
    assert!(e.contains("missing-member"), "{e}");
    let e = generate_queue(&QueueSynthConfig {
        anomaly: Some("bogus".into()),
        ..Default::default()
    })
    .unwrap_err();
    assert!(e.contains("order"), "{e}");
}

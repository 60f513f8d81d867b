//! Property tests over synthetic histories: whatever the shape (keys, concurrency,
//! crashes, key distribution), a history of the simulated linearizable store is valid,
//! and one with an injected anomaly is invalid with the witness on the injected key.

use analysis::checkers::linearizable::{check, LinearizableOptions};
use analysis::synth::{generate, Anomaly, KeyDist, SynthConfig};
use analysis::verdict::Validity;
use proptest::prelude::*;

fn configs() -> impl Strategy<Value = SynthConfig> {
    (
        20u64..400,
        1u32..6,
        1u32..9,
        0.0f64..0.3,
        any::<u64>(),
        prop_oneof![
            Just(KeyDist::Uniform),
            (0.5f64..2.0).prop_map(KeyDist::Zipf)
        ],
    )
        .prop_map(
            |(ops, keys, concurrency, indeterminate, seed, key_dist)| SynthConfig {
                ops,
                keys,
                concurrency,
                indeterminate,
                seed,
                key_dist,
                ..Default::default()
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn histories_without_anomaly_are_linearizable(cfg in configs()) {
        let synth = generate(&cfg).unwrap();
        let result = check(&synth.history, &LinearizableOptions::default());
        prop_assert_eq!(result.valid, Validity::Valid, "{:?}: {:?}", cfg, result.reason);
        prop_assert_eq!(result.counts["ops"], cfg.ops);
    }

    #[test]
    fn injected_anomalies_are_caught_on_their_key(
        cfg in configs(),
        anomaly in prop_oneof![Just(Anomaly::StaleRead), Just(Anomaly::LostWrite)],
    ) {
        let cfg = SynthConfig { anomaly, ..cfg };
        let synth = generate(&cfg).unwrap();
        let key = synth.anomaly_key.clone().expect("an anomaly is always injected");
        let result = check(&synth.history, &LinearizableOptions::default());
        prop_assert_eq!(result.valid, Validity::Invalid, "{:?}: {:?}", cfg, result.reason);
        prop_assert_eq!(result.anomalies.len(), 1, "only the injected key fails");
        prop_assert_eq!(result.anomalies[0]["key"].as_str(), Some(key.as_str()));
    }
}

#[test]
fn anomalies_are_found_inside_large_concurrent_histories_too() {
    for (anomaly, seed) in [(Anomaly::StaleRead, 3), (Anomaly::LostWrite, 4)] {
        let cfg = SynthConfig {
            ops: 20_000,
            keys: 10,
            concurrency: 20,
            indeterminate: 0.02,
            seed,
            key_dist: KeyDist::Zipf(1.1),
            anomaly,
            ..Default::default()
        };
        let synth = generate(&cfg).unwrap();
        let at = synth.anomaly_index.unwrap();
        assert!(
            at < synth.history.len() as u64 - 4,
            "{anomaly}: placed inside the run, not in the fallback tail"
        );
        let result = check(&synth.history, &LinearizableOptions::default());
        assert_eq!(result.valid, Validity::Invalid, "{anomaly}");
        assert_eq!(
            result.anomalies[0]["key"].as_str(),
            synth.anomaly_key.as_deref()
        );
    }
}

//! An elastickv-shaped history — no commit metadata, catalog routes without epochs, splits
//! only forced by the split nemesis — through the epoch-authority, split and vacuity
//! checkers: what can be inferred is checked, the rest is `unknown`, never `valid`.

mod epoch_support;

use analysis::checkers::{epoch_authority, split, vacuity};
use analysis::verdict::Validity;
use epoch_support::*;
use serde_json::json;

fn elastickv_like(bad_catalog: bool) -> analysis::history::History {
    let mut h = HistoryBuilder::new();
    h.catalog(1, vec![route(1, "", "", 1, 0)], vec![]);
    for i in 0..200u64 {
        h.at_ms(i * 10).acked(
            i % 4,
            "put",
            &format!("k{:03}", i % 50),
            json!(format!("v{i}")),
            None,
        );
    }
    h.at_ms(2_000).catalog(
        2,
        vec![child(2, "", "k025", 1, 0, 1), child(3, "k025", "", 1, 0, 1)],
        vec![],
    );
    h.at_ms(2_002).nemesis(
        "start-split",
        json!({"targets": [], "effective": true, "key": "k025", "route_id": 1}),
    );
    h.nemesis(
        "stop-split",
        json!({"targets": [], "effective": true, "key": "k025"}),
    );
    if bad_catalog {
        // A later version loses [k025, k030): a gap in the keyspace.
        h.at_ms(2_500).catalog(
            3,
            vec![child(2, "", "k025", 1, 0, 1), child(4, "k030", "", 1, 0, 3)],
            vec![],
        );
    }
    for i in 200..300u64 {
        h.at_ms(2_000 + i * 10)
            .acked(i % 4, "get", &format!("k{:03}", i % 50), json!(null), None);
    }
    h.build()
}

#[test]
fn without_metadata_epoch_rules_are_unknown_and_the_catalog_is_still_checked() {
    let history = elastickv_like(false);
    let epoch = epoch_authority::check(&history, &Default::default());
    assert_eq!(epoch.valid, Validity::Unknown);
    assert_eq!(rule_validity(&epoch, "e"), json!(true));
    assert_eq!(epoch.counts["acknowledged-writes-with-metadata"], 0);
    let splits = split::check(&history, &Default::default());
    assert_eq!(splits.valid, Validity::Valid);
    assert_eq!(splits.counts["forced-splits"], 1);
    let vac = vacuity::check(
        &history,
        &vacuity::VacuityOptions {
            nemesis: vec!["split".into()],
            min_ok_ops_per_s: 50.0,
            ..Default::default()
        },
    );
    assert_eq!(vac.valid, Validity::Valid, "{:?}", vac.reason);
}

#[test]
fn without_metadata_a_broken_catalog_is_still_invalid() {
    let epoch = epoch_authority::check(&elastickv_like(true), &Default::default());
    assert_eq!(epoch.valid, Validity::Invalid);
    let kinds = anomaly_kinds(&epoch);
    assert!(kinds.contains(&"gap".to_string()), "{kinds:?}");
}

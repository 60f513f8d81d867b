//! Soundness of the linearizability checker at its edges: a history with nothing left to
//! search is trivially linearizable (Knossos' and Porcupine's verdict), and no model ever
//! judges a key after dropping an op that may have changed it (every model × function pair
//! of `docs/checkers.md`): such a key is `unknown` with the reason, never `invalid`.

mod lin_support;

use analysis::checkers::linearizable::{check, LinearizableOptions, Model};
use analysis::verdict::{CheckerResult, Validity};
use lin_support::{history, Line};
use serde_json::{json, Value};

fn check_with(model: Model, lines: &[Line]) -> CheckerResult {
    check(
        &history(lines),
        &LinearizableOptions {
            model,
            ..Default::default()
        },
    )
}

const N: Value = Value::Null;

#[test]
fn a_history_whose_client_ops_all_failed_is_linearizable() {
    let lines = [
        (0, "invoke", "write", Some("k"), json!(1)),
        (0, "fail", "write", Some("k"), json!(1)),
        (1, "invoke", "read", Some("k"), N),
        (1, "fail", "read", Some("k"), N),
        (2, "invoke", "cas", Some("k"), json!([1, 2])),
        (2, "fail", "cas", Some("k"), json!([1, 2])),
    ];
    let r = check_with(Model::CasRegister, &lines);
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.reason);
    assert_eq!(
        (
            r.counts["ops"],
            r.counts["ops-checked"],
            r.counts["failed-dropped"]
        ),
        (3, 0, 3)
    );
}

#[test]
fn a_history_of_only_nemesis_events_or_unobservable_ops_is_linearizable() {
    let nemesis = [
        (
            -1,
            "info",
            "start-partition",
            None,
            json!({"targets": ["n1"], "effective": true}),
        ),
        (
            -1,
            "info",
            "stop-partition",
            None,
            json!({"targets": ["n1"], "effective": true}),
        ),
    ];
    let r = check_with(Model::CasRegister, &nemesis);
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.reason);
    assert_eq!((r.counts["ops"], r.counts["non-client-events"]), (0, 2));
    // Reads of unknown outcome and an unobserved indeterminate write: nothing to search.
    let unobservable = [
        (0, "invoke", "read", Some("k"), N),
        (0, "info", "read", Some("k"), N),
        (1, "invoke", "write", Some("k"), json!(4)),
        (1, "info", "write", Some("k"), json!(4)),
    ];
    let r = check_with(Model::CasRegister, &unobservable);
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.reason);
    assert_eq!(r.counts["ops-checked"], 0);
}

/// `k` would be invalid if the op in the middle were dropped (the read sees its effect);
/// `other` is a plain stale read, invalid under every model.
fn hides_a_change(f: &'static str, value: Value, read: Value) -> Vec<Line<'static>> {
    vec![
        (0, "invoke", "write", Some("k"), json!("a")),
        (0, "ok", "write", Some("k"), json!("a")),
        (1, "invoke", f, Some("k"), value.clone()),
        (1, "ok", f, Some("k"), value),
        (2, "invoke", "read", Some("k"), N),
        (2, "ok", "read", Some("k"), read),
    ]
}

fn stale_read_on_other() -> Vec<Line<'static>> {
    vec![
        (3, "invoke", "write", Some("other"), json!("x")),
        (3, "ok", "write", Some("other"), json!("x")),
        (4, "invoke", "read", Some("other"), N),
        (4, "ok", "read", Some("other"), N),
    ]
}

/// The key is `unknown`, the reason names the model and the function, and no witness
/// blames it; the rest of the history is still judged.
fn assert_unfollowed(model: Model, f: &str, lines: &[Line]) {
    let r = check_with(model, lines);
    assert_eq!(
        r.valid,
        Validity::Unknown,
        "{} × {f}: {:?}",
        model.name(),
        r.reason
    );
    assert_eq!(r.counts["keys-unknown"], 1, "{} × {f}", model.name());
    assert_eq!(r.counts["keys-invalid"], 0, "{} × {f}", model.name());
    let reason = r.reason.unwrap_or_default();
    assert!(
        reason.contains(&format!("model {}", model.name())) && reason.contains(&format!("{f}×1")),
        "{reason}"
    );
    let mut with_other = lines.to_vec();
    with_other.extend(stale_read_on_other());
    let r = check_with(model, &with_other);
    assert_eq!(
        r.valid,
        Validity::Invalid,
        "{} × {f}: other keys are still judged",
        model.name()
    );
    assert_eq!((r.counts["keys-invalid"], r.counts["keys-unknown"]), (1, 1));
    assert!(
        r.anomalies.iter().all(|a| a["key"] == "other"),
        "{:?}",
        r.anomalies
    );
}

#[test]
fn register_never_judges_a_key_after_dropping_its_cas_or_append() {
    assert_unfollowed(
        Model::Register,
        "cas",
        &hides_a_change("cas", json!(["a", "b"]), json!("b")),
    );
    assert_unfollowed(
        Model::Register,
        "append",
        &hides_a_change("append", json!("b"), json!("ab")),
    );
}

#[test]
fn cas_register_never_judges_a_key_after_dropping_its_append() {
    assert_unfollowed(
        Model::CasRegister,
        "append",
        &hides_a_change("append", json!("b"), json!("ab")),
    );
    // And cas is checked: the same history with cas is valid.
    assert_eq!(
        check_with(
            Model::CasRegister,
            &hides_a_change("cas", json!(["a", "b"]), json!("b"))
        )
        .valid,
        Validity::Valid
    );
}

#[test]
fn kv_never_judges_a_key_after_dropping_its_cas() {
    assert_unfollowed(
        Model::Kv,
        "cas",
        &hides_a_change("cas", json!(["a", "b"]), json!("b")),
    );
    assert_eq!(
        check_with(
            Model::Kv,
            &hides_a_change("append", json!("b"), json!("ab"))
        )
        .valid,
        Validity::Valid
    );
}

#[test]
fn every_model_refuses_to_judge_a_register_key_that_a_keyed_add_changed() {
    for model in Model::ALL {
        assert_unfollowed(model, "add", &hides_a_change("add", json!(7), json!(7)));
    }
}

#[test]
fn ops_that_took_no_effect_or_only_read_do_not_stop_a_key_being_judged() {
    for model in Model::ALL {
        // A failed cas changed nothing; a read-set and a scan only read; so the stale read
        // of "k" is still found.
        let lines = [
            (0, "invoke", "write", Some("k"), json!("a")),
            (0, "ok", "write", Some("k"), json!("a")),
            (1, "invoke", "cas", Some("k"), json!(["a", "b"])),
            (1, "fail", "cas", Some("k"), json!(["a", "b"])),
            (
                1,
                "invoke",
                "scan",
                Some("k"),
                json!({"start": "", "end": ""}),
            ),
            (1, "ok", "scan", Some("k"), json!(["k"])),
            (2, "invoke", "read", Some("k"), N),
            (2, "ok", "read", Some("k"), N),
        ];
        let r = check_with(model, &lines);
        assert_eq!(
            r.valid,
            Validity::Invalid,
            "{}: {:?}",
            model.name(),
            r.reason
        );
    }
}

#[test]
fn keys_only_set_ops_use_are_not_registers() {
    for model in Model::ALL {
        let lines = [
            (0, "invoke", "write", Some("k"), json!("a")),
            (0, "ok", "write", Some("k"), json!("a")),
            (1, "invoke", "add", Some("e/1"), json!(1)),
            (1, "ok", "add", Some("e/1"), json!(1)),
            (1, "invoke", "add", None, json!(2)),
            (1, "ok", "add", None, json!(2)),
            (1, "invoke", "read-set", None, N),
            (1, "ok", "read-set", None, json!([2])),
        ];
        let r = check_with(model, &lines);
        assert_eq!(r.valid, Validity::Valid, "{}: {:?}", model.name(), r.reason);
        assert_eq!(r.counts["keys-unknown"], 0);
    }
}

//! The events each fault records, byte for byte as `docs/history-format.md` has them (and
//! as the untyped nemesis wrote them before `FaultEvent`), the registry's invariants, and
//! a fault outside the registry that waits on the catalog, as a move fault would.

use crate::faults::{
    self, Active, Clock, Ctx, Fault, FaultKind, Started, Style, Turn, Undo, REGISTRY,
};
use crate::tests::{ctx, FakeCluster, VecSink};
use analysis::history::{FaultValue, JobPhase};
use futures::future::BoxFuture;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::sync::Arc;
use std::time::Duration;

/// The `f` and the JSON text of every event recorded by one start and stop of each turn.
async fn recorded(kind: FaultKind, turns: &[u64]) -> Vec<(String, String)> {
    let sink = Arc::new(VecSink::default());
    let c = ctx(FakeCluster::new(3), sink.clone());
    let mut rng = StdRng::seed_from_u64(1);
    for &nth in turns {
        let active = faults::start(
            &c,
            kind,
            Turn {
                nth,
                budget: Duration::from_secs(1),
            },
            &mut rng,
        )
        .await;
        faults::stop(&c, &active).await;
    }
    let ops = sink.0.lock().unwrap().clone();
    ops.into_iter()
        .map(|o| (o.f.to_string(), serde_json::to_string(&o.value).unwrap()))
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(f, v)| (f.to_string(), v.to_string()))
        .collect()
}

const LEADERS: &str = r#""leaders":{"1":"n2","2":"n2","3":"n2"}"#;
const NO_NS: &str = r#""n1: fake cluster: no namespace for n1","n2: fake cluster: no namespace for n2","n3: fake cluster: no namespace for n3""#;

#[tokio::test]
async fn kill_and_pause_record_the_leader_they_hit() {
    let kill = format!(
        r#"{{"effective":true,"errors":[],"killed":["n2"],"leader":true,{LEADERS},"leaders_killed":[1,2,3],"mode":"leader","targets":["n2"]}}"#
    );
    let heal = r#"{"healed":true,"targets":["n2"]}"#;
    assert_eq!(
        recorded(FaultKind::KILL, &[0]).await,
        pairs(&[("start-kill", &kill), ("stop-kill", heal)])
    );
    let pause = format!(
        r#"{{"effective":true,"errors":[],"leader":true,{LEADERS},"leaders_paused":[1,2,3],"mode":"leader","paused":["n2"],"targets":["n2"]}}"#
    );
    assert_eq!(
        recorded(FaultKind::PAUSE, &[0]).await,
        pairs(&[("start-pause", &pause), ("stop-pause", heal)])
    );
}

#[tokio::test]
async fn partition_and_loss_record_their_errors_and_failed_heal() {
    let part = format!(
        r#"{{"effective":false,"errors":[{NO_NS}],"grudge":{{"n1":["n2"],"n2":["n1","n3"],"n3":["n2"]}},"leader":true,{LEADERS},"leaders_cut_off":[1,2,3],"mode":"leader","targets":["n1","n2","n3"]}}"#
    );
    let heal = format!(r#"{{"errors":[{NO_NS}],"healed":false,"targets":["n1","n2","n3"]}}"#);
    assert_eq!(
        recorded(FaultKind::PARTITION, &[0]).await,
        pairs(&[("start-partition", &part), ("stop-partition", &heal)])
    );
    let loss = format!(
        r#"{{"effective":false,"errors":[{NO_NS}],"mechanism":"iptables-statistic","probability":0.2,"targets":["n1","n2","n3"]}}"#
    );
    assert_eq!(
        recorded(FaultKind::LOSS, &[0]).await,
        pairs(&[("start-loss", &loss), ("stop-loss", &heal)])
    );
}

#[tokio::test]
async fn splits_alternate_and_a_move_waits_for_its_job() {
    let same = r#"{"cross_group":false,"detail":{},"effective":true,"job_id":null,"key":"k","phase_seen":null,"route_id":1,"target_group":null,"targets":[]}"#;
    let same_done = r#"{"effective":true,"job_id":null,"job_phase":null,"key":"k","targets":[]}"#;
    let cross = r#"{"cross_group":true,"detail":{},"effective":true,"job_id":7,"key":"k","phase_seen":null,"route_id":1,"target_group":2,"targets":[]}"#;
    let cross_done = r#"{"effective":true,"job_id":7,"job_phase":"DONE","key":"k","targets":[]}"#;
    let expected = pairs(&[
        ("start-split", same),
        ("stop-split", same_done),
        ("start-split", cross),
        ("stop-split", cross_done),
    ]);
    assert_eq!(recorded(FaultKind::SPLIT, &[0, 1]).await, expected);
}

#[test]
fn the_registry_names_each_fault_once_and_all_means_the_registry() {
    let mut names: Vec<&str> = REGISTRY.iter().map(|k| k.name()).collect();
    assert_eq!(
        names[..5],
        ["partition", "kill", "pause", "loss", "split"],
        "the shipped faults, in `all` order"
    );
    names.sort();
    names.dedup();
    assert_eq!(names.len(), REGISTRY.len(), "a name is registered once");
    assert_eq!(FaultKind::parse_list("all").unwrap(), REGISTRY);
    assert_eq!(
        FaultKind::parse_list("split, kill,kill").unwrap(),
        [FaultKind::KILL, FaultKind::SPLIT]
    );
    let e = FaultKind::parse_list("kill,no-such-fault")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(
            "unknown nemesis \"no-such-fault\": expected partition, kill, pause, loss, split"
        ),
        "{e}"
    );
    assert!(e.ends_with(", all or none"), "{e}");
    for name in analysis::checkers::vacuity::ALL_FAULTS {
        assert!(
            FaultKind::named(name).is_some(),
            "vacuity's `all` names {name}, which the registry lacks"
        );
    }
}

#[test]
fn every_fault_has_its_own_colour() {
    let mut colours: Vec<(u8, u8, u8)> = REGISTRY.iter().map(|k| k.fault().style().rgb).collect();
    colours.push(faults::UNKNOWN_STYLE_RGB);
    colours.sort();
    colours.dedup();
    assert_eq!(colours.len(), REGISTRY.len() + 1);
    assert_eq!(
        faults::style_of("no-such-fault").rgb,
        faults::UNKNOWN_STYLE_RGB
    );
}

/// A fault on its own clock that acts through the store and heals when a job settles: the
/// shape of the move fault (FakeStore reports every job `DONE`).
struct AwaitsJob;

impl Fault for AwaitsJob {
    fn name(&self) -> &'static str {
        "await-job"
    }
    fn effective_means(&self) -> &'static str {
        "the job it watched settled"
    }
    fn style(&self) -> Style {
        Style {
            rgb: (1, 2, 3),
            label: "await",
        }
    }
    fn clock(&self) -> Clock {
        Clock::Own
    }
    fn acts_on_nodes(&self) -> bool {
        false
    }
    fn start<'a>(
        &'a self,
        _ctx: &'a Ctx,
        _turn: Turn,
        _rng: &'a mut StdRng,
    ) -> BoxFuture<'a, Started> {
        Box::pin(async {
            Started {
                value: FaultValue::new(vec![]),
                undo: Undo::AwaitJob {
                    job_id: Some(9),
                    accepted: true,
                },
                summary: None,
            }
        })
    }
    fn stop<'a>(&'a self, ctx: &'a Ctx, active: &'a Active) -> BoxFuture<'a, FaultValue> {
        Box::pin(async move {
            let phase = ctx.wait_for_job(9, active.turn.budget).await;
            let mut v = FaultValue::new(vec![]);
            v.effective = Some(
                phase
                    .as_deref()
                    .and_then(JobPhase::parse)
                    .is_some_and(JobPhase::is_terminal),
            );
            v
        })
    }
}

#[tokio::test]
async fn a_fault_outside_the_registry_runs_through_the_same_bracketing() {
    static AWAITS: AwaitsJob = AwaitsJob;
    let kind = FaultKind::unregistered(&AWAITS);
    assert_eq!(FaultKind::named("await-job"), None);
    let events = recorded(kind, &[0]).await;
    assert_eq!(
        events,
        pairs(&[
            ("start-await-job", r#"{"targets":[]}"#),
            ("stop-await-job", r#"{"effective":true,"targets":[]}"#)
        ])
    );
}

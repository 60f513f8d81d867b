//! Unit tests for the split-job state machine and the milestone-2 job API rules: legal
//! phase steps, abandon allowed/refused per phase, retry, one live job, overlap refusal.

use super::*;
use JobPhase::*;

const ALL: [JobPhase; 10] = [
    Planned, Backfill, Fence, DeltaCopy, Cutover, Cleanup, Done, Failed, Abandoning, Abandoned,
];

/// A catalog `["", "m")` on group 1 and `["m", "")` on group 2, with a job moving `["g", "m")`
/// from group 1 to group 3, driven to `phase` by the driver's own steps.
fn with_job_in(phase: JobPhase) -> (Catalog, SplitOutcome) {
    let mut c = Catalog::genesis(3, &[b"m".to_vec()]).unwrap();
    let out = c.start_migration(1, 1, b"g", 3, 0).unwrap();
    let path = [Planned, Backfill, Fence, DeltaCopy, Cutover, Cleanup, Done];
    for w in path.windows(2) {
        if w[0] == phase {
            break;
        }
        c.step_job(out.job_id, w[0], w[1], None, 1).unwrap();
    }
    (c, out)
}

#[test]
fn legal_steps_are_exactly_the_forward_path_failing_and_finishing_an_abandon() {
    let forward = [
        (Planned, Backfill),
        (Backfill, Fence),
        (Fence, DeltaCopy),
        (DeltaCopy, Cutover),
        (Cutover, Cleanup),
        (Cleanup, Done),
    ];
    for from in ALL {
        for to in ALL {
            let expected = forward.contains(&(from, to))
                || (to == Failed
                    && matches!(
                        from,
                        Planned | Backfill | Fence | DeltaCopy | Cutover | Cleanup
                    ))
                || (from, to) == (Abandoning, Abandoned);
            assert_eq!(from.can_step_to(to), expected, "{from:?} -> {to:?}");
        }
    }
}

#[test]
fn abandon_is_allowed_before_cutover_and_refused_from_cutover_on() {
    for phase in [Planned, Backfill, Fence, DeltaCopy] {
        let (mut c, out) = with_job_in(phase);
        let v = c.version;
        assert_eq!(c.abandon_job(out.job_id, 5), Ok(true), "{phase:?}");
        let job = &c.jobs[&out.job_id];
        assert_eq!(
            (job.phase, job.abandon_from, c.version),
            (Abandoning, Some(phase), v + 1)
        );
        // Repeating it is an idempotent no-op.
        assert_eq!(c.abandon_job(out.job_id, 6), Ok(false));
        assert_eq!(c.version, v + 1);
        c.step_job(out.job_id, Abandoning, Abandoned, None, 7)
            .unwrap();
        assert_eq!(c.abandon_job(out.job_id, 8), Ok(false));
        let route = &c.routes[&out.right.id];
        assert_eq!(
            (route.group, route.epoch, route.state),
            (1, 1, RouteState::Active),
            "source owns it again"
        );
    }
    for phase in [Cutover, Cleanup, Done] {
        let (mut c, out) = with_job_in(phase);
        let v = c.version;
        assert_eq!(
            c.abandon_job(out.job_id, 5),
            Err(CatalogError::AbandonRefused {
                job: out.job_id,
                phase
            })
        );
        assert_eq!((c.jobs[&out.job_id].phase, c.version), (phase, v));
    }
    let (mut c, _) = with_job_in(Backfill);
    assert_eq!(c.abandon_job(99, 0), Err(CatalogError::UnknownJob(99)));
}

#[test]
fn a_failed_job_is_abandoned_only_with_a_pre_cutover_retry_phase() {
    for (failed_in, retry, allowed) in [
        (Planned, Backfill, true),
        (Backfill, Backfill, true),
        (Fence, Fence, true),
        (DeltaCopy, DeltaCopy, true),
        (Cutover, Cutover, false),
        (Cleanup, Cleanup, false),
    ] {
        let (mut c, out) = with_job_in(failed_in);
        c.step_job(out.job_id, failed_in, Failed, Some("stuck".into()), 3)
            .unwrap();
        assert_eq!(c.jobs[&out.job_id].retry_phase, Some(retry));
        let got = c.abandon_job(out.job_id, 4);
        if allowed {
            assert_eq!(got, Ok(true));
            assert_eq!(c.jobs[&out.job_id].abandon_from, Some(retry));
        } else {
            assert_eq!(
                got,
                Err(CatalogError::AbandonRefused {
                    job: out.job_id,
                    phase: Failed
                })
            );
        }
    }
}

#[test]
fn retry_returns_a_failed_job_to_its_retry_phase_and_nothing_else() {
    let (mut c, out) = with_job_in(Fence);
    assert_eq!(
        c.retry_job(out.job_id, 1),
        Err(CatalogError::RetryRefused {
            job: out.job_id,
            phase: Fence
        })
    );
    c.step_job(out.job_id, Fence, Failed, Some("x".into()), 2)
        .unwrap();
    assert_eq!(
        c.routes[&out.right.id].state,
        RouteState::WriteFenced,
        "FAILED keeps the fence"
    );
    c.retry_job(out.job_id, 3).unwrap();
    let job = &c.jobs[&out.job_id];
    assert_eq!((job.phase, job.retry_phase), (Fence, None));
    assert!(
        c.retry_job(out.job_id, 4).is_err(),
        "a second retry is refused"
    );
    c.step_job(out.job_id, Fence, Failed, None, 5).unwrap();
    c.abandon_job(out.job_id, 6).unwrap();
    assert_eq!(
        c.retry_job(out.job_id, 7),
        Err(CatalogError::RetryRefused {
            job: out.job_id,
            phase: Abandoning
        })
    );
}

#[test]
fn at_most_one_live_job_including_failed_and_abandoning() {
    let (mut c, out) = with_job_in(Backfill);
    let try_second = |c: &mut Catalog| c.start_migration(c.version, 2, b"t", 1, 0);
    assert_eq!(
        try_second(&mut c),
        Err(CatalogError::TooManyInFlightJobs { live: out.job_id })
    );
    c.step_job(out.job_id, Backfill, Failed, None, 1).unwrap();
    assert_eq!(
        try_second(&mut c),
        Err(CatalogError::TooManyInFlightJobs { live: out.job_id })
    );
    c.abandon_job(out.job_id, 2).unwrap();
    assert_eq!(
        try_second(&mut c),
        Err(CatalogError::TooManyInFlightJobs { live: out.job_id })
    );
    // The deprecated SplitRange alias obeys the same cap.
    let v = c.version;
    assert_eq!(
        c.split(v, 2, b"t", 1, 0),
        Err(CatalogError::TooManyInFlightJobs { live: out.job_id })
    );
    c.step_job(out.job_id, Abandoning, Abandoned, None, 3)
        .unwrap();
    let second = try_second(&mut c).unwrap();
    assert!(second.job_id > out.job_id);
}

#[test]
fn same_group_splits_overlapping_a_live_job_are_refused() {
    let (mut c, out) = with_job_in(DeltaCopy);
    // The left child ["", "g") lies inside the job's original route ["", "m").
    let v = c.version;
    assert_eq!(
        c.split(v, out.left.id, b"c", 0, 0),
        Err(CatalogError::SplitJobOverlap {
            route: out.left.id,
            job: out.job_id
        })
    );
    assert_eq!(c.version, v);
    // A disjoint route splits as usual.
    c.split(v, 2, b"t", 0, 0).unwrap();
    c.check_tiling().unwrap();
    // Once the job is terminal, the overlap is gone.
    for (from, to) in [(DeltaCopy, Cutover), (Cutover, Cleanup), (Cleanup, Done)] {
        c.step_job(out.job_id, from, to, None, 1).unwrap();
    }
    let v = c.version;
    c.split(v, out.left.id, b"c", 0, 0).unwrap();
}

#[test]
fn start_migration_needs_another_existing_group() {
    let mut c = Catalog::genesis(3, &[b"m".to_vec()]).unwrap();
    assert_eq!(
        c.start_migration(1, 1, b"g", 0, 0),
        Err(CatalogError::SameGroupMigration(1))
    );
    assert_eq!(
        c.start_migration(1, 1, b"g", 1, 0),
        Err(CatalogError::SameGroupMigration(1))
    );
    assert_eq!(
        c.start_migration(1, 1, b"g", 4, 0),
        Err(CatalogError::UnknownGroup(4))
    );
    assert_eq!(
        c.start_migration(2, 1, b"g", 3, 0),
        Err(CatalogError::VersionMismatch {
            expected: 2,
            current: 1
        })
    );
    assert_eq!(
        c.start_migration(1, 1, b"q", 3, 0),
        Err(CatalogError::KeyOutsideRoute(1))
    );
    assert_eq!(c.version, 1);
    let out = c.start_migration(1, 1, b"g", 3, 9).unwrap();
    let job = &c.jobs[&out.job_id];
    assert_eq!(
        (job.source_group, job.target_group, job.phase, job.old_epoch),
        (1, 3, Planned, 1)
    );
    assert_eq!(
        (
            job.route_start.as_slice(),
            job.start.as_slice(),
            job.end.as_slice()
        ),
        (&b""[..], &b"g"[..], &b"m"[..])
    );
    assert!(job.new_epoch > 1);
    assert_eq!(c.routes[&out.right.id].state, RouteState::MigratingSource);
    c.check_tiling().unwrap();
}

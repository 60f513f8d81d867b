//! Unit tests for catalog transitions.

use super::*;

fn k(s: &str) -> Key {
    s.as_bytes().to_vec()
}

#[test]
fn genesis_tiles_and_assigns_round_robin() {
    let c = Catalog::genesis(3, &[k("g"), k("p"), k("t")]).unwrap();
    c.check_tiling().unwrap();
    let groups: Vec<u64> = c.sorted_routes().iter().map(|r| r.group).collect();
    assert_eq!(groups, vec![1, 2, 3, 1]);
    assert_eq!(c.version, 1);
    assert!(Catalog::genesis(3, &[k("p"), k("g")]).is_err());
    assert!(Catalog::genesis(3, &[k("")]).is_err());
    assert!(Catalog::genesis(0, &[]).is_err());
}

#[test]
fn same_group_split_replaces_parent_with_two_children() {
    let mut c = Catalog::genesis(3, &[]).unwrap();
    let out = c.split(1, 1, b"m", 0, 5).unwrap();
    assert_eq!(out.version, 2);
    assert_eq!(c.version, 2);
    assert!(!c.routes.contains_key(&1));
    assert_eq!(
        (out.left.start.clone(), out.left.end.clone()),
        (k(""), k("m"))
    );
    assert_eq!(
        (out.right.start.clone(), out.right.end.clone()),
        (k("m"), k(""))
    );
    assert_eq!((out.left.parent, out.right.parent), (1, 1));
    assert_eq!((out.left.epoch, out.right.epoch), (1, 1));
    assert_eq!(out.right.state, RouteState::Active);
    assert_eq!(out.job_id, 0);
    c.check_tiling().unwrap();
    assert_eq!(c.route_for_key(b"a").unwrap().id, out.left.id);
    assert_eq!(c.route_for_key(b"m").unwrap().id, out.right.id);
    assert_eq!(c.route_for_key(b"zzz").unwrap().id, out.right.id);
}

#[test]
fn split_errors() {
    let mut c = Catalog::genesis(3, &[k("m")]).unwrap();
    assert_eq!(
        c.split(7, 1, b"c", 0, 0),
        Err(CatalogError::VersionMismatch {
            expected: 7,
            current: 1
        })
    );
    assert_eq!(
        c.split(1, 99, b"c", 0, 0),
        Err(CatalogError::UnknownRoute(99))
    );
    assert_eq!(
        c.split(1, 1, b"", 0, 0),
        Err(CatalogError::KeyOutsideRoute(1))
    );
    assert_eq!(
        c.split(1, 1, b"m", 0, 0),
        Err(CatalogError::KeyOutsideRoute(1))
    );
    assert_eq!(
        c.split(1, 1, b"q", 0, 0),
        Err(CatalogError::KeyOutsideRoute(1))
    );
    assert_eq!(
        c.split(1, 2, b"m", 0, 0),
        Err(CatalogError::KeyOutsideRoute(2))
    );
    assert_eq!(
        c.split(1, 1, b"c", 9, 0),
        Err(CatalogError::UnknownGroup(9))
    );
    assert_eq!(c.version, 1, "failed splits leave the catalog unchanged");
    c.check_tiling().unwrap();
}

#[test]
fn cross_group_split_runs_job_to_cutover_with_new_epoch() {
    let mut c = Catalog::genesis(3, &[]).unwrap();
    let out = c.split(1, 1, b"m", 2, 10).unwrap();
    assert!(out.job_id > 0);
    assert_eq!(out.right.state, RouteState::MigratingSource);
    assert_eq!(out.right.group, 1);
    // A moving route cannot be split again.
    assert_eq!(
        c.split(2, out.right.id, b"x", 0, 0),
        Err(CatalogError::SplitJobOverlap {
            route: out.right.id,
            job: out.job_id
        })
    );
    use JobPhase::*;
    let path = [Planned, Backfill, Fence, DeltaCopy, Cutover, Cleanup, Done];
    for w in path.windows(2) {
        // Skipping ahead is illegal.
        if w[1] != Done {
            assert!(c.step_job(out.job_id, w[0], Done, None, 0).is_err());
        }
        c.step_job(out.job_id, w[0], w[1], None, 20).unwrap();
        let route = &c.routes[&out.right.id];
        match w[1] {
            Fence | DeltaCopy => assert_eq!(route.state, RouteState::WriteFenced),
            Cutover | Cleanup | Done => {
                assert_eq!((route.group, route.state), (2, RouteState::Active));
                assert!(route.epoch > out.right.epoch);
            }
            _ => assert_eq!(route.group, 1),
        }
        c.check_tiling().unwrap();
    }
    assert_eq!(c.jobs[&out.job_id].terminal_ms, 20);
}

#[test]
fn abandoned_job_leaves_source_authoritative() {
    let mut c = Catalog::genesis(3, &[]).unwrap();
    let out = c.split(1, 1, b"m", 3, 0).unwrap();
    c.step_job(out.job_id, JobPhase::Planned, JobPhase::Backfill, None, 1)
        .unwrap();
    c.step_job(out.job_id, JobPhase::Backfill, JobPhase::Fence, None, 1)
        .unwrap();
    c.step_job(
        out.job_id,
        JobPhase::Fence,
        JobPhase::Failed,
        Some("boom".into()),
        1,
    )
    .unwrap();
    assert!(c.abandon_job(out.job_id, 1).unwrap());
    c.step_job(
        out.job_id,
        JobPhase::Abandoning,
        JobPhase::Abandoned,
        None,
        2,
    )
    .unwrap();
    let route = &c.routes[&out.right.id];
    assert_eq!(
        (route.group, route.state, route.epoch),
        (1, RouteState::Active, out.right.epoch)
    );
    assert_eq!(c.jobs[&out.job_id].last_error, "boom");
    assert_eq!(c.jobs[&out.job_id].abandon_from, Some(JobPhase::Fence));
    // No abandoning after cutover.
    let out2 = c.split(c.version, out.left.id, b"f", 2, 0).unwrap();
    for (a, b) in [
        (JobPhase::Planned, JobPhase::Backfill),
        (JobPhase::Backfill, JobPhase::Fence),
        (JobPhase::Fence, JobPhase::DeltaCopy),
        (JobPhase::DeltaCopy, JobPhase::Cutover),
    ] {
        c.step_job(out2.job_id, a, b, None, 0).unwrap();
    }
    assert!(c
        .step_job(
            out2.job_id,
            JobPhase::Cutover,
            JobPhase::Abandoning,
            None,
            0
        )
        .is_err());
    assert!(c.abandon_job(out2.job_id, 0).is_err());
}

proptest::proptest! {
    #[test]
    fn random_splits_keep_tiling_and_version_increments(keys in proptest::collection::vec(proptest::collection::vec(0u8..4, 1..4), 1..30)) {
        let mut c = Catalog::genesis(3, &[]).unwrap();
        for key in keys {
            let route = c.route_for_key(&key).unwrap().clone();
            let before = c.version;
            match c.split(before, route.id, &key, 0, 0) {
                Ok(out) => {
                    proptest::prop_assert_eq!(c.version, before + 1);
                    proptest::prop_assert_eq!(out.left.parent, route.id);
                    proptest::prop_assert_eq!(out.right.parent, route.id);
                    proptest::prop_assert!(out.left.start < out.right.start);
                }
                Err(CatalogError::KeyOutsideRoute(_)) => {
                    proptest::prop_assert_eq!(key.clone(), route.start.clone());
                    proptest::prop_assert_eq!(c.version, before);
                }
                Err(e) => proptest::prop_assert!(false, "unexpected {e}"),
            }
            c.check_tiling().map_err(proptest::test_runner::TestCaseError::fail)?;
        }
    }
}

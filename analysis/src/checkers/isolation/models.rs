//! Consistency models and anomalies as Elle relates them: which models imply which, which
//! anomalies each model proscribes directly, and which anomalies imply others.
//!
//! From these three tables come the verdict ([`prohibited_by`]: the anomalies that make a
//! history invalid under a model) and the boundary ([`boundary`]: the weakest models a set of
//! anomalies rules out, `not`, and the stronger ones also ruled out, `also_not`). Models are
//! named as Elle's friendly names; Adya's `PL-*` names are accepted as aliases. The tables
//! state facts of the literature as Elle encodes them (jepsen-io/elle `consistency_model.clj`);
//! `lost-append` is this project's own anomaly and is proscribed by the weakest realtime model
//! (`strong-read-uncommitted`), since a final read only has to see an append because it
//! began after the append was acknowledged; `garbage-read` (a value nobody wrote) is also
//! ours, proscribed by `read-uncommitted`.

use std::collections::BTreeSet;
use std::fmt;

macro_rules! models {
    ($($(#[$attr:meta])* $variant:ident = $name:literal $(| $alias:literal)*),* $(,)?) => {
        /// A consistency model Elle knows, by its friendly name.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ConsistencyModel { $($(#[$attr])* $variant),* }

        impl ConsistencyModel {
            /// Every model, in declaration order.
            pub const ALL: &'static [ConsistencyModel] = &[$(ConsistencyModel::$variant),*];
            /// Every model's name, for `--help`.
            pub const NAMES: &'static [&'static str] = &[$($name),*];

            pub fn as_str(self) -> &'static str {
                match self { $(ConsistencyModel::$variant => $name),* }
            }

            fn from_name(s: &str) -> Option<ConsistencyModel> {
                match s {
                    $($name $(| $alias)* => Some(ConsistencyModel::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

models! {
    ReadUncommitted = "read-uncommitted" | "PL-1",
    ReadCommitted = "read-committed" | "PL-2",
    CursorStability = "cursor-stability" | "PL-CS",
    MonotonicView = "monotonic-view" | "PL-2L",
    MonotonicSnapshotRead = "monotonic-snapshot-read" | "PL-MSR",
    ConsistentView = "consistent-view" | "PL-2+",
    ForwardConsistentView = "forward-consistent-view" | "PL-FCV",
    RepeatableRead = "repeatable-read" | "PL-2.99",
    UpdateSerializable = "update-serializable" | "PL-3U",
    SnapshotIsolation = "snapshot-isolation" | "PL-SI",
    Serializable = "serializable" | "PL-3" | "conflict-serializable",
    #[default]
    StrictSerializable = "strict-serializable" | "PL-SS" | "strong-serializable",
    ViewSerializable = "view-serializable",
    CausalCerone = "causal-cerone",
    ReadAtomic = "read-atomic",
    MonotonicAtomicView = "monotonic-atomic-view",
    ParallelSnapshotIsolation = "parallel-snapshot-isolation",
    UpdateAtomic = "update-atomic",
    Prefix = "prefix",
    SessionSerializable = "session-serializable",
    OneSr = "1SR",
    StrongSessionSerializable = "strong-session-serializable",
    StrongSessionSnapshotIsolation = "strong-session-snapshot-isolation",
    StrongSnapshotIsolation = "strong-snapshot-isolation",
    StrongSessionReadUncommitted = "strong-session-read-uncommitted" | "strong-session-PL-1",
    StrongSessionReadCommitted = "strong-session-read-committed" | "strong-session-PL-2",
    StrongReadUncommitted = "strong-read-uncommitted" | "strong-PL-1",
    StrongReadCommitted = "strong-read-committed" | "strong-PL-2",
    Linearizable = "linearizable",
    Sequential = "sequential",
    Causal = "causal",
    WritesFollowReads = "writes-follow-reads",
    Pram = "PRAM",
    MonotonicReads = "monotonic-reads",
    MonotonicWrites = "monotonic-writes",
    ReadYourWrites = "read-your-writes",
}

impl fmt::Display for ConsistencyModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ConsistencyModel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ConsistencyModel::from_name(s).ok_or_else(|| {
            format!(
                "unknown consistency model {s:?}; known models: {}",
                ConsistencyModel::NAMES.join(", ")
            )
        })
    }
}

use ConsistencyModel as M;

/// `a` implies each of `b`: a history satisfying `a` satisfies every `b`.
const MODEL_IMPLIES: &[(M, &[M])] = &[
    (M::CausalCerone, &[M::ReadAtomic]),
    (M::ConsistentView, &[M::CursorStability, M::MonotonicView]),
    (M::CursorStability, &[M::ReadCommitted]),
    (M::ForwardConsistentView, &[M::ConsistentView]),
    (M::ReadCommitted, &[M::ReadUncommitted]),
    (
        M::Serializable,
        &[
            M::RepeatableRead,
            M::UpdateSerializable,
            M::SnapshotIsolation,
            M::ViewSerializable,
        ],
    ),
    (M::UpdateSerializable, &[M::ForwardConsistentView]),
    (M::MonotonicAtomicView, &[M::ReadCommitted]),
    (M::MonotonicView, &[M::ReadCommitted]),
    (M::MonotonicSnapshotRead, &[M::ReadCommitted]),
    (
        M::ParallelSnapshotIsolation,
        &[M::CausalCerone, M::UpdateAtomic],
    ),
    (M::Prefix, &[M::CausalCerone]),
    (M::ReadAtomic, &[M::MonotonicAtomicView]),
    (
        M::RepeatableRead,
        &[M::CursorStability, M::MonotonicAtomicView],
    ),
    (M::UpdateAtomic, &[M::ReadAtomic]),
    (M::SessionSerializable, &[M::OneSr]),
    (
        M::SnapshotIsolation,
        &[
            M::ForwardConsistentView,
            M::MonotonicAtomicView,
            M::MonotonicSnapshotRead,
            M::ParallelSnapshotIsolation,
            M::Prefix,
        ],
    ),
    (
        M::StrictSerializable,
        &[
            M::Serializable,
            M::Linearizable,
            M::SnapshotIsolation,
            M::StrongSnapshotIsolation,
            M::StrongSessionSerializable,
            M::SessionSerializable,
        ],
    ),
    (M::StrongSessionReadUncommitted, &[M::ReadUncommitted]),
    (
        M::StrongSessionReadCommitted,
        &[M::ReadCommitted, M::StrongSessionReadUncommitted],
    ),
    (M::StrongReadUncommitted, &[M::StrongSessionReadUncommitted]),
    (
        M::StrongReadCommitted,
        &[M::StrongSessionReadCommitted, M::StrongReadUncommitted],
    ),
    (
        M::StrongSessionSerializable,
        &[M::Serializable, M::StrongSessionSnapshotIsolation],
    ),
    (
        M::StrongSessionSnapshotIsolation,
        &[M::SnapshotIsolation, M::StrongSessionReadCommitted],
    ),
    (
        M::StrongSnapshotIsolation,
        &[M::StrongSessionSnapshotIsolation, M::StrongReadCommitted],
    ),
    (M::Linearizable, &[M::Sequential]),
    (M::Sequential, &[M::Causal]),
    (M::Causal, &[M::WritesFollowReads, M::Pram]),
    (
        M::Pram,
        &[M::MonotonicReads, M::MonotonicWrites, M::ReadYourWrites],
    ),
];

/// The anomalies each model proscribes beyond those of the models it implies.
const PROSCRIBES: &[(M, &[&str])] = &[
    (M::CausalCerone, &["internal", "G1a"]),
    (M::CursorStability, &["G1", "G-cursor", "lost-update"]),
    (M::MonotonicView, &["G1", "G-monotonic"]),
    (M::MonotonicSnapshotRead, &["G1", "G-MSR"]),
    (M::ConsistentView, &["G1", "G-single"]),
    (M::ForwardConsistentView, &["G1", "G-SIb"]),
    (M::ParallelSnapshotIsolation, &["internal", "G1a"]),
    (M::Serializable, &["G1", "G2", "internal"]),
    (M::ReadCommitted, &["G1"]),
    (
        M::ReadUncommitted,
        &[
            "G0",
            "duplicate-elements",
            "cyclic-versions",
            "garbage-read",
        ],
    ),
    (M::Prefix, &["internal", "G1a"]),
    (
        M::SnapshotIsolation,
        &["internal", "G1", "G-SI", "G-nonadjacent"],
    ),
    (M::ReadAtomic, &["internal", "G1a", "future-read"]),
    (M::RepeatableRead, &["G1", "G2-item", "lost-update"]),
    (M::UpdateAtomic, &["lost-update"]),
    (
        M::StrictSerializable,
        &["G1", "G1c-realtime", "G2-realtime"],
    ),
    (M::StrongSessionReadUncommitted, &["G0-process"]),
    (M::StrongSessionReadCommitted, &["G1c-process"]),
    (M::StrongReadUncommitted, &["G0-realtime", "lost-append"]),
    (M::StrongReadCommitted, &["G1c-realtime"]),
    (
        M::StrongSessionSnapshotIsolation,
        &["internal", "G1-process", "G-nonadjacent-process"],
    ),
    (
        M::StrongSnapshotIsolation,
        &["internal", "G1-realtime", "G-nonadjacent-realtime"],
    ),
    (M::StrongSessionSerializable, &["G1-process", "G2-process"]),
    (M::UpdateSerializable, &["G1", "G-update"]),
];

/// `a` implies each of `b`: a history with `a` also exhibits every `b`.
const ANOMALY_IMPLIES: &[(&str, &[&str])] = &[
    ("G0", &["G1c", "G0-process"]),
    ("G0-process", &["G1c-process", "G0-realtime"]),
    ("G0-realtime", &["G1c-realtime"]),
    ("G1a", &["G1"]),
    ("G1b", &["G1"]),
    ("G1c", &["G1", "G1c-process"]),
    ("G1c-process", &["G1c-realtime", "G1-process"]),
    ("G1c-realtime", &["G1-realtime"]),
    ("G1", &["G1-process"]),
    ("G1-process", &["G1-realtime"]),
    (
        "G-single-item",
        &["G-single", "G-single-item-process", "G-nonadjacent-item"],
    ),
    (
        "G-single-item-process",
        &[
            "G-single-process",
            "G-single-item-realtime",
            "G-nonadjacent-item-process",
        ],
    ),
    (
        "G-single-item-realtime",
        &["G-single-realtime", "G-nonadjacent-item-realtime"],
    ),
    ("G-single", &["G-nonadjacent", "GSIb", "G-single-process"]),
    (
        "G-single-process",
        &["G-nonadjacent-process", "G-single-realtime"],
    ),
    ("G-single-realtime", &["G-nonadjacent-realtime"]),
    (
        "G-nonadjacent-item",
        &["G-nonadjacent", "G2-item", "G-nonadjacent-item-process"],
    ),
    (
        "G-nonadjacent-item-process",
        &[
            "G-nonadjacent-process",
            "G2-item-process",
            "G-nonadjacent-item-realtime",
        ],
    ),
    (
        "G-nonadjacent-item-realtime",
        &["G2-item-realtime", "G-nonadjacent-realtime"],
    ),
    ("G-nonadjacent", &["G2", "G-nonadjacent-process"]),
    (
        "G-nonadjacent-process",
        &["G2-process", "G-nonadjacent-realtime"],
    ),
    ("G-nonadjacent-realtime", &["G2-realtime"]),
    ("G2", &["G2-process"]),
    ("G2-item", &["G2", "G2-item-process"]),
    ("G2-item-process", &["G2-process", "G2-item-realtime"]),
    ("G2-item-realtime", &["G2-realtime"]),
    ("G2-process", &["G2-realtime"]),
    ("GSIa", &["GSI"]),
    ("GSIb", &["GSI"]),
    ("incompatible-order", &["G1a"]),
    ("future-read", &["G1c"]),
    ("dirty-update", &["G1a"]),
    ("lost-update", &["write-skew", "G2-item"]),
    ("write-skew", &["G2"]),
];

fn implied_models(m: M) -> impl Iterator<Item = M> {
    MODEL_IMPLIES
        .iter()
        .filter(move |(a, _)| *a == m)
        .flat_map(|(_, bs)| bs.iter().copied())
}

fn implying_models(m: M) -> impl Iterator<Item = M> {
    MODEL_IMPLIES
        .iter()
        .filter(move |(_, bs)| bs.contains(&m))
        .map(|(a, _)| *a)
}

/// Breadth-first closure of `start` under `next`, `start` included.
fn closure<T: Copy + Ord, I: Iterator<Item = T>>(
    start: impl IntoIterator<Item = T>,
    next: impl Fn(T) -> I,
) -> BTreeSet<T> {
    let mut seen: BTreeSet<T> = BTreeSet::new();
    let mut todo: Vec<T> = start.into_iter().collect();
    while let Some(x) = todo.pop() {
        if seen.insert(x) {
            todo.extend(next(x));
        }
    }
    seen
}

/// Every anomaly implied by any of `anomalies`, themselves included.
pub fn implied_anomalies<'a>(anomalies: impl IntoIterator<Item = &'a str>) -> BTreeSet<&'a str> {
    closure(anomalies, |a: &'a str| {
        ANOMALY_IMPLIES
            .iter()
            .filter(move |(x, _)| *x == a)
            .flat_map(|(_, bs)| bs.iter().copied())
    })
}

/// Every anomaly that implies any of `anomalies`, themselves included.
fn implying_anomalies<'a>(anomalies: impl IntoIterator<Item = &'a str>) -> BTreeSet<&'a str> {
    closure(anomalies, |a: &'a str| {
        ANOMALY_IMPLIES
            .iter()
            .filter(move |(_, bs)| bs.contains(&a))
            .map(|(x, _)| *x)
    })
}

/// The anomalies whose presence makes a history violate `model`.
pub fn prohibited_by(model: M) -> BTreeSet<&'static str> {
    let direct = closure([model], implied_models).into_iter().flat_map(|m| {
        PROSCRIBES
            .iter()
            .filter(move |(x, _)| *x == m)
            .flat_map(|(_, a)| a.iter().copied())
    });
    implying_anomalies(direct)
}

/// The models `anomalies` rule out: `not` (the weakest) and `also_not` (the rest), sorted
/// by name.
pub fn boundary(anomalies: &BTreeSet<&str>) -> (Vec<M>, Vec<M>) {
    let implied = implied_anomalies(anomalies.iter().copied());
    let direct = PROSCRIBES
        .iter()
        .filter(|(_, a)| a.iter().any(|x| implied.contains(x)))
        .map(|(m, _)| *m);
    let impossible = closure(direct, implying_models);
    let weakest = |m: &M| {
        !closure(implied_models(*m), implied_models)
            .iter()
            .any(|x| impossible.contains(x))
    };
    let mut not: Vec<M> = impossible.iter().copied().filter(weakest).collect();
    let mut also: Vec<M> = impossible.iter().copied().filter(|m| !weakest(m)).collect();
    not.sort_by_key(|m| m.as_str());
    also.sort_by_key(|m| m.as_str());
    (not, also)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_aliases_parse() {
        for name in ConsistencyModel::NAMES {
            assert_eq!(name.parse::<ConsistencyModel>().unwrap().as_str(), *name);
        }
        assert_eq!("PL-3".parse::<M>().unwrap(), M::Serializable);
        assert_eq!(
            "strong-serializable".parse::<M>().unwrap(),
            M::StrictSerializable
        );
        assert!("bogus"
            .parse::<M>()
            .unwrap_err()
            .contains("strict-serializable"));
        assert_eq!(M::default(), M::StrictSerializable);
    }

    #[test]
    fn g_single_is_allowed_by_read_committed_but_not_snapshot_isolation() {
        assert!(!prohibited_by(M::ReadCommitted).contains("G-single-item"));
        assert!(prohibited_by(M::SnapshotIsolation).contains("G-single-item"));
        assert!(prohibited_by(M::RepeatableRead).contains("G-single-item"));
        assert!(prohibited_by(M::StrictSerializable).contains("G-single-item-realtime"));
        assert!(!prohibited_by(M::Serializable).contains("G-single-item-realtime"));
    }

    #[test]
    fn g0_is_prohibited_everywhere_and_g1a_not_by_read_uncommitted() {
        for m in ConsistencyModel::ALL {
            let p = prohibited_by(*m);
            if closure([*m], implied_models).contains(&M::ReadUncommitted) {
                assert!(p.contains("G0"), "{m}");
            }
        }
        assert!(!prohibited_by(M::ReadUncommitted).contains("G1a"));
        assert!(prohibited_by(M::ReadCommitted).contains("G1a"));
        assert!(prohibited_by(M::ReadCommitted).contains("incompatible-order"));
    }

    #[test]
    fn boundary_of_g_single_item_is_consistent_view_and_repeatable_read() {
        let (not, also) = boundary(&["G-single-item"].into_iter().collect());
        let names: Vec<_> = not.iter().map(|m| m.as_str()).collect();
        // snapshot-isolation implies forward-consistent-view, itself ruled out: not weakest.
        assert_eq!(names, ["consistent-view", "repeatable-read"]);
        assert!(also.contains(&M::SnapshotIsolation) && also.contains(&M::Serializable));
        assert!(also.contains(&M::StrictSerializable));
        assert!(!also.contains(&M::ReadCommitted));
    }

    #[test]
    fn boundary_of_g0_is_read_uncommitted() {
        let (not, also) = boundary(&["G0"].into_iter().collect());
        assert_eq!(not, [M::ReadUncommitted]);
        assert!(also.contains(&M::StrictSerializable));
    }

    #[test]
    fn lost_append_needs_realtime() {
        assert!(!prohibited_by(M::Serializable).contains("lost-append"));
        assert!(prohibited_by(M::StrictSerializable).contains("lost-append"));
    }
}

//! Partition shapes, computed as a *grudge*: for each node, the set of nodes whose packets it
//! drops. Pure functions, so every shape is unit-tested without a cluster.

use rand::seq::SliceRandom;
use rand::Rng;
use std::collections::{BTreeMap, BTreeSet};

/// How to cut the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PartitionMode {
    /// One random node cut off from all others (a minority of one vs. the majority).
    One,
    /// Random halves: a minority and a majority that cannot talk to each other.
    Majority,
    /// Two halves that can only talk through one bridge node that sees both.
    Bridge,
    /// One-way ring: each node drops what its predecessor sends it.
    Ring,
    /// The current leader of the hot range's group cut off from all others.
    Leader,
    /// Jepsen's majorities ring: on a random ring, each node exchanges packets only with
    /// its nearest neighbours, a majority (itself included), and no two nodes see the same
    /// majority. Needs 5 nodes: on 3 or 4 every node would still see (nearly) everyone.
    MajoritiesRing,
}

impl PartitionMode {
    pub const ALL: [PartitionMode; 6] = [
        PartitionMode::One,
        PartitionMode::Majority,
        PartitionMode::Bridge,
        PartitionMode::Ring,
        PartitionMode::Leader,
        PartitionMode::MajoritiesRing,
    ];

    /// The smallest cluster on which the shape cuts anything that matters.
    pub fn min_nodes(self) -> usize {
        match self {
            PartitionMode::MajoritiesRing => 5,
            _ => 2,
        }
    }

    /// The shapes of [`Self::ALL`] that make sense on `nodes` nodes (the default choice).
    pub fn all_for(nodes: usize) -> Vec<PartitionMode> {
        Self::ALL
            .into_iter()
            .filter(|m| m.min_nodes() <= nodes)
            .collect()
    }

    pub fn parse(s: &str) -> Option<PartitionMode> {
        Self::ALL.into_iter().find(|m| m.name() == s)
    }

    pub fn name(self) -> &'static str {
        match self {
            PartitionMode::One => "one",
            PartitionMode::Majority => "majority",
            PartitionMode::Bridge => "bridge",
            PartitionMode::Ring => "ring",
            PartitionMode::Leader => "leader",
            PartitionMode::MajoritiesRing => "majorities-ring",
        }
    }
}

/// node → the nodes whose packets it drops.
pub type Grudge = BTreeMap<String, BTreeSet<String>>;

/// Cuts `a` and `b` apart in both directions.
fn cut(grudge: &mut Grudge, a: &[String], b: &[String]) {
    for x in a {
        for y in b {
            grudge.entry(x.clone()).or_default().insert(y.clone());
            grudge.entry(y.clone()).or_default().insert(x.clone());
        }
    }
}

/// Isolates `victim` from every other node.
pub fn isolate(nodes: &[String], victim: &str) -> Grudge {
    let mut g = Grudge::new();
    let others: Vec<String> = nodes.iter().filter(|n| *n != victim).cloned().collect();
    cut(&mut g, &[victim.to_string()], &others);
    g
}

/// The grudge for `mode`. `leader` is used by [`PartitionMode::Leader`]; without one it
/// falls back to a random node.
pub fn grudge<R: Rng>(
    mode: PartitionMode,
    nodes: &[String],
    leader: Option<&str>,
    rng: &mut R,
) -> Grudge {
    let mut shuffled = nodes.to_vec();
    shuffled.shuffle(rng);
    match mode {
        PartitionMode::One => isolate(nodes, &shuffled[0]),
        PartitionMode::Leader => isolate(nodes, leader.unwrap_or(&shuffled[0])),
        PartitionMode::Majority => {
            let (minority, majority) = shuffled.split_at(nodes.len() / 2);
            let mut g = Grudge::new();
            cut(&mut g, minority, majority);
            g
        }
        PartitionMode::Bridge => {
            // [left | bridge | right]; left and right never meet, bridge sees both.
            let bridge = nodes.len() / 2;
            let mut g = Grudge::new();
            cut(&mut g, &shuffled[..bridge], &shuffled[bridge + 1..]);
            g
        }
        PartitionMode::Ring => {
            let mut g = Grudge::new();
            let n = shuffled.len();
            if n >= 2 {
                for i in 0..n {
                    let prev = &shuffled[(i + n - 1) % n];
                    g.entry(shuffled[i].clone())
                        .or_default()
                        .insert(prev.clone());
                }
            }
            g
        }
        PartitionMode::MajoritiesRing => majorities_ring(&shuffled),
    }
}

/// Cuts every pair of `ring` farther apart (around the ring) than `reach`, where
/// `2 × reach + 1` is the smallest odd number at least a majority, so each node keeps a
/// majority of its own.
fn majorities_ring(ring: &[String]) -> Grudge {
    let n = ring.len();
    let reach = (n / 2).div_ceil(2);
    let mut g = Grudge::new();
    for i in 0..n {
        for j in i + 1..n {
            let distance = (j - i).min(n - (j - i));
            if distance > reach {
                cut(
                    &mut g,
                    std::slice::from_ref(&ring[i]),
                    std::slice::from_ref(&ring[j]),
                );
            }
        }
    }
    g
}

/// Whether, under `grudge`, node `node` can still exchange packets both ways with a
/// majority of the cluster (itself included).
pub fn has_majority(grudge: &Grudge, nodes: &[String], node: &str) -> bool {
    let empty = BTreeSet::new();
    let mine = grudge.get(node).unwrap_or(&empty);
    let reachable = nodes
        .iter()
        .filter(|o| {
            *o == node || (!mine.contains(*o) && !grudge.get(*o).unwrap_or(&empty).contains(node))
        })
        .count();
    reachable * 2 > nodes.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn names(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    #[test]
    fn one_isolates_exactly_one_node_both_ways() {
        let nodes = names(5);
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let g = grudge(PartitionMode::One, &nodes, None, &mut rng);
        let victim = nodes
            .iter()
            .find(|n| g.get(*n).map(|s| s.len()) == Some(4))
            .expect("a victim");
        assert!(!has_majority(&g, &nodes, victim));
        for other in nodes.iter().filter(|n| *n != victim) {
            assert_eq!(g[other], BTreeSet::from([victim.clone()]));
            assert!(has_majority(&g, &nodes, other));
        }
    }

    #[test]
    fn leader_mode_isolates_the_named_leader() {
        let nodes = names(3);
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let g = grudge(PartitionMode::Leader, &nodes, Some("n2"), &mut rng);
        assert_eq!(
            g["n2"],
            BTreeSet::from(["n1".to_string(), "n3".to_string()])
        );
        assert!(!has_majority(&g, &nodes, "n2"));
    }

    #[test]
    fn majority_splits_into_disjoint_halves() {
        for seed in 0..20 {
            let nodes = names(5);
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let g = grudge(PartitionMode::Majority, &nodes, None, &mut rng);
            let with_majority = nodes.iter().filter(|n| has_majority(&g, &nodes, n)).count();
            assert_eq!(with_majority, 3, "seed {seed}: {g:?}");
        }
    }

    #[test]
    fn bridge_node_sees_both_sides_which_do_not_see_each_other() {
        let nodes = names(5);
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        let g = grudge(PartitionMode::Bridge, &nodes, None, &mut rng);
        let bridge: Vec<&String> = nodes.iter().filter(|n| !g.contains_key(*n)).collect();
        assert_eq!(bridge.len(), 1, "{g:?}");
        for n in nodes.iter().filter(|n| *n != bridge[0]) {
            assert_eq!(
                g[n].len(),
                2,
                "each side drops the two nodes of the other side: {g:?}"
            );
        }
    }

    #[test]
    fn majorities_ring_gives_every_node_a_different_majority_at_5_and_7() {
        for n in [5, 7] {
            let nodes = names(n);
            let mut rng = rand::rngs::StdRng::seed_from_u64(n as u64);
            let g = grudge(PartitionMode::MajoritiesRing, &nodes, None, &mut rng);
            let mut seen = BTreeSet::new();
            for node in &nodes {
                assert!(
                    has_majority(&g, &nodes, node),
                    "{node} lost its majority at {n}: {g:?}"
                );
                let visible: BTreeSet<&String> =
                    nodes.iter().filter(|o| !g[node].contains(*o)).collect();
                assert!(visible.len() < n, "{node} sees everyone at {n}: {g:?}");
                assert!(
                    seen.insert(visible),
                    "two nodes see the same majority at {n}: {g:?}"
                );
            }
        }
        assert!(!PartitionMode::all_for(3).contains(&PartitionMode::MajoritiesRing));
        assert!(PartitionMode::all_for(5).contains(&PartitionMode::MajoritiesRing));
        assert_eq!(
            PartitionMode::parse("majorities-ring"),
            Some(PartitionMode::MajoritiesRing)
        );
    }

    #[test]
    fn leader_mode_at_5_leaves_the_other_four_a_majority() {
        let nodes = names(5);
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let g = grudge(PartitionMode::Leader, &nodes, Some("n4"), &mut rng);
        assert!(!has_majority(&g, &nodes, "n4"));
        assert!(
            nodes
                .iter()
                .filter(|n| *n != "n4")
                .all(|n| has_majority(&g, &nodes, n)),
            "{g:?}"
        );
    }

    #[test]
    fn ring_is_one_way_and_every_node_drops_one_predecessor() {
        let nodes = names(3);
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        let g = grudge(PartitionMode::Ring, &nodes, None, &mut rng);
        for n in &nodes {
            assert_eq!(g[n].len(), 1);
            let prev = g[n].iter().next().unwrap();
            assert!(!g[prev].contains(n), "ring must be one-way: {g:?}");
        }
    }
}

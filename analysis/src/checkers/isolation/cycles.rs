//! Finding and naming cycles: Tarjan's strongly connected components (iterative), then,
//! inside each component, a search for the cycle anomalies in Elle's order of severity.
//!
//! Types are searched data-only first (`G0`, `G1c`, `G-single-item`, `G-nonadjacent-item`,
//! `G2-item`), then their `-process` variants, then `-realtime`; a type implied by one
//! already found in the component is skipped, as Elle does. Each search is a breadth-first
//! search over (node, state) pairs, started from every edge of the type's required kind
//! whose endpoints share a component of the type's allowed edges, so the cycle found
//! through a start edge is a shortest one. The found cycle is named by its edges
//! ([`classify`]), Elle's explainer rule: one rw → G-single-item, several non-adjacent rw →
//! G-nonadjacent-item, several with two adjacent → G2-item, else wr → G1c, else G0; a
//! realtime edge adds `-realtime`, else a process edge `-process`.

use super::graph::{EdgeKind, Graph};
use super::models::implied_anomalies;
use rustc_hash::FxHashMap;
use std::collections::{BTreeSet, VecDeque};
use std::time::Instant;

/// A step of a cycle: graph nodes (time points included) and the edge kind taken.
pub type Step = (u32, u32, EdgeKind);

/// A cycle found and named.
#[derive(Clone, Debug)]
pub struct Cycle {
    pub name: String,
    pub steps: Vec<Step>,
}

/// The cycle search ran out of its time budget.
#[derive(Debug)]
pub struct OutOfTime;

/// Strongly connected components over the edges whose kind bit is in `mask`: the
/// component id of every node. Iterative Tarjan.
pub fn tarjan(g: &Graph, mask: u8) -> Vec<u32> {
    const UNSEEN: u32 = u32::MAX;
    let n = g.n();
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0u32; n];
    let mut comp = vec![UNSEEN; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut call: Vec<(u32, u32)> = Vec::new(); // (node, next edge position)
    let mut next_index = 0u32;
    let mut next_comp = 0u32;
    for root in 0..n as u32 {
        if index[root as usize] != UNSEEN {
            continue;
        }
        call.push((root, g.offsets[root as usize]));
        index[root as usize] = next_index;
        low[root as usize] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root as usize] = true;
        while let Some(&mut (v, ref mut pos)) = call.last_mut() {
            let end = g.offsets[v as usize + 1];
            let mut descended = false;
            while *pos < end {
                let e = *pos as usize;
                *pos += 1;
                if (1u8 << g.kinds[e]) & mask == 0 {
                    continue;
                }
                let w = g.targets[e];
                if index[w as usize] == UNSEEN {
                    index[w as usize] = next_index;
                    low[w as usize] = next_index;
                    next_index += 1;
                    stack.push(w);
                    on_stack[w as usize] = true;
                    call.push((w, g.offsets[w as usize]));
                    descended = true;
                    break;
                } else if on_stack[w as usize] {
                    low[v as usize] = low[v as usize].min(index[w as usize]);
                }
            }
            if descended {
                continue;
            }
            call.pop();
            if let Some(&(parent, _)) = call.last() {
                low[parent as usize] = low[parent as usize].min(low[v as usize]);
            }
            if low[v as usize] == index[v as usize] {
                loop {
                    let w = stack.pop().expect("tarjan stack holds v");
                    on_stack[w as usize] = false;
                    comp[w as usize] = next_comp;
                    if w == v {
                        break;
                    }
                }
                next_comp += 1;
            }
        }
    }
    comp
}

/// Groups nodes by component and keeps those with two or more nodes.
pub fn nontrivial_components(comp: &[u32]) -> Vec<Vec<u32>> {
    let mut sizes: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    let mut count = vec![0u32; comp.len()];
    for &c in comp {
        count[c as usize] += 1;
    }
    for (v, &c) in comp.iter().enumerate() {
        if count[c as usize] >= 2 {
            sizes.entry(c).or_default().push(v as u32);
        }
    }
    let mut out: Vec<Vec<u32>> = sizes.into_values().collect();
    out.sort_by_key(|c| c[0]);
    out
}

/// Names a cycle by its edges (Elle's explainer). Steps through time points must already
/// be folded into single realtime steps.
pub fn classify(kinds: &[EdgeKind]) -> String {
    let count = |k: EdgeKind| kinds.iter().filter(|x| **x == k).count();
    let rw = count(EdgeKind::Rw);
    let adjacent_rw = (0..kinds.len())
        .any(|i| kinds[i] == EdgeKind::Rw && kinds[(i + 1) % kinds.len()] == EdgeKind::Rw);
    let base = if rw == 1 {
        "G-single-item"
    } else if rw > 1 {
        if adjacent_rw {
            "G2-item"
        } else {
            "G-nonadjacent-item"
        }
    } else if count(EdgeKind::Wr) > 0 {
        "G1c"
    } else {
        "G0"
    };
    let suffix = if count(EdgeKind::Realtime) > 0 {
        "-realtime"
    } else if count(EdgeKind::Process) > 0 {
        "-process"
    } else {
        ""
    };
    format!("{base}{suffix}")
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Base {
    G0,
    G1c,
    Single,
    Nonadjacent,
    G2,
}

impl Base {
    const ORDER: [Base; 5] = [
        Base::G0,
        Base::G1c,
        Base::Single,
        Base::Nonadjacent,
        Base::G2,
    ];

    fn name(self) -> &'static str {
        match self {
            Base::G0 => "G0",
            Base::G1c => "G1c",
            Base::Single => "G-single-item",
            Base::Nonadjacent => "G-nonadjacent-item",
            Base::G2 => "G2-item",
        }
    }

    fn allowed(self) -> u8 {
        let (ww, wr, rw) = (EdgeKind::Ww.bit(), EdgeKind::Wr.bit(), EdgeKind::Rw.bit());
        match self {
            Base::G0 => ww,
            Base::G1c => ww | wr,
            _ => ww | wr | rw,
        }
    }
}

// BFS state bits.
const RW1: u8 = 1; // at least one rw
const RW2: u8 = 2; // at least two rw
const LAST_RW: u8 = 4; // the last edge taken was rw
const WR: u8 = 8; // a wr edge was taken
const VAR: u8 = 16; // a variant (process/realtime) edge was taken

struct Spec {
    base: Base,
    variant: Option<EdgeKind>,
}

impl Spec {
    fn allowed(&self) -> u8 {
        self.base.allowed() | self.variant.map_or(0, |v| v.bit())
    }

    fn start_kind(&self) -> EdgeKind {
        match (self.base, self.variant) {
            (Base::G0, Some(v)) => v,
            (Base::G0, None) => EdgeKind::Ww,
            (Base::G1c, _) => EdgeKind::Wr,
            _ => EdgeKind::Rw,
        }
    }

    /// The state after taking an edge of `kind` from state `s`; `None` when the spec
    /// forbids it.
    fn step(&self, s: u8, kind: EdgeKind) -> Option<u8> {
        if kind == EdgeKind::Rw {
            if self.base == Base::Single && s & RW1 != 0 {
                return None;
            }
            if self.base == Base::Nonadjacent && s & LAST_RW != 0 {
                return None;
            }
            let counted = if s & RW1 != 0 { s | RW2 } else { s | RW1 };
            return Some(counted | LAST_RW);
        }
        let mut t = s & !LAST_RW;
        if kind == EdgeKind::Wr {
            t |= WR;
        }
        if Some(kind) == self.variant {
            t |= VAR;
        }
        Some(t)
    }

    /// Does a path in state `s` that closes the cycle (first edge of kind `first`) match?
    fn accepts(&self, s: u8, first: EdgeKind) -> bool {
        let data = match self.base {
            Base::G0 => true,
            Base::G1c => s & WR != 0,
            Base::Single => s & RW1 != 0 && s & RW2 == 0,
            Base::Nonadjacent => s & RW2 != 0 && !(s & LAST_RW != 0 && first == EdgeKind::Rw),
            Base::G2 => s & RW2 != 0,
        };
        data && (self.variant.is_none() || s & VAR != 0)
    }
}

/// Searches one component for cycle anomalies. `variants` are the variant edge kinds the
/// graph holds (process and/or realtime). Returns the cycles found, one per type.
pub fn search_component(
    g: &Graph,
    nodes: &[u32],
    variants: &[EdgeKind],
    deadline: Option<Instant>,
) -> Result<Vec<Cycle>, (Vec<Cycle>, OutOfTime)> {
    let local = Local::new(g, nodes);
    let mut found: Vec<Cycle> = Vec::new();
    let mut skip: BTreeSet<String> = BTreeSet::new();
    let variant_list: Vec<Option<EdgeKind>> = std::iter::once(None)
        .chain(variants.iter().copied().map(Some))
        .collect();
    for variant in variant_list {
        for base in Base::ORDER {
            let name = match variant {
                None => base.name().to_string(),
                Some(v) => format!(
                    "{}-{}",
                    base.name(),
                    if v == EdgeKind::Process {
                        "process"
                    } else {
                        "realtime"
                    }
                ),
            };
            if skip.contains(&name) {
                continue;
            }
            let spec = Spec { base, variant };
            match local.find(&spec, deadline) {
                Ok(Some(steps)) => {
                    let cycle = Cycle {
                        name: String::new(),
                        steps,
                    };
                    let named = Cycle {
                        name: classify(&fold_kinds(g, &cycle.steps)),
                        ..cycle
                    };
                    skip.extend(
                        implied_anomalies([named.name.as_str()])
                            .into_iter()
                            .map(str::to_string),
                    );
                    skip.insert(name);
                    found.push(named);
                }
                Ok(None) => {}
                Err(OutOfTime) => return Err((found, OutOfTime)),
            }
        }
    }
    Ok(found)
}

/// The kinds of a cycle's steps with runs through time points folded into one realtime
/// step.
pub fn fold_kinds(g: &Graph, steps: &[Step]) -> Vec<EdgeKind> {
    fold_steps(g, steps)
        .into_iter()
        .map(|(_, _, k)| k)
        .collect()
}

/// A cycle's steps between transactions only: a run `a -> p1 -> ... -> b` through time
/// points becomes `(a, b, Realtime)`. The cycle is rotated to start at a transaction.
pub fn fold_steps(g: &Graph, steps: &[Step]) -> Vec<Step> {
    let start = steps.iter().position(|s| g.is_txn(s.0)).unwrap_or(0);
    let mut out: Vec<Step> = Vec::new();
    let mut from: Option<u32> = None;
    for i in 0..steps.len() {
        let (a, b, k) = steps[(start + i) % steps.len()];
        let origin = from.unwrap_or(a);
        if g.is_txn(b) {
            let kind = if g.is_txn(a) && from.is_none() {
                k
            } else {
                EdgeKind::Realtime
            };
            out.push((origin, b, kind));
            from = None;
        } else {
            from = Some(origin);
        }
    }
    out
}

/// A component's induced subgraph with local node ids, in the same CSR form as the whole
/// graph (built once per component, shared by every spec's search).
struct Local {
    nodes: Vec<u32>,
    graph: Graph,
}

impl Local {
    fn new(g: &Graph, nodes: &[u32]) -> Local {
        let pos: FxHashMap<u32, u32> = nodes
            .iter()
            .enumerate()
            .map(|(i, &v)| (v, i as u32))
            .collect();
        let mut offsets = vec![0u32];
        let (mut targets, mut kinds) = (Vec::new(), Vec::new());
        for &v in nodes {
            for (w, k) in g.succ(v) {
                if let Some(&lw) = pos.get(&w) {
                    targets.push(lw);
                    kinds.push(k);
                }
            }
            offsets.push(targets.len() as u32);
        }
        Local {
            nodes: nodes.to_vec(),
            graph: Graph {
                n_txn: 0,
                offsets,
                targets,
                kinds,
            },
        }
    }

    fn succ(&self, v: u32) -> impl Iterator<Item = (u32, EdgeKind)> + '_ {
        self.graph.succ(v).map(|(w, k)| (w, EdgeKind::from_u8(k)))
    }

    /// The shortest cycle of `spec` through the first start edge that has one.
    fn find(&self, spec: &Spec, deadline: Option<Instant>) -> Result<Option<Vec<Step>>, OutOfTime> {
        let allowed = spec.allowed();
        let graph = &self.graph;
        let comp = tarjan(graph, allowed);
        let start_kind = spec.start_kind();
        let mut starts: Vec<(u32, u32)> = Vec::new();
        for a in 0..self.nodes.len() as u32 {
            for (b, k) in self.succ(a) {
                if k == start_kind && comp[a as usize] == comp[b as usize] && a != b {
                    starts.push((a, b));
                }
            }
        }
        if start_kind == EdgeKind::Rw && starts.len() > 1 {
            // Start edges whose ends share a component without rw edges close a cycle with
            // no other rw: try them first, a G-single is then found in one search.
            let sure = tarjan(graph, allowed & !EdgeKind::Rw.bit());
            if spec.base == Base::Single {
                // The rest of a G-single is a path b -> a without rw; Tarjan numbers a
                // component after every component it reaches, so none exists when a's
                // number is greater than b's.
                starts.retain(|(a, b)| sure[*a as usize] <= sure[*b as usize]);
            }
            starts.sort_by_key(|(a, b)| sure[*a as usize] != sure[*b as usize]);
        }
        let mut work = 0u64;
        let Some(s0) = spec.step(0, start_kind) else {
            return Ok(None);
        };
        for (a, b) in starts {
            if let Some(path) = self.bfs(
                spec, allowed, &comp, a, b, start_kind, s0, deadline, &mut work,
            )? {
                return Ok(Some(path));
            }
        }
        Ok(None)
    }

    /// Breadth-first search from `b` (state `s0`) back to `a` within `a`'s component.
    #[allow(clippy::too_many_arguments)]
    fn bfs(
        &self,
        spec: &Spec,
        allowed: u8,
        comp: &[u32],
        a: u32,
        b: u32,
        first: EdgeKind,
        s0: u8,
        deadline: Option<Instant>,
        work: &mut u64,
    ) -> Result<Option<Vec<Step>>, OutOfTime> {
        let c = comp[a as usize];
        let mut parent: FxHashMap<(u32, u8), (u32, u8, EdgeKind)> = FxHashMap::default();
        let mut queue: VecDeque<(u32, u8)> = VecDeque::new();
        queue.push_back((b, s0));
        parent.insert((b, s0), (a, 0, first));
        while let Some((v, s)) = queue.pop_front() {
            *work += 1;
            if *work & 4095 == 1 && deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(OutOfTime);
            }
            for (w, k) in self.succ(v) {
                if k.bit() & allowed == 0 || comp[w as usize] != c {
                    continue;
                }
                let Some(t) = spec.step(s, k) else { continue };
                if w == a {
                    if spec.accepts(t, first) {
                        return Ok(Some(self.path(&parent, (v, s), (b, s0), (a, b, first), k)));
                    }
                    continue;
                }
                if let std::collections::hash_map::Entry::Vacant(e) = parent.entry((w, t)) {
                    e.insert((v, s, k));
                    queue.push_back((w, t));
                }
            }
        }
        Ok(None)
    }

    /// Rebuilds the cycle: the start edge `a -> b`, the BFS path from `(b, s0)` to
    /// `last`, the closing edge into `a`; in global node ids.
    fn path(
        &self,
        parent: &FxHashMap<(u32, u8), (u32, u8, EdgeKind)>,
        last: (u32, u8),
        root: (u32, u8),
        start: (u32, u32, EdgeKind),
        closing: EdgeKind,
    ) -> Vec<Step> {
        let mut rev: Vec<Step> = vec![(last.0, start.0, closing)];
        let mut cur = last;
        while cur != root {
            let (pv, ps, k) = parent[&cur];
            rev.push((pv, cur.0, k));
            cur = (pv, ps);
        }
        rev.push(start);
        rev.reverse();
        rev.into_iter()
            .map(|(x, y, k)| (self.nodes[x as usize], self.nodes[y as usize], k))
            .collect()
    }
}

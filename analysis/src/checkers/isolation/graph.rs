//! The transaction dependency graph in compressed sparse row form.
//!
//! Nodes `0..n_txn` are transactions (ids of [`super::txns::Txns`]); nodes from `n_txn` on
//! are realtime *time points*: one per `ok` completion, chained in history order. A txn
//! links to the time point of its own completion and the latest time point before its
//! invoke links to it, so `a` reaches `b` through time points iff `a` completed before `b`
//! was invoked: the whole realtime order in O(n) edges instead of Elle's buffer of
//! immediate successors. Every edge touching a time point is of kind `Realtime`; witnesses
//! fold such a run into one realtime step. Process edges link each process's consecutive
//! `ok` txns. Failed txns have no edges. Data edges never link a txn to itself.

use super::txns::{Status, Txns};
use rustc_hash::FxHashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum EdgeKind {
    Ww = 0,
    Wr = 1,
    Rw = 2,
    Process = 3,
    Realtime = 4,
}

impl EdgeKind {
    pub const ALL: [EdgeKind; 5] = [
        EdgeKind::Ww,
        EdgeKind::Wr,
        EdgeKind::Rw,
        EdgeKind::Process,
        EdgeKind::Realtime,
    ];

    pub fn bit(self) -> u8 {
        1 << (self as u8)
    }

    pub fn from_u8(k: u8) -> EdgeKind {
        EdgeKind::ALL[k as usize]
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::Ww => "ww",
            EdgeKind::Wr => "wr",
            EdgeKind::Rw => "rw",
            EdgeKind::Process => "process",
            EdgeKind::Realtime => "realtime",
        }
    }
}

/// One edge before the graph is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    pub from: u32,
    pub to: u32,
    pub kind: EdgeKind,
}

/// Adjacency in CSR form: the successors of `v` are `targets[offsets[v]..offsets[v+1]]`
/// with their kinds in `kinds`.
pub struct Graph {
    pub n_txn: usize,
    pub offsets: Vec<u32>,
    pub targets: Vec<u32>,
    pub kinds: Vec<u8>,
}

impl Graph {
    pub fn n(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn succ(&self, v: u32) -> impl Iterator<Item = (u32, u8)> + '_ {
        let (a, b) = (
            self.offsets[v as usize] as usize,
            self.offsets[v as usize + 1] as usize,
        );
        self.targets[a..b]
            .iter()
            .copied()
            .zip(self.kinds[a..b].iter().copied())
    }

    pub fn is_txn(&self, v: u32) -> bool {
        (v as usize) < self.n_txn
    }

    /// Builds the graph of `n` nodes (txns then time points) from `edges`.
    pub fn build(n_txn: usize, n: usize, edges: &[Edge]) -> Graph {
        let mut offsets = vec![0u32; n + 1];
        for e in edges {
            offsets[e.from as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut targets = vec![0u32; edges.len()];
        let mut kinds = vec![0u8; edges.len()];
        for e in edges {
            let slot = &mut fill[e.from as usize];
            targets[*slot as usize] = e.to;
            kinds[*slot as usize] = e.kind as u8;
            *slot += 1;
        }
        Graph {
            n_txn,
            offsets,
            targets,
            kinds,
        }
    }
}

/// Process-order edges: each process's consecutive committed txns (Elle links `ok` ops only).
pub fn process_edges(txns: &Txns, out: &mut Vec<Edge>) {
    let mut last: FxHashMap<u64, u32> = FxHashMap::default();
    for (i, t) in txns.txns.iter().enumerate() {
        if t.status != Status::Ok {
            continue;
        }
        if let Some(prev) = last.insert(t.process, i as u32) {
            out.push(Edge {
                from: prev,
                to: i as u32,
                kind: EdgeKind::Process,
            });
        }
    }
}

/// Realtime edges through time points (see the module doc). Returns the number of time
/// points; they are numbered from `txns.len()`.
pub fn realtime_edges(txns: &Txns, out: &mut Vec<Edge>) -> usize {
    // Events in history order: (index, is_invoke, txn).
    let mut events: Vec<(u64, bool, u32)> = Vec::with_capacity(txns.txns.len() * 2);
    for (i, t) in txns.txns.iter().enumerate() {
        if t.status == Status::Fail {
            continue;
        }
        events.push((t.invoke, true, i as u32));
        if let (Status::Ok, Some(c)) = (t.status, t.complete) {
            events.push((c, false, i as u32));
        }
    }
    events.sort_unstable();
    let base = txns.txns.len() as u32;
    let mut points = 0u32;
    let mut latest: Option<u32> = None;
    for (_, is_invoke, t) in events {
        if is_invoke {
            if let Some(p) = latest {
                out.push(Edge {
                    from: p,
                    to: t,
                    kind: EdgeKind::Realtime,
                });
            }
        } else {
            let p = base + points;
            points += 1;
            out.push(Edge {
                from: t,
                to: p,
                kind: EdgeKind::Realtime,
            });
            if let Some(prev) = latest {
                out.push(Edge {
                    from: prev,
                    to: p,
                    kind: EdgeKind::Realtime,
                });
            }
            latest = Some(p);
        }
    }
    points as usize
}

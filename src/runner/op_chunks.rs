//! An append-only list of history entries stored in fixed-size chunks, for the run's
//! in-memory history. A single `Vec` of millions of entries would, on each doubling, copy
//! the whole history while the history sink's lock is held (stalling every process) and
//! keep up to half its capacity unused; chunks never move an entry once pushed and waste at
//! most one chunk.
//!
//! Invariant: every chunk but the last holds exactly [`CHUNK`] entries, in push order.

use analysis::history::Op;

/// Entries per chunk (about 10 MB of `Op`s).
pub const CHUNK: usize = 64 * 1024;

#[derive(Debug, Default)]
pub struct OpChunks {
    chunks: Vec<Vec<Op>>,
}

impl OpChunks {
    pub fn push(&mut self, op: Op) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < CHUNK => last.push(op),
            _ => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push(op);
                self.chunks.push(chunk);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Op> {
        self.chunks.iter().flatten()
    }

    /// A copy of every entry, in push order.
    pub fn to_vec(&self) -> Vec<Op> {
        let mut out = Vec::with_capacity(self.len());
        out.extend(self.iter().cloned());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::history::{OpType, Process};

    fn op(index: u64) -> Op {
        Op {
            index,
            kind: OpType::Invoke,
            process: Process::Client(0),
            f: "read".into(),
            key: None,
            value: serde_json::Value::Null,
            time: index,
            node: None,
            error: None,
            meta: None,
        }
    }

    #[test]
    fn entries_keep_their_order_across_chunks() {
        let mut c = OpChunks::default();
        assert!(c.is_empty());
        let n = 2 * CHUNK as u64 + 3;
        (0..n).for_each(|i| c.push(op(i)));
        assert_eq!(c.len() as u64, n);
        assert_eq!(c.chunks.len(), 3);
        assert!(c.chunks[..2].iter().all(|k| k.len() == CHUNK));
        let indices: Vec<u64> = c.to_vec().iter().map(|o| o.index).collect();
        assert_eq!(indices, (0..n).collect::<Vec<u64>>());
    }
}

//! The parts of a history on disk while it is judged: one JSON Lines file per part in a
//! temporary directory (removed when the [`Spill`] is dropped, whatever happened), each op
//! written as the history format writes it and read back by the same reader.

use crate::formats::{jsonl, FormatError};
use crate::history::Op;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

pub struct Spill {
    dir: tempfile::TempDir,
    writers: Vec<BufWriter<File>>,
    /// Ops written to each part.
    ops: Vec<usize>,
    bytes: u64,
}

impl Spill {
    /// `parts` empty part files in a new directory under `under`.
    pub fn create(under: &Path, parts: usize) -> io::Result<Spill> {
        let dir = tempfile::Builder::new()
            .prefix("faultline-parts-")
            .tempdir_in(under)?;
        let writers = (0..parts)
            .map(|p| File::create(part_path(dir.path(), p)).map(BufWriter::new))
            .collect::<io::Result<_>>()?;
        Ok(Spill {
            dir,
            writers,
            ops: vec![0; parts],
            bytes: 0,
        })
    }

    pub fn write(&mut self, part: usize, op: &Op) -> io::Result<()> {
        let out = &mut self.writers[part];
        let mut line = serde_json::to_vec(op).map_err(io::Error::other)?;
        line.push(b'\n');
        self.bytes += line.len() as u64;
        self.ops[part] += 1;
        out.write_all(&line)
    }

    /// Flushes every part file; the parts can then be read.
    pub fn close(&mut self) -> io::Result<()> {
        for w in &mut self.writers {
            w.flush()?;
        }
        self.writers.clear();
        Ok(())
    }

    /// Bytes written to all parts.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The ops of part `part` and `events`, in history order, in one vector of exactly
    /// their size (a part may be a large key's millions of ops); its file is removed once
    /// read.
    pub fn read(&self, part: usize, events: &[Op]) -> Result<Vec<Op>, FormatError> {
        let path = part_path(self.dir.path(), part);
        let source = path.display().to_string();
        let file = File::open(&path).map_err(|e| FormatError::new(&source, 0, e.to_string()))?;
        let mut ops = Vec::with_capacity(self.ops[part] + events.len());
        jsonl::stream_history(file, &source, |op| {
            ops.push(op);
            Ok(())
        })?;
        let _ = std::fs::remove_file(&path);
        ops.extend(events.iter().cloned());
        ops.sort_unstable_by_key(|op| op.index);
        Ok(ops)
    }
}

fn part_path(dir: &Path, part: usize) -> PathBuf {
    dir.join(format!("part-{part:04}.jsonl"))
}

//! The version structure of one key with unique written values: which op wrote each
//! value, which ops read it, and which successful cas replaced it.
//!
//! Invariants of a built [`Versions`]:
//! - every observed value (returned by a read, or expected by a kept cas) has exactly one
//!   writer, or is the initial value and has none; otherwise the key is not eligible
//!   (a duplicate) or is a violation (a value nobody wrote);
//! - every value has at most one successor (a second cas from the same version is a
//!   violation);
//! - an indeterminate write or cas whose value no kept op observes is dropped: it may
//!   never have taken effect, and no kept op can tell whether it did, so dropping it never
//!   changes the verdict. An observed indeterminate cas took effect (its value is unique),
//!   so it is kept as a successful cas that may have completed at any time;
//! - a determinate plain write of a value nobody observes is a `blind` write: a version
//!   with no readers, which need not be unique.

use super::super::model::Action;
use super::super::prepare::KeyHistory;
use super::Violation;

pub const NONE: u32 = u32::MAX;
/// Marks a value with more than one candidate writer in [`Versions::writer`].
const MANY: u32 = u32::MAX - 1;

pub struct Versions {
    /// Per value id: the op that wrote it, or [`NONE`].
    pub writer: Vec<u32>,
    /// Per value id: the successful cas that replaced it, or [`NONE`].
    pub successor: Vec<u32>,
    /// Per value id: the value its successor wrote (meaningful where `successor` is set).
    pub next: Vec<u32>,
    /// Readers of value `v` are `readers[reader_start[v]..reader_start[v + 1]]`.
    pub reader_start: Vec<u32>,
    pub readers: Vec<u32>,
    /// Determinate writes of values nobody observes.
    pub blind: Vec<u32>,
}

/// Why the fast path does not apply to a key.
pub type NotEligible = String;

pub enum Built {
    Versions(Versions),
    NotEligible(NotEligible),
    Violation(Violation),
}

impl Versions {
    pub fn readers_of(&self, v: u32) -> &[u32] {
        &self.readers
            [self.reader_start[v as usize] as usize..self.reader_start[v as usize + 1] as usize]
    }
}

/// Builds the versions of `key`, or says why the key is not eligible or already invalid.
pub fn build(key: &KeyHistory) -> Built {
    let n = key.values.len();
    let observed = match observed_values(key) {
        Ok(o) => o,
        Err(why) => return Built::NotEligible(why),
    };
    let mut writer = vec![NONE; n];
    let mut blind = Vec::new();
    for (i, op) in key.ops.iter().enumerate() {
        let value = match op.action {
            Action::Write(v) if !observed[v as usize] => {
                if op.is_determinate() {
                    blind.push(i as u32);
                }
                continue;
            }
            Action::Write(v) | Action::Cas { new: v, .. } => v,
            Action::CasMaybe { new: v, .. } if observed[v as usize] => v,
            Action::CasMaybe { .. } | Action::Read(_) | Action::Append(_) => continue,
        };
        if value == key.initial || writer[value as usize] != NONE {
            return Built::NotEligible(format!(
                "value {} is written more than once",
                key.values.json(value)
            ));
        }
        writer[value as usize] = i as u32;
    }
    let mut successor = vec![NONE; n];
    let mut next = vec![NONE; n];
    let mut reader_count = vec![0u32; n + 1];
    for (i, op) in key.ops.iter().enumerate() {
        let (seen, new) = match op.action {
            Action::Read(v) => {
                reader_count[v as usize] += 1;
                (v, NONE)
            }
            Action::Cas { expected, new } => (expected, new),
            Action::CasMaybe { expected, new } if writer[new as usize] == i as u32 => {
                (expected, new)
            }
            _ => continue,
        };
        if seen != key.initial && writer[seen as usize] == NONE {
            return Built::Violation(Violation::Unwritten { op: i as u32 });
        }
        if new != NONE {
            if successor[seen as usize] != NONE {
                return Built::Violation(Violation::SecondSuccessor {
                    op: i as u32,
                    first: successor[seen as usize],
                });
            }
            successor[seen as usize] = i as u32;
            next[seen as usize] = new;
        }
    }
    let (reader_start, readers) = group_readers(key, reader_count);
    Built::Versions(Versions {
        writer,
        successor,
        next,
        reader_start,
        readers,
        blind,
    })
}

/// Compressed reader lists, each in call order.
fn group_readers(key: &KeyHistory, mut count: Vec<u32>) -> (Vec<u32>, Vec<u32>) {
    let mut total = 0u32;
    for c in count.iter_mut() {
        let here = *c;
        *c = total;
        total += here;
    }
    let start = count.clone();
    let mut readers = vec![0u32; total as usize];
    for (i, op) in key.ops.iter().enumerate() {
        if let Action::Read(v) = op.action {
            readers[count[v as usize] as usize] = i as u32;
            count[v as usize] += 1;
        }
    }
    (start, readers)
}

/// Which values some kept op observes: reads, determinate cas, and indeterminate cas whose
/// own new value is observed (a fixpoint: an indeterminate cas that is dropped observes
/// nothing). Errs if the key has appends, whose effects show up inside other values.
fn observed_values(key: &KeyHistory) -> Result<Vec<bool>, NotEligible> {
    let n = key.values.len();
    let mut observed = vec![false; n];
    let mut maybe_writer = vec![NONE; n];
    let mut work = Vec::new();
    for (i, op) in key.ops.iter().enumerate() {
        match op.action {
            Action::Read(v) | Action::Cas { expected: v, .. } => work.push(v),
            Action::CasMaybe { new, .. } => {
                let w = &mut maybe_writer[new as usize];
                *w = if *w == NONE { i as u32 } else { MANY };
            }
            Action::Write(_) => {}
            Action::Append(_) => return Err("the key has appends".into()),
        }
    }
    while let Some(v) = work.pop() {
        if std::mem::replace(&mut observed[v as usize], true) {
            continue;
        }
        match maybe_writer[v as usize] {
            NONE => {}
            MANY => {
                return Err(format!(
                    "value {} is written by more than one cas",
                    key.values.json(v)
                ))
            }
            w => {
                if let Action::CasMaybe { expected, .. } = key.ops[w as usize].action {
                    work.push(expected);
                }
            }
        }
    }
    Ok(observed)
}

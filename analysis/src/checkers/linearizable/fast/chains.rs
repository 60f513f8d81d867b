//! Chains of versions and their earliest placement.
//!
//! A chain starts at a version written by a plain write (or at the initial value) and
//! follows successful cas ops: `v1 -cas-> v2 -cas-> ...`. In any linearization a chain's
//! ops form one contiguous stretch in the fixed order `writer(v1), readers(v1), cas
//! writing v2, readers(v2), ...` (readers of one version in any order): a version's
//! value is unique, so it can only be read between its writer and the op that replaces
//! it, and nothing of another chain can sit in between.
//!
//! [`place`] checks that order against real time by the earliest-placement greedy: each
//! op goes at the latest of its call and the point of what must precede it; if that is
//! past its return, no placement exists (any placement puts every op at or after its
//! greedy point, by induction along the order). It also summarises the chain as a
//! [`Zone`]: the first return and the last call among its ops.

use super::super::prepare::KeyHistory;
use super::versions::{Versions, NONE};
use super::Violation;

/// Time of the virtual write of the initial value: before every history position.
pub const BEFORE_ALL: i64 = -1;

/// The stretch a chain must cover: from its first return (`min_ret`) to its last call
/// (`max_call`). Op ids are [`NONE`] for the virtual initial write.
#[derive(Debug, Clone, Copy)]
pub struct Zone {
    pub min_ret: i64,
    pub min_ret_op: u32,
    pub max_call: i64,
    pub max_call_op: u32,
    /// The chain's first version (value id).
    pub root: u32,
}

impl Zone {
    /// A forward zone (`min_ret < max_call`) must be covered whole by its chain's
    /// stretch; a backward one can be squeezed to any point of `[max_call, min_ret]`.
    pub fn is_forward(&self) -> bool {
        self.min_ret < self.max_call
    }
}

pub fn call(key: &KeyHistory, op: u32) -> i64 {
    key.ops[op as usize].call as i64
}

/// Return time, `i64::MAX` for an op of unknown outcome.
pub fn ret(key: &KeyHistory, op: u32) -> i64 {
    let o = &key.ops[op as usize];
    if o.is_determinate() {
        o.ret as i64
    } else {
        i64::MAX
    }
}

/// The greedy walk along a fixed order of groups: every op of a group follows every op
/// of the groups before it, ops of one group do not constrain each other.
pub struct Walk {
    /// The earliest point the next group can start at, and the op whose call set it.
    point: i64,
    setter: u32,
    pub zone: Zone,
}

impl Walk {
    /// A walk from the virtual write of the initial value `root` (before everything), or
    /// from nothing (`initial: false`: the chain's first op is a real write).
    pub fn new(root: u32, initial: bool) -> Self {
        let (start, min_ret) = if initial {
            (BEFORE_ALL, BEFORE_ALL)
        } else {
            (i64::MIN, i64::MAX)
        };
        let zone = Zone {
            min_ret,
            min_ret_op: NONE,
            max_call: start,
            max_call_op: NONE,
            root,
        };
        Walk {
            point: start,
            setter: NONE,
            zone,
        }
    }

    /// Places a group of ops after everything placed so far.
    pub fn group(
        &mut self,
        key: &KeyHistory,
        ops: impl IntoIterator<Item = u32>,
    ) -> Result<(), Violation> {
        let (floor, floor_setter) = (self.point, self.setter);
        for op in ops {
            let (c, r) = (call(key, op), ret(key, op));
            if floor > r {
                return Err(Violation::TooLate {
                    op,
                    after: floor_setter,
                });
            }
            if c > self.point {
                self.point = c;
                self.setter = op;
            }
            if r < self.zone.min_ret {
                self.zone.min_ret = r;
                self.zone.min_ret_op = op;
            }
            if c > self.zone.max_call {
                self.zone.max_call = c;
                self.zone.max_call_op = op;
            }
        }
        Ok(())
    }
}

/// Walks the chain rooted at version `root` (the initial value, or a value written by a
/// plain write), marking its versions in `visited`.
pub fn place(
    key: &KeyHistory,
    versions: &Versions,
    root: u32,
    visited: &mut [bool],
) -> Result<Zone, Violation> {
    let mut writer = versions.writer[root as usize];
    let mut walk = Walk::new(root, writer == NONE);
    let mut version = root;
    loop {
        visited[version as usize] = true;
        if writer != NONE {
            walk.group(key, [writer])?;
        }
        walk.group(key, versions.readers_of(version).iter().copied())?;
        writer = versions.successor[version as usize];
        if writer == NONE {
            return Ok(walk.zone);
        }
        version = versions.next[version as usize];
    }
}

/// The zone of a blind write: a version nobody reads, alone in its chain.
pub fn single(key: &KeyHistory, op: u32) -> Zone {
    Zone {
        min_ret: ret(key, op),
        min_ret_op: op,
        max_call: call(key, op),
        max_call_op: op,
        root: NONE,
    }
}

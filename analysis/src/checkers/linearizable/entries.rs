//! The doubly linked list of call and return entries of the determinate ops that the
//! search walks (Wing & Gong's history list). Linearizing an op "lifts" its call and
//! return entries out of the list; backtracking puts them back in the same place. Arrays
//! instead of pointers: entry 0 is the head sentinel, the last entry the tail sentinel.
//! Indeterminate ops have no return and live in the [`super::pool::Pool`] instead.

use super::prepare::PreparedOp;

pub const HEAD: u32 = 0;
const NONE: u32 = u32::MAX;

pub struct EntryList {
    next: Vec<u32>,
    prev: Vec<u32>,
    /// The op of each entry (unused for the sentinels).
    op: Vec<u32>,
    /// For a call entry, its return entry (`NONE` for indeterminate ops); for a return
    /// entry, `NONE` as well, see [`EntryList::is_call`].
    ret_of: Vec<u32>,
    is_call: Vec<bool>,
    /// History position of each entry's call or return.
    position: Vec<u32>,
    tail: u32,
}

impl EntryList {
    /// Builds the list of the determinate ops in history order: `ops` must be in call
    /// order.
    pub fn new(ops: &[PreparedOp]) -> Self {
        let calls: Vec<u32> = (0..ops.len() as u32)
            .filter(|&i| ops[i as usize].is_determinate())
            .collect();
        let mut returns: Vec<(u32, u32)> = ops
            .iter()
            .enumerate()
            .filter(|(_, o)| o.is_determinate())
            .map(|(i, o)| (o.ret, i as u32))
            .collect();
        returns.sort_unstable();
        let entries = calls.len() + returns.len();
        let tail = entries as u32 + 1;
        let mut list = EntryList {
            next: (1..=tail).chain([tail]).collect(),
            prev: [HEAD].into_iter().chain(0..tail).collect(),
            op: vec![NONE; entries + 2],
            ret_of: vec![NONE; entries + 2],
            is_call: vec![false; entries + 2],
            position: vec![u32::MAX; entries + 2],
            tail,
        };
        let mut call_entry = vec![NONE; ops.len()];
        let (mut c, mut r, mut e) = (0usize, 0usize, 1usize);
        while c < calls.len() || r < returns.len() {
            let take_call = r == returns.len()
                || (c < calls.len() && ops[calls[c] as usize].call < returns[r].0);
            if take_call {
                let op = calls[c];
                list.op[e] = op;
                list.is_call[e] = true;
                list.position[e] = ops[op as usize].call;
                call_entry[op as usize] = e as u32;
                c += 1;
            } else {
                let op = returns[r].1;
                list.op[e] = op;
                list.position[e] = returns[r].0;
                list.ret_of[call_entry[op as usize] as usize] = e as u32;
                r += 1;
            }
            e += 1;
        }
        list
    }

    #[inline]
    pub fn first(&self) -> u32 {
        self.next[HEAD as usize]
    }

    #[inline]
    pub fn next(&self, e: u32) -> u32 {
        self.next[e as usize]
    }

    #[inline]
    pub fn is_tail(&self, e: u32) -> bool {
        e == self.tail
    }

    #[inline]
    pub fn is_call(&self, e: u32) -> bool {
        self.is_call[e as usize]
    }

    #[inline]
    pub fn op(&self, e: u32) -> u32 {
        self.op[e as usize]
    }

    /// The return entry of call entry `e`.
    #[inline]
    pub fn return_of(&self, e: u32) -> u32 {
        self.ret_of[e as usize]
    }

    /// History position of entry `e` (its op's call or return).
    #[inline]
    pub fn position(&self, e: u32) -> u32 {
        self.position[e as usize]
    }

    fn unlink(&mut self, e: u32) {
        let (p, n) = (self.prev[e as usize], self.next[e as usize]);
        self.next[p as usize] = n;
        self.prev[n as usize] = p;
    }

    fn relink(&mut self, e: u32) {
        let (p, n) = (self.prev[e as usize], self.next[e as usize]);
        self.next[p as usize] = e;
        self.prev[n as usize] = e;
    }

    /// Removes call entry `e` and its return entry from the list.
    #[inline]
    pub fn lift(&mut self, e: u32) {
        self.unlink(e);
        let r = self.ret_of[e as usize];
        if r != NONE {
            self.unlink(r);
        }
    }

    /// Undoes [`EntryList::lift`] of `e`; lifts must be undone in reverse order.
    #[inline]
    pub fn unlift(&mut self, e: u32) {
        let r = self.ret_of[e as usize];
        if r != NONE {
            self.relink(r);
        }
        self.relink(e);
    }

    pub fn bytes(&self) -> u64 {
        (self.next.len() * 21) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::super::model::Action;
    use super::super::prepare::NO_RETURN;
    use super::*;

    fn walk(l: &EntryList) -> Vec<(u32, bool)> {
        let mut out = vec![];
        let mut e = l.first();
        while !l.is_tail(e) {
            out.push((l.op(e), l.is_call(e)));
            e = l.next(e);
        }
        out
    }

    #[test]
    fn orders_entries_by_position_and_lifts_reversibly() {
        let op = |call, ret| PreparedOp {
            call,
            ret,
            action: Action::Read(0),
        };
        // op0 [0,3], op1 [1, never], op2 [2,4]
        let ops = [op(0, 3), op(1, NO_RETURN), op(2, 4)];
        let mut l = EntryList::new(&ops);
        // The indeterminate op1 is not in the list.
        assert_eq!(walk(&l), vec![(0, true), (2, true), (0, false), (2, false)]);
        assert_eq!(l.position(3), 3, "entry 3 is op0's return at position 3");
        let call2 = 2;
        l.lift(call2);
        assert_eq!(walk(&l), vec![(0, true), (0, false)]);
        l.lift(1);
        assert_eq!(walk(&l), vec![]);
        l.unlift(1);
        l.unlift(call2);
        assert_eq!(walk(&l), vec![(0, true), (2, true), (0, false), (2, false)]);
    }
}

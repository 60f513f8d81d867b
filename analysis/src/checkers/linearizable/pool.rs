//! The indeterminate ops of a key, in call order, as a linked list of those not yet
//! linearized. An indeterminate op has no return, so it never forces anything: it is a
//! candidate whenever its call precedes the first pending return, and the search tries
//! such candidates only after the determinate ones (see [`super::search`]).

use super::prepare::PreparedOp;

pub const NIL: u32 = u32::MAX;

pub struct Pool {
    /// Op ids in call order.
    ops: Vec<u32>,
    /// Call position of each slot.
    calls: Vec<u32>,
    /// Linked list over slots; `head` is the first unlinearized slot.
    next: Vec<u32>,
    prev: Vec<u32>,
    head: u32,
}

impl Pool {
    pub fn new(ops: &[PreparedOp]) -> Self {
        let ids: Vec<u32> = (0..ops.len() as u32)
            .filter(|&i| !ops[i as usize].is_determinate())
            .collect();
        let n = ids.len() as u32;
        Pool {
            calls: ids.iter().map(|&i| ops[i as usize].call).collect(),
            ops: ids,
            next: (1..=n).map(|i| if i == n { NIL } else { i }).collect(),
            prev: (0..n).map(|i| if i == 0 { NIL } else { i - 1 }).collect(),
            head: if n == 0 { NIL } else { 0 },
        }
    }

    #[inline]
    pub fn first(&self) -> u32 {
        self.head
    }

    #[inline]
    pub fn next(&self, slot: u32) -> u32 {
        self.next[slot as usize]
    }

    #[inline]
    pub fn op(&self, slot: u32) -> u32 {
        self.ops[slot as usize]
    }

    #[inline]
    pub fn call(&self, slot: u32) -> u32 {
        self.calls[slot as usize]
    }

    /// Removes `slot` from the list of unlinearized ops.
    pub fn lift(&mut self, slot: u32) {
        let (p, n) = (self.prev[slot as usize], self.next[slot as usize]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        }
    }

    /// Undoes [`Pool::lift`]; lifts must be undone in reverse order.
    pub fn unlift(&mut self, slot: u32) {
        let (p, n) = (self.prev[slot as usize], self.next[slot as usize]);
        if p == NIL {
            self.head = slot;
        } else {
            self.next[p as usize] = slot;
        }
        if n != NIL {
            self.prev[n as usize] = slot;
        }
    }

    pub fn bytes(&self) -> u64 {
        self.ops.len() as u64 * 16
    }
}

#[cfg(test)]
mod tests {
    use super::super::model::Action;
    use super::super::prepare::NO_RETURN;
    use super::*;

    fn walk(p: &Pool) -> Vec<u32> {
        let mut out = vec![];
        let mut s = p.first();
        while s != NIL {
            out.push(p.op(s));
            s = p.next(s);
        }
        out
    }

    #[test]
    fn holds_indeterminate_ops_in_call_order_and_lifts_reversibly() {
        let op = |call, ret| PreparedOp {
            call,
            ret,
            action: Action::Write(1),
        };
        let ops = [
            op(0, NO_RETURN),
            op(1, 5),
            op(2, NO_RETURN),
            op(3, NO_RETURN),
        ];
        let mut p = Pool::new(&ops);
        assert_eq!(walk(&p), vec![0, 2, 3]);
        assert_eq!(p.call(1), 2);
        p.lift(0);
        p.lift(2);
        assert_eq!(walk(&p), vec![2]);
        p.unlift(2);
        p.unlift(0);
        assert_eq!(walk(&p), vec![0, 2, 3]);
    }
}

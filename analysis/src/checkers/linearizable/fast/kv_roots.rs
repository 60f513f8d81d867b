//! Which put (or the initial value) a kv read's string starts from: its *root*.
//!
//! In any linearization a read R sees the value of the last put before it (or the
//! initial value) followed by the appends linearized since. So a put P can be R's root
//! only if P's text begins R's spelling, P was invoked before R completed, no
//! acknowledged put Q lies wholly between P's completion and R's invocation (Q would
//! come between them in every order and replace P's string), and every later text of
//! R's spelling has an append that could lie between P and R (invoked before R
//! completed, completed after P was invoked). The initial value can be the root only if
//! no put was acknowledged before R was invoked, under the same condition on appends.
//!
//! Invariant: every root R has in some linearization passes these tests, so a read with
//! exactly one candidate has that root in every linearization, and a read with none has
//! no linearization at all (a violation, whatever the rest of the key looks like).

use super::super::prepare::KeyHistory;
use super::chains::{call, ret};
use super::kv_text::Codebook;
use super::versions::NONE;
use super::Violation;

pub enum Rooted {
    /// The only possible root: a put's op id, or [`NONE`] for the initial value.
    One(u32),
    /// More than one root is possible; the fast path cannot name the read's versions.
    Many,
    /// No root is possible.
    Impossible(Violation),
}

/// The acknowledged puts of a key by completion, to find the latest overwrite before a
/// point.
pub struct Overwrites {
    /// `(ret, call, op)` of each acknowledged put, by `ret`.
    by_ret: Vec<(i64, i64, u32)>,
    /// For each prefix of `by_ret`, the `(call, op)` with the latest call.
    latest: Vec<(i64, u32)>,
}

impl Overwrites {
    pub fn new(key: &KeyHistory, book: &Codebook) -> Self {
        let mut by_ret: Vec<(i64, i64, u32)> = book
            .puts
            .iter()
            .flatten()
            .filter(|&&op| key.ops[op as usize].is_determinate())
            .map(|&op| (ret(key, op), call(key, op), op))
            .collect();
        by_ret.sort_unstable();
        let mut best = (i64::MIN, NONE);
        let latest = by_ret
            .iter()
            .map(|&(_, c, op)| {
                if c > best.0 {
                    best = (c, op);
                }
                best
            })
            .collect();
        Overwrites { by_ret, latest }
    }

    /// Among the puts acknowledged before `t`, the one invoked last.
    fn latest_before(&self, t: i64) -> Option<(i64, u32)> {
        let n = self.by_ret.partition_point(|&(r, _, _)| r < t);
        n.checked_sub(1).map(|i| self.latest[i])
    }
}

/// The root of `read`, whose string is spelled `spelling` (text ids after the initial
/// string, when the key has no puts).
pub fn root(
    key: &KeyHistory,
    book: &Codebook,
    overwrites: &Overwrites,
    read: u32,
    spelling: &[u32],
) -> Rooted {
    let (r_call, r_ret) = (call(key, read), ret(key, read));
    let overwrite = overwrites.latest_before(r_call);
    let mut found = Vec::new();
    let mut stale = None;
    let initial_spelled = spelling.is_empty() || !book.appends[spelling[0] as usize].is_empty();
    if initial_spelled {
        match overwrite {
            Some((_, by)) => {
                stale = Some(Violation::StaleRoot {
                    op: read,
                    root: NONE,
                    by,
                })
            }
            None if appends_fit(key, book, spelling, i64::MIN, r_ret) => found.push(NONE),
            None => {}
        }
    }
    if let Some(&first) = spelling.first() {
        for &put in &book.puts[first as usize] {
            if call(key, put) > r_ret {
                continue;
            }
            if let Some((by_call, by)) = overwrite.filter(|&(c, _)| c > ret(key, put)) {
                debug_assert!(by_call > ret(key, put));
                stale = stale.or(Some(Violation::StaleRoot {
                    op: read,
                    root: put,
                    by,
                }));
                continue;
            }
            if appends_fit(key, book, &spelling[1..], call(key, put), r_ret) {
                found.push(put);
            }
        }
    }
    match found.as_slice() {
        [one] => Rooted::One(*one),
        [] => Rooted::Impossible(stale.unwrap_or(Violation::Unwritten { op: read })),
        _ => Rooted::Many,
    }
}

/// Every text of `texts` has an append that completed after `after` (or never) and was
/// invoked before `before`.
fn appends_fit(key: &KeyHistory, book: &Codebook, texts: &[u32], after: i64, before: i64) -> bool {
    texts.iter().all(|&t| {
        book.appends[t as usize]
            .iter()
            .any(|&a| call(key, a) < before && ret(key, a) > after)
    })
}

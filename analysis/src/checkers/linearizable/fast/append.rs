//! The fast path for a kv key of puts, appends and reads (Porcupine's kv shape; Elle's
//! list-append insight): when the put and append texts are prefix-free, a read's string
//! spells exactly which texts it holds, in order, and real time usually leaves only one op
//! that can have written each of them.
//!
//! A put (or the initial value) roots a chain: `put, readers(v0), a1, readers(v1), ...`,
//! where every append reads the previous version and writes the next, like a cas. Each
//! read's root is found first ([`super::kv_roots`]); states of one chain only grow, so
//! its reads must be prefixes of its longest read, whose spelling gives the chain's
//! texts in order. The op at place `i` of a chain must be an append of the `i`-th text
//! that completed after the root was invoked and after every read of the chain that does
//! not hold it was invoked, and that was invoked before every read that holds it
//! completed. When every read has one possible root and every place one possible op,
//! every linearization uses exactly these ops: renaming each op's text to a unique one
//! (and the reads accordingly) keeps every linearization, and the renamed key has unique
//! values. An append or put no read saw is then a version nobody observes, exactly a
//! blind write: it must sit outside every chain's stretch. Chains and blind ops go
//! through the same placement ([`super::chains::Walk`]) and zone test ([`super::zones`])
//! as registers; an indeterminate op nobody saw may never have happened and is dropped.
//!
//! A read with no possible root, a place with no possible op, an op needed at two places,
//! or a chain whose ops cannot be placed is a violation in every case (each only needs
//! the reads it names). Not eligible (the search decides): an empty or non-string put or
//! append value, one text beginning another, a non-empty initial string together with
//! puts, more than [`MAX_LENGTHS`] distinct text lengths, or a read or place with more
//! than one possible op.

use super::super::model::Action;
use super::super::prepare::KeyHistory;
use super::super::values::ValueTable;
use super::chains::{self, call, ret, Walk, Zone};
use super::kv_roots::{self, Overwrites, Rooted};
use super::kv_text::Codebook;
pub use super::kv_text::MAX_LENGTHS;
use super::versions::NONE;
use super::{zones, Violation};
use rustc_hash::FxHashMap;

/// The reads of one chain: `(number of appends seen, read op)`, and the longest read
/// with its spelling (text ids after the root).
#[derive(Default)]
struct Chain {
    reads: Vec<(u32, u32)>,
    longest: Option<(u32, Vec<u32>)>,
}

/// `Ok(None)` if linearizable, `Ok(Some(_))` with a violation, `Err` if not eligible.
pub fn decide(key: &KeyHistory) -> Result<Option<Violation>, String> {
    let has_puts = key.ops.iter().any(|o| matches!(o.action, Action::Write(_)));
    let initial = match key.initial {
        ValueTable::NULL => "",
        id => key
            .values
            .as_str(id)
            .ok_or("the initial value is not a string")?,
    };
    if has_puts && !initial.is_empty() {
        return Err("puts and appends on a key with a non-empty initial string".into());
    }
    let book = Codebook::build(key)?;
    let overwrites = Overwrites::new(key, &book);
    // Chains by root: the put's op id, or NONE for the initial value.
    let mut chains: FxHashMap<u32, Chain> = FxHashMap::default();
    chains.entry(NONE).or_default();
    let mut ambiguous = None;
    for (i, op) in key.ops.iter().enumerate() {
        let i = i as u32;
        let v = match op.action {
            Action::Read(v) => v,
            Action::Append(_) | Action::Write(_) => continue,
            Action::Cas { .. } | Action::CasMaybe { .. } => {
                return Err("the key has cas ops".into())
            }
        };
        let spelling = if v == key.initial {
            Some(Vec::new())
        } else {
            let spelled = key
                .values
                .as_str(v)
                .and_then(|s| s.strip_prefix(initial))
                .and_then(|s| book.spell(s));
            spelled.filter(|s| !s.is_empty())
        };
        let Some(spelling) = spelling else {
            return Ok(Some(Violation::Unwritten { op: i }));
        };
        let root = match kv_roots::root(key, &book, &overwrites, i, &spelling) {
            Rooted::One(root) => root,
            Rooted::Impossible(violation) => return Ok(Some(violation)),
            Rooted::Many => {
                ambiguous.get_or_insert_with(|| {
                    format!(
                        "read at index {} could start from more than one put",
                        op.call
                    )
                });
                continue;
            }
        };
        let appends = if root == NONE {
            &spelling[..]
        } else {
            &spelling[1..]
        };
        let chain = chains.entry(root).or_default();
        chain.reads.push((appends.len() as u32, i));
        if chain
            .longest
            .as_ref()
            .is_none_or(|(_, l)| l.len() < appends.len())
        {
            chain.longest = Some((i, appends.to_vec()));
        }
    }
    let placed = place_all(key, &book, chains, ambiguous.is_none());
    match (placed, ambiguous) {
        (Ok(Some(violation)), _) => Ok(Some(violation)),
        (Ok(None), None) => Ok(None),
        (Err(why), _) | (Ok(None), Some(why)) => Err(why),
    }
}

/// Names each chain's ops, places the chains and the ops no read saw, and runs the zone
/// test. With `complete` false (some read's root is not known) only violations that the
/// known reads prove are reported.
fn place_all(
    key: &KeyHistory,
    book: &Codebook,
    chains: FxHashMap<u32, Chain>,
    complete: bool,
) -> Result<Option<Violation>, String> {
    let mut in_chain = vec![false; key.ops.len()];
    let mut zones = Vec::with_capacity(chains.len());
    let mut ambiguous = None;
    for (root, mut chain) in chains {
        if root != NONE {
            in_chain[root as usize] = true;
        }
        if let Some(v) = diverged(key, &chain) {
            return Ok(Some(v));
        }
        chain.reads.sort_unstable();
        let order = match name_ops(key, book, root, &chain) {
            Ok(Some(order)) => order,
            Ok(None) => {
                ambiguous.get_or_insert_with(|| {
                    "an appended text could have been written by more than one op".to_string()
                });
                continue;
            }
            Err(v) => return Ok(Some(v)),
        };
        for &a in &order {
            if std::mem::replace(&mut in_chain[a as usize], true) {
                // One append at two places (of two chains, or of one): it happened once.
                let op = chain.longest.as_ref().map_or(NONE, |(op, _)| *op);
                return Ok(Some(Violation::Unwritten { op }));
            }
        }
        match place_chain(key, root, &order, &chain.reads) {
            Ok(zone) if zone.min_ret_op != NONE || zone.max_call_op != NONE => zones.push(zone),
            Ok(_) => {}
            Err(v) => return Ok(Some(v)),
        }
    }
    if let Some(why) = ambiguous {
        return Err(why);
    }
    if !complete {
        return Ok(None);
    }
    let blind = key.ops.iter().enumerate().filter(|(i, o)| {
        matches!(o.action, Action::Append(_) | Action::Write(_))
            && o.is_determinate()
            && !in_chain[*i]
    });
    zones.extend(blind.map(|(i, _)| chains::single(key, i as u32)));
    Ok(zones::find_conflict(&zones).map(Violation::Zones))
}

/// The append op at each place of `chain` (sorted reads), `Ok(None)` if some place has
/// more than one possible op, `Err` if some place has none.
fn name_ops(
    key: &KeyHistory,
    book: &Codebook,
    root: u32,
    chain: &Chain,
) -> Result<Option<Vec<u32>>, Violation> {
    let Some((longest, texts)) = chain.longest.as_ref() else {
        return Ok(Some(Vec::new()));
    };
    let m = texts.len();
    // Place i (1-based) is held by the reads that saw at least i appends and missed by
    // the others: the op there was invoked before the first of the former completed and
    // completed after the last of the latter (and the root) was invoked.
    let mut first_ret = vec![(i64::MAX, NONE); m + 2];
    let mut last_call = vec![
        (
            if root == NONE {
                i64::MIN
            } else {
                call(key, root)
            },
            root
        );
        m + 2
    ];
    for &(seen, op) in &chain.reads {
        let s = seen as usize;
        first_ret[s] = first_ret[s].min((ret(key, op), op));
        last_call[s + 1] = last_call[s + 1].max((call(key, op), op));
    }
    for i in (0..=m).rev() {
        first_ret[i] = first_ret[i].min(first_ret[i + 1]);
    }
    for i in 1..=m + 1 {
        last_call[i] = last_call[i].max(last_call[i - 1]);
    }
    let mut order = Vec::with_capacity(m);
    for (place, &text) in (1..=m).zip(texts) {
        let ((before, holder), (after, misser)) = (first_ret[place], last_call[place]);
        let ops = &book.appends[text as usize];
        let mut fits = ops
            .iter()
            .filter(|&&a| call(key, a) < before && ret(key, a) > after);
        match (fits.next(), fits.next()) {
            (Some(&a), None) => order.push(a),
            (Some(_), Some(_)) => return Ok(None),
            (None, _) => {
                return Err(no_append(
                    key,
                    ops,
                    *longest,
                    (before, holder),
                    (after, misser),
                ))
            }
        }
    }
    Ok(Some(order))
}

/// Why no op can be at a place: with one candidate, the order it breaks; else the read.
fn no_append(
    key: &KeyHistory,
    ops: &[u32],
    longest: u32,
    holder: (i64, u32),
    misser: (i64, u32),
) -> Violation {
    match *ops {
        [a] if call(key, a) > holder.0 => Violation::TooLate {
            op: holder.1,
            after: a,
        },
        [a] if misser.1 != NONE => Violation::TooLate {
            op: a,
            after: misser.1,
        },
        [] => Violation::Unwritten { op: longest },
        [a, ..] => Violation::NoAppend {
            op: holder.1,
            text_op: a,
        },
    }
}

/// The first read of `chain` whose string is not a prefix of the chain's longest read.
fn diverged(key: &KeyHistory, chain: &Chain) -> Option<Violation> {
    let (longest_op, _) = chain.longest.as_ref()?;
    let text = |op: u32| match key.ops[op as usize].action {
        Action::Read(v) => key.values.as_str(v).unwrap_or(""),
        _ => "",
    };
    let l = text(*longest_op);
    let op = chain
        .reads
        .iter()
        .find(|&&(version, op)| version > 0 && !l.starts_with(text(op)))?
        .1;
    Some(Violation::Diverged {
        op,
        other: *longest_op,
    })
}

/// Places one chain: its put (if any), then each version's readers and the next append.
fn place_chain(
    key: &KeyHistory,
    root: u32,
    order: &[u32],
    reads: &[(u32, u32)],
) -> Result<Zone, Violation> {
    let mut walk = match key.ops.get(root as usize).map(|o| o.action) {
        Some(Action::Write(value)) => Walk::new(value, false),
        _ => Walk::new(key.initial, true),
    };
    if root != NONE {
        walk.group(key, [root])?;
    }
    let mut next = 0;
    for version in 0..=order.len() as u32 {
        if version > 0 {
            walk.group(key, [order[version as usize - 1]])?;
        }
        let from = next;
        while next < reads.len() && reads[next].0 == version {
            next += 1;
        }
        walk.group(key, reads[from..next].iter().map(|&(_, op)| op))?;
    }
    Ok(walk.zone)
}

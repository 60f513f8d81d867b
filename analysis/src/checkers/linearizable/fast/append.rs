//! The fast path for a kv key of appends, puts and reads (Porcupine's kv shape; Elle's
//! list-append insight): with unique put and append values none of which begins another,
//! a read's string spells out exactly which put it started from and which appends it saw,
//! in order.
//!
//! A put (or the initial value) roots a chain: `put, readers(v0), a1, readers(v1), ...`,
//! where every append reads the previous version and writes the next, like a cas. States
//! of one chain only grow, so its reads must be prefixes of its longest read, whose
//! decoding gives the chain's append order; each read maps to the version it ends at. An
//! append or put no read saw is a version nobody observes, exactly a blind write: it must
//! sit outside every chain's stretch (inside one, later reads would show it). Chains and
//! blind ops then go through the same placement ([`super::chains::Walk`]) and zone test
//! ([`super::zones`]) as registers; an indeterminate op nobody saw may never have
//! happened and is dropped.
//!
//! Not eligible (the search decides): an empty, non-string or repeated put/append value,
//! one value a prefix of another (decoding could be ambiguous), a non-empty initial string
//! together with puts, or more than [`MAX_LENGTHS`] distinct value lengths.

use super::super::model::Action;
use super::super::prepare::KeyHistory;
use super::super::values::ValueTable;
use super::chains::{self, Walk, Zone};
use super::versions::NONE;
use super::{zones, Violation};
use rustc_hash::FxHashMap;

/// Decoding tries each distinct value length at each position.
pub const MAX_LENGTHS: usize = 64;

/// The put and append values of a key, by their text.
struct Codebook<'a> {
    by_text: FxHashMap<&'a str, u32>,
    /// Distinct lengths of the values, ascending.
    lengths: Vec<usize>,
}

/// The reads of one chain: `(version, read op)`, and the longest read's decoding.
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
        id => key.values.as_str(id).ok_or("the initial value is not a string")?,
    };
    if has_puts && !initial.is_empty() {
        return Err("puts and appends on a key with a non-empty initial string".into());
    }
    let book = codebook(key)?;
    // Chains by root: the put's op id, or NONE for the initial value.
    let mut chains: FxHashMap<u32, Chain> = FxHashMap::default();
    chains.entry(NONE).or_default();
    for (i, op) in key.ops.iter().enumerate() {
        let i = i as u32;
        match op.action {
            Action::Read(v) if v == key.initial => chains.entry(NONE).or_default().reads.push((0, i)),
            Action::Read(v) => {
                let decoded = key.values.as_str(v).and_then(|s| s.strip_prefix(initial)).and_then(|s| decode(&book, s));
                let Some(tokens) = decoded.filter(|t| !t.is_empty()) else {
                    return Ok(Some(Violation::Unwritten { op: i }));
                };
                let (root, appends) = match key.ops[tokens[0] as usize].action {
                    Action::Write(_) => (tokens[0], &tokens[1..]),
                    _ => (NONE, &tokens[..]),
                };
                if appends.iter().any(|&a| !matches!(key.ops[a as usize].action, Action::Append(_))) {
                    return Ok(Some(Violation::Unwritten { op: i }));
                }
                let chain = chains.entry(root).or_default();
                chain.reads.push((appends.len() as u32, i));
                if chain.longest.as_ref().is_none_or(|(_, l)| l.len() < appends.len()) {
                    chain.longest = Some((i, appends.to_vec()));
                }
            }
            Action::Append(_) | Action::Write(_) => {}
            Action::Cas { .. } | Action::CasMaybe { .. } => return Err("the key has cas ops".into()),
        }
    }
    Ok(place_all(key, chains))
}

/// Checks each chain's reads against its longest one, places the chains and the ops no
/// read saw, and runs the zone test.
fn place_all(key: &KeyHistory, chains: FxHashMap<u32, Chain>) -> Option<Violation> {
    let mut in_chain = vec![false; key.ops.len()];
    let mut zones = Vec::with_capacity(chains.len());
    for (root, mut chain) in chains {
        if root != NONE {
            in_chain[root as usize] = true;
        }
        let order = chain.longest.as_ref().map(|(_, l)| l.clone()).unwrap_or_default();
        for &a in &order {
            if in_chain[a as usize] {
                // The append shows up after two different puts, but happened once.
                let op = chain.longest.as_ref().map_or(NONE, |(op, _)| *op);
                return Some(Violation::Unwritten { op });
            }
            in_chain[a as usize] = true;
        }
        if let Some(v) = diverged(key, &chain) {
            return Some(v);
        }
        chain.reads.sort_unstable();
        match place_chain(key, root, &order, &chain.reads) {
            Ok(zone) if zone.min_ret_op != NONE || zone.max_call_op != NONE => zones.push(zone),
            Ok(_) => {}
            Err(v) => return Some(v),
        }
    }
    let blind = key.ops.iter().enumerate().filter(|(i, o)| {
        matches!(o.action, Action::Append(_) | Action::Write(_)) && o.is_determinate() && !in_chain[*i]
    });
    zones.extend(blind.map(|(i, _)| chains::single(key, i as u32)));
    zones::find_conflict(&zones).map(Violation::Zones)
}

/// The first read of `chain` whose string is not a prefix of the chain's longest read.
fn diverged(key: &KeyHistory, chain: &Chain) -> Option<Violation> {
    let (longest_op, _) = chain.longest.as_ref()?;
    let text = |op: u32| match key.ops[op as usize].action {
        Action::Read(v) => key.values.as_str(v).unwrap_or(""),
        _ => "",
    };
    let l = text(*longest_op);
    let op = chain.reads.iter().find(|&&(version, op)| version > 0 && !l.starts_with(text(op)))?.1;
    Some(Violation::Diverged { op, other: *longest_op })
}

/// Places one chain: its put (if any), then each version's readers and the next append.
fn place_chain(key: &KeyHistory, root: u32, order: &[u32], reads: &[(u32, u32)]) -> Result<Zone, Violation> {
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

fn codebook(key: &KeyHistory) -> Result<Codebook<'_>, String> {
    let mut by_text = FxHashMap::default();
    for (i, op) in key.ops.iter().enumerate() {
        let (Action::Append(v) | Action::Write(v)) = op.action else { continue };
        let text = key.values.as_str(v).ok_or("a put or append value is not a string")?;
        if text.is_empty() {
            return Err("a put or append of the empty string".into());
        }
        if by_text.insert(text, i as u32).is_some() {
            return Err(format!("{text:?} is put or appended more than once"));
        }
    }
    let mut texts: Vec<&str> = by_text.keys().copied().collect();
    texts.sort_unstable();
    // In sorted order, a value that begins another also begins its successor.
    if let Some(w) = texts.windows(2).find(|w| w[1].starts_with(w[0])) {
        return Err(format!("value {:?} begins another ({:?})", w[0], w[1]));
    }
    let mut lengths: Vec<usize> = texts.iter().map(|t| t.len()).collect();
    lengths.sort_unstable();
    lengths.dedup();
    if lengths.len() > MAX_LENGTHS {
        return Err(format!("{} distinct value lengths (at most {MAX_LENGTHS})", lengths.len()));
    }
    Ok(Codebook { by_text, lengths })
}

/// The ops (puts and appends) whose values spell `s`, in order; `None` if no sequence of
/// distinct values does. Unique because no value begins another.
fn decode(book: &Codebook, s: &str) -> Option<Vec<u32>> {
    let mut order = Vec::new();
    let mut used = rustc_hash::FxHashSet::default();
    let mut at = 0;
    while at < s.len() {
        let rest = &s[at..];
        let (len, op) = book
            .lengths
            .iter()
            .take_while(|&&l| l <= rest.len())
            .find_map(|&l| rest.get(..l).and_then(|p| book.by_text.get(p)).map(|&op| (l, op)))?;
        if !used.insert(op) {
            return None;
        }
        order.push(op);
        at += len;
    }
    Some(order)
}

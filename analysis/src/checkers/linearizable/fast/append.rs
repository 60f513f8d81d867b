//! The fast path for a kv key of appends and reads (Porcupine's kv shape; Elle's
//! list-append insight): with unique append values that no other value begins, a read's
//! string spells out exactly which appends it saw and in which order.
//!
//! States only grow, so every read must be a prefix of the longest read `L`; decoding `L`
//! gives the version order `a1, a2, ...` of the appends it saw, and each read maps to the
//! version it ends at. Every append both reads the previous version and writes the next,
//! so the whole key is one chain in a fixed order: `readers(v0), a1, readers(v1), a2,
//! ..., readers(vm)`, then the appends no read saw (determinate ones must still happen;
//! indeterminate ones may never have). One chain has no zones to clash with, so the
//! earliest-placement walk ([`super::chains::Walk`]) alone decides the key.
//!
//! Not eligible (the search decides): puts on the key, an empty or repeated append value,
//! one append value a prefix of another (decoding could be ambiguous), or more than
//! [`MAX_LENGTHS`] distinct append lengths (decoding would get slow).

use super::super::model::Action;
use super::super::prepare::KeyHistory;
use super::super::values::ValueTable;
use super::chains::Walk;
use super::Violation;
use rustc_hash::FxHashMap;

/// Decoding tries each distinct append length at each position.
pub const MAX_LENGTHS: usize = 64;

/// The appends of a key, by their text.
struct Appends<'a> {
    by_text: FxHashMap<&'a str, u32>,
    /// Distinct lengths of the append values, ascending.
    lengths: Vec<usize>,
}

/// `Ok(None)` if linearizable, `Ok(Some(_))` with a violation, `Err` if not eligible.
pub fn decide(key: &KeyHistory) -> Result<Option<Violation>, String> {
    let initial = match key.initial {
        ValueTable::NULL => "",
        id => key.values.as_str(id).ok_or("the initial value is not a string")?,
    };
    let appends = appends(key)?;
    // Reads of something other than the initial value, with their strings.
    let mut later: Vec<(u32, &str)> = Vec::new();
    let mut first_readers = Vec::new();
    for (i, op) in key.ops.iter().enumerate() {
        match op.action {
            Action::Read(v) if v == key.initial => first_readers.push(i as u32),
            Action::Read(v) => match key.values.as_str(v) {
                Some(s) if s.len() > initial.len() && s.starts_with(initial) => later.push((i as u32, s)),
                _ => return Ok(Some(Violation::Unwritten { op: i as u32 })),
            },
            Action::Append(_) => {}
            Action::Write(_) => return Err("the key has puts as well as appends".into()),
            Action::Cas { .. } | Action::CasMaybe { .. } => return Err("the key has cas ops".into()),
        }
    }
    let longest = later.iter().max_by_key(|(_, s)| s.len()).copied();
    let order = match longest {
        Some((op, s)) => match decode(&appends, &s[initial.len()..]) {
            Some(order) => order,
            None => return Ok(Some(Violation::Unwritten { op })),
        },
        None => Vec::new(),
    };
    // ends[k]: the length of version k + 1's string.
    let mut ends = Vec::with_capacity(order.len());
    let mut end = initial.len();
    for &a in &order {
        end += appends_len(key, a);
        ends.push(end);
    }
    let mut readers: Vec<(u32, u32)> = Vec::with_capacity(later.len());
    for &(op, s) in &later {
        let Some((longest_op, l)) = longest else { break };
        if !l.starts_with(s) {
            return Ok(Some(Violation::Diverged { op, other: longest_op }));
        }
        match ends.binary_search(&s.len()) {
            Ok(k) => readers.push((k as u32, op)),
            Err(_) => return Ok(Some(Violation::Unwritten { op })),
        }
    }
    readers.sort_unstable();
    Ok(walk(key, &order, &first_readers, &readers).err())
}

/// Places the key's one chain; see the module doc.
fn walk(key: &KeyHistory, order: &[u32], first_readers: &[u32], readers: &[(u32, u32)]) -> Result<(), Violation> {
    let mut walk = Walk::new(key.initial, true);
    walk.group(key, first_readers.iter().copied())?;
    let mut seen = vec![false; key.ops.len()];
    let mut next_reader = 0;
    for (k, &a) in order.iter().enumerate() {
        seen[a as usize] = true;
        walk.group(key, [a])?;
        let from = next_reader;
        while next_reader < readers.len() && readers[next_reader].0 == k as u32 {
            next_reader += 1;
        }
        walk.group(key, readers[from..next_reader].iter().map(|&(_, op)| op))?;
    }
    let unseen = key.ops.iter().enumerate().filter(|(i, o)| {
        matches!(o.action, Action::Append(_)) && o.is_determinate() && !seen[*i]
    });
    walk.group(key, unseen.map(|(i, _)| i as u32))
}

fn appends_len(key: &KeyHistory, op: u32) -> usize {
    match key.ops[op as usize].action {
        Action::Append(v) => key.values.as_str(v).map_or(0, str::len),
        _ => 0,
    }
}

fn appends(key: &KeyHistory) -> Result<Appends<'_>, String> {
    let mut by_text = FxHashMap::default();
    for (i, op) in key.ops.iter().enumerate() {
        let Action::Append(v) = op.action else { continue };
        let text = key.values.as_str(v).ok_or("an append value is not a string")?;
        if text.is_empty() {
            return Err("an append of the empty string".into());
        }
        if by_text.insert(text, i as u32).is_some() {
            return Err(format!("{text:?} is appended more than once"));
        }
    }
    let mut texts: Vec<&str> = by_text.keys().copied().collect();
    texts.sort_unstable();
    // In sorted order, a value that begins another also begins its successor.
    if let Some(w) = texts.windows(2).find(|w| w[1].starts_with(w[0])) {
        return Err(format!("append value {:?} begins another ({:?})", w[0], w[1]));
    }
    let mut lengths: Vec<usize> = texts.iter().map(|t| t.len()).collect();
    lengths.sort_unstable();
    lengths.dedup();
    if lengths.len() > MAX_LENGTHS {
        return Err(format!("{} distinct append lengths (at most {MAX_LENGTHS})", lengths.len()));
    }
    Ok(Appends { by_text, lengths })
}

/// The appends (op ids) that spell `s`, in order; `None` if no sequence of distinct
/// appends does. Unique because no append value begins another.
fn decode(appends: &Appends, s: &str) -> Option<Vec<u32>> {
    let mut order = Vec::new();
    let mut used = rustc_hash::FxHashSet::default();
    let mut at = 0;
    while at < s.len() {
        let rest = &s[at..];
        let (len, op) = appends
            .lengths
            .iter()
            .take_while(|&&l| l <= rest.len())
            .find_map(|&l| rest.get(..l).and_then(|p| appends.by_text.get(p)).map(|&op| (l, op)))?;
        if !used.insert(op) {
            return None;
        }
        order.push(op);
        at += len;
    }
    Some(order)
}

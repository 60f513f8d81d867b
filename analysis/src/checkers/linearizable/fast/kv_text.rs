//! The texts of a kv key's puts and appends, and how a read's string is spelled in them.
//!
//! Invariants of a built [`Codebook`]: every put and append value is a non-empty string;
//! the distinct texts are prefix-free (none begins another), so a string has at most one
//! spelling as a sequence of texts; a text may be put or appended by several ops, and
//! each text lists its puts and its appends separately, in call order.

use super::super::model::Action;
use super::super::prepare::KeyHistory;
use rustc_hash::FxHashMap;

/// Spelling tries each distinct text length at each position.
pub const MAX_LENGTHS: usize = 64;

pub struct Codebook<'a> {
    by_text: FxHashMap<&'a str, u32>,
    /// Distinct lengths of the texts, ascending.
    lengths: Vec<usize>,
    /// Per text id: the ops that put it.
    pub puts: Vec<Vec<u32>>,
    /// Per text id: the ops that append it.
    pub appends: Vec<Vec<u32>>,
    /// Whether some text is put or appended by more than one op.
    pub repeated: bool,
}

impl<'a> Codebook<'a> {
    /// The codebook of `key`'s puts and appends, or why the fast path does not apply.
    pub fn build(key: &'a KeyHistory) -> Result<Self, String> {
        let mut book = Codebook {
            by_text: FxHashMap::default(),
            lengths: Vec::new(),
            puts: Vec::new(),
            appends: Vec::new(),
            repeated: false,
        };
        for (i, op) in key.ops.iter().enumerate() {
            let (Action::Append(v) | Action::Write(v)) = op.action else {
                continue;
            };
            let text = key
                .values
                .as_str(v)
                .ok_or("a put or append value is not a string")?;
            if text.is_empty() {
                return Err("a put or append of the empty string".into());
            }
            let next = book.puts.len() as u32;
            let id = *book.by_text.entry(text).or_insert(next);
            if id == next {
                book.puts.push(Vec::new());
                book.appends.push(Vec::new());
            } else {
                book.repeated = true;
            }
            match op.action {
                Action::Write(_) => book.puts[id as usize].push(i as u32),
                _ => book.appends[id as usize].push(i as u32),
            }
        }
        let mut texts: Vec<&str> = book.by_text.keys().copied().collect();
        texts.sort_unstable();
        // In sorted order, a text that begins another also begins its successor.
        if let Some(w) = texts.windows(2).find(|w| w[1].starts_with(w[0])) {
            return Err(format!("value {:?} begins another ({:?})", w[0], w[1]));
        }
        book.lengths = texts.iter().map(|t| t.len()).collect();
        book.lengths.sort_unstable();
        book.lengths.dedup();
        if book.lengths.len() > MAX_LENGTHS {
            return Err(format!(
                "{} distinct value lengths (at most {MAX_LENGTHS})",
                book.lengths.len()
            ));
        }
        Ok(book)
    }

    /// The text ids that spell `s`, in order; `None` if no sequence of texts does.
    pub fn spell(&self, s: &str) -> Option<Vec<u32>> {
        let mut ids = Vec::new();
        let mut at = 0;
        while at < s.len() {
            let rest = &s[at..];
            let (len, id) = self
                .lengths
                .iter()
                .take_while(|&&l| l <= rest.len())
                .find_map(|&l| {
                    rest.get(..l)
                        .and_then(|p| self.by_text.get(p))
                        .map(|&id| (l, id))
                })?;
            ids.push(id);
            at += len;
        }
        Some(ids)
    }
}

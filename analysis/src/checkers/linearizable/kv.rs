//! The kv model of Porcupine's kv test: per key, `get` returns the current string, `put`
//! replaces it and `append` concatenates to it. The search runs on one key at a time
//! (partitioning), so this is a single string register with an append operation.
//!
//! Strings produced by appends are interned on the fly; a string equal to one that occurs
//! in the history gets that value's id, so reads compare ids.

use super::model::{Action, SequentialModel};
use super::values::ValueTable;
use rustc_hash::FxHashMap;

pub struct KvModel<'a> {
    initial: u32,
    values: &'a ValueTable,
    /// Strings created by appends that the history never mentions; id = base + position.
    created: Vec<Box<str>>,
    created_ids: FxHashMap<Box<str>, u32>,
    /// (state, appended value) → resulting state, so each concatenation is built once.
    appended: FxHashMap<(u32, u32), u32>,
    bytes: u64,
}

impl<'a> KvModel<'a> {
    pub fn new(initial: u32, values: &'a ValueTable) -> Self {
        KvModel {
            initial,
            values,
            created: Vec::new(),
            created_ids: FxHashMap::default(),
            appended: FxHashMap::default(),
            bytes: 0,
        }
    }

    fn base(&self) -> u32 {
        self.values.len() as u32
    }

    /// The string a state holds; absent (`null`) counts as empty, as in a store where an
    /// append to a missing key creates it.
    fn text(&self, id: u32) -> Option<&str> {
        if id == ValueTable::NULL {
            return Some("");
        }
        match id.checked_sub(self.base()) {
            Some(i) => self.created.get(i as usize).map(|s| &**s),
            None => self.values.as_str(id),
        }
    }

    fn intern_created(&mut self, s: String) -> Option<u32> {
        if let Some(id) = self
            .values
            .string_id(&s)
            .or_else(|| self.created_ids.get(s.as_str()).copied())
        {
            return Some(id);
        }
        let id = self
            .base()
            .checked_add(u32::try_from(self.created.len()).ok()?)?;
        self.bytes += 2 * s.len() as u64 + 64;
        let s: Box<str> = s.into();
        self.created_ids.insert(s.clone(), id);
        self.created.push(s);
        Some(id)
    }

    fn append(&mut self, state: u32, suffix: u32) -> Option<u32> {
        if let Some(id) = self.appended.get(&(state, suffix)) {
            return Some(*id);
        }
        let joined = format!("{}{}", self.text(state)?, self.text(suffix)?);
        let id = self.intern_created(joined)?;
        self.appended.insert((state, suffix), id);
        self.bytes += 16;
        Some(id)
    }
}

impl SequentialModel for KvModel<'_> {
    fn initial(&self) -> u32 {
        self.initial
    }

    fn step(&mut self, state: u32, action: Action) -> Option<u32> {
        match action {
            Action::Read(v) => (v == state).then_some(state),
            Action::Write(v) => Some(v),
            Action::Append(v) => self.append(state, v),
            // Preparation never gives a cas to the kv model.
            Action::Cas { .. } | Action::CasMaybe { .. } => None,
        }
    }

    fn extra_bytes(&self) -> u64 {
        self.bytes
    }

    fn describe(&self, state: u32) -> serde_json::Value {
        match state.checked_sub(self.base()) {
            Some(_) => self.text(state).map(Into::into).unwrap_or_default(),
            None => self.values.json(state),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn appends_concatenate_and_meet_values_seen_in_the_history() {
        let mut t = ValueTable::new();
        let empty = t.intern(&json!("")).unwrap();
        let x = t.intern(&json!("x")).unwrap();
        let y = t.intern(&json!("y")).unwrap();
        let xy = t.intern(&json!("xy")).unwrap();
        let mut m = KvModel::new(empty, &t);
        let s = m.step(m.initial(), Action::Append(x)).unwrap();
        assert_eq!(s, x, "\"\" + \"x\" is the interned \"x\"");
        let s = m.step(s, Action::Append(y)).unwrap();
        assert_eq!(m.step(s, Action::Read(xy)), Some(xy));
        let s = m.step(s, Action::Append(y)).unwrap();
        assert_eq!(m.describe(s), json!("xyy"));
        assert_eq!(m.step(s, Action::Read(xy)), None);
        assert_eq!(
            m.step(ValueTable::NULL, Action::Append(x)),
            Some(x),
            "absent + x = x"
        );
    }
}

//! Weighted space-saving top-K sketch with keys stored inline: after construction, recording
//! never allocates. Guarantee: any key whose load exceeds `total / K` is in the sketch, and
//! each entry's true load lies in `[count - error, count]`.

use super::keys::{KeyBuf, KEY_CAP};
use super::stats::HotKey;

#[derive(Debug, Clone, Copy)]
struct Entry {
    key: KeyBuf,
    count: u64,
    error: u64,
}

/// A fixed-capacity heavy-hitter sketch.
#[derive(Debug, Clone)]
pub struct TopK {
    entries: Vec<Entry>,
    len: usize,
}

impl TopK {
    pub fn new(k: usize) -> Self {
        let empty = Entry {
            key: KeyBuf::EMPTY,
            count: 0,
            error: 0,
        };
        TopK {
            entries: vec![empty; k.max(1)],
            len: 0,
        }
    }

    /// Adds `weight` to `key`. Keys longer than [`KEY_CAP`] are not tracked (they could not
    /// be isolated exactly anyway).
    pub fn record(&mut self, key: &[u8], weight: u64) {
        if key.len() > KEY_CAP || weight == 0 {
            return;
        }
        if let Some(entry) = self.entries[..self.len]
            .iter_mut()
            .find(|e| e.key.as_slice() == key)
        {
            entry.count += weight;
            return;
        }
        if self.len < self.entries.len() {
            self.entries[self.len] = Entry {
                key: KeyBuf::from_key(key),
                count: weight,
                error: 0,
            };
            self.len += 1;
            return;
        }
        let (min_index, min_count) = self.min_entry();
        let entry = &mut self.entries[min_index];
        entry.key.set(key);
        entry.error = min_count;
        entry.count = min_count + weight;
    }

    fn min_entry(&self) -> (usize, u64) {
        self.entries[..self.len]
            .iter()
            .enumerate()
            .map(|(i, e)| (i, e.count))
            .min_by_key(|(_, count)| *count)
            .unwrap_or((0, 0))
    }

    /// Upper bound of the load of any key not in the sketch.
    pub fn floor(&self) -> u64 {
        if self.len < self.entries.len() {
            0
        } else {
            self.min_entry().1
        }
    }

    /// The tracked keys, heaviest (by guaranteed load) first.
    pub fn export(&self) -> Vec<HotKey> {
        let mut out: Vec<HotKey> = self.entries[..self.len]
            .iter()
            .map(|e| HotKey {
                key: e.key.as_slice().to_vec(),
                count: e.count,
                error: e.error,
            })
            .collect();
        out.sort_by(|a, b| {
            b.lower_bound()
                .cmp(&a.lower_bound())
                .then_with(|| a.key.cmp(&b.key))
        });
        out
    }

    /// Forgets every key, keeping the storage.
    pub fn clear(&mut self) {
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_while_not_full() {
        let mut s = TopK::new(4);
        for (key, n) in [(b"a", 5u64), (b"b", 3), (b"c", 1)] {
            for _ in 0..n {
                s.record(key, 1);
            }
        }
        let out = s.export();
        assert_eq!(
            out.iter()
                .map(|h| (h.key.clone(), h.count, h.error))
                .collect::<Vec<_>>(),
            vec![
                (b"a".to_vec(), 5, 0),
                (b"b".to_vec(), 3, 0),
                (b"c".to_vec(), 1, 0)
            ]
        );
        assert_eq!(s.floor(), 0);
    }

    #[test]
    fn a_heavy_key_survives_a_stream_of_distinct_keys() {
        let mut s = TopK::new(4);
        for i in 0..1_000u32 {
            s.record(format!("cold/{i}").as_bytes(), 1);
            if i % 2 == 0 {
                s.record(b"celebrity", 4);
            }
        }
        let out = s.export();
        assert_eq!(out[0].key, b"celebrity");
        assert!(
            out[0].lower_bound() <= 2_000 && out[0].count >= 2_000,
            "{:?}",
            out[0]
        );
        assert!(out[0].lower_bound() >= 1_500);
        assert!(s.floor() > 0);
    }

    #[test]
    fn clear_keeps_capacity_and_long_keys_are_ignored() {
        let mut s = TopK::new(2);
        s.record(&[1u8; KEY_CAP + 1], 10);
        assert!(s.export().is_empty());
        s.record(b"x", 1);
        s.clear();
        assert!(s.export().is_empty());
        assert_eq!(s.entries.len(), 2);
    }
}

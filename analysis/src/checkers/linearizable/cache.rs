//! The search's memory of configurations already explored: (set of linearized ops, model
//! state) pairs. Reaching a configuration twice means the second visit cannot succeed
//! where the first failed, so it is skipped (Lowe's improvement of Wing & Gong).
//!
//! The set of linearized ops is identified by an incrementally maintained 128-bit Zobrist
//! hash (XOR of one random key per op). Two representations:
//! - [`ConfigCache::Exact`] also stores the set itself (the bitset's words) and compares
//!   it on every hit, so it is exact; its entries cost `ops/8` bytes each, which is fine
//!   for keys of up to a few thousand ops.
//! - [`ConfigCache::Fingerprint`] stores only the 128-bit hash and the state (24 bytes per
//!   entry), the way TLC fingerprints states; a wrong "already seen" needs two different
//!   sets with equal 128-bit hashes, odds below 2^-80 for any history that fits in memory.
//!   It is what makes keys with hundreds of thousands of ops checkable.

use fixedbitset::FixedBitSet;
use rustc_hash::{FxHashMap, FxHashSet};

/// One random 128-bit key per op; a set's hash is the XOR of its members' keys.
pub struct Zobrist {
    keys: Vec<(u64, u64)>,
}

impl Zobrist {
    pub fn new(ops: usize) -> Self {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ ops as u64;
        let keys = (0..ops)
            .map(|_| (splitmix64(&mut seed), splitmix64(&mut seed)))
            .collect();
        Zobrist { keys }
    }

    #[inline]
    pub fn key(&self, op: usize) -> (u64, u64) {
        self.keys[op]
    }
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub enum ConfigCache {
    Exact(ExactCache),
    Fingerprint(FxHashSet<(u64, u64, u32)>),
}

impl ConfigCache {
    /// An exact cache for keys with at most `exact_max_ops` ops, a fingerprint cache
    /// above.
    pub fn for_ops(ops: usize, exact_max_ops: usize) -> Self {
        if ops <= exact_max_ops {
            ConfigCache::Exact(ExactCache::new(ops))
        } else {
            ConfigCache::Fingerprint(FxHashSet::default())
        }
    }

    /// Records the configuration; `true` if it was not there yet.
    #[inline]
    pub fn insert(&mut self, hash: (u64, u64), set: &FixedBitSet, state: u32) -> bool {
        match self {
            ConfigCache::Exact(c) => c.insert(hash, set, state),
            ConfigCache::Fingerprint(c) => c.insert((hash.0, hash.1, state)),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            ConfigCache::Exact(c) => c.chain.len(),
            ConfigCache::Fingerprint(c) => c.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Approximate heap bytes held (table slots at capacity plus stored sets).
    pub fn bytes(&self) -> u64 {
        match self {
            ConfigCache::Exact(c) => c.bytes(),
            ConfigCache::Fingerprint(c) => c.capacity() as u64 * 25,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            ConfigCache::Exact(_) => "exact",
            ConfigCache::Fingerprint(_) => "fingerprint",
        }
    }
}

/// Exact cache: a hash index into an arena of stored sets, with chaining for the
/// (astronomically unlikely) case of two sets with the same hash and state.
pub struct ExactCache {
    words: usize,
    index: FxHashMap<(u64, u64, u32), u32>,
    /// Stored sets, `words` blocks each, entry `i` at `i * words`.
    arena: Vec<usize>,
    /// Next entry with the same (hash, state), or `u32::MAX`.
    chain: Vec<u32>,
}

impl ExactCache {
    fn new(ops: usize) -> Self {
        let words = ops.div_ceil(usize::BITS as usize).max(1);
        ExactCache {
            words,
            index: FxHashMap::default(),
            arena: Vec::new(),
            chain: Vec::new(),
        }
    }

    fn stored(&self, entry: u32) -> &[usize] {
        let at = entry as usize * self.words;
        &self.arena[at..at + self.words]
    }

    fn insert(&mut self, hash: (u64, u64), set: &FixedBitSet, state: u32) -> bool {
        let blocks = set.as_slice();
        let key = (hash.0, hash.1, state);
        let head = self.index.get(&key).copied();
        let mut cursor = head.unwrap_or(u32::MAX);
        while cursor != u32::MAX {
            if self.stored(cursor) == &blocks[..self.words] {
                return false;
            }
            cursor = self.chain[cursor as usize];
        }
        let entry = self.chain.len() as u32;
        self.arena.extend_from_slice(&blocks[..self.words]);
        self.chain.push(head.unwrap_or(u32::MAX));
        self.index.insert(key, entry);
        true
    }

    fn bytes(&self) -> u64 {
        (self.index.capacity() * 29 + self.arena.capacity() * 8 + self.chain.capacity() * 4) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_of(n: usize, members: &[usize]) -> FixedBitSet {
        let mut s = FixedBitSet::with_capacity(n);
        members.iter().for_each(|&m| s.insert(m));
        s
    }

    #[test]
    fn both_caches_remember_set_and_state() {
        for mut cache in [
            ConfigCache::for_ops(100, 1000),
            ConfigCache::for_ops(100, 10),
        ] {
            let s = set_of(100, &[1, 70]);
            assert!(cache.insert((1, 2), &s, 7));
            assert!(
                !cache.insert((1, 2), &s, 7),
                "{} cache forgot",
                cache.kind()
            );
            assert!(
                cache.insert((1, 2), &s, 8),
                "state is part of the configuration"
            );
            assert_eq!(cache.len(), 2);
        }
    }

    #[test]
    fn exact_cache_tells_apart_sets_with_colliding_hashes() {
        let mut cache = ConfigCache::for_ops(100, 1000);
        assert!(cache.insert((5, 5), &set_of(100, &[1]), 0));
        assert!(
            cache.insert((5, 5), &set_of(100, &[2]), 0),
            "different set, same hash"
        );
        assert!(!cache.insert((5, 5), &set_of(100, &[2]), 0));
        assert!(!cache.insert((5, 5), &set_of(100, &[1]), 0));
    }
}

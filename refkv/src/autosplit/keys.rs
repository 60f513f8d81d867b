//! Byte-key arithmetic shared by the sampler and the split-key choice: interior checks,
//! successors, interpolation between two keys, key-space widths and the byte midpoint
//! (used only by the seeded `split-midpoint` bug).
//!
//! Positions are computed after the common prefix of the two bounds, from the next 8 bytes
//! read big-endian and zero-padded, so keys that share a long prefix keep full resolution.

use std::cmp::Ordering;

/// Longest key the sampler stores inline (hot-key sketch, window min/max). Longer keys are
/// truncated for min/max and not tracked as hot keys.
pub const KEY_CAP: usize = 64;

/// True when `key` lies strictly inside the route `[start, end)`: `start < key < end`, where an
/// empty `end` means unbounded. Splitting at such a key leaves both children non-empty.
pub fn strictly_inside(key: &[u8], start: &[u8], end: &[u8]) -> bool {
    key > start && (end.is_empty() || key < end)
}

/// True when `key` belongs to `[start, end)`.
pub fn in_route(key: &[u8], start: &[u8], end: &[u8]) -> bool {
    key >= start && (end.is_empty() || key < end)
}

/// The smallest key greater than `key`: `key ++ [0]`. `[k, successor(k))` holds exactly `k`.
pub fn successor(key: &[u8]) -> Vec<u8> {
    let mut next = Vec::with_capacity(key.len() + 1);
    next.extend_from_slice(key);
    next.push(0);
    next
}

/// Length of the longest common prefix of `a` and `b`.
pub fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The 8 bytes of `key` starting at `offset`, big-endian, zero-padded.
pub fn be_u64_at(key: &[u8], offset: usize) -> u64 {
    let mut word = [0u8; 8];
    if offset < key.len() {
        let tail = &key[offset..];
        let n = tail.len().min(8);
        word[..n].copy_from_slice(&tail[..n]);
    }
    u64::from_be_bytes(word)
}

/// `prefix ++ value` as 8 big-endian bytes with trailing zero bytes removed. Trimming keeps
/// the key a lower bound of every key whose 8 bytes after `prefix` equal `value`.
pub fn key_from_position(prefix: &[u8], value: u64) -> Vec<u8> {
    let bytes = value.to_be_bytes();
    let used = bytes.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
    let mut key = Vec::with_capacity(prefix.len() + used);
    key.extend_from_slice(prefix);
    key.extend_from_slice(&bytes[..used]);
    key
}

/// The key a fraction `f` (clamped to [0, 1]) of the way from `lo` to `hi` (requires
/// `lo <= hi`). Returns `lo` when the two are equal within 8 bytes after their common prefix.
pub fn interpolate(lo: &[u8], hi: &[u8], f: f64) -> Vec<u8> {
    let p = common_prefix_len(lo, hi);
    let a = be_u64_at(lo, p);
    let b = be_u64_at(hi, p);
    if b <= a {
        return lo.to_vec();
    }
    let f = if f.is_finite() {
        f.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let offset = ((b - a) as f64 * f) as u64;
    let value = a.saturating_add(offset.min(b - a));
    if value == a {
        return lo.to_vec();
    }
    key_from_position(&lo[..p], value)
}

/// Where `key` lies between `lo` and `hi` (`lo <= hi`), as a fraction in [0, 1]: the inverse
/// of [`interpolate`], with the same 8-byte resolution.
pub fn fraction_of(lo: &[u8], hi: &[u8], key: &[u8]) -> f64 {
    if key <= lo {
        return 0.0;
    }
    if key >= hi {
        return 1.0;
    }
    let p = common_prefix_len(lo, hi);
    let a = be_u64_at(lo, p);
    let b = be_u64_at(hi, p);
    if b <= a {
        return 0.5;
    }
    let x = be_u64_at(key, p).clamp(a, b);
    (x - a) as f64 / (b - a) as f64
}

/// Width of `[start, end)` as a fraction of the whole byte key space (an empty `end` is
/// unbounded). Exact enough for guardrails: 8 bytes of resolution after the common prefix.
pub fn span_fraction(start: &[u8], end: &[u8]) -> f64 {
    const TWO_64: f64 = 18_446_744_073_709_551_616.0;
    if end.is_empty() {
        return 1.0 - be_u64_at(start, 0) as f64 / TWO_64;
    }
    if end <= start {
        return 0.0;
    }
    let p = common_prefix_len(start, end);
    let delta = be_u64_at(end, p).saturating_sub(be_u64_at(start, p)) as f64 / TWO_64;
    delta * 256f64.powi(-(p.min(i32::MAX as usize) as i32))
}

/// The byte midpoint of `[start, end)`, strictly inside it, or `None` when the route holds a
/// single key. Deliberately blind to load: only the seeded `split-midpoint` bug uses it.
pub fn byte_midpoint(start: &[u8], end: &[u8]) -> Option<Vec<u8>> {
    let (p, a, b) = if end.is_empty() {
        (0, be_u64_at(start, 0) as u128, 1u128 << 64)
    } else {
        let p = common_prefix_len(start, end);
        (p, be_u64_at(start, p) as u128, be_u64_at(end, p) as u128)
    };
    if b > a + 1 {
        let mid = ((a + b) / 2) as u64;
        let key = key_from_position(&start[..p.min(start.len())], mid);
        if strictly_inside(&key, start, end) {
            return Some(key);
        }
    }
    // The bounds are adjacent within 8 bytes: go one byte deeper below `end`.
    let mut key = start.to_vec();
    key.push(0x80);
    strictly_inside(&key, start, end).then_some(key)
}

/// A key of at most [`KEY_CAP`] bytes stored inline, so the request path never allocates.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct KeyBuf {
    bytes: [u8; KEY_CAP],
    len: u8,
    truncated: bool,
}

impl KeyBuf {
    pub const EMPTY: KeyBuf = KeyBuf {
        bytes: [0; KEY_CAP],
        len: 0,
        truncated: false,
    };

    /// Stores `key`, keeping its first [`KEY_CAP`] bytes.
    pub fn set(&mut self, key: &[u8]) {
        let n = key.len().min(KEY_CAP);
        self.bytes[..n].copy_from_slice(&key[..n]);
        self.len = n as u8;
        self.truncated = key.len() > KEY_CAP;
    }

    pub fn from_key(key: &[u8]) -> Self {
        let mut buf = Self::EMPTY;
        buf.set(key);
        buf
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// True when the stored bytes are only a prefix of the key that was set.
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// Compares a full key with the stored (possibly truncated) one.
    pub fn cmp_key(&self, key: &[u8]) -> Ordering {
        self.as_slice().cmp(key)
    }
}

impl std::fmt::Debug for KeyBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "KeyBuf({:?}{})",
            String::from_utf8_lossy(self.as_slice()),
            if self.truncated { "…" } else { "" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interior_and_membership() {
        assert!(strictly_inside(b"b", b"a", b"c"));
        assert!(!strictly_inside(b"a", b"a", b"c"));
        assert!(!strictly_inside(b"c", b"a", b"c"));
        assert!(strictly_inside(b"zzz", b"a", b""));
        assert!(!strictly_inside(b"", b"", b""));
        assert!(in_route(b"a", b"a", b"c"));
        assert!(!in_route(b"c", b"a", b"c"));
    }

    #[test]
    fn successor_bounds_a_single_key_route() {
        let k = b"user/42".to_vec();
        let s = successor(&k);
        assert!(s > k);
        // Nothing fits strictly between k and its successor.
        assert_eq!(byte_midpoint(&k, &s), None);
        assert!(!strictly_inside(&k, &k, &s));
    }

    #[test]
    fn interpolation_stays_between_its_bounds_and_is_monotone() {
        let lo = b"hot/000100";
        let hi = b"hot/000900";
        let mut last = lo.to_vec();
        for i in 0..=10 {
            let key = interpolate(lo, hi, f64::from(i) / 10.0);
            assert!(
                key.as_slice() >= lo.as_slice() && key.as_slice() <= hi.as_slice(),
                "{key:?}"
            );
            assert!(key >= last);
            last = key;
        }
        let mid = interpolate(lo, hi, 0.5);
        assert!(
            mid.starts_with(b"hot/000") && mid[7] == b'5',
            "{:?}",
            String::from_utf8_lossy(&mid)
        );
        assert_eq!(interpolate(b"same", b"same", 0.7), b"same".to_vec());
    }

    #[test]
    fn fraction_of_inverts_interpolation() {
        let (lo, hi) = (b"hot/000000".as_slice(), b"hot/999999".as_slice());
        for f in [0.1, 0.25, 0.5, 0.9] {
            let key = interpolate(lo, hi, f);
            assert!((fraction_of(lo, hi, &key) - f).abs() < 1e-6, "{f}");
        }
        assert_eq!(fraction_of(lo, hi, b"a"), 0.0);
        assert_eq!(fraction_of(lo, hi, b"z"), 1.0);
    }

    #[test]
    fn span_fraction_measures_key_space_width() {
        assert_eq!(span_fraction(b"", b""), 1.0);
        assert!((span_fraction(b"", &[0x80]) - 0.5).abs() < 1e-12);
        assert!((span_fraction(&[0x80], b"") - 0.5).abs() < 1e-12);
        assert_eq!(span_fraction(b"b", b"a"), 0.0);
        let narrow = span_fraction(b"hot/0001", b"hot/0002");
        assert!(narrow > 0.0 && narrow < 1e-9, "{narrow}");
    }

    #[test]
    fn byte_midpoint_is_interior_for_all_shapes() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"", b""),
            (b"a", b"b"),
            (b"abcdefgh", b"abcdefgi"),
            (b"hot/", b""),
            (b"", b"\x01"),
            (b"k", b"k\x00\x01"),
        ];
        for (start, end) in cases {
            let mid = byte_midpoint(start, end).expect("interior midpoint");
            assert!(
                strictly_inside(&mid, start, end),
                "{start:?} {end:?} -> {mid:?}"
            );
        }
        assert_eq!(byte_midpoint(b"", b""), Some(vec![0x80]));
    }

    #[test]
    fn keybuf_truncates_long_keys() {
        let long = vec![7u8; KEY_CAP + 10];
        let buf = KeyBuf::from_key(&long);
        assert!(buf.is_truncated());
        assert_eq!(buf.as_slice(), &long[..KEY_CAP]);
        assert_eq!(buf.cmp_key(&long), Ordering::Less);
        let short = KeyBuf::from_key(b"abc");
        assert!(!short.is_truncated());
        assert_eq!(short.cmp_key(b"abc"), Ordering::Equal);
    }
}

//! The body of one object write, derived from (key, write number, length) alone, and the
//! verifier that tells a read body that is one whole write's body from a torn one
//! (`docs/s3.md` § objects).
//!
//! Layout of the body of write `n` of `key`, `length` bytes: the first `length` bytes of
//! - a [`HEADER_LEN`]-byte ASCII header `fl-object w=<n> len=<length> key=<key>`, padded
//!   with spaces, ending in `\n`;
//! - then [`CELL_LEN`]-byte cells, cell `i` at byte `HEADER_LEN + i * CELL_LEN`: the write
//!   number as 8 little-endian bytes (the cell's *stamp*), then 56 pseudo-random bytes
//!   seeded by (key, n, i) ([`cell`]). The last cell may be cut short.
//!
//! Every cell starts at a multiple of 64, so a body assembled from pieces of several
//! writes cut at any 64-byte boundary (elastickv's 1 MiB chunks, S3's parts) shows, cell by
//! cell, which write each piece came from.
//!
//! Invariants: [`body`] and [`verify`] agree (`verify(key, &body(key, n, len)?)` is
//! `Whole(n)` for every valid input); a body shorter than [`HEADER_LEN`] cannot name its
//! write, so [`MIN_BODY`] is the smallest body written; [`verify`] never panics, whatever
//! the bytes.

use serde_json::{json, Value};

/// Bytes of the header.
pub const HEADER_LEN: usize = 64;
/// Bytes of one cell after the header.
pub const CELL_LEN: usize = 64;
/// The smallest body: the header alone.
pub const MIN_BODY: u64 = HEADER_LEN as u64;
/// Words of pseudo-random filler per cell after its stamp.
const FILLER_WORDS: usize = (CELL_LEN - 8) / 8;

/// The header's text before its padding.
fn header_text(key: &str, write: i64, length: u64) -> String {
    format!("fl-object w={write} len={length} key={key}")
}

/// The body of write `write` of `key`, `length` bytes; an error when `length` is below
/// [`MIN_BODY`] or the key is too long for the header.
pub fn body(key: &str, write: i64, length: u64) -> Result<Vec<u8>, String> {
    if length < MIN_BODY {
        return Err(format!(
            "an object body needs at least {MIN_BODY} bytes, not {length}"
        ));
    }
    let text = header_text(key, write, length);
    if text.len() > HEADER_LEN - 1 || text.contains('\n') {
        return Err(format!(
            "key {key:?} does not fit an object header of {HEADER_LEN} bytes"
        ));
    }
    let len = usize::try_from(length).map_err(|_| format!("length {length} too large"))?;
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(text.as_bytes());
    out.resize(HEADER_LEN - 1, b' ');
    out.push(b'\n');
    let mut i = 0u64;
    while out.len() < len {
        out.extend_from_slice(&cell(key, write, i));
        i += 1;
    }
    out.truncate(len);
    Ok(out)
}

/// Cell `i` of write `write` of `key`: its stamp, then filler seeded by all three.
pub fn cell(key: &str, write: i64, i: u64) -> [u8; CELL_LEN] {
    let mut out = [0u8; CELL_LEN];
    out[..8].copy_from_slice(&write.to_le_bytes());
    let mut state = fnv1a(key.as_bytes())
        ^ (write as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ i.wrapping_mul(0xC2B2_AE3D_27D4_EB4F).rotate_left(31);
    for w in 0..FILLER_WORDS {
        let word = splitmix64(&mut state);
        out[8 + w * 8..16 + w * 8].copy_from_slice(&word.to_le_bytes());
    }
    out
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Why a body is not one whole write's body, in the order [`verify`] prefers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TornReason {
    /// Shorter than a header, or a header that does not parse.
    UnreadableHeader,
    /// A header naming another object.
    WrongKey,
    /// Cells of more than one write.
    Mixed,
    /// A cell that is no write's (bytes changed, or cut inside the body).
    Corrupt,
    /// Every cell its header's write's, but fewer bytes than the header says.
    Truncated,
    /// Every cell its header's write's, but more bytes than the header says.
    Overlong,
}

impl TornReason {
    /// The name the history records (`docs/history-format.md` § Objects).
    pub fn name(self) -> &'static str {
        match self {
            TornReason::UnreadableHeader => "unreadable-header",
            TornReason::WrongKey => "wrong-key",
            TornReason::Mixed => "mixed",
            TornReason::Corrupt => "corrupt",
            TornReason::Truncated => "truncated",
            TornReason::Overlong => "overlong",
        }
    }
}

/// What a torn body shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Torn {
    pub reason: TornReason,
    /// The write its header names (`None`: unreadable header).
    pub write: Option<i64>,
    /// Bytes read.
    pub length: u64,
    /// The length its header names.
    pub expected_length: Option<u64>,
    /// The writes whose cells it holds, in order of first appearance (the header's first).
    pub writes: Vec<i64>,
    /// The first byte that is not the header's write's body at that place.
    pub offset: u64,
}

impl Torn {
    /// The `ok` read's recorded `value` (`docs/history-format.md` § Objects).
    pub fn to_json(&self) -> Value {
        json!({
            "torn": self.reason.name(),
            "write": self.write,
            "length": self.length,
            "expected-length": self.expected_length,
            "writes": self.writes,
            "offset": self.offset,
        })
    }
}

/// A verified body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyCheck {
    /// Exactly the body of this write.
    Whole(i64),
    Torn(Torn),
}

/// The header's (key, write, length), if it parses.
fn parse_header(head: &[u8]) -> Option<(&str, i64, u64)> {
    let text = std::str::from_utf8(head.get(..HEADER_LEN)?).ok()?;
    let text = text.strip_suffix('\n')?.trim_end_matches(' ');
    let rest = text.strip_prefix("fl-object w=")?;
    let (write, rest) = rest.split_once(" len=")?;
    let (length, key) = rest.split_once(" key=")?;
    Some((key, write.parse().ok()?, length.parse().ok()?))
}

/// Which write cell `i`'s bytes (`got`, possibly a cut last cell) are: `Some(w)` when they
/// are exactly (a prefix of) write `w`'s cell `i`, `w` being `expected` or the cell's stamp.
fn cell_owner(key: &str, expected: i64, i: u64, got: &[u8]) -> Option<i64> {
    let matches = |w: i64| cell(key, w, i)[..got.len()] == *got;
    if matches(expected) {
        return Some(expected);
    }
    let stamp = i64::from_le_bytes(got.get(..8)?.try_into().ok()?);
    matches(stamp).then_some(stamp)
}

/// Verifies `got`, read from `key`: the write it is whole, or how it is torn.
pub fn verify(key: &str, got: &[u8]) -> BodyCheck {
    let length = got.len() as u64;
    let Some((head_key, write, expected_length)) = parse_header(got) else {
        return BodyCheck::Torn(Torn {
            reason: TornReason::UnreadableHeader,
            write: None,
            length,
            expected_length: None,
            writes: Vec::new(),
            offset: 0,
        });
    };
    let mut torn = Torn {
        reason: TornReason::WrongKey,
        write: Some(write),
        length,
        expected_length: Some(expected_length),
        writes: vec![write],
        offset: 0,
    };
    if head_key != key {
        return BodyCheck::Torn(torn);
    }
    match first_foreign_cell(key, write, got, &mut torn.writes) {
        Some((offset, reason)) => {
            torn.reason = reason;
            torn.offset = offset;
        }
        None if length < expected_length => {
            torn.reason = TornReason::Truncated;
            torn.offset = length;
        }
        None if length > expected_length => {
            torn.reason = TornReason::Overlong;
            torn.offset = expected_length;
        }
        None => return BodyCheck::Whole(write),
    }
    BodyCheck::Torn(torn)
}

/// Walks the cells after the header: the offset of the first that is not `write`'s and
/// why (`Mixed` when some cell is another write's, else `Corrupt`); every other write seen
/// is added to `writes`.
fn first_foreign_cell(
    key: &str,
    write: i64,
    got: &[u8],
    writes: &mut Vec<i64>,
) -> Option<(u64, TornReason)> {
    let mut first: Option<u64> = None;
    let mut corrupt = false;
    for (i, bytes) in got[HEADER_LEN..].chunks(CELL_LEN).enumerate() {
        let offset = (HEADER_LEN + i * CELL_LEN) as u64;
        match cell_owner(key, write, i as u64, bytes) {
            Some(w) if w == write => continue,
            Some(w) if !writes.contains(&w) => writes.push(w),
            Some(_) => {}
            None => corrupt = true,
        }
        if first.is_none() {
            first = Some(offset);
        }
    }
    let reason = match writes.len() > 1 || !corrupt {
        true => TornReason::Mixed,
        false => TornReason::Corrupt,
    };
    first.map(|offset| (offset, reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "obj/00001";

    fn torn(got: &[u8]) -> Torn {
        match verify(KEY, got) {
            BodyCheck::Torn(t) => t,
            whole => panic!("expected torn, got {whole:?}"),
        }
    }

    #[test]
    fn every_whole_body_verifies_as_its_write() {
        for len in [64, 65, 127, 128, 1000, (1 << 20) + 3] {
            let b = body(KEY, 7, len).unwrap();
            assert_eq!(b.len() as u64, len);
            assert_eq!(verify(KEY, &b), BodyCheck::Whole(7), "len {len}");
        }
    }

    #[test]
    fn a_body_below_the_header_or_with_a_long_key_is_refused() {
        assert!(body(KEY, 1, 63).unwrap_err().contains("at least 64"));
        assert!(body(&"k".repeat(60), 1, 100)
            .unwrap_err()
            .contains("does not fit"));
    }

    #[test]
    fn the_same_write_gives_the_same_body_and_another_write_another() {
        assert_eq!(body(KEY, 3, 500).unwrap(), body(KEY, 3, 500).unwrap());
        assert_ne!(
            body(KEY, 3, 500).unwrap()[64..],
            body(KEY, 4, 500).unwrap()[64..]
        );
        assert_ne!(
            body(KEY, 3, 500).unwrap()[64..],
            body("obj/2", 3, 500).unwrap()[64..]
        );
    }

    #[test]
    fn a_truncated_body_is_torn_at_its_end() {
        let b = body(KEY, 5, 10_000).unwrap();
        let t = torn(&b[..4096]);
        assert_eq!(t.reason, TornReason::Truncated);
        assert_eq!(
            (t.write, t.length, t.expected_length),
            (Some(5), 4096, Some(10_000))
        );
        assert_eq!(t.offset, 4096);
        assert_eq!(t.writes, vec![5]);
    }

    #[test]
    fn a_body_cut_inside_a_cell_is_still_truncated() {
        let b = body(KEY, 5, 1000).unwrap();
        assert_eq!(torn(&b[..101]).reason, TornReason::Truncated);
    }

    #[test]
    fn an_overlong_body_is_torn_where_its_write_ends() {
        let mut b = body(KEY, 5, 200).unwrap();
        b.extend_from_slice(&body(KEY, 5, 300).unwrap()[200..]);
        let t = torn(&b);
        assert_eq!((t.reason, t.offset), (TornReason::Overlong, 200));
    }

    #[test]
    fn a_body_of_two_writes_names_both_and_where_they_meet() {
        let mut b = body(KEY, 8, 1 << 20).unwrap();
        let other = body(KEY, 9, 1 << 20).unwrap();
        b[4096..].copy_from_slice(&other[4096..]);
        let t = torn(&b);
        assert_eq!(t.reason, TornReason::Mixed);
        assert_eq!((t.writes.clone(), t.offset), (vec![8, 9], 4096));
    }

    #[test]
    fn changed_bytes_are_corrupt() {
        let mut b = body(KEY, 8, 5000).unwrap();
        b[3000] ^= 0xff;
        let t = torn(&b);
        assert_eq!(t.reason, TornReason::Corrupt);
        assert_eq!(t.offset, 64 + 45 * 64);
        assert_eq!(t.writes, vec![8]);
    }

    #[test]
    fn a_missing_or_foreign_header_is_named() {
        assert_eq!(torn(b"").reason, TornReason::UnreadableHeader);
        assert_eq!(torn(b"42").reason, TornReason::UnreadableHeader);
        assert_eq!(torn(&[0xff; 200]).reason, TornReason::UnreadableHeader);
        let t = torn(&body("obj/00002", 3, 100).unwrap());
        assert_eq!((t.reason, t.write), (TornReason::WrongKey, Some(3)));
    }

    #[test]
    fn the_recorded_form_names_every_field() {
        let b = body(KEY, 5, 10_000).unwrap();
        let v = torn(&b[..4096]).to_json();
        assert_eq!(
            v,
            json!({"torn": "truncated", "write": 5, "length": 4096,
                   "expected-length": 10_000, "writes": [5], "offset": 4096})
        );
    }
}

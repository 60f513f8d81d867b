//! Unit and property tests of the epoch fence.

use super::*;

fn whole(epoch: u64) -> Ownership {
    let catalog = Catalog::genesis(1, &[]).unwrap();
    let mut o = Ownership::from_catalog(&catalog, 1);
    if epoch != 1 {
        o.own(b"", b"", epoch);
    }
    o
}

#[test]
fn write_needs_exact_epoch_and_no_fence() {
    let mut o = whole(1);
    assert!(o.check_write(b"k", 1).is_ok());
    assert_eq!(o.check_write(b"k", 2).unwrap_err().current_epoch, 1);
    o.fence(b"m", b"", true);
    assert!(o.check_write(b"a", 1).is_ok());
    assert!(o.check_write(b"m", 1).is_err());
    assert!(
        o.check_read(b"m", 1).is_ok(),
        "a fenced range still serves reads"
    );
    o.fence(b"m", b"", false);
    assert!(o.check_write(b"z", 1).is_ok());
}

#[test]
fn disowned_range_refuses_with_new_epoch() {
    let mut o = whole(1);
    o.fence(b"m", b"t", true);
    o.disown(b"m", b"t", 7, 2);
    let refusal = o.check_write(b"p", 1).unwrap_err();
    assert_eq!(refusal.current_epoch, 7);
    assert!(refusal.reason.contains("group 2"));
    assert!(
        o.check_read(b"p", 7).is_err(),
        "even the new epoch is not served by the old owner"
    );
    assert!(o.check_write(b"a", 1).is_ok());
    assert!(o.check_write(b"t", 1).is_ok());
    // The range comes back later under a newer epoch.
    o.own(b"m", b"t", 9);
    assert!(o.check_write(b"p", 9).is_ok());
    assert!(o.check_write(b"p", 7).is_err());
}

#[test]
fn group_without_ranges_refuses_everything() {
    let catalog = Catalog::genesis(2, &[b"m".to_vec()]).unwrap();
    let g2 = Ownership::from_catalog(&catalog, 2);
    assert!(g2.check_write(b"a", 1).is_err());
    assert!(g2.check_write(b"x", 1).is_ok());
    let mut g3 = Ownership::from_catalog(&catalog, 3);
    assert_eq!(g3.check_write(b"a", 1).unwrap_err().current_epoch, 0);
    g3.own(b"c", b"f", 4);
    assert!(g3.check_write(b"d", 4).is_ok());
    assert!(g3.check_write(b"f", 4).is_err());
    assert!(g3.check_write(b"b", 4).is_err());
}

proptest::proptest! {
    /// After any sequence of range operations, the ranges never overlap and each key's
    /// answer equals a naive per-key model.
    #[test]
    fn range_ops_match_per_key_model(ops in proptest::collection::vec((0u8..4, 0u8..6, 0u8..6, 1u64..5), 1..25)) {
        let alphabet: Vec<Key> = (0u8..6).map(|b| vec![b'a' + b]).collect();
        let mut o = whole(1);
        // model: key -> (epoch, fenced, moved)
        let mut model: Vec<(u64, bool, bool)> = vec![(1, false, false); alphabet.len()];
        for (op, a, b, epoch) in ops {
            let (lo, hi) = (a.min(b) as usize, a.max(b) as usize);
            if lo == hi { continue; }
            let (start, end) = (&alphabet[lo], &alphabet[hi]);
            for m in &mut model[lo..hi] {
                match op {
                    0 => if !m.2 { m.1 = true },
                    1 => if !m.2 { m.1 = false },
                    2 => *m = (epoch, false, false),
                    _ => *m = (epoch, false, true),
                }
            }
            match op {
                0 => o.fence(start, end, true),
                1 => o.fence(start, end, false),
                2 => o.own(start, end, epoch),
                _ => o.disown(start, end, epoch, 2),
            }
        }
        let entries: Vec<(Key, Owned)> = o.entries().map(|(s, e)| (s.clone(), e.clone())).collect();
        for w in entries.windows(2) {
            proptest::prop_assert!(!w[0].1.end.is_empty() && w[0].1.end <= w[1].0, "overlap {:?}", entries);
        }
        for (i, key) in alphabet.iter().enumerate() {
            let (epoch, fenced, moved) = model[i];
            let write_ok = o.check_write(key, epoch).is_ok();
            proptest::prop_assert_eq!(write_ok, !fenced && !moved, "key {:?}", key);
        }
    }
}

//! The zone test over the chains of one key (Gibbons & Korach's clusters, in the zone
//! form of Golab, Li & Shah, extended from single versions to cas chains).
//!
//! Every chain occupies one contiguous stretch of any linearization, and chains never
//! interleave. A chain's stretch starts no later than its first return and ends no
//! earlier than its last call, so it covers its forward zone `[min_ret, max_call]` whole,
//! or meets its backward zone `[max_call, min_ret]`. Hence two forward zones that overlap,
//! or a backward zone inside a forward one, admit no linearization. Conversely, without
//! either, forward zones are disjoint and every backward zone has a point outside all of
//! them; placing each forward chain inside its zone (its greedy placement clamped to the
//! zone) and each backward chain whole at such a point gives a linearization. So
//! [`find_conflict`] decides the key exactly, given chains that place on their own.

use super::chains::Zone;

/// Two zones no linearization can honour together: `outer` is forward and `inner`
/// overlaps it (forward) or lies inside it (backward).
#[derive(Debug, Clone, Copy)]
pub struct Conflict {
    pub outer: Zone,
    pub inner: Zone,
}

/// The first conflict among `zones`, if any. O(n log n).
pub fn find_conflict(zones: &[Zone]) -> Option<Conflict> {
    let mut forward: Vec<Zone> = zones.iter().filter(|z| z.is_forward()).copied().collect();
    forward.sort_unstable_by_key(|z| z.min_ret);
    for pair in forward.windows(2) {
        if pair[1].min_ret <= pair[0].max_call {
            return Some(Conflict {
                outer: pair[0],
                inner: pair[1],
            });
        }
    }
    // Forward zones are now disjoint, so only the last one starting at or before a
    // backward zone's start can contain it.
    zones.iter().filter(|z| !z.is_forward()).find_map(|inner| {
        let before = forward.partition_point(|f| f.min_ret <= inner.max_call);
        let outer = *forward.get(before.checked_sub(1)?)?;
        (outer.max_call >= inner.min_ret).then_some(Conflict {
            outer,
            inner: *inner,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::super::versions::NONE;
    use super::*;

    fn zone(min_ret: i64, max_call: i64) -> Zone {
        Zone {
            min_ret,
            min_ret_op: NONE,
            max_call,
            max_call_op: NONE,
            root: 0,
        }
    }

    #[test]
    fn overlapping_forward_zones_conflict_and_disjoint_ones_do_not() {
        assert!(find_conflict(&[zone(0, 10), zone(11, 20)]).is_none());
        let c = find_conflict(&[zone(5, 20), zone(0, 10)]).unwrap();
        assert_eq!((c.outer.min_ret, c.inner.min_ret), (0, 5));
    }

    #[test]
    fn a_backward_zone_conflicts_only_inside_a_forward_one() {
        // Backward zones are written (min_ret, max_call) with max_call <= min_ret.
        assert!(
            find_conflict(&[zone(0, 10), zone(12, 3)]).is_none(),
            "[3,12] sticks out of [0,10]"
        );
        assert!(find_conflict(&[zone(0, 10), zone(20, 15)]).is_none());
        assert!(
            find_conflict(&[zone(0, 10), zone(8, 2)]).is_some(),
            "[2,8] inside [0,10]"
        );
        assert!(
            find_conflict(&[zone(0, 10), zone(20, 30), zone(25, 22)]).is_some(),
            "[22,25] inside [20,30]"
        );
        assert!(
            find_conflict(&[zone(9, 4), zone(6, 5)]).is_none(),
            "backward zones never conflict"
        );
    }
}

//! Choosing where to split a hot route, from the observed distribution only:
//! 1. a single key carrying at least `hot_key_share` of the route's load is isolated
//!    (split at the key, or at its successor when the key already starts the route);
//! 2. otherwise the weighted median (p50) of the route's load: the sampled request key that
//!    best halves it (enough samples), else interpolated from the sub-range bucket segments;
//! 3. otherwise decline with a reason. Never a blind midpoint — except under the seeded
//!    `split-midpoint` bug, which ignores the evidence on purpose.

use serde::Serialize;

use super::config::AutoSplitConfig;
use super::keys::{
    byte_midpoint, fraction_of, in_route, interpolate, span_fraction, strictly_inside, successor,
};
use super::stats::{KeySegment, RouteLoad};
use super::view::RouteInfo;

/// Why a split key was chosen.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SplitReason {
    /// Isolating a dominant key. When `completes_isolation` is false this is the first of two
    /// splits: the right child starts at `key`, and the detector follows up (cooldown-exempt)
    /// with a split at `key ++ [0]` so that `[key, key ++ [0])` holds the key alone.
    IsolateHotKey {
        key: Vec<u8>,
        share: f64,
        completes_isolation: bool,
    },
    /// The weighted median of the route's sub-range load: a sampled request key when
    /// `sampled`, else interpolated from the bucket segments.
    SubRangeMedian { left_share: f64, sampled: bool },
    /// Seeded bug `split-midpoint`: the byte midpoint, whatever the load.
    ByteMidpointBug,
}

/// Why a hot route was not split (this window).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DeclineReason {
    /// The route is fenced or migrating.
    NotActive,
    /// The route is a recent split child.
    Cooldown { remaining_ms: u64 },
    /// No node reported requests with keys for the route.
    NoEvidence,
    /// The route holds a single key (`[k, k ++ [0])`); nothing can be split off.
    SingleKeyRoute,
    /// The evidence points at no key strictly inside the route.
    NoInteriorKey,
    /// The load sits on one key that is not isolatable here (p50 would leave a side empty).
    LoadOnOneKey,
    /// A child would be narrower than `min_child_span` (fractions of the key space).
    SpanTooSmall { left: f64, right: f64 },
    /// The runtime kill switch is off.
    Disabled,
    /// A split of this route was issued and its outcome is not known yet.
    InFlight,
    /// `splits_per_cycle` calls were already planned this cycle.
    CycleBudget,
    /// The catalog already has `max_routes` routes (counting splits planned this cycle).
    MaxRoutes { routes: usize },
    /// The route is not in the catalog the scheduler was given.
    UnknownRoute,
}

impl std::fmt::Display for DeclineReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeclineReason::NotActive => write!(f, "route is not active (fenced or migrating)"),
            DeclineReason::Cooldown { remaining_ms } => {
                write!(f, "in cooldown for another {remaining_ms} ms")
            }
            DeclineReason::NoEvidence => write!(f, "no key distribution observed"),
            DeclineReason::SingleKeyRoute => write!(f, "route holds a single key"),
            DeclineReason::NoInteriorKey => write!(
                f,
                "observed load points at no key strictly inside the route"
            ),
            DeclineReason::LoadOnOneKey => {
                write!(f, "load sits on one key that cannot be isolated")
            }
            DeclineReason::SpanTooSmall { left, right } => {
                write!(f, "child span too small (left {left:e}, right {right:e})")
            }
            DeclineReason::Disabled => write!(f, "auto-split is disabled"),
            DeclineReason::InFlight => write!(f, "a split of this route is in flight"),
            DeclineReason::CycleBudget => write!(f, "splits-per-cycle budget used up"),
            DeclineReason::MaxRoutes { routes } => {
                write!(f, "catalog has {routes} routes, the maximum")
            }
            DeclineReason::UnknownRoute => write!(f, "route not in the catalog"),
        }
    }
}

/// A chosen split key and the share of the route's load expected in the right child (the
/// child a cross-group split moves).
#[derive(Debug, Clone, PartialEq)]
pub struct KeyChoice {
    pub split_key: Vec<u8>,
    pub reason: SplitReason,
    pub right_share: f64,
}

/// Picks the split key for a hot `route` from its merged window `load`.
pub fn choose_split_key(
    route: &RouteInfo,
    load: Option<&RouteLoad>,
    cfg: &AutoSplitConfig,
) -> Result<KeyChoice, DeclineReason> {
    if cfg.split_midpoint_bug {
        return midpoint_bug(route, load, cfg);
    }
    let load = load
        .filter(|l| l.load > 0)
        .ok_or(DeclineReason::NoEvidence)?;
    if let Some(choice) = isolate_hot_key(route, load, cfg)? {
        return Ok(choice);
    }
    sub_range_median(route, load, cfg)
}

fn midpoint_bug(
    route: &RouteInfo,
    load: Option<&RouteLoad>,
    cfg: &AutoSplitConfig,
) -> Result<KeyChoice, DeclineReason> {
    let split_key = byte_midpoint(&route.start, &route.end).ok_or(DeclineReason::SingleKeyRoute)?;
    check_span(route, &split_key, cfg)?;
    let right_share = load.filter(|l| l.load > 0).map_or(0.5, |l| {
        1.0 - share_below(&in_route_segments(route, l), &split_key)
    });
    Ok(KeyChoice {
        split_key,
        reason: SplitReason::ByteMidpointBug,
        right_share,
    })
}

fn isolate_hot_key(
    route: &RouteInfo,
    load: &RouteLoad,
    cfg: &AutoSplitConfig,
) -> Result<Option<KeyChoice>, DeclineReason> {
    let Some(top) = load
        .hot_keys
        .iter()
        .find(|h| in_route(&h.key, &route.start, &route.end))
    else {
        return Ok(None);
    };
    let share = (top.lower_bound() as f64 / load.load as f64).min(1.0);
    if share < cfg.hot_key_share {
        return Ok(None);
    }
    let key = top.key.clone();
    let after = successor(&key);
    let (split_key, completes_isolation, right_share) = if key > route.start {
        let completes = !strictly_inside(&after, &route.start, &route.end);
        let right = (1.0 - share_below(&in_route_segments(route, load), &key)).max(share);
        (key.clone(), completes, right)
    } else if strictly_inside(&after, &route.start, &route.end) {
        (after, true, 1.0 - share)
    } else {
        return Err(DeclineReason::SingleKeyRoute);
    };
    Ok(Some(KeyChoice {
        split_key,
        reason: SplitReason::IsolateHotKey {
            key,
            share,
            completes_isolation,
        },
        right_share,
    }))
}

/// At least this many sampled keys inside the route are needed to take the median from the
/// samples; with fewer, it is interpolated from the bucket segments.
pub const MIN_SAMPLES: usize = 8;

fn sub_range_median(
    route: &RouteInfo,
    load: &RouteLoad,
    cfg: &AutoSplitConfig,
) -> Result<KeyChoice, DeclineReason> {
    let segments = in_route_segments(route, load);
    let (split_key, left_share, sampled) = match sampled_median(route, load) {
        Some(found) => {
            let (key, left) = found?;
            (key, left, true)
        }
        None => {
            let key = segment_median(&segments)?;
            let left = share_below(&segments, &key);
            (key, left, false)
        }
    };
    if !strictly_inside(&split_key, &route.start, &route.end) {
        return Err(DeclineReason::NoInteriorKey);
    }
    if left_share <= 0.0 || left_share >= 1.0 {
        return Err(DeclineReason::LoadOnOneKey);
    }
    check_span(route, &split_key, cfg)?;
    Ok(KeyChoice {
        split_key,
        reason: SplitReason::SubRangeMedian {
            left_share,
            sampled,
        },
        right_share: 1.0 - left_share,
    })
}

/// The weighted median of the sampled request keys: the sampled key that best halves the
/// sampled load when it starts the right child. `None` when there are too few samples.
fn sampled_median(
    route: &RouteInfo,
    load: &RouteLoad,
) -> Option<Result<(Vec<u8>, f64), DeclineReason>> {
    let mut samples: Vec<(&[u8], f64)> = load
        .samples
        .iter()
        .filter(|s| {
            s.weight > 0.0 && s.weight.is_finite() && in_route(&s.key, &route.start, &route.end)
        })
        .map(|s| (s.key.as_slice(), s.weight))
        .collect();
    if samples.len() < MIN_SAMPLES {
        return None;
    }
    samples.sort_by(|a, b| a.0.cmp(b.0));
    let total: f64 = samples.iter().map(|s| s.1).sum();
    let half = total / 2.0;
    let mut below = 0.0;
    let mut best: Option<(f64, &[u8], f64)> = None;
    for (i, (key, weight)) in samples.iter().enumerate() {
        let starts_new_key = i > 0 && samples[i - 1].0 != *key;
        if starts_new_key {
            let imbalance = (below - half).abs();
            if best.is_none_or(|(b, _, _)| imbalance < b) {
                best = Some((imbalance, key, below));
            }
        }
        below += weight;
    }
    Some(
        best.map(|(_, key, below)| (key.to_vec(), below / total))
            .ok_or(DeclineReason::LoadOnOneKey),
    )
}

/// The key at half the segments' load, interpolated inside the segment that crosses it.
fn segment_median(segments: &[KeySegment]) -> Result<Vec<u8>, DeclineReason> {
    let total: u64 = segments.iter().map(|s| s.count).sum();
    if total == 0 {
        return Err(DeclineReason::NoEvidence);
    }
    let half = total as f64 / 2.0;
    let mut before = 0.0;
    for segment in segments {
        let count = segment.count as f64;
        if count > 0.0 && before + count >= half {
            return Ok(interpolate(
                &segment.lo,
                &segment.hi,
                (half - before) / count,
            ));
        }
        before += count;
    }
    Err(DeclineReason::NoEvidence)
}

/// The segments that overlap the route (a node may have sampled under a stale route map).
fn in_route_segments(route: &RouteInfo, load: &RouteLoad) -> Vec<KeySegment> {
    load.segments
        .iter()
        .filter(|s| s.hi >= route.start && (route.end.is_empty() || s.lo < route.end))
        .cloned()
        .collect()
}

/// Estimated share of the segments' load on keys strictly below `key`.
fn share_below(segments: &[KeySegment], key: &[u8]) -> f64 {
    let total: u64 = segments.iter().map(|s| s.count).sum();
    if total == 0 {
        return 0.0;
    }
    let below: f64 = segments
        .iter()
        .map(|s| {
            if s.hi.as_slice() < key {
                s.count as f64
            } else if s.lo.as_slice() >= key {
                0.0
            } else {
                s.count as f64 * fraction_of(&s.lo, &s.hi, key)
            }
        })
        .sum();
    below / total as f64
}

fn check_span(
    route: &RouteInfo,
    split_key: &[u8],
    cfg: &AutoSplitConfig,
) -> Result<(), DeclineReason> {
    let left = span_fraction(&route.start, split_key);
    let right = span_fraction(split_key, &route.end);
    if cfg.min_child_span > 0.0 && (left < cfg.min_child_span || right < cfg.min_child_span) {
        return Err(DeclineReason::SpanTooSmall { left, right });
    }
    Ok(())
}

#[cfg(test)]
#[path = "split_key_tests.rs"]
mod tests;

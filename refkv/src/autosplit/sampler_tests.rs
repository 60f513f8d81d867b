//! Sampler tests, including the allocation count of the request path (a counting global
//! allocator that counts per thread, so tests running in parallel do not disturb it).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;
use std::time::Duration;

use super::*;

struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count_one() {
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

// SAFETY: every call is forwarded unchanged to the system allocator; counting touches only a
// const-initialised thread-local `Cell`, which never allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn allocations_during(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

fn sampler(cfg: &AutoSplitConfig) -> (Sampler, Instant) {
    let t0 = Instant::now();
    (Sampler::new(1, cfg, t0), t0)
}

fn key(i: u32) -> Vec<u8> {
    format!("hot/{i:06}").into_bytes()
}

fn share_below(route: &RouteWindow, bound: &[u8]) -> f64 {
    let below: u64 = route
        .segments
        .iter()
        .filter(|s| s.hi.as_slice() <= bound)
        .map(|s| s.count)
        .sum();
    below as f64 / route.load as f64
}

#[test]
fn counts_reads_and_writes_per_route_and_resets() {
    let cfg = AutoSplitConfig::default();
    let (s, t0) = sampler(&cfg);
    for i in 0..10 {
        s.record(1, &key(i), AccessKind::Write);
    }
    for i in 0..5 {
        s.record(1, &key(i), AccessKind::Read);
        s.record(2, b"cold", AccessKind::Read);
    }
    let w = s.snapshot_and_reset(t0 + Duration::from_secs(2));
    assert_eq!((w.node_id, w.window_seq, w.duration_ms), (1, 1, 2_000));
    assert_eq!(w.routes.len(), 2);
    let r1 = &w.routes[0];
    assert_eq!((r1.route_id, r1.reads, r1.writes, r1.load), (1, 5, 10, 45));
    assert_eq!(r1.segments.iter().map(|s| s.count).sum::<u64>(), 45);
    assert_eq!(r1.segments[0].lo, key(0));
    assert_eq!(r1.segments[0].hi, key(9));
    assert_eq!(
        (w.routes[1].route_id, w.routes[1].reads, w.routes[1].load),
        (2, 5, 5)
    );
    let next = s.snapshot_and_reset(t0 + Duration::from_secs(4));
    assert_eq!((next.window_seq, next.duration_ms), (2, 2_000));
    assert!(next.routes.is_empty());
}

#[test]
fn buckets_locate_the_load_inside_the_previous_key_range() {
    let cfg = AutoSplitConfig::default();
    let (s, t0) = sampler(&cfg);
    for i in 0..1_000 {
        s.record(1, &key(i), AccessKind::Write);
    }
    s.snapshot_and_reset(t0 + Duration::from_secs(2));
    // 90% of the next window's requests hit the first tenth of the range.
    for i in 0..1_000 {
        let k = if i % 10 == 0 {
            key(100 + (i % 900))
        } else {
            key(i % 100)
        };
        s.record(1, &k, AccessKind::Write);
    }
    let w = s.snapshot_and_reset(t0 + Duration::from_secs(4));
    let r = &w.routes[0];
    assert!(r.segments.len() > 2, "{:?}", r.segments);
    assert_eq!(r.segments.iter().map(|s| s.count).sum::<u64>(), r.load);
    let share = share_below(r, &key(170));
    assert!(
        share >= 0.85,
        "share below hot/000170 = {share}: {:?}",
        r.segments
    );
}

#[test]
fn a_load_that_moves_right_shows_up_above_the_previous_range() {
    let cfg = AutoSplitConfig::default();
    let (s, t0) = sampler(&cfg);
    for i in 0..500 {
        s.record(1, &key(i), AccessKind::Write);
    }
    s.snapshot_and_reset(t0 + Duration::from_secs(2));
    for i in 500..1_000 {
        s.record(1, &key(i), AccessKind::Write);
    }
    let r = s
        .snapshot_and_reset(t0 + Duration::from_secs(4))
        .routes
        .remove(0);
    assert_eq!(r.segments.len(), 1, "{:?}", r.segments);
    assert_eq!(r.segments[0].lo, key(500));
    assert_eq!(r.segments[0].hi, key(999));
    assert_eq!(r.segments[0].count, r.load);
}

#[test]
fn the_sketch_names_a_celebrity_key() {
    let cfg = AutoSplitConfig::default();
    let (s, t0) = sampler(&cfg);
    for i in 0..2_000 {
        s.record(1, &key(i), AccessKind::Read);
        s.record(1, b"hot/celebrity", AccessKind::Write);
    }
    let r = s
        .snapshot_and_reset(t0 + Duration::from_secs(2))
        .routes
        .remove(0);
    assert_eq!(r.hot_keys[0].key, b"hot/celebrity");
    let share = r.hot_keys[0].lower_bound() as f64 / r.load as f64;
    assert!(share >= 0.75, "{share}");
}

#[test]
fn steady_state_records_do_not_allocate() {
    let cfg = AutoSplitConfig::default();
    let (s, t0) = sampler(&cfg);
    let keys: Vec<Vec<u8>> = (0..5_000).map(key).collect();
    let long_key = vec![b'x'; 200];
    // Warm-up: the first request to each route creates its slot; one window builds the grid.
    for route in 0..4 {
        s.record(route, &keys[0], AccessKind::Write);
    }
    for k in &keys[..1_000] {
        s.record(0, k, AccessKind::Write);
    }
    s.snapshot_and_reset(t0 + Duration::from_secs(2));
    let allocations = allocations_during(|| {
        for (i, k) in keys.iter().enumerate() {
            let kind = if i % 3 == 0 {
                AccessKind::Read
            } else {
                AccessKind::Write
            };
            s.record(i as u64 % 4, k, kind);
        }
        s.record(0, &long_key, AccessKind::Write);
        s.record(1, b"", AccessKind::Read);
    });
    assert_eq!(allocations, 0, "the request path allocated");
    // The counter really counts: a first request to a new route allocates its slot.
    assert!(allocations_during(|| s.record(99, b"k", AccessKind::Read)) > 0);
}

#[test]
fn the_route_table_never_grows_past_its_reserved_capacity() {
    let cfg = AutoSplitConfig {
        max_tracked_routes: 16,
        ..Default::default()
    };
    let (s, t0) = sampler(&cfg);
    let capacity = s.route_table_capacity();
    assert!(capacity >= 16);
    for route in 0..100u64 {
        s.record(route, b"k", AccessKind::Write);
    }
    assert_eq!(s.tracked_routes(), 16);
    assert_eq!(s.route_table_capacity(), capacity);
    let w = s.snapshot_and_reset(t0 + Duration::from_secs(1));
    assert_eq!(w.dropped_records, 84);
    assert_eq!(w.routes.len(), 16);
}

#[test]
fn idle_routes_are_evicted_after_three_empty_windows() {
    let cfg = AutoSplitConfig::default();
    let (s, t0) = sampler(&cfg);
    s.record(5, b"k", AccessKind::Write);
    for i in 1..=IDLE_WINDOWS_BEFORE_EVICT {
        assert_eq!(s.tracked_routes(), 1);
        s.snapshot_and_reset(t0 + Duration::from_secs(u64::from(i)));
    }
    assert_eq!(
        s.tracked_routes(),
        1,
        "one window of traffic plus idle windows"
    );
    s.snapshot_and_reset(t0 + Duration::from_secs(10));
    assert_eq!(s.tracked_routes(), 0);
}

#[test]
fn concurrent_records_are_all_counted() {
    let cfg = AutoSplitConfig::default();
    let (s, t0) = sampler(&cfg);
    let s = Arc::new(s);
    let threads: Vec<_> = (0..4u32)
        .map(|t| {
            let s = Arc::clone(&s);
            std::thread::spawn(move || {
                for i in 0..10_000u32 {
                    s.record(u64::from(i % 3), &key(t * 10_000 + i), AccessKind::Write);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let w = s.snapshot_and_reset(t0 + Duration::from_secs(2));
    assert_eq!(w.routes.iter().map(|r| r.writes).sum::<u64>(), 40_000);
    assert_eq!(w.routes.iter().map(|r| r.load).sum::<u64>(), 160_000);
}

#[test]
fn zero_read_weight_still_counts_reads() {
    let cfg = AutoSplitConfig {
        read_weight: 0,
        ..Default::default()
    };
    let (s, t0) = sampler(&cfg);
    s.record(1, b"k", AccessKind::Read);
    let w = s.snapshot_and_reset(t0 + Duration::from_secs(1));
    assert_eq!((w.routes[0].reads, w.routes[0].load), (1, 0));
}

#[test]
fn the_reservoir_keeps_real_keys_weighted_to_the_load() {
    let cfg = AutoSplitConfig {
        key_samples: 16,
        ..Default::default()
    };
    let (s, t0) = sampler(&cfg);
    for i in 0..10 {
        s.record(1, &key(i), AccessKind::Write);
    }
    let r = s
        .snapshot_and_reset(t0 + Duration::from_secs(1))
        .routes
        .remove(0);
    assert_eq!(
        r.samples.len(),
        10,
        "fewer requests than slots: every key is kept"
    );
    assert!(r.samples.iter().all(|x| x.weight == 4.0));
    for i in 0..1_000 {
        s.record(
            1,
            &key(i),
            if i % 2 == 0 {
                AccessKind::Write
            } else {
                AccessKind::Read
            },
        );
    }
    let r = s
        .snapshot_and_reset(t0 + Duration::from_secs(2))
        .routes
        .remove(0);
    assert_eq!(r.samples.len(), 16);
    assert!(r.samples.iter().all(|x| x.key.starts_with(b"hot/000")));
    let total: f64 = r.samples.iter().map(|x| x.weight).sum();
    // Each sample stands for 1000/16 requests of its own kind (weight 4 or 1).
    assert!((16.0 * 62.5..=16.0 * 250.0).contains(&total), "{total}");
    let distinct: std::collections::BTreeSet<_> = r.samples.iter().map(|x| x.key.clone()).collect();
    assert!(
        distinct.len() >= 12,
        "the sample spreads over the window: {distinct:?}"
    );
    let mean_key = r
        .samples
        .iter()
        .map(|x| String::from_utf8_lossy(&x.key)[4..].parse::<f64>().unwrap())
        .sum::<f64>()
        / 16.0;
    assert!(
        mean_key > 200.0 && mean_key < 800.0,
        "not biased to one end: {mean_key}"
    );
}

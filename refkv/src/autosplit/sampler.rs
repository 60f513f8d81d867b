//! Per-node load sampler: counts reads and writes per route per window, where in the route's
//! key space they fell (sub-range buckets) and which single keys were heaviest (top-K).
//!
//! # Sub-range buckets
//! A route's bucket grid for window *n* spans the keys observed in window *n − 1* (`lo` = the
//! smallest, `hi` = the largest key seen), divided into `buckets` equal parts of the 8 bytes
//! after `lo`/`hi`'s common prefix. Keys below `lo` or above `hi` are counted separately, and
//! the window's own smallest and largest keys are tracked, so a load that moves (sequential
//! inserts, the classic hot range) is still located: it shows up as the segment
//! `(hi, window max]`. A route's first window has no grid and reports one segment
//! `[window min, window max]`. The grid adapts to the load, not to the route's bounds, so it
//! keeps full resolution in unbounded routes and under long common prefixes.
//!
//! # Sampled keys
//! Each slot also keeps a reservoir of `key_samples` request keys (algorithm R, a per-route
//! xorshift generator), exported with weights that add up to the window's load. They are the
//! key quantiles the detector takes its sub-range p50 from, so a split key is a key that was
//! really requested rather than an interpolation between bucket edges.
//!
//! # Allocation-free request path
//! [`Sampler::record`] takes a read lock on the route table, finds the route's slot and locks
//! that slot's mutex; buckets, the sketch, the reservoir and min/max keys live in storage allocated when the
//! slot was created (the first request to a route), and keys are copied into fixed 64-byte
//! inline buffers. Steady-state records therefore never allocate; the tests check it with a
//! counting global allocator. Slots of routes idle for [`IDLE_WINDOWS_BEFORE_EVICT`] windows
//! are freed at snapshot time.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, RwLock};
use std::time::Instant;

use super::config::AutoSplitConfig;
use super::keys::{be_u64_at, common_prefix_len, key_from_position, KeyBuf};
use super::sketch::TopK;
use super::stats::{KeySegment, RouteWindow, SampledKey, WindowStats};

/// Whether a request read or wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessKind {
    Read,
    Write,
}

/// A route slot is freed after this many consecutive windows without a request.
pub const IDLE_WINDOWS_BEFORE_EVICT: u32 = 3;

/// The bucket grid of one window, derived from the previous window's key range.
#[derive(Debug, Clone, Copy)]
struct Grid {
    lo: KeyBuf,
    hi: KeyBuf,
    prefix_len: usize,
    a: u64,
    b: u64,
}

enum Place {
    Below,
    Bucket(usize),
    Above,
}

impl Grid {
    fn new(lo: KeyBuf, hi: KeyBuf) -> Grid {
        let prefix_len = common_prefix_len(lo.as_slice(), hi.as_slice());
        let a = be_u64_at(lo.as_slice(), prefix_len);
        let b = be_u64_at(hi.as_slice(), prefix_len).max(a);
        Grid {
            lo,
            hi,
            prefix_len,
            a,
            b,
        }
    }

    fn place(&self, key: &[u8], buckets: usize) -> Place {
        let prefix = &self.lo.as_slice()[..self.prefix_len];
        let head = &key[..self.prefix_len.min(key.len())];
        match head.cmp(&prefix[..head.len()]) {
            std::cmp::Ordering::Less => return Place::Below,
            std::cmp::Ordering::Greater => return Place::Above,
            std::cmp::Ordering::Equal if key.len() < self.prefix_len => return Place::Below,
            std::cmp::Ordering::Equal => {}
        }
        let x = be_u64_at(key, self.prefix_len);
        if x < self.a {
            Place::Below
        } else if x > self.b {
            Place::Above
        } else {
            let width = u128::from(self.b - self.a) + 1;
            let index = (u128::from(x - self.a) * buckets as u128 / width) as usize;
            Place::Bucket(index.min(buckets - 1))
        }
    }

    /// Lower edge of bucket `i` as a key.
    fn edge(&self, i: usize, buckets: usize) -> Vec<u8> {
        let width = u128::from(self.b - self.a) + 1;
        let offset = (width * i as u128 / buckets as u128) as u64;
        key_from_position(&self.lo.as_slice()[..self.prefix_len], self.a + offset)
    }
}

/// One route's counters for the current window.
struct RouteSlot {
    reads: u64,
    writes: u64,
    load: u64,
    min: KeyBuf,
    max: KeyBuf,
    grid: Option<Grid>,
    buckets: Vec<u64>,
    below: u64,
    above: u64,
    sketch: TopK,
    /// Reservoir of request keys (algorithm R) with each request's weight.
    samples: Vec<(KeyBuf, u64)>,
    sample_len: usize,
    rng: u64,
    idle_windows: u32,
}

impl RouteSlot {
    fn new(route_id: u64, buckets: usize, top_k: usize, key_samples: usize) -> RouteSlot {
        RouteSlot {
            reads: 0,
            writes: 0,
            load: 0,
            min: KeyBuf::EMPTY,
            max: KeyBuf::EMPTY,
            grid: None,
            buckets: vec![0; buckets],
            below: 0,
            above: 0,
            sketch: TopK::new(top_k),
            samples: vec![(KeyBuf::EMPTY, 0); key_samples.max(1)],
            sample_len: 0,
            rng: (route_id ^ 0x9E37_79B9_7F4A_7C15) | 1,
            idle_windows: 0,
        }
    }

    fn requests(&self) -> u64 {
        self.reads + self.writes
    }

    fn record(&mut self, key: &[u8], kind: AccessKind, weight: u64) {
        let first = self.requests() == 0;
        match kind {
            AccessKind::Read => self.reads += 1,
            AccessKind::Write => self.writes += 1,
        }
        if first {
            self.min.set(key);
            self.max.set(key);
        } else {
            if self.min.cmp_key(key).is_gt() {
                self.min.set(key);
            }
            if self.max.cmp_key(key).is_lt() {
                self.max.set(key);
            }
        }
        self.load += weight;
        if let Some(grid) = &self.grid {
            match grid.place(key, self.buckets.len()) {
                Place::Below => self.below += weight,
                Place::Above => self.above += weight,
                Place::Bucket(i) => self.buckets[i] += weight,
            }
        }
        self.sketch.record(key, weight);
        self.sample(key, weight);
    }

    /// Keeps a uniform sample of the window's requests (reservoir sampling, algorithm R).
    fn sample(&mut self, key: &[u8], weight: u64) {
        if self.sample_len < self.samples.len() {
            self.samples[self.sample_len] = (KeyBuf::from_key(key), weight);
            self.sample_len += 1;
            return;
        }
        let slot = (self.next_random() % self.requests()) as usize;
        if let Some(sample) = self.samples.get_mut(slot) {
            sample.0.set(key);
            sample.1 = weight;
        }
    }

    /// xorshift64*: cheap, allocation-free and deterministic per route.
    fn next_random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn export_samples(&self) -> Vec<SampledKey> {
        let scale = self.requests() as f64 / self.sample_len.max(1) as f64;
        self.samples[..self.sample_len]
            .iter()
            .map(|(key, weight)| SampledKey {
                key: key.as_slice().to_vec(),
                weight: *weight as f64 * scale,
            })
            .collect()
    }

    fn export(&self, route_id: u64) -> RouteWindow {
        RouteWindow {
            route_id,
            reads: self.reads,
            writes: self.writes,
            load: self.load,
            segments: self.segments(),
            hot_keys: self.sketch.export(),
            hot_floor: self.sketch.floor(),
            samples: self.export_samples(),
        }
    }

    /// Where the load fell, clamped to the keys actually seen this window.
    fn segments(&self) -> Vec<KeySegment> {
        let (min, max) = (self.min.as_slice(), self.max.as_slice());
        let clamp = |lo: &[u8], hi: &[u8], count: u64| KeySegment {
            lo: lo.max(min).min(max).to_vec(),
            hi: hi.min(max).max(min).to_vec(),
            count,
        };
        let Some(grid) = &self.grid else {
            return vec![clamp(min, max, self.load)];
        };
        let n = self.buckets.len();
        let mut out = Vec::new();
        if self.below > 0 {
            out.push(clamp(min, grid.lo.as_slice(), self.below));
        }
        for (i, count) in self.buckets.iter().enumerate().filter(|(_, c)| **c > 0) {
            let lo = grid.edge(i, n);
            let hi = if i + 1 == n {
                grid.hi.as_slice().to_vec()
            } else {
                grid.edge(i + 1, n)
            };
            out.push(clamp(&lo, &hi, *count));
        }
        if self.above > 0 {
            out.push(clamp(grid.hi.as_slice(), max, self.above));
        }
        out
    }

    /// Starts the next window, gridded over this window's key range.
    fn reset(&mut self) {
        if self.requests() == 0 {
            self.idle_windows += 1;
        } else {
            self.idle_windows = 0;
            let spread = self.min != self.max;
            self.grid = spread.then(|| Grid::new(self.min, self.max));
        }
        self.reads = 0;
        self.writes = 0;
        self.load = 0;
        self.buckets.fill(0);
        self.below = 0;
        self.above = 0;
        self.sketch.clear();
        self.sample_len = 0;
    }
}

/// The per-node sampler. Share it (`Arc<Sampler>`) between every request task; call
/// [`Sampler::snapshot_and_reset`] once per window from one task.
pub struct Sampler {
    node_id: u64,
    write_weight: u64,
    read_weight: u64,
    buckets: usize,
    top_k: usize,
    key_samples: usize,
    max_routes: usize,
    routes: RwLock<HashMap<u64, Mutex<RouteSlot>>>,
    window: Mutex<(Instant, u64)>,
    dropped: AtomicU64,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a slot lock leaves plain counters behind; keep sampling.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Sampler {
    /// A sampler whose first window starts at `now`. `cfg` should be validated.
    pub fn new(node_id: u64, cfg: &AutoSplitConfig, now: Instant) -> Sampler {
        let max_routes = cfg.max_tracked_routes.max(1);
        Sampler {
            node_id,
            write_weight: u64::from(cfg.write_weight),
            read_weight: u64::from(cfg.read_weight),
            buckets: cfg.buckets.max(2),
            top_k: cfg.top_k.max(1),
            key_samples: cfg.key_samples.max(1),
            max_routes,
            routes: RwLock::new(HashMap::with_capacity(max_routes)),
            window: Mutex::new((now, 0)),
            dropped: AtomicU64::new(0),
        }
    }

    /// Counts one request to `key` in route `route_id`. Call it once per request, on the node
    /// that received it from the client (not again where it is forwarded to).
    pub fn record(&self, route_id: u64, key: &[u8], kind: AccessKind) {
        let weight = match kind {
            AccessKind::Read => self.read_weight,
            AccessKind::Write => self.write_weight,
        };
        {
            let routes = self.routes.read().unwrap_or_else(|p| p.into_inner());
            if let Some(slot) = routes.get(&route_id) {
                lock(slot).record(key, kind, weight);
                return;
            }
        }
        self.record_new_route(route_id, key, kind, weight);
    }

    #[cold]
    fn record_new_route(&self, route_id: u64, key: &[u8], kind: AccessKind, weight: u64) {
        let mut routes = self.routes.write().unwrap_or_else(|p| p.into_inner());
        if !routes.contains_key(&route_id) && routes.len() >= self.max_routes {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let slot = routes.entry(route_id).or_insert_with(|| {
            Mutex::new(RouteSlot::new(
                route_id,
                self.buckets,
                self.top_k,
                self.key_samples,
            ))
        });
        lock(slot).record(key, kind, weight);
    }

    /// Ends the current window at `now`: returns its counts and starts the next window.
    pub fn snapshot_and_reset(&self, now: Instant) -> WindowStats {
        let mut routes = self.routes.write().unwrap_or_else(|p| p.into_inner());
        let (duration_ms, window_seq) = {
            let mut window = lock(&self.window);
            let elapsed = now.saturating_duration_since(window.0);
            window.0 = now;
            window.1 += 1;
            (
                elapsed.as_millis().min(u128::from(u64::MAX)) as u64,
                window.1,
            )
        };
        let mut stats = WindowStats {
            node_id: self.node_id,
            window_seq,
            duration_ms,
            routes: Vec::new(),
            dropped_records: self.dropped.swap(0, Ordering::Relaxed),
        };
        for (route_id, slot) in routes.iter_mut() {
            let slot = slot.get_mut().unwrap_or_else(|p| p.into_inner());
            if slot.requests() > 0 {
                stats.routes.push(slot.export(*route_id));
            }
            slot.reset();
        }
        routes.retain(|_, slot| lock(slot).idle_windows < IDLE_WINDOWS_BEFORE_EVICT);
        stats.routes.sort_by_key(|r| r.route_id);
        stats
    }

    /// Routes currently holding a slot.
    pub fn tracked_routes(&self) -> usize {
        self.routes.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Capacity of the route table (it is reserved up front and must not grow).
    pub fn route_table_capacity(&self) -> usize {
        self.routes
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .capacity()
    }
}

#[cfg(test)]
#[path = "sampler_tests.rs"]
mod tests;

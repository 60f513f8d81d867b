//! # Auto-split (elastickv's M3): sampler → detector → scheduler
//!
//! A pure, synchronous library (no tokio, no I/O; time is passed in as [`std::time::Instant`])
//! that finds hot routes and says where to split them. The server owns the timers, the RPCs
//! and the catalog; this module owns the decisions.
//!
//! ## Pipeline
//! 1. **Sampler** (every node): [`Sampler::record`] on the request path counts reads and
//!    writes per route, where in the key space they fell (sub-range buckets over the previous
//!    window's key range), a reservoir of request keys and the heaviest keys (space-saving
//!    top-K). Allocation-free in steady state. Every `window`,
//!    [`Sampler::snapshot_and_reset`] drains a [`WindowStats`] (serde-serialisable).
//! 2. **Merge** (default-group leader): the windows of all nodes are merged into a
//!    [`ClusterWindow`]: per route, score = `4 × writes + 1 × reads` normalised to ops/min
//!    (each node by its own measured window), merged segments and hot keys.
//! 3. **Detector**: per route, hysteresis (candidate after `hysteresis_windows` consecutive
//!    windows ≥ threshold; stays a candidate while ≥ `down_band × threshold`), cooldown for
//!    split children (from catalog lineage, monotonic clock), then a split key from the
//!    evidence: isolate a key holding ≥ `hot_key_share` of the route's load (split at `k`, then
//!    at `k ++ [0]`), else the sub-range p50 (the sampled key that best halves the load, or
//!    interpolated from the buckets with too few samples), else decline. Never a blind
//!    midpoint — unless the seeded bug `split_midpoint_bug` is set.
//! 4. **Scheduler**: kill switch, in-flight set, `splits_per_cycle` and `max_routes` budgets,
//!    target = least-loaded group (when the move helps), yielding [`SplitRangeCall`]s.
//!
//! ## What the server calls
//! ```text
//! // every node, at start:
//! let cfg: AutoSplitConfig = /* from flags */; cfg.validate()?;
//! let sampler = Arc::new(Sampler::new(node_id, &cfg, Instant::now()));
//! // request path, once per client request, on the node that received it (not again after
//! // forwarding); route_id is the route the key was routed by:
//! sampler.record(route_id, key, AccessKind::Read | AccessKind::Write);
//! // every cfg.window, on every node:
//! let stats: WindowStats = sampler.snapshot_and_reset(Instant::now());
//! //   → send `stats` to the default-group leader (or let it pull them).
//!
//! // default-group leader only (drop the AutoSplit and build a new one on leadership change):
//! let mut auto = AutoSplit::new(cfg)?;            // validates cfg
//! let switch: KillSwitch = auto.kill_switch();    // admin RPC: switch.set_enabled(bool)
//! // once per window, after collecting the nodes' WindowStats of that window:
//! let report = auto.tick(Instant::now(), &windows_of_all_nodes, &catalog_view);
//! for call in report.calls {   // SplitRangeCall
//!     // Distribution.SplitRange{ expected_catalog_version, route_id, split_key,
//!     //                          target_group_id } (target == source ⇒ same-group split)
//!     let outcome = if ok { SplitOutcome::Committed } else { SplitOutcome::Failed };
//!     auto.report_outcome(call.route_id, outcome);
//! }
//! // log report.proposals / report.declines (serde::Serialize) as wanted.
//! ```
//! [`CatalogView`] is plain data: `version`, every route as [`RouteInfo`] (`route_id`, `start`,
//! `end` (empty = unbounded), `group_id`, `active` (= state ACTIVE), `parent_route_id`) and
//! `group_ids` (all groups, including empty ones). Children of a split are recognised by
//! `parent_route_id` (or by a known route id whose span changed) and get the cooldown.
//! When several calls come out of one cycle they all carry the same
//! `expected_catalog_version`; after the first succeeds the others fail the CAS — report them
//! `Failed` and they are proposed again next window (the default budget is one per cycle).
//!
//! ## Flags and defaults (the server exposes these; `--bug split-midpoint` sets the bug knob)
//! | flag | field | default | meaning |
//! |---|---|---|---|
//! | `--auto-split` | `enabled` | off | initial state of the kill switch |
//! | `--split-window` | `window` | `2s` | sampling window |
//! | `--split-threshold` | `threshold_ops_per_min` | `50000` | weighted ops/min to be hot |
//! | `--split-write-weight` / `--split-read-weight` | `write_weight` / `read_weight` | 4 / 1 | score weights |
//! | `--split-hysteresis` | `hysteresis_windows` | 3 | consecutive hot windows to become a candidate |
//! | `--split-down-band` | `down_band` | 0.8 | candidates drop out below `0.8 × threshold` |
//! | `--split-cooldown` | `cooldown` | `30s` | children of a split are left alone this long |
//! | `--split-min-span` | `min_child_span` | 0 | min key-space fraction per child of a p50 split |
//! | `--split-max-routes` | `max_routes` | 64 | catalog size cap |
//! | `--split-per-cycle` | `splits_per_cycle` | 1 | calls per window |
//! | `--split-hot-key-share` | `hot_key_share` | 0.5 | share of a route's load that makes a key "dominant" |
//! | `--split-buckets` | `buckets` | 16 | sub-range buckets per route |
//! | `--split-top-k` | `top_k` | 8 | hot-key sketch entries per route |
//! | `--split-key-samples` | `key_samples` | 32 | sampled request keys per route and window |
//! | `--split-max-tracked-routes` | `max_tracked_routes` | 4096 | sampler route slots per node |
//! | `--split-in-flight-timeout` | `in_flight_timeout` | `30s` | unreported calls stop blocking after this |
//! | `--split-move` | `move_to_least_loaded` | on | move the right child to the least-loaded group |
//!
//! Why these defaults: a hot range taking 1,000 ops/s (even at 25% writes) scores ≥ 105,000
//! ops/min, more than twice the 50,000 threshold (elastickv's), so it is a candidate after
//! 3 windows of 2 s — a split is planned 6–8 s after the load starts, well inside a 60 s run.
//! The 0.5 hot-key share is where p50 stops helping: a key with half the load *is* the median.
//! [`parse_duration`] parses `2s` / `500ms` / `1m` for the duration flags.

pub mod config;
pub mod detector;
pub mod keys;
pub mod pipeline;
pub mod sampler;
pub mod scheduler;
pub mod sketch;
pub mod split_key;
pub mod stats;
pub mod view;

#[cfg(test)]
mod props;

pub use config::{parse_duration, AutoSplitConfig, ConfigError};
pub use detector::{Decline, Detector, Evaluation, RouteStatus, SplitProposal};
pub use pipeline::{AutoSplit, TickReport};
pub use sampler::{AccessKind, Sampler};
pub use scheduler::{group_loads, KillSwitch, Schedule, Scheduler, SplitOutcome, SplitRangeCall};
pub use split_key::{DeclineReason, SplitReason};
pub use stats::{
    ClusterWindow, HotKey, KeySegment, RouteLoad, RouteWindow, SampledKey, WindowStats,
};
pub use view::{CatalogView, RouteInfo};

//! The `objects` workload: whole-object writes and verified reads over an S3-compatible
//! API (`docs/s3.md` § objects). On `--key-count` objects (default 4) under `obj/`, half
//! reads (`--read-fraction`), half writes; each write a number unique across the run and a
//! body of that write ([`crate::objects::body`]) whose size and upload follow [`SIZES`],
//! mostly small, a few larger than elastickv's 1 MiB chunk and a few multipart. 10 ops/s
//! and a 10 s call deadline by default, for a 2-core machine. Judged per key by
//! `linearizable` (objects as registers) and by `objects` (torn bodies); the final reads
//! get every object written. Only clients with object calls run it.
//!
//! Invariant: every key an operation named is in [`Workload::touched`] (kind `objects`),
//! so the final reads cover every object written.

use super::keys::KeyChooser;
use super::{OpSpec, Touched, Workload, WorkloadSpec};
use crate::client::ClientCapability;
use crate::config::{KeyDist, WorkloadConfig};
use crate::objects::body::MIN_BODY;
use crate::objects::{ObjectRead, ObjectWrite, Upload};
use analysis::checkers::{linearizable, objects};
use rand::rngs::SmallRng;
use rand::RngExt;
use std::collections::BTreeSet;

pub const SPEC: WorkloadSpec = WorkloadSpec::new(
    |cfg| Box::new(Objects::new(cfg)),
    &[linearizable::NAME, objects::NAME],
)
.with_defaults(|base| WorkloadConfig {
    key_dist: KeyDist::Uniform,
    keys: 4,
    register_prefix: "obj/".into(),
    rate: 10.0,
    call_timeout_ms: 10_000,
    ..base
})
.needing(&[ClientCapability::Objects]);

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
/// The part size of a multipart upload: S3's smallest non-last part.
pub const PART_SIZE: u64 = 5 * MIB;

/// The sizes of writes, as a table: (share of writes, smallest body, largest body, upload).
/// A multipart write is one 5 MiB part and a last part of 1 byte to 1 MiB.
pub const SIZES: &[(f64, u64, u64, Upload)] = &[
    (0.60, MIN_BODY, 4 * KIB, Upload::Single),
    (0.25, 4 * KIB, MIB, Upload::Single),
    (0.10, MIB, 3 * MIB, Upload::Single),
    (
        0.05,
        PART_SIZE + 1,
        PART_SIZE + MIB,
        Upload::Multipart {
            part_size: PART_SIZE,
        },
    ),
];

/// The name `test.json` records the objects under.
const TOUCHED_KIND: &str = "objects";

pub struct Objects {
    prefix: String,
    chooser: KeyChooser,
    read_fraction: f64,
    next_write: i64,
    touched: BTreeSet<String>,
}

impl Objects {
    pub fn new(cfg: &WorkloadConfig) -> Objects {
        Objects {
            prefix: cfg.register_prefix.clone(),
            chooser: KeyChooser::new(cfg.key_dist, cfg.keys, cfg.celebrities),
            read_fraction: cfg.read_fraction,
            next_write: 1,
            touched: BTreeSet::new(),
        }
    }

    /// A body size and its upload, drawn from [`SIZES`].
    pub fn draw_size(rng: &mut SmallRng) -> (u64, Upload) {
        let mut roll: f64 = rng.random();
        for &(share, lo, hi, upload) in SIZES {
            if roll < share {
                return (rng.random_range(lo..=hi), upload);
            }
            roll -= share;
        }
        let (_, lo, _, upload) = SIZES[0];
        (lo, upload)
    }
}

impl Workload for Objects {
    fn next_op(&mut self, rng: &mut SmallRng) -> OpSpec {
        let key = format!("{}{:05}", self.prefix, self.chooser.choose(rng));
        self.touched.insert(key.clone());
        if rng.random_bool(self.read_fraction.clamp(0.0, 1.0)) {
            return OpSpec::new(ObjectRead { key });
        }
        let write = self.next_write;
        self.next_write += 1;
        let (length, upload) = Objects::draw_size(rng);
        OpSpec::new(ObjectWrite {
            key,
            write,
            length,
            upload,
        })
    }

    fn touched(&self) -> Touched {
        Touched::of_kind(TOUCHED_KIND, self.touched.clone())
    }

    /// One verified read of every object an operation named.
    fn final_ops(&self) -> Vec<OpSpec> {
        self.touched
            .iter()
            .map(|key| OpSpec::new(ObjectRead { key: key.clone() }))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn the_size_table_covers_every_write_and_multipart_parts_are_legal() {
        let total: f64 = SIZES.iter().map(|s| s.0).sum();
        assert!((total - 1.0).abs() < 1e-9, "{total}");
        let mut rng = SmallRng::seed_from_u64(3);
        let (mut multipart, mut over_chunk) = (0, 0);
        for _ in 0..10_000 {
            let (len, upload) = Objects::draw_size(&mut rng);
            assert!((MIN_BODY..=PART_SIZE + MIB).contains(&len), "{len}");
            if let Upload::Multipart { part_size } = upload {
                assert!(part_size >= 5 * MIB && len > part_size, "{len}");
                multipart += 1;
            }
            over_chunk += usize::from(len > MIB);
        }
        assert!((350..650).contains(&multipart), "{multipart}");
        assert!((1_200..1_800).contains(&over_chunk), "{over_chunk}");
    }

    #[test]
    fn writes_are_numbered_once_and_the_final_reads_cover_every_object() {
        let cfg = (SPEC.defaults)(WorkloadConfig::default());
        let mut gen = Objects::new(&cfg);
        let mut rng = SmallRng::seed_from_u64(5);
        let mut writes = Vec::new();
        for _ in 0..500 {
            let op = gen.next_op(&mut rng);
            if let Some(w) = op.get::<ObjectWrite>() {
                writes.push(w.write);
            }
        }
        assert!(writes.len() > 150, "{}", writes.len());
        assert!(writes.windows(2).all(|w| w[1] == w[0] + 1));
        let finals: BTreeSet<String> = gen
            .final_ops()
            .iter()
            .map(|op| op.key().unwrap().to_string())
            .collect();
        assert_eq!(finals, gen.touched().kind(TOUCHED_KIND));
        assert_eq!(finals.len(), 4);
    }
}

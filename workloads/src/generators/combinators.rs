//! Generator combinators (Jepsen's `generator.clj` `mix`, `stagger`-free subset): build a
//! [`Workload`] from other workloads instead of writing a new loop.
//!
//! - [`Mix`]: each operation from one part, chosen with probability proportional to its
//!   weight;
//! - [`Every`]: every `n`-th operation from a periodic part (e.g. a scan), the others from
//!   the main part.
//!
//! Invariants: a combinator never invents operations (each comes from a part), and what it
//! touched is the union of what its parts touched, so the final reads miss nothing. Parts
//! keep their own value counters: combine parts whose written values cannot collide (the
//! checkers rely on unique register values).

use super::{OpSpec, Touched, Workload};
use rand::rngs::SmallRng;
use rand::RngExt;

/// A weighted choice between workloads.
pub struct Mix {
    parts: Vec<(u32, Box<dyn Workload>)>,
    total: u32,
}

impl Mix {
    /// `parts` with their weights; a part of weight 0 is never chosen. An error if no part
    /// has a positive weight (nothing could run) or the weights overflow.
    pub fn new(parts: Vec<(u32, Box<dyn Workload>)>) -> anyhow::Result<Mix> {
        let total = parts
            .iter()
            .try_fold(0u32, |sum, (w, _)| sum.checked_add(*w));
        match total {
            Some(total) if total > 0 => Ok(Mix { parts, total }),
            Some(_) => anyhow::bail!(
                "a mix needs a part with a positive weight ({} parts, all weight 0)",
                parts.len()
            ),
            None => anyhow::bail!(
                "the weights of the mix's {} parts add up to more than {}",
                parts.len(),
                u32::MAX
            ),
        }
    }
}

impl Workload for Mix {
    fn next_op(&mut self, rng: &mut SmallRng) -> OpSpec {
        let mut pick = rng.random_range(0..self.total);
        for (weight, part) in &mut self.parts {
            if pick < *weight {
                return part.next_op(rng);
            }
            pick -= *weight;
        }
        unreachable!("pick < total, the sum of the weights")
    }

    fn touched(&self) -> Touched {
        union(self.parts.iter().map(|(_, p)| p.touched()))
    }

    fn final_ops(&self) -> Vec<OpSpec> {
        final_union(self.parts.iter().map(|(_, p)| p.final_ops()))
    }
}

/// Every `n`-th operation from `periodic`, the rest from `main`.
pub struct Every {
    n: u64,
    count: u64,
    periodic: Box<dyn Workload>,
    main: Box<dyn Workload>,
}

impl Every {
    /// `n` = 0 never asks `periodic`.
    pub fn new(n: u64, periodic: Box<dyn Workload>, main: Box<dyn Workload>) -> Every {
        Every {
            n,
            count: 0,
            periodic,
            main,
        }
    }
}

impl Workload for Every {
    fn next_op(&mut self, rng: &mut SmallRng) -> OpSpec {
        self.count += 1;
        if self.n > 0 && self.count.is_multiple_of(self.n) {
            self.periodic.next_op(rng)
        } else {
            self.main.next_op(rng)
        }
    }

    fn touched(&self) -> Touched {
        union([self.periodic.touched(), self.main.touched()])
    }

    fn final_ops(&self) -> Vec<OpSpec> {
        final_union([self.periodic.final_ops(), self.main.final_ops()])
    }
}

fn union(parts: impl IntoIterator<Item = Touched>) -> Touched {
    let mut all = Touched::default();
    for t in parts {
        all.extend(t);
    }
    all
}

/// The parts' final operations in order, an operation two parts share once.
fn final_union(parts: impl IntoIterator<Item = Vec<OpSpec>>) -> Vec<OpSpec> {
    let mut all: Vec<OpSpec> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for op in parts.into_iter().flatten() {
        if seen.insert((
            op.f(),
            op.key().map(str::to_string),
            op.invoke_value().to_string(),
        )) {
            all.push(op);
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Reads (or writes) of one fixed key, counting what it generated.
    struct Fixed {
        key: &'static str,
        write: bool,
        generated: u64,
    }

    impl Workload for Fixed {
        fn next_op(&mut self, _rng: &mut SmallRng) -> OpSpec {
            self.generated += 1;
            let key = self.key.to_string();
            if self.write {
                OpSpec::new(crate::kv_ops::Write {
                    key,
                    value: self.generated as i64,
                })
            } else {
                OpSpec::new(crate::kv_ops::Read { key })
            }
        }

        fn touched(&self) -> Touched {
            Touched {
                registers: [self.key.to_string()].into(),
                ..Touched::default()
            }
        }
    }

    fn fixed(key: &'static str, write: bool) -> Box<dyn Workload> {
        Box::new(Fixed {
            key,
            write,
            generated: 0,
        })
    }

    fn keys_of(w: &mut dyn Workload, n: usize) -> Vec<String> {
        let mut rng = SmallRng::seed_from_u64(7);
        (0..n)
            .map(|_| w.next_op(&mut rng).key().unwrap_or_default().to_string())
            .collect()
    }

    #[test]
    fn mix_follows_the_weights_and_never_picks_weight_zero() {
        let mut mix = Mix::new(vec![
            (3, fixed("a", false)),
            (1, fixed("b", false)),
            (0, fixed("never", true)),
        ])
        .unwrap();
        let keys = keys_of(&mut mix, 40_000);
        let a = keys.iter().filter(|k| *k == "a").count() as f64 / keys.len() as f64;
        assert!((a - 0.75).abs() < 0.02, "share of the weight-3 part: {a}");
        assert!(!keys.iter().any(|k| k == "never"));
    }

    #[test]
    fn a_mix_without_weight_is_refused_with_the_reason() {
        let err = Mix::new(vec![(0, fixed("a", false))])
            .err()
            .expect("refused");
        assert!(err.to_string().contains("positive weight"), "{err}");
        let err = Mix::new(vec![(u32::MAX, fixed("a", false)), (1, fixed("b", false))])
            .err()
            .expect("refused");
        assert!(err.to_string().contains("add up"), "{err}");
    }

    #[test]
    fn every_nth_op_comes_from_the_periodic_part() {
        let mut w = Every::new(4, fixed("scan", false), fixed("main", true));
        let keys = keys_of(&mut w, 12);
        let periodic: Vec<usize> = keys
            .iter()
            .enumerate()
            .filter(|(_, k)| *k == "scan")
            .map(|(i, _)| i + 1)
            .collect();
        assert_eq!(periodic, vec![4, 8, 12]);
        assert!(keys_of(
            &mut Every::new(0, fixed("scan", false), fixed("main", true)),
            10
        )
        .iter()
        .all(|k| k == "main"));
    }

    #[test]
    fn what_the_parts_touched_is_reported_together() {
        let mix = Mix::new(vec![(1, fixed("a", true)), (1, fixed("b", true))]).unwrap();
        assert_eq!(
            mix.touched().registers,
            ["a".to_string(), "b".to_string()].into()
        );
        let every = Every::new(2, fixed("c", false), Box::new(mix));
        assert_eq!(every.touched().registers.len(), 3);
        let finals: Vec<String> = every.final_ops().iter().map(OpSpec::describe).collect();
        assert_eq!(
            finals,
            ["read c", "read a", "read b"],
            "each part's final reads, once each"
        );
        let twice = Mix::new(vec![(1, fixed("a", true)), (1, fixed("a", false))]).unwrap();
        assert_eq!(
            twice.final_ops().len(),
            1,
            "a key two parts touched is read back once"
        );
    }
}

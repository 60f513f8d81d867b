//! A user-assembled test, without touching the runner: an own generator (register reads and
//! writes whose keys follow a *step* distribution — one key takes half the load, the rest
//! share the other half — composed with the `Mix` combinator), an existing nemesis
//! (`partition`) and the existing checkers of the `register` workload (linearizability per
//! key, vacuity, ...), against refkv in Docker.
//!
//! Run: `cargo run --example custom_test -- [seconds]` (needs Docker; default 30 s). Exit
//! code as `faultline test`: 0 valid, 1 invalid, 2 unknown, 254 bad spec, 255 error.
//!
//! Invariant the checkers rely on: every written value is unique across the run — both
//! parts of the mix draw them from one shared counter.

use faultline::runner::{self, GeneratorFactory, RunError, TestSpec};
use rand::rngs::SmallRng;
use rand::RngExt;
use std::collections::BTreeSet;
use std::process::ExitCode;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use workloads::generators::combinators::Mix;
use workloads::generators::{OpSpec, Touched, Workload};
use workloads::kv_ops::{Read, Write};

/// Reads and writes (one in three) of keys drawn uniformly from `keys`.
struct Registers {
    keys: Vec<String>,
    next_value: Arc<AtomicI64>,
    touched: BTreeSet<String>,
}

impl Workload for Registers {
    fn next_op(&mut self, rng: &mut SmallRng) -> OpSpec {
        let key = self.keys[rng.random_range(0..self.keys.len())].clone();
        self.touched.insert(key.clone());
        if rng.random_range(0..3) == 0 {
            OpSpec::new(Write {
                key,
                value: self.next_value.fetch_add(1, Ordering::Relaxed),
            })
        } else {
            OpSpec::new(Read { key })
        }
    }

    fn touched(&self) -> Touched {
        Touched {
            registers: self.touched.clone(),
            ..Touched::default()
        }
    }
}

fn registers(keys: &[&str], next_value: &Arc<AtomicI64>) -> Box<dyn Workload> {
    let keys = keys.iter().map(|k| k.to_string()).collect();
    Box::new(Registers {
        keys,
        next_value: next_value.clone(),
        touched: BTreeSet::new(),
    })
}

/// The step distribution: `reg/hot` gets weight 1, the six others together weight 1.
fn step_distribution() -> anyhow::Result<Box<dyn Workload>> {
    let values = Arc::new(AtomicI64::new(1));
    let cold = ["reg/a", "reg/b", "reg/c", "reg/d", "reg/e", "reg/f"];
    Ok(Box::new(Mix::new(vec![
        (1, registers(&["reg/hot"], &values)),
        (1, registers(&cold, &values)),
    ])?))
}

fn main() -> ExitCode {
    let seconds = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    if let Err(e) = step_distribution() {
        eprintln!("custom_test: {e:#}");
        return ExitCode::from(faultline::exit::BAD_ARGS);
    }
    let spec = TestSpec {
        workload: "register".into(),
        nemesis: "partition".into(),
        time_limit: seconds,
        test_name: Some("custom-step-register-partition".into()),
        generator: Some(GeneratorFactory(Arc::new(|_cfg| {
            step_distribution().expect("checked in main")
        }))),
        ..TestSpec::default()
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("custom_test: cannot start the async runtime: {e}");
            return ExitCode::from(faultline::exit::INTERNAL);
        }
    };
    match rt.block_on(runner::run(spec)) {
        Ok(validity) => faultline::exit::of(validity),
        Err(e @ RunError::BadArgs(_)) => {
            eprintln!("custom_test: {e}");
            ExitCode::from(faultline::exit::BAD_ARGS)
        }
        Err(e) => {
            eprintln!("custom_test: error: {e}");
            ExitCode::from(faultline::exit::INTERNAL)
        }
    }
}

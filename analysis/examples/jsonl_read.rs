//! Measures reading one history file: `cargo run --release -p analysis --example
//! jsonl_read -- FILE`. Prints entries, wall time and the process' peak RSS.

use std::time::Instant;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: jsonl_read FILE");
        std::process::exit(254);
    };
    let started = Instant::now();
    match analysis::formats::load_file(std::path::Path::new(&path), None) {
        Ok(loaded) => {
            let elapsed = started.elapsed();
            let peak = std::fs::read_to_string("/proc/self/status")
                .unwrap_or_default()
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:").map(|v| v.trim().to_string()))
                .unwrap_or_default();
            println!(
                "{path}: {} entries ({}), read in {:.0} ms, peak RSS {peak}",
                loaded.history.len(),
                loaded.format,
                elapsed.as_secs_f64() * 1e3
            );
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(254);
        }
    }
}

//! Benchmark (ignored by default): the report of a synthetic 1M-op run with catalog splits,
//! faults and 200 anomalies must be generated in ≤ 5 s into a page of ≤ 5 MB.
//!
//!     cargo test --release -p faultline --test report_perf -- --ignored --nocapture
//!
//! Prints the history size, the wall time of `faultline report` and the page size.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const CLIENT_OPS: u64 = 1_000_000;
const PROCESSES: u64 = 30;
const RUN_NS: u64 = 600_000_000_000;

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Writes history.jsonl: 30 processes issuing ops one after another (so invokes and
/// completions interleave as in a real run), sequential inserts into a hot range plus
/// register ops on 100 keys; a split of the hot route every 50 s; a fault every 40 s.
fn write_history(dir: &Path) -> u64 {
    let file = std::fs::File::create(dir.join("history.jsonl")).unwrap();
    let mut out = BufWriter::new(file);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let step = RUN_NS / (CLIENT_OPS / PROCESSES);
    let mut index = 0u64;
    let mut line = |out: &mut BufWriter<std::fs::File>, text: String| {
        writeln!(out, "{{\"index\":{index},{text}}}").unwrap();
        index += 1;
    };
    let mut routes: Vec<(u64, String, String, u64, Option<u64>)> =
        vec![(1, String::new(), String::new(), 1, None)];
    let mut next_route = 2;
    let mut version = 1;
    let mut seq = 0u64;
    let catalog = |routes: &Vec<(u64, String, String, u64, Option<u64>)>, version: u64| {
        let rs: Vec<String> = routes
            .iter()
            .map(|(id, s, e, g, p)| {
                let parent = p.map(|p| format!(",\"parent\":{p}")).unwrap_or_default();
                format!("{{\"id\":{id},\"start\":\"{s}\",\"end\":\"{e}\",\"group\":{g},\"state\":\"ACTIVE\",\"epoch\":{version}{parent}}}")
            })
            .collect();
        format!("{{\"version\":{version},\"routes\":[{}]}}", rs.join(","))
    };
    line(
        &mut out,
        format!(
            "\"time\":0,\"type\":\"info\",\"process\":\"watcher\",\"f\":\"catalog\",\"value\":{}",
            catalog(&routes, version)
        ),
    );
    let mut next_process = PROCESSES;
    let mut procs: Vec<u64> = (0..PROCESSES).collect();
    let rounds = CLIENT_OPS / PROCESSES;
    for round in 0..rounds {
        let t = round * step;
        if round > 0 && t / 50_000_000_000 != (t - step) / 50_000_000_000 {
            // Split the route holding the hot range's tail at the current sequence key.
            let split = format!("t/{seq:09}");
            let pos = routes
                .iter()
                .position(|(_, s, e, _, _)| {
                    s.as_str() <= split.as_str() && (e.is_empty() || split.as_str() < e.as_str())
                })
                .unwrap();
            let (id, s, e, g, _) = routes.remove(pos);
            routes.push((next_route, s, split.clone(), g, Some(id)));
            routes.push((next_route + 1, split, e, g % 3 + 1, Some(id)));
            next_route += 2;
            version += 1;
            line(&mut out, format!("\"time\":{t},\"type\":\"info\",\"process\":\"watcher\",\"f\":\"catalog\",\"value\":{}", catalog(&routes, version)));
        }
        if t % 40_000_000_000 < step {
            let kind = ["partition", "kill", "pause"][(t / 40_000_000_000 % 3) as usize];
            line(&mut out, format!("\"time\":{t},\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"start-{kind}\",\"value\":{{\"targets\":[\"n1\"],\"effective\":true}}"));
        }
        if t % 40_000_000_000 >= 10_000_000_000 && (t - step) % 40_000_000_000 < 10_000_000_000 {
            let kind = ["partition", "kill", "pause"][(t / 40_000_000_000 % 3) as usize];
            line(&mut out, format!("\"time\":{t},\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"stop-{kind}\",\"value\":{{\"targets\":[\"n1\"],\"effective\":true}}"));
        }
        let mut completions = Vec::with_capacity(PROCESSES as usize);
        for (slot, p) in procs.iter_mut().enumerate() {
            let (f, key, value) = if rng.below(2) == 0 {
                seq += 1;
                ("write", format!("t/{seq:09}"), seq.to_string())
            } else {
                let f = ["read", "write", "cas"][rng.below(3) as usize];
                (
                    f,
                    format!("k/{:03}", rng.below(100)),
                    if f == "read" {
                        "null".into()
                    } else {
                        rng.below(1000).to_string()
                    },
                )
            };
            let start = t + slot as u64 * (step / PROCESSES);
            line(&mut out, format!("\"time\":{start},\"type\":\"invoke\",\"process\":{p},\"f\":\"{f}\",\"key\":\"{key}\",\"value\":{value}"));
            let roll = rng.below(1000);
            let kind = if roll < 10 {
                "info"
            } else if roll < 40 {
                "fail"
            } else {
                "ok"
            };
            let latency = 200_000 + rng.below(4_000_000) * (1 + rng.below(4) * rng.below(4));
            completions.push((start + latency.min(step - 1), *p, f, key, value, kind));
            if kind == "info" {
                *p = next_process;
                next_process += 1;
            }
        }
        completions.sort_by_key(|c| c.0);
        for (time, p, f, key, value, kind) in completions {
            line(&mut out, format!("\"time\":{time},\"type\":\"{kind}\",\"process\":{p},\"f\":\"{f}\",\"key\":\"{key}\",\"value\":{value}"));
        }
    }
    out.flush().unwrap();
    index
}

/// results.json with one invalid checker reporting 200 anomalies spread over the history.
fn write_results(dir: &Path, entries: u64) {
    let anomalies: Vec<String> = (0..200u64)
        .map(|i| {
            let op = i * (entries / 200) + 1;
            format!(
                "{{\"type\":\"stale-read\",\"op\":{op},\"witness\":{{\"write_index\":{}}}}}",
                op.saturating_sub(45)
            )
        })
        .collect();
    let results = format!(
        "{{\"valid\":false,\"checkers\":{{\"linearizable\":{{\"valid\":false,\"reason\":\"200 stale reads\",\"anomalies\":[{}]}},\"set-full\":{{\"valid\":true}}}}}}",
        anomalies.join(",")
    );
    std::fs::write(dir.join("results.json"), results).unwrap();
}

#[test]
#[ignore = "benchmark: run with --release -- --ignored --nocapture"]
fn report_of_a_million_op_history_is_fast_and_small() {
    let dir = tempfile::tempdir().unwrap();
    let entries = write_history(dir.path());
    write_results(dir.path(), entries);
    let history_mb = std::fs::metadata(dir.path().join("history.jsonl"))
        .unwrap()
        .len() as f64
        / 1e6;
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .arg("report")
        .arg(dir.path())
        .arg("--timing")
        .output()
        .unwrap();
    let wall = started.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page_mb = std::fs::metadata(dir.path().join("report.html"))
        .unwrap()
        .len() as f64
        / 1e6;
    println!(
        "report bench: {entries} history entries ({CLIENT_OPS} client ops, {history_mb:.0} MB), faultline report wall {wall:.2} s, page {page_mb:.2} MB; {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    assert!(wall <= 5.0, "report took {wall:.2} s (budget 5 s)");
    assert!(page_mb <= 5.0, "page is {page_mb:.2} MB (budget 5 MB)");
}

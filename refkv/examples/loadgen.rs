//! Sustained-write load generator for a running refkv cluster: N concurrent writers spread
//! over the given nodes, each doing back-to-back RawPut of distinct keys; prints acknowledged
//! writes/s and latency quantiles.
//!
//! `cargo run --release -p refkv --example loadgen -- --addrs 127.0.0.1:17001,127.0.0.1:17002,127.0.0.1:17003 --concurrency 32 --seconds 20`

use std::sync::Arc;
use std::time::{Duration, Instant};

use refkv::proto::api::raw_kv_client::RawKvClient;
use refkv::proto::api::RawPutRequest;

struct Args {
    addrs: Vec<String>,
    concurrency: usize,
    seconds: u64,
    value_size: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        addrs: vec![],
        concurrency: 32,
        seconds: 20,
        value_size: 64,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let num = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag}: not a number: {v}"))
        };
        match flag.as_str() {
            "--addrs" => args.addrs = value.split(',').map(str::to_string).collect(),
            "--concurrency" => args.concurrency = num(&value)? as usize,
            "--seconds" => args.seconds = num(&value)?,
            "--value-size" => args.value_size = num(&value)? as usize,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if args.addrs.is_empty() {
        return Err("--addrs IP:PORT,... is required".into());
    }
    Ok(args)
}

#[tokio::main]
async fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("loadgen: {e}");
            std::process::exit(2);
        }
    };
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let hist = Arc::new(std::sync::Mutex::new(
        hdrhistogram::Histogram::<u64>::new(3).expect("histogram"),
    ));
    let errors = Arc::new(std::sync::atomic::AtomicU64::new(0));
    // Per-second acknowledged writes, to see dips (e.g. during a move).
    let acked_now = Arc::new(std::sync::atomic::AtomicU64::new(0));
    {
        let acked_now = acked_now.clone();
        tokio::spawn(async move {
            let start = Instant::now();
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.tick().await;
            loop {
                tick.tick().await;
                let n = acked_now.swap(0, std::sync::atomic::Ordering::Relaxed);
                eprintln!("t={:>3}s {n} writes/s", start.elapsed().as_secs());
            }
        });
    }
    let mut tasks = Vec::new();
    for w in 0..args.concurrency {
        let acked_now = acked_now.clone();
        let addr = args.addrs[w % args.addrs.len()].clone();
        let (hist, errors) = (hist.clone(), errors.clone());
        let value = vec![b'x'; args.value_size];
        tasks.push(tokio::spawn(async move {
            let mut client = match RawKvClient::connect(format!("http://{addr}")).await {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("loadgen: connecting to {addr}: {e}");
                    return;
                }
            };
            let mut local = hdrhistogram::Histogram::<u64>::new(3).expect("histogram");
            let mut i = 0u64;
            while Instant::now() < deadline {
                let key = format!("load-{w:04}-{i:09}").into_bytes();
                i += 1;
                let t0 = Instant::now();
                match client
                    .raw_put(RawPutRequest {
                        key,
                        value: value.clone(),
                        ..Default::default()
                    })
                    .await
                {
                    Ok(_) => {
                        acked_now.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let _ = local.record(t0.elapsed().as_micros() as u64);
                    }
                    Err(_) => {
                        errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            }
            let _ = hist.lock().map(|mut h| h.add(&local));
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    let h = hist.lock().expect("histogram lock");
    let secs = args.seconds as f64;
    println!(
        "acked writes: {} in {secs:.0}s = {:.0} writes/s; errors {}; latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (concurrency {}, {} nodes)",
        h.len(),
        h.len() as f64 / secs,
        errors.load(std::sync::atomic::Ordering::Relaxed),
        h.value_at_quantile(0.5) as f64 / 1000.0,
        h.value_at_quantile(0.99) as f64 / 1000.0,
        h.max() as f64 / 1000.0,
        args.concurrency,
        args.addrs.len()
    );
}

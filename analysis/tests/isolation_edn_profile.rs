//! Where the time goes on Elle's EDN format: a list-append history of the command's
//! generator, written as an EDN vector of op maps as Jepsen stores it, read back with the
//! EDN reader, then checked. Ignored (a measurement, not a test):
//! `ISO_EDN_TXNS=100000 cargo test --release -p analysis --test isolation_edn_profile -- --ignored --nocapture`.

use analysis::checkers::isolation::{check, Opts, TxnModel};
use analysis::formats::{parse_str, Format};
use analysis::history::{History, OpType, Process};
use analysis::txn_synth::{generate_txn, TxnAnomaly, TxnSynthConfig};
use serde_json::Value;
use std::fmt::Write;
use std::time::Instant;

fn edn_value(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("nil"),
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                match x.as_str() {
                    Some(f) if i == 0 && matches!(f, "append" | "r" | "w") => {
                        let _ = write!(out, ":{f}");
                    }
                    _ => edn_value(x, out),
                }
            }
            out.push(']');
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

fn to_edn(h: &History) -> String {
    let mut out = String::from("[");
    for op in &h.ops {
        let kind = match op.kind {
            OpType::Invoke => "invoke",
            OpType::Ok => "ok",
            OpType::Fail => "fail",
            OpType::Info => "info",
        };
        let Process::Client(p) = op.process else {
            continue;
        };
        let mut value = String::new();
        edn_value(&op.value, &mut value);
        let _ = writeln!(
            out,
            "{{:index {}, :time {}, :type :{kind}, :process {p}, :f :txn, :value {value}}}",
            op.index, op.time
        );
    }
    out.push(']');
    out
}

#[test]
#[ignore]
fn measure_edn_read_and_check() {
    let txns: u64 = std::env::var("ISO_EDN_TXNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let cfg = TxnSynthConfig {
        model: TxnModel::ListAppend,
        txns,
        keys: 100,
        concurrency: 50,
        indeterminate: 0.01,
        min_len: 1,
        max_len: 4,
        max_writes_per_key: 128,
        anomaly: TxnAnomaly::None,
        seed: 9,
        fail: 0.0,
        final_reads: true,
    };
    let text = to_edn(&generate_txn(&cfg).expect("a valid configuration").history);
    let t = Instant::now();
    let loaded = parse_str(&text, Format::Edn, "profile.edn").expect("the EDN reads back");
    let read = t.elapsed();
    let t = Instant::now();
    let r = check(&loaded.history, &Opts::default());
    let checked = t.elapsed();
    eprintln!(
        "{txns} txns, {} MB of EDN: read {:.2} s, check {:.2} s, verdict {}",
        text.len() / 1_000_000,
        read.as_secs_f64(),
        checked.as_secs_f64(),
        r.valid.as_str()
    );
}

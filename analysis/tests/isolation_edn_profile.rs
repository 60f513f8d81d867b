//! Where the time goes on Elle's EDN format: a list-append history of the command's
//! generator, written as an EDN vector of op maps as Jepsen stores it (`gen-history
//! --format edn`), read back with the EDN reader as `faultline analyze` reads it, then
//! checked. Ignored (a measurement, not a test):
//! `ISO_EDN_TXNS=100000 cargo test --release -p analysis --test isolation_edn_profile -- --ignored --nocapture`.

use analysis::checkers::isolation::{check, Opts, TxnModel};
use analysis::formats::edn_write::write_txn_history;
use analysis::formats::{parse_str_as, Format, TxnForm};
use analysis::txn_synth::{generate_txn, TxnAnomaly, TxnSynthConfig};
use std::time::Instant;

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
    let history = generate_txn(&cfg).expect("a valid configuration").history;
    let mut bytes = Vec::new();
    write_txn_history(&mut bytes, &history).expect("a transaction history");
    drop(history);
    let text = String::from_utf8(bytes).expect("EDN text");
    let t = Instant::now();
    // As `faultline analyze` reads it: transactions kept compact.
    let loaded = parse_str_as(&text, Format::Edn, "profile.edn", TxnForm::Compact)
        .expect("the EDN reads back");
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

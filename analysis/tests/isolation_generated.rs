//! Histories of `faultline gen-history --mode list-append|rw-register` with no anomaly
//! injected (the same generator, with the command's defaults) are valid under
//! strict-serializable at every size, final reads or not: keys written and never read do
//! not make the verdict unknown.

mod isolation_support;

use analysis::checkers::isolation::{ConsistencyModel, TxnModel};
use analysis::txn_synth::{generate_txn, TxnAnomaly, TxnSynthConfig};
use analysis::verdict::Validity;
use isolation_support::run;

/// The command's defaults (`--txn-length 1..4 --max-writes-per-key 128 --fail 0`, no final
/// reads) with the given size and concurrency.
fn config(model: TxnModel, txns: u64, keys: u32, concurrency: u32, seed: u64) -> TxnSynthConfig {
    TxnSynthConfig {
        model,
        txns,
        keys,
        concurrency,
        indeterminate: 0.01,
        min_len: 1,
        max_len: 4,
        max_writes_per_key: 128,
        anomaly: TxnAnomaly::None,
        seed,
        fail: 0.0,
        final_reads: false,
    }
}

fn assert_valid(cfg: &TxnSynthConfig) {
    let h = generate_txn(cfg).expect("a valid configuration").history;
    let r = run(&h, cfg.model, ConsistencyModel::StrictSerializable);
    assert_eq!(
        r.valid,
        Validity::Valid,
        "{} txns, {} keys, seed {}: {:?}",
        cfg.txns,
        cfg.keys,
        cfg.seed,
        r.reason
    );
}

#[test]
fn clean_generated_histories_of_every_size_are_valid() {
    for model in [TxnModel::ListAppend, TxnModel::RwRegister] {
        for (txns, keys, concurrency) in [(20, 1, 2), (300, 5, 5), (5_000, 100, 20)] {
            for seed in 0..4 {
                assert_valid(&config(model, txns, keys, concurrency, seed));
            }
        }
    }
}

/// `gen-history --mode list-append --ops 100000 --keys 100 --concurrency 50
/// --indeterminate 0.01 --seed 9`: some keys are written and never read.
#[test]
fn the_100k_list_append_history_with_unread_keys_is_valid() {
    assert_valid(&config(TxnModel::ListAppend, 100_000, 100, 50, 9));
}

//! Where Elle's inference is complete, so the isolation checker must say invalid whenever
//! the brute-force oracle finds no serial order (the reasons are in `isolation_oracle.rs`'s
//! module doc): list-append reads that show each transaction's appends in its own order;
//! rw-register keys with at most one writer that did not fail, no crashed writer's value
//! read, and no read of a value its own transaction writes only later.

use super::oracle::{self, Fate, OMop};
use analysis::checkers::isolation::TxnModel;
use analysis::history::History;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// Each transaction's appends, per key, in the order it made them.
fn appends_in_order(txns: &[oracle::OTxn]) -> Vec<(String, Vec<Value>)> {
    let mut out: Vec<(String, Vec<Value>)> = Vec::new();
    for t in txns {
        let mut mine: Vec<(String, Vec<Value>)> = Vec::new();
        for m in &t.mops {
            if let OMop::Append(k, v) = m {
                match mine.iter_mut().find(|(key, _)| key == k) {
                    Some((_, seq)) => seq.push(v.clone()),
                    None => mine.push((k.clone(), vec![v.clone()])),
                }
            }
        }
        out.extend(mine);
    }
    out
}

/// Whether the elements of one transaction's appends `seq` that `list` holds are a prefix
/// of `seq`, in its order.
fn shows_prefix(list: &[Value], seq: &[Value]) -> bool {
    let shown: Vec<&Value> = list.iter().filter(|e| seq.contains(e)).collect();
    shown.len() <= seq.len() && shown.iter().zip(seq).all(|(a, b)| *a == b)
}

/// Whether Elle's inference is complete on this history (see the module doc).
pub fn complete_domain(h: &History, model: TxnModel) -> bool {
    let txns = oracle::transactions(h);
    let ok_reads = txns
        .iter()
        .filter(|t| t.fate == Fate::Committed)
        .flat_map(|t| t.mops.iter())
        .filter_map(|m| match m {
            OMop::Read(k, Some(v)) => Some((k, v)),
            _ => None,
        });
    match model {
        TxnModel::ListAppend => {
            let appends = appends_in_order(&txns);
            ok_reads.into_iter().all(|(k, v)| match v {
                Value::Array(list) => appends
                    .iter()
                    .all(|(key, seq)| key != k || shows_prefix(list, seq)),
                _ => false,
            })
        }
        TxnModel::RwRegister => {
            let reads: Vec<(&String, &Value)> = ok_reads.collect();
            let future_read = txns.iter().filter(|t| t.fate == Fate::Committed).any(|t| {
                t.mops.iter().enumerate().any(|(i, m)| match m {
                    OMop::Read(k, Some(v)) => t.mops[i..]
                        .iter()
                        .any(|w| *w == OMop::Write(k.clone(), v.clone())),
                    _ => false,
                })
            });
            let mut writers: HashMap<&str, Vec<&oracle::OTxn>> = HashMap::new();
            for t in txns.iter().filter(|t| t.fate != Fate::Failed) {
                let keys: HashSet<&str> = t
                    .mops
                    .iter()
                    .filter_map(|m| {
                        if let OMop::Write(k, _) = m {
                            Some(k.as_str())
                        } else {
                            None
                        }
                    })
                    .collect();
                for k in keys {
                    writers.entry(k).or_default().push(t);
                }
            }
            let crashed_value_read = |t: &oracle::OTxn| {
                t.mops.iter().any(|m| match m {
                    OMop::Write(k, v) => reads.iter().any(|(rk, rv)| *rk == k && *rv == v),
                    _ => false,
                })
            };
            !future_read
                && writers.values().all(|ws| {
                    ws.len() <= 1
                        && ws
                            .iter()
                            .all(|t| t.fate == Fate::Committed || !crashed_value_read(t))
                })
        }
    }
}

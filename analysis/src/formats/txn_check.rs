//! What every history reader checks of a transaction (`f: "txn"`, see
//! [`crate::history::txn`]) as it reads: its `value` parses as micro-ops, on the invoke and
//! on every completion, and the history's transactions all fit one workload — list-append
//! (`append` and list reads) or rw-register (`w` and single-value reads). The first
//! transaction that shows which (an `append` or a list read, a `w` or a single-value read)
//! decides; a later one that does not fit is an error naming its own line and the deciding
//! one.
//!
//! Invariant: the shape is computed from the op alone ([`shape_of`], so the JSON Lines
//! reader can compute it on all cores); only [`TxnWorkload::accept`] keeps state.

use crate::history::txn::{check_mop_shape, parse_txn, MicroOp, MopKind, MopValue, TxnModel};
use serde_json::Value;

/// What one transaction shows about its workload (it parsed as micro-ops, and does not mix
/// the two workloads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnShape {
    /// The workload the transaction shows, if any (a transaction of `null` reads shows none).
    /// A transaction fits a workload unless it shows the other one: list-append refuses
    /// exactly `w` and single-value reads, rw-register exactly `append` and list reads.
    pub shows: Option<TxnModel>,
}

/// Parses a transaction's value once; an error is the parser's sentence.
pub fn shape_of(value: &Value) -> Result<TxnShape, String> {
    let mops = parse_txn(value).map_err(|e| e.to_string())?;
    shape_of_mops(&mops)
}

/// The shape of a transaction already parsed into `mops`.
pub fn shape_of_mops(mops: &[MicroOp]) -> Result<TxnShape, String> {
    let list_read = |m: &MicroOp| m.kind == MopKind::Read && matches!(m.value, MopValue::List(_));
    let scalar_read =
        |m: &MicroOp| m.kind == MopKind::Read && matches!(m.value, MopValue::Scalar(_));
    let list_append_evidence = mops
        .iter()
        .any(|m| m.kind == MopKind::Append || list_read(m));
    let rw_register_evidence = mops
        .iter()
        .any(|m| m.kind == MopKind::Write || scalar_read(m));
    let shows = match (list_append_evidence, rw_register_evidence) {
        (true, true) => {
            let why = misfit(mops, TxnModel::ListAppend);
            return Err(format!("{why}, and it is not an rw-register transaction either (a transaction is list-append or rw-register)"));
        }
        (true, false) => Some(TxnModel::ListAppend),
        (false, true) => Some(TxnModel::RwRegister),
        (false, false) => None,
    };
    Ok(TxnShape { shows })
}

/// Why `mops` (a transaction that parses) is not one of `model`'s: the parser's sentence.
fn misfit(mops: &[MicroOp], model: TxnModel) -> String {
    mops.iter()
        .enumerate()
        .find_map(|(i, m)| check_mop_shape(i + 1, m, model).err())
        .map(|e| e.to_string())
        .unwrap_or_else(|| format!("it is not a {model} transaction"))
}

/// The workload the history's transactions have shown so far.
#[derive(Debug, Default)]
pub struct TxnWorkload {
    decided: Option<(TxnModel, usize)>,
}

impl TxnWorkload {
    /// Accepts the transaction of micro-ops `mops` read at `line`, whose shape is `shape`;
    /// the error is a sentence without location.
    pub fn accept(
        &mut self,
        shape: &TxnShape,
        mops: &[MicroOp],
        line: usize,
    ) -> Result<(), String> {
        match (self.decided, shape.shows) {
            (Some((model, first)), Some(shown)) if shown != model => Err(format!(
                "{} (the history is {model}: see line {first})",
                misfit(mops, model)
            )),
            (Some(_), _) => Ok(()),
            (None, shown) => {
                self.decided = shown.map(|m| (m, line));
                Ok(())
            }
        }
    }

    /// The workload the transactions showed, if any did.
    pub fn model(&self) -> Option<TxnModel> {
        self.decided.map(|(m, _)| m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_list_append_transaction_shows_list_append() {
        let s = shape_of(&json!([["append", 1, 2], ["r", 1, [1, 2]]])).unwrap();
        assert_eq!(s.shows, Some(TxnModel::ListAppend));
        let s = shape_of(&json!([["r", 1, null]])).unwrap();
        assert_eq!(s.shows, None, "null reads show no workload");
    }

    #[test]
    fn unknown_micro_ops_and_mixed_transactions_are_errors() {
        let e = shape_of(&json!([["incr", 1, 2]])).unwrap_err();
        assert!(e.contains("micro-op 1: unknown function \"incr\""), "{e}");
        let e = shape_of(&json!([["append", 1, 2], ["w", 1, 3]])).unwrap_err();
        assert!(
            e.contains("micro-op 2") && e.contains("not an rw-register transaction either"),
            "{e}"
        );
    }

    #[test]
    fn a_later_transaction_that_does_not_fit_names_both_lines() {
        let accept = |w: &mut TxnWorkload, v: Value, line| {
            w.accept(&shape_of(&v).unwrap(), &parse_txn(&v).unwrap(), line)
        };
        let mut w = TxnWorkload::default();
        accept(&mut w, json!([["r", 1, null]]), 1).unwrap();
        accept(&mut w, json!([["append", 3, 1]]), 2).unwrap();
        assert_eq!(w.model(), Some(TxnModel::ListAppend));
        let e = accept(&mut w, json!([["r", 3, 5]]), 3).unwrap_err();
        assert!(
            e.contains("read value of key 3 is not a list: 5")
                && e.contains("list-append: see line 2"),
            "{e}"
        );
        let mut w = TxnWorkload::default();
        accept(&mut w, json!([["w", 1, 1], ["r", 1, 1]]), 1).unwrap();
        let e = accept(&mut w, json!([["append", 1, 2]]), 5).unwrap_err();
        assert!(e.contains("rw-register: see line 1"), "{e}");
    }
}

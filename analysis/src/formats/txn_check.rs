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

use crate::history::txn::{parse_txn, parse_txn_as, MopKind, MopValue, TxnModel};
use serde_json::Value;

/// What one transaction shows about its workload, or why it does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnShape {
    /// The workload the transaction shows, if any (a transaction of `null` reads shows none).
    pub shows: Option<TxnModel>,
    /// Why it is not a list-append transaction (None: it is one).
    pub not_list_append: Option<String>,
    /// Why it is not an rw-register transaction (None: it is one).
    pub not_rw_register: Option<String>,
}

impl TxnShape {
    fn misfit(&self, model: TxnModel) -> Option<&str> {
        match model {
            TxnModel::ListAppend => self.not_list_append.as_deref(),
            TxnModel::RwRegister => self.not_rw_register.as_deref(),
        }
    }
}

/// Parses a transaction's value; an error is the parser's sentence.
pub fn shape_of(value: &Value) -> Result<TxnShape, String> {
    let mops = parse_txn(value).map_err(|e| e.to_string())?;
    let list_append_evidence = mops.iter().any(|m| m.kind == MopKind::Append || matches!(m.value, MopValue::List(_)) && m.kind == MopKind::Read);
    let rw_register_evidence = mops.iter().any(|m| m.kind == MopKind::Write || matches!(m.value, MopValue::Scalar(_)) && m.kind == MopKind::Read);
    let misfit = |model| parse_txn_as(value, model).err().map(|e| e.to_string());
    let not_list_append = if rw_register_evidence { misfit(TxnModel::ListAppend) } else { None };
    let not_rw_register = if list_append_evidence { misfit(TxnModel::RwRegister) } else { None };
    if let (Some(a), Some(_)) = (&not_list_append, &not_rw_register) {
        return Err(format!("{a}, and it is not an rw-register transaction either (a transaction is list-append or rw-register)"));
    }
    let shows = match (list_append_evidence, rw_register_evidence) {
        (true, _) => Some(TxnModel::ListAppend),
        (false, true) => Some(TxnModel::RwRegister),
        (false, false) => None,
    };
    Ok(TxnShape { shows, not_list_append, not_rw_register })
}

/// The workload the history's transactions have shown so far.
#[derive(Debug, Default)]
pub struct TxnWorkload {
    decided: Option<(TxnModel, usize)>,
}

impl TxnWorkload {
    /// Accepts the transaction read at `line`; the error is a sentence without location.
    pub fn accept(&mut self, shape: &TxnShape, line: usize) -> Result<(), String> {
        match self.decided {
            Some((model, first)) => match shape.misfit(model) {
                Some(why) => Err(format!("{why} (the history is {model}: see line {first})")),
                None => Ok(()),
            },
            None => {
                self.decided = shape.shows.map(|m| (m, line));
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
        assert_eq!(s.not_list_append, None);
        let s = shape_of(&json!([["r", 1, null]])).unwrap();
        assert_eq!(s.shows, None, "null reads show no workload");
    }

    #[test]
    fn unknown_micro_ops_and_mixed_transactions_are_errors() {
        let e = shape_of(&json!([["incr", 1, 2]])).unwrap_err();
        assert!(e.contains("micro-op 1: unknown function \"incr\""), "{e}");
        let e = shape_of(&json!([["append", 1, 2], ["w", 1, 3]])).unwrap_err();
        assert!(e.contains("micro-op 2") && e.contains("not an rw-register transaction either"), "{e}");
    }

    #[test]
    fn a_later_transaction_that_does_not_fit_names_both_lines() {
        let mut w = TxnWorkload::default();
        w.accept(&shape_of(&json!([["r", 1, null]])).unwrap(), 1).unwrap();
        w.accept(&shape_of(&json!([["append", 3, 1]])).unwrap(), 2).unwrap();
        assert_eq!(w.model(), Some(TxnModel::ListAppend));
        let e = w.accept(&shape_of(&json!([["r", 3, 5]])).unwrap(), 3).unwrap_err();
        assert!(e.contains("read value of key 3 is not a list: 5") && e.contains("list-append: see line 2"), "{e}");
        let mut w = TxnWorkload::default();
        w.accept(&shape_of(&json!([["w", 1, 1], ["r", 1, 1]])).unwrap(), 1).unwrap();
        let e = w.accept(&shape_of(&json!([["append", 1, 2]])).unwrap(), 5).unwrap_err();
        assert!(e.contains("rw-register: see line 1"), "{e}");
    }
}

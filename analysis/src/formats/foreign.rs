//! Turning the op records of foreign formats (Jepsen logs, Knossos EDN, Porcupine kv)
//! into faultline [`Op`]s, with the same validation as the native reader.
//!
//! Conventions applied here, documented in `docs/history-format.md`:
//! - `index` is the position in the history and `time` the position too when the format
//!   has none;
//! - a `fail`/`info` completion whose value is a keyword (`:timed-out`) carries that
//!   keyword as its `error`, and the value of its invoke (reads: `null`);
//! - nemesis invocations are dropped (the nemesis' completion describes the fault).

use super::edn::Edn;
use super::txn_check::shape_of_mops;
use super::validate::{is_client_txn, parse_txn_value, Validator};
use super::{FormatError, ParseReport, TxnForm};
use crate::history::txn::{txn_to_json, MicroOp};
use crate::history::txn_table::TxnTable;
use crate::history::{History, Op, OpType, Process};
use rustc_hash::FxHashMap;
use serde_json::Value;

/// One op record as a foreign format states it.
#[derive(Debug, Clone)]
pub struct ForeignOp {
    pub process: Process,
    pub kind: OpType,
    pub f: String,
    pub key: Option<String>,
    pub value: Edn,
    pub error: Option<String>,
    pub time: Option<u64>,
}

/// Accumulates ops, validating each one; a client transaction's micro-ops go to the
/// history's compact table when the form is [`TxnForm::Compact`] (its op's `value` left
/// `null`), else back into its `value` as JSON.
pub struct ForeignBuilder {
    source: String,
    validator: Validator,
    /// Per client process, the position of its pending invoke.
    invokes: FxHashMap<u64, usize>,
    ops: Vec<Op>,
    form: TxnForm,
    table: TxnTable,
    pub report: ParseReport,
}

impl ForeignBuilder {
    pub fn new(source: &str) -> Self {
        Self::with_form(source, TxnForm::Json)
    }

    /// A builder keeping client transactions in `form`.
    pub fn with_form(source: &str, form: TxnForm) -> Self {
        ForeignBuilder {
            source: source.to_string(),
            validator: Validator::new(),
            invokes: FxHashMap::default(),
            ops: Vec::new(),
            form,
            table: TxnTable::default(),
            report: ParseReport::default(),
        }
    }

    pub fn error(&self, line: usize, message: impl Into<String>) -> FormatError {
        FormatError::new(&self.source, line, message)
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn push(&mut self, line: usize, rec: ForeignOp) -> Result<(), FormatError> {
        self.push_parsed(line, rec, None)
    }

    /// [`Self::push`] of a record whose `value` was read straight into micro-ops `mops`
    /// (the record's own `value` is then ignored): the same op as the record with the
    /// micro-ops' JSON as its value.
    pub fn push_parsed(
        &mut self,
        line: usize,
        rec: ForeignOp,
        mops: Option<Vec<MicroOp>>,
    ) -> Result<(), FormatError> {
        if rec.process == Process::Nemesis && rec.kind == OpType::Invoke {
            return Ok(());
        }
        let index = self.ops.len() as u64;
        let (value, error) = match &mops {
            Some(_) => (Value::Null, rec.error),
            None => self.completion_value(&rec),
        };
        let mut op = Op {
            index,
            kind: rec.kind,
            process: rec.process,
            f: rec.f.into(),
            key: rec.key.map(Into::into),
            value,
            time: rec.time.unwrap_or(index),
            node: None,
            error: error.map(Into::into),
            meta: None,
        };
        let txn = match (is_client_txn(&op), mops) {
            (true, Some(mops)) => Some(shape_of_mops(&mops).map(|shape| (mops, shape))),
            (true, None) => Some(parse_txn_value(&op.value)),
            (false, Some(mops)) => {
                op.value = txn_to_json(&mops);
                None
            }
            (false, None) => None,
        };
        let accepted = self
            .validator
            .accept_parsed(&op, line, txn.as_ref())
            .map_err(|m| self.error(line, m))?;
        if let Some(mops) = accepted {
            match self.form {
                TxnForm::Compact => {
                    self.table.push(self.ops.len(), op.index, mops);
                    op.value = Value::Null;
                }
                TxnForm::Json if op.value.is_null() => op.value = txn_to_json(mops),
                TxnForm::Json => {}
            }
        }
        if let Process::Client(p) = op.process {
            if op.kind == OpType::Invoke {
                self.invokes.insert(p, self.ops.len());
            } else {
                self.invokes.remove(&p);
            }
        }
        self.ops.push(op);
        self.report
            .op_lines
            .push(u32::try_from(line).unwrap_or(u32::MAX));
        Ok(())
    }

    /// The JSON value and error of a record, applying the keyword-as-error convention.
    fn completion_value(&self, rec: &ForeignOp) -> (Value, Option<String>) {
        let indeterminate_or_failed = matches!(rec.kind, OpType::Fail | OpType::Info);
        if let (true, Edn::Keyword(kw), Process::Client(p)) =
            (indeterminate_or_failed, &rec.value, rec.process)
        {
            let value = if is_read(&rec.f) {
                Value::Null
            } else {
                self.invokes
                    .get(&p)
                    .map_or(Value::Null, |&position| self.value_at(position))
            };
            return (value, Some(rec.error.clone().unwrap_or_else(|| kw.clone())));
        }
        (rec.value.to_json(), rec.error.clone())
    }

    /// The JSON value of the op at `position`, from the compact table if it is there.
    fn value_at(&self, position: usize) -> Value {
        let op = &self.ops[position];
        self.table
            .value_json(position, op.index)
            .unwrap_or_else(|| op.value.clone())
    }

    pub fn finish(mut self) -> (History, ParseReport) {
        self.report.ops = self.ops.len();
        let history = match self.form {
            TxnForm::Json => History::new(self.ops),
            TxnForm::Compact => History::with_txn_table(self.ops, self.table),
        };
        (history, self.report)
    }
}

fn is_read(f: &str) -> bool {
    crate::ops::is_single_key_read(f)
}

/// Reads a Jepsen op map (`{:process 3, :type :ok, :f :read, :value 4}`) into a record.
pub fn op_from_map(map: &Edn) -> Result<ForeignOp, String> {
    if !matches!(map, Edn::Map(_)) {
        return Err(format!("expected an op map, found a {}", map.type_name()));
    }
    let process = match map.get("process") {
        Some(p) => process_of(p)?,
        None => return Err("op map has no :process".into()),
    };
    let kind = match map.get("type") {
        Some(t) => op_type_of(t)?,
        None => return Err("op map has no :type".into()),
    };
    let f = match map.get("f") {
        Some(Edn::Keyword(s) | Edn::Str(s) | Edn::Symbol(s)) => s.clone(),
        Some(other) => return Err(format!(":f must be a keyword, found {other}")),
        None => return Err("op map has no :f".into()),
    };
    let key = match map.get("key") {
        None | Some(Edn::Nil) => None,
        Some(Edn::Str(s) | Edn::Keyword(s) | Edn::Symbol(s)) => Some(s.clone()),
        Some(Edn::Int(i)) => Some(i.to_string()),
        Some(other) => {
            return Err(format!(
                ":key must be a string, keyword or integer, found {other}"
            ))
        }
    };
    let time = match map.get("time") {
        None | Some(Edn::Nil) => None,
        Some(Edn::Int(t)) if *t >= 0 => Some(*t as u64),
        Some(other) => {
            return Err(format!(
                ":time must be a non-negative integer, found {other}"
            ))
        }
    };
    let error = match map.get("error") {
        None | Some(Edn::Nil) => None,
        Some(Edn::Keyword(k) | Edn::Str(k)) => Some(k.clone()),
        Some(other) => Some(other.to_string()),
    };
    let value = map.get("value").cloned().unwrap_or(Edn::Nil);
    Ok(ForeignOp {
        process,
        kind,
        f,
        key,
        value,
        error,
        time,
    })
}

/// A Jepsen process: a non-negative number or `:nemesis`.
pub fn process_of(v: &Edn) -> Result<Process, String> {
    match v {
        Edn::Int(p) if *p >= 0 => Ok(Process::Client(*p as u64)),
        Edn::Keyword(k) | Edn::Str(k) if k == "nemesis" => Ok(Process::Nemesis),
        Edn::Keyword(k) | Edn::Str(k) if k == "watcher" => Ok(Process::Watcher),
        other => Err(format!(
            "unknown process {other}: expected a non-negative number or :nemesis"
        )),
    }
}

/// A Jepsen op type keyword.
pub fn op_type_of(v: &Edn) -> Result<OpType, String> {
    match v {
        Edn::Keyword(k) | Edn::Str(k) => match k.as_str() {
            "invoke" => Ok(OpType::Invoke),
            "ok" => Ok(OpType::Ok),
            "fail" => Ok(OpType::Fail),
            "info" => Ok(OpType::Info),
            _ => Err(format!(
                "unknown op type :{k}: expected :invoke, :ok, :fail or :info"
            )),
        },
        other => Err(format!(
            "unknown op type {other}: expected :invoke, :ok, :fail or :info"
        )),
    }
}

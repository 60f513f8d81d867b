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
use super::validate::Validator;
use super::{FormatError, ParseReport};
use crate::history::{History, Op, OpType, Process};
use rustc_hash::FxHashMap;

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

/// Accumulates ops, validating each one.
pub struct ForeignBuilder {
    source: String,
    validator: Validator,
    invoke_values: FxHashMap<u64, serde_json::Value>,
    ops: Vec<Op>,
    pub report: ParseReport,
}

impl ForeignBuilder {
    pub fn new(source: &str) -> Self {
        ForeignBuilder {
            source: source.to_string(),
            validator: Validator::new(),
            invoke_values: FxHashMap::default(),
            ops: Vec::new(),
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
        if rec.process == Process::Nemesis && rec.kind == OpType::Invoke {
            return Ok(());
        }
        let index = self.ops.len() as u64;
        let (value, error) = self.completion_value(&rec);
        let op = Op {
            index,
            kind: rec.kind,
            process: rec.process,
            f: rec.f,
            key: rec.key,
            value,
            time: rec.time.unwrap_or(index),
            node: None,
            error,
            meta: None,
        };
        self.validator
            .accept(&op, line)
            .map_err(|m| self.error(line, m))?;
        if let Process::Client(p) = op.process {
            if op.kind == OpType::Invoke {
                self.invoke_values.insert(p, op.value.clone());
            } else {
                self.invoke_values.remove(&p);
            }
        }
        self.ops.push(op);
        self.report
            .op_lines
            .push(u32::try_from(line).unwrap_or(u32::MAX));
        Ok(())
    }

    /// The JSON value and error of a record, applying the keyword-as-error convention.
    fn completion_value(&self, rec: &ForeignOp) -> (serde_json::Value, Option<String>) {
        let indeterminate_or_failed = matches!(rec.kind, OpType::Fail | OpType::Info);
        if let (true, Edn::Keyword(kw), Process::Client(p)) =
            (indeterminate_or_failed, &rec.value, rec.process)
        {
            let value = if is_read(&rec.f) {
                serde_json::Value::Null
            } else {
                self.invoke_values
                    .get(&p)
                    .cloned()
                    .unwrap_or(serde_json::Value::Null)
            };
            return (value, Some(rec.error.clone().unwrap_or_else(|| kw.clone())));
        }
        (rec.value.to_json(), rec.error.clone())
    }

    pub fn finish(mut self) -> (History, ParseReport) {
        self.report.ops = self.ops.len();
        (History::new(self.ops), self.report)
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

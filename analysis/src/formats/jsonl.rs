//! faultline's native history format: JSON Lines, one [`Op`] per line (see
//! `docs/history-format.md`).
//!
//! [`JsonlReader`] streams ops from any `BufRead` one line at a time, validating as it
//! goes. A line that does not parse is an error naming the source and line. The last line
//! of the input, when it has no newline, is never read: a crash in the middle of a write
//! leaves such a line, and it is dropped — whatever it parses to — and reported as a
//! warning in the [`ParseReport`]. A complete (newline-terminated) line that does not
//! parse is an error wherever it is.
//! A client transaction's `value` is read straight into micro-ops ([`super::txn_json`]);
//! with [`TxnForm::Compact`] they go to the history's [`TxnTable`] and the op's `value` is
//! left `null`, with [`TxnForm::Json`] the op gets its `value` back as JSON.
//! [`JsonlWriter`] appends one complete line per op and flushes it, so a history can be
//! read (and checked) while the test that writes it is still running.

mod parallel;

use super::txn_check::shape_of_mops;
use super::txn_json::mops_of_json;
use super::validate::{parse_txn_value, ParsedTxn, Validator};
use super::{FormatError, ParseReport, TxnForm};
use crate::history::txn::{txn_to_json, TXN};
use crate::history::txn_table::TxnTable;
use crate::history::{CommitMeta, History, Op, OpType, Process, Text};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Write};
use std::path::Path;

/// One line as written on disk. `index` and `time` may be omitted in hand-written
/// histories; they default to the previous index + 1 and to the index.
#[derive(Deserialize)]
struct LineOp<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(rename = "type")]
    kind: OpType,
    process: Process,
    f: Text,
    #[serde(default)]
    key: Option<Text>,
    /// The text of `value`, parsed once `f` and `process` are known (`null` reads as absent).
    #[serde(borrow, default)]
    value: Option<&'a RawValue>,
    #[serde(default)]
    time: Option<u64>,
    #[serde(default)]
    node: Option<Text>,
    #[serde(default)]
    error: Option<Text>,
    #[serde(default)]
    meta: Option<Box<CommitMeta>>,
}

/// An op as read from its line, before the sequential pass fills in defaults.
pub(crate) struct PendingOp {
    op: Op,
    index_given: bool,
    time_given: bool,
    /// A client transaction's micro-ops and shape, parsed with the line (on all cores).
    /// When they parsed straight from the text, `op.value` is `null`.
    txn: Option<ParsedTxn>,
}

impl LineOp<'_> {
    fn into_pending(self) -> Result<PendingOp, String> {
        let (index_given, time_given) = (self.index.is_some(), self.time.is_some());
        let index = self.index.unwrap_or(0);
        let client_txn = self.process.client().is_some() && self.f == TXN;
        let (value, txn) = parse_value(self.value, client_txn)?;
        let op = Op {
            index,
            kind: self.kind,
            process: self.process,
            f: self.f,
            key: self.key,
            value,
            time: self.time.unwrap_or(index),
            node: self.node,
            error: self.error,
            meta: self.meta,
        };
        Ok(PendingOp {
            op,
            index_given,
            time_given,
            txn,
        })
    }
}

/// An op's `value` (left `null` for a transaction that parses straight from its text) and,
/// for a client transaction, its parse.
fn parse_value(
    raw: Option<&RawValue>,
    client_txn: bool,
) -> Result<(Value, Option<ParsedTxn>), String> {
    if client_txn {
        if let Some(mops) = raw.and_then(|r| mops_of_json(r.get())) {
            let parsed = shape_of_mops(&mops).map(|shape| (mops, shape));
            return Ok((Value::Null, Some(parsed)));
        }
    }
    let value = match raw {
        Some(r) => serde_json::from_str(r.get()).map_err(|e| describe_json_error(&e))?,
        None => Value::Null,
    };
    let txn = client_txn.then(|| parse_txn_value(&value));
    Ok((value, txn))
}

/// Turns parsed lines into validated ops, in order: assigns default indices and times,
/// runs the structural checks and records line numbers and warnings.
#[derive(Debug)]
pub(crate) struct Assembler {
    source: String,
    validator: Validator,
    next_index: u64,
    last_time: u64,
    time_warnings: usize,
    report: ParseReport,
    form: TxnForm,
    /// The transactions' micro-ops, with [`TxnForm::Compact`].
    table: TxnTable,
}

impl Assembler {
    pub(crate) fn new(source: &str, form: TxnForm) -> Self {
        Assembler {
            source: source.to_string(),
            validator: Validator::new(),
            next_index: 0,
            last_time: 0,
            time_warnings: 0,
            report: ParseReport::default(),
            form,
            table: TxnTable::default(),
        }
    }

    /// The history of `ops` (all pushed through this assembler) and the report.
    pub(crate) fn finish(self, ops: Vec<Op>) -> (History, ParseReport) {
        let history = match self.form {
            TxnForm::Json => History::new(ops),
            TxnForm::Compact => History::with_txn_table(ops, self.table),
        };
        (history, self.report)
    }

    /// Drops the line numbers recorded so far (a streaming reader keeps no per-op state).
    pub(crate) fn forget_lines(&mut self) {
        self.report.op_lines.clear();
    }

    pub(crate) fn error(&self, line: usize, message: impl Into<String>) -> FormatError {
        FormatError::new(&self.source, line, message)
    }

    pub(crate) fn push(&mut self, line: usize, pending: PendingOp) -> Result<Op, FormatError> {
        let PendingOp {
            mut op,
            index_given,
            time_given,
            txn,
        } = pending;
        if !index_given {
            op.index = self.next_index;
        }
        if !time_given {
            op.time = op.index;
        }
        let mops = self
            .validator
            .accept_parsed(&op, line, txn.as_ref())
            .map_err(|m| self.error(line, m))?;
        if let Some(mops) = mops {
            match self.form {
                TxnForm::Compact => {
                    self.table.push(self.report.ops, op.index, mops);
                    op.value = Value::Null;
                }
                TxnForm::Json if op.value.is_null() => op.value = txn_to_json(mops),
                TxnForm::Json => {}
            }
        }
        self.next_index = op.index + 1;
        if op.time < self.last_time {
            self.warn_time_backwards(line, op.time);
        }
        self.last_time = self.last_time.max(op.time);
        self.report.ops += 1;
        self.report
            .op_lines
            .push(u32::try_from(line).unwrap_or(u32::MAX));
        Ok(op)
    }

    /// Records that the last line, `line`, has no newline and was dropped unread: it may
    /// have been cut short by a writer that crashed mid-line.
    pub(crate) fn dropped_unterminated_last_line(&mut self, line: usize) {
        self.report.truncated_last_line = true;
        self.report
            .warnings
            .push(super::unterminated_last_line_warning(&self.source, line));
    }

    fn warn_time_backwards(&mut self, line: usize, time: u64) {
        const MAX_TIME_WARNINGS: usize = 5;
        self.time_warnings += 1;
        if self.time_warnings <= MAX_TIME_WARNINGS {
            self.report.warnings.push(format!(
                "{}:{line}: time goes backwards ({time} after {})",
                self.source, self.last_time
            ));
        }
    }
}

/// Streams validated ops from JSON Lines. Iterate it; after the last item,
/// [`JsonlReader::report`] holds the warnings.
pub struct JsonlReader<R> {
    input: R,
    line: usize,
    buf: Vec<u8>,
    asm: Assembler,
    finished: bool,
}

impl<R: BufRead> JsonlReader<R> {
    /// `source` names the input in errors and warnings (usually the file path).
    pub fn new(input: R, source: &str) -> Self {
        JsonlReader {
            input,
            line: 0,
            buf: Vec::with_capacity(256),
            asm: Assembler::new(source, TxnForm::Json),
            finished: false,
        }
    }

    pub fn report(&self) -> &ParseReport {
        &self.asm.report
    }

    pub fn into_report(self) -> ParseReport {
        self.asm.report
    }

    /// Reads the next raw line into `buf`; false at the end of the input.
    fn read_line(&mut self) -> Result<bool, FormatError> {
        self.buf.clear();
        let n = self
            .input
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| self.asm.error(self.line + 1, format!("read error: {e}")))?;
        if n > 0 {
            self.line += 1;
        }
        Ok(n > 0)
    }

    fn next_op(&mut self) -> Result<Option<Op>, FormatError> {
        loop {
            if !self.read_line()? {
                return Ok(None);
            }
            if is_blank(&self.buf) {
                continue;
            }
            let line = self.line;
            // Without its newline the line is the input's last, perhaps cut short: never
            // trusted, even when it parses.
            if self.buf.last() != Some(&b'\n') {
                self.asm.dropped_unterminated_last_line(line);
                return Ok(None);
            }
            return match parse_line(&self.buf) {
                Ok(pending) => self.asm.push(line, pending).map(Some),
                Err(message) => Err(self.asm.error(line, message)),
            };
        }
    }
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

impl<R: BufRead> Iterator for JsonlReader<R> {
    type Item = Result<Op, FormatError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.finished {
            return None;
        }
        let item = self.next_op().transpose();
        if !matches!(item, Some(Ok(_))) {
            self.finished = true;
        }
        item
    }
}

pub(crate) fn parse_line(bytes: &[u8]) -> Result<PendingOp, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "invalid UTF-8".to_string())?;
    serde_json::from_str::<LineOp>(text)
        .map_err(|e| describe_json_error(&e))?
        .into_pending()
}

/// serde_json's message with the column, minus its own "at line 1" (we know the line).
fn describe_json_error(e: &serde_json::Error) -> String {
    let mut text = e.to_string();
    if let Some(cut) = text.rfind(" at line ") {
        text.truncate(cut);
    }
    format!("{text} (column {})", e.column())
}

/// Reads a whole JSON Lines history held in memory, parsing its lines on all cores; the
/// same result (ops, errors, warnings) as [`read_history`].
pub fn read_history_bytes(
    bytes: &[u8],
    source: &str,
) -> Result<(History, ParseReport), FormatError> {
    read_history_parallel(bytes, source)
}

/// Reads a whole JSON Lines history from `input` in large batches whose lines are parsed
/// on all cores; the same result as [`read_history`], much faster on big histories, and
/// without holding the whole text in memory.
pub fn read_history_parallel<R: io::Read>(
    input: R,
    source: &str,
) -> Result<(History, ParseReport), FormatError> {
    read_history_parallel_as(input, source, TxnForm::Json)
}

/// [`read_history_parallel`], keeping the transactions in `form`.
pub fn read_history_parallel_as<R: io::Read>(
    input: R,
    source: &str,
    form: TxnForm,
) -> Result<(History, ParseReport), FormatError> {
    let (ops, asm) = parallel::read(input, Assembler::new(source, form))?;
    Ok(asm.finish(ops))
}

/// Streams a JSON Lines history: every op, validated as [`read_history_parallel`] validates
/// it (transactions as JSON), is handed to `each` in order, and nothing is kept per op, so
/// memory follows one batch of text, not the history. The report has no `op_lines`. An
/// error `each` returns ends the stream as an error naming that op's line.
pub fn stream_history<R: io::Read>(
    input: R,
    source: &str,
    each: impl FnMut(Op) -> Result<(), String>,
) -> Result<ParseReport, FormatError> {
    stream_history_batched(input, source, parallel::BATCH_BYTES, each)
}

/// [`stream_history`] holding at most about `batch_bytes` of text at a time.
pub fn stream_history_batched<R: io::Read>(
    input: R,
    source: &str,
    batch_bytes: usize,
    each: impl FnMut(Op) -> Result<(), String>,
) -> Result<ParseReport, FormatError> {
    let asm = Assembler::new(source, TxnForm::Json);
    let asm = parallel::for_each(input, asm, batch_bytes.max(1), each)?;
    Ok(asm.finish(Vec::new()).1)
}

/// Reads a whole JSON Lines history.
pub fn read_history<R: BufRead>(
    input: R,
    source: &str,
) -> Result<(History, ParseReport), FormatError> {
    let mut reader = JsonlReader::new(input, source);
    let mut ops = Vec::new();
    for op in reader.by_ref() {
        ops.push(op?);
    }
    Ok((History::new(ops), reader.into_report()))
}

/// Appends ops to a JSON Lines history, one whole line per write, flushed at once so a
/// concurrent reader never sees a partial line except after a crash.
pub struct JsonlWriter<W: Write> {
    out: W,
    line: Vec<u8>,
}

impl JsonlWriter<File> {
    /// Opens `path` for appending (creating it if needed).
    pub fn append_to(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(JsonlWriter::new(file))
    }

    /// Forces written lines to stable storage (fsync).
    pub fn sync(&mut self) -> io::Result<()> {
        self.out.sync_data()
    }
}

impl<W: Write> JsonlWriter<W> {
    pub fn new(out: W) -> Self {
        JsonlWriter {
            out,
            line: Vec::with_capacity(256),
        }
    }

    /// Writes `op` as one line and flushes it.
    pub fn write_op(&mut self, op: &Op) -> io::Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, op).map_err(io::Error::other)?;
        self.line.push(b'\n');
        self.out.write_all(&self.line)?;
        self.out.flush()
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Writes a whole history to `path` (replacing it); transactions held in the history's
/// compact table are written as their JSON.
pub fn write_history(path: &Path, history: &History) -> io::Result<()> {
    let mut out = io::BufWriter::new(File::create(path)?);
    for (position, op) in history.ops.iter().enumerate() {
        match history.txn_value(position) {
            std::borrow::Cow::Borrowed(_) => serde_json::to_writer(&mut out, op),
            std::borrow::Cow::Owned(value) => serde_json::to_writer(
                &mut out,
                &Op {
                    value,
                    ..op.clone()
                },
            ),
        }
        .map_err(io::Error::other)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<(History, ParseReport), FormatError> {
        read_history(text.as_bytes(), "h.jsonl")
    }

    const GOOD: &str = r#"{"index":0,"type":"invoke","process":0,"f":"write","key":"a","value":1,"time":10}
{"index":1,"type":"ok","process":0,"f":"write","key":"a","value":1,"time":20,"meta":{"group":1,"term":2}}
{"index":2,"type":"info","process":"nemesis","f":"start-partition","value":{"targets":["n1"]},"time":25}
"#;

    #[test]
    fn reads_ops_with_all_fields() {
        let (h, report) = read(GOOD).unwrap();
        assert_eq!(h.len(), 3);
        assert_eq!(h.ops[1].meta.as_ref().and_then(|m| m.term), Some(2));
        assert_eq!(h.ops[2].process, Process::Nemesis);
        assert_eq!(report.ops, 3);
        assert!(report.warnings.is_empty());
    }

    #[test]
    fn truncated_last_line_is_a_warning_not_an_error() {
        let text = format!("{GOOD}{{\"index\":3,\"type\":\"inv");
        let (h, report) = read(&text).unwrap();
        assert_eq!(h.len(), 3);
        assert!(report.truncated_last_line);
        assert!(
            report.warnings[0].starts_with("h.jsonl:4: dropped"),
            "{:?}",
            report.warnings
        );
    }

    #[test]
    fn complete_bad_last_line_is_an_error_not_a_warning() {
        let text = GOOD.replacen("\"type\":\"info\"", "\"type\":\"okay\"", 1);
        let e = read(&text).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("unknown variant `okay`"), "{e}");
        let e = read(&format!(
            "{GOOD}{{\"type\":\"invoke\",\"process\":0,\"f\"\n\n\n"
        ))
        .unwrap_err();
        assert_eq!(
            e.line, 4,
            "blank lines after it do not make a complete line a cut one"
        );
    }

    #[test]
    fn bad_line_in_the_middle_is_an_error_with_line() {
        let text = GOOD.replacen("\"type\":\"ok\"", "\"type\":\"okay\"", 1);
        let e = read(&text).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("unknown variant `okay`"), "{e}");
        assert!(e.to_string().starts_with("h.jsonl:2: "), "{e}");
    }

    #[test]
    fn index_and_time_default_to_position() {
        let text = "{\"type\":\"invoke\",\"process\":3,\"f\":\"read\"}\n\n{\"type\":\"ok\",\"process\":3,\"f\":\"read\",\"value\":null}\n";
        let (h, _) = read(text).unwrap();
        assert_eq!((h.ops[0].index, h.ops[1].index), (0, 1));
        assert_eq!(h.ops[1].time, 1);
    }

    #[test]
    fn unknown_process_is_a_clear_error() {
        let e = read("{\"index\":0,\"type\":\"invoke\",\"process\":\"bob\",\"f\":\"read\"}\n{}\n")
            .unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.message.contains("unknown process \"bob\""), "{e}");
    }

    #[test]
    fn writer_round_trips_and_flushes_each_line() {
        let (h, _) = read(GOOD).unwrap();
        let mut w = JsonlWriter::new(Vec::new());
        for op in &h.ops {
            w.write_op(op).unwrap();
        }
        let bytes = w.into_inner();
        assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 3);
        let (again, _) = read_history(&bytes[..], "w").unwrap();
        assert_eq!(again, h);
    }

    #[test]
    fn transactions_are_read_and_bad_ones_name_their_line() {
        let good = r#"{"type":"invoke","process":0,"f":"txn","value":[["append",1,2],["r",1,null]]}
{"type":"ok","process":0,"f":"txn","value":[["append",1,2],["r",1,[1,2]]]}
"#;
        let (h, _) = read(good).unwrap();
        assert_eq!(
            h.ops[1].value,
            serde_json::json!([["append", 1, 2], ["r", 1, [1, 2]]])
        );
        let unknown = r#"{"type":"invoke","process":0,"f":"txn","value":[["r",1,null]]}
{"type":"invoke","process":1,"f":"txn","value":[["incr",1,2]]}
"#;
        let e = read(unknown).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            e.to_string()
                .contains("micro-op 1: unknown function \"incr\""),
            "{e}"
        );
        let not_a_list = r#"{"type":"invoke","process":0,"f":"txn","value":[["append",3,1],["r",3,null]]}
{"type":"ok","process":0,"f":"txn","value":[["append",3,1],["r",3,5]]}
"#;
        let e = read(not_a_list).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            e.to_string()
                .contains("read value of key 3 is not a list: 5"),
            "{e}"
        );
        let orphan = "{\"type\":\"ok\",\"process\":4,\"f\":\"txn\",\"value\":[[\"r\",1,[]]]}\n";
        let e = read(orphan).unwrap_err();
        assert!(e.to_string().contains("no pending invoke"), "{e}");
        // A last line without a newline is never trusted, whatever it holds: dropped, not judged.
        let last_line_without_newline =
            "{\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"x\",1,2]]}";
        let (h, report) = read(last_line_without_newline).expect("the cut line is dropped");
        assert!(
            h.ops.is_empty() && !report.warnings.is_empty(),
            "{report:?}"
        );
    }
}

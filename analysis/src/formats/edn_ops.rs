//! Knossos / Jepsen EDN histories: a vector (or list) of op maps, possibly with `;`
//! comments, e.g. `[{:process 0, :type :invoke, :f :write, :value 3} ...]`. A file of
//! top-level op maps without the surrounding vector is read too.
//!
//! A file cut short inside its last op (or missing the closing bracket) keeps the ops
//! before it, with a warning — the same tolerance as the JSON Lines reader.

use super::edn::{Edn, EdnError, EdnReader, FastOp, FastValue};
use super::foreign::{op_from_map, ForeignBuilder, ForeignOp};
use super::{FormatError, ParseReport, TxnForm};
use crate::history::History;

pub fn parse(text: &str, source: &str) -> Result<(History, ParseReport), FormatError> {
    parse_as(text, source, TxnForm::Json)
}

/// [`parse`], keeping client transactions in `form`.
pub fn parse_as(
    text: &str,
    source: &str,
    form: TxnForm,
) -> Result<(History, ParseReport), FormatError> {
    parse_with(text, source, form, true)
}

/// `fast`: try the fast path for each op form (false only to test that it changes nothing).
fn parse_with(
    text: &str,
    source: &str,
    form: TxnForm,
    fast: bool,
) -> Result<(History, ParseReport), FormatError> {
    let mut builder = ForeignBuilder::with_form(source, form);
    let mut reader = EdnReader::new(text);
    let edn_error = |b: &ForeignBuilder, e: EdnError| b.error(e.line, e.message);
    match reader
        .open_collection()
        .map_err(|e| edn_error(&builder, e))?
    {
        Some(close) => {
            while let Some(item) = next_op(&mut reader, Some(close), fast) {
                match item {
                    Ok((line, op)) => push_op(&mut builder, line, op)?,
                    Err(e) if e.at_end_of_input => {
                        tolerate_truncation(&mut builder, &e);
                        return Ok(builder.finish());
                    }
                    Err(e) => return Err(edn_error(&builder, e)),
                }
            }
            if reader.has_more().map_err(|e| edn_error(&builder, e))? {
                let line = reader.line();
                return Err(builder.error(
                    line,
                    "unexpected text after the closing bracket of the history",
                ));
            }
        }
        None => {
            while let Some(item) = next_op(&mut reader, None, fast) {
                match item {
                    Ok((line, op)) => push_op(&mut builder, line, op)?,
                    Err(e) if e.at_end_of_input => {
                        tolerate_truncation(&mut builder, &e);
                        break;
                    }
                    Err(e) => return Err(edn_error(&builder, e)),
                }
            }
        }
    }
    Ok(builder.finish())
}

/// An op form read either way: by the fast path, or as a generic form.
enum OpForm<'a> {
    Fast(FastOp<'a>),
    Generic(Edn),
}

/// The next op form of the top-level collection closed by `close` (`None`: of the file's
/// top-level forms), with the line it starts on; the fast path first.
fn next_op<'a>(
    reader: &mut EdnReader<'a>,
    close: Option<char>,
    fast: bool,
) -> Option<Result<(usize, OpForm<'a>), EdnError>> {
    let depth = usize::from(close.is_some());
    if let Some((line, op)) = fast.then(|| reader.read_op_fast(depth)).flatten() {
        return Some(Ok((line, OpForm::Fast(op))));
    }
    let item = match close {
        Some(close) => reader.next_element(close),
        None => reader.next_form(),
    };
    item.map(|r| r.map(|(line, form)| (line, OpForm::Generic(form))))
}

fn push_op(builder: &mut ForeignBuilder, line: usize, op: OpForm<'_>) -> Result<(), FormatError> {
    match op {
        OpForm::Generic(form) => {
            let rec = op_from_map(&form).map_err(|m| builder.error(line, m))?;
            builder.push(line, rec)
        }
        OpForm::Fast(op) => {
            let (value, mops) = match op.value {
                FastValue::Mops(mops) => (Edn::Nil, Some(mops)),
                FastValue::Edn(value) => (value, None),
            };
            let rec = ForeignOp {
                process: op.process,
                kind: op.kind,
                f: op.f.to_string(),
                key: op.key,
                value,
                error: op.error.map(str::to_string),
                time: op.time,
            };
            builder.push_parsed(line, rec, mops)
        }
    }
}

fn tolerate_truncation(builder: &mut ForeignBuilder, e: &EdnError) {
    builder.report.truncated_last_line = true;
    let warning = format!(
        "{}:{}: history cut short ({}); kept the ops before it",
        builder.source(),
        e.line,
        e.message
    );
    builder.report.warnings.push(warning);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{OpType, Process};

    #[test]
    fn reads_knossos_vector_with_comments_nemesis_and_errors() {
        let text = "; a comment\n[{:process 0, :type :invoke, :f :write, :value 3}\n\
                    {:process :nemesis, :type :info, :f :start, :value \"cut\"}\n\
                    ; pending\n {:process 0, :type :info, :f :write, :value 3, :error [:timeout nil]}\n\
                    {:process 1, :type :invoke, :f :cas, :value [3 4], :time 99}]";
        let (h, report) = parse(text, "k.edn").unwrap();
        assert_eq!(h.len(), 4);
        assert_eq!(h.ops[1].process, Process::Nemesis);
        assert_eq!(h.ops[2].error.as_deref(), Some("[:timeout nil]"));
        assert_eq!(h.ops[3].value, serde_json::json!([3, 4]));
        assert_eq!((h.ops[3].index, h.ops[3].time, h.ops[2].time), (3, 99, 2));
        assert!(report.warnings.is_empty());
    }

    #[test]
    fn lists_and_truncated_files_are_read() {
        let (h, _) = parse("({:process 0 :type :invoke :f :read :value nil})", "l.edn").unwrap();
        assert_eq!(h.ops[0].kind, OpType::Invoke);
        let (h, report) = parse(
            "[{:process 0 :type :invoke :f :read :value nil}\n {:process 0 :ty",
            "t.edn",
        )
        .unwrap();
        assert_eq!(h.len(), 1);
        assert!(report.truncated_last_line, "{report:?}");
    }

    #[test]
    fn bad_ops_name_their_line() {
        let e = parse(
            "[{:process 0 :type :invoke :f :read}\n {:process 0 :type :okay :f :read}]",
            "b.edn",
        )
        .unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("unknown op type :okay"), "{e}");
        let e = parse("[{:process 0 :type :ok :f :read}]", "b.edn").unwrap_err();
        assert!(e.message.contains("no pending invoke"), "{e}");
        let e = parse("[1 2]", "b.edn").unwrap_err();
        assert!(e.message.contains("expected an op map"), "{e}");
        let e = parse("[{:process -1 :type :invoke :f :read}]", "b.edn").unwrap_err();
        assert!(e.message.contains("unknown process"), "{e}");
    }

    #[test]
    fn reads_elle_transactions_with_keyword_and_integer_keys() {
        let text = "[{:type :invoke, :f :txn, :value [[:append 1 2] [:r :x nil]], :process 0, :index 0, :time 5}\n\
                    {:type :ok, :f :txn, :value [[:append 1 2] [:r :x [1 2]]], :process 0, :index 1, :time 9}]";
        let (h, _) = parse(text, "t.edn").unwrap();
        assert_eq!(h.ops[0].f, "txn");
        assert_eq!(
            h.ops[0].value,
            serde_json::json!([["append", 1, 2], ["r", "x", null]])
        );
        assert_eq!(
            h.ops[1].value,
            serde_json::json!([["append", 1, 2], ["r", "x", [1, 2]]])
        );
        assert_eq!(
            (h.ops[1].kind, h.ops[1].process, h.ops[1].time),
            (OpType::Ok, Process::Client(0), 9)
        );
        let one_per_line = "{:type :invoke, :f :txn, :value [[:w 1 3]], :process 2}\n{:type :info, :f :txn, :value [[:w 1 3]], :process 2}\n";
        let (h, _) = parse(one_per_line, "t.edn").unwrap();
        assert_eq!(h.ops[1].value, serde_json::json!([["w", 1, 3]]));
    }

    /// The fast path and the generic one agree: the same history, or the same error.
    fn same_either_way(text: &str) {
        for form in [TxnForm::Json, TxnForm::Compact] {
            let fast = parse_with(text, "x.edn", form, true);
            let generic = parse_with(text, "x.edn", form, false);
            assert_eq!(
                fast.as_ref().map(|(h, _)| h),
                generic.as_ref().map(|(h, _)| h),
                "{text:?}"
            );
            assert_eq!(fast.map(|(_, r)| r), generic.map(|(_, r)| r), "{text:?}");
        }
    }

    const ELLE_SHAPED: &str = "[{:type :invoke, :f :txn, :value [[:append 1 2] [:r :x nil] [:r \"s\" nil]], :process 0, :time 5, :index 0}\n\
        {:type :invoke, :f :txn, :value [[:append 3 4] [:r 1 nil]], :process 1, :time 6, :index 1}\n\
        {:type :ok, :f :txn, :value [[:append 1 2] [:r :x [1 -2]] [:r \"s\" (7 \"é\")]], :process 0, :time 9, :index 2}\n\
        {:type :info, :f :txn, :value :timed-out, :process 1, :time 10, :error [:timeout \"t\"]}\n\
        {:process :nemesis, :type :info, :f :start, :value {:a [1 2]}, :key 5}\n\
        {:type :invoke, :f :read, :value nil, :process 2, :key :k}\n\
        {:type :fail, :f :read, :value :no-leader, :process 2, :key \"k\"}]";

    #[test]
    fn the_fast_path_reads_what_the_generic_one_reads() {
        same_either_way(ELLE_SHAPED);
        let (h, report) = parse_as(ELLE_SHAPED, "x.edn", TxnForm::Compact).unwrap();
        assert_eq!((h.ops.len(), report.op_lines[6]), (7, 7));
        let table = h.txn_table.as_ref().expect("a compact table");
        assert_eq!(table.len(), 4, "every client transaction is in the table");
        assert_eq!(
            h.txn_value(2).into_owned(),
            serde_json::json!([["append", 1, 2], ["r", "x", [1, -2]], ["r", "s", [7, "é"]]])
        );
        assert_eq!(h.ops[3].error.as_deref(), Some("[:timeout \"t\"]"));
        assert_eq!(
            h.txn_value(3).into_owned(),
            serde_json::json!([["append", 3, 4], ["r", 1, null]])
        );
    }

    #[test]
    fn the_fast_path_changes_nothing_on_damaged_input() {
        let bytes = ELLE_SHAPED.as_bytes();
        for cut in 0..bytes.len() {
            if let Ok(text) = std::str::from_utf8(&bytes[..cut]) {
                same_either_way(text);
            }
        }
        let inserts = [
            " ", "\n", ";c\n", "#_ 1 ", "\"", "\\", "]", "}", "{", "[", "(", "#", "é", "1", "-",
            ":", "nil", "N", ".5", ":txn", ":process", ":value", "\u{2003}",
        ];
        for (at, _) in ELLE_SHAPED.char_indices() {
            for insert in inserts {
                let mut text = ELLE_SHAPED.to_string();
                text.insert_str(at, insert);
                same_either_way(&text);
                let mut replaced = ELLE_SHAPED.to_string();
                let next = at + ELLE_SHAPED[at..].chars().next().map_or(0, char::len_utf8);
                replaced.replace_range(at..next, insert);
                same_either_way(&replaced);
            }
        }
    }

    #[test]
    fn top_level_op_maps_and_duplicate_keys_read_as_the_generic_path_reads_them() {
        for text in [
            "{:type :invoke, :f :txn, :value [[:r 1 nil]], :process 0}\n{:type :ok, :f :txn, :value [[:r 1 [1]]], :process 0}\n",
            "{:type :invoke, :type :ok, :f :txn, :value [[:r 1 nil]], :process 0}",
            "[{:type :invoke, :f :txn, :value [[:r 1 nil]], :value [[:r 2 nil]], :process 0}]",
            "[{:type :invoke, :f :txn, \"value\" 1, :value [[:r 1 nil]], :process 0}]",
            "[{:type :invoke, :f :txn, :value [[:r 1 nil]], :process 0, :key nil, :key 3}]",
            "[{:type :invoke, :f :txn, :value [[:r 1 nil]], :process 0, :time 9223372036854775808}]",
            "[{:type :invoke, :f :txn, :value [[:r 1 nil]], :process 0, :time -1}]",
            "[{:type :invoke, :f :txn, :value [[:r 1 nil 3]], :process 0}]",
            "[{:type :invoke, :f :txn, :value [[:r 1.5 nil]], :process 0}]",
            "[{:type :invoke, :f :txn, :value [[:append 1 nil]], :process 0}]",
            "[{:type :invoke, :f :txn, :value [[:append 1 [2]]], :process 0}]",
            "[{:type :invoke, :f :txn, :value [[:r 1 #{2}]], :process 0}]",
            "[{:type :invoke, :f :txn, :value [[:r 1 [true]]], :process 0}]",
            "[{:type :invoke, :f :txn, :value [[r 1 nil]], :process 0}]",
            "[{:type :invoke, :f :txn, :value [[:r 1 nil] [:w 1 2] [:append 1 3]], :process 0}]",
            "[{:type :invoke, :f :txn, :value [[:r 007 [-0 +1]]], :process 0}]",
            "[{:type :invoke, :f :txn, :value [[:r 1 [99999999999999999999]]], :process 0}]",
            "[{:type :invoke, :f :txn, :value [(:append \"a\nb\" 1)], :process 0}\n{:type :ok :f :txn :value [[:append \"a\nb\" 1]] :process 0 :extra {:deep [[[1]]]}}]",
        ] {
            same_either_way(text);
        }
    }

    #[test]
    fn bad_transactions_name_their_line() {
        let e = parse("[{:type :invoke, :f :txn, :value [[:r 1 nil]], :process 0}\n {:type :ok, :f :txn, :value [[:incr 1 2]], :process 0}]", "b.edn").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(
            e.message.contains("micro-op 1: unknown function \"incr\""),
            "{e}"
        );
        let e = parse("[{:type :invoke, :f :txn, :value [[:append 1 2]], :process 0}\n{:type :ok, :f :txn, :value [[:append 1 2]], :process 0}\n\
                       {:type :invoke, :f :txn, :value [[:r 1 nil]], :process 1}\n{:type :ok, :f :txn, :value [[:r 1 5]], :process 1}]", "b.edn").unwrap_err();
        assert_eq!(e.line, 4, "{e}");
        assert!(
            e.message.contains("read value of key 1 is not a list: 5"),
            "{e}"
        );
        let e = parse(
            "[{:type :ok, :f :txn, :value [[:append 1 2]], :process 0}]",
            "b.edn",
        )
        .unwrap_err();
        assert!(e.message.contains("no pending invoke"), "{e}");
    }
}

//! Knossos / Jepsen EDN histories: a vector (or list) of op maps, possibly with `;`
//! comments, e.g. `[{:process 0, :type :invoke, :f :write, :value 3} ...]`. A file of
//! top-level op maps without the surrounding vector is read too.
//!
//! A file cut short inside its last op (or missing the closing bracket) keeps the ops
//! before it, with a warning — the same tolerance as the JSON Lines reader.

use super::edn::{EdnError, EdnReader};
use super::foreign::{op_from_map, ForeignBuilder};
use super::{FormatError, ParseReport};
use crate::history::History;

pub fn parse(text: &str, source: &str) -> Result<(History, ParseReport), FormatError> {
    let mut builder = ForeignBuilder::new(source);
    let mut reader = EdnReader::new(text);
    let edn_error = |b: &ForeignBuilder, e: EdnError| b.error(e.line, e.message);
    match reader
        .open_collection()
        .map_err(|e| edn_error(&builder, e))?
    {
        Some(close) => {
            while let Some(item) = reader.next_element(close) {
                match item {
                    Ok((line, form)) => push_form(&mut builder, line, &form)?,
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
            while let Some(item) = reader.next_form() {
                match item {
                    Ok((line, form)) => push_form(&mut builder, line, &form)?,
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

fn push_form(
    builder: &mut ForeignBuilder,
    line: usize,
    form: &super::edn::Edn,
) -> Result<(), FormatError> {
    let rec = op_from_map(form).map_err(|m| builder.error(line, m))?;
    builder.push(line, rec)
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

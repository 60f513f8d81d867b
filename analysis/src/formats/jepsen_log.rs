//! Jepsen's console log of operations, as `jepsen.util` prints them:
//!
//! ```text
//! INFO  jepsen.util - 3<TAB>:ok<TAB>:cas<TAB>[1 4]
//! ```
//!
//! After the `jepsen.util` marker (followed by `-` or `:`) come process, type, function and
//! value (an EDN form), separated by any run of tabs or spaces (Jepsen's logger pads the
//! columns with either). Any line not of this shape is log noise and is skipped (and
//! counted); but a file where lines mention `jepsen.util` and none is an op line is an
//! error naming the first such line, never an empty history. A client op whose value does
//! not parse is an error naming the line — unless it is the last line and has no newline,
//! which is what a crash cutting the log short leaves.

use super::edn::{parse_one, Edn};
use super::foreign::{op_type_of, process_of, ForeignBuilder, ForeignOp};
use super::{FormatError, ParseReport};
use crate::history::History;

/// The fields of an op line, before the value is parsed.
struct OpLine<'a> {
    process: &'a str,
    kind: &'a str,
    f: &'a str,
    value: &'a str,
}

const MARKER: &str = "jepsen.util";
const OP_TYPES: [&str; 4] = [":invoke", ":ok", ":fail", ":info"];

/// Whether `line` is an op line of a Jepsen log (see [`split_op_line`]).
pub fn is_op_line(line: &str) -> bool {
    split_op_line(line).is_some()
}

/// Splits off the first whitespace-delimited field of `text` (after leading whitespace).
fn next_field(text: &str) -> Option<(&str, &str)> {
    let text = text.trim_start();
    let end = text.find(char::is_whitespace).unwrap_or(text.len());
    (end > 0).then(|| (&text[..end], &text[end..]))
}

/// Finds the op fields of a log line, or `None` for noise. After the marker (then `-` or
/// `:`) come process, type and function, each followed by any run of spaces or tabs (Jepsen
/// pads these columns with tabs or spaces depending on its version); the rest of the line
/// is the value, an EDN form that may itself contain spaces.
fn split_op_line(line: &str) -> Option<OpLine<'_>> {
    let at = line.find(MARKER)?;
    let rest = line[at + MARKER.len()..].trim_start();
    let rest = rest.strip_prefix('-').or_else(|| rest.strip_prefix(':'))?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let (process, rest) = next_field(rest)?;
    let (kind, rest) = next_field(rest)?;
    let (f, rest) = next_field(rest)?;
    let value = match rest.trim() {
        "" => "nil",
        v => v,
    };
    if !OP_TYPES.contains(&kind) {
        return None;
    }
    Some(OpLine { process, kind, f, value })
}

pub fn parse(text: &str, source: &str) -> Result<(History, ParseReport), FormatError> {
    let mut builder = ForeignBuilder::new(source);
    let lines: Vec<&str> = text.lines().collect();
    let last_content_line = lines.iter().rposition(|l| !l.trim().is_empty());
    // Only a last line without its newline can be one a crash cut short.
    let last_line_cut = !text.ends_with('\n');
    let mut op_lines = 0usize;
    let mut first_marker_line = None;
    for (i, raw) in lines.iter().enumerate() {
        let line = i + 1;
        let Some(fields) = split_op_line(raw) else {
            if !raw.trim().is_empty() {
                builder.report.skipped_lines += 1;
            }
            if first_marker_line.is_none() && raw.contains(MARKER) {
                first_marker_line = Some(line);
            }
            continue;
        };
        op_lines += 1;
        let process_edn = parse_one(fields.process).map_err(|e| builder.error(line, format!("bad process: {}", e.message)))?;
        let process = process_of(&process_edn).map_err(|m| builder.error(line, m))?;
        let kind = op_type_of(&Edn::Keyword(fields.kind[1..].to_string())).map_err(|m| builder.error(line, m))?;
        let f = fields.f.trim_start_matches(':').to_string();
        let value = match parse_one(fields.value) {
            Ok(v) => v,
            // Nemesis values are free-form printouts; keep them as text.
            Err(_) if process.client().is_none() => Edn::Str(fields.value.to_string()),
            Err(e) if Some(i) == last_content_line && last_line_cut && e.at_end_of_input => {
                builder.report.truncated_last_line = true;
                let warning = format!("{source}:{line}: dropped the cut-short last line ({})", e.message);
                builder.report.warnings.push(warning);
                break;
            }
            Err(e) => return Err(builder.error(line, format!("bad value {:?}: {}", fields.value, e.message))),
        };
        let rec = ForeignOp { process, kind, f, key: None, value, error: None, time: None };
        builder.push(line, rec)?;
    }
    if let (0, Some(line)) = (op_lines, first_marker_line) {
        return Err(builder.error(
            line,
            format!(
                "this line mentions {MARKER} but no line of the file is an op line \
                 (`{MARKER} - PROCESS TYPE F VALUE`, fields separated by spaces or tabs)"
            ),
        ));
    }
    if builder.report.skipped_lines > 0 {
        let n = builder.report.skipped_lines;
        builder.report.warnings.push(format!("{source}: skipped {n} line(s) that are not jepsen.util op lines"));
    }
    Ok(builder.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{OpType, Process};

    #[test]
    fn reads_op_lines_and_skips_noise() {
        let text = "INFO  jepsen.core - Running test\n\
                    INFO  jepsen.util - 3\t:invoke\t:cas\t[1 4]\n\
                    INFO  jepsen.util - 0\t:invoke\t:read\tnil\n\
                    some stack trace\n\
                    INFO  jepsen.util - 3\t:info\t:cas\t:timed-out\n\
                    INFO  jepsen.util - 0\t:fail\t:read\t:timed-out\n\
                    INFO  jepsen.util - :nemesis\t:info\t:start\t{\"n1\" #object[x]}\n";
        let (h, report) = parse(text, "e.log").unwrap();
        assert_eq!(h.len(), 5);
        assert_eq!(report.skipped_lines, 2);
        assert_eq!(h.ops[2].kind, OpType::Info);
        assert_eq!(h.ops[2].value, serde_json::json!([1, 4]));
        assert_eq!(h.ops[2].error.as_deref(), Some("timed-out"));
        assert_eq!(h.ops[3].value, serde_json::Value::Null);
        assert_eq!(h.ops[4].process, Process::Nemesis);
    }

    #[test]
    fn bad_value_mid_file_is_an_error_but_cut_last_line_is_tolerated() {
        let e = parse("INFO  jepsen.util - 3\t:invoke\t:cas\t[1 4\nINFO  jepsen.util - 3\t:ok\t:cas\t[1 4]\n", "e.log").unwrap_err();
        assert_eq!(e.line, 1);
        let (h, r) = parse("INFO  jepsen.util - 3\t:invoke\t:cas\t[1 4]\nINFO  jepsen.util - 3\t:ok\t:cas\t[1 ", "e.log").unwrap();
        assert_eq!(h.len(), 1);
        assert!(r.truncated_last_line);
    }

    #[test]
    fn unbalanced_completion_names_the_line() {
        let e = parse("x\nINFO  jepsen.util - 3\t:ok\t:read\t1\n", "e.log").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().starts_with("e.log:2: "), "{e}");
    }

    #[test]
    fn space_padded_columns_are_read_like_tabs() {
        let text = "INFO  jepsen.util - 1   :invoke :write  3\n\
                    INFO  jepsen.util - 1   :ok     :write  3\n\
                    INFO  jepsen.util - 12  :invoke :cas    [3 4]\n\
                    INFO  jepsen.util - 12 \t:ok\t :cas  [3 4]\n\
                    INFO  jepsen.util - :nemesis :info  :start  {\"n1\" :isolated}\n";
        let (h, report) = parse(text, "padded.log").unwrap();
        assert_eq!(h.len(), 5);
        assert_eq!(report.skipped_lines, 0);
        assert_eq!(h.ops[0].f, "write");
        assert_eq!(h.ops[0].value, serde_json::json!(3));
        assert_eq!(h.ops[3].value, serde_json::json!([3, 4]));
        assert_eq!(h.ops[3].process, Process::Client(12));
        assert_eq!(h.ops[4].process, Process::Nemesis);
    }

    #[test]
    fn marker_lines_without_any_op_line_are_an_error_naming_the_first() {
        let text = "noise\nINFO  jepsen.util - 1|:invoke|:write|3\nINFO  jepsen.util - 1|:ok|:write|3\n";
        let e = parse(text, "odd.log").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.contains("no line of the file is an op line"), "{e}");
        let (h, _) = parse("just noise\n", "quiet.log").unwrap();
        assert!(h.is_empty(), "a log that never mentions jepsen.util is not an error here");
    }

    #[test]
    fn a_complete_last_line_with_a_bad_value_is_an_error() {
        let e = parse("INFO  jepsen.util - 3\t:invoke\t:cas\t[1 4]\nINFO  jepsen.util - 3\t:ok\t:cas\t[1 \n", "e.log").unwrap_err();
        assert_eq!(e.line, 2);
    }
}

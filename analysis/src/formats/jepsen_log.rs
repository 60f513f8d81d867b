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
//! error naming the first such line, never an empty history. A client op's value is one
//! EDN form; text after it (past tabs or spaces) is the op's error, as Jepsen prints an op
//! that has one (`3<TAB>:info<TAB>:cas<TAB>[1 4]<TAB>:timed-out`). A client op whose value
//! does not parse is an error naming the line (quoting at most [`MAX_ECHOED_VALUE_CHARS`]
//! characters of it). The last line, when it has no newline, is never read: it may be cut
//! short, and a cut line can still parse (`:read 4` of `:read 42`); it is dropped with a
//! warning.

use super::edn::{parse_one, parse_prefix, Edn, EdnError};
use super::foreign::{op_type_of, process_of, ForeignBuilder, ForeignOp};
use super::{unterminated_last_line_warning, FormatError, ParseReport};
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
    Some(OpLine {
        process,
        kind,
        f,
        value,
    })
}

/// At most this many characters of a bad value are quoted in its error.
pub const MAX_ECHOED_VALUE_CHARS: usize = 80;

/// `value` quoted for an error message, cut to [`MAX_ECHOED_VALUE_CHARS`] characters (a
/// log line can be megabytes of one unparseable value).
fn echo(value: &str) -> String {
    let total = value.chars().count();
    if total <= MAX_ECHOED_VALUE_CHARS {
        return format!("{value:?}");
    }
    let head: String = value.chars().take(MAX_ECHOED_VALUE_CHARS).collect();
    format!(
        "{:?} ({total} characters, the first {MAX_ECHOED_VALUE_CHARS} shown)",
        format!("{head}…")
    )
}

/// A client op's value column and what follows it: one EDN form, then — after tabs or
/// spaces — the op's error, as Jepsen prints it (`[1 4]<TAB>:timed-out`). A keyword or
/// string error is kept as its text (`timed-out`), anything else verbatim.
fn client_value_and_error(text: &str) -> Result<(Edn, Option<String>), EdnError> {
    if let Ok(value) = parse_one(text) {
        return Ok((value, None));
    }
    let (value, rest) = parse_prefix(text)?;
    if !rest.starts_with(char::is_whitespace) {
        return Err(parse_one(text).expect_err("the whole text did not parse"));
    }
    let error = match parse_one(rest) {
        Ok(Edn::Keyword(s) | Edn::Str(s)) => s,
        _ => rest.trim().to_string(),
    };
    Ok((value, Some(error)))
}

pub fn parse(text: &str, source: &str) -> Result<(History, ParseReport), FormatError> {
    let mut builder = ForeignBuilder::new(source);
    let lines: Vec<&str> = text.lines().collect();
    // A last line without its newline may be cut short (`:read 4` of `:read 42`): never trusted.
    let unterminated_last = (!text.is_empty() && !text.ends_with('\n')).then(|| lines.len() - 1);
    let mut op_lines = 0usize;
    let mut first_marker_line = None;
    for (i, raw) in lines.iter().enumerate() {
        let line = i + 1;
        if Some(i) == unterminated_last && !raw.trim().is_empty() {
            builder.report.truncated_last_line = true;
            builder
                .report
                .warnings
                .push(unterminated_last_line_warning(source, line));
            break;
        }
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
        let process_edn = parse_one(fields.process)
            .map_err(|e| builder.error(line, format!("bad process: {}", e.message)))?;
        let process = process_of(&process_edn).map_err(|m| builder.error(line, m))?;
        let kind = op_type_of(&Edn::Keyword(fields.kind[1..].to_string()))
            .map_err(|m| builder.error(line, m))?;
        let f = fields.f.trim_start_matches(':').to_string();
        let (value, error) = if process.client().is_none() {
            // Nemesis values are free-form printouts; keep them as text when they are not EDN.
            (
                parse_one(fields.value).unwrap_or_else(|_| Edn::Str(fields.value.to_string())),
                None,
            )
        } else {
            client_value_and_error(fields.value).map_err(|e| {
                builder.error(
                    line,
                    format!("bad value {}: {}", echo(fields.value), e.message),
                )
            })?
        };
        let rec = ForeignOp {
            process,
            kind,
            f,
            key: None,
            value,
            error,
            time: None,
        };
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
        builder.report.warnings.push(format!(
            "{source}: skipped {n} line(s) that are not jepsen.util op lines"
        ));
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
        let e = parse(
            "INFO  jepsen.util - 3\t:invoke\t:cas\t[1 4\nINFO  jepsen.util - 3\t:ok\t:cas\t[1 4]\n",
            "e.log",
        )
        .unwrap_err();
        assert_eq!(e.line, 1);
        let (h, r) = parse(
            "INFO  jepsen.util - 3\t:invoke\t:cas\t[1 4]\nINFO  jepsen.util - 3\t:ok\t:cas\t[1 ",
            "e.log",
        )
        .unwrap();
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
        let text =
            "noise\nINFO  jepsen.util - 1|:invoke|:write|3\nINFO  jepsen.util - 1|:ok|:write|3\n";
        let e = parse(text, "odd.log").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(
            e.message.contains("no line of the file is an op line"),
            "{e}"
        );
        let (h, _) = parse("just noise\n", "quiet.log").unwrap();
        assert!(
            h.is_empty(),
            "a log that never mentions jepsen.util is not an error here"
        );
    }

    #[test]
    fn a_complete_last_line_with_a_bad_value_is_an_error() {
        let e = parse(
            "INFO  jepsen.util - 3\t:invoke\t:cas\t[1 4]\nINFO  jepsen.util - 3\t:ok\t:cas\t[1 \n",
            "e.log",
        )
        .unwrap_err();
        assert_eq!(e.line, 2);
    }

    #[test]
    fn an_error_column_after_the_value_is_the_ops_error() {
        let text = "INFO  jepsen.util - 3\t:invoke\t:cas\t[1 4]\n\
                    INFO  jepsen.util - 3\t:info\t:cas\t[1 4]\t:timed-out\n\
                    INFO  jepsen.util - 0\t:invoke\t:read\tnil\n\
                    INFO  jepsen.util - 0\t:fail\t:read\tnil\t\"connection refused\"\n\
                    INFO  jepsen.util - 1\t:invoke\t:write\t3\n\
                    INFO  jepsen.util - 1   :info   :write  3   java.net.SocketTimeoutException: Read timed out\n";
        let (h, report) = parse(text, "e.log").unwrap();
        assert_eq!(h.len(), 6);
        assert_eq!(report.skipped_lines, 0);
        assert_eq!(
            (&h.ops[1].value, h.ops[1].error.as_deref()),
            (&serde_json::json!([1, 4]), Some("timed-out"))
        );
        assert_eq!(
            (&h.ops[3].value, h.ops[3].error.as_deref()),
            (&serde_json::Value::Null, Some("connection refused"))
        );
        assert_eq!(
            (&h.ops[5].value, h.ops[5].error.as_deref()),
            (
                &serde_json::json!(3),
                Some("java.net.SocketTimeoutException: Read timed out")
            )
        );
        assert_eq!(h.ops[0].error, None);
    }

    #[test]
    fn text_glued_to_the_value_is_still_a_bad_value() {
        let e = parse("INFO  jepsen.util - 3\t:invoke\t:cas\t[1 4]x\n", "e.log").unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.message.starts_with("bad value"), "{e}");
    }

    #[test]
    fn a_long_bad_value_is_echoed_only_up_to_the_bound() {
        let long = format!("[{}", "1 ".repeat(500));
        let e = parse(
            &format!("INFO  jepsen.util - 3\t:invoke\t:cas\t{long}\n"),
            "e.log",
        )
        .unwrap_err();
        let echoed = e.message.split('"').nth(1).expect("the value is quoted");
        assert_eq!(echoed.chars().count(), MAX_ECHOED_VALUE_CHARS + 1, "{e}");
        assert!(echoed.ends_with('…'), "{e}");
        assert!(
            e.message
                .contains(&format!("{} characters", long.trim_end().chars().count())),
            "{e}"
        );
        assert!(e.message.len() < 300, "{e}");
        let short = parse("INFO  jepsen.util - 3\t:invoke\t:cas\t[1 4\n", "e.log").unwrap_err();
        assert!(short.message.starts_with("bad value \"[1 4\": "), "{short}");
    }
}

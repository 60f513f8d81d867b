//! Jepsen's console log of operations, as `jepsen.util` prints them:
//!
//! ```text
//! INFO  jepsen.util - 3<TAB>:ok<TAB>:cas<TAB>[1 4]
//! ```
//!
//! After the `jepsen.util` marker (followed by ` - ` or `: `) come tab-separated fields:
//! process, type, function and value (an EDN form). Any line not of this shape is log
//! noise and is skipped (and counted). A client op whose value does not parse is an
//! error naming the line — unless it is the last line, which a crash may have cut short.

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

/// Finds the op fields of a log line, or `None` for noise.
fn split_op_line(line: &str) -> Option<OpLine<'_>> {
    let at = line.find("jepsen.util")?;
    let rest = &line[at + "jepsen.util".len()..];
    let rest = rest.strip_prefix(" - ").or_else(|| rest.strip_prefix(": "))?;
    let mut fields = rest.splitn(4, '\t');
    let process = fields.next()?.trim();
    let kind = fields.next()?.trim();
    let f = fields.next()?.trim();
    let value = fields.next().unwrap_or("nil").trim_end_matches(['\r', '\n']);
    if !matches!(kind, ":invoke" | ":ok" | ":fail" | ":info") || f.is_empty() {
        return None;
    }
    Some(OpLine { process, kind, f, value })
}

pub fn parse(text: &str, source: &str) -> Result<(History, ParseReport), FormatError> {
    let mut builder = ForeignBuilder::new(source);
    let lines: Vec<&str> = text.lines().collect();
    let last_content_line = lines.iter().rposition(|l| !l.trim().is_empty());
    for (i, raw) in lines.iter().enumerate() {
        let line = i + 1;
        let Some(fields) = split_op_line(raw) else {
            if !raw.trim().is_empty() {
                builder.report.skipped_lines += 1;
            }
            continue;
        };
        let process_edn = parse_one(fields.process).map_err(|e| builder.error(line, format!("bad process: {}", e.message)))?;
        let process = process_of(&process_edn).map_err(|m| builder.error(line, m))?;
        let kind = op_type_of(&Edn::Keyword(fields.kind[1..].to_string())).map_err(|m| builder.error(line, m))?;
        let f = fields.f.trim_start_matches(':').to_string();
        let value = match parse_one(fields.value.trim()) {
            Ok(v) => v,
            // Nemesis values are free-form printouts; keep them as text.
            Err(_) if process.client().is_none() => Edn::Str(fields.value.to_string()),
            Err(e) if Some(i) == last_content_line && e.at_end_of_input => {
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
}

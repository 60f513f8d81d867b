//! Porcupine's kv test histories: one Clojure op map per line, e.g.
//! `{:process 9, :type :invoke, :f :append, :key "0", :value "x 9 0 y"}`, with `get`,
//! `put` and `append` on string keys. Each line is read on its own, so a bad line is
//! reported precisely. The last line, when it has no newline, is never read (it may be cut
//! short): it is dropped with a warning, whatever it holds.

use super::edn::parse_one;
use super::foreign::{op_from_map, ForeignBuilder};
use super::{unterminated_last_line_warning, FormatError, ParseReport};
use crate::history::History;

pub fn parse(text: &str, source: &str) -> Result<(History, ParseReport), FormatError> {
    let mut builder = ForeignBuilder::new(source);
    let lines: Vec<&str> = text.lines().collect();
    // A last line without its newline may be cut short: never trusted, even when it parses.
    let unterminated_last = (!text.is_empty() && !text.ends_with('\n')).then(|| lines.len() - 1);
    for (i, line_text) in lines.iter().enumerate() {
        let trimmed = line_text.trim();
        if trimmed.is_empty() || trimmed.starts_with(';') {
            continue;
        }
        let line = i + 1;
        if Some(i) == unterminated_last {
            builder.report.truncated_last_line = true;
            builder
                .report
                .warnings
                .push(unterminated_last_line_warning(source, line));
            break;
        }
        let form = parse_one(trimmed).map_err(|e| builder.error(line, e.message))?;
        let rec = op_from_map(&form).map_err(|m| builder.error(line, m))?;
        builder.push(line, rec)?;
    }
    Ok(builder.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_kv_lines() {
        let text = "{:process 9, :type :invoke, :f :append, :key \"0\", :value \"x 9 0 y\"}\n\
                    {:process 1, :type :invoke, :f :get, :key \"9\", :value nil}\n\
                    {:process 1, :type :ok, :f :get, :key \"9\", :value \"x\"}\n";
        let (h, _) = parse(text, "kv.txt").unwrap();
        assert_eq!(h.len(), 3);
        assert_eq!(h.ops[0].key.as_deref(), Some("0"));
        assert_eq!(h.ops[2].value, serde_json::json!("x"));
    }

    #[test]
    fn garbage_in_the_middle_is_an_error_cut_last_line_a_warning() {
        let e = parse(
            "{:process 1, :type :invoke, :f :get, :key \"9\"}\n{:process 1 :type\n{:a 1}\n",
            "kv.txt",
        )
        .unwrap_err();
        assert_eq!(e.line, 2);
        let (h, r) = parse(
            "{:process 1, :type :invoke, :f :get, :key \"9\"}\n{:process 1, :ty",
            "kv.txt",
        )
        .unwrap();
        assert_eq!(h.len(), 1);
        assert!(r.truncated_last_line);
        let e = parse(
            "{:process 1, :type :invoke, :f :get, :key \"9\"}\n{:process 1, :ty\n",
            "kv.txt",
        )
        .unwrap_err();
        assert_eq!(e.line, 2, "a complete last line is not a cut one");
    }

    #[test]
    fn completion_for_another_key_is_an_error() {
        let e = parse(
            "{:process 1, :type :invoke, :f :get, :key \"9\"}\n{:process 1, :type :ok, :f :get, :key \"8\", :value \"\"}\n",
            "kv.txt",
        )
        .unwrap_err();
        assert!(e.message.contains("key \"8\""), "{e}");
    }
}

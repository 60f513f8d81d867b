//! Telling history formats apart by their content, with the file extension as a hint
//! when the content is ambiguous (e.g. an empty file).

use super::{jepsen_log, Format};
use std::path::Path;

/// How much of the start of a file is looked at.
pub const SNIFF_BYTES: usize = 64 * 1024;

/// Detects the format of `text` (read from `path`).
pub fn detect(text: &str, path: &Path) -> Option<Format> {
    detect_content(text).or_else(|| detect_extension(path))
}

/// The format the content looks like, from its first meaningful line.
pub fn detect_content(text: &str) -> Option<Format> {
    let head = &text[..floor_char_boundary(text, SNIFF_BYTES)];
    if head.lines().any(jepsen_log::is_op_line) {
        return Some(Format::JepsenLog);
    }
    let first = head
        .lines()
        .map(str::trim_start)
        .find(|l| !l.is_empty() && !l.starts_with(';'))?;
    if first.starts_with("{\"") || first.starts_with("{ \"") {
        return Some(Format::Jsonl);
    }
    if first.starts_with('[') || first.starts_with('(') {
        return Some(Format::Edn);
    }
    if first.starts_with("{:") {
        // One map per line is Porcupine's kv layout; a map spread over lines is EDN.
        return Some(if first.trim_end().ends_with('}') {
            Format::PorcupineKv
        } else {
            Format::Edn
        });
    }
    // A log that mentions Jepsen's op logger without one readable op line: the Jepsen log
    // reader names the line, rather than "unknown format".
    head.lines()
        .any(|l| l.contains("jepsen.util"))
        .then_some(Format::JepsenLog)
}

/// The format a file extension suggests.
pub fn detect_extension(path: &Path) -> Option<Format> {
    match path.extension()?.to_str()? {
        "jsonl" | "ndjson" => Some(Format::Jsonl),
        "log" => Some(Format::JepsenLog),
        "edn" => Some(Format::Edn),
        "txt" => Some(Format::PorcupineKv),
        _ => None,
    }
}

fn floor_char_boundary(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    (0..=at)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_each_format_by_content() {
        let p = Path::new("x.unknown");
        assert_eq!(
            detect("{\"index\":0,\"type\":\"invoke\"}\n", p),
            Some(Format::Jsonl)
        );
        assert_eq!(
            detect("noise\nINFO  jepsen.util - 3\t:ok\t:read\t4\n", p),
            Some(Format::JepsenLog)
        );
        assert_eq!(
            detect("INFO  jepsen.util - 3   :ok     :read  4\n", p),
            Some(Format::JepsenLog),
            "space-padded"
        );
        assert_eq!(
            detect("INFO  jepsen.util - 3|:ok|:read|4\n", p),
            Some(Format::JepsenLog),
            "the reader names the line"
        );
        assert_eq!(detect("; c\n[{:process 0}\n]", p), Some(Format::Edn));
        assert_eq!(
            detect("{:process 0, :type :ok}\n", p),
            Some(Format::PorcupineKv)
        );
        assert_eq!(detect("{:process 0,\n :type :ok}\n", p), Some(Format::Edn));
        assert_eq!(detect("hello", p), None);
    }

    #[test]
    fn extension_is_only_a_fallback() {
        assert_eq!(detect("", Path::new("a.edn")), Some(Format::Edn));
        assert_eq!(
            detect("[{:process 0}]", Path::new("a.jsonl")),
            Some(Format::Edn)
        );
        assert_eq!(detect("", Path::new("history.jsonl")), Some(Format::Jsonl));
    }
}

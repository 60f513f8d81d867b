//! A last line without a newline is never trusted by the line-based readers (JSON Lines,
//! Jepsen logs, Porcupine kv): it may be a longer line cut short, and a cut line can parse
//! (`:read 4` cut from `:read 42`), so it is dropped whatever it parses to, with the warning
//! `docs/history-format.md` quotes. Nothing left means an empty history: unknown, never valid.

use analysis::analyze::{analyze, AnalyzeOptions};
use analysis::formats::{parse_str, Format, LoadedHistory};
use analysis::verdict::Validity;

fn read(text: &str, format: Format) -> LoadedHistory {
    parse_str(text, format, "h").unwrap_or_else(|e| panic!("{e}"))
}

fn verdict(loaded: &LoadedHistory) -> Validity {
    analyze(
        &loaded.history,
        loaded.format.default_initial(),
        &AnalyzeOptions::default(),
    )
    .expect("analyzable")
    .valid
}

/// The one warning is the dropped last line's, naming it (its wording is checked against
/// the doc in `history_format_doc.rs`).
fn assert_one_drop_warning(loaded: &LoadedHistory, line: usize) {
    let w = &loaded.report.warnings;
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with(&format!("h:{line}: dropped the last line")),
        "{w:?}"
    );
    assert!(loaded.report.truncated_last_line);
}

/// Writes 42, then a read of it whose completion is the file's last line.
fn jepsen_read_of_42(last: &str) -> String {
    format!(
        "INFO  jepsen.util - 0\t:invoke\t:write\t42\n\
         INFO  jepsen.util - 0\t:ok\t:write\t42\n\
         INFO  jepsen.util - 1\t:invoke\t:read\tnil\n\
         {last}"
    )
}

#[test]
fn a_jepsen_read_cut_short_to_a_value_that_parses_is_dropped_not_judged() {
    // `:read 42` cut after its `4`: it parses, and would read a value never written.
    let loaded = read(
        &jepsen_read_of_42("INFO  jepsen.util - 1\t:ok\t:read\t4"),
        Format::JepsenLog,
    );
    assert_eq!(loaded.history.len(), 3, "{:?}", loaded.history.ops);
    assert!(loaded.report.truncated_last_line);
    assert_one_drop_warning(&loaded, 4);
    assert_eq!(
        verdict(&loaded),
        Validity::Valid,
        "the read is pending, so anything it returned is fine"
    );

    let whole = read(
        &jepsen_read_of_42("INFO  jepsen.util - 1\t:ok\t:read\t42\n"),
        Format::JepsenLog,
    );
    assert_eq!(whole.history.len(), 4);
    assert!(!whole.report.truncated_last_line);
}

#[test]
fn every_line_based_reader_drops_a_last_line_without_a_newline_even_when_it_parses() {
    let cases = [
        (
            Format::Jsonl,
            "{\"type\":\"invoke\",\"process\":0,\"f\":\"write\",\"value\":1}\n{\"type\":\"ok\",\"process\":0,\"f\":\"write\",\"value\":1}",
        ),
        (Format::JepsenLog, "INFO  jepsen.util - 0\t:invoke\t:write\t1\nINFO  jepsen.util - 0\t:ok\t:write\t1"),
        (
            Format::PorcupineKv,
            "{:process 0, :type :invoke, :f :put, :key \"a\", :value \"x\"}\n{:process 0, :type :ok, :f :put, :key \"a\", :value \"x\"}",
        ),
    ];
    for (format, text) in cases {
        let loaded = read(text, format);
        assert_eq!(
            loaded.history.len(),
            1,
            "{format}: {:?}",
            loaded.history.ops
        );
        assert_one_drop_warning(&loaded, 2);
        let terminated = read(&format!("{text}\n"), format);
        assert_eq!(terminated.history.len(), 2, "{format}");
        assert!(
            terminated.report.warnings.is_empty(),
            "{format}: {:?}",
            terminated.report.warnings
        );
    }
}

#[test]
fn a_file_whose_only_line_has_no_newline_is_empty_and_unknown() {
    for (format, text) in [
        (
            Format::Jsonl,
            "{\"type\":\"invoke\",\"process\":0,\"f\":\"write\",\"value\":1}",
        ),
        (
            Format::JepsenLog,
            "INFO  jepsen.util - 0\t:invoke\t:write\t1",
        ),
        (
            Format::PorcupineKv,
            "{:process 0, :type :invoke, :f :put, :key \"a\", :value \"x\"}",
        ),
    ] {
        let loaded = read(text, format);
        assert!(loaded.history.is_empty(), "{format}");
        assert!(loaded.report.truncated_last_line, "{format}");
        assert_eq!(verdict(&loaded), Validity::Unknown, "{format}");
    }
}

//! The example in `docs/history-format.md` is a valid history, read as documented.

use analysis::formats::{parse_str, Format};
use analysis::history::{OpType, Process};

fn doc_example() -> String {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/history-format.md"
    ))
    .expect("doc");
    let start = doc.find("```json\n").expect("a json block") + "```json\n".len();
    let end = start + doc[start..].find("```").expect("block end");
    doc[start..end].to_string()
}

#[test]
fn the_documented_example_parses_as_documented() {
    let loaded = parse_str(&doc_example(), Format::Jsonl, "doc").unwrap_or_else(|e| panic!("{e}"));
    let ops = &loaded.history.ops;
    assert_eq!(ops.len(), 7);
    assert_eq!(ops[2].meta.as_ref().and_then(|m| m.log_index), Some(87));
    assert_eq!(ops[3].process, Process::Nemesis);
    assert_eq!(
        (ops[6].kind, ops[6].error.as_deref()),
        (OpType::Info, Some("timed-out"))
    );
    assert!(loaded.report.warnings.is_empty());
}

#[test]
fn the_documented_error_message_is_what_the_reader_says() {
    let bad = doc_example().replacen("\"type\":\"ok\"", "\"type\":\"okay\"", 1);
    let e = parse_str(&bad, Format::Jsonl, "store/latest/history.jsonl").unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with("store/latest/history.jsonl:3: unknown variant `okay`, expected one of `invoke`, `ok`, `fail`, `info` (column "),
        "{text}"
    );
}

#[test]
fn the_documented_node_exit_parses_and_is_a_crash() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/history-format.md"
    ))
    .expect("doc");
    let section = &doc[doc
        .find("### Node lifecycle events")
        .expect("the node lifecycle section")..];
    let start = section.find("```json\n").expect("a json block") + "```json\n".len();
    let example = &section[start..start + section[start..].find("```").expect("block end")];
    let loaded = parse_str(example, Format::Jsonl, "doc").unwrap_or_else(|e| panic!("{e}"));
    let exit = &loaded.history.ops[0];
    assert_eq!(
        (exit.process, exit.f.as_str(), exit.node.as_deref()),
        (Process::Watcher, "node-exit", Some("n2"))
    );
    let r = analysis::checkers::crashes::check(&loaded.history, &Default::default());
    assert_eq!(r.valid, analysis::verdict::Validity::Invalid);
    assert_eq!(r.anomalies[0]["exit_code"], 101);
}

#[test]
fn the_documented_warning_for_a_last_line_without_a_newline_is_what_the_readers_say() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/history-format.md"
    ))
    .expect("doc");
    let said =
        analysis::formats::unterminated_last_line_warning("<file>", 0).replace(":0:", ":<line>:");
    let quoted = format!("`warning: {said}`");
    assert!(
        doc.replace('\n', " ").contains(&quoted),
        "docs/history-format.md should quote {quoted}"
    );
}

#[test]
fn the_documented_transactions_parse_and_are_serializable() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/history-format.md"
    ))
    .expect("doc");
    let section = &doc[doc
        .find("### Transactions")
        .expect("the transactions section")..];
    let start = section.find("```json\n").expect("a json block") + "```json\n".len();
    let example = &section[start..start + section[start..].find("```").expect("block end")];
    let loaded = parse_str(example, Format::Jsonl, "doc").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        loaded.history.ops[5].value,
        serde_json::json!([["r", 1, [1, 2]]])
    );
    let v = analysis::analyze::analyze(
        &loaded.history,
        serde_json::Value::Null,
        &Default::default(),
    )
    .expect("known functions");
    assert_eq!(
        v.checkers["isolation"].valid,
        analysis::verdict::Validity::Valid,
        "{:?}",
        v.checkers["isolation"]
    );
}

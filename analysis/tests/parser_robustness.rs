//! Every history parser on arbitrary bytes and on mutated real histories: it returns ops
//! or an error, never panics; errors name a line inside the input.

use analysis::formats::{jsonl, parse_str, Format};
use proptest::prelude::*;
use std::path::Path;

fn sample(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/histories")
        .join(rel);
    std::fs::read_to_string(path).expect("sample history")
}

/// A small real history in each format.
fn samples() -> Vec<(Format, String)> {
    let jsonl = concat!(
        r#"{"index":0,"type":"invoke","process":0,"f":"write","key":"a","value":1,"time":10}"#,
        "\n",
        r#"{"index":1,"type":"invoke","process":1,"f":"cas","key":"a","value":[1,2],"time":11}"#,
        "\n",
        r#"{"index":2,"type":"ok","process":0,"f":"write","key":"a","value":1,"time":20,"meta":{"group":1}}"#,
        "\n",
        r#"{"index":3,"type":"info","process":"nemesis","f":"start-kill","value":{"targets":["n1"]},"time":25}"#,
        "\n",
        r#"{"index":4,"type":"fail","process":1,"f":"cas","key":"a","value":[1,2],"time":30,"error":"x"}"#,
        "\n",
    );
    let etcd: String = sample("etcd-jepsen/etcd_000.log")
        .lines()
        .take(40)
        .map(|l| format!("{l}\n"))
        .collect();
    let kv: String = sample("kv/c10-bad.txt")
        .lines()
        .take(40)
        .map(|l| format!("{l}\n"))
        .collect();
    vec![
        (Format::Jsonl, jsonl.to_string()),
        (Format::JepsenLog, etcd),
        (Format::PorcupineKv, kv),
        (
            Format::Edn,
            sample("knossos-cas/bad/rethink-fail-minimal.edn"),
        ),
    ]
}

/// Parses and checks the invariants that hold whether or not the input is valid.
fn parse_never_panics(text: &str, format: Format) {
    let lines = text.lines().count().max(1);
    match parse_str(text, format, "fuzz") {
        Ok(loaded) => {
            let h = &loaded.history;
            assert!(
                h.ops.windows(2).all(|w| w[0].index < w[1].index),
                "indices increase"
            );
            assert_eq!(loaded.report.op_lines.len(), h.len());
        }
        Err(e) => {
            assert!(
                e.line <= lines + 1,
                "error line {} beyond the {lines} lines of the input: {e}",
                e.line
            );
            assert!(!e.message.is_empty());
        }
    }
}

/// A line-level mutation of a history.
#[derive(Debug, Clone)]
enum Mutation {
    DeleteLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    TruncateAt(usize),
    ReplaceByte(usize, u8),
    InsertText(usize, String),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::DeleteLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        any::<usize>().prop_map(Mutation::TruncateAt),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::ReplaceByte(i, b)),
        (
            any::<usize>(),
            prop_oneof![
                Just("{".to_string()),
                Just("]".to_string()),
                Just("\"".to_string()),
                Just(":info".to_string()),
                Just("nil".to_string()),
                Just("\t:ok\t".to_string()),
                Just("[[[[".to_string()),
                Just("#_".to_string()),
                Just("\\u12".to_string()),
                Just(";".to_string()),
                "\\PC{0,8}",
            ]
        )
            .prop_map(|(i, s)| Mutation::InsertText(i, s)),
    ]
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let n = lines.len().max(1);
    match m {
        Mutation::DeleteLine(i) if !lines.is_empty() => {
            lines.remove(i % n);
        }
        Mutation::DuplicateLine(i) if !lines.is_empty() => {
            let l = lines[i % n].clone();
            lines.insert(i % n, l);
        }
        Mutation::SwapLines(a, b) if !lines.is_empty() => lines.swap(a % n, b % n),
        Mutation::TruncateAt(i) => {
            let mut cut = i % (text.len() + 1);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            return text[..cut].to_string();
        }
        Mutation::ReplaceByte(i, b) => {
            let mut bytes = text.as_bytes().to_vec();
            if !bytes.is_empty() {
                let at = i % bytes.len();
                bytes[at] = *b;
            }
            return String::from_utf8_lossy(&bytes).into_owned();
        }
        Mutation::InsertText(i, s) => {
            let mut cut = i % (text.len() + 1);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            return format!("{}{s}{}", &text[..cut], &text[cut..]);
        }
        _ => {}
    }
    lines.join("\n") + "\n"
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_any_parser(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes);
        for format in Format::ALL {
            parse_never_panics(&text, format);
        }
    }

    #[test]
    fn arbitrary_text_shaped_like_histories_never_panics(
        text in "(\\{|\\[|\\(|:|\"|[a-z0-9 ,:\\t\\n{}\\[\\]\"-]|jepsen\\.util - |:invoke|:ok|nil|\\\\){0,80}"
    ) {
        for format in Format::ALL {
            parse_never_panics(&text, format);
        }
    }

    #[test]
    fn mutated_real_histories_never_panic(which in 0usize..4, muts in proptest::collection::vec(mutation(), 1..4)) {
        let (format, text) = samples().swap_remove(which);
        let mutated = muts.iter().fold(text, |t, m| apply(&t, m));
        parse_never_panics(&mutated, format);
    }

    #[test]
    fn parallel_and_streaming_jsonl_readers_agree(muts in proptest::collection::vec(mutation(), 0..4)) {
        let (_, text) = samples().swap_remove(0);
        let mutated = muts.iter().fold(text, |t, m| apply(&t, m));
        let streamed = jsonl::read_history(mutated.as_bytes(), "s");
        let parallel = jsonl::read_history_bytes(mutated.as_bytes(), "s");
        match (streamed, parallel) {
            (Ok((h1, r1)), Ok((h2, r2))) => {
                prop_assert_eq!(h1, h2);
                prop_assert_eq!(r1, r2);
            }
            (Err(e1), Err(e2)) => prop_assert_eq!(e1, e2),
            (a, b) => prop_assert!(false, "streamed {:?} but parallel {:?}", a.map(|x| x.0.len()), b.map(|x| x.0.len())),
        }
    }

    #[test]
    fn any_prefix_of_a_jsonl_history_parses_to_a_prefix_of_its_ops(cut in 0usize..10_000) {
        let (_, text) = samples().swap_remove(0);
        let cut = cut % (text.len() + 1);
        let full = parse_str(&text, Format::Jsonl, "full").expect("sample parses").history;
        // A prefix cut mid-line is a truncated last line: tolerated, never an error —
        // unless the cut leaves a complete but unbalanced history, which cannot happen for
        // a prefix.
        let part = parse_str(&text[..cut], Format::Jsonl, "cut").expect("a prefix is readable").history;
        prop_assert!(part.len() <= full.len());
        prop_assert_eq!(&full.ops[..part.len()], &part.ops[..]);
    }
}

#[test]
fn the_unmutated_samples_parse() {
    for (format, text) in samples() {
        let loaded = parse_str(&text, format, "sample").unwrap_or_else(|e| panic!("{format}: {e}"));
        assert!(loaded.history.len() >= 5, "{format}");
    }
}

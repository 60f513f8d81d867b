//! Corrupt histories get an error naming the source, the line and the problem — for each
//! kind of corruption and each format.

use analysis::formats::{parse_str, Format};

const INV: &str = r#"{"index":0,"type":"invoke","process":1,"f":"read","key":"k"}"#;
const OK: &str = r#"{"index":1,"type":"ok","process":1,"f":"read","key":"k","value":3}"#;

fn error_of(text: &str, format: Format) -> (usize, String) {
    match parse_str(text, format, "h") {
        Ok(loaded) => panic!(
            "{format} accepted corrupt input {text:?}: {} ops",
            loaded.history.len()
        ),
        Err(e) => {
            assert!(e.to_string().starts_with(&format!("h:{}: ", e.line)), "{e}");
            (e.line, e.message)
        }
    }
}

#[test]
fn jsonl_corruptions_are_named_with_their_line() {
    let cases: Vec<(String, usize, &str)> = vec![
        (format!("{INV}\ngarbage\n{OK}\n"), 2, "expected value"),
        (
            format!("{INV}\n{}\n{OK}\n", OK.replace("\"ok\"", "\"done\"")),
            2,
            "unknown variant `done`",
        ),
        (
            format!(
                "{INV}\n{}\n{OK}\n",
                OK.replace("\"process\":1", "\"process\":1.5")
            ),
            2,
            "invalid type: floating point",
        ),
        (
            format!(
                "{INV}\n{}\n{OK}\n",
                OK.replace("\"process\":1", "\"process\":\"alice\"")
            ),
            2,
            "unknown process \"alice\"",
        ),
        (
            format!(
                "{INV}\n{}\n{OK}\n",
                OK.replace("\"index\":1", "\"index\":\"one\"")
            ),
            2,
            "invalid type: string \"one\"",
        ),
        (
            format!("{INV}\n{}\n{OK}\n", OK.replace(",\"f\":\"read\"", "")),
            2,
            "missing field `f`",
        ),
        (format!("{INV}\n{INV}\n"), 2, "does not increase"),
        (
            format!("{INV}\n{}\n", INV.replace("\"index\":0", "\"index\":1")),
            2,
            "while its `read` invoked at line 1 has not completed",
        ),
        (format!("{OK}\n{INV}\n"), 1, "no pending invoke"),
        (
            format!("{INV}\n{}\n", OK.replace("\"read\"", "\"write\"")),
            2,
            "pending invoke at line 1 is `read`",
        ),
        (format!("{INV}\n\u{0}\u{1}\n{OK}\n"), 2, "expected value"),
    ];
    for (text, line, fragment) in cases {
        let (l, message) = error_of(&text, Format::Jsonl);
        assert_eq!(l, line, "{text:?}: {message}");
        assert!(
            message.contains(fragment),
            "{text:?}: {message:?} lacks {fragment:?}"
        );
    }
}

#[test]
fn invalid_utf8_is_named_with_its_line() {
    let mut bytes = format!("{INV}\n").into_bytes();
    bytes.extend_from_slice(b"{\"index\":1,\"type\":\"ok\",\"process\":1,\"f\":\"r\xffead\"}\n");
    bytes.extend_from_slice(format!("{OK}\n").as_bytes());
    let e = analysis::formats::jsonl::read_history_bytes(&bytes, "h").unwrap_err();
    assert_eq!((e.line, e.message.as_str()), (2, "invalid UTF-8"));
}

#[test]
fn foreign_corruptions_are_named_with_their_line() {
    let cases: Vec<(&str, Format, usize, &str)> = vec![
        ("INFO  jepsen.util - 1\t:invoke\t:read\tnil\nINFO  jepsen.util - 1\t:invoke\t:read\tnil\n", Format::JepsenLog, 2, "has not completed"),
        ("INFO  jepsen.util - x\t:invoke\t:read\tnil\nINFO  jepsen.util - 1\t:ok\t:read\t1\n", Format::JepsenLog, 1, "unknown process x"),
        ("INFO  jepsen.util - 1\t:invoke\t:cas\t[1 2\nINFO  jepsen.util - 1\t:ok\t:cas\t[1 2]\n", Format::JepsenLog, 1, "bad value"),
        ("[{:process 1 :type :invoke :f :read}\n {:process 1 :type :ok :f :write}]", Format::Edn, 2, "pending invoke at line 1 is `read`"),
        ("[{:process 1 :type :invoke :f :read}\n {:process \"a\" :type :ok :f :read}]", Format::Edn, 2, "unknown process"),
        ("[{:process 1 :type :invoke :f 7}]", Format::Edn, 1, ":f must be a keyword"),
        ("[{:process 1 :type :invoke :f :read :time -4}]", Format::Edn, 1, ":time must be a non-negative integer"),
        ("[{:process 1 :type :invoke :f :read}\n {:process 1 :type :ok :f :read :value }}]", Format::Edn, 2, "even number"),
        // Elle-shaped transactions (read by the EDN reader's fast path when well formed).
        ("[{:type :invoke, :f :txn, :value [[:append 1 2]], :process 0}\n{:type :ok, :f :txn, :value [[:append 1 2] [:r 1 [1 2], :process 0}]", Format::Edn, 2, "unexpected `}`"),
        ("[{:type :invoke, :f :txn, :value [[:incr 1 2]], :process 0, :index 0}]", Format::Edn, 1, "micro-op 1: unknown function"),
        ("[{:type :invoke, :f :txn, :value [[:append 1 2]], :process 0}\n{:type :okay, :f :txn, :value [[:append 1 2]], :process 0}]", Format::Edn, 2, "unknown op type :okay"),
        ("[{:type :invoke, :f :txn, :value [[:r 1 nil]], :process 0}\n\n{:type :ok, :f :txn, :value [[:r 1 [1 2.5]]], :process 0}]", Format::Edn, 3, "has an element that is not an integer or a string"),
        ("[{:type :invoke, :f :txn, :value [[:r 1 nil]], :process 0}\n{:type :ok, :f :txn, :value [[:r 1 [1 true]]], :process 0}]", Format::Edn, 2, "has an element that is not an integer or a string"),
        ("[{:type :invoke, :f :txn, :value [[:r 1 nil]], :process 0}\n{:type :ok, :f :txn, :value [[:r 1 [1]]], :process 0}\n{:type :ok, :f :txn, :value [[:r 1 [1]]], :process 0}]", Format::Edn, 3, "no pending invoke"),
        ("{:process 1, :type :invoke, :f :get, :key \"a\"}\n{:process 1, :type :ok, :f :get, :key [1]}\n{:a 1}\n", Format::PorcupineKv, 2, ":key must be"),
        ("{:process 1, :type :ok, :f :get, :key \"a\"}\n", Format::PorcupineKv, 1, "no pending invoke"),
    ];
    for (text, format, line, fragment) in cases {
        let (l, message) = error_of(text, format);
        assert_eq!(l, line, "{format} {text:?}: {message}");
        assert!(
            message.contains(fragment),
            "{format} {text:?}: {message:?} lacks {fragment:?}"
        );
    }
}

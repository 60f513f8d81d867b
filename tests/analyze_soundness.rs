//! `faultline analyze` on inputs written the way outside tools and the docs write them,
//! each a class of input where a checker must agree with the labels and never
//! manufacture a verdict: space-padded Jepsen logs, Jepsen logs with an error column,
//! trivially linearizable histories, a model that cannot follow every op, complete last
//! lines that do not parse, histories of only stale writes.

mod cli_support;
mod schema_support;

use cli_support::{faultline, testdata, write};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The labelled etcd logs with every tab replaced by a run of spaces (Jepsen's logger pads
/// columns with spaces in some versions) get their labels, op for op as the originals.
#[test]
fn space_padded_jepsen_logs_get_their_labels() {
    let dir = tempfile::tempdir().unwrap();
    let labels =
        std::fs::read_to_string(testdata().join("etcd-jepsen/labels.tsv")).expect("labels");
    let mut checked = 0;
    for row in labels.lines().skip(1).filter(|l| !l.is_empty()) {
        let f: Vec<&str> = row.split('\t').collect();
        let original =
            std::fs::read_to_string(testdata().join("etcd-jepsen").join(f[0])).expect("log");
        let padded: String = original
            .lines()
            .enumerate()
            .map(|(i, l)| l.replace('\t', &" ".repeat(1 + i % 3)) + "\n")
            .collect();
        // `.txt`, so the format is recognised from the content, not the extension.
        let path = write(dir.path(), &format!("{}.txt", f[0]), &padded);
        let out = faultline()
            .args(["analyze", "--summary"])
            .arg(&path)
            .output()
            .unwrap();
        let expected = if f[3] == "linearizable" { 0 } else { 1 };
        assert_eq!(
            out.status.code(),
            Some(expected),
            "{}: {}",
            f[0],
            stderr(&out)
        );
        checked += 1;
    }
    assert_eq!(checked, 50);
}

#[test]
fn a_log_that_mentions_jepsen_util_without_one_op_line_is_an_error_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = write(dir.path(), "odd.log", "INFO  jepsen.core - Running\nINFO  jepsen.util - 1|:invoke|:write|3\nINFO  jepsen.util - 1|:ok|:write|3\n");
    let out = faultline()
        .args(["analyze", "--summary"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(254), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("{}:2: ", log.display())),
        "{}",
        stderr(&out)
    );
}

#[test]
fn histories_with_nothing_left_to_check_are_linearizable() {
    let dir = tempfile::tempdir().unwrap();
    // Every client op failed (Knossos and Porcupine: linearizable).
    let failed = write(
        dir.path(),
        "failed.log",
        "INFO  jepsen.util - 0\t:invoke\t:write\t1\nINFO  jepsen.util - 0\t:fail\t:write\t1\n\
         INFO  jepsen.util - 1\t:invoke\t:read\tnil\nINFO  jepsen.util - 1\t:fail\t:read\t:timed-out\n",
    );
    let out = faultline()
        .args(["analyze", "--out"])
        .arg(dir.path().join("o1"))
        .arg(&failed)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let doc = schema_support::read_results(&dir.path().join("o1/results.json"));
    assert_eq!(doc["checkers"]["linearizable"]["valid"], true);
    assert_eq!(doc["checkers"]["linearizable"]["counts"]["ops-checked"], 0);
    // Only nemesis events: the linearizable checker says valid too.
    let nemesis = write(
        dir.path(),
        "nemesis.jsonl",
        "{\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"isolate\",\"value\":{}}\n{\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"heal\",\"value\":{}}\n",
    );
    let out = faultline()
        .args(["analyze", "--out"])
        .arg(dir.path().join("o2"))
        .arg(&nemesis)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let doc = schema_support::read_results(&dir.path().join("o2/results.json"));
    assert_eq!(doc["checkers"]["linearizable"]["valid"], true, "{doc:#}");
}

/// A generated cas-register history is valid under cas-register; under `register` (which
/// cannot follow cas) no key may come out invalid.
#[test]
fn a_model_that_cannot_follow_cas_never_reports_a_violation() {
    let dir = tempfile::tempdir().unwrap();
    let h = dir.path().join("cas.jsonl");
    faultline()
        .args([
            "gen-history",
            "--ops",
            "20000",
            "--keys",
            "20",
            "--concurrency",
            "10",
            "--seed",
            "4",
            "--out",
        ])
        .arg(&h)
        .assert()
        .success();
    faultline()
        .args(["analyze", "--summary", "--model", "cas-register"])
        .arg(&h)
        .assert()
        .code(0);
    let out_dir = dir.path().join("out");
    let out = faultline()
        .args(["analyze", "--model", "register", "--out"])
        .arg(&out_dir)
        .arg(&h)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "unknown, not invalid: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let lin =
        &schema_support::read_results(&out_dir.join("results.json"))["checkers"]["linearizable"];
    assert_eq!(lin["counts"]["keys-invalid"], 0);
    assert_eq!(lin["counts"]["keys-unknown"], lin["counts"]["keys"]);
    assert!(
        lin["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("model register cannot follow cas"),
        "{lin}"
    );
}

/// The documented error example, `okay`, is an error wherever its line is — also last.
#[test]
fn a_complete_last_line_that_does_not_parse_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = "{\"index\":0,\"type\":\"invoke\",\"process\":0,\"f\":\"write\",\"key\":\"k\",\"value\":1}\n\
                {\"index\":1,\"type\":\"okay\",\"process\":0,\"f\":\"write\",\"key\":\"k\",\"value\":1}\n";
    let h = write(dir.path(), "h.jsonl", text);
    let out = faultline()
        .args(["analyze", "--summary"])
        .arg(&h)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(254), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("{}:2: unknown variant `okay`", h.display())),
        "{}",
        stderr(&out)
    );
    // Without its newline the same line is what a crash leaves: dropped with a warning.
    let cut = write(dir.path(), "cut.jsonl", text.trim_end());
    let out = faultline()
        .args(["analyze", "--summary"])
        .arg(&cut)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(254), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("dropped the last line because it has no newline"),
        "{}",
        stderr(&out)
    );
}

/// Jepsen prints an op that has an error with the error as a fifth column.
#[test]
fn a_jepsen_log_with_an_error_column_is_read_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let log = write(
        dir.path(),
        "errors.log",
        "INFO  jepsen.util - 0\t:invoke\t:write\t1\n\
         INFO  jepsen.util - 0\t:ok\t:write\t1\n\
         INFO  jepsen.util - 1\t:invoke\t:cas\t[1 4]\n\
         INFO  jepsen.util - 1\t:info\t:cas\t[1 4]\t:timed-out\n\
         INFO  jepsen.util - 2\t:invoke\t:read\tnil\n\
         INFO  jepsen.util - 2\t:ok\t:read\t4\n",
    );
    let out = faultline()
        .args(["analyze", "--summary"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "the timed-out cas may have taken effect: {}",
        stderr(&out)
    );
}

/// Stale writes are judged by epoch-authority only; the client-op checkers have nothing to
/// read, which the `history` entry says.
#[test]
fn a_history_of_only_stale_writes_says_no_register_or_set_op_was_checked() {
    let dir = tempfile::tempdir().unwrap();
    let meta = r#""meta":{"group":1,"term":1,"log_index":5,"route_id":1,"route_epoch":1}"#;
    let text = format!(
        "{{\"type\":\"invoke\",\"process\":0,\"f\":\"stale-write\",\"key\":\"k\",\"value\":{{\"value\":1,\"group\":1,\"epoch\":1}}}}\n\
         {{\"type\":\"ok\",\"process\":0,\"f\":\"stale-write\",\"key\":\"k\",\"value\":{{\"value\":1,\"group\":1,\"epoch\":1}},{meta}}}\n"
    );
    let h = write(dir.path(), "stale.jsonl", &text);
    let out_dir = dir.path().join("out");
    let out = faultline()
        .args(["analyze", "--out"])
        .arg(&out_dir)
        .arg(&h)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("results.json")).unwrap()).unwrap();
    let reason = results["checkers"]["history"]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.contains("only client operations are stale-writes"),
        "{results:#}"
    );
    assert!(
        results["checkers"].get("epoch-authority").is_some(),
        "{results:#}"
    );
}

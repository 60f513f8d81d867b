//! `faultline analyze` end to end: exit codes, `--summary` lines, `--out` results, errors
//! naming file and line, and the verdicts over every labelled shared history.

mod cli_support;
mod schema_support;

use cli_support::{faultline, testdata, write};
use std::collections::BTreeMap;

const VALID_JSONL: &str = r#"{"index":0,"type":"invoke","process":0,"f":"write","key":"k","value":1,"time":1}
{"index":1,"type":"ok","process":0,"f":"write","key":"k","value":1,"time":2}
{"index":2,"type":"invoke","process":1,"f":"read","key":"k","value":null,"time":3}
{"index":3,"type":"ok","process":1,"f":"read","key":"k","value":1,"time":4}
"#;

const STALE_READ_JSONL: &str = r#"{"index":0,"type":"invoke","process":0,"f":"write","key":"k","value":1,"time":1}
{"index":1,"type":"ok","process":0,"f":"write","key":"k","value":1,"time":2}
{"index":2,"type":"invoke","process":1,"f":"read","key":"k","value":null,"time":3}
{"index":3,"type":"ok","process":1,"f":"read","key":"k","value":null,"time":4}
"#;

/// Parses `--summary` output into path → verdict.
fn summary_lines(stdout: &[u8]) -> BTreeMap<String, String> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| {
            let (path, verdict) = l
                .split_once('\t')
                .unwrap_or_else(|| panic!("summary line without a tab: {l:?}"));
            (path.to_string(), verdict.to_string())
        })
        .collect()
}

#[test]
fn every_labelled_shared_history_gets_its_label_through_the_cli() {
    let out = faultline()
        .args(["analyze", "--summary"])
        .arg(testdata())
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(1),
        "some labelled histories are invalid; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verdicts = summary_lines(&out.stdout);
    assert_eq!(verdicts.len(), 118, "one line per labelled history");
    for folder in ["etcd-jepsen", "kv", "knossos-cas", "elastickv"] {
        let labels =
            std::fs::read_to_string(testdata().join(folder).join("labels.tsv")).expect("labels");
        for row in labels.lines().skip(1).filter(|l| !l.is_empty()) {
            let f: Vec<&str> = row.split('\t').collect();
            let path = testdata().join(folder).join(f[0]).display().to_string();
            let expected = if f[3] == "linearizable" {
                "valid"
            } else {
                "invalid"
            };
            assert_eq!(
                verdicts.get(&path).map(String::as_str),
                Some(expected),
                "{path}"
            );
        }
    }
}

#[test]
fn valid_history_exits_0_and_writes_results_json() {
    let dir = tempfile::tempdir().unwrap();
    let h = write(dir.path(), "h.jsonl", VALID_JSONL);
    let out_dir = dir.path().join("out");
    let out = faultline()
        .arg("analyze")
        .arg("--out")
        .arg(&out_dir)
        .arg(&h)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("VALID") && stdout.contains("linearizable (cas-register): valid"),
        "{stdout}"
    );
    let results = schema_support::read_results(&out_dir.join("results.json"));
    assert_eq!(results["valid"], serde_json::json!(true));
    assert_eq!(
        results["checkers"]["linearizable"]["valid"],
        serde_json::json!(true)
    );
}

#[test]
fn invalid_history_exits_1_with_a_witness() {
    let dir = tempfile::tempdir().unwrap();
    let h = write(dir.path(), "h.jsonl", STALE_READ_JSONL);
    let out = faultline().arg("analyze").arg(&h).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("INVALID") && stdout.contains("not-linearizable"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("op 2 at {}:3", h.display())),
        "the witness op's line: {stdout}"
    );
}

#[test]
fn a_stored_elastickv_history_shows_its_stale_read_witness() {
    let h = testdata().join("elastickv/register-3groups-nofaults-nodereads.jsonl");
    let out = faultline()
        .args(["analyze", "--model", "cas-register"])
        .arg(&h)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Which read is named depends on the engine's culprit (2929 or 2987); the rest does not.
    let line = "through n3 at";
    let rest = "returned 728, a value overwritten by acknowledged write 2915 (value 729, acknowledged at 10.113 s)";
    assert!(
        stdout.contains("stale read: read ") && stdout.contains(line) && stdout.contains(rest),
        "{stdout}"
    );
}

#[test]
fn initial_value_comes_from_the_format_or_from_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    // A read of 0 before any write: wrong if the register starts absent (jsonl's default).
    let h = write(
        dir.path(),
        "h.jsonl",
        "{\"type\":\"invoke\",\"process\":1,\"f\":\"read\"}\n{\"type\":\"ok\",\"process\":1,\"f\":\"read\",\"value\":0}\n",
    );
    let out = faultline()
        .args(["analyze", "--summary"])
        .arg(&h)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let out = faultline()
        .args(["analyze", "--summary", "--initial", "0"])
        .arg(&h)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    // The same ops as Knossos EDN start at 0 by default.
    let edn = write(dir.path(), "h.edn", "[{:process 1 :type :invoke :f :read :value nil}\n {:process 1 :type :ok :f :read :value 0}]");
    let out = faultline()
        .args(["analyze", "--summary"])
        .arg(&edn)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let out = faultline()
        .args(["analyze", "--summary", "--initial", "null"])
        .arg(&edn)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn worst_verdict_over_inputs_decides_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "a.jsonl", VALID_JSONL);
    let bad = write(dir.path(), "b.jsonl", STALE_READ_JSONL);
    let out = faultline()
        .args(["analyze", "--summary"])
        .arg(&good)
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let lines = summary_lines(&out.stdout);
    assert_eq!(lines[&good.display().to_string()], "valid");
    assert_eq!(lines[&bad.display().to_string()], "invalid");
}

#[test]
fn several_inputs_share_one_results_json() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "a.jsonl", VALID_JSONL);
    let bad = write(dir.path(), "b.jsonl", STALE_READ_JSONL);
    let out_dir = dir.path().join("out");
    let out = faultline()
        .arg("analyze")
        .arg("--summary")
        .arg("--out")
        .arg(&out_dir)
        .arg(&good)
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let results = schema_support::read_results(&out_dir.join("results.json"));
    assert_eq!(results["valid"], serde_json::json!(false));
    let inputs = results["inputs"].as_array().expect("inputs");
    assert_eq!(inputs.len(), 2);
    assert_eq!(inputs[0]["verdict"]["valid"], serde_json::json!(true));
    assert_eq!(inputs[1]["verdict"]["valid"], serde_json::json!(false));
}

#[test]
fn an_explicit_format_that_does_not_fit_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let h = write(dir.path(), "h.jsonl", VALID_JSONL);
    let out = faultline()
        .args(["analyze", "--format", "edn"])
        .arg(&h)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(254));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("{}:1: ", h.display())), "{stderr}");
}

#[test]
fn nothing_to_check_is_unknown_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let h = write(
        dir.path(),
        "h.jsonl",
        "{\"index\":0,\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"start-partition\"}\n",
    );
    let out = faultline()
        .args(["analyze", "--summary"])
        .arg(&h)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        summary_lines(&out.stdout)[&h.display().to_string()],
        "unknown"
    );
}

#[test]
fn a_run_directory_is_checked_through_its_history_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("store/test/20260101T000000");
    std::fs::create_dir_all(&run).unwrap();
    write(&run, "history.jsonl", VALID_JSONL);
    write(&run, "faultline.log", "2026-01-01 INFO starting\n");
    let out = faultline()
        .args(["analyze", "--summary"])
        .arg(dir.path().join("store"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = summary_lines(&out.stdout);
    assert_eq!(
        lines.keys().cloned().collect::<Vec<_>>(),
        [run.join("history.jsonl").display().to_string()]
    );
}

#[test]
fn set_histories_are_checked_with_set_full() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"{"type":"invoke","process":0,"f":"add","value":1}
{"type":"ok","process":0,"f":"add","value":1}
{"type":"invoke","process":1,"f":"read-set","value":null}
{"type":"ok","process":1,"f":"read-set","value":[1]}
{"type":"invoke","process":1,"f":"read-set","value":null}
{"type":"ok","process":1,"f":"read-set","value":[]}
"#;
    let h = write(dir.path(), "set.jsonl", text);
    let out = faultline().arg("analyze").arg(&h).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("set-full: invalid") && stdout.contains("- lost"),
        "{stdout}"
    );
}

#[test]
fn bad_arguments_exit_254() {
    for args in [
        vec!["analyze"],
        vec!["analyze", "--format", "xml", "x"],
        vec!["analyze", "--model", "queue", "x"],
        vec!["analyze", "--initial", "{nope", "x"],
        vec!["analyze", "--time-budget", "-1", "x"],
    ] {
        let out = faultline().args(&args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(254),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn unreadable_or_corrupt_input_exits_254_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.jsonl");
    let out = faultline().arg("analyze").arg(&missing).output().unwrap();
    assert_eq!(out.status.code(), Some(254));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.jsonl"));

    let garbage = write(
        dir.path(),
        "g.jsonl",
        &format!("{VALID_JSONL}garbage\n{VALID_JSONL}"),
    );
    let out = faultline().arg("analyze").arg(&garbage).output().unwrap();
    assert_eq!(out.status.code(), Some(254));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:5: ", garbage.display())),
        "{stderr}"
    );

    let unknown_f = write(dir.path(), "f.jsonl", "{\"type\":\"invoke\",\"process\":0,\"f\":\"read\"}\n{\"type\":\"invoke\",\"process\":1,\"f\":\"frob\"}\n");
    let out = faultline().arg("analyze").arg(&unknown_f).output().unwrap();
    assert_eq!(out.status.code(), Some(254));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:2: ", unknown_f.display()))
            && stderr.contains("unknown function \"frob\""),
        "{stderr}"
    );
}

#[test]
fn truncated_last_line_is_a_warning_and_still_checked() {
    let dir = tempfile::tempdir().unwrap();
    let h = write(
        dir.path(),
        "h.jsonl",
        &format!("{VALID_JSONL}{{\"index\":4,\"type\":\"inv"),
    );
    let out = faultline().arg("analyze").arg(&h).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("warning: "),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = faultline()
        .args(["analyze", "--summary"])
        .arg(&h)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        summary_lines(&out.stdout).len(),
        1,
        "the summary stays one line per input"
    );
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("dropped the last line because it has no newline"));
}

#[test]
fn a_history_without_commit_metadata_gets_epoch_authority_not_applicable() {
    let dir = tempfile::tempdir().unwrap();
    let file = testdata().join("elastickv/register-1group-partition-kill-pause-leaderreads.jsonl");
    let out = faultline()
        .arg("analyze")
        .arg("--out")
        .arg(dir.path())
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("results.json")).unwrap())
            .unwrap();
    let epoch = &results["checkers"]["epoch-authority"];
    assert_eq!(epoch["valid"], "not-applicable", "{epoch}");
    assert!(
        epoch["reason"]
            .as_str()
            .unwrap()
            .contains("commit metadata"),
        "{epoch}"
    );
    assert_eq!(results["checkers"]["linearizable"]["valid"], true);
}

#[test]
fn a_log_index_alone_is_no_commit_metadata_for_epoch_authority() {
    // elastickv's writes record RawPut's commit_index as `meta.log_index`, reads through the
    // leader directory the serving `meta.node`: neither attributes a write to an epoch.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(
        testdata().join("elastickv/register-1group-partition-kill-pause-leaderreads.jsonl"),
    )
    .unwrap();
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let mut op: serde_json::Value = serde_json::from_str(line).unwrap();
            if op["type"] == "ok" {
                op["meta"] = if op["f"] == "write" {
                    serde_json::json!({"log_index": i})
                } else {
                    serde_json::json!({"node": "n1"})
                };
            }
            op.to_string()
        })
        .collect();
    let file = write(
        dir.path(),
        "with-log-index.jsonl",
        &(lines.join("\n") + "\n"),
    );
    let out = faultline()
        .arg("analyze")
        .arg("--out")
        .arg(dir.path())
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("results.json")).unwrap())
            .unwrap();
    assert_eq!(
        results["checkers"]["epoch-authority"]["valid"], "not-applicable",
        "{}",
        results["checkers"]["epoch-authority"]
    );
}

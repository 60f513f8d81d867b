//! `faultline gen-history` end to end: it writes JSON Lines that `faultline analyze` reads
//! and judges as the generator promises, and refuses bad arguments with exit code 254.

use assert_cmd::Command;

fn faultline() -> Command {
    Command::cargo_bin("faultline").expect("binary built")
}

fn gen(dir: &std::path::Path, name: &str, extra: &[&str]) -> std::path::PathBuf {
    let out = dir.join(name);
    let mut args = vec![
        "gen-history",
        "--ops",
        "3000",
        "--keys",
        "8",
        "--concurrency",
        "12",
        "--indeterminate",
        "0.05",
    ];
    args.extend_from_slice(extra);
    faultline()
        .args(&args)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    out
}

#[test]
fn generated_histories_are_judged_as_promised_by_analyze() {
    let dir = tempfile::tempdir().unwrap();
    let clean = gen(
        dir.path(),
        "clean.jsonl",
        &["--seed", "1", "--key-dist", "zipf:1.1"],
    );
    let stale = gen(
        dir.path(),
        "stale.jsonl",
        &["--seed", "2", "--anomaly", "stale-read"],
    );
    let lost = gen(
        dir.path(),
        "lost.jsonl",
        &["--seed", "3", "--anomaly", "lost-write"],
    );
    let lines = std::fs::read_to_string(&clean).unwrap();
    assert_eq!(
        lines.lines().count(),
        6000,
        "one line per invoke and per completion"
    );
    for line in lines.lines().take(50) {
        let op: serde_json::Value = serde_json::from_str(line).expect("each line is one JSON op");
        assert!(op["index"].is_u64() && op["process"].is_u64() && op["key"].is_string());
    }
    faultline()
        .args(["analyze", "--summary"])
        .arg(&clean)
        .assert()
        .code(0);
    faultline()
        .args(["analyze", "--summary"])
        .arg(&stale)
        .assert()
        .code(1);
    faultline()
        .args(["analyze", "--summary"])
        .arg(&lost)
        .assert()
        .code(1);
}

#[test]
fn the_same_seed_writes_the_same_history_to_stdout() {
    let run = || {
        faultline()
            .args(["gen-history", "--ops", "200", "--keys", "3", "--seed", "9"])
            .output()
            .unwrap()
    };
    let (a, b) = (run(), run());
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
    assert_eq!(String::from_utf8(a.stdout).unwrap().lines().count(), 400);
}

#[test]
fn bad_arguments_exit_254_with_a_message() {
    for args in [
        vec!["gen-history", "--ops", "10", "--key-dist", "zipf:abc"],
        vec!["gen-history", "--ops", "10", "--anomaly", "torn-write"],
        vec!["gen-history", "--ops", "10", "--keys", "0"],
        vec!["gen-history", "--ops", "10", "--indeterminate", "2"],
    ] {
        let out = faultline().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(254), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?} explains itself");
    }
}

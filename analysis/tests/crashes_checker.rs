//! The crashes checker: an unexpected `node-exit` is invalid and named; a watched run with
//! only expected exits is valid; without evidence of a complete watch it is unknown. Each
//! history also goes through the JSON Lines reader, as another tool would write it.

use analysis::checkers::crashes::{check, crash_line, CrashesOptions};
use analysis::formats::jsonl::read_history;
use analysis::history::History;
use analysis::verdict::Validity;

const WATCH: &str = r#"{"type":"info","process":"watcher","f":"node-watch","value":{"nodes":["n1","n2","n3"],"cluster":"netns"},"time":1000000}"#;
const WATCH_END: &str = r#"{"type":"info","process":"watcher","f":"node-watch-end","value":{"final_poll_ok":true,"polls":40,"failed_polls":0},"time":20000000000}"#;
const WRITE: &str = r#"{"type":"invoke","process":0,"f":"write","key":"k","value":1,"time":2000000}
{"type":"ok","process":0,"f":"write","key":"k","value":1,"time":3000000}"#;
const KILLED: &str = r#"{"type":"info","process":"watcher","f":"node-exit","node":"n1","value":{"expected":true,"exit_code":null,"signal":"SIGKILL","log_tail":["serving"]},"time":5000000000}"#;
const PANICKED: &str = r#"{"type":"info","process":"watcher","f":"node-exit","node":"n2","value":{"expected":false,"exit_code":2,"signal":null,"log_tail":["goroutine 1 [running]:","panic: runtime error: makeslice: cap out of range","","goroutine 7 [running]:","main.main()"]},"time":7250000000}"#;

fn history(lines: &[&str]) -> History {
    let text = lines.join("\n") + "\n";
    read_history(text.as_bytes(), "crashes.jsonl")
        .expect("the history parses")
        .0
}

#[test]
fn an_unexpected_exit_is_invalid_naming_node_time_status_and_panic_line() {
    let r = check(
        &history(&[WATCH, WRITE, KILLED, PANICKED, WATCH_END]),
        &CrashesOptions::default(),
    );
    assert_eq!(r.valid, Validity::Invalid, "{r:?}");
    assert_eq!(
        r.anomalies.len(),
        1,
        "the expected kill is no anomaly: {:?}",
        r.anomalies
    );
    let a = &r.anomalies[0];
    assert_eq!(a["type"], "unexpected-exit");
    assert_eq!(a["node"], "n2");
    assert_eq!(a["time_s"], 7.25);
    assert_eq!(a["exit_code"], 2);
    assert_eq!(
        a["crash_line"],
        "panic: runtime error: makeslice: cap out of range"
    );
    assert_eq!(a["op"], 4, "the anomaly points at the event's index");
    let reason = r.reason.unwrap();
    assert!(
        reason.contains("n2 exited on its own at 7.25 s (exit code 2): panic: runtime error"),
        "{reason}"
    );
    assert_eq!(
        (
            r.counts["exits"],
            r.counts["unexpected-exits"],
            r.counts["expected-exits"]
        ),
        (2, 1, 1)
    );
    assert_eq!(r.details["crashed_nodes"], serde_json::json!(["n2"]));
}

#[test]
fn an_unexpected_exit_is_invalid_even_without_a_watch_event() {
    let r = check(&history(&[WRITE, PANICKED]), &CrashesOptions::default());
    assert_eq!(
        r.valid,
        Validity::Invalid,
        "an exit in the history is evidence enough: {r:?}"
    );
}

#[test]
fn an_exit_without_expected_counts_as_unexpected() {
    let bare = r#"{"type":"info","process":"watcher","f":"node-exit","node":"n3","value":{"signal":"SIGSEGV"},"time":9000000000}"#;
    let r = check(
        &history(&[WATCH, bare, WATCH_END]),
        &CrashesOptions::default(),
    );
    assert_eq!(r.valid, Validity::Invalid, "{r:?}");
    assert!(r
        .reason
        .unwrap()
        .contains("n3 exited on its own at 9.00 s (signal SIGSEGV)"));
}

#[test]
fn a_watched_run_with_only_expected_exits_is_valid() {
    let r = check(
        &history(&[WATCH, WRITE, KILLED, WATCH_END]),
        &CrashesOptions::default(),
    );
    assert_eq!(r.valid, Validity::Valid, "{r:?}");
    assert_eq!(r.counts["nodes-watched"], 3);
    assert!(r.anomalies.is_empty());
}

#[test]
fn a_history_nobody_watched_is_unknown_not_valid() {
    let r = check(&history(&[WRITE]), &CrashesOptions::default());
    assert_eq!(r.valid, Validity::Unknown);
    assert!(r.reason.unwrap().contains("no node-watch event"));
}

#[test]
fn a_watch_that_never_ended_or_whose_last_look_failed_is_unknown() {
    let r = check(&history(&[WATCH, WRITE]), &CrashesOptions::default());
    assert_eq!(r.valid, Validity::Unknown);
    assert!(r.reason.unwrap().contains("never recorded its end"));
    let failed = WATCH_END.replace(r#""final_poll_ok":true"#, r#""final_poll_ok":false"#);
    let r = check(
        &history(&[WATCH, WRITE, &failed]),
        &CrashesOptions::default(),
    );
    assert_eq!(r.valid, Validity::Unknown);
    assert!(r.reason.unwrap().contains("last look"));
}

#[test]
fn crash_lines_of_go_and_rust() {
    assert_eq!(
        crash_line(&["ok", "fatal error: concurrent map writes", "goroutine 1"]).as_deref(),
        Some("fatal error: concurrent map writes")
    );
    let rust = [
        "INFO serving",
        "thread 'main' panicked at refkv/src/main.rs:12:5:",
        "refkv: --panic-after: node 2 panics as asked",
        "note: run with `RUST_BACKTRACE=1`",
    ];
    assert_eq!(
        crash_line(&rust).as_deref(),
        Some("thread 'main' panicked at refkv/src/main.rs:12:5: refkv: --panic-after: node 2 panics as asked")
    );
    assert_eq!(crash_line(&["INFO all good", "WARN slow"]), None);
    let backtrace = [
        rust[1],
        rust[2],
        "stack backtrace:",
        "   5: std::panic::catch_unwind",
        "             at /rustc/library/std/src/panic.rs:359:14",
    ];
    assert_eq!(
        crash_line(&backtrace).as_deref(),
        crash_line(&rust).as_deref(),
        "a backtrace frame is no crash line"
    );
    let nested = ["panic: first [recovered]", "\tpanic: second"];
    assert_eq!(
        crash_line(&nested).as_deref(),
        Some("panic: second"),
        "the last panic is the one that killed it"
    );
}

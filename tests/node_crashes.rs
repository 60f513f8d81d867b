//! End-to-end: a server that dies on its own is a finding, on every cluster kind faultline
//! runs nodes in. refkv's test-only `--panic-after 2=4s` makes node n2 panic 4 s after it
//! starts; a short register run without faults must then be invalid through the `crashes`
//! checker, naming n2, the time and the panic line, in `results.json`, the JUnit file, the
//! log and the report, while the run goes on. netns (root) leaves the node down; Docker
//! runs with `--restart-crashed` and must bring it back (and see it crash again).

mod test_support;
use analysis::history::{History, Op, Process};
use serde_json::json;
use std::path::Path;
use test_support::*;

/// n2 panics this long after each start of its process.
const PANIC_AFTER: &str = "--server-arg=--panic-after=2=4s";

fn crash_run(
    name: &str,
    cluster: &str,
    extra: &[&str],
) -> (std::path::PathBuf, std::process::Output) {
    let mut args = vec![
        "--cluster",
        cluster,
        "--workload",
        "register",
        "--nemesis",
        "none",
        "--time-limit",
        "12",
        "--no-auto-split",
    ];
    args.extend_from_slice(&["--test-name", name, PANIC_AFTER]);
    args.extend_from_slice(extra);
    run_test(name, &args)
}

fn node_events<'h>(h: &'h History, f: &str, node: &str) -> Vec<&'h Op> {
    h.ops
        .iter()
        .filter(|o| o.process == Process::Watcher && o.f == f && o.node.as_deref() == Some(node))
        .collect()
}

/// The promises every cluster kind keeps for a node that panicked on its own.
fn assert_crash_is_a_finding(run: &Path, out: &std::process::Output) -> History {
    let verdict = results(run);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a crash must make the run invalid: {verdict:#}\n{}",
        show(out)
    );
    let crashes = &verdict["checkers"]["crashes"];
    assert_eq!(crashes["valid"], json!(false), "{crashes:#}");
    let first = &crashes["anomalies"][0];
    assert_eq!(first["type"], "unexpected-exit");
    assert_eq!(first["node"], "n2");
    assert_eq!(first["exit_code"], 101, "Rust's panic status: {first:#}");
    let crash_line = first["crash_line"].as_str().unwrap_or_default();
    assert!(
        crash_line.contains("panicked at") && crash_line.contains("--panic-after"),
        "the panic line: {first:#}"
    );
    // The history's clock starts before the cluster does, so the exit comes at least 4 s in
    // but how much later depends on how long the start took: only the lower bound is fixed.
    let time_s = first["time_s"].as_f64().expect("the exit's time");
    assert!(time_s >= 4.0, "n2 panics 4 s after its start: {time_s}");
    let reason = crashes["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("n2 exited on its own at"), "{reason}");

    let history = read_history(run);
    let last_client_op = history
        .ops
        .iter()
        .filter(|o| matches!(o.process, Process::Client(_)))
        .map(|o| o.time)
        .max()
        .unwrap_or(0);
    assert!(
        time_s * 1e9 <= last_client_op as f64,
        "n2 panicked inside the run: at {time_s} s, last client op at {last_client_op} ns"
    );
    let exit = node_events(&history, "node-exit", "n2")[0];
    assert_eq!(exit.value["expected"], json!(false));
    assert!(
        exit.value["log_tail"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "the log tail is recorded: {exit:?}"
    );
    let oks_after = history
        .ops
        .iter()
        .filter(|o| o.time > exit.time && o.kind == analysis::history::OpType::Ok)
        .count();
    assert!(
        oks_after > 100,
        "the run goes on after the crash ({oks_after} ok ops after it)"
    );
    assert!(history
        .ops
        .iter()
        .any(|o| o.f == "node-watch-end" && o.value["final_poll_ok"] == json!(true)));

    let junit = std::fs::read_to_string(run.join("results.junit.xml")).expect("results.junit.xml");
    let case = &junit[junit.find("name=\"crashes\"").expect("a crashes test case")..];
    assert!(
        case.starts_with("name=\"crashes\"")
            && case[..case.find("</testcase>").unwrap_or(case.len())]
                .contains("n2 exited on its own"),
        "{junit}"
    );
    let log = std::fs::read_to_string(run.join("faultline.log")).expect("faultline.log");
    assert!(
        log.contains("n2 exited on its own") && log.contains("the run goes on"),
        "logged at once"
    );
    let report = std::fs::read_to_string(run.join("report.html")).expect("report.html");
    assert!(
        report.contains("✕ n2"),
        "the crash is marked on the report's timeline"
    );
    history
}

#[test]
fn netns_a_node_that_panics_is_invalid_and_stays_down() {
    let _one = lock();
    if !nix::unistd::geteuid().is_root() {
        missing_prerequisite("--cluster netns needs root");
        return;
    }
    let (run, out) = crash_run("crash-netns", "netns", &[]);
    let history = assert_crash_is_a_finding(&run, &out);
    assert_eq!(
        node_events(&history, "node-exit", "n2").len(),
        1,
        "without --restart-crashed n2 stays down"
    );
    assert!(node_events(&history, "node-restart", "n2").is_empty());
    assert_eq!(
        test_json(&run)["phases"]["nodes_down_after_main"],
        json!(["n2"]),
        "recovery and final reads skip it"
    );
}

#[test]
fn docker_a_node_that_panics_is_invalid_and_restart_crashed_brings_it_back() {
    let _one = lock();
    let (run, out) = crash_run("crash-docker", "docker", &["--restart-crashed"]);
    let history = assert_crash_is_a_finding(&run, &out);
    let restarts = node_events(&history, "node-restart", "n2");
    assert!(
        !restarts.is_empty() && restarts.iter().all(|r| r.value["ok"] == json!(true)),
        "{restarts:?}"
    );
    assert!(
        node_events(&history, "node-exit", "n2").len() >= 2,
        "restarted, it panics again 4 s later"
    );
    let cluster = test_json(&run)["cluster"].clone();
    let label = format!(
        "faultline.run={}",
        cluster["run_id"].as_str().expect("run id")
    );
    assert!(
        docker_ids("container", &label).is_empty(),
        "containers left behind"
    );
}

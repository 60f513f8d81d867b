//! End-to-end: `faultline test --db elastickv --cluster external` against the elastickv
//! behaviour double (`tests/ekv_double`), so CI sees without elastickv that (a) a set run
//! with forced splits and elastickv's error texts is valid — no false "lost" — and (b) the
//! stale reads of a node reading at a lagging timestamp are found with `--read-path node`
//! and absent with `--read-path leader`.

mod ekv_double;
mod test_support;

use ekv_double::Options;
use std::time::Duration;
use test_support::*;

fn run(
    name: &str,
    endpoints: String,
    extra: &[&str],
) -> (std::path::PathBuf, std::process::Output) {
    let store = store_dir(name);
    let out = faultline()
        .args(["test", "--store"])
        .arg(&store)
        .args([
            "--no-progress",
            "--seed",
            "7",
            "--db",
            "elastickv",
            "--cluster",
            "external",
            "--endpoints",
            &endpoints,
        ])
        .args(["--groups", "3", "--test-name", name])
        .args(extra)
        .output()
        .expect("faultline runs");
    (latest_run(&store), out)
}

async fn run_against(
    opts: Options,
    name: &'static str,
    extra: &'static [&'static str],
) -> (std::path::PathBuf, std::process::Output) {
    let double = ekv_double::start(Options {
        nodes: 3,
        groups: 3,
        ..opts
    })
    .await;
    let endpoints = double.endpoints();
    tokio::task::spawn_blocking(move || run(name, endpoints, extra))
        .await
        .expect("the run finished")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_run_with_splits_and_elastickv_errors_is_valid() {
    let opts = Options {
        not_leader_after_apply_every: 40,
        hlc_refused_every: 57,
        circuit_open_after_apply_every: 71,
        ..Default::default()
    };
    let args = &[
        "--workload",
        "set",
        "--nemesis",
        "split",
        "--nemesis-interval",
        "2",
        "--time-limit",
        "8",
    ];
    let (run, out) = run_against(opts, "ekv-double-set", args).await;
    let verdict = results(&run);
    assert_eq!(
        out.status.code(),
        Some(0),
        "not valid: {verdict:#}\n{}",
        show(&out)
    );
    assert_eq!(
        verdict["checkers"]["set-full"]["valid"], true,
        "{verdict:#}"
    );
    let h = read_history(&run);
    let effective = nemesis_events(&h, "start-split")
        .iter()
        .filter(|e| e.value["effective"] == true)
        .count();
    assert!(effective >= 1, "no split took effect");
    let errors = |text: &str, kind: analysis::history::OpType| {
        h.ops
            .iter()
            .filter(|o| o.kind == kind && o.error.as_deref().is_some_and(|e| e.starts_with(text)))
            .count()
    };
    assert!(
        errors("not-leader", analysis::history::OpType::Info) > 0,
        "applied-then-not-leader puts are indeterminate"
    );
    assert!(
        errors("hlc-ceiling-exhausted", analysis::history::OpType::Fail) > 0,
        "puts refused before proposal are definite"
    );
    assert!(
        errors("leader-proxy-circuit-open", analysis::history::OpType::Info) > 0,
        "circuit-open after a landed attempt is indeterminate"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lagging_reads_through_the_own_node_are_found() {
    let opts = Options {
        follower_lag: Duration::from_millis(1500),
        ..Default::default()
    };
    let args = &[
        "--workload",
        "register",
        "--read-path",
        "node",
        "--time-limit",
        "6",
    ];
    let (run, out) = run_against(opts, "ekv-double-node-reads", args).await;
    let verdict = results(&run);
    assert_eq!(
        out.status.code(),
        Some(1),
        "stale reads not found: {verdict:#}\n{}",
        show(&out)
    );
    assert_eq!(
        verdict["checkers"]["linearizable"]["valid"], false,
        "{verdict:#}"
    );
    // Each invalid key is a proven stale read naming the node that served it.
    for a in verdict["checkers"]["linearizable"]["anomalies"]
        .as_array()
        .unwrap()
    {
        assert_eq!(a["cause"], "stale-read", "{a:#}");
        assert!(
            a["stale_read"]["read"]["node"].is_string()
                && a["stale_read"]["writes_acked_since"].as_u64() >= Some(1),
            "{a:#}"
        );
    }
    assert_eq!(test_json(&run)["test"]["read_path"], "node");
    assert_eq!(
        test_json(&run)["test"]["register_ops"],
        serde_json::json!(["read", "write"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_store_read_through_leaders_is_valid() {
    let opts = Options {
        follower_lag: Duration::from_millis(1500),
        ..Default::default()
    };
    let args = &[
        "--workload",
        "register",
        "--read-path",
        "leader",
        "--time-limit",
        "6",
    ];
    let (run, out) = run_against(opts, "ekv-double-leader-reads", args).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{:#}\n{}",
        results(&run),
        show(&out)
    );
}

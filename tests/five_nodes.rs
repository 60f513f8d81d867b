//! End-to-end: a 5-node refkv cluster (`--nodes 5 --cluster netns`) under the partition
//! shapes that only make sense at five (majorities ring, bridge, leader), kills and forced
//! splits (20 s is too short for an automatic split). The run is valid, every one of the
//! five nodes served clients and left a log, the ring and bridge shapes were applied and
//! effective, and nothing is left behind. Kept short (20 s of workload). Needs root to
//! create network namespaces; without it the test only checks the refusal.

mod test_support;
use analysis::history::Process;
use std::collections::BTreeSet;
use test_support::*;

#[test]
fn five_node_netns_run_under_five_node_partitions_is_valid() {
    let _one = lock();
    let args = [
        "--cluster",
        "netns",
        "--nodes",
        "5",
        "--nemesis",
        "partition,kill,split",
        "--partition-modes",
        "majorities-ring,bridge,leader",
        "--nemesis-interval",
        "2",
        "--time-limit",
        "20",
        "--test-name",
        "five-nodes",
    ];
    let (run, out) = run_test("five-nodes", &args);
    if !nix::unistd::geteuid().is_root() {
        assert!(String::from_utf8_lossy(&out.stderr).contains("needs root"), "{}", show(&out));
        return;
    }
    let verdict = results(&run);
    assert_eq!(out.status.code(), Some(0), "5-node run not valid: {verdict:#}\n{}", show(&out));
    assert_eq!(test_json(&run)["cluster"]["nodes"].as_array().map(Vec::len), Some(5), "test.json lists five nodes");

    let history = read_history(&run);
    let served: BTreeSet<&str> = history
        .ops
        .iter()
        .filter(|o| matches!(o.process, Process::Client(_)) && o.kind == analysis::history::OpType::Ok)
        .filter_map(|o| o.node.as_deref())
        .collect();
    assert_eq!(served.len(), 5, "every node served clients: {served:?}");
    for n in 1..=5 {
        assert!(run.join(format!("nodes/n{n}.log")).metadata().is_ok_and(|m| m.len() > 0), "n{n}.log collected");
    }

    let partitions = nemesis_events(&history, "start-partition");
    let modes: BTreeSet<&str> = partitions.iter().filter_map(|o| o.value["mode"].as_str()).collect();
    assert!(modes.contains("majorities-ring"), "a majorities ring was tried: {modes:?}");
    for p in &partitions {
        if p.value["mode"] != "leader" {
            // A leader partition aims at the leader found just before; the others cut by design.
            assert_eq!(p.value["effective"], true, "the partition took effect: {}", p.value);
        }
        if p.value["mode"] == "majorities-ring" {
            let grudge = p.value["grudge"].as_object().expect("grudge recorded");
            assert_eq!(grudge.len(), 5, "every node of the ring drops someone: {}", p.value);
            assert!(grudge.values().all(|from| from.as_array().map(Vec::len) == Some(2)), "each drops its two far nodes: {}", p.value);
        }
    }
    let run_id = test_json(&run)["cluster"]["run_id"].as_str().expect("run id").to_string();
    let namespaces = std::process::Command::new("ip").args(["netns", "list"]).output().expect("ip runs");
    assert!(!String::from_utf8_lossy(&namespaces.stdout).contains(&run_id), "namespaces of {run_id} left behind");
}

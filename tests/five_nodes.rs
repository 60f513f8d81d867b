//! End-to-end: a 5-node refkv cluster (`--nodes 5 --cluster netns`) under majorities-ring
//! partitions (a shape that only makes sense at five), kills and forced splits (20 s is too
//! short for an automatic split). No checker finds a violation, every one of the five nodes
//! served clients and left a log, every partition was a ring that took effect with each node
//! dropping its two far nodes, and nothing is left behind. Only the ring is asked for, so
//! every partition is one whatever the draw; the bridge at five is checked by the five-host
//! run of `ssh_refkv.rs`. Exit 0 is not asserted: it needs a kill to hit a leader and a
//! forced split to be accepted, which is chance. Kept short (20 s of workload). Needs root to
//! create network namespaces; without it the test only checks the refusal.

mod test_support;
use analysis::history::Process;
use std::collections::BTreeSet;
use test_support::*;

#[test]
fn five_node_netns_run_under_majorities_rings_raises_no_false_alarm() {
    let _one = lock();
    let args = [
        "--cluster",
        "netns",
        "--nodes",
        "5",
        "--nemesis",
        "partition,kill,split",
        "--partition-modes",
        "majorities-ring",
        "--nemesis-interval",
        "2",
        "--time-limit",
        "20",
        "--test-name",
        "five-nodes",
    ];
    let (run, out) = run_test("five-nodes", &args);
    if !nix::unistd::geteuid().is_root() {
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("needs root"),
            "{}",
            show(&out)
        );
        return;
    }
    let verdict = results(&run);
    assert!(
        matches!(out.status.code(), Some(0 | 2)),
        "5-node run: {verdict:#}\n{}",
        show(&out)
    );
    assert_no_false_alarm(&verdict);
    assert_eq!(
        test_json(&run)["cluster"]["nodes"].as_array().map(Vec::len),
        Some(5),
        "test.json lists five nodes"
    );

    let history = read_history(&run);
    let served: BTreeSet<&str> = history
        .ops
        .iter()
        .filter(|o| {
            matches!(o.process, Process::Client(_)) && o.kind == analysis::history::OpType::Ok
        })
        .filter_map(|o| o.node.as_deref())
        .collect();
    assert_eq!(served.len(), 5, "every node served clients: {served:?}");
    for n in 1..=5 {
        assert!(
            run.join(format!("nodes/n{n}.log"))
                .metadata()
                .is_ok_and(|m| m.len() > 0),
            "n{n}.log collected"
        );
    }

    let partitions = nemesis_events(&history, "start-partition");
    assert!(!partitions.is_empty(), "no partition");
    for p in &partitions {
        assert_eq!(p.value["mode"], "majorities-ring", "{}", p.value);
        // A ring cuts links by design: every node loses its majority.
        assert_eq!(
            p.value["effective"], true,
            "the partition took effect: {}",
            p.value
        );
        let grudge = p.value["grudge"].as_object().expect("grudge recorded");
        assert_eq!(
            grudge.len(),
            5,
            "every node of the ring drops someone: {}",
            p.value
        );
        assert!(
            grudge
                .values()
                .all(|from| from.as_array().map(Vec::len) == Some(2)),
            "each drops its two far nodes: {}",
            p.value
        );
    }
    let run_id = test_json(&run)["cluster"]["run_id"]
        .as_str()
        .expect("run id")
        .to_string();
    let namespaces = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip runs");
    assert!(
        !String::from_utf8_lossy(&namespaces.stdout).contains(&run_id),
        "namespaces of {run_id} left behind"
    );
}

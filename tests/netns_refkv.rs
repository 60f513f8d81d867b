//! End-to-end: `faultline test --cluster netns` runs refkv as plain processes in network
//! namespaces (no Docker). A clean run is valid; a `--bug no-fence` run under the `move`
//! nemesis (the detection matrix's row) is invalid; nothing is left behind (no namespace, no
//! host link) and the host's firewall never changes.
//! Needs root; without it the run must refuse with a message that says so.

mod test_support;
use test_support::*;

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

fn faultline_namespaces() -> Vec<String> {
    let out = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("faultline-"))
        .map(str::to_string)
        .collect()
}

/// A clean run: forced splits (cross-group moves among them) and kills, 40 s.
const CLEAN: &[&str] = &[
    "--nemesis",
    "split,kill",
    "--time-limit",
    "40",
    "--nemesis-interval",
    "4",
];

fn netns_run(name: &str, scenario: &[&str]) -> (std::path::PathBuf, std::process::Output) {
    let mut args = vec!["--cluster", "netns", "--test-name", name];
    args.extend_from_slice(scenario);
    run_test(name, &args)
}

fn assert_nothing_left(run: &std::path::Path) {
    let cluster = test_json(run)["cluster"].clone();
    let run_id = cluster["run_id"]
        .as_str()
        .expect("run id in test.json")
        .to_string();
    assert_eq!(cluster["kind"], "netns");
    assert!(
        faultline_namespaces().iter().all(|n| !n.contains(&run_id)),
        "namespaces of {run_id} left behind"
    );
    let link = cluster["host_link"]
        .as_str()
        .expect("host link in test.json");
    let links = std::process::Command::new("ip")
        .args(["-br", "link"])
        .output()
        .expect("ip runs");
    assert!(
        !String::from_utf8_lossy(&links.stdout).contains(link),
        "host link {link} left behind"
    );
}

#[test]
fn netns_clean_run_is_valid_and_no_fence_is_invalid() {
    let _one = lock();
    if !is_root() {
        let (_, out) = netns_run("netns-no-root", CLEAN);
        assert_ne!(out.status.code(), Some(0));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("needs root"),
            "{}",
            show(&out)
        );
        return;
    }
    let firewall = host_firewall();

    let (run, out) = netns_run("netns-clean", CLEAN);
    let verdict = results(&run);
    assert_eq!(
        out.status.code(),
        Some(0),
        "clean netns run not valid: {verdict:#}\n{}",
        show(&out)
    );
    assert_eq!(
        verdict["checkers"]["crashes"]["valid"],
        serde_json::json!(true),
        "a clean run's crashes is valid: {verdict:#}"
    );
    let history = read_history(&run);
    assert!(client_oks(&history) > 1000, "too few successful ops");
    assert!(
        !nemesis_events(&history, "start-kill").is_empty(),
        "no kill happened"
    );
    assert!(
        run.join("nodes/n1.log")
            .metadata()
            .map(|m| m.len() > 0)
            .unwrap_or(false),
        "node logs collected"
    );
    assert_nothing_left(&run);

    // The detection matrix's no-fence row (a move aimed at BACKFILL with slow copies, 20 s).
    // Forced splits every 4 s with kills (this test until 2026-12-02) missed the bug by
    // chance: one full test run had three cross-group moves in 60 s and no write in their
    // windows.
    let (run, out) = netns_run("netns-no-fence", &matrix_scenario("no-fence"));
    let verdict = results(&run);
    assert_eq!(
        out.status.code(),
        Some(1),
        "no-fence netns run not invalid: {verdict:#}\n{}",
        show(&out)
    );
    assert_eq!(verdict["valid"], serde_json::json!(false));
    assert_nothing_left(&run);
    assert_eq!(host_firewall(), firewall, "the host's firewall changed");
}

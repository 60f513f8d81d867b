//! End-to-end: `faultline test --cluster ssh --db etcd --remote-binary /usr/bin/etcd`: etcd
//! already installed on the hosts (Debian's etcd-server; nothing is uploaded), three real
//! sshd hosts in network namespaces (`ssh_support`), the register workload under
//! partitions, kills and pauses, with `--sudo` (a stand-in `sudo` on the sessions' PATH logs
//! what it ran: the firewall commands, only they). No checker finds a violation, and the run
//! leaves no process, rule or file on any host. Gated only on this machine being able to
//! create network namespaces.
//!
//! Exit 0 is not asserted: it needs every fault kind to take effect, which on etcd (one
//! group) means hitting its single leader, and after a partition heals etcd may still be
//! electing one when the next fault looks for it. Every partition aims at the leader, and
//! 30 s at a 3 s pace gives each kind a second turn, but whether each lands is chance.

mod ssh_support;
mod test_support;
use ssh_support::SshHosts;
use test_support::*;

const ETCD: &str = "/usr/bin/etcd";

#[test]
fn etcd_already_on_the_hosts_runs_valid_over_ssh_and_leaves_nothing() {
    let _one = lock();
    let hosts = match SshHosts::create(3, "e") {
        Ok(h) => h,
        Err(why) => return missing_prerequisite(&format!("cannot set up sshd hosts here: {why}")),
    };
    assert!(
        std::path::Path::new(ETCD).exists(),
        "{ETCD} is missing (apt-get install etcd-server)"
    );
    let remote = hosts.path("remote");
    let (key, known, dir) = (
        hosts.key().display().to_string(),
        hosts.known_hosts().display().to_string(),
        remote.display().to_string(),
    );
    let list = hosts.host_list();
    let args = [
        "--cluster",
        "ssh",
        "--hosts",
        &list,
        "--ssh-user",
        "root",
        "--ssh-key",
        &key,
        "--ssh-known-hosts",
        &known,
        "--ssh-dir",
        &dir,
        "--sudo",
        "--db",
        "etcd",
        "--remote-binary",
        ETCD,
        "--workload",
        "register",
        "--nemesis",
        "partition,kill,pause",
        "--partition-modes",
        "leader",
        "--nemesis-interval",
        "3",
        "--time-limit",
        "30",
        "--test-name",
        "ssh-etcd",
    ];
    let (run, out) = run_test("ssh-etcd", &args);
    let verdict = results(&run);
    assert!(
        matches!(out.status.code(), Some(0 | 2)),
        "etcd over ssh: {verdict:#}\n{}",
        show(&out)
    );
    assert_no_false_alarm(&verdict);
    assert_eq!(
        test_json(&run)["cluster"]["binary"]["on_host"],
        ETCD,
        "nothing was uploaded"
    );
    let history = read_history(&run);
    for fault in ["start-partition", "start-kill", "start-pause"] {
        assert!(!nemesis_events(&history, fault).is_empty(), "no {fault}");
    }
    let sudo = std::fs::read_to_string(hosts.sudo_log()).unwrap_or_default();
    assert!(
        sudo.lines()
            .any(|l| l.starts_with("iptables ") && l.contains("-j DROP")),
        "--sudo ran the partition's rules: {sudo}"
    );
    assert!(
        sudo.lines().all(|l| l.starts_with("iptables ")),
        "only the firewall commands go through sudo: {sudo}"
    );
    hosts.assert_nothing_left(&remote);
}

//! Measurement, not part of the default run: 60 s `--cluster ssh` runs on five real sshd
//! hosts (network namespaces, `ssh_support`), refkv (hotspot, with splits) and etcd (register,
//! already on the hosts), under `--nemesis partition,kill,pause` (refkv also `split`) `--nemesis-interval 5`, the
//! shape of the docker and netns five-node figures in `docs/running.md`. Each must be valid
//! and leave nothing on any host; each prints its client op counts for the docs.
//!
//! Run: `cargo test -p faultline --test ssh_five_hosts -- --ignored --nocapture`.

mod ssh_support;
mod test_support;
use analysis::history::OpType;
use ssh_support::SshHosts;
use test_support::*;

const FAULTS: &[&str] = &["--nemesis-interval", "5", "--time-limit", "60"];

/// Runs `faultline test` on five fresh hosts with `extra`; asserts valid and nothing left.
fn five_host_run(name: &str, tag: &str, extra: &[&str]) {
    let _one = lock();
    let hosts = match SshHosts::create(5, tag) {
        Ok(h) => h,
        Err(why) => return missing_prerequisite(&format!("cannot set up sshd hosts here: {why}")),
    };
    let remote = hosts.path("remote");
    let (key, known, dir, list) = (
        hosts.key().display().to_string(),
        hosts.known_hosts().display().to_string(),
        remote.display().to_string(),
        hosts.host_list(),
    );
    let mut args = vec![
        "--cluster",
        "ssh",
        "--hosts",
        &list,
        "--ssh-user",
        "root",
        "--ssh-key",
        &key,
    ];
    args.extend([
        "--ssh-known-hosts",
        &known,
        "--ssh-dir",
        &dir,
        "--test-name",
        name,
    ]);
    args.extend(extra);
    args.extend(FAULTS);
    let started = std::time::Instant::now();
    let (run, out) = run_test(name, &args);
    let verdict = results(&run);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{name} not valid: {verdict:#}\n{}",
        show(&out)
    );
    let history = read_history(&run);
    let count = |t: OpType| {
        history
            .ops
            .iter()
            .filter(|op| op.process.client().is_some() && op.kind == t)
            .count()
    };
    println!(
        "{name}: valid in {:.0} s; client ops ok {} / fail {} / info {}; partitions {}, kills {}, pauses {}",
        started.elapsed().as_secs_f64(),
        count(OpType::Ok),
        count(OpType::Fail),
        count(OpType::Info),
        nemesis_events(&history, "start-partition").len(),
        nemesis_events(&history, "start-kill").len(),
        nemesis_events(&history, "start-pause").len()
    );
    hosts.assert_nothing_left(&remote);
}

#[test]
#[ignore = "measurement: 60 s on five ssh hosts; run with --ignored --nocapture"]
fn refkv_hotspot_on_five_ssh_hosts_for_60_s_is_valid() {
    five_host_run(
        "ssh5-refkv",
        "m",
        &[
            "--workload",
            "hotspot",
            "--nemesis",
            "partition,kill,pause,split",
        ],
    );
}

#[test]
#[ignore = "measurement: 60 s on five ssh hosts; run with --ignored --nocapture"]
fn etcd_register_on_five_ssh_hosts_for_60_s_is_valid() {
    five_host_run(
        "ssh5-etcd",
        "n",
        &[
            "--db",
            "etcd",
            "--remote-binary",
            "/usr/bin/etcd",
            "--workload",
            "register",
            "--nemesis",
            "partition,kill,pause",
        ],
    );
}

//! End-to-end: `faultline test --cluster external` against an etcd member someone else
//! started (here: this test, on loopback). faultline runs the workload and checks it without
//! touching the node's lifecycle, and leaves the node running.

mod test_support;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use test_support::*;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

struct Etcd(Child);

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn an_external_etcd_is_tested_without_lifecycle() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (client, peer) = (free_port(), free_port());
    let endpoint = format!("127.0.0.1:{client}");
    let mut etcd = Etcd(
        Command::new("etcd")
            .args(["--name", "x1", "--data-dir"])
            .arg(dir.path().join("etcd"))
            .args([
                "--listen-client-urls",
                &format!("http://{endpoint}"),
                "--advertise-client-urls",
                &format!("http://{endpoint}"),
            ])
            .args(["--listen-peer-urls", &format!("http://127.0.0.1:{peer}")])
            .args([
                "--initial-advertise-peer-urls",
                &format!("http://127.0.0.1:{peer}"),
            ])
            .args(["--initial-cluster", &format!("x1=http://127.0.0.1:{peer}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the etcd binary (apt-get install etcd-server)"),
    );
    let args = [
        "--db",
        "etcd",
        "--cluster",
        "external",
        "--endpoints",
        &endpoint,
        "--workload",
        "register",
        "--time-limit",
        "8",
        "--test-name",
        "external-etcd",
    ];
    let (run, out) = run_test("external-etcd", &args);
    let verdict = results(&run);
    assert_eq!(
        out.status.code(),
        Some(0),
        "external etcd run not valid: {verdict:#}\n{}",
        show(&out)
    );
    assert!(
        client_oks(&read_history(&run)) > 100,
        "too few successful ops"
    );
    let cluster = test_json(&run)["cluster"].clone();
    assert_eq!(cluster["kind"], "external");
    assert_eq!(cluster["nodes"][0]["addr"], endpoint.as_str());
    assert!(
        etcd.0.try_wait().expect("etcd status").is_none(),
        "faultline must leave an external node running"
    );
}

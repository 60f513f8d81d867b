//! `docker-compose.yml` at the root describes the same cluster as `faultline test`: with the
//! image built by `faultline image`, `docker-compose up -d` gives a healthy 3-node cluster
//! (every Raft group has a leader, every node answers).
//!
//! The compose file's addresses are fixed (10.77.0.0/24), so a host holds one such cluster
//! at a time: the test takes a host-wide lock, and two test runs at once (two checkouts)
//! wait for each other instead of failing on Docker's "Pool overlaps".

mod test_support;
use std::process::Command;
use std::time::Duration;
use test_support::*;
use workloads::client::grpc::GrpcConnector;
use workloads::client::NodeEndpoint;

fn compose(project: &str, data: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new("docker-compose")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("FAULTLINE_COMPOSE_DATA", data)
        .args(["-p", project])
        .args(args)
        .output()
        .expect("docker-compose runs")
}

/// A host-wide exclusive lock, held until dropped.
fn one_compose_cluster_per_host() -> nix::fcntl::Flock<std::fs::File> {
    let path = std::env::temp_dir().join("faultline-compose-test.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .expect("opening the compose test's lock file");
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .expect("locking the compose test's lock file")
}

#[test]
fn compose_up_gives_a_healthy_cluster() {
    let _one = lock();
    let _one_per_host = one_compose_cluster_per_host();
    let image = faultline()
        .arg("image")
        .output()
        .expect("faultline image runs");
    assert!(image.status.success(), "{}", show(&image));
    let data = store_dir("compose");
    let project = format!("flcompose{}", std::process::id());
    let up = compose(&project, &data, &["up", "-d"]);
    let ready = up.status.success().then(|| {
        let nodes: Vec<NodeEndpoint> = (1..=3)
            .map(|i| NodeEndpoint {
                name: format!("n{i}"),
                addr: format!("10.77.0.1{i}:50051"),
            })
            .collect();
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        rt.block_on(workloads::cluster::wait_ready_with(
            &GrpcConnector::default(),
            &nodes,
            &[1, 2, 3],
            Duration::from_secs(90),
        ))
    });
    let labelled = docker_ids(
        "container",
        &format!("com.docker.compose.project={project}"),
    );
    let down = compose(&project, &data, &["down", "-v", "--remove-orphans"]);
    assert!(
        up.status.success(),
        "docker-compose up failed: {}",
        show(&up)
    );
    ready
        .expect("checked")
        .expect("the compose cluster becomes ready");
    assert_eq!(labelled.len(), 6, "three sandboxes and three servers");
    assert!(down.status.success(), "{}", show(&down));
    assert!(docker_ids(
        "container",
        &format!("com.docker.compose.project={project}")
    )
    .is_empty());
}

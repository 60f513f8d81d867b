//! A refkv cluster of real processes on loopback for integration tests: ephemeral ports,
//! a temporary data dir per node, kill -9 and restart.

#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use refkv::proto::api::distribution_client::DistributionClient;
use refkv::proto::api::raft_admin_client::RaftAdminClient;
use refkv::proto::api::raw_kv_client::RawKvClient;
use refkv::proto::api::*;
use tonic::transport::Channel;

/// Clusters in one test binary run one at a time: several 3-node clusters at once starve
/// this 2-core machine and turn timing assumptions into noise.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub struct Cluster {
    _turn: tokio::sync::MutexGuard<'static, ()>,
    pub dir: tempfile::TempDir,
    pub addrs: Vec<String>,
    pub extra: Vec<String>,
    children: std::sync::Mutex<Vec<Option<Child>>>,
    pub groups: u64,
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    l.local_addr().expect("local addr").port()
}

impl Cluster {
    /// Starts `n` nodes with `extra` serve flags and waits until every group has a leader.
    pub async fn start(n: usize, extra: &[&str]) -> Cluster {
        let turn = ONE_AT_A_TIME.lock().await;
        let dir = tempfile::tempdir().expect("tempdir");
        let addrs: Vec<String> = (0..n)
            .map(|_| format!("127.0.0.1:{}", free_port()))
            .collect();
        let c = Cluster {
            _turn: turn,
            dir,
            addrs,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            children: Default::default(),
            groups: 3,
        };
        for i in 0..n {
            let child = c.spawn(i);
            c.lock().push(Some(child));
        }
        c.wait_ready(Duration::from_secs(60)).await;
        c
    }

    fn spawn(&self, i: usize) -> Child {
        let peers: Vec<String> = self
            .addrs
            .iter()
            .enumerate()
            .map(|(j, a)| format!("{}={a}", j + 1))
            .collect();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join(format!("node{}.log", i + 1)))
            .expect("log file");
        Command::new(env!("CARGO_BIN_EXE_refkv"))
            .args([
                "serve",
                "--id",
                &(i + 1).to_string(),
                "--listen",
                &self.addrs[i],
                "--peers",
                &peers.join(","),
            ])
            .arg("--data-dir")
            .arg(self.dir.path().join(format!("n{}", i + 1)))
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn refkv")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Option<Child>>> {
        self.children.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn alive(&self, i: usize) -> bool {
        self.lock()[i].is_some()
    }

    /// kill -9.
    pub fn kill(&self, i: usize) {
        if let Some(mut child) = self.lock()[i].take() {
            let _ = child.kill(); // SIGKILL
            let _ = child.wait();
        }
    }

    /// SIGTERM, then wait for a clean exit; returns the exit status success.
    pub fn terminate(&self, i: usize) -> bool {
        let Some(mut child) = self.lock()[i].take() else {
            return false;
        };
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        child.wait().map(|s| s.success()).unwrap_or(false)
    }

    /// SIGSTOP (`pause = true`) or SIGCONT a node.
    pub fn pause(&self, i: usize, pause: bool) {
        let guard = self.lock();
        if let Some(child) = guard[i].as_ref() {
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let sig = if pause {
                nix::sys::signal::Signal::SIGSTOP
            } else {
                nix::sys::signal::Signal::SIGCONT
            };
            let _ = nix::sys::signal::kill(pid, sig);
        }
    }

    pub fn restart(&self, i: usize) {
        self.kill(i);
        let child = self.spawn(i);
        self.lock()[i] = Some(child);
    }

    pub fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("node{}.log", i + 1)))
            .unwrap_or_default()
    }

    /// Lines of every node's log containing `pattern`, prefixed by the node number.
    pub fn grep_logs(&self, pattern: &str) -> String {
        let mut out = String::new();
        for i in 0..self.addrs.len() {
            for line in self.log(i).lines().filter(|l| l.contains(pattern)) {
                out.push_str(&format!("n{}: {line}\n", i + 1));
            }
        }
        out
    }

    pub async fn channel(&self, i: usize) -> Option<Channel> {
        Channel::from_shared(format!("http://{}", self.addrs[i]))
            .ok()?
            .connect_timeout(Duration::from_millis(500))
            .timeout(Duration::from_secs(15))
            .connect()
            .await
            .ok()
    }

    pub async fn kv(&self, i: usize) -> Option<RawKvClient<Channel>> {
        self.channel(i).await.map(RawKvClient::new)
    }

    pub async fn dist(&self, i: usize) -> Option<DistributionClient<Channel>> {
        self.channel(i).await.map(DistributionClient::new)
    }

    pub async fn status(&self, i: usize, group: u64) -> Option<RaftAdminStatusResponse> {
        let mut admin = RaftAdminClient::new(self.channel(i).await?);
        admin
            .status(RaftAdminStatusRequest { group_id: group })
            .await
            .ok()
            .map(|r| r.into_inner())
    }

    /// The leader of `group` as seen by a live node that reports itself leader.
    pub async fn leader_of(&self, group: u64) -> Option<usize> {
        for i in 0..self.addrs.len() {
            if !self.alive(i) {
                continue;
            }
            if let Some(s) = self.status(i, group).await {
                if s.state == RaftAdminState::Leader as i32 {
                    return Some(i);
                }
            }
        }
        None
    }

    /// Every live node knows a leader for every group.
    pub async fn wait_ready(&self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let mut ready = true;
            for i in 0..self.addrs.len() {
                if !self.alive(i) {
                    continue;
                }
                for g in 1..=self.groups {
                    match self.status(i, g).await {
                        Some(s) if !s.leader_id.is_empty() => {}
                        _ => ready = false,
                    }
                }
            }
            if ready {
                return;
            }
            if Instant::now() >= deadline {
                let mut report = String::new();
                for i in 0..self.addrs.len() {
                    for g in 1..=self.groups {
                        let s = self.status(i, g).await;
                        report.push_str(&format!(
                            "node {} group {g}: {:?}\n",
                            i + 1,
                            s.map(|s| (
                                s.state,
                                s.leader_id,
                                s.term,
                                s.applied_index,
                                s.last_log_index
                            ))
                        ));
                    }
                }
                let errors: String = self
                    .grep_logs("ERROR")
                    .lines()
                    .rev()
                    .take(30)
                    .collect::<Vec<_>>()
                    .join("\n");
                panic!("cluster not ready within {within:?}:\n{report}last errors:\n{errors}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub async fn list_routes(&self, i: usize) -> ListRoutesResponse {
        let mut d = self.dist(i).await.expect("connect");
        d.list_routes(ListRoutesRequest {})
            .await
            .expect("list routes")
            .into_inner()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.addrs.len() {
            self.kill(i);
        }
        // A failed test keeps its nodes' logs and data when asked to (for a post-mortem).
        if std::thread::panicking() && std::env::var_os("REFKV_KEEP_FAILED").is_some() {
            self.dir.disable_cleanup(true);
            eprintln!(
                "kept the failed cluster's directory: {}",
                self.dir.path().display()
            );
        }
    }
}

/// Per-task client connections to every node, (re)connected lazily.
pub struct Clients<'a> {
    pub cluster: &'a Cluster,
    kv: Vec<Option<RawKvClient<Channel>>>,
}

impl<'a> Clients<'a> {
    pub fn new(cluster: &'a Cluster) -> Clients<'a> {
        Clients {
            cluster,
            kv: vec![None; cluster.addrs.len()],
        }
    }

    pub async fn kv(&mut self, i: usize) -> Option<&mut RawKvClient<Channel>> {
        if self.kv[i].is_none() {
            self.kv[i] = self.cluster.kv(i).await;
        }
        self.kv[i].as_mut()
    }

    pub fn drop_conn(&mut self, i: usize) {
        self.kv[i] = None;
    }

    /// Puts `key` through node `first` (trying the others when a node is down) until it is
    /// acknowledged or `deadline`; an indeterminate failure is simply retried (same value).
    /// Returns the acknowledged response's commit metadata.
    pub async fn put_until_acked(
        &mut self,
        first: usize,
        key: &[u8],
        value: &[u8],
        deadline: Instant,
    ) -> Option<CommitMeta> {
        let n = self.kv.len();
        let mut i = first;
        while Instant::now() < deadline {
            if let Some(kv) = self.kv(i).await {
                let req = RawPutRequest {
                    key: key.to_vec(),
                    value: value.to_vec(),
                    ..Default::default()
                };
                match kv.raw_put(req).await {
                    Ok(r) => {
                        let r = r.into_inner();
                        assert!(r.success);
                        return Some(r.meta.unwrap_or_default());
                    }
                    Err(_) => self.drop_conn(i),
                }
            }
            i = (i + 1) % n;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        None
    }

    /// Reads `key` through node `i`, retrying transient unavailability for up to 20 s.
    pub async fn get(&mut self, i: usize, key: &[u8]) -> Result<Option<Vec<u8>>, tonic::Status> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let result = match self.kv(i).await {
                Some(kv) => {
                    kv.raw_get(RawGetRequest {
                        key: key.to_vec(),
                        ..Default::default()
                    })
                    .await
                }
                None => Err(tonic::Status::unavailable("connect")),
            };
            match result {
                Ok(r) => {
                    let r = r.into_inner();
                    return Ok(r.exists.then_some(r.value));
                }
                Err(e) if Instant::now() > deadline => return Err(e),
                Err(_) => {
                    self.drop_conn(i);
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
            }
        }
    }
}

/// Catalog invariants: routes tile the keyspace in order.
pub fn assert_tiling(routes: &[RouteDescriptor]) {
    let mut sorted: Vec<&RouteDescriptor> = routes.iter().collect();
    sorted.sort_by(|a, b| a.start.cmp(&b.start));
    let mut expect: Vec<u8> = Vec::new();
    for (i, r) in sorted.iter().enumerate() {
        assert_eq!(
            r.start, expect,
            "gap or overlap before route {}",
            r.route_id
        );
        let last = i + 1 == sorted.len();
        assert_eq!(r.end.is_empty(), last, "only the last route is unbounded");
        expect = r.end.clone();
    }
}

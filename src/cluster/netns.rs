//! `--cluster netns`: every node a plain process in its own network namespace, for machines
//! and CI runners without a Docker engine (root required).
//!
//! Layout of a run `R` with the short id `S` (interface names must fit 15 bytes):
//! - a *switch* namespace `faultline-R-sw` holding the bridge `br0`, so the host's own
//!   network and firewall are never touched;
//! - per node a namespace `faultline-R-nK` whose `eth0` (a veth whose peer sits on the
//!   bridge) has the static address `10.79.X.(10+K)/24`;
//! - one veth `flS` on the host, peer on the bridge, address `10.79.X.1/24`, through which
//!   the harness's clients reach the nodes — traffic stays on this machine; `X` is chosen
//!   so that the /24 is not routed anywhere yet.
//!
//! The nemesis uses the same iptables chain as with Docker, in `/run/netns/faultline-R-nK`.
//! Kill/pause/resume are signals (nix) to the server process, restart spawns it again with
//! the same data dir (`<run dir>/data/nK`); server output goes to `<run dir>/data/nK.log`.
//! Exits are seen by `try_wait` on each server's child; the log lines of an exit are those
//! written since that process started (the log file's length is noted at each spawn).
//! Each run writes its owner (harness pid + start time) to `/run/faultline-netns/R.owner`;
//! [`sweep_stale`] removes the namespaces (and their processes) of runs whose owner died.

mod net;

use super::lifecycle::{ExitBook, NodeExit};
use super::owner;
use super::Cluster;
use crate::db::{Db, NodeLayout};
use anyhow::{bail, Context, Result};
use futures::future::BoxFuture;
use futures::FutureExt;
use nemesis::{NodeControl, NodeInfo};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use tokio::process::{Child, Command};
use tokio::sync::Mutex;

/// Prefix of every namespace faultline creates.
pub const NS_PREFIX: &str = "faultline-";
/// Where run owners are recorded.
const OWNER_DIR: &str = "/run/faultline-netns";
/// The client port every node listens on.
pub const SERVER_PORT: u16 = 50051;

/// Everything needed to start a netns cluster.
#[derive(Debug, Clone)]
pub struct NetnsSpec {
    pub run_id: String,
    pub nodes: usize,
    /// The server binary on this machine.
    pub binary: PathBuf,
    /// Directory (absolute) under which `data/nK` dirs are created.
    pub run_dir: PathBuf,
    pub server_args: Vec<String>,
    pub db: Arc<dyn Db>,
    /// `--leave-running`: the run is tagged to outlive the harness
    /// ([`owner::run_owner`]), so no stale sweep removes it.
    pub leave_running: bool,
}

/// A started netns cluster.
pub struct NetnsCluster {
    spec: NetnsSpec,
    subnet_octet: u8,
    nodes: Vec<NodeInfo>,
    servers: Mutex<HashMap<String, Child>>,
    exits: ExitBook,
    /// Per node: the length of its log file when its current process started.
    log_starts: std::sync::Mutex<HashMap<String, u64>>,
}

/// Most bytes of a node's log read to describe its exit.
const EXIT_LOG_BYTES: u64 = 1 << 20;

/// Fails unless this process runs as root.
pub fn require_root() -> Result<()> {
    if !nix::unistd::geteuid().is_root() {
        bail!(
            "--cluster netns needs root (it creates network namespaces, veth pairs and firewall rules inside them); \
             run as root, or use --cluster docker"
        );
    }
    Ok(())
}

impl NetnsCluster {
    /// Creates the namespaces and links and starts every server (readiness is the
    /// caller's to poll). On failure everything already created is removed again.
    pub async fn start(spec: NetnsSpec) -> Result<NetnsCluster> {
        require_root()?;
        if spec.nodes == 0 || spec.nodes > 9 {
            bail!("--nodes must be between 1 and 9, got {}", spec.nodes);
        }
        if !spec.binary.is_file() {
            bail!("server binary {} does not exist", spec.binary.display());
        }
        let spec = NetnsSpec {
            run_dir: std::path::absolute(&spec.run_dir)?,
            ..spec
        };
        let octet = net::free_octet(&spec.run_id).await?;
        let nodes = (1..=spec.nodes as u64)
            .map(|id| {
                let ip = Ipv4Addr::new(10, 79, octet, 10 + id as u8);
                NodeInfo {
                    name: format!("n{id}"),
                    id,
                    ip,
                    addr: format!("{ip}:{SERVER_PORT}"),
                }
            })
            .collect();
        let cluster = NetnsCluster {
            spec,
            subnet_octet: octet,
            nodes,
            servers: Mutex::new(HashMap::new()),
            exits: ExitBook::default(),
            log_starts: std::sync::Mutex::new(HashMap::new()),
        };
        if let Err(e) = cluster.create().await {
            let _ = cluster.teardown().await;
            return Err(e);
        }
        Ok(cluster)
    }

    async fn create(&self) -> Result<()> {
        write_owner(
            &self.spec.run_id,
            &owner::run_owner(self.spec.leave_running),
        )?;
        let names: Vec<String> = self.nodes.iter().map(|n| n.name.clone()).collect();
        net::create_network(&self.spec.run_id, self.subnet_octet, &names).await?;
        for node in &self.nodes {
            self.spawn(node).await?;
        }
        Ok(())
    }

    fn data_dir(&self, node: &str) -> PathBuf {
        self.spec.run_dir.join("data").join(node)
    }

    fn log_path(&self, node: &str) -> PathBuf {
        self.spec.run_dir.join("data").join(format!("{node}.log"))
    }

    /// The server command line of `node`.
    pub fn command_of(&self, node: &NodeInfo) -> Vec<String> {
        let layout = NodeLayout {
            binary: self.spec.binary.display().to_string(),
            data_dir: self.data_dir(&node.name).display().to_string(),
        };
        self.spec
            .db
            .node_command(node, &self.nodes, &layout, &self.spec.server_args)
    }

    /// Starts the server of `node` inside its namespace (output appended to its log).
    async fn spawn(&self, node: &NodeInfo) -> Result<()> {
        let data = self.data_dir(&node.name);
        std::fs::create_dir_all(&data).with_context(|| format!("creating {}", data.display()))?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path(&node.name))
            .with_context(|| format!("opening the log of {}", node.name))?;
        let log_start = log.metadata().map(|m| m.len()).unwrap_or(0);
        self.log_starts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(node.name.clone(), log_start);
        self.exits.starting(&node.name);
        let cmd = self.command_of(node);
        let child = Command::new("nsenter")
            .arg(format!(
                "--net={}",
                net::ns_path(&self.spec.run_id, &node.name).display()
            ))
            .arg("--")
            .args(&cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .spawn()
            .with_context(|| {
                format!(
                    "starting {} in its namespace (nsenter {})",
                    node.name,
                    cmd.join(" ")
                )
            })?;
        self.servers.lock().await.insert(node.name.clone(), child);
        self.exits.started(&node.name);
        Ok(())
    }

    async fn signal(&self, node: &str, sig: Signal) -> Result<()> {
        NodeInfo::find(&self.nodes, node)?;
        let servers = self.servers.lock().await;
        let child = servers
            .get(node)
            .with_context(|| format!("{node} has no server process"))?;
        let pid = child
            .id()
            .with_context(|| format!("the server of {node} has already exited"))?;
        kill(Pid::from_raw(pid as i32), sig)
            .with_context(|| format!("sending {sig} to {node} (pid {pid})"))
    }

    /// The lines `node`'s current process wrote to its log (at most [`EXIT_LOG_BYTES`]).
    fn log_since_start(&self, node: &str) -> Vec<String> {
        use std::io::{Read, Seek, SeekFrom};
        let start = self
            .log_starts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(node)
            .copied()
            .unwrap_or(0);
        let read = || -> std::io::Result<String> {
            let mut file = std::fs::File::open(self.log_path(node))?;
            let len = file.metadata()?.len();
            file.seek(SeekFrom::Start(
                start.max(len.saturating_sub(EXIT_LOG_BYTES)),
            ))?;
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)?;
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        };
        match read() {
            Ok(text) => text.lines().map(str::to_string).collect(),
            Err(e) => vec![format!("(faultline could not read the log of {node}: {e})")],
        }
    }

    async fn exits_now(&self) -> Result<Vec<NodeExit>> {
        use std::os::unix::process::ExitStatusExt;
        let mut out = Vec::new();
        let mut servers = self.servers.lock().await;
        for node in &self.nodes {
            let incarnation = self.exits.incarnation(&node.name);
            let Some(child) = servers.get_mut(&node.name) else {
                continue;
            };
            let Some(status) = child
                .try_wait()
                .with_context(|| format!("checking whether the server of {} exited", node.name))?
            else {
                continue;
            };
            let Some(expected) = self.exits.claim_exit(&node.name, incarnation) else {
                continue;
            };
            let signal = status.signal().map(|s| {
                Signal::try_from(s)
                    .map(|s| s.as_str().to_string())
                    .unwrap_or_else(|_| format!("signal {s}"))
            });
            out.push(NodeExit::new(
                &node.name,
                expected,
                status.code(),
                signal,
                &self.log_since_start(&node.name),
            ));
        }
        Ok(out)
    }

    /// Kills every server (resuming paused ones first so they can die) and reaps them.
    async fn stop_all(&self) {
        let mut servers = self.servers.lock().await;
        for (_, mut child) in servers.drain() {
            if let Some(pid) = child.id() {
                let _ = kill(Pid::from_raw(pid as i32), Signal::SIGCONT);
            }
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }
}

impl NodeControl for NetnsCluster {
    fn nodes(&self) -> &[NodeInfo] {
        &self.nodes
    }

    fn kill<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<()>> {
        async move {
            NodeInfo::find(&self.nodes, node)?;
            let mut servers = self.servers.lock().await;
            let child = servers
                .get_mut(node)
                .with_context(|| format!("{node} has no server process"))?;
            self.exits.expect_exit(node);
            if child
                .try_wait()
                .with_context(|| format!("checking {node}"))?
                .is_some()
            {
                return Ok(()); // already dead (it crashed): killing it again is done
            }
            child
                .start_kill()
                .with_context(|| format!("killing {node}"))?;
            child
                .wait()
                .await
                .with_context(|| format!("reaping {node}"))?;
            Ok(())
        }
        .boxed()
    }

    fn restart<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<()>> {
        async move {
            let info = NodeInfo::find(&self.nodes, node)?.clone();
            {
                let mut servers = self.servers.lock().await;
                if let Some(child) = servers.get_mut(node) {
                    if child.try_wait()?.is_none() {
                        bail!("{node} is still running; kill it before restarting it");
                    }
                }
                servers.remove(node);
            }
            self.spawn(&info).await
        }
        .boxed()
    }

    fn pause<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<()>> {
        self.signal(node, Signal::SIGSTOP).boxed()
    }

    fn resume<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<()>> {
        self.signal(node, Signal::SIGCONT).boxed()
    }

    fn netns<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<PathBuf>> {
        async move {
            NodeInfo::find(&self.nodes, node)?;
            Ok(net::ns_path(&self.spec.run_id, node))
        }
        .boxed()
    }
}

impl Cluster for NetnsCluster {
    fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "kind": "netns",
            "run_id": self.spec.run_id,
            "subnet": format!("10.79.{}.0/24", self.subnet_octet),
            "host_link": net::host_link(&self.spec.run_id),
            "binary": self.spec.binary,
            "server_args": self.spec.server_args,
            "nodes": self.nodes.iter().map(|n| serde_json::json!({
                "name": n.name, "id": n.id, "addr": n.addr,
                "netns": net::ns_name(&self.spec.run_id, &n.name),
                "command": self.command_of(n),
            })).collect::<Vec<_>>(),
        })
    }

    fn collect_logs<'a>(&'a self, dir: &'a Path) -> BoxFuture<'a, Result<()>> {
        async move {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            for node in &self.nodes {
                let from = self.log_path(&node.name);
                if from.exists() {
                    std::fs::copy(&from, dir.join(format!("{}.log", node.name)))
                        .with_context(|| format!("copying {}", from.display()))?;
                }
            }
            Ok(())
        }
        .boxed()
    }

    fn teardown(&self) -> BoxFuture<'_, Result<()>> {
        async move {
            self.exits.tearing_down();
            self.stop_all().await;
            remove_run(&self.spec.run_id).await
        }
        .boxed()
    }

    fn poll_exits(&self) -> BoxFuture<'_, Result<Vec<NodeExit>>> {
        self.exits_now().boxed()
    }

    fn down_nodes(&self) -> Vec<String> {
        self.exits.down_nodes()
    }
}

fn owner_file(run_id: &str) -> PathBuf {
    Path::new(OWNER_DIR).join(format!("{run_id}.owner"))
}

fn write_owner(run_id: &str, tag: &str) -> Result<()> {
    std::fs::create_dir_all(OWNER_DIR).with_context(|| format!("creating {OWNER_DIR}"))?;
    std::fs::write(owner_file(run_id), tag)
        .with_context(|| format!("writing the owner of {run_id}"))
}

/// Namespaces linked as a cluster's are (the switch, one per name, the host's link), with
/// no server in them and owned by this process (so no sweep removes them while it lives),
/// for tests that run their own daemons at the nodes' addresses (e.g. an sshd per "host").
/// Returns each name's address and namespace path; remove them with [`remove_run`].
pub async fn create_bare_network(
    run_id: &str,
    names: &[String],
) -> Result<Vec<(Ipv4Addr, PathBuf)>> {
    require_root()?;
    write_owner(run_id, &owner::current_owner())?;
    let octet = net::free_octet(run_id).await?;
    if let Err(e) = net::create_network(run_id, octet, names).await {
        let _ = remove_run(run_id).await;
        return Err(e);
    }
    Ok((0..names.len())
        .map(|i| {
            (
                Ipv4Addr::new(10, 79, octet, 11 + i as u8),
                net::ns_path(run_id, &names[i]),
            )
        })
        .collect())
}

/// Kills every process left in the run's namespaces and deletes them (the veth pairs go
/// with them). Safe to call more than once.
pub async fn remove_run(run_id: &str) -> Result<()> {
    let mut first_err = None;
    // The kernel destroys a deleted namespace's devices asynchronously; delete the host's
    // end of the link explicitly so it is gone when teardown returns.
    net::delete_host_link(run_id).await;
    for ns in net::list_namespaces().await? {
        if net::run_of(&ns) != Some(run_id) {
            continue;
        }
        for pid in net::pids_in(&ns).await {
            let _ = kill(Pid::from_raw(pid), Signal::SIGCONT);
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        if let Err(e) = net::delete_namespace(&ns).await {
            first_err.get_or_insert(e);
        }
    }
    let _ = std::fs::remove_file(owner_file(run_id));
    first_err.map_or(Ok(()), Err)
}

/// Removes the namespaces (and processes) of every faultline netns run; returns the runs.
pub async fn remove_all() -> Result<Vec<String>> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(Vec::new());
    }
    let mut runs: Vec<String> = Vec::new();
    for ns in net::list_namespaces().await.unwrap_or_default() {
        if let Some(run) = net::run_of(&ns) {
            if !runs.iter().any(|r| r == run) {
                runs.push(run.to_string());
            }
        }
    }
    for run in &runs {
        remove_run(run).await?;
    }
    Ok(runs)
}

/// Every netns run with namespaces here, with its owner tag (empty when its owner file is
/// missing). Without root: none.
pub async fn list_runs() -> Vec<(String, String)> {
    if !nix::unistd::geteuid().is_root() {
        return Vec::new();
    }
    let mut runs: Vec<(String, String)> = Vec::new();
    for ns in net::list_namespaces().await.unwrap_or_default() {
        if let Some(run) = net::run_of(&ns) {
            if !runs.iter().any(|(r, _)| r == run) {
                let tag = std::fs::read_to_string(owner_file(run)).unwrap_or_default();
                runs.push((run.to_string(), tag.trim().to_string()));
            }
        }
    }
    runs
}

/// Removes the namespaces of runs whose harness is gone, except those left running on
/// purpose (`--leave-running`); returns the runs removed. Without root (or without `ip`)
/// there is nothing faultline could have created: nothing to do.
pub async fn sweep_stale() -> Result<Vec<String>> {
    let runs: Vec<String> = list_runs()
        .await
        .into_iter()
        .filter(|(_, tag)| owner::is_stale(tag))
        .map(|(run, _)| run)
        .collect();
    for run in &runs {
        remove_run(run).await?;
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    //! Lifecycle against real namespaces (root), with a shell script standing in for the
    //! server (it ignores its arguments and sleeps), so no server build is needed.
    use super::*;
    use crate::db::DbKind;

    /// The sweep tests remove other runs' namespaces: one test at a time.
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    fn sleeper(dir: &Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("sleeper");
        std::fs::write(&path, "#!/bin/sh\nexec sleep 1000\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn state_of(pid: u32) -> char {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        stat.rfind(')')
            .and_then(|i| stat[i + 1..].trim().chars().next())
            .unwrap_or('?')
    }

    /// Whether `ip` answers a TCP connection to a closed port (a reset = reachable; silence
    /// = cut off), from the host or from inside namespace `ns`.
    async fn reachable(ns: Option<&Path>, ip: Ipv4Addr) -> bool {
        let probe = format!("exec 3<>/dev/tcp/{ip}/1");
        let mut cmd = match ns {
            Some(ns) => {
                let mut c = Command::new("nsenter");
                c.arg(format!("--net={}", ns.display()))
                    .args(["timeout", "2", "bash", "-c", &probe]);
                c
            }
            None => {
                let mut c = Command::new("timeout");
                c.args(["2", "bash", "-c", &probe]);
                c
            }
        };
        let out = cmd.output().await.expect("bash and timeout run");
        String::from_utf8_lossy(&out.stderr).contains("refused")
    }

    /// A 3-node cluster of `binary` (a script standing in for refkv) under `dir`.
    fn three_nodes(run_id: &str, binary: PathBuf, dir: &Path) -> NetnsSpec {
        NetnsSpec {
            run_id: run_id.into(),
            nodes: 3,
            binary,
            run_dir: dir.to_path_buf(),
            server_args: vec![],
            db: DbKind::Refkv.build(1),
            leave_running: false,
        }
    }

    async fn server_pid(c: &NetnsCluster, node: &str) -> u32 {
        c.servers
            .lock()
            .await
            .get(node)
            .and_then(|ch| ch.id())
            .expect("a running server")
    }

    /// The lifecycle of a started cluster: its namespaces and addresses, reachability, a
    /// rule that survives a kill and restart, pause and resume, and a stopped process left
    /// for teardown.
    async fn kill_restart_and_pause(cluster: &NetnsCluster, run_id: &str) -> anyhow::Result<()> {
        assert_eq!(
            net::list_namespaces()
                .await?
                .iter()
                .filter(|n| n.contains(run_id))
                .count(),
            4,
            "3 nodes + switch"
        );
        let ns = cluster.netns("n1").await?;
        let addrs =
            nemesis::net::in_netns(&ns, "ip", &["-4", "-o", "addr", "show", "eth0"]).await?;
        assert!(
            addrs.contains(&cluster.nodes()[0].ip.to_string()),
            "{addrs}"
        );
        // The host reaches a node over the run's private link; nodes reach each other.
        assert!(
            reachable(None, cluster.nodes()[2].ip).await,
            "the host reaches n3"
        );
        assert!(
            reachable(Some(&ns), cluster.nodes()[1].ip).await,
            "n1 reaches n2 over the bridge"
        );
        let ping = |ns: PathBuf, ip: Ipv4Addr| async move { reachable(Some(&ns), ip).await };

        nemesis::net::ensure_chain(&ns).await?;
        nemesis::net::drop_inbound_from(&ns, cluster.nodes()[1].ip).await?;
        assert!(
            !ping(ns.clone(), cluster.nodes()[1].ip).await,
            "the rule cuts n1 off from n2"
        );
        let before = server_pid(cluster, "n1").await;
        cluster.kill("n1").await?;
        cluster.restart("n1").await?;
        assert_ne!(server_pid(cluster, "n1").await, before, "a fresh process");
        assert_eq!(
            nemesis::net::rules(&ns).await?.len(),
            1,
            "the rule survived the kill"
        );

        let pid = server_pid(cluster, "n2").await;
        cluster.pause("n2").await?;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert_eq!(state_of(pid), 'T', "paused = stopped");
        cluster.resume("n2").await?;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert_ne!(state_of(pid), 'T');
        cluster.pause("n3").await?; // teardown must cope with a stopped process
        Ok(())
    }

    #[tokio::test]
    async fn namespaces_keep_rules_across_kill_restart_and_pause_and_teardown_leaves_nothing() {
        let _one = ONE_AT_A_TIME.lock().await;
        require_root().expect("this test needs root");
        let dir = tempfile::tempdir().unwrap();
        let run_id = format!("fltestns{}", std::process::id());
        let cluster = NetnsCluster::start(three_nodes(&run_id, sleeper(dir.path()), dir.path()))
            .await
            .expect("cluster start");
        let result = kill_restart_and_pause(&cluster, &run_id).await;
        cluster.teardown().await.expect("teardown");
        result.expect("lifecycle");
        assert!(
            net::list_namespaces()
                .await
                .unwrap()
                .iter()
                .all(|n| !n.contains(&run_id)),
            "namespaces left"
        );
        let links = Command::new("ip")
            .args(["-br", "link"])
            .output()
            .await
            .unwrap();
        assert!(
            !String::from_utf8_lossy(&links.stdout).contains(&net::host_link(&run_id)),
            "host link left"
        );
    }

    /// A server script: node 2 prints a Go-style panic and exits 2 after 300 ms; the others sleep.
    fn crasher(dir: &Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("crasher");
        let script = "#!/bin/sh\ncase \"$*\" in *'--id 2 '*) echo serving; sleep 0.3; echo 'panic: runtime error: makeslice: cap out of range' >&2; echo 'goroutine 1 [running]:' >&2; exit 2;; esac\nexec sleep 1000\n";
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    async fn exits_within(cluster: &NetnsCluster, wait: std::time::Duration) -> Vec<NodeExit> {
        let deadline = std::time::Instant::now() + wait;
        loop {
            let exits = cluster.poll_exits().await.expect("a look at the processes");
            if !exits.is_empty() || std::time::Instant::now() > deadline {
                return exits;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    #[tokio::test]
    async fn an_exit_on_its_own_is_reported_once_with_its_panic_and_a_kill_is_expected() {
        let _one = ONE_AT_A_TIME.lock().await;
        require_root().expect("this test needs root");
        let dir = tempfile::tempdir().unwrap();
        let run_id = format!("fltestcr{}", std::process::id());
        let cluster = NetnsCluster::start(three_nodes(&run_id, crasher(dir.path()), dir.path()))
            .await
            .expect("cluster start");
        let result = async {
            let exits = exits_within(&cluster, std::time::Duration::from_secs(5)).await;
            assert_eq!(exits.len(), 1, "{exits:?}");
            let crash = &exits[0];
            assert_eq!(
                (crash.node.as_str(), crash.expected, crash.exit_code),
                ("n2", false, Some(2))
            );
            assert_eq!(
                crash.crash_line.as_deref(),
                Some("panic: runtime error: makeslice: cap out of range")
            );
            assert_eq!(crash.log_tail.first().map(String::as_str), Some("serving"));
            assert!(cluster.poll_exits().await?.is_empty(), "reported once");
            assert_eq!(cluster.down_nodes(), ["n2"]);

            cluster.kill("n1").await?;
            let killed = cluster.poll_exits().await?;
            assert_eq!(killed.len(), 1);
            assert_eq!(
                (
                    killed[0].node.as_str(),
                    killed[0].expected,
                    killed[0].signal.as_deref()
                ),
                ("n1", true, Some("SIGKILL"))
            );
            cluster
                .kill("n2")
                .await
                .expect("killing a crashed node is done at once");
            cluster.restart("n2").await?;
            let again = exits_within(&cluster, std::time::Duration::from_secs(5)).await;
            assert_eq!(again.len(), 1, "the restarted n2 crashes again: {again:?}");
            assert_eq!(
                again[0]
                    .log_tail
                    .iter()
                    .filter(|l| l.starts_with("panic:"))
                    .count(),
                1,
                "only its own process's log lines"
            );
            anyhow::Ok(())
        }
        .await;
        cluster.teardown().await.expect("teardown");
        result.expect("exits");
    }

    #[tokio::test]
    async fn a_run_whose_harness_died_is_swept_with_its_processes() {
        let _one = ONE_AT_A_TIME.lock().await;
        require_root().expect("this test needs root");
        let run_id = format!("fltestsw{}", std::process::id());
        std::fs::create_dir_all(OWNER_DIR).unwrap();
        std::fs::write(owner_file(&run_id), "4194304999:1").unwrap(); // a pid that cannot exist
        net::create_network(
            &run_id,
            net::free_octet(&run_id).await.unwrap(),
            &["n1".to_string()],
        )
        .await
        .unwrap();
        let mut orphan = Command::new("nsenter")
            .arg(format!("--net={}", net::ns_path(&run_id, "n1").display()))
            .args(["sleep", "1000"])
            .spawn()
            .unwrap();
        let swept = sweep_stale().await.unwrap();
        assert!(swept.contains(&run_id), "{swept:?}");
        assert!(net::list_namespaces()
            .await
            .unwrap()
            .iter()
            .all(|n| !n.contains(&run_id)));
        let status = tokio::time::timeout(std::time::Duration::from_secs(5), orphan.wait())
            .await
            .expect("the orphan was killed");
        assert!(!status.unwrap().success());
        assert!(!owner_file(&run_id).exists());
    }

    #[tokio::test]
    async fn a_run_left_running_is_swept_only_when_named() {
        let _one = ONE_AT_A_TIME.lock().await;
        require_root().expect("this test needs root");
        let run_id = format!("fltestkept{}", std::process::id());
        // Left running by a harness that has exited since.
        write_owner(&run_id, "left-running:4194304999:1").unwrap();
        net::create_network(
            &run_id,
            net::free_octet(&run_id).await.unwrap(),
            &["n1".to_string()],
        )
        .await
        .unwrap();
        let present = || async {
            net::list_namespaces()
                .await
                .unwrap()
                .iter()
                .any(|n| n.contains(&run_id))
        };
        let swept = sweep_stale().await.unwrap();
        let kept_by_sweep = present().await;
        let listed = list_runs()
            .await
            .iter()
            .any(|(r, tag)| *r == run_id && owner::left_running(tag));
        remove_run(&run_id).await.unwrap();
        assert!(
            !swept.contains(&run_id) && kept_by_sweep,
            "a stale sweep removed a left-up run"
        );
        assert!(listed, "cleanup --list must show the left-up run");
        assert!(!present().await, "naming the run removes it");
        assert!(!owner_file(&run_id).exists());
    }

    #[tokio::test]
    async fn a_live_run_is_not_swept() {
        let _one = ONE_AT_A_TIME.lock().await;
        require_root().expect("this test needs root");
        let run_id = format!("fltestlive{}", std::process::id());
        write_owner(&run_id, &owner::current_owner()).unwrap();
        net::create_network(&run_id, net::free_octet(&run_id).await.unwrap(), &[])
            .await
            .unwrap();
        let swept = sweep_stale().await.unwrap();
        let still_there = net::list_namespaces()
            .await
            .unwrap()
            .iter()
            .any(|n| n.contains(&run_id));
        remove_run(&run_id).await.unwrap();
        assert!(
            !swept.contains(&run_id) && still_there,
            "a run whose harness lives must stay"
        );
    }
}

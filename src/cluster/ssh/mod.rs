//! `--cluster ssh`: every node a server process on its own host, driven over SSH (Jepsen's
//! way). Node `nK` is the K-th host of `--hosts`; its files live in `<--ssh-dir>/nK/` on it
//! (layout in [`script`]).
//!
//! Setup, in this order: connect to every host (a host key or authentication failure is an
//! error naming the host, before anything on any host changes); check that each can run
//! the firewall commands; on each, remove faultline's firewall chain (the rules an earlier
//! run left), kill the servers of ours its pidfiles name and wipe our node directories;
//! then create the node directory, upload the server binary (or check the one already on
//! the host, `--remote-binary`) and start the server under its pidfile.
//!
//! Faults: partitions and loss are iptables rules in the FAULTLINE chain of each host
//! ([`nemesis::net`] through [`host::Host`]'s `NetExec`; netem is never used, a real host's
//! interface also carries the harness's traffic); kill is `kill -9` by pidfile, pause
//! SIGSTOP/SIGCONT. Exits are read from the wrapper's `server.exit`.
//!
//! Teardown (also after Ctrl-C): remove the chain, kill the servers, delete the node
//! directories (the runner downloads the logs into the run's `nodes/` first) and close the
//! connections. A harness killed with SIGKILL leaves servers running; the next run's setup
//! sweeps them. Two harnesses must not share hosts and `--ssh-dir` at once.

pub mod host;
pub mod script;

use super::lifecycle::{ExitBook, NodeExit};
use super::netns::SERVER_PORT;
use super::Cluster;
use crate::db::{Db, NodeLayout};
use anyhow::{bail, Context, Result};
use futures::future::BoxFuture;
use futures::FutureExt;
use host::Host;
use nemesis::net::NetExec;
use nemesis::{NodeControl, NodeInfo};
use script::ServerState;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Where node directories go on each host unless `--ssh-dir` says otherwise.
pub const DEFAULT_DIR: &str = "/var/tmp/faultline";

/// How faultline reaches the hosts (`--hosts`, `--ssh-*`), as given.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SshOptions {
    /// Host names or IPv4 addresses, one node each, in node order.
    pub hosts: Vec<String>,
    /// A file of hosts, one a line (`#` comments), read when `hosts` is empty.
    pub hosts_file: Option<PathBuf>,
    pub user: Option<String>,
    pub key: Option<PathBuf>,
    pub port: Option<u16>,
    /// An OpenSSH known-hosts file instead of the user's own.
    pub known_hosts: Option<PathBuf>,
    /// Run the firewall commands through `sudo -n`.
    pub sudo: bool,
    /// The directory under which node directories are created on each host.
    pub dir: String,
    /// A server binary already on every host (nothing is uploaded).
    pub remote_binary: Option<String>,
}

impl SshOptions {
    /// The hosts, from `--hosts` or `--hosts-file`; the error names the flag.
    pub fn host_list(&self) -> Result<Vec<String>> {
        if !self.hosts.is_empty() {
            return Ok(self.hosts.clone());
        }
        let Some(file) = &self.hosts_file else {
            bail!("--cluster ssh needs --hosts h1,h2,... or --hosts-file FILE")
        };
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("--hosts-file: reading {}", file.display()))?;
        let hosts: Vec<String> = text
            .lines()
            .map(|l| l.split('#').next().unwrap_or_default().trim())
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect();
        if hosts.is_empty() {
            bail!("--hosts-file {} names no host", file.display());
        }
        Ok(hosts)
    }

    /// Whether any host was named (`--hosts` or `--hosts-file`).
    pub fn names_hosts(&self) -> bool {
        !self.hosts.is_empty() || self.hosts_file.is_some()
    }

    /// Checks what can be checked before connecting; the error names the flag.
    pub fn validate(&self) -> Result<Vec<String>> {
        let hosts = self.host_list()?;
        if hosts.len() > 9 {
            bail!("--hosts: at most 9 hosts, got {}", hosts.len());
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(dup) = hosts.iter().find(|h| !seen.insert(h.as_str())) {
            bail!("--hosts: {dup} is named twice (one node per host)");
        }
        let dir = self.dir.trim_end_matches('/');
        if !self.dir.starts_with('/') || dir.is_empty() || dir.contains('\'') {
            bail!(
                "--ssh-dir {:?} must be an absolute path other than / (without quotes)",
                self.dir
            );
        }
        Ok(hosts)
    }
}

/// The server binary of an SSH cluster.
#[derive(Debug, Clone)]
pub enum Binary {
    /// A file on this machine, uploaded to every host.
    Upload(PathBuf),
    /// A path already on every host.
    OnHost(String),
}

/// Everything needed to start an SSH cluster.
#[derive(Debug, Clone)]
pub struct SshSpec {
    pub options: SshOptions,
    pub binary: Binary,
    pub server_args: Vec<String>,
    pub db: Arc<dyn Db>,
}

/// A started SSH cluster.
pub struct SshCluster {
    spec: SshSpec,
    hosts: Vec<Host>,
    nodes: Vec<NodeInfo>,
    exits: ExitBook,
    /// Per node: the length of its log when its current process started.
    log_starts: Mutex<HashMap<String, u64>>,
}

impl SshCluster {
    /// Connects to every host, sweeps what earlier runs left and starts every server
    /// (readiness is the caller's to poll). On failure after connecting, everything started
    /// is removed again.
    pub async fn start(spec: SshSpec) -> Result<SshCluster> {
        let names = spec.options.validate()?;
        let hosts = connect_all(&names, &spec.options).await?;
        let nodes = hosts
            .iter()
            .enumerate()
            .map(|(i, h)| NodeInfo {
                name: format!("n{}", i + 1),
                id: i as u64 + 1,
                ip: h.ip,
                addr: format!("{}:{SERVER_PORT}", h.ip),
            })
            .collect();
        let cluster = SshCluster {
            spec,
            hosts,
            nodes,
            exits: ExitBook::default(),
            log_starts: Mutex::new(HashMap::new()),
        };
        if let Err(e) = cluster.setup().await {
            let _ = cluster.teardown().await;
            return Err(e);
        }
        Ok(cluster)
    }

    /// Every step on every host at once (each command costs a round trip); a step starts
    /// once the previous one succeeded on all hosts.
    async fn setup(&self) -> Result<()> {
        futures::future::try_join_all(self.hosts.iter().map(check_firewall)).await?;
        futures::future::try_join_all(self.hosts.iter().map(|h| self.sweep(h))).await?;
        futures::future::try_join_all(
            self.nodes
                .iter()
                .zip(&self.hosts)
                .map(|(node, host)| self.install(node, host)),
        )
        .await?;
        futures::future::try_join_all(self.nodes.iter().map(|node| self.spawn(node))).await?;
        Ok(())
    }

    /// Creates the node directory and puts the server binary in place.
    async fn install(&self, node: &NodeInfo, host: &Host) -> Result<()> {
        host.sh(&script::prepare(&self.dir_of(&node.name))).await?;
        match &self.spec.binary {
            Binary::Upload(local) => host.upload(local, &self.binary_path(&node.name)).await,
            Binary::OnHost(path) => host
                .sh(&format!("test -x {}", script::quote(path)))
                .await
                .map(drop)
                .with_context(|| {
                    format!(
                        "--remote-binary {path} is not an executable on {}",
                        host.name
                    )
                }),
        }
    }

    async fn sweep(&self, host: &Host) -> Result<()> {
        sweep_host(host, &self.spec.options.dir).await
    }

    fn dir_of(&self, node: &str) -> String {
        script::node_dir(&self.spec.options.dir, node)
    }

    fn binary_path(&self, node: &str) -> String {
        match &self.spec.binary {
            Binary::OnHost(path) => path.clone(),
            Binary::Upload(local) => {
                let name = local
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "server".into());
                format!("{}/bin/{name}", self.dir_of(node))
            }
        }
    }

    fn host_of(&self, node: &str) -> Result<&Host> {
        let i = self
            .nodes
            .iter()
            .position(|n| n.name == node)
            .with_context(|| format!("no node named {node:?}"))?;
        Ok(&self.hosts[i])
    }

    /// The server command line of `node`.
    pub fn command_of(&self, node: &NodeInfo) -> Vec<String> {
        let layout = NodeLayout {
            binary: self.binary_path(&node.name),
            data_dir: format!("{}/data", self.dir_of(&node.name)),
        };
        self.spec
            .db
            .node_command(node, &self.nodes, &layout, &self.spec.server_args)
    }

    async fn spawn(&self, node: &NodeInfo) -> Result<()> {
        let host = self.host_of(&node.name)?;
        self.exits.starting(&node.name);
        let out = host
            .sh(&script::start(
                &self.dir_of(&node.name),
                &self.command_of(node),
            ))
            .await
            .with_context(|| format!("starting {}", node.name))?;
        let offset = out
            .lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or(0);
        self.log_starts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(node.name.clone(), offset);
        self.exits.started(&node.name);
        Ok(())
    }

    /// Asks every host at once how its server is, then reports the exits not seen before.
    async fn exits_now(&self) -> Result<Vec<NodeExit>> {
        let incarnations: Vec<u64> = self
            .nodes
            .iter()
            .map(|n| self.exits.incarnation(&n.name))
            .collect();
        let states = futures::future::try_join_all(
            self.nodes
                .iter()
                .zip(&self.hosts)
                .map(|(node, host)| self.state_of(node, host)),
        )
        .await?;
        let mut out = Vec::new();
        for ((node, host), (state, incarnation)) in self
            .nodes
            .iter()
            .zip(&self.hosts)
            .zip(states.into_iter().zip(incarnations))
        {
            if state == ServerState::Running {
                continue;
            }
            let Some(expected) = self.exits.claim_exit(&node.name, incarnation) else {
                continue;
            };
            let offset = self
                .log_starts
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&node.name)
                .copied()
                .unwrap_or(0);
            let log = match host
                .sh(&script::log_since(&self.dir_of(&node.name), offset))
                .await
            {
                Ok(text) => text.lines().map(str::to_string).collect(),
                Err(e) => vec![format!(
                    "(faultline could not read the log of {}: {e:#})",
                    node.name
                )],
            };
            let (code, signal) = state.code_and_signal();
            out.push(NodeExit::new(&node.name, expected, code, signal, &log));
        }
        Ok(out)
    }

    async fn state_of(&self, node: &NodeInfo, host: &Host) -> Result<ServerState> {
        let out = host.sh(&script::status(&self.dir_of(&node.name))).await?;
        ServerState::parse(&out)
            .with_context(|| format!("{}: unexpected status {out:?}", node.name))
    }

    async fn signal(&self, node: &str, sig: &str) -> Result<()> {
        self.host_of(node)?
            .sh(&script::signal(&self.dir_of(node), sig))
            .await
            .map(drop)
    }
}

/// Heals leftover rules, kills our stray servers and wipes our node directories under `dir`.
async fn sweep_host(host: &Host, dir: &str) -> Result<()> {
    nemesis::net::remove_chain(host)
        .await
        .with_context(|| format!("removing leftover firewall rules on {}", host.name))?;
    host.sh(&script::sweep(dir))
        .await
        .map(drop)
        .with_context(|| format!("sweeping {dir} on {}", host.name))
}

/// `faultline cleanup --hosts ...`: on every host of `names` (as [`SshOptions::validate`]
/// gives them), what a run's setup sweeps (the FAULTLINE
/// chain, the servers of ours that pidfiles under `--ssh-dir` name, the node directories),
/// then `--ssh-dir` itself once empty. Connects to all hosts first, so a host that cannot be
/// reached or authenticated changes nothing anywhere; then every host is swept even when
/// one fails, and the error names each that failed.
pub async fn sweep_hosts(names: &[String], options: &SshOptions) -> Result<()> {
    let hosts = connect_all(names, options).await?;
    let swept = futures::future::join_all(hosts.iter().map(|h| async move {
        check_firewall(h).await?;
        sweep_host(h, &options.dir).await?;
        h.sh(&script::remove_root_if_empty(&options.dir))
            .await
            .map(drop)
    }))
    .await;
    let errors: Vec<String> = swept
        .into_iter()
        .filter_map(|r| r.err())
        .map(|e| format!("{e:#}"))
        .collect();
    for h in hosts {
        h.close().await;
    }
    if !errors.is_empty() {
        bail!("{}", errors.join("; "));
    }
    Ok(())
}

/// Fails unless `host` can run iptables (as root, or through `--sudo`).
async fn check_firewall(host: &Host) -> Result<()> {
    host.run("iptables", &["-w", "5", "-S", "INPUT"])
        .await
        .map(drop)
        .with_context(|| format!("{} cannot run iptables (log in as root, or pass --sudo with passwordless sudo for iptables)", host.name))
}

/// Connects to every host at once; all failures are reported, each naming its host.
async fn connect_all(names: &[String], opts: &SshOptions) -> Result<Vec<Host>> {
    let results = futures::future::join_all(names.iter().map(|n| Host::connect(n, opts))).await;
    let mut hosts = Vec::new();
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok(h) => hosts.push(h),
            Err(e) => errors.push(format!("{e:#}")),
        }
    }
    if !errors.is_empty() {
        for h in hosts {
            h.close().await;
        }
        bail!("{}", errors.join("; "));
    }
    Ok(hosts)
}

impl NodeControl for SshCluster {
    fn nodes(&self) -> &[NodeInfo] {
        &self.nodes
    }

    fn kill<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<()>> {
        async move {
            let host = self.host_of(node)?;
            self.exits.expect_exit(node);
            host.sh(&script::kill(&self.dir_of(node))).await.map(drop)
        }
        .boxed()
    }

    fn restart<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<()>> {
        async move {
            let info = NodeInfo::find(&self.nodes, node)?.clone();
            if self.state_of(&info, self.host_of(node)?).await? == ServerState::Running {
                bail!("{node} is still running; kill it before restarting it");
            }
            self.spawn(&info).await
        }
        .boxed()
    }

    fn pause<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<()>> {
        self.signal(node, "STOP").boxed()
    }

    fn resume<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<()>> {
        self.signal(node, "CONT").boxed()
    }

    fn netns<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<PathBuf>> {
        async move {
            bail!(
                "{node} runs on its own host over ssh: it has no network namespace on this machine"
            )
        }
        .boxed()
    }

    fn node_net<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<Box<dyn NetExec + 'a>>> {
        async move { Ok(Box::new(HostNet(self.host_of(node)?)) as Box<dyn NetExec + 'a>) }.boxed()
    }

    fn netem_usable(&self) -> bool {
        false
    }
}

/// A host's firewall, lent to the nemesis.
struct HostNet<'a>(&'a Host);

impl NetExec for HostNet<'_> {
    fn run<'a>(&'a self, program: &'a str, args: &'a [&'a str]) -> BoxFuture<'a, Result<String>> {
        self.0.run(program, args)
    }
}

impl Cluster for SshCluster {
    fn describe(&self) -> serde_json::Value {
        let binary = match &self.spec.binary {
            Binary::Upload(p) => serde_json::json!({ "uploaded_from": p }),
            Binary::OnHost(p) => serde_json::json!({ "on_host": p }),
        };
        serde_json::json!({
            "kind": "ssh",
            "dir": self.spec.options.dir,
            "user": self.spec.options.user,
            "port": self.spec.options.port,
            "sudo": self.spec.options.sudo,
            "binary": binary,
            "server_args": self.spec.server_args,
            "nodes": self.nodes.iter().zip(&self.hosts).map(|(n, h)| serde_json::json!({
                "name": n.name, "id": n.id, "addr": n.addr, "host": h.name,
                "dir": self.dir_of(&n.name),
                "command": self.command_of(n),
            })).collect::<Vec<_>>(),
        })
    }

    fn collect_logs<'a>(&'a self, dir: &'a Path) -> BoxFuture<'a, Result<()>> {
        async move {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            let mut first_err = None;
            for (node, host) in self.nodes.iter().zip(&self.hosts) {
                let from = format!("{}/server.log", self.dir_of(&node.name));
                if let Err(e) = host
                    .download(&from, &dir.join(format!("{}.log", node.name)))
                    .await
                {
                    first_err.get_or_insert(e);
                }
            }
            first_err.map_or(Ok(()), Err)
        }
        .boxed()
    }

    fn teardown(&self) -> BoxFuture<'_, Result<()>> {
        async move {
            self.exits.tearing_down();
            let swept = futures::future::join_all(self.hosts.iter().map(|h| self.sweep(h))).await;
            for host in &self.hosts {
                let _ = host
                    .sh(&script::remove_root_if_empty(&self.spec.options.dir))
                    .await;
            }
            swept.into_iter().collect::<Result<Vec<()>>>().map(drop)
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

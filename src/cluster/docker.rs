//! A cluster of server containers on a labelled Docker bridge network.
//!
//! Each node `nK` is two containers: a *sandbox* (`/pause`) that owns the node's network
//! namespace and static IP, and the *server* joined to it with `--network container:`.
//! Killing, restarting or pausing the server leaves the namespace — and the firewall rules
//! the nemesis put in it — untouched. Data dirs are bind-mounted from the run's store dir.
//! Exits are seen with one `docker inspect` of every server container per look; the log
//! lines of an exit are `docker logs --since` the container's last start.

use super::lifecycle::{ExitBook, NodeExit, CRASH_SEARCH_LINES};
use super::subnet::{self, Cidr};
use super::Cluster;
use crate::docker::{self, docker, docker_owned, LABEL, OWNER_LABEL, RUN_LABEL};
use anyhow::{bail, Context, Result};
use futures::future::BoxFuture;
use futures::FutureExt;
use nemesis::{NodeControl, NodeInfo};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The port every server listens on inside its namespace.
pub const SERVER_PORT: u16 = 50051;

/// Everything needed to start a Docker cluster.
#[derive(Debug, Clone)]
pub struct DockerSpec {
    /// Unique id of the run; names and labels every resource.
    pub run_id: String,
    pub nodes: usize,
    pub image: String,
    /// Directory (absolute) under which `data/nK` dirs are created.
    pub run_dir: PathBuf,
    /// Extra server flags appended to every node's command line (`--groups 3`, `--bug X`, ...).
    pub server_args: Vec<String>,
    /// A fixed subnet instead of an automatically chosen one.
    pub subnet: Option<Cidr>,
    /// The target whose node command line to run.
    pub db: std::sync::Arc<dyn crate::db::Db>,
    /// `--leave-running`: the cluster is tagged to outlive the harness
    /// ([`super::owner::run_owner`]).
    pub leave_running: bool,
}

/// A started Docker cluster.
pub struct DockerCluster {
    spec: DockerSpec,
    network: String,
    subnet: Cidr,
    nodes: Vec<NodeInfo>,
    exits: ExitBook,
}

impl DockerCluster {
    /// Creates the network and the containers, and returns once every server container is
    /// running (readiness of the servers themselves is the caller's to poll). On failure
    /// everything already created is removed again.
    pub async fn start(spec: DockerSpec) -> Result<DockerCluster> {
        if spec.nodes == 0 || spec.nodes > 9 {
            bail!("--nodes must be between 1 and 9, got {}", spec.nodes);
        }
        let (network, subnet) = create_network(&spec).await?;
        let nodes = (1..=spec.nodes as u64)
            .map(|id| {
                let ip = subnet.host(10 + id as u32);
                NodeInfo {
                    name: format!("n{id}"),
                    id,
                    ip,
                    addr: format!("{ip}:{SERVER_PORT}"),
                }
            })
            .collect();
        let cluster = DockerCluster {
            spec,
            network,
            subnet,
            nodes,
            exits: ExitBook::default(),
        };
        if let Err(e) = cluster.start_nodes().await {
            let _ = cluster.teardown().await;
            return Err(e);
        }
        Ok(cluster)
    }

    async fn start_nodes(&self) -> Result<()> {
        for node in &self.nodes {
            self.start_sandbox(node).await?;
        }
        for node in &self.nodes {
            self.start_server(node).await?;
        }
        Ok(())
    }

    fn sandbox_name(&self, node: &str) -> String {
        format!("{}-{node}-net", self.spec.run_id)
    }

    fn server_name(&self, node: &str) -> String {
        format!("{}-{node}", self.spec.run_id)
    }

    fn label_args(&self, node: &str, role: &str) -> Vec<String> {
        [
            LABEL.to_string(),
            format!("{RUN_LABEL}={}", self.spec.run_id),
            format!(
                "{OWNER_LABEL}={}",
                super::owner::run_owner(self.spec.leave_running)
            ),
            format!("faultline.node={node}"),
            format!("faultline.role={role}"),
        ]
        .into_iter()
        .flat_map(|l| ["--label".to_string(), l])
        .collect()
    }

    async fn start_sandbox(&self, node: &NodeInfo) -> Result<()> {
        let mut args: Vec<String> = vec![
            "run".into(),
            "-d".into(),
            "--name".into(),
            self.sandbox_name(&node.name),
        ];
        args.extend(self.label_args(&node.name, "sandbox"));
        args.extend([
            "--network".into(),
            self.network.clone(),
            "--ip".into(),
            node.ip.to_string(),
        ]);
        args.extend(["--hostname".into(), node.name.clone()]);
        args.extend([self.spec.image.clone(), "/pause".into()]);
        docker_owned(&args)
            .await
            .with_context(|| format!("starting the sandbox of {}", node.name))?;
        Ok(())
    }

    async fn start_server(&self, node: &NodeInfo) -> Result<()> {
        let data = self.spec.run_dir.join("data").join(&node.name);
        std::fs::create_dir_all(&data).with_context(|| format!("creating {}", data.display()))?;
        let mut args: Vec<String> = vec![
            "run".into(),
            "-d".into(),
            "--name".into(),
            self.server_name(&node.name),
        ];
        args.extend(self.label_args(&node.name, "server"));
        args.extend([
            "--network".into(),
            format!("container:{}", self.sandbox_name(&node.name)),
        ]);
        args.extend(["-v".into(), format!("{}:/data", data.display())]);
        args.push(self.spec.image.clone());
        args.extend(self.command_of(node));
        self.exits.starting(&node.name);
        docker_owned(&args)
            .await
            .with_context(|| format!("starting the server of {}", node.name))?;
        self.exits.started(&node.name);
        Ok(())
    }

    /// The target's server command line of `node`, as the node image lays it out.
    fn command_of(&self, node: &NodeInfo) -> Vec<String> {
        let layout = crate::db::NodeLayout::image(self.spec.db.kind().name());
        self.spec
            .db
            .node_command(node, &self.nodes, &layout, &self.spec.server_args)
    }
}

/// What `docker inspect` says about one server container.
struct ServerState {
    running: bool,
    exit_code: Option<i32>,
    oom_killed: bool,
    started_at: String,
}

/// The format of one `docker inspect` line: status, exit code, OOM flag, last start.
const STATE_FORMAT: &str =
    "{{.State.Status}}|{{.State.ExitCode}}|{{.State.OOMKilled}}|{{.State.StartedAt}}";

fn parse_state(line: &str) -> Result<ServerState> {
    let parts: Vec<&str> = line.trim().split('|').collect();
    let [status, code, oom, started_at] = parts[..] else {
        bail!("docker inspect printed {line:?}, not status|exit code|oom|started at");
    };
    Ok(ServerState {
        // created/restarting count as alive: only a process that ran and stopped has exited.
        running: !matches!(status, "exited" | "dead"),
        exit_code: code.parse().ok(),
        oom_killed: oom == "true",
        started_at: started_at.to_string(),
    })
}

impl DockerCluster {
    /// Exits not reported yet, from one `docker inspect` of every server container.
    async fn exits_now(&self) -> Result<Vec<NodeExit>> {
        let incarnations: Vec<u64> = self
            .nodes
            .iter()
            .map(|n| self.exits.incarnation(&n.name))
            .collect();
        let names: Vec<String> = self
            .nodes
            .iter()
            .map(|n| self.server_name(&n.name))
            .collect();
        let mut args = vec![
            "inspect".to_string(),
            "--format".into(),
            STATE_FORMAT.into(),
        ];
        args.extend(names.iter().cloned());
        let out = docker_owned(&args)
            .await
            .context("looking at the server containers")?;
        let lines: Vec<&str> = out.lines().collect();
        if lines.len() != self.nodes.len() {
            bail!(
                "docker inspect described {} containers, expected {}",
                lines.len(),
                self.nodes.len()
            );
        }
        let mut exits = Vec::new();
        for ((node, incarnation), line) in self.nodes.iter().zip(incarnations).zip(lines) {
            let state = parse_state(line)?;
            if state.running {
                continue;
            }
            let Some(expected) = self.exits.claim_exit(&node.name, incarnation) else {
                continue;
            };
            let log = self.log_since(&node.name, &state.started_at).await;
            let signal = state
                .oom_killed
                .then(|| "SIGKILL (out of memory)".to_string());
            exits.push(NodeExit::new(
                &node.name,
                expected,
                state.exit_code,
                signal,
                &log,
            ));
        }
        Ok(exits)
    }

    /// The server's log lines (stdout and stderr, in order) since `since`.
    async fn log_since(&self, node: &str, since: &str) -> Vec<String> {
        let tail = CRASH_SEARCH_LINES.to_string();
        let out = tokio::process::Command::new("sh")
            .args([
                "-c",
                "exec docker logs --since \"$1\" --tail \"$2\" \"$3\" 2>&1",
                "sh",
                since,
                &tail,
                &self.server_name(node),
            ])
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output()
            .await;
        match out {
            Ok(o) => String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(str::to_string)
                .collect(),
            Err(e) => vec![format!("(faultline could not read the log of {node}: {e})")],
        }
    }
}

/// Creates the run's bridge network on a free subnet, retrying when another network grabs
/// the chosen one first.
async fn create_network(spec: &DockerSpec) -> Result<(String, Cidr)> {
    let name = format!("{}-net", spec.run_id);
    let seed = std::process::id();
    let mut last_err = None;
    for attempt in 0..6u32 {
        let cidr = match spec.subnet {
            Some(c) => c,
            None => {
                let taken = subnet::taken_subnets().await?;
                subnet::pick(seed.wrapping_add(attempt * 17), &taken).context(
                    "no free 10.77.x.0/24 subnet for the test network; run `faultline cleanup`",
                )?
            }
        };
        let args = [
            "network".to_string(),
            "create".into(),
            "--driver".into(),
            "bridge".into(),
            "--subnet".into(),
            cidr.to_string(),
            "--gateway".into(),
            cidr.host(1).to_string(),
            "--label".into(),
            LABEL.into(),
            "--label".into(),
            format!("{RUN_LABEL}={}", spec.run_id),
            "--label".into(),
            format!(
                "{OWNER_LABEL}={}",
                super::owner::run_owner(spec.leave_running)
            ),
            name.clone(),
        ];
        match docker_owned(&args).await {
            Ok(_) => return Ok((name, cidr)),
            Err(e) if spec.subnet.is_none() && e.to_string().contains("overlap") => {
                last_err = Some(e)
            }
            Err(e) => return Err(e).context("creating the test network"),
        }
    }
    Err(last_err.unwrap_or_else(|| anyhow::anyhow!("no attempt made")))
        .context("creating the test network")
}

impl NodeControl for DockerCluster {
    fn nodes(&self) -> &[NodeInfo] {
        &self.nodes
    }

    fn kill<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<()>> {
        async move {
            NodeInfo::find(&self.nodes, node)?;
            self.exits.expect_exit(node);
            match docker(&["kill", "-s", "KILL", &self.server_name(node)]).await {
                // Already dead (it crashed): killing it again is done.
                Err(e) if e.to_string().contains("is not running") => Ok(()),
                r => r.map(drop),
            }
        }
        .boxed()
    }

    fn restart<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<()>> {
        async move {
            NodeInfo::find(&self.nodes, node)?;
            self.exits.starting(node);
            docker(&["start", &self.server_name(node)]).await?;
            self.exits.started(node);
            Ok(())
        }
        .boxed()
    }

    fn pause<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<()>> {
        async move {
            NodeInfo::find(&self.nodes, node)?;
            docker(&["pause", &self.server_name(node)]).await.map(drop)
        }
        .boxed()
    }

    fn resume<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<()>> {
        async move {
            NodeInfo::find(&self.nodes, node)?;
            docker(&["unpause", &self.server_name(node)])
                .await
                .map(drop)
        }
        .boxed()
    }

    fn netns<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<PathBuf>> {
        async move {
            NodeInfo::find(&self.nodes, node)?;
            let pid = docker::container_pid(&self.sandbox_name(node)).await?;
            if pid == 0 {
                bail!("the sandbox of {node} is not running; its network namespace is gone");
            }
            Ok(PathBuf::from(format!("/proc/{pid}/ns/net")))
        }
        .boxed()
    }
}

impl Cluster for DockerCluster {
    fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "kind": "docker",
            "run_id": self.spec.run_id,
            "network": self.network,
            "subnet": self.subnet.to_string(),
            "image": self.spec.image,
            "server_args": self.spec.server_args,
            "nodes": self.nodes.iter().map(|n| serde_json::json!({
                "name": n.name, "id": n.id, "addr": n.addr,
                "command": self.command_of(n),
            })).collect::<Vec<_>>(),
        })
    }

    fn collect_logs<'a>(&'a self, dir: &'a Path) -> BoxFuture<'a, Result<()>> {
        async move {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            for node in &self.nodes {
                let path = dir.join(format!("{}.log", node.name));
                let file = std::fs::File::create(&path)
                    .with_context(|| format!("creating {}", path.display()))?;
                let status = tokio::process::Command::new("docker")
                    .args(["logs", &self.server_name(&node.name)])
                    .stdin(Stdio::null())
                    .stdout(Stdio::from(file.try_clone()?))
                    .stderr(Stdio::from(file))
                    .status()
                    .await
                    .context("running docker logs")?;
                if !status.success() {
                    tracing::warn!("docker logs for {} failed ({status})", node.name);
                }
            }
            Ok(())
        }
        .boxed()
    }

    fn teardown(&self) -> BoxFuture<'_, Result<()>> {
        async move {
            self.exits.tearing_down();
            super::sweep::remove_run(&self.spec.run_id).await
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

#[cfg(test)]
mod tests {
    //! Lifecycle tests against the real Docker engine, with the sandbox binary standing in
    //! for the server (it ignores its arguments and sleeps), so no refkv build is needed.
    use super::*;
    use crate::cluster::sweep;

    async fn sleeper_image() -> String {
        let root = crate::image::workspace_root().expect("workspace sources");
        let pause = crate::image::build_pause(&root)
            .await
            .expect("building the sandbox binary");
        // Its own repository, so the refkv image's `:latest` tag is never moved by a test.
        crate::image::ensure_content_image("faultline-sleeper", "refkv", &pause, &pause)
            .await
            .expect("building the image")
            .tag
    }

    async fn host_rules() -> String {
        let out = tokio::process::Command::new("iptables")
            .arg("-S")
            .output()
            .await
            .expect("iptables -S");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.contains("br-") && !l.contains("DOCKER"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The lifecycle of a started cluster: its containers and data directories, a rule
    /// that survives a kill and restart in the namespace the server shares, pause and
    /// resume, and a frozen container left for teardown.
    async fn kill_restart_and_pause(
        cluster: &DockerCluster,
        run_id: &str,
        dir: &std::path::Path,
    ) -> anyhow::Result<()> {
        let labelled =
            crate::docker::containers_with(&[LABEL, &format!("{RUN_LABEL}={run_id}")]).await?;
        assert_eq!(labelled.len(), 6, "a sandbox and a server per node");
        assert!(dir.join("data/n2").is_dir());

        let ns = cluster.netns("n1").await?;
        nemesis::net::ensure_chain(&ns).await?;
        nemesis::net::drop_inbound_from(&ns, cluster.nodes()[1].ip).await?;
        cluster.kill("n1").await?;
        assert_eq!(
            crate::docker::container_state(&cluster.server_name("n1")).await?,
            "exited"
        );
        cluster.restart("n1").await?;
        assert_eq!(
            crate::docker::container_state(&cluster.server_name("n1")).await?,
            "running"
        );
        assert_eq!(
            cluster.netns("n1").await?,
            ns,
            "the namespace outlives the server"
        );
        assert_eq!(
            nemesis::net::rules(&ns).await?.len(),
            1,
            "the rule survived the kill"
        );
        // The server shares the sandbox's namespace: same address.
        let server_pid = crate::docker::container_pid(&cluster.server_name("n1")).await?;
        let a = std::fs::read_link(format!("/proc/{server_pid}/ns/net"))?;
        let b = std::fs::read_link(&ns)?;
        assert_eq!(a, b);

        cluster.pause("n2").await?;
        assert_eq!(
            crate::docker::container_state(&cluster.server_name("n2")).await?,
            "paused"
        );
        cluster.resume("n2").await?;
        assert_eq!(
            crate::docker::container_state(&cluster.server_name("n2")).await?,
            "running"
        );
        nemesis::net::flush(&ns).await?;
        assert!(nemesis::net::rules(&ns).await?.is_empty());
        cluster.pause("n3").await?; // teardown must cope with a frozen container
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sandbox_keeps_rules_and_address_across_kill_restart_and_pause() {
        crate::docker::check_engine()
            .await
            .expect("a running Docker engine");
        let image = sleeper_image().await;
        let dir = tempfile::tempdir().unwrap();
        let run_id = format!("fltest{}", std::process::id());
        let host_before = host_rules().await;
        let spec = DockerSpec {
            run_id: run_id.clone(),
            nodes: 3,
            image,
            run_dir: dir.path().to_path_buf(),
            server_args: vec![],
            subnet: None,
            db: crate::db::DbKind::Refkv.build(1),
            leave_running: false,
        };
        let cluster = DockerCluster::start(spec).await.expect("cluster start");
        let result = kill_restart_and_pause(&cluster, &run_id, dir.path()).await;
        let logs = tempfile::tempdir().unwrap();
        cluster
            .collect_logs(logs.path())
            .await
            .expect("collecting logs");
        assert!(logs.path().join("n3.log").exists());
        cluster.teardown().await.expect("teardown");
        result.expect("lifecycle");
        let filter = format!("{RUN_LABEL}={run_id}");
        assert!(crate::docker::containers_with(&[LABEL, &filter])
            .await
            .unwrap()
            .is_empty());
        assert!(crate::docker::networks_with(&[LABEL, &filter])
            .await
            .unwrap()
            .is_empty());
        assert_eq!(
            host_rules().await,
            host_before,
            "the host's firewall must not change"
        );
        // Nothing of ours is stale now.
        let swept = sweep::sweep_stale().await.unwrap();
        assert!(!swept.runs.contains(&run_id));
    }
}

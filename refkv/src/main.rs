//! The `refkv` binary: `refkv serve` runs a node, `refkv ctl` talks to one.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use refkv::bugs::Bugs;
use refkv::node::{NodeConfig, Tunables};

#[derive(Parser, Debug)]
#[command(
    name = "refkv",
    version,
    about = "refkv: a range-sharded multi-Raft KV store (elastickv-compatible gRPC subset)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a node.
    Serve(Box<ServeArgs>),
    /// Talk to a running node.
    Ctl {
        /// The node's gRPC address (IP:port).
        #[arg(long)]
        addr: String,
        #[command(subcommand)]
        cmd: refkv::ctl::CtlCommand,
    },
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// This node's id (a key of --peers).
    #[arg(long)]
    id: u64,
    /// Address to listen on for clients and peers (IP:port).
    #[arg(long)]
    listen: String,
    /// Every node of the cluster, this one included: `1=IP:PORT,2=IP:PORT,3=IP:PORT`.
    #[arg(long)]
    peers: String,
    /// Also serve the DynamoDB-compatible API (a JSON subset over refkv's transactions;
    /// docs/dynamodb.md) on this address (IP:port, plain HTTP).
    #[arg(long)]
    dynamo_listen: Option<String>,
    /// Directory for this node's redb files (one per Raft group).
    #[arg(long)]
    data_dir: PathBuf,
    /// Number of Raft groups (group 1 is the default group holding the catalog).
    #[arg(long)]
    groups: Option<u64>,
    /// Initial route boundaries, comma-separated (routes go to groups round-robin).
    #[arg(long, value_delimiter = ',')]
    initial_splits: Option<Vec<String>>,
    /// JSON file with tunables (see docs/refkv.md); flags override it.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Enable a seeded bug (repeatable; docs/refkv.md § Seeded bugs says what each breaks; an
    /// unknown name is refused with the list of known ones).
    #[arg(long = "bug")]
    bugs: Vec<String>,
    /// Run the automatic splitter on the default-group leader.
    #[arg(long)]
    auto_split: bool,
    /// Move-job copy throttle in bytes/s.
    #[arg(long)]
    copy_bytes_per_sec: Option<u64>,
    /// Auto-split sampling window (e.g. 2s, 500ms).
    #[arg(long, value_parser = refkv::autosplit::parse_duration)]
    split_window: Option<std::time::Duration>,
    /// Weighted load (4×writes + 1×reads, ops/min) that makes a route hot.
    #[arg(long)]
    split_threshold: Option<f64>,
    /// Consecutive hot windows before a route becomes a split candidate.
    #[arg(long)]
    split_hysteresis: Option<u32>,
    /// Per-route cooldown after a split (e.g. 30s).
    #[arg(long, value_parser = refkv::autosplit::parse_duration)]
    split_cooldown: Option<std::time::Duration>,
    /// Maximum splits issued per window.
    #[arg(long)]
    split_per_cycle: Option<usize>,
    /// Maximum number of routes in the catalog.
    #[arg(long)]
    split_max_routes: Option<usize>,
    /// Keep auto-split children in the source group (no cross-group move).
    #[arg(long)]
    split_no_move: bool,
    /// Test only: node ID panics DURATION after it starts (`ID=DURATION`, e.g. `2=5s`), a
    /// server that dies on its own; other nodes ignore it.
    #[arg(long, value_name = "ID=DURATION", value_parser = refkv::panic_after::parse)]
    panic_after: Option<refkv::panic_after::PanicAfter>,
    /// Test only: a move job stops in DELTA_COPY once its target was granted the range
    /// (`Own`) and is never stepped to CUTOVER; only an abandon ends it.
    #[arg(long)]
    hold_before_cutover: bool,
}

fn parse_peers(s: &str) -> anyhow::Result<BTreeMap<u64, String>> {
    let mut peers = BTreeMap::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        let (id, addr) = part
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--peers entry {part:?} is not ID=IP:PORT"))?;
        let id: u64 = id
            .trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("--peers entry {part:?}: bad node id"))?;
        let sock: std::net::SocketAddr = addr
            .trim()
            .parse()
            .map_err(|e| anyhow::anyhow!("--peers entry {part:?}: {e} (addresses are IP:port)"))?;
        if peers.insert(id, sock.to_string()).is_some() {
            anyhow::bail!("--peers lists node {id} twice");
        }
    }
    if peers.is_empty() {
        anyhow::bail!("--peers is empty");
    }
    Ok(peers)
}

fn node_config(a: ServeArgs) -> anyhow::Result<NodeConfig> {
    let mut tunables = match &a.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
            serde_json::from_str::<Tunables>(&text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
        }
        None => Tunables::default(),
    };
    if let Some(g) = a.groups {
        tunables.groups = g;
    }
    if let Some(s) = a.initial_splits {
        tunables.initial_splits = s;
    }
    if let Some(c) = a.copy_bytes_per_sec {
        tunables.copy_bytes_per_sec = c;
    }
    let split = &mut tunables.auto_split;
    if let Some(w) = a.split_window {
        split.window = w;
    }
    if let Some(t) = a.split_threshold {
        split.threshold_ops_per_min = t;
    }
    if let Some(h) = a.split_hysteresis {
        split.hysteresis_windows = h;
    }
    if let Some(c) = a.split_cooldown {
        split.cooldown = c;
    }
    if let Some(n) = a.split_per_cycle {
        split.splits_per_cycle = n;
    }
    if let Some(n) = a.split_max_routes {
        split.max_routes = n;
    }
    if a.split_no_move {
        split.move_to_least_loaded = false;
    }
    if a.hold_before_cutover {
        tunables.hold_before_cutover = true;
    }
    let peers = parse_peers(&a.peers)?;
    if !peers.contains_key(&a.id) {
        anyhow::bail!("--id {} is not in --peers", a.id);
    }
    let bugs = Bugs::from_names(&a.bugs).map_err(|e| anyhow::anyhow!("--bug: {e}"))?;
    Ok(NodeConfig {
        id: a.id,
        listen: a.listen,
        peers,
        data_dir: a.data_dir,
        bugs,
        tunables,
        auto_split: a.auto_split,
        dynamo_listen: a.dynamo_listen,
    })
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => {
            tracing_subscriber::fmt()
                .with_env_filter(
                    tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                        "info,openraft=warn,h2=warn,tower=warn,hyper=warn".into()
                    }),
                )
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .with_writer(std::io::stderr)
                .init();
            refkv::panic_after::arm(args.id, args.panic_after);
            node_config(*args).and_then(|cfg| {
                let rt = runtime();
                let result = rt.block_on(refkv::server::serve(cfg));
                // Background tasks (job driver, replication) are abandoned, not awaited.
                rt.shutdown_timeout(std::time::Duration::from_secs(1));
                result
            })
        }
        Command::Ctl { addr, cmd } => runtime().block_on(refkv::ctl::run(&addr, cmd)),
    };
    if let Err(e) = result {
        eprintln!("refkv: {e:#}");
        std::process::exit(1);
    }
}

fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("refkv: cannot start the async runtime: {e}");
            std::process::exit(1);
        }
    }
}

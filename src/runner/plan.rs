//! The validated plan of a run: every option of `faultline test` checked and resolved
//! (seed chosen, nemesis list parsed, server flags assembled) before anything starts, so bad
//! arguments fail fast with exit code 254 and `test.json` records exactly what ran.

use super::spec::TestSpec;
use crate::cluster::subnet::{self, Cidr};
use crate::db::Capability;
use nemesis::{FaultKind, PartitionMode};
use std::time::Duration;
use workloads::client::dynamodb::value_types::ValueTypes;
use workloads::config::{WorkloadConfig, WorkloadKind};

/// The workload's defaults overridden by the command line.
fn workload_config(args: &TestSpec, seed: u64) -> anyhow::Result<WorkloadConfig> {
    let kind: WorkloadKind = args.workload.parse().map_err(anyhow::Error::msg)?;
    let mut cfg = WorkloadConfig::defaults(kind);
    cfg.seed = seed;
    cfg.time_limit_s = args.time_limit as f64;
    if let Some(c) = &args.concurrency {
        cfg.concurrency = c.parse()?;
    }
    if let Some(r) = args.rate {
        cfg.rate = r;
    }
    if let Some(d) = &args.key_dist {
        cfg.key_dist = d.parse()?;
    }
    if let Some(f) = args.read_fraction {
        cfg.set_read_fraction(f)?;
    }
    if let Some(n) = args.key_count {
        cfg.keys = n;
        cfg.celebrities = cfg.celebrities.min(n.max(1));
    }
    if let Some(t) = &args.txn_length {
        (cfg.txn_min_len, cfg.txn_max_len) = workloads::config::parse_txn_length(t)?;
    }
    if let Some(n) = args.max_writes_per_key {
        cfg.max_writes_per_key = n;
    }
    cfg.value_types = value_types(args)?;
    if cfg.value_types == Some(ValueTypes::All) {
        match args.key_count {
            None => cfg.keys = ALL_TYPES_KEYS,
            Some(n) if n < 10 => anyhow::bail!(
                "--value-type all spreads the keys over ten types: --key-count {n} must be at least 10"
            ),
            Some(_) => {}
        }
    }
    if let Some(n) = args.set_size {
        if !kind
            .spec()
            .checkers
            .contains(&analysis::checkers::set_full::NAME)
        {
            anyhow::bail!(
                "--set-size applies to the set workloads (hotspot, set), not --workload {}",
                args.workload
            );
        }
        cfg.set_size = n;
    }
    let transactional = kind.spec().transactional();
    for (flag, given) in [
        ("--txn-length", args.txn_length.is_some()),
        ("--max-writes-per-key", args.max_writes_per_key.is_some()),
        ("--consistency-model", args.consistency_model.is_some()),
    ] {
        if given && !transactional {
            anyhow::bail!("{flag} applies to the transaction workloads (append, rw-register), not --workload {}", args.workload);
        }
    }
    if let Some(m) = &args.consistency_model {
        m.parse::<analysis::checkers::isolation::ConsistencyModel>()
            .map_err(|e| anyhow::anyhow!("--consistency-model: {e}"))?;
    }
    cfg.validate()?;
    Ok(cfg)
}

/// The workloads a client of a data API runs, and what they are over it (for the error
/// naming them); `None`: every workload the target's capabilities allow.
fn data_api_workloads(
    client: workloads::Protocol,
) -> Option<(&'static [&'static str], &'static str)> {
    match client {
        workloads::Protocol::Dynamodb => Some((
            &["append", "register"],
            "list-append transactions, or registers of every attribute type, through the AWS \
             SDK; docs/dynamodb.md",
        )),
        workloads::Protocol::S3 => Some((
            &["register", "objects"],
            "registers as objects, or objects of every size, through the AWS SDK: no scans, \
             compare-and-set or transactions; docs/s3.md",
        )),
        workloads::Protocol::Sqs => Some((
            &["queue"],
            "a FIFO queue's sends, receives and deletes through the AWS SDK; docs/sqs.md",
        )),
        workloads::Protocol::Grpc | workloads::Protocol::Redis => None,
    }
}
/// Register keys of `--value-type all` unless `--key-count` says otherwise: two per type.
const ALL_TYPES_KEYS: u64 = 20;

/// `--value-type`: only for `--workload register --client dynamodb`, where it defaults to
/// `all`.
fn value_types(args: &TestSpec) -> anyhow::Result<Option<ValueTypes>> {
    let dynamo_register =
        args.client == Some(workloads::Protocol::Dynamodb) && args.workload == "register";
    match (&args.value_type, dynamo_register) {
        (Some(t), true) => Ok(Some(t.parse().map_err(anyhow::Error::msg)?)),
        (None, true) => Ok(Some(ValueTypes::All)),
        (Some(_), false) => anyhow::bail!(
            "--value-type applies to --workload register with --client dynamodb, not --workload {}{}",
            args.workload,
            args.client.map(|c| format!(" --client {}", c.name())).unwrap_or_default()
        ),
        (None, false) => Ok(None),
    }
}

/// Options that name nodes, refused for an in-process target. `--cluster docker` is the
/// default and cannot be told from an explicit one, so only the other kinds are refused.
fn in_process_options(args: &TestSpec) -> Result<(), crate::db::Unsupported> {
    let db = args.db.name();
    let asked = [
        ("db-binary", args.db_binary.is_some()),
        ("image", args.image.is_some()),
        ("server-arg", !args.server_args.is_empty()),
        ("subnet", args.subnet.is_some()),
        ("endpoints", args.endpoints.is_some()),
        ("cluster", args.cluster != crate::db::ClusterKind::Docker),
    ];
    match asked.into_iter().find(|(_, given)| *given) {
        Some((flag, _)) => Err(crate::db::Unsupported::NoNodes { db, flag }),
        None => Ok(()),
    }
}

/// `args` with the SSH hosts resolved (`--hosts-file` read) and one node per host.
fn with_ssh_hosts(args: &TestSpec, notes: &mut Vec<String>) -> anyhow::Result<TestSpec> {
    let hosts = args.ssh.validate()?;
    let mut args = args.clone();
    let n = u8::try_from(hosts.len()).unwrap_or(u8::MAX);
    if args.nodes != n {
        notes.push(format!(
            "--cluster ssh runs one node per host: {n} node(s) (--nodes {} does not apply)",
            args.nodes
        ));
    }
    args.nodes = n;
    args.ssh.hosts = hosts;
    Ok(args)
}

/// An error in the command-line arguments (exit code 254); the message names the flag.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadArgs(pub String);

/// Everything a run needs, validated.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The run as asked for.
    pub spec: TestSpec,
    pub test_name: String,
    pub seed: u64,
    /// The workload's configuration (defaults of the workload, overridden by the flags).
    pub workload: WorkloadConfig,
    pub nemesis: Vec<FaultKind>,
    pub partition_modes: Vec<PartitionMode>,
    /// The phase the `move` fault aims at; `None` = random.
    pub move_phase: Option<analysis::history::JobPhase>,
    /// What the `move` fault does; `None` = each action in turn.
    pub move_action: Option<nemesis::faults::MoveAction>,
    /// The phase `abort-move` abandons in; `None` = random.
    pub abort_phase: Option<analysis::history::JobPhase>,
    /// The window `txn-move` aims at; `None` = one drawn per turn.
    pub txn_move_aim: Option<nemesis::faults::TxnMoveAim>,
    pub nemesis_interval: Duration,
    pub time_limit: Duration,
    pub subnet: Option<Cidr>,
    /// Flags appended to every server's command line.
    pub server_args: Vec<String>,
    /// The store under test (`--db`): node command line, client, applicable checkers.
    pub db: std::sync::Arc<dyn crate::db::Db>,
    /// Options the target overrode, said before the run (and in `test.json` warnings).
    pub notes: Vec<String>,
}

impl Plan {
    pub fn from_spec(args: &TestSpec) -> Result<Plan, BadArgs> {
        let bad = |s: String| BadArgs(s);
        let mut notes = Vec::new();
        let args = resolve_hosts(args, &mut notes)?;
        let nemesis =
            FaultKind::parse_list(&args.nemesis).map_err(|e| bad(format!("--nemesis: {e}")))?;
        let partition_modes = partition_modes(&args, &nemesis)?;
        check_numeric_ranges(&args)?;
        let subnet = match &args.subnet {
            Some(s) => Some(subnet::parse_subnet(s).map_err(|e| bad(format!("--subnet: {e:#}")))?),
            None => None,
        };
        let db = args.db.build(args.groups);
        let caps = db.capabilities();
        let (args, client) = fit_to_target(args, db.as_ref(), &caps, &mut notes)?;
        let args = &args;
        check_target_accepts(args, client, db.as_ref(), &caps, &nemesis)?;
        let seed = args.seed.unwrap_or_else(rand::random);
        let mut workload = workload_config(args, seed).map_err(|e| bad(format!("{e:#}")))?;
        if !caps.has(Capability::Client(client, workloads::ClientCapability::Cas)) {
            // A workload never generates an op its target cannot do: reads and writes only.
            workload.cas_fraction = 0.0;
        }
        let test_name = args.name();
        super::store::check_name(&test_name).map_err(|e| bad(format!("--test-name: {e:#}")))?;
        Ok(Plan {
            notes,
            spec: args.clone(),
            test_name,
            seed,
            workload,
            nemesis,
            partition_modes,
            move_phase: nemesis::faults::parse_move_phase(&args.move_phase).map_err(bad)?,
            move_action: nemesis::faults::parse_move_action(&args.move_action).map_err(bad)?,
            abort_phase: nemesis::faults::parse_abort_phase(&args.abort_phase).map_err(bad)?,
            txn_move_aim: nemesis::faults::parse_txn_move_aim(&args.txn_move_aim).map_err(bad)?,
            nemesis_interval: Duration::from_secs_f64(args.nemesis_interval),
            time_limit: Duration::from_secs(args.time_limit),
            subnet,
            server_args: server_args(args, db.as_ref(), client),
            db,
        })
    }

    /// What the run should be told before it starts (it runs anyway).
    pub fn warnings(&self) -> Vec<String> {
        let shortfall = nemesis::schedule::schedule_shortfall(
            &self.nemesis,
            self.nemesis_interval,
            self.time_limit,
        );
        self.notes.iter().cloned().chain(shortfall).collect()
    }

    /// The protocol of the data operations (`--client`, resolved against the target).
    pub fn protocol(&self) -> workloads::Protocol {
        self.spec.client.unwrap_or_default()
    }

    /// The client options of the run: deadlines, read path, protocol and set read.
    pub fn client_options(&self) -> workloads::ClientOptions {
        workloads::ClientOptions {
            read_path: self.spec.read_path,
            protocol: self.protocol(),
            set_read: self.spec.set_read,
            dynamo_tables: self.spec.tables,
            ..self.workload.client_options()
        }
    }

    /// The model the isolation checker holds the run's transactions to: `--consistency-model`
    /// or strict-serializable for a transaction workload, `None` for the others.
    pub fn consistency_model(&self) -> Option<analysis::checkers::isolation::ConsistencyModel> {
        if !self.workload.workload.spec().transactional() {
            return None;
        }
        Some(
            self.spec
                .consistency_model
                .as_deref()
                .and_then(|m| m.parse().ok())
                .unwrap_or_default(),
        )
    }

    /// The operations the register part of the workload generates.
    pub fn register_ops(&self) -> Vec<&'static str> {
        let mut ops = vec![analysis::ops::READ, analysis::ops::WRITE];
        if self.workload.cas_fraction > 0.0 {
            ops.push(analysis::ops::CAS);
        }
        ops
    }

    /// The options as recorded in `test.json` (its `"test"` object).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(super::record::TestRecord::of(self)).unwrap_or_default()
    }
}

/// `--partition-modes` (a list, `auto`: every shape that fits the cluster), refused when
/// empty or when `--nemesis partition` has no shape that fits.
fn partition_modes(args: &TestSpec, nemesis: &[FaultKind]) -> Result<Vec<PartitionMode>, BadArgs> {
    let bad = |s: String| BadArgs(s);
    let mut partition_modes = Vec::new();
    let mut auto = false;
    for m in args
        .partition_modes
        .split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        if m == "auto" {
            auto = true;
            partition_modes.extend(PartitionMode::all_for(usize::from(args.nodes)));
            continue;
        }
        partition_modes.push(PartitionMode::parse(m).ok_or_else(|| {
            bad(format!("--partition-modes: unknown mode {m:?} (auto, one, majority, bridge, ring, leader, majorities-ring)"))
        })?);
    }
    if partition_modes.is_empty() && !auto {
        return Err(bad("--partition-modes needs at least one mode".into()));
    }
    // `auto` on a cluster too small for any shape (one node) is fine unless partitions
    // were asked for.
    if partition_modes.is_empty() && nemesis.contains(&FaultKind::PARTITION) {
        return Err(bad(format!(
            "--nemesis partition: no partition shape fits {} node(s)",
            args.nodes
        )));
    }
    Ok(partition_modes)
}

/// The workload's client capabilities (cas, transactions, sorted sets) against what the
/// target offers through `client`; the error names the clients that would do.
fn check_workload_needs(
    args: &TestSpec,
    client: workloads::Protocol,
    db: &dyn crate::db::Db,
    caps: &crate::db::capability::Capabilities,
) -> Result<(), BadArgs> {
    let bad = |s: String| BadArgs(s);
    let needs = WorkloadKind::from_name(&args.workload).map_or(&[][..], |w| w.spec().needs);
    if let Some(missing) = needs
        .iter()
        .find(|c| !caps.has(Capability::Client(client, **c)))
    {
        let over: Vec<&str> = caps
            .protocols_with(db.protocols(), needs)
            .iter()
            .map(|p| p.name())
            .collect();
        return Err(bad(format!(
            "--workload {} runs {}, which --db {} runs only with --client {}",
            args.workload,
            missing.what(),
            args.db.name(),
            over.join("|")
        )));
    }
    Ok(())
}

/// The numeric options' ranges: `--nemesis-interval`, `--loss-probability`, `--time-limit`,
/// `--groups`.
fn check_numeric_ranges(args: &TestSpec) -> Result<(), BadArgs> {
    let bad = |s: String| BadArgs(s);
    if !(args.nemesis_interval.is_finite()
        && args.nemesis_interval >= 0.5
        && args.nemesis_interval <= 3600.0)
    {
        return Err(bad(format!(
            "--nemesis-interval {} must be between 0.5 and 3600 seconds",
            args.nemesis_interval
        )));
    }
    if !(0.0..=1.0).contains(&args.loss_probability) {
        return Err(bad(format!(
            "--loss-probability {} must be between 0 and 1",
            args.loss_probability
        )));
    }
    if args.time_limit == 0 || args.time_limit > 24 * 3600 {
        return Err(bad(format!(
            "--time-limit {} must be between 1 and 86400 seconds",
            args.time_limit
        )));
    }
    if args.groups == 0 || args.groups > 64 {
        return Err(bad(format!(
            "--groups {} must be between 1 and 64",
            args.groups
        )));
    }
    Ok(())
}

/// The client-side options against the client the run speaks and its target's
/// capabilities: what each data API runs, `--tables`, `--set-read`, `--read-path`.
fn check_client_choices(
    args: &TestSpec,
    client: workloads::Protocol,
    caps: &crate::db::capability::Capabilities,
) -> Result<(), BadArgs> {
    let bad = |s: String| BadArgs(s);
    if client == workloads::Protocol::Redis && args.read_path == workloads::ReadPath::Leader {
        return Err(bad(
            "--read-path leader needs --client grpc: a Redis client reads through its own node"
                .into(),
        ));
    }
    if let Some((runs, what)) =
        data_api_workloads(client).filter(|(runs, _)| !runs.contains(&args.workload.as_str()))
    {
        return Err(bad(format!(
            "--client {} runs --workload {} only ({what}), not {}",
            client.name(),
            runs.join(" or "),
            args.workload
        )));
    }
    if args.tables != 1 && (client != workloads::Protocol::Dynamodb || args.workload != "append") {
        return Err(bad(
            "--tables needs --client dynamodb --workload append".into()
        ));
    }
    let max_tables = workloads::client::dynamodb::tables::MAX_APPEND_TABLES;
    if !(1..=max_tables).contains(&args.tables) {
        return Err(bad(format!(
            "--tables must be between 1 and {max_tables}, got {}",
            args.tables
        )));
    }
    if client != workloads::Protocol::Redis && args.set_read != workloads::SetRead::Scan {
        return Err(bad("--set-read mget needs --client redis".into()));
    }
    if args.read_path == workloads::ReadPath::Leader && !caps.has(Capability::LeaderReadPath) {
        return Err(bad(format!(
            "--read-path leader has no meaning for --db {}: its reads are served as it decides",
            args.db.name()
        )));
    }
    Ok(())
}

/// `--cluster ssh` reads its hosts (`--hosts`, `--hosts-file`) into the spec; any other
/// cluster refuses them.
fn resolve_hosts(args: &TestSpec, notes: &mut Vec<String>) -> Result<TestSpec, BadArgs> {
    match args.cluster {
        crate::db::ClusterKind::Ssh => {
            with_ssh_hosts(args, notes).map_err(|e| BadArgs(format!("{e:#}")))
        }
        _ if args.ssh.names_hosts() => Err(BadArgs(format!(
            "--hosts and --hosts-file need --cluster ssh (this run is --cluster {})",
            args.cluster.name()
        ))),
        _ => Ok(args.clone()),
    }
}

/// The spec as the target runs it: its protocol chosen, an in-process target's cluster,
/// a fixed node count (said in `notes` when it overrides `--nodes`).
fn fit_to_target(
    mut args: TestSpec,
    db: &dyn crate::db::Db,
    caps: &crate::db::Capabilities,
    notes: &mut Vec<String>,
) -> Result<(TestSpec, workloads::Protocol), BadArgs> {
    let unsupported = |e: crate::db::Unsupported| BadArgs(e.to_string());
    let client = crate::db::protocol(db, args.client).map_err(unsupported)?;
    if caps.has(Capability::InProcess) {
        in_process_options(&args).map_err(unsupported)?;
        args.cluster = crate::db::ClusterKind::InProcess;
    }
    args.client = Some(client);
    let requested_nodes = args.nodes;
    if let Some(n) = db.nodes() {
        args.nodes = n;
    }
    if requested_nodes != args.nodes {
        notes.push(format!(
            "--db {} runs {} node(s); --nodes {requested_nodes} is ignored",
            args.db.name(),
            args.nodes
        ));
    }
    Ok((args, client))
}

/// Refuses, before anything starts, what the target cannot do: a client option, workload,
/// fault or seeded bug it lacks, or a server binary a Docker node cannot run.
fn check_target_accepts(
    args: &TestSpec,
    client: workloads::Protocol,
    db: &dyn crate::db::Db,
    caps: &crate::db::Capabilities,
    nemesis: &[FaultKind],
) -> Result<(), BadArgs> {
    let unsupported = |e: crate::db::Unsupported| BadArgs(e.to_string());
    check_client_choices(args, client, caps)?;
    crate::db::validate(
        db,
        args.cluster,
        &args.workload,
        nemesis,
        args.bug.as_deref(),
    )
    .map_err(unsupported)?;
    let static_in_docker =
        caps.has(Capability::StaticBinary) && args.cluster == crate::db::ClusterKind::Docker;
    if let Some(p) = args.db_binary.as_ref().filter(|_| static_in_docker) {
        crate::image::check_static_binary(p).map_err(|e| BadArgs(format!("--db-binary: {e:#}")))?;
    }
    check_workload_needs(args, client, db, caps)
}

/// Every server's flags: the target's own (auto-split, seeded bug, data placement), then
/// `--server-arg`s.
fn server_args(
    args: &TestSpec,
    db: &dyn crate::db::Db,
    client: workloads::Protocol,
) -> Vec<String> {
    let mut server_args = db.server_args(!args.no_auto_split, args.bug.as_deref());
    server_args.extend(db.placement_args(&db.store_keys(&workloads::ClientOptions {
        protocol: client,
        dynamo_tables: args.tables,
        ..Default::default()
    })));
    server_args.extend(args.server_args.iter().cloned());
    server_args
}

//! `faultline test`: the options of a test run, turned into a [`TestSpec`]. The run itself
//! is [`crate::runner::run`].

use crate::exit;
use crate::runner::{self, RunError, TestSpec};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

const TEST_LONG_ABOUT: &str = "\
Runs one test: builds the refkv node image (static binary, FROM scratch, never pulled), starts \
a cluster in Docker (one sandbox + one server container per node on a private bridge network), \
drives a workload from concurrent client processes while the nemesis injects faults, heals, \
waits for recovery, reads every key back through every node, tears the cluster down and checks \
the history.

Everything the run produced is in store/<test-name>/<timestamp>/ (linked as store/latest): \
history.jsonl, test.json, results.json, faultline.log and nodes/*.log.

A server process that exits while no kill fault is aimed at it is a finding: the run logs it at \
once and goes on, the history records a node-exit event (exit status, log tail, panic line), and \
the `crashes` checker is invalid. The node stays down unless the nemesis restarts it; \
--restart-crashed starts it again at once.

Exit code: 0 valid, 1 invalid, 2 unknown (e.g. interrupted), 254 bad arguments, 255 internal \
error. Ctrl-C heals, tears down and still writes a verdict.

With --cluster ssh the nodes run on your hosts instead, one per host of --hosts, driven over \
SSH (docs/ssh.md).

Example:
  faultline test --nemesis partition                  # 60 s hotspot workload under partitions
  faultline test --cluster ssh --hosts 10.0.1.11,10.0.1.12,10.0.1.13 --ssh-user faultline --sudo
  faultline test --workload register --nemesis kill,pause --time-limit 30 --concurrency 2n";

/// Options of `faultline test`, in the spirit of Jepsen's test CLI.
#[derive(Args, Debug, Clone)]
#[command(long_about = TEST_LONG_ABOUT)]
pub struct TestArgs {
    /// Number of server nodes in the cluster (with `--cluster ssh`: one per host, whatever
    /// this says).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=9), help_heading = "Cluster")]
    pub nodes: u8,

    /// The store under test: `refkv` (built from this workspace), `etcd` (Debian's
    /// etcd-server on the PATH, or --db-binary), `elastickv` (--image or --db-binary) or
    /// `redis` (Debian's redis-server on the PATH, or --db-binary; always one node).
    #[arg(long, value_enum, default_value_t = crate::db::DbKind::Refkv, help_heading = "Cluster")]
    pub db: crate::db::DbKind,

    /// How nodes run: `docker` (containers), `netns` (plain processes, each in its own
    /// network namespace; needs root, no Docker), `ssh` (one node per host of --hosts,
    /// driven over SSH; see docs/ssh.md) or `external` (a cluster someone else runs, at
    /// --endpoints; only the split nemesis).
    #[arg(long, value_enum, default_value_t = crate::db::ClusterKind::Docker, help_heading = "Cluster")]
    pub cluster: crate::db::ClusterKind,

    /// With `--cluster external`: the nodes' client addresses, `host:port,...` (named n1, n2, ...).
    #[arg(long, value_name = "HOST:PORT,...", help_heading = "Cluster")]
    pub endpoints: Option<String>,

    /// Raft groups each refkv node hosts (passed as `--groups`).
    #[arg(long, default_value_t = 3, help_heading = "Cluster")]
    pub groups: u32,

    /// Run refkv with a seeded bug (see docs/refkv.md), e.g. `no-fence`.
    #[arg(long, value_name = "NAME", help_heading = "Cluster")]
    pub bug: Option<String>,

    /// Use this static server binary instead of building refkv from the workspace.
    #[arg(long, value_name = "PATH", help_heading = "Cluster")]
    pub db_binary: Option<PathBuf>,

    /// Use this existing local image (must hold /refkv and /pause) instead of building one.
    #[arg(
        long,
        value_name = "TAG",
        conflicts_with = "db_binary",
        help_heading = "Cluster"
    )]
    pub image: Option<String>,

    /// Run refkv without its automatic splitter (`--auto-split` is passed by default).
    #[arg(long, help_heading = "Cluster")]
    pub no_auto_split: bool,

    /// Extra flag passed to every server, verbatim; repeat for several (e.g.
    /// `--server-arg=--copy-bytes-per-sec=1000000`).
    #[arg(
        long = "server-arg",
        value_name = "ARG",
        allow_hyphen_values = true,
        help_heading = "Cluster"
    )]
    pub server_args: Vec<String>,

    /// Subnet of the test network (default: a free 10.77.x.0/24).
    #[arg(long, value_name = "CIDR", help_heading = "Cluster")]
    pub subnet: Option<String>,

    /// Start a server that exited on its own again at once. Without it a crashed node stays
    /// down unless the nemesis restarts it. Either way the exit is recorded (`node-exit`)
    /// and makes the `crashes` checker invalid.
    #[arg(long, help_heading = "Cluster")]
    pub restart_crashed: bool,

    /// Keep the cluster running after the test: no later run's sweep removes it; remove it
    /// with `faultline cleanup RUN` (or a bare `faultline cleanup`).
    #[arg(long, help_heading = "Cluster")]
    pub leave_running: bool,

    /// Workload: `hotspot` (register ops on hot keys + unique inserts into a hot range),
    /// `register` (read/write/cas on a few keys), `set` (unique inserts + range reads),
    /// `read-heavy` (register ops, 90% reads), `append` (Elle's list-append transactions),
    /// `rw-register` (Elle's rw-register transactions; both need a client that runs
    /// transactions: --db refkv, etcd or redis, or elastickv with --client redis or
    /// dynamodb), `zset` (Redis sorted sets: --db redis, or elastickv with --client redis),
    /// `objects` (S3 objects of 64 B to 6 MiB, some multipart, each read verified whole:
    /// elastickv with --client s3; docs/s3.md), `queue` (an SQS FIFO queue's sends, receives
    /// and deletes, then a drain: elastickv with --client sqs; docs/sqs.md), or another
    /// workload of the table in `workloads/src/generators/mod.rs` (an unknown name is
    /// refused with the list).
    #[arg(long, default_value = "hotspot", help_heading = "Workload")]
    pub workload: String,

    /// How keys are chosen: `zipf:S`, `celebrity:P`, `hot-range` or `uniform`
    /// [default: hot-range for hotspot, uniform otherwise].
    #[arg(long, value_name = "DIST", help_heading = "Workload")]
    pub key_dist: Option<String>,

    /// Keys in play: the register keyspace, or the transaction workloads' pool of active keys
    /// (for queue: its message groups) [default: 12 for append and rw-register, 8 for register
    /// and queue, 32 for read-heavy, 64 for hotspot].
    #[arg(long, value_name = "N", help_heading = "Workload")]
    pub key_count: Option<u64>,

    /// Micro-ops per transaction (append, rw-register): `MIN..MAX` or `N` [default: 1..4].
    #[arg(long, value_name = "MIN..MAX", help_heading = "Workload")]
    pub txn_length: Option<String>,

    /// Writes (appends) a transaction key takes before a fresh key replaces it, as Elle does
    /// so reads stay short [default: 128].
    #[arg(long, value_name = "N", help_heading = "Workload")]
    pub max_writes_per_key: Option<u64>,

    /// Inserts a set takes before a fresh set (a fresh sub-range of the same prefix)
    /// replaces it, so set reads stay short (hotspot, set); 0 = one set for the whole run
    /// [default: 2000].
    #[arg(long, value_name = "N", help_heading = "Workload")]
    pub set_size: Option<u64>,

    /// The consistency model the isolation checker holds transactions to (append,
    /// rw-register): one of Elle's names, e.g. `serializable`, `snapshot-isolation`
    /// [default: strict-serializable].
    #[arg(long, value_name = "MODEL", help_heading = "Workload")]
    pub consistency_model: Option<String>,

    /// Among register operations, the fraction that are reads; writes and compare-and-sets
    /// share the rest in the workload's own ratio [default: 0.5 for hotspot and register
    /// (25 % writes, 25 % cas), 0.9 for read-heavy].
    #[arg(long, value_name = "F", help_heading = "Workload")]
    pub read_fraction: Option<f64>,

    /// Client processes: a number, or `Nn` for N per node [default: 5n].
    #[arg(long, value_name = "N|Nn", help_heading = "Workload")]
    pub concurrency: Option<String>,

    /// Target total request rate, operations per second; 0 = as fast as possible
    /// [default: 400 for hotspot, 200 for register and set].
    #[arg(long, value_name = "OPS", help_heading = "Workload")]
    pub rate: Option<f64>,

    /// Where single-key reads go: `node` (through the process's own node, as the store's
    /// clients read) or `leader` (to the leader of the key's group, found through RaftAdmin
    /// Status). elastickv and refkv honour it; etcd has no such choice (see docs/etcd.md).
    #[arg(
        long,
        value_name = "node|leader",
        default_value = "node",
        help_heading = "Workload"
    )]
    pub read_path: workloads::ReadPath,

    /// The protocol of the data operations: `grpc` (RawKV), `redis` (GET/SET, cas as a Lua
    /// script, SCAN), `dynamodb` (the AWS SDK against the node's DynamoDB-compatible API on
    /// port 8000: --workload append, or register with --value-type; docs/dynamodb.md), `s3`
    /// (the AWS SDK against the node's S3-compatible API on port 9000: --workload register,
    /// registers as objects, or objects; docs/s3.md) or `sqs` (the AWS SDK against the node's
    /// SQS-compatible API on port 9324: --workload queue, one FIFO queue per run;
    /// docs/sqs.md). elastickv speaks all five, refkv grpc and dynamodb; the split nemesis
    /// and the catalog watcher use gRPC either way [default: grpc; redis for --db redis].
    #[arg(
        long,
        value_name = "grpc|redis|dynamodb|s3|sqs",
        help_heading = "Workload"
    )]
    pub client: Option<workloads::Protocol>,

    /// `--workload register --client dynamodb`: the DynamoDB attribute type of the values
    /// (`PutItem` of a value derived from the write's number, `GetItem` with
    /// `ConsistentRead`, one table per type), or `all`: the ten types at once, key i of type
    /// i mod 10 [default: all, with 20 keys unless --key-count says otherwise;
    /// docs/dynamodb.md].
    #[arg(
        long,
        value_name = "S|N|B|BOOL|NULL|SS|NS|BS|L|M|all",
        help_heading = "Workload"
    )]
    pub value_type: Option<String>,

    /// How the Redis client reads a set: `scan` (SCAN MATCH, paging to cursor 0) or `mget`
    /// (MGET of every key the run attempted to write, in batches).
    #[arg(
        long,
        value_name = "scan|mget",
        default_value = "scan",
        help_heading = "Workload"
    )]
    pub set_read: workloads::SetRead,

    /// With --client dynamodb --workload append: spread the keys over N tables
    /// (`jepsen_append_t1` … `_tN`; key k in table (k's number mod N) + 1, as elastickv's
    /// dynamodb_multi_table_workload.clj), so a transaction spans tables; 1 = the one table
    /// `jepsen_append`. On elastickv with --groups > 1 the tables start spread over the
    /// groups (--shardRanges; a --server-arg overrides it). At most 8 (docs/dynamodb.md).
    #[arg(long, value_name = "N", default_value_t = 1, help_heading = "Workload")]
    pub tables: u32,

    /// Seconds of workload (the main phase).
    #[arg(long, default_value_t = 60, help_heading = "Workload")]
    pub time_limit: u64,

    /// Random seed for the workload and the nemesis (default: chosen and recorded).
    #[arg(long, help_heading = "Workload")]
    pub seed: Option<u64>,

    /// Faults, comma-separated: partition, kill, pause, loss, split, move, abort-move, txn-move,
    /// all, none.
    #[arg(long, default_value = "none", help_heading = "Nemesis")]
    pub nemesis: String,

    /// Seconds between fault changes: quiet for one interval, faulty for one, heal, repeat.
    #[arg(long, default_value_t = 10.0, help_heading = "Nemesis")]
    pub nemesis_interval: f64,

    /// Partition shapes to choose from, comma-separated: one, majority, bridge, ring, leader,
    /// majorities-ring (5+ nodes); `auto` = every shape that fits the cluster size (on 3
    /// nodes the first five).
    #[arg(long, default_value = "auto", help_heading = "Nemesis")]
    pub partition_modes: String,

    /// The split-job phase the `move` fault aims at: BACKFILL, FENCE, DELTA_COPY, CUTOVER,
    /// CLEANUP, or random (one per turn).
    #[arg(long, default_value = "random", help_heading = "Nemesis")]
    pub move_phase: String,

    /// What the `move` fault does when the job is in the phase: pause-source-leader,
    /// partition-source-leader, kill-migrator, kill-target-leader, or rotate (each in turn).
    #[arg(long, default_value = "rotate", help_heading = "Nemesis")]
    pub move_action: String,

    /// Which window the `txn-move` fault aims at: secondary (move a secondary write key,
    /// release the transaction past the source's fence), primary-cutover (move the primary,
    /// release it once the job is in CUTOVER), primary-delta (move the primary, release it once
    /// the job is in DELTA_COPY), primary-backfill (move the primary, release it while the job
    /// is in BACKFILL), coordinator-kill (hold a transaction after its primary's commit and
    /// kill the node coordinating it; only when named), or random (one of the four moving
    /// aims per turn, from the seed).
    #[arg(long, default_value = "random", help_heading = "Nemesis")]
    pub txn_move_aim: String,

    /// The phase the `abort-move` fault abandons a job in: BACKFILL, FENCE, DELTA_COPY, or
    /// random (one per turn).
    #[arg(long, default_value = "random", help_heading = "Nemesis")]
    pub abort_phase: String,

    /// Probability a packet between nodes is dropped while the `loss` fault is on.
    #[arg(long, default_value_t = 0.2, help_heading = "Nemesis")]
    pub loss_probability: f64,

    /// Seconds to wait after healing for the cluster to become healthy again.
    #[arg(long, default_value_t = 60, help_heading = "Run")]
    pub recovery_timeout: u64,

    /// Directory of the store.
    #[arg(long, default_value = "store", help_heading = "Run")]
    pub store: PathBuf,

    /// Name of the test (store/<name>/...); default: <db>-<workload>-<nemesis> (nemeses joined with +), e.g. refkv-hotspot-partition.
    #[arg(long, help_heading = "Run")]
    pub test_name: Option<String>,

    /// Do not draw the progress bar (it is also off when stderr is not a terminal).
    #[arg(long, help_heading = "Run")]
    pub no_progress: bool,

    #[command(flatten)]
    pub ssh: ssh_args::SshArgs,
}

impl TestArgs {
    /// The run these flags ask for.
    pub fn into_spec(self) -> TestSpec {
        TestSpec {
            nodes: self.nodes,
            db: self.db,
            cluster: self.cluster,
            endpoints: self.endpoints,
            groups: self.groups,
            bug: self.bug,
            db_binary: self.db_binary,
            image: self.image,
            no_auto_split: self.no_auto_split,
            server_args: self.server_args,
            subnet: self.subnet,
            restart_crashed: self.restart_crashed,
            leave_running: self.leave_running,
            workload: self.workload,
            key_dist: self.key_dist,
            key_count: self.key_count,
            txn_length: self.txn_length,
            max_writes_per_key: self.max_writes_per_key,
            set_size: self.set_size,
            consistency_model: self.consistency_model,
            read_fraction: self.read_fraction,
            concurrency: self.concurrency,
            rate: self.rate,
            read_path: self.read_path,
            client: self.client,
            value_type: self.value_type,
            set_read: self.set_read,
            tables: self.tables,
            time_limit: self.time_limit,
            seed: self.seed,
            nemesis: self.nemesis,
            nemesis_interval: self.nemesis_interval,
            partition_modes: self.partition_modes,
            move_phase: self.move_phase,
            move_action: self.move_action,
            abort_phase: self.abort_phase,
            txn_move_aim: self.txn_move_aim,
            loss_probability: self.loss_probability,
            recovery_timeout: self.recovery_timeout,
            store: self.store,
            test_name: self.test_name,
            no_progress: self.no_progress,
            generator: None,
            ssh: self.ssh.into_options(),
        }
    }
}

/// `faultline test`'s defaults: what its flags mean when none is given.
impl Default for TestSpec {
    fn default() -> TestSpec {
        #[derive(clap::Parser)]
        struct Defaults {
            #[command(flatten)]
            args: TestArgs,
        }
        <Defaults as clap::Parser>::try_parse_from(["test"])
            .map(|d| d.args.into_spec())
            .expect("every flag of `faultline test` has a default")
    }
}

/// Entry point of `faultline test`: exit code of the verdict, 254 for bad arguments, 255
/// for an internal error.
pub fn run(args: TestArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("faultline test: cannot start the async runtime: {e}");
            return ExitCode::from(exit::INTERNAL);
        }
    };
    let outcome = rt.block_on(runner::run(args.into_spec()));
    // Do not wait for stray blocking tasks (e.g. a hung docker call) at exit.
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    match outcome {
        Ok(validity) => exit::of(validity),
        Err(RunError::BadArgs(e)) => {
            eprintln!("faultline test: {e}");
            ExitCode::from(exit::BAD_ARGS)
        }
        Err(RunError::Internal(e)) => {
            eprintln!("faultline test: error: {e:#}");
            ExitCode::from(exit::INTERNAL)
        }
    }
}

pub(crate) mod ssh_args;

#[cfg(test)]
mod tests;

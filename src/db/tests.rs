//! Node command lines and option validation.

use super::elastickv::Elastickv;
use super::*;
use std::net::Ipv4Addr;
use workloads::Certainty;

fn nodes(n: u64) -> Vec<NodeInfo> {
    (1..=n)
        .map(|id| {
            let ip = Ipv4Addr::new(10, 77, 5, 10 + id as u8);
            NodeInfo {
                name: format!("n{id}"),
                id,
                ip,
                addr: format!("{ip}:50051"),
            }
        })
        .collect()
}

#[test]
fn refkv_command_in_the_image_and_on_the_host() {
    let all = nodes(3);
    let extra = vec!["--groups".to_string(), "3".to_string()];
    let db = DbKind::Refkv.build(3);
    let cmd = db.node_command(&all[1], &all, &NodeLayout::image("refkv"), &extra);
    let peers = "1=10.77.5.11:50051,2=10.77.5.12:50051,3=10.77.5.13:50051";
    let expected = [
        "/refkv",
        "serve",
        "--id",
        "2",
        "--listen",
        "10.77.5.12:50051",
        "--peers",
        peers,
        "--data-dir",
        "/data",
        "--dynamo-listen",
        "10.77.5.12:8000",
        "--groups",
        "3",
    ];
    assert_eq!(cmd, expected);
    let host = NodeLayout {
        binary: "/opt/refkv".into(),
        data_dir: "/store/run/data/n2".into(),
    };
    let cmd = db.node_command(&all[1], &all, &host, &[]);
    assert_eq!(cmd[0], "/opt/refkv");
    assert!(cmd
        .windows(2)
        .any(|w| w == ["--data-dir", "/store/run/data/n2"]));
}

#[test]
fn etcd_members_bootstrap_statically_with_ip_peer_urls() {
    let all = nodes(3);
    let cmd = DbKind::Etcd
        .build(3)
        .node_command(&all[0], &all, &NodeLayout::image("etcd"), &[]);
    assert_eq!(cmd[0], "/etcd");
    for expected in [
        "--name=n1",
        "--data-dir=/data/etcd",
        "--listen-client-urls=http://10.77.5.11:50051",
        "--advertise-client-urls=http://10.77.5.11:50051",
        "--listen-peer-urls=http://10.77.5.11:2380",
        "--initial-advertise-peer-urls=http://10.77.5.11:2380",
        "--initial-cluster=n1=http://10.77.5.11:2380,n2=http://10.77.5.12:2380,n3=http://10.77.5.13:2380",
        "--initial-cluster-state=new",
    ] {
        assert!(cmd.iter().any(|a| a == expected), "{expected} missing from {cmd:?}");
    }
}

#[test]
fn elastickv_single_group_uses_bootstrap_members() {
    let all = nodes(3);
    let cmd =
        Elastickv { groups: 1 }.node_command(&all[2], &all, &NodeLayout::image("elastickv"), &[]);
    assert_eq!(
        cmd,
        vec![
            "/elastickv",
            "--address=10.77.5.13:50051",
            "--redisAddress=10.77.5.13:6379",
            "--dynamoAddress=10.77.5.13:8000",
            "--s3Address=10.77.5.13:9000",
            "--sqsAddress=10.77.5.13:9324",
            "--metricsAddress=",
            "--pprofAddress=",
            "--raftId=n3",
            "--raftDataDir=/data",
            "--raftBootstrapMembers=n1=10.77.5.11:50051,n2=10.77.5.12:50051,n3=10.77.5.13:50051",
            "--raftRedisMap=10.77.5.11:50051=10.77.5.11:6379,10.77.5.12:50051=10.77.5.12:6379,10.77.5.13:50051=10.77.5.13:6379",
            "--raftDynamoMap=10.77.5.11:50051=10.77.5.11:8000,10.77.5.12:50051=10.77.5.12:8000,10.77.5.13:50051=10.77.5.13:8000",
            "--raftS3Map=10.77.5.11:50051=10.77.5.11:9000,10.77.5.12:50051=10.77.5.12:9000,10.77.5.13:50051=10.77.5.13:9000",
            "--raftSqsMap=10.77.5.11:50051=10.77.5.11:9324,10.77.5.12:50051=10.77.5.12:9324,10.77.5.13:50051=10.77.5.13:9324",
        ]
    );
}

#[test]
fn elastickv_multi_group_uses_group_peers_and_shard_ranges() {
    let all = nodes(3);
    let cmd =
        Elastickv { groups: 3 }.node_command(&all[0], &all, &NodeLayout::image("elastickv"), &[]);
    let get = |flag: &str| {
        cmd.iter()
            .find_map(|a| a.strip_prefix(&format!("--{flag}=")))
            .map(str::to_string)
    };
    assert_eq!(
        get("raftGroups").as_deref(),
        Some("1=10.77.5.11:50051,2=10.77.5.11:50052,3=10.77.5.11:50053")
    );
    let peers = get("raftGroupPeers").unwrap();
    let groups: Vec<&str> = peers.split(';').collect();
    assert_eq!(groups.len(), 3);
    assert_eq!(
        groups[1],
        "2=n1@10.77.5.11:50052,n2@10.77.5.12:50052,n3@10.77.5.13:50052"
    );
    assert_eq!(get("shardRanges").as_deref(), Some(":i=1,i:r=2,r:=3"));
    assert!(
        get("raftBootstrapMembers").is_none(),
        "the two bootstrap forms are mutually exclusive"
    );
    assert_eq!(
        get("raftRedisMap").unwrap().split(',').count(),
        9,
        "every group address of every node"
    );
    assert_eq!(
        get("raftDynamoMap").unwrap().split(',').nth(1),
        Some("10.77.5.11:50052=10.77.5.11:8000"),
        "a follower forwards DynamoDB requests of every group to the leader's node"
    );
}

#[test]
fn shard_ranges_tile_the_keyspace() {
    assert_eq!(Elastickv::shard_ranges(1), ":=1");
    assert_eq!(Elastickv::shard_ranges(2), ":n=1,n:=2");
}

#[test]
fn a_multi_table_dynamodb_run_spreads_its_tables_over_elastickvs_groups() {
    use analysis::history::store_keys::StoreKeys;
    let tables = |n: u32| StoreKeys::DynamoTableRoute {
        tables: workloads::client::dynamodb::tables::append_table_names(n),
    };
    let k = |i: u32| {
        format!(
            "!ddb|route|table|amVwc2VuX2FwcGVuZF90{}",
            ["MQ", "Mg", "Mw", "NA"][i as usize - 1]
        )
    };
    assert_eq!(
        Elastickv::table_shard_ranges(3, &tables(4)).as_deref(),
        Some(
            format!(
                ":{}=1,{}:{}=1,{}:{}=2,{}:{}=3,{}:i=1,i:r=2,r:=3",
                k(1),
                k(1),
                k(2),
                k(2),
                k(3),
                k(3),
                k(4),
                k(4)
            )
            .as_str()
        )
    );
    assert_eq!(
        Elastickv::table_shard_ranges(1, &tables(4)),
        None,
        "one group"
    );
    assert_eq!(
        Elastickv::table_shard_ranges(3, &tables(1)),
        None,
        "one table"
    );
    assert_eq!(Elastickv::table_shard_ranges(3, &StoreKeys::Identity), None);
    let db = Elastickv { groups: 3 };
    assert_eq!(db.placement_args(&tables(4)).len(), 1);
    assert!(db.placement_args(&tables(4))[0].starts_with("--shardRanges=:!ddb|route|table|"));
}

#[test]
fn validation_names_the_unsupported_option() {
    let etcd = DbKind::Etcd.build(3);
    assert!(validate(
        etcd.as_ref(),
        ClusterKind::Docker,
        "register",
        &[FaultKind::PARTITION, FaultKind::KILL, FaultKind::PAUSE],
        None
    )
    .is_ok());
    assert!(
        etcd.capabilities().has(Capability::Client(
            workloads::Protocol::Grpc,
            workloads::ClientCapability::Txn
        )),
        "etcd's transactions go over its gRPC API"
    );
    for txn in ["append", "rw-register"] {
        assert!(
            validate(
                etcd.as_ref(),
                ClusterKind::Docker,
                txn,
                &[FaultKind::PARTITION, FaultKind::KILL],
                None
            )
            .is_ok(),
            "{txn}"
        );
    }
    let e = validate(etcd.as_ref(), ClusterKind::Docker, "hotspot", &[], None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--workload hotspot") && e.contains("register, set"),
        "{e}"
    );
    let e = validate(
        etcd.as_ref(),
        ClusterKind::Docker,
        "set",
        &[FaultKind::SPLIT],
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("--nemesis split"), "{e}");
    let e = validate(
        etcd.as_ref(),
        ClusterKind::Docker,
        "set",
        &[],
        Some("no-fence"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("--bug"), "{e}");
    assert!(validate(
        DbKind::Refkv.build(3).as_ref(),
        ClusterKind::Docker,
        "hotspot",
        FaultKind::ALL,
        Some("no-fence")
    )
    .is_ok());
}

#[test]
fn external_clusters_allow_only_the_split_nemesis() {
    let refkv = DbKind::Refkv.build(3);
    assert!(validate(
        refkv.as_ref(),
        ClusterKind::External,
        "hotspot",
        &[FaultKind::SPLIT],
        None
    )
    .is_ok());
    let e = validate(
        refkv.as_ref(),
        ClusterKind::External,
        "hotspot",
        &[FaultKind::KILL],
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("--nemesis kill") && e.contains("--cluster external"),
        "{e}"
    );
    assert!(validate(
        refkv.as_ref(),
        ClusterKind::Netns,
        "hotspot",
        FaultKind::ALL,
        None
    )
    .is_ok());
}

#[tokio::test]
async fn elastickv_never_sends_a_cas() {
    let nodes = [NodeEndpoint {
        name: "n1".into(),
        addr: "127.0.0.1:1".into(),
    }];
    let connector = Elastickv { groups: 3 }.connector(workloads::ClientOptions::default(), &nodes);
    let client = connector.connect(&nodes[0]).unwrap();
    assert!(
        client.as_cas().is_none(),
        "elastickv's gRPC client has no compare-and-set"
    );
    let cas = workloads::generators::OpSpec::new(workloads::kv_ops::Cas {
        key: "k".into(),
        expected: 1,
        new: 2,
    });
    let err = cas.run(client.as_ref()).await.unwrap_err();
    assert_eq!(
        (err.tag, err.certainty),
        ("unimplemented", Certainty::Definite),
        "cas is never sent to elastickv"
    );
}

#[test]
fn every_target_is_found_by_its_name() {
    for kind in DbKind::ALL {
        assert_eq!(DbKind::from_name(kind.name()), Some(*kind));
        assert_eq!(kind.build(3).kind(), *kind, "{} builds itself", kind.name());
    }
    assert_eq!(DbKind::from_name("bank"), None);
}

#[test]
fn every_cluster_kind_is_read_back_from_its_recorded_name_and_ssh_runs_nodes() {
    for kind in [
        ClusterKind::Docker,
        ClusterKind::Netns,
        ClusterKind::External,
        ClusterKind::InProcess,
        ClusterKind::Ssh,
    ] {
        assert_eq!(
            ClusterKind::from_name(kind.name()),
            Some(kind),
            "{} as test.json records it",
            kind.name()
        );
        assert_eq!(
            serde_json::to_value(kind).unwrap(),
            kind.name(),
            "name() is the recorded name"
        );
    }
    assert_eq!(ClusterKind::from_name("vm"), None);
    assert!(
        ClusterKind::Ssh.runs_nodes(),
        "faultline starts, watches and faults the servers on ssh hosts"
    );
    assert!(
        ClusterKind::Ssh.allows(FaultKind::PARTITION) && ClusterKind::Ssh.allows(FaultKind::KILL)
    );
    assert!(!ClusterKind::External.allows(FaultKind::KILL) && !ClusterKind::InProcess.runs_nodes());
}

#[test]
fn workload_support_follows_from_what_each_target_declares() {
    let names = |kind: DbKind| -> Vec<&'static str> {
        supported_workloads(kind.build(3).as_ref())
            .into_iter()
            .map(|w| w.name())
            .collect()
    };
    // A workload that loads a hot range for the splitter needs a store that splits.
    // A transactional workload needs a client that runs transactions (refkv's RefkvTxn,
    // etcd Txn, Redis MULTI/EXEC).
    assert_eq!(
        names(DbKind::Refkv),
        [
            "hotspot",
            "register",
            "set",
            "read-heavy",
            "append",
            "rw-register"
        ]
    );
    // Sorted sets need a client with them (Redis: redis-server, elastickv's Redis adapter);
    // objects an S3 client (elastickv's S3 adapter), a queue an SQS one.
    assert_eq!(
        names(DbKind::Elastickv),
        [
            "hotspot",
            "register",
            "objects",
            "set",
            "read-heavy",
            "append",
            "rw-register",
            "zset",
            "queue"
        ]
    );
    assert_eq!(
        names(DbKind::Etcd),
        ["register", "set", "read-heavy", "append", "rw-register"],
        "etcd's client runs Txns"
    );
    assert_eq!(
        names(DbKind::Redis),
        [
            "register",
            "set",
            "read-heavy",
            "append",
            "rw-register",
            "zset"
        ]
    );
    assert_eq!(
        names(DbKind::Null),
        ["hotspot", "register", "set", "read-heavy"],
        "the harness's own target drives every key-value workload, no transactions"
    );
}

#[test]
fn the_null_target_runs_in_process_and_refuses_every_fault() {
    let null = DbKind::Null.build(3);
    assert!(null.capabilities().has(Capability::InProcess));
    assert!(validate(null.as_ref(), ClusterKind::InProcess, "register", &[], None).is_ok());
    let e = validate(
        null.as_ref(),
        ClusterKind::InProcess,
        "register",
        &[FaultKind::PAUSE],
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("--nemesis pause") && e.contains("no node to fault"),
        "{e}"
    );
    let refkv = DbKind::Refkv.build(3);
    let e = validate(
        refkv.as_ref(),
        ClusterKind::InProcess,
        "register",
        &[],
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("--cluster in-process"),
        "only an in-process target gets an in-process cluster: {e}"
    );
}

#[test]
fn each_target_declares_what_its_former_boolean_methods_answered() {
    use workloads::ClientCapability::{Cas, Txn};
    use workloads::Protocol::{Dynamodb, Grpc, Redis};
    let flags = [
        Capability::InProcess,
        Capability::StaticBinary,
        Capability::SeededBugs,
        Capability::LeaderReadPath,
        Capability::ProbesVersions,
        Capability::CatchUpBeforeFinalReads,
        Capability::LinearizableReads,
    ];
    let row = |kind: DbKind| flags.map(|f| kind.build(3).capabilities().has(f));
    assert_eq!(
        row(DbKind::Refkv),
        [false, true, true, true, false, false, true]
    );
    assert_eq!(
        row(DbKind::Etcd),
        [false, false, false, false, false, false, true]
    );
    assert_eq!(
        row(DbKind::Elastickv),
        [false, false, false, true, true, true, false]
    );
    assert_eq!(
        row(DbKind::Redis),
        [false, false, false, false, false, false, true]
    );
    assert_eq!(
        row(DbKind::Null),
        [true, false, false, false, false, false, true]
    );
    let client = |kind: DbKind| {
        let caps = kind.build(3).capabilities();
        [
            (Grpc, Cas),
            (Grpc, Txn),
            (Redis, Cas),
            (Redis, Txn),
            (Dynamodb, Cas),
            (Dynamodb, Txn),
        ]
        .map(|(p, c)| caps.has(Capability::Client(p, c)))
    };
    assert_eq!(
        client(DbKind::Refkv),
        [true, true, false, false, false, true],
        "transactions over gRPC and over its DynamoDB subset"
    );
    assert_eq!(
        client(DbKind::Etcd),
        [true, true, false, false, false, false]
    );
    assert_eq!(
        client(DbKind::Elastickv),
        [false, false, true, true, false, true],
        "cas only through the Redis adapter; transactions through Redis and DynamoDB"
    );
    assert_eq!(
        client(DbKind::Redis),
        [false, false, true, true, false, false]
    );
    assert_eq!(
        client(DbKind::Null),
        [true, false, false, false, false, false]
    );
}

#[tokio::test]
async fn each_targets_client_has_exactly_the_client_capabilities_the_target_declares() {
    use workloads::ClientCapability::{Cas, Objects, Queue, Txn, Zset};
    use workloads::ReadPath;
    let nodes = [NodeEndpoint {
        name: "n1".into(),
        addr: "127.0.0.1:1".into(),
    }];
    for kind in DbKind::ALL {
        let db = kind.build(3);
        let caps = db.capabilities();
        let read_paths: &[ReadPath] = if caps.has(Capability::LeaderReadPath) {
            &[ReadPath::Node, ReadPath::Leader]
        } else {
            &[ReadPath::Node]
        };
        for (protocol, read_path) in db
            .protocols()
            .iter()
            .flat_map(|p| read_paths.iter().map(move |r| (*p, *r)))
        {
            // The leader read path wraps the node's client; a wrapper has its capabilities.
            let options = ClientOptions {
                protocol,
                read_path,
                ..ClientOptions::default()
            };
            let client = db
                .connector(options, &nodes)
                .connect(&nodes[0])
                .expect("clients connect lazily");
            let what = format!(
                "--db {} --client {} --read-path {}",
                kind.name(),
                protocol.name(),
                read_path.name()
            );
            assert_eq!(
                client.as_cas().is_some(),
                caps.has(Capability::Client(protocol, Cas)),
                "cas: {what}"
            );
            assert_eq!(
                client.as_txn().is_some(),
                caps.has(Capability::Client(protocol, Txn)),
                "txn: {what}"
            );
            assert_eq!(
                client.as_objects().is_some(),
                caps.has(Capability::Client(protocol, Objects)),
                "objects: {what}"
            );
            assert_eq!(
                client.as_zset().is_some(),
                caps.has(Capability::Client(protocol, Zset)),
                "zset: {what}"
            );
            assert_eq!(
                client.as_queue().is_some(),
                caps.has(Capability::Client(protocol, Queue)),
                "queue: {what}"
            );
        }
    }
}

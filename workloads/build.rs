//! Compiles faultline's proto files (../proto) into tonic client and server stubs with the
//! pure-Rust protox compiler, so no system `protoc` is needed. The server stubs are used only
//! by the crate's tests (an in-process fake store).

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../proto");
    let files = ["kv.proto", "distribution.proto", "health.proto"];
    let paths: Vec<PathBuf> = files.iter().map(|f| proto_dir.join(f)).collect();
    for path in &paths {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    let descriptors = protox::compile(&paths, [&proto_dir])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    compile_etcd_protos()?;
    Ok(())
}

/// etcd's v3 API subset (`../proto/etcd`, packages `etcdserverpb` and `mvccpb`), used by the
/// etcd client in `src/etcd`.
fn compile_etcd_protos() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../proto/etcd");
    let paths: Vec<PathBuf> = ["rpc.proto", "mvcc.proto"]
        .iter()
        .map(|f| dir.join(f))
        .collect();
    for path in &paths {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    let descriptors = protox::compile(&paths, [&dir])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}

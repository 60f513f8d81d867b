//! Compiles the client-facing protos (../proto) and refkv's internal proto into tonic stubs
//! with the pure-Rust protox compiler (no system `protoc`).

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../proto");
    let files = ["kv.proto", "distribution.proto", "refkv_internal.proto"];
    let paths: Vec<PathBuf> = files.iter().map(|f| proto_dir.join(f)).collect();
    for path in &paths {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    let descriptors = protox::compile(&paths, [&proto_dir])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}

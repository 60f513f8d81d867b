//! Node images for targets built elsewhere (etcd, redis, elastickv): `/<name>` (the server binary),
//! the shared libraries `ldd` says it needs (Debian's etcd is a dynamic executable: libc and
//! the loader), and the sandbox `/pause`, on an empty base. Built locally with `docker
//! build` from a context this module assembles — nothing is pulled — and tagged
//! `faultline-<name>:<hash of its contents>`, so it is rebuilt exactly when a file changes.

use crate::docker::docker;
use crate::image::NodeImage;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::process::Command;

const DOCKERFILE: &str = "\
# faultline node image (src/db/image.rs): a server binary, its libraries and the sandbox.
FROM scratch
COPY rootfs/ /
LABEL faultline=1
WORKDIR /
ENTRYPOINT []
CMD [\"/pause\"]
";

/// The etcd binary to use: `--db-binary`, else `etcd` on the PATH.
pub fn find_etcd(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    on_path("etcd", "etcd-server")
}

/// `redis-server` on the PATH (Debian's redis-server package).
pub fn find_redis() -> Result<PathBuf> {
    on_path("redis-server", "redis-server")
}

/// `name` in a directory of the PATH; the error names the Debian `package` that has it.
fn on_path(name: &str, package: &str) -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .with_context(|| format!("no `{name}` on the PATH: install Debian's {package} (apt-get install -y {package}) or pass --db-binary"))
}

/// The absolute library paths in `ldd` output (`name => /path (addr)` and `/path (addr)`).
pub fn parse_ldd(output: &str) -> Vec<PathBuf> {
    output
        .lines()
        .filter_map(|line| {
            let target = line.split("=>").nth(1).unwrap_or(line).trim();
            let path = target.split_whitespace().next()?;
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect()
}

/// Libraries `binary` loads; empty for a static executable.
async fn needed_libraries(binary: &Path) -> Result<Vec<PathBuf>> {
    let out = Command::new("ldd").arg(binary).stdin(Stdio::null()).output().await.context("could not run ldd")?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || text.contains("not a dynamic executable") {
        return Ok(Vec::new());
    }
    Ok(parse_ldd(&text))
}

/// The files of the image: (path inside the image, source on the host).
async fn contents(name: &str, server: &Path, pause: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut files = vec![(name.to_string(), server.to_path_buf()), ("pause".to_string(), pause.to_path_buf())];
    for lib in needed_libraries(server).await? {
        let inside = lib.to_string_lossy().trim_start_matches('/').to_string();
        // Follow symlinks so the real file lands under the name the loader looks for.
        let real = std::fs::canonicalize(&lib).with_context(|| format!("resolving {}", lib.display()))?;
        files.push((inside, real));
    }
    Ok(files)
}

async fn sha256(path: &Path) -> Result<String> {
    let out = Command::new("sha256sum").arg(path).output().await.context("could not run sha256sum")?;
    let text = String::from_utf8_lossy(&out.stdout);
    match text.split_whitespace().next() {
        Some(h) if out.status.success() && h.len() == 64 => Ok(h.to_string()),
        _ => bail!("sha256sum {} failed: {}", path.display(), String::from_utf8_lossy(&out.stderr)),
    }
}

/// Makes sure the image `faultline-<name>` holding `server` as `/<name>` exists (building
/// it if not).
pub async fn ensure_image(name: &str, server: &Path, pause: &Path) -> Result<NodeImage> {
    if !server.is_file() {
        bail!("server binary {} does not exist", server.display());
    }
    let files = contents(name, server, pause).await?;
    let mut combined = String::new();
    for (inside, src) in &files {
        combined.push_str(inside);
        combined.push_str(&sha256(src).await?[..16]);
    }
    combined.push_str(DOCKERFILE);
    let hash = combined.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3));
    let tag = format!("faultline-{name}:{hash:016x}");
    let (id, built) = match docker(&["image", "inspect", "--format", "{{.Id}}", &tag]).await {
        Ok(id) => (id, false),
        Err(_) => (build(&tag, &files).await?, true),
    };
    Ok(NodeImage { tag, id, server_binary: Some(server.to_path_buf()), built })
}

async fn build(tag: &str, files: &[(String, PathBuf)]) -> Result<String> {
    use std::os::unix::fs::PermissionsExt;
    tracing::info!("building image {tag}");
    let ctx = tempfile::tempdir().context("creating a temporary build context")?;
    let rootfs = ctx.path().join("rootfs");
    for d in ["tmp", "data"] {
        std::fs::create_dir_all(rootfs.join(d))?;
    }
    for (inside, src) in files {
        let dest = rootfs.join(inside);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(src, &dest).with_context(|| format!("copying {} into the image", src.display()))?;
        std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755))?;
    }
    std::fs::write(ctx.path().join("Dockerfile"), DOCKERFILE)?;
    crate::image::docker_build(ctx.path(), tag).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_output_yields_absolute_library_paths() {
        let out = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n";
        assert_eq!(
            parse_ldd(out),
            vec![PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"), PathBuf::from("/lib64/ld-linux-x86-64.so.2")]
        );
        assert!(parse_ldd("\tnot a dynamic executable\n").is_empty());
    }
}

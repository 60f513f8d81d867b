//! The node image, built locally and never pulled.
//!
//! A node image holds two static binaries on an empty base: the server (`/refkv`) and the
//! sandbox (`/pause`, built from `docker/pause.rs`) that keeps each node's network namespace
//! alive. The image is tagged by the SHA-256 of everything that goes into it, so it is
//! rebuilt exactly when a binary changes, and also tagged `faultline-refkv:latest` for
//! `docker-compose.yml`.

use crate::docker::docker;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::process::Command;

pub const IMAGE_REPO: &str = "faultline-refkv";
const DOCKERFILE: &str = include_str!("../docker/Dockerfile");
const NSSWITCH: &str = include_str!("../docker/nsswitch.conf");
const PAUSE_SOURCE: &str = include_str!("../docker/pause.rs");
const TARGET: &str = "x86_64-unknown-linux-gnu";

/// The image a run uses.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NodeImage {
    /// `faultline-refkv:<hash>`.
    pub tag: String,
    /// Docker's image id (`sha256:...`).
    pub id: String,
    /// The server binary that went into it, when faultline built the image.
    pub server_binary: Option<PathBuf>,
    /// Whether this run had to build it (false: an identical image existed).
    pub built: bool,
}

/// The workspace this binary was built from, if its sources are still there.
pub fn workspace_root() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    root.join("refkv").join("Cargo.toml").exists().then_some(root)
}

/// Where static builds go, apart from the normal target dir so they never invalidate it.
fn static_dir(root: &Path) -> PathBuf {
    root.join("target").join("static")
}

/// Builds the static refkv server with cargo (a no-op when it is up to date).
pub async fn build_static_server(root: &Path) -> Result<PathBuf> {
    let target_dir = static_dir(root);
    tracing::info!("building static refkv (cargo build --release -p refkv --target {TARGET})");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .env("RUSTFLAGS", "-C target-feature=+crt-static")
        .args(["build", "--release", "-p", "refkv", "--bin", "refkv", "--target", TARGET])
        .arg("--target-dir")
        .arg(&target_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .status()
        .await
        .context("could not run cargo to build the static refkv binary (is cargo installed?)")?;
    if !status.success() {
        bail!("building the static refkv binary failed ({status}); see the cargo output above");
    }
    let bin = target_dir.join(TARGET).join("release").join("refkv");
    if !bin.exists() {
        bail!("cargo succeeded but {} does not exist", bin.display());
    }
    Ok(bin)
}

/// Builds the sandbox binary with plain rustc (it has no dependencies).
pub async fn build_pause(root: &Path) -> Result<PathBuf> {
    let dir = static_dir(root);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let src = dir.join("pause.rs");
    let bin = dir.join("pause");
    let unchanged = std::fs::read_to_string(&src).map(|s| s == PAUSE_SOURCE).unwrap_or(false);
    if unchanged && bin.exists() {
        return Ok(bin);
    }
    std::fs::write(&src, PAUSE_SOURCE).with_context(|| format!("writing {}", src.display()))?;
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc)
        .args(["--edition", "2021", "-O", "-C", "strip=symbols"])
        .args(["-C", "target-feature=+crt-static", "--target", TARGET])
        .arg(&src)
        .arg("-o")
        .arg(&bin)
        .stdin(Stdio::null())
        .output()
        .await
        .context("could not run rustc to build the sandbox binary (docker/pause.rs)")?;
    if !out.status.success() {
        bail!("building the sandbox binary failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(bin)
}

/// SHA-256 of a file, hex, via coreutils' `sha256sum`.
async fn sha256_file(path: &Path) -> Result<String> {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .await
        .context("could not run sha256sum")?;
    if !out.status.success() {
        bail!("sha256sum {} failed: {}", path.display(), String::from_utf8_lossy(&out.stderr));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let hex = text.split_whitespace().next().unwrap_or_default().to_string();
    if hex.len() != 64 {
        bail!("sha256sum printed an unexpected line for {}: {text:?}", path.display());
    }
    Ok(hex)
}

/// The content tag for an image made of these two binaries and the embedded build files.
async fn content_tag(server: &Path, pause: &Path) -> Result<String> {
    let a = sha256_file(server).await?;
    let b = sha256_file(pause).await?;
    // The build files are tiny and compiled in; fold them into the tag with the binaries'.
    let extra: u64 = DOCKERFILE.bytes().chain(NSSWITCH.bytes()).fold(0xcbf29ce484222325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    });
    let combined = format!("{}{}{:016x}", &a[..16], &b[..8], extra);
    Ok(format!("{IMAGE_REPO}:{}", &combined[..20]))
}

/// Makes sure an image with these binaries exists, building it if not; tags it `:latest`.
pub async fn ensure_image(server: &Path, pause: &Path) -> Result<NodeImage> {
    let tag = content_tag(server, pause).await?;
    let existing = docker(&["image", "inspect", "--format", "{{.Id}}", &tag]).await;
    let (id, built) = match existing {
        Ok(id) => (id, false),
        Err(_) => (build_image(&tag, server, pause).await?, true),
    };
    docker(&["tag", &tag, &format!("{IMAGE_REPO}:latest")]).await?;
    Ok(NodeImage { tag, id, server_binary: Some(server.to_path_buf()), built })
}

/// Uses an image someone else built (`--image`), after checking it exists locally.
pub async fn existing_image(tag: &str) -> Result<NodeImage> {
    let id = docker(&["image", "inspect", "--format", "{{.Id}}", tag])
        .await
        .with_context(|| format!("image {tag} is not present locally (faultline never pulls)"))?;
    Ok(NodeImage { tag: tag.to_string(), id, server_binary: None, built: false })
}

async fn build_image(tag: &str, server: &Path, pause: &Path) -> Result<String> {
    tracing::info!("building image {tag}");
    let ctx = tempfile::tempdir().context("creating a temporary build context")?;
    let rootfs = ctx.path().join("rootfs");
    for d in ["etc", "tmp", "data"] {
        std::fs::create_dir_all(rootfs.join(d))?;
    }
    std::fs::write(rootfs.join("etc/nsswitch.conf"), NSSWITCH)?;
    std::fs::write(ctx.path().join("Dockerfile"), DOCKERFILE)?;
    copy_executable(server, &rootfs.join("refkv"))?;
    copy_executable(pause, &rootfs.join("pause"))?;
    let out = Command::new("docker")
        .env("DOCKER_BUILDKIT", "0")
        .args(["build", "-q", "--label", "faultline=1", "-t", tag])
        .arg(ctx.path())
        .stdin(Stdio::null())
        .output()
        .await
        .context("could not run `docker build`")?;
    if !out.status.success() {
        bail!("`docker build` of {tag} failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    docker(&["image", "inspect", "--format", "{{.Id}}", tag]).await
}

fn copy_executable(from: &Path, to: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::copy(from, to).with_context(|| format!("copying {} into the image", from.display()))?;
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// Checks that a user-supplied server binary is a static executable the image can run.
pub fn check_static_binary(path: &Path) -> Result<()> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" {
        bail!("{} is not an ELF executable", path.display());
    }
    // A dynamically linked binary names its loader in a PT_INTERP segment.
    if bytes.windows(14).any(|w| w == b"ld-linux-x86-6") {
        bail!(
            "{} is dynamically linked; the node image has no libc. Build it with \
             RUSTFLAGS='-C target-feature=+crt-static' --target {TARGET}",
            path.display()
        );
    }
    Ok(())
}

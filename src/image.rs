//! The node image of every target, built locally and never pulled — the one image builder.
//!
//! A node image holds, on an empty base, the target's server (`/<target>`: refkv's static
//! build, etcd, elastickv), the libraries it loads if it is dynamic (found with `ldd`), and
//! the static sandbox (`/pause`, built from `docker/pause.rs`) that keeps each node's
//! network namespace alive. The image is tagged `faultline-<target>:<hash>` by the SHA-256
//! of everything that goes into it, so it is rebuilt exactly when a file changes, and also
//! `faultline-<target>:latest` (`docker-compose.yml` uses refkv's).

use crate::docker::docker;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::process::Command;

/// Node images are `faultline-<target>:<content hash>` (and `:latest`).
pub const IMAGE_PREFIX: &str = "faultline-";
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
    root.join("refkv")
        .join("Cargo.toml")
        .exists()
        .then_some(root)
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
        .args([
            "build",
            "--release",
            "-p",
            "refkv",
            "--bin",
            "refkv",
            "--target",
            TARGET,
        ])
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
    let unchanged = std::fs::read_to_string(&src)
        .map(|s| s == PAUSE_SOURCE)
        .unwrap_or(false);
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
        bail!(
            "building the sandbox binary failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
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
        bail!(
            "sha256sum {} failed: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let hex = text
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string();
    if hex.len() != 64 {
        bail!(
            "sha256sum printed an unexpected line for {}: {text:?}",
            path.display()
        );
    }
    Ok(hex)
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
    let out = Command::new("ldd")
        .arg(binary)
        .stdin(Stdio::null())
        .output()
        .await
        .context("could not run ldd")?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || text.contains("not a dynamic executable") {
        return Ok(Vec::new());
    }
    Ok(parse_ldd(&text))
}

/// What goes into a node image: the server at `/<binary_name>`, the sandbox at `/pause`,
/// and the libraries the server loads at their own paths (none for a static server).
struct Contents {
    binary_name: String,
    server: PathBuf,
    pause: PathBuf,
    /// (path inside the image without the leading `/`, the real file on the host).
    libraries: Vec<(String, PathBuf)>,
}

impl Contents {
    async fn of(binary_name: &str, server: &Path, pause: &Path) -> Result<Contents> {
        if !server.is_file() {
            bail!("server binary {} does not exist", server.display());
        }
        let mut libraries = Vec::new();
        for lib in needed_libraries(server).await? {
            let inside = lib.to_string_lossy().trim_start_matches('/').to_string();
            // Follow symlinks so the real file lands under the name the loader looks for.
            let real = std::fs::canonicalize(&lib)
                .with_context(|| format!("resolving {}", lib.display()))?;
            libraries.push((inside, real));
        }
        Ok(Contents {
            binary_name: binary_name.to_string(),
            server: server.to_path_buf(),
            pause: pause.to_path_buf(),
            libraries,
        })
    }

    /// The content tag `<repo>:<hash>`: the binaries' SHA-256, the libraries' and the
    /// embedded build files, so the image is rebuilt exactly when one of them changes.
    async fn tag(&self, repo: &str) -> Result<String> {
        let a = sha256_file(&self.server).await?;
        let b = sha256_file(&self.pause).await?;
        let mut extra_text = format!("{DOCKERFILE}{NSSWITCH}{}", self.binary_name);
        for (inside, real) in &self.libraries {
            extra_text.push_str(inside);
            extra_text.push_str(&sha256_file(real).await?);
        }
        // The build files are tiny and compiled in; fold them into the tag with the binaries'.
        let extra = extra_text.bytes().fold(0xcbf29ce484222325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
        });
        let combined = format!("{}{}{:016x}", &a[..16], &b[..8], extra);
        Ok(format!("{repo}:{}", &combined[..20]))
    }

    /// Writes the build context (rootfs/ and the Dockerfile) into `dir`.
    fn write_context(&self, dir: &Path) -> Result<()> {
        let rootfs = dir.join("rootfs");
        for d in ["etc", "tmp", "data"] {
            std::fs::create_dir_all(rootfs.join(d))?;
        }
        std::fs::write(rootfs.join("etc/nsswitch.conf"), NSSWITCH)?;
        std::fs::write(dir.join("Dockerfile"), DOCKERFILE)?;
        copy_executable(&self.server, &rootfs.join(&self.binary_name))?;
        copy_executable(&self.pause, &rootfs.join("pause"))?;
        for (inside, real) in &self.libraries {
            let dest = rootfs.join(inside);
            if let Some(parent) = dest.parent() {
                std::fs::create_dir_all(parent)?;
            }
            copy_executable(real, &dest)?;
        }
        Ok(())
    }
}

/// Makes sure an image `<repo>:<content hash>` holding `server` as `/<binary_name>` exists,
/// building it if not. Does not touch any `:latest` tag.
pub async fn ensure_content_image(
    repo: &str,
    binary_name: &str,
    server: &Path,
    pause: &Path,
) -> Result<NodeImage> {
    let contents = Contents::of(binary_name, server, pause).await?;
    let tag = contents.tag(repo).await?;
    let existing = docker(&["image", "inspect", "--format", "{{.Id}}", &tag]).await;
    let (id, built) = match existing {
        Ok(id) => (id, false),
        Err(_) => (build_image(&tag, &contents).await?, true),
    };
    Ok(NodeImage {
        tag,
        id,
        server_binary: Some(server.to_path_buf()),
        built,
    })
}

/// The node image of target `name` (`faultline-<name>`, the server at `/<name>`):
/// [`ensure_content_image`], also tagged `faultline-<name>:latest` (docker-compose.yml uses
/// refkv's), keeping the [`KEEP_IMAGES`] newest content tags.
pub async fn ensure_image(name: &str, server: &Path, pause: &Path) -> Result<NodeImage> {
    let repo = format!("{IMAGE_PREFIX}{name}");
    let image = ensure_content_image(&repo, name, server, pause).await?;
    docker(&["tag", &image.tag, &format!("{repo}:latest")]).await?;
    prune_old_images(&repo, KEEP_IMAGES, &image.tag).await;
    Ok(image)
}

/// Content-tagged images kept per repository (a new one appears whenever a binary changes).
const KEEP_IMAGES: usize = 3;

/// Removes all but the `keep` newest content-tagged images of `repo`; images still used by
/// a container (or the `:latest` one) are left alone, and failures are only logged. `ensured`
/// (`repo:tag`) is never removed: an image rebuilt from the build cache keeps its old
/// creation time, so it may list as the oldest although it is the one about to run.
async fn prune_old_images(repo: &str, keep: usize, ensured: &str) {
    // `docker image ls` lists the newest first.
    let Ok(listing) = docker(&["image", "ls", repo, "--format", "{{.Tag}}"]).await else {
        return;
    };
    let tags: Vec<&str> = listing
        .lines()
        .map(str::trim)
        .filter(|t| !t.is_empty() && *t != "latest" && *t != "<none>")
        .collect();
    for old in tags
        .iter()
        .skip(keep)
        .filter(|t| format!("{repo}:{t}") != ensured)
    {
        if let Err(e) = docker(&["rmi", &format!("{repo}:{old}")]).await {
            tracing::debug!("keeping {repo}:{old}: {e:#}");
        }
    }
}

/// Uses an image someone else built (`--image`), after checking it exists locally.
pub async fn existing_image(tag: &str) -> Result<NodeImage> {
    let id = docker(&["image", "inspect", "--format", "{{.Id}}", tag])
        .await
        .with_context(|| format!("image {tag} is not present locally (faultline never pulls)"))?;
    Ok(NodeImage {
        tag: tag.to_string(),
        id,
        server_binary: None,
        built: false,
    })
}

async fn build_image(tag: &str, contents: &Contents) -> Result<String> {
    tracing::info!("building image {tag}");
    let ctx = tempfile::tempdir().context("creating a temporary build context")?;
    contents.write_context(ctx.path())?;
    docker_build(ctx.path(), tag).await
}

/// `docker build` of a prepared context directory (no BuildKit: this Docker has no buildx),
/// labelled `faultline=1`; returns the image id.
async fn docker_build(context: &Path, tag: &str) -> Result<String> {
    let out = Command::new("docker")
        .env("DOCKER_BUILDKIT", "0")
        .args(["build", "-q", "--label", "faultline=1", "-t", tag])
        .arg(context)
        .stdin(Stdio::null())
        .output()
        .await
        .context("could not run `docker build`")?;
    if !out.status.success() {
        bail!(
            "`docker build` of {tag} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    docker(&["image", "inspect", "--format", "{{.Id}}", tag]).await
}

fn copy_executable(from: &Path, to: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::copy(from, to)
        .with_context(|| format!("copying {} into the image", from.display()))?;
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// Checks that a user-supplied server binary is a static executable the image can run.
pub fn check_static_binary(path: &Path) -> Result<()> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    match elf_interpreter(&bytes) {
        None => bail!(
            "{} is not a 64-bit little-endian ELF executable",
            path.display()
        ),
        Some(true) => bail!(
            "{} is dynamically linked; the node image has no libc. Build it with \
             RUSTFLAGS='-C target-feature=+crt-static' --target {TARGET}",
            path.display()
        ),
        Some(false) => Ok(()),
    }
}

/// Whether an ELF64 LE file asks for a program interpreter (PT_INTERP = dynamically
/// linked); `None` if it is not such a file.
fn elf_interpreter(bytes: &[u8]) -> Option<bool> {
    const PT_INTERP: u32 = 3;
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 || bytes[5] != 1 {
        return None;
    }
    let u16_at = |o: usize| {
        bytes
            .get(o..o + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let phoff =
        usize::try_from(u64::from_le_bytes(bytes.get(0x20..0x28)?.try_into().ok()?)).ok()?;
    let (entsize, count) = (usize::from(u16_at(0x36)?), usize::from(u16_at(0x38)?));
    let mut dynamic = false;
    for i in 0..count {
        let at = phoff.checked_add(i.checked_mul(entsize)?)?;
        let p_type = u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?);
        dynamic |= p_type == PT_INTERP;
    }
    Some(dynamic)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_output_yields_absolute_library_paths() {
        let out = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n";
        assert_eq!(
            parse_ldd(out),
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2")
            ]
        );
        assert!(parse_ldd("\tnot a dynamic executable\n").is_empty());
    }

    #[tokio::test]
    async fn static_and_dynamic_binaries_are_told_apart() {
        let root = workspace_root().expect("workspace");
        let pause = build_pause(&root).await.expect("sandbox binary");
        assert!(
            check_static_binary(&pause).is_ok(),
            "the static sandbox is accepted"
        );
        let own = std::env::current_exe().expect("test binary");
        let err =
            check_static_binary(&own).expect_err("a dynamically linked test binary is refused");
        assert!(err.to_string().contains("dynamically linked"), "{err}");
        let text = root.join("Cargo.toml");
        assert!(check_static_binary(&text)
            .unwrap_err()
            .to_string()
            .contains("not a 64-bit"));
    }
}

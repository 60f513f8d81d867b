//! One host of an SSH cluster: a multiplexed OpenSSH connection (the `openssh` crate drives
//! the system's `ssh` with a control master, so every command after the first reuses one
//! authenticated connection) and the few things the cluster does through it: run a shell
//! script, upload and download a file, and run firewall commands (with `sudo -n` when asked).
//!
//! Invariants: every error names the host; host keys are checked strictly (an unknown or
//! changed key fails the connection, it is never accepted); the control master exits on its
//! own after [`MASTER_IDLE_S`] without commands, so a harness killed with SIGKILL leaves no
//! `ssh` process behind for long.

use super::SshOptions;
use anyhow::{bail, Context, Result};
use futures::future::BoxFuture;
use futures::FutureExt;
use nemesis::net::NetExec;
use openssh::{ControlPersist, KnownHosts, Session, SessionBuilder, Stdio};
use std::net::Ipv4Addr;
use std::path::Path;
use tokio::io::AsyncWriteExt;

/// Seconds the control master lingers without a command.
pub const MASTER_IDLE_S: usize = 120;
/// How long connecting may take.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A connected host.
pub struct Host {
    /// As given in `--hosts`.
    pub name: String,
    /// The address the other nodes reach it at (and the firewall rules name).
    pub ip: Ipv4Addr,
    session: Session,
    sudo: bool,
}

impl Host {
    /// Resolves `name` and connects to it; a refused key, an unknown host key or an
    /// unreachable host is an error naming it.
    pub async fn connect(name: &str, opts: &SshOptions) -> Result<Host> {
        let ip = resolve(name, opts.port.unwrap_or(22)).await?;
        let mut builder = SessionBuilder::default();
        builder
            .known_hosts_check(KnownHosts::Strict)
            .connect_timeout(CONNECT_TIMEOUT)
            .server_alive_interval(std::time::Duration::from_secs(5))
            .control_persist(ControlPersist::IdleFor(
                MASTER_IDLE_S.try_into().expect("non-zero"),
            ));
        if let Some(user) = &opts.user {
            builder.user(user.clone());
        }
        if let Some(port) = opts.port {
            builder.port(port);
        }
        if let Some(key) = &opts.key {
            builder.keyfile(key);
        }
        if let Some(known) = &opts.known_hosts {
            builder.user_known_hosts_file(known);
        }
        let session = builder
            .connect(name)
            .await
            .map_err(|e| connect_error(name, opts, e))?;
        Ok(Host {
            name: name.to_string(),
            ip,
            session,
            sudo: opts.sudo,
        })
    }

    /// Runs `program args` on the host (no stdin); its stdout, or an error saying `what`
    /// failed on this host, with the command's stderr.
    async fn checked(&self, program: &str, args: &[&str], what: &str) -> Result<Vec<u8>> {
        let out = self
            .session
            .command(program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .await
            .with_context(|| format!("{what} on {}: ssh failed", self.name))?;
        if !out.status.success() {
            bail!(
                "{what} on {} failed ({}): {}",
                self.name,
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(out.stdout)
    }

    /// Runs `script` with `sh -c` on the host; its stdout, or an error with its stderr.
    pub async fn sh(&self, script: &str) -> Result<String> {
        let out = self
            .checked("sh", &["-c", script], &format!("`{}`", first_line(script)))
            .await?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Copies the local file `from` to `to` on the host, executable (written beside it
    /// and renamed, so a half-copied binary is never run).
    pub async fn upload(&self, from: &Path, to: &str) -> Result<()> {
        let bytes = tokio::fs::read(from)
            .await
            .with_context(|| format!("reading {}", from.display()))?;
        let tmp = format!("{to}.part");
        let script = format!(
            "cat > {t} && chmod 755 {t} && mv {t} {to}",
            t = super::script::quote(&tmp),
            to = super::script::quote(to)
        );
        let mut child = self
            .session
            .command("sh")
            .arg("-c")
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .await
            .with_context(|| format!("uploading to {}", self.name))?;
        let mut stdin = child.stdin().take().context("no stdin to upload through")?;
        stdin
            .write_all(&bytes)
            .await
            .with_context(|| format!("uploading {} to {}:{to}", from.display(), self.name))?;
        stdin.shutdown().await?;
        drop(stdin);
        let out = child
            .wait_with_output()
            .await
            .with_context(|| format!("uploading to {}", self.name))?;
        if !out.status.success() {
            bail!(
                "uploading {} to {}:{to} failed: {}",
                from.display(),
                self.name,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(())
    }

    /// Copies the host's file `from` to the local file `to`.
    pub async fn download(&self, from: &str, to: &Path) -> Result<()> {
        let bytes = self
            .checked("cat", &[from], &format!("downloading {from}"))
            .await?;
        tokio::fs::write(to, &bytes)
            .await
            .with_context(|| format!("writing {}", to.display()))
    }

    /// Closes the connection (the control master exits).
    pub async fn close(self) {
        let name = self.name;
        if let Err(e) = self.session.close().await {
            tracing::debug!("closing the ssh connection to {name}: {e}");
        }
    }
}

/// Firewall and traffic-control commands run on the host itself (through `sudo -n` with
/// `--sudo`).
impl NetExec for Host {
    fn run<'a>(&'a self, program: &'a str, args: &'a [&'a str]) -> BoxFuture<'a, Result<String>> {
        async move {
            let what = format!("`{program} {}`", args.join(" "));
            let out = if self.sudo {
                let mut full = vec!["-n", program];
                full.extend_from_slice(args);
                self.checked("sudo", &full, &what).await?
            } else {
                self.checked(program, args, &what).await?
            };
            Ok(String::from_utf8_lossy(&out).into_owned())
        }
        .boxed()
    }
}

fn first_line(script: &str) -> &str {
    script.lines().next().unwrap_or_default()
}

/// The host's IPv4 address: `name` itself, or what it resolves to here.
async fn resolve(name: &str, port: u16) -> Result<Ipv4Addr> {
    if let Ok(ip) = name.parse() {
        return Ok(ip);
    }
    let addrs = tokio::net::lookup_host((name, port))
        .await
        .with_context(|| format!("resolving host {name}"))?;
    addrs
        .filter_map(|a| match a.ip() {
            std::net::IpAddr::V4(ip) => Some(ip),
            std::net::IpAddr::V6(_) => None,
        })
        .next()
        .with_context(|| {
            format!("host {name} has no IPv4 address (the firewall faults name IPv4 peers)")
        })
}

/// A failed connection, said for people: the host, how it was reached, and ssh's reason.
fn connect_error(name: &str, opts: &SshOptions, e: openssh::Error) -> anyhow::Error {
    use std::error::Error as _;
    let mut reason = e
        .source()
        .map(|s| s.to_string())
        .unwrap_or_else(|| e.to_string());
    if reason.contains("Host key verification failed") {
        // ssh's banner about a changed key is a dozen lines; the ones naming the key say it.
        reason = reason
            .lines()
            .filter(|l| l.to_lowercase().contains("host key"))
            .collect::<Vec<_>>()
            .join(" ");
    }
    let user = opts
        .user
        .as_deref()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let port = opts.port.map(|p| format!(" port {p}")).unwrap_or_default();
    let hint = if reason.contains("Host key verification failed")
        || reason.contains("REMOTE HOST IDENTIFICATION")
    {
        " (its host key is unknown or changed: add it to the known hosts file, e.g. `ssh-keyscan HOST >> ~/.ssh/known_hosts`, or pass --ssh-known-hosts)"
    } else if reason.contains("Permission denied") {
        " (authentication failed: check --ssh-user and --ssh-key)"
    } else {
        ""
    };
    anyhow::anyhow!("cannot connect to host {name} over ssh ({user}{name}{port}): {reason}{hint}")
}

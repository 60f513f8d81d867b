//! The SSH host flags (`--hosts`, `--hosts-file`, `--ssh-*`, `--sudo`) shared by
//! `faultline test --cluster ssh` and `faultline cleanup`, and `test`'s `--remote-binary`,
//! turned into [`SshOptions`].

use crate::cluster::ssh::{SshOptions, DEFAULT_DIR};
use clap::Args;
use std::path::PathBuf;

/// How faultline reaches SSH hosts (see docs/ssh.md).
#[derive(Args, Debug, Clone)]
pub struct SshHostArgs {
    /// The SSH hosts, one node each, in node order (n1 = the first). Each must run sshd and
    /// be reachable by the others at the IPv4 address it resolves to here.
    #[arg(
        long,
        value_name = "HOST,...",
        value_delimiter = ',',
        conflicts_with = "hosts_file",
        help_heading = "SSH cluster"
    )]
    pub hosts: Vec<String>,

    /// A file of SSH hosts, one a line (`#` starts a comment), instead of --hosts.
    #[arg(long, value_name = "FILE", help_heading = "SSH cluster")]
    pub hosts_file: Option<PathBuf>,

    /// The user to log in as (default: ssh's own choice, e.g. from ~/.ssh/config).
    #[arg(long, value_name = "USER", help_heading = "SSH cluster")]
    pub ssh_user: Option<String>,

    /// The private key to log in with (only this key is offered).
    #[arg(long, value_name = "PATH", help_heading = "SSH cluster")]
    pub ssh_key: Option<PathBuf>,

    /// The hosts' sshd port (default: 22, or ~/.ssh/config's).
    #[arg(long, value_name = "PORT", help_heading = "SSH cluster")]
    pub ssh_port: Option<u16>,

    /// A known-hosts file holding the hosts' keys (default: ~/.ssh/known_hosts). Host keys
    /// are checked strictly: an unknown or changed key fails before anything on a host changes.
    #[arg(long, value_name = "FILE", help_heading = "SSH cluster")]
    pub ssh_known_hosts: Option<PathBuf>,

    /// Run the firewall commands (iptables) through `sudo -n` on the hosts.
    #[arg(long, help_heading = "SSH cluster")]
    pub sudo: bool,

    /// The directory on each host under which node directories (`nK/`: data, log,
    /// pidfiles, the uploaded binary) are created and, at setup and teardown, removed.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_DIR, help_heading = "SSH cluster")]
    pub ssh_dir: String,
}

/// `faultline test`'s SSH cluster flags: the hosts and the server binary.
#[derive(Args, Debug, Clone)]
pub struct SshArgs {
    #[command(flatten)]
    pub host_args: SshHostArgs,

    /// A server binary already on every host (nothing is uploaded); default: upload
    /// --db-binary, or the target's default binary (refkv: built here, static).
    #[arg(
        long,
        value_name = "PATH",
        conflicts_with = "db_binary",
        help_heading = "SSH cluster"
    )]
    pub remote_binary: Option<String>,
}

impl SshHostArgs {
    /// Options without a remote binary: `test` adds its own.
    pub fn into_options(self) -> SshOptions {
        SshOptions {
            hosts: self
                .hosts
                .into_iter()
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
                .collect(),
            hosts_file: self.hosts_file,
            user: self.ssh_user,
            key: self.ssh_key,
            port: self.ssh_port,
            known_hosts: self.ssh_known_hosts,
            sudo: self.sudo,
            dir: self.ssh_dir,
            remote_binary: None,
        }
    }
}

impl SshArgs {
    pub fn into_options(self) -> SshOptions {
        SshOptions {
            remote_binary: self.remote_binary,
            ..self.host_args.into_options()
        }
    }
}

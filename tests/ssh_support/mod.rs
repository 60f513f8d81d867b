//! "Hosts" for the `--cluster ssh` end-to-end tests: network namespaces (faultline's own
//! netns helpers, owned by the test process so no run sweeps them), each running a real
//! OpenSSH `sshd` at the namespace's own address, with a host key and a user key the test
//! generates (`ssh-keygen`) and a known-hosts file naming every host's key.
//!
//! Invariants: the sshds and namespaces go when the [`SshHosts`] is dropped; nothing here
//! touches the machine's own sshd, firewall or `~/.ssh`.
#![allow(dead_code)]

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// The sshd binary Debian's openssh-server installs.
pub const SSHD: &str = "/usr/sbin/sshd";

/// A set of sshd "hosts".
pub struct SshHosts {
    pub run_id: String,
    pub ips: Vec<Ipv4Addr>,
    pub namespaces: Vec<PathBuf>,
    /// Keys, configs and the known-hosts file.
    pub dir: tempfile::TempDir,
    sshds: Vec<Child>,
    rt: tokio::runtime::Runtime,
}

fn run(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn keygen(path: &Path) {
    run(Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "faultline-test",
            "-f",
        ])
        .arg(path));
}

impl SshHosts {
    /// `n` hosts, or the reason when this machine cannot create network namespaces (the
    /// only reason these tests do not run; a missing sshd is a failure: `.ci/run` installs it).
    pub fn create(n: usize, tag: &str) -> Result<SshHosts, String> {
        assert!(
            Path::new(SSHD).exists(),
            "{SSHD} is missing (apt-get install openssh-server openssh-client)"
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let run_id = format!("fltssh{tag}{}", std::process::id());
        let names: Vec<String> = (1..=n).map(|i| format!("n{i}")).collect();
        let made = rt
            .block_on(faultline::cluster::netns::create_bare_network(
                &run_id, &names,
            ))
            .map_err(|e| format!("{e:#}"))?;
        // Under target/, as the test stores are: nothing else on the machine cleans it.
        let parent = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target")
            .join("ssh-hosts");
        std::fs::create_dir_all(&parent).expect("target/ssh-hosts");
        let dir = tempfile::Builder::new()
            .prefix(&format!("{tag}-"))
            .tempdir_in(&parent)
            .expect("a temp dir");
        let mut hosts = SshHosts {
            run_id,
            ips: made.iter().map(|m| m.0).collect(),
            namespaces: made.into_iter().map(|m| m.1).collect(),
            dir,
            sshds: Vec::new(),
            rt,
        };
        hosts.start_sshds();
        Ok(hosts)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The user key faultline logs in with.
    pub fn key(&self) -> PathBuf {
        self.path("user_key")
    }

    pub fn known_hosts(&self) -> PathBuf {
        self.path("known_hosts")
    }

    pub fn host_list(&self) -> String {
        self.ips
            .iter()
            .map(Ipv4Addr::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    fn start_sshds(&mut self) {
        keygen(&self.path("host_key"));
        keygen(&self.key());
        keygen(&self.path("other_key"));
        std::fs::copy(self.path("user_key.pub"), self.path("authorized_keys"))
            .expect("authorized_keys");
        let host_pub = std::fs::read_to_string(self.path("host_key.pub")).expect("host key");
        let host_pub: Vec<&str> = host_pub.split_whitespace().take(2).collect();
        let known: String = self
            .ips
            .iter()
            .map(|ip| format!("{ip} {}\n", host_pub.join(" ")))
            .collect();
        std::fs::write(self.known_hosts(), known).expect("known_hosts");
        std::fs::create_dir_all("/run/sshd").expect("sshd's privilege separation dir");
        // The login shell of a session starts in this empty home, as on a fresh VM: the
        // machine's own root profile (here: a pyenv init costing ~0.1 s of CPU per command)
        // is not what the hosts under test run.
        std::fs::create_dir_all(self.path("home")).expect("a home for the sessions");
        self.install_fake_sudo();
        for (i, (ip, ns)) in self.ips.iter().zip(&self.namespaces).enumerate() {
            let config = self.path(&format!("sshd_config_{i}"));
            let text = format!(
                "ListenAddress {ip}:22\nHostKey {hk}\nPidFile {pid}\nAuthorizedKeysFile {ak}\nPermitRootLogin prohibit-password\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nMaxSessions 100\nMaxStartups 100\n\
                 SetEnv HOME={home} PATH={bin}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n",
                home = self.path("home").display(),
                bin = self.path("bin").display(),
                hk = self.path("host_key").display(),
                pid = self.path(&format!("sshd_{i}.pid")).display(),
                ak = self.path("authorized_keys").display(),
            );
            std::fs::write(&config, text).expect("sshd_config");
            let child = Command::new("nsenter")
                .arg(format!("--net={}", ns.display()))
                .args([SSHD, "-D", "-e", "-f"])
                .arg(&config)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(
                    std::fs::File::create(self.path(&format!("sshd_{i}.log"))).expect("sshd log"),
                )
                .spawn()
                .expect("sshd starts");
            self.sshds.push(child);
        }
        for ip in &self.ips {
            let deadline = Instant::now() + Duration::from_secs(10);
            while std::net::TcpStream::connect_timeout(
                &(*ip, 22).into(),
                Duration::from_millis(200),
            )
            .is_err()
            {
                assert!(
                    Instant::now() < deadline,
                    "sshd at {ip}:22 did not come up: {}",
                    self.sshd_logs()
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    /// A `sudo` first on the sessions' PATH (the machine has none): it logs its arguments
    /// to [`SshHosts::sudo_log`] and runs them, so `--sudo` can be seen at work.
    fn install_fake_sudo(&self) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(self.path("bin")).expect("a bin dir");
        let script = format!(
            "#!/bin/sh\n[ \"$1\" = -n ] || {{ echo 'sudo without -n' >&2; exit 1; }}\nshift\necho \"$*\" >> {}\nexec \"$@\"\n",
            self.sudo_log().display()
        );
        let sudo = self.path("bin/sudo");
        std::fs::write(&sudo, script).expect("fake sudo");
        std::fs::set_permissions(&sudo, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    /// What the fake `sudo` ran, one command a line.
    pub fn sudo_log(&self) -> PathBuf {
        self.path("sudo.log")
    }

    pub fn sshd_logs(&self) -> String {
        (0..self.ips.len())
            .map(|i| {
                std::fs::read_to_string(self.path(&format!("sshd_{i}.log"))).unwrap_or_default()
            })
            .collect()
    }

    /// Processes in host `i`'s namespace other than its sshds.
    pub fn foreign_processes(&self, i: usize) -> Vec<String> {
        let ns = self.namespaces[i]
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let out = run(Command::new("ip").args(["netns", "pids", &ns]));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|pid| {
                let cmdline = std::fs::read(format!("/proc/{}/cmdline", pid.trim())).ok()?;
                let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                (!cmdline.is_empty() && !cmdline.contains("sshd"))
                    .then_some(format!("{}: {cmdline}", pid.trim()))
            })
            .collect()
    }

    /// Host `i`'s firewall rules that mention faultline's chain.
    pub fn faultline_rules(&self, i: usize) -> Vec<String> {
        let out = run(Command::new("nsenter")
            .arg(format!("--net={}", self.namespaces[i].display()))
            .arg("iptables-save"));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains("FAULTLINE"))
            .map(str::to_string)
            .collect()
    }

    /// Asserts that no host holds a process, a firewall rule or a file of a run (`remote`:
    /// its `--ssh-dir`).
    pub fn assert_nothing_left(&self, remote: &Path) {
        let deadline = Instant::now() + Duration::from_secs(5);
        for i in 0..self.ips.len() {
            // A closing ssh session may take a moment to go.
            while !self.foreign_processes(i).is_empty() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            assert_eq!(
                self.foreign_processes(i),
                Vec::<String>::new(),
                "processes left on host {}",
                self.ips[i]
            );
            assert_eq!(
                self.faultline_rules(i),
                Vec::<String>::new(),
                "firewall rules left on host {}",
                self.ips[i]
            );
        }
        assert!(
            !remote.exists(),
            "{} left behind: {:?}",
            remote.display(),
            std::fs::read_dir(remote).map(|d| d.count())
        );
    }
}

impl Drop for SshHosts {
    fn drop(&mut self) {
        for child in &mut self.sshds {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = self
            .rt
            .block_on(faultline::cluster::netns::remove_run(&self.run_id));
    }
}

//! The shell scripts an SSH cluster runs on its hosts (POSIX `sh`, coreutils, `setsid`),
//! built as strings here so that they can be read and tested without a host.
//!
//! Layout on a host, under the run's root directory `R` (`--ssh-dir`): one directory per
//! node, `R/nK/`, holding `data/` (the server's data dir), `server.log` (its stdout and
//! stderr, appended across restarts), `server.pid` (the server's pid), `wrapper.pid` (the
//! `sh` that waits for it), `server.exit` (the wrapper writes the server's wait status
//! there when it ends) and `bin/` (the uploaded server binary).
//!
//! Invariants: only paths `R/n<digits>` are ever removed, never `R` itself unless empty; a
//! pid read from a pidfile is signalled only while `/proc/<pid>/cmdline` names `R`, so a
//! stale pidfile never kills a process that is not ours.

/// Quotes `s` for `sh` (single quotes; a `'` becomes `'\''`).
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The node directory `R/<node>`.
pub fn node_dir(root: &str, node: &str) -> String {
    format!("{}/{node}", root.trim_end_matches('/'))
}

/// Kills every server of ours (and its wrapper) found by the pidfiles under `root`, waits
/// up to 5 s for them to go, then removes the node directories. Prints nothing.
pub fn sweep(root: &str) -> String {
    let r = quote(root.trim_end_matches('/'));
    format!(
        r#"r={r}
ours() {{ [ -n "$1" ] && grep -qaF "$r" "/proc/$1/cmdline" 2>/dev/null; }}
for d in "$r"/n[0-9]*; do
  [ -d "$d" ] || continue
  for f in wrapper.pid server.pid; do
    p=$(cat "$d/$f" 2>/dev/null) || continue
    if ours "$p"; then kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; fi
  done
  for f in wrapper.pid server.pid; do
    p=$(cat "$d/$f" 2>/dev/null) || continue
    i=0; while ours "$p" && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
  done
done
rm -rf "$r"/n[0-9]*
"#
    )
}

/// Removes `root` if nothing is left in it.
pub fn remove_root_if_empty(root: &str) -> String {
    format!(
        "rmdir {} 2>/dev/null || true",
        quote(root.trim_end_matches('/'))
    )
}

/// Creates the node directory with its data dir and empty log.
pub fn prepare(dir: &str) -> String {
    let d = quote(dir);
    format!("mkdir -p {d}/data {d}/bin && : >> {d}/server.log")
}

/// Starts `argv` detached from the SSH session (its own session, all output to the log)
/// under a wrapper that records its wait status in `server.exit`. Prints the log's length
/// before the start, then the server's pid; fails if the pidfile does not appear in 5 s.
pub fn start(dir: &str, argv: &[String]) -> String {
    let d = quote(dir);
    let cmd: Vec<String> = argv.iter().map(|a| quote(a)).collect();
    let wrapper = quote(
        r#"echo $$ > "$0/wrapper.pid"; "$@" >> "$0/server.log" 2>&1 < /dev/null & echo $! > "$0/server.pid"; wait $!; echo $? > "$0/server.exit""#,
    );
    format!(
        r#"set -e
d={d}
rm -f "$d/server.exit" "$d/server.pid" "$d/wrapper.pid"
wc -c < "$d/server.log"
setsid sh -c {wrapper} "$d" {cmd} > /dev/null 2>&1 < /dev/null &
i=0; while [ ! -s "$d/server.pid" ]; do i=$((i+1)); [ $i -le 100 ] || {{ echo "the server did not start" >&2; exit 3; }}; sleep 0.05; done
cat "$d/server.pid"
"#,
        cmd = cmd.join(" ")
    )
}

/// Sends `signal` (`STOP`, `CONT`, `KILL`) to the server; fails if it does not run.
pub fn signal(dir: &str, signal: &str) -> String {
    format!(
        r#"p=$(cat {}/server.pid) && kill -{signal} "$p""#,
        quote(dir)
    )
}

/// Kills the server (resuming it first, so a paused one dies too) and waits up to 5 s for
/// its wrapper to record the exit. Succeeds if it had exited already.
pub fn kill(dir: &str) -> String {
    format!(
        r#"d={}
[ -e "$d/server.exit" ] && exit 0
p=$(cat "$d/server.pid")
kill -CONT "$p" 2>/dev/null || true
kill -9 "$p" 2>/dev/null || true
i=0; while [ ! -e "$d/server.exit" ]; do i=$((i+1)); [ $i -le 100 ] || {{ echo "no exit recorded 5 s after kill -9 of $p" >&2; exit 3; }}; sleep 0.05; done
"#,
        quote(dir)
    )
}

/// Prints `exit <status>` once the wrapper recorded the server's end, `running` while the
/// server lives, `gone` when neither holds (the wrapper itself died, or the host rebooted).
pub fn status(dir: &str) -> String {
    format!(
        r#"d={}
st() {{ if [ -e "$d/server.exit" ]; then echo "exit $(cat "$d/server.exit")"; elif kill -0 "$(cat "$d/server.pid" 2>/dev/null)" 2>/dev/null; then echo running; else return 1; fi; }}
st || {{ sleep 0.2; st || echo gone; }}
"#,
        quote(dir)
    )
}

/// Prints the log written since byte `offset` (its last MiB at most).
pub fn log_since(dir: &str, offset: u64) -> String {
    format!(
        "tail -c +{} {}/server.log | tail -c 1048576",
        offset + 1,
        quote(dir)
    )
}

/// What [`status`] printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    Running,
    /// The shell's wait status: the exit code, or 128 + the signal number.
    Exited(i32),
    Gone,
}

impl ServerState {
    pub fn parse(out: &str) -> Option<ServerState> {
        match out.trim() {
            "running" => Some(ServerState::Running),
            "gone" => Some(ServerState::Gone),
            s => s
                .strip_prefix("exit ")
                .and_then(|c| c.trim().parse().ok())
                .map(ServerState::Exited),
        }
    }

    /// The exit code and the signal name of an exit (a status above 128 is a signal).
    pub fn code_and_signal(&self) -> (Option<i32>, Option<String>) {
        match *self {
            ServerState::Exited(s) if s > 128 => {
                let name = nix::sys::signal::Signal::try_from(s - 128)
                    .map(|s| s.as_str().to_string())
                    .unwrap_or_else(|_| format!("signal {}", s - 128));
                (None, Some(name))
            }
            ServerState::Exited(s) => (Some(s), None),
            _ => (None, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> (bool, String, String) {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .output()
            .expect("sh runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    #[test]
    fn quoting_survives_quotes_and_spaces() {
        let (_, out, _) = sh(&format!("printf %s {}", quote("it's a $HOME `x`")));
        assert_eq!(out, "it's a $HOME `x`");
    }

    #[test]
    fn a_wait_status_becomes_a_code_or_a_signal() {
        assert_eq!(
            ServerState::parse("exit 137\n"),
            Some(ServerState::Exited(137))
        );
        assert_eq!(
            ServerState::Exited(137).code_and_signal(),
            (None, Some("SIGKILL".into()))
        );
        assert_eq!(ServerState::Exited(2).code_and_signal(), (Some(2), None));
        assert_eq!(ServerState::parse("running"), Some(ServerState::Running));
        assert_eq!(ServerState::parse("gone"), Some(ServerState::Gone));
        assert_eq!(ServerState::parse("what"), None);
    }

    /// The scripts against this machine's own `sh`: start, status, kill, log, sweep.
    #[test]
    fn a_started_server_is_watched_killed_and_swept() {
        let root = tempfile::tempdir().unwrap();
        let root_s = root.path().display().to_string();
        let dir = node_dir(&root_s, "n1");
        assert!(sh(&prepare(&dir)).0);
        // A server is recognised by its command line naming the root: a copy of sleep there.
        let sleeper = format!("{dir}/bin/sleeper");
        std::fs::copy("/bin/sleep", &sleeper).unwrap();
        let argv = vec![sleeper, "1000".to_string()];
        let (ok, out, err) = sh(&start(&dir, &argv));
        assert!(ok, "{err}");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0].trim(), "0", "the log was empty");
        let pid: i32 = lines[1].trim().parse().unwrap();
        assert_eq!(
            ServerState::parse(&sh(&status(&dir)).1),
            Some(ServerState::Running)
        );
        assert!(sh(&signal(&dir, "STOP")).0);
        assert!(sh(&kill(&dir)).0, "a paused server is killed too");
        assert_eq!(
            ServerState::parse(&sh(&status(&dir)).1),
            Some(ServerState::Exited(137))
        );
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .unwrap_or_default()
                    .contains(" Z ")
        );
        std::fs::write(format!("{dir}/server.log"), "it's up\n").unwrap();
        assert_eq!(sh(&log_since(&dir, 3)).1, "s up\n");
        assert!(sh(&kill(&dir)).0, "killing an exited server is done");

        // A second server left running is swept with its directory; the root stays
        // until empty, and other files in it are never touched.
        let (_, out, _) = sh(&start(&dir, &argv));
        let pid: i32 = out.lines().nth(1).unwrap().trim().parse().unwrap();
        std::fs::write(root.path().join("keep-me"), "").unwrap();
        assert!(sh(&sweep(&root_s)).0);
        assert!(!std::path::Path::new(&dir).exists(), "node dir swept");
        assert!(root.path().join("keep-me").exists());
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(
            stat.is_empty() || stat.contains(") Z"),
            "the server was killed: {stat}"
        );
        sh(&remove_root_if_empty(&root_s));
        assert!(root.path().exists(), "not empty: kept");
    }
}

//! Test support: a third-party AWS-compatible server (moto's, `moto[server]` from PyPI,
//! pinned in `.ci/run`) started on a free loopback port for the AWS clients' wire-conformance
//! tests, and killed when dropped.
//!
//! The server is `$FAULTLINE_MOTO_SERVER`, else `moto_server` on the PATH; without it a test
//! is skipped (it prints `skipped:`), except under `CI=true`, where `.ci/run` installs it and
//! its absence fails the test.

#![allow(dead_code)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The moto server process, killed when dropped.
pub struct Moto(Child);

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn moto_binary() -> Option<String> {
    if let Ok(p) = std::env::var("FAULTLINE_MOTO_SERVER") {
        return Some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("moto_server"))
        .find(|p| p.is_file())
        .map(|p| p.display().to_string())
}

/// A loopback port nobody listens on (at the time of asking).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Starts moto on a free loopback port and waits until it accepts connections; the server
/// and its `ip:port`.
pub fn start_moto(binary: &str) -> (Moto, String) {
    let port = free_port();
    let child = Command::new(binary)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {binary}: {e}"));
    let moto = Moto(child);
    let addr = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            Instant::now() < deadline,
            "moto did not listen on {addr} within 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (moto, addr)
}

/// The moto server binary, or `None` (the test is skipped) outside CI.
pub fn moto_or_skip() -> Option<String> {
    let binary = moto_binary();
    if binary.is_none() {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "moto_server is missing under CI=true (.ci/run installs it)"
        );
        eprintln!("skipped: no moto_server (set FAULTLINE_MOTO_SERVER or put it on the PATH)");
    }
    binary
}

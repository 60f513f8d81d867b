//! `faultline serve`: the run list, on-demand reports, and refusal of paths that leave
//! the store.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};

const FIXTURE: &str = "tests/fixtures/report-run/hotspot/20261129T120000Z";

/// A running `faultline serve`, killed on drop.
struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(store: &Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["serve", "--port", "0", "--store"])
        .arg(store)
        .stdout(Stdio::piped())
        .spawn()
        .expect("faultline serve starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    Server { child, addr }
}

/// (status code, body) of a raw GET.
fn get(server: &Server, target: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(&server.addr).unwrap();
    write!(stream, "GET {target} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// A store with the fixture run and a newer run that has only a history.
fn store() -> tempfile::TempDir {
    let store = tempfile::tempdir().unwrap();
    let old = store.path().join("hotspot/20261129T120000Z");
    let new = store.path().join("register/20261129T130000Z");
    for dir in [&old, &new] {
        std::fs::create_dir_all(dir).unwrap();
    }
    for file in ["history.jsonl", "results.json", "test.json"] {
        std::fs::copy(Path::new(FIXTURE).join(file), old.join(file)).unwrap();
    }
    std::fs::copy(
        Path::new(FIXTURE).join("history.jsonl"),
        new.join("history.jsonl"),
    )
    .unwrap();
    store
}

#[test]
fn lists_runs_newest_first_and_generates_reports_on_demand() {
    let store = store();
    let server = serve(store.path());
    let (status, list) = get(&server, "/");
    assert_eq!(status, 200);
    let newer = list.find("20261129T130000Z").expect("newer run listed");
    let older = list.find("20261129T120000Z").expect("older run listed");
    assert!(newer < older, "newest first");
    assert!(
        list.contains(">invalid<") && list.contains(">no verdict<"),
        "{list}"
    );

    let report = store.path().join("hotspot/20261129T120000Z/report.html");
    assert!(!report.exists());
    let (status, page) = get(&server, "/hotspot/20261129T120000Z/report.html");
    assert_eq!(status, 200);
    assert!(page.contains("id=\"overall\"") && page.contains("linearizable"));
    assert!(report.is_file(), "generated into the run directory");

    let (status, history) = get(&server, "/hotspot/20261129T120000Z/history.jsonl");
    assert_eq!(status, 200);
    assert_eq!(
        history,
        std::fs::read_to_string(Path::new(FIXTURE).join("history.jsonl")).unwrap()
    );
    let (status, _) = get(&server, "/hotspot/20261129T120000Z");
    assert_eq!(status, 301, "directories redirect to their slash form");
    let (status, files) = get(&server, "/hotspot/20261129T120000Z/");
    assert_eq!(status, 200);
    assert!(files.contains("href=\"results.json\""));
    assert_eq!(get(&server, "/hotspot/nope/report.html").0, 404);
    // A symlink that stays inside the store (like store/latest) is served.
    std::os::unix::fs::symlink(
        store.path().join("hotspot/20261129T120000Z"),
        store.path().join("latest"),
    )
    .unwrap();
    assert_eq!(get(&server, "/latest/results.json").0, 200);
}

#[test]
fn refuses_to_serve_outside_the_store() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    let store = store();
    std::os::unix::fs::symlink(outside.path(), store.path().join("escape")).unwrap();
    let server = serve(store.path());
    for target in [
        "/../Cargo.toml",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/hotspot/..%2f..%2fetc%2fpasswd",
        "/.hidden",
    ] {
        let (status, body) = get(&server, target);
        assert_eq!(status, 400, "{target}: {body}");
    }
    let (status, body) = get(&server, "/escape/secret.txt");
    assert_eq!(
        status, 404,
        "a symlink out of the store is not followed: {body}"
    );
    assert!(!body.contains("secret"), "{body}");
    let mut stream = TcpStream::connect(&server.addr).unwrap();
    write!(stream, "POST / HTTP/1.1\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 405"), "{response}");
}

#[test]
fn a_missing_store_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["serve", "--port", "0", "--store", "/nonexistent/store"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(254));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a directory"));
}

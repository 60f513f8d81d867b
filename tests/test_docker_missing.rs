//! Without a reachable Docker engine, `faultline test` and `faultline cleanup` stop at once
//! with a message that says what is wrong, not a stack of Docker errors.

mod test_support;
use test_support::*;

#[test]
fn a_stopped_engine_is_reported_clearly() {
    let store = store_dir("no-engine");
    // `cleanup --stale`, not `cleanup`: the latter removes every faultline namespace on the
    // machine before it reaches Docker, the clusters of runs still going included (a matrix
    // run beside this test lost its three nodes that way).
    for args in [
        vec!["test", "--no-progress", "--time-limit", "5"],
        vec!["cleanup", "--stale"],
    ] {
        let out = faultline()
            .args(&args)
            .args(if args[0] == "test" {
                vec!["--store", store.to_str().unwrap()]
            } else {
                vec![]
            })
            .env("DOCKER_HOST", "unix:///nonexistent/faultline-test.sock")
            .output()
            .expect("faultline runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(255), "{args:?}: {}", show(&out));
        assert!(
            stderr.contains("Docker engine is not reachable"),
            "{args:?}: {stderr}"
        );
        assert!(
            stderr.contains("`--cluster netns` (as root)"),
            "names the way to run without Docker: {stderr}"
        );
    }
}

#[test]
fn a_missing_docker_cli_is_reported_clearly() {
    let empty = tempfile::tempdir().expect("tempdir");
    let out = faultline()
        .args(["cleanup", "--stale"])
        .env("PATH", empty.path())
        .output()
        .expect("faultline runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(255), "{}", show(&out));
    assert!(
        stderr.contains("`docker` command was not found"),
        "{stderr}"
    );
    assert!(
        stderr.contains("`--cluster netns`"),
        "names the way to run without Docker: {stderr}"
    );
}

#[test]
fn bad_arguments_exit_254_before_touching_docker() {
    for argv in [
        vec!["test", "--nemesis", "meteor"],
        vec!["test", "--nodes", "0"],
        vec!["test", "--key-dist", "zipf"],
    ] {
        let out = faultline()
            .args(&argv)
            .env("DOCKER_HOST", "unix:///nonexistent/x.sock")
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(254), "{argv:?}: {}", show(&out));
    }
}

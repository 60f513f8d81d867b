//! Helpers shared by the `faultline analyze` CLI tests: the binary, the labelled histories
//! and small input files written into a temporary directory.
#![allow(dead_code)]

use assert_cmd::Command;
use std::path::{Path, PathBuf};

pub fn faultline() -> Command {
    Command::cargo_bin("faultline").expect("faultline binary")
}

/// `testdata/histories`, the labelled histories.
pub fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/histories")
}

/// Writes `text` to `dir/name` and returns the path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write test file");
    path
}

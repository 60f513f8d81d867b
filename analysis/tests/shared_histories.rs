//! The labelled histories in `testdata/histories` (a copy of `shared/histories`): the copy
//! is byte-identical to the shared original when that exists, and every labelled file
//! parses, with its format detected from its content.

use analysis::formats::{load_file, Format};
use std::path::{Path, PathBuf};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/histories")
}

/// All files under `dir`, relative to it, sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("readable dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).expect("under dir").to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// (folder, file, model, initial, expected) rows of every `labels.tsv`.
fn labels() -> Vec<(String, String, String, String, String)> {
    let mut rows = Vec::new();
    for folder in ["etcd-jepsen", "kv", "knossos-cas", "elastickv"] {
        let text = std::fs::read_to_string(testdata().join(folder).join("labels.tsv"))
            .expect("labels.tsv");
        for line in text.lines().skip(1).filter(|l| !l.trim().is_empty()) {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 4, "labels.tsv row {line:?}");
            rows.push((
                folder.into(),
                f[0].into(),
                f[1].into(),
                f[2].into(),
                f[3].into(),
            ));
        }
    }
    rows
}

#[test]
fn copy_is_byte_identical_to_shared_histories_when_present() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/histories");
    if !shared.is_dir() {
        eprintln!("{} not present; nothing to compare", shared.display());
        return;
    }
    let ours = files_under(&testdata());
    assert_eq!(files_under(&shared), ours, "same file list");
    for rel in &ours {
        let a = std::fs::read(shared.join(rel)).expect("shared file");
        let b = std::fs::read(testdata().join(rel)).expect("copied file");
        assert!(a == b, "{} differs from the shared original", rel.display());
    }
}

#[test]
fn there_are_118_labelled_histories_50_etcd_4_kv_61_knossos_3_elastickv() {
    let rows = labels();
    let count = |folder: &str| rows.iter().filter(|r| r.0 == folder).count();
    assert_eq!(
        (
            rows.len(),
            count("etcd-jepsen"),
            count("kv"),
            count("knossos-cas"),
            count("elastickv")
        ),
        (118, 50, 4, 61, 3)
    );
}

#[test]
fn every_labelled_history_parses_in_its_detected_format() {
    for (folder, file, _, _, _) in labels() {
        let path = testdata().join(&folder).join(&file);
        let loaded = load_file(&path, None).unwrap_or_else(|e| panic!("{e}"));
        let expected = match folder.as_str() {
            "etcd-jepsen" => Format::JepsenLog,
            "kv" => Format::PorcupineKv,
            "elastickv" => Format::Jsonl,
            _ => Format::Edn,
        };
        assert_eq!(loaded.format, expected, "{}", path.display());
        assert!(!loaded.history.is_empty(), "{} is empty", path.display());
        assert!(
            !loaded.report.truncated_last_line,
            "{}: {:?}",
            path.display(),
            loaded.report.warnings
        );
        // Every client op of these cas-register and kv histories is one of their functions.
        for op in &loaded.history.ops {
            if op.process.client().is_some() {
                assert!(
                    ["read", "write", "cas", "get", "put", "append"].contains(&op.f.as_str()),
                    "{}: op {} has f {:?}",
                    path.display(),
                    op.index,
                    op.f
                );
            }
        }
    }
}

#[test]
fn etcd_timed_out_writes_keep_their_value_and_error() {
    let loaded = load_file(&testdata().join("etcd-jepsen/etcd_000.log"), None).unwrap();
    let info = loaded
        .history
        .ops
        .iter()
        .find(|op| op.kind == analysis::history::OpType::Info && op.f == "write")
        .expect("etcd_000 has a timed-out write");
    assert_eq!(info.error.as_deref(), Some("timed-out"));
    assert!(
        info.value.is_number(),
        "the value written, from the invoke: {:?}",
        info.value
    );
}

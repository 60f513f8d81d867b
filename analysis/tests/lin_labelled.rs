//! The linearizability checker against every labelled history in `testdata/histories`
//! (a copy of `shared/histories`): each verdict must match its label, with a witness for
//! every non-linearizable one — with the exact configuration cache and with the
//! fingerprint cache alike.

use analysis::checkers::linearizable::{check, LinearizableOptions, Model};
use analysis::formats::load_file;
use analysis::verdict::Validity;
use std::path::{Path, PathBuf};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/histories")
}

struct Label {
    path: PathBuf,
    model: Model,
    initial: serde_json::Value,
    linearizable: bool,
}

fn labels(folder: &str) -> Vec<Label> {
    let dir = testdata().join(folder);
    let text = std::fs::read_to_string(dir.join("labels.tsv")).expect("labels.tsv");
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            Label {
                path: dir.join(f[0]),
                model: Model::from_name(f[1]).unwrap_or_else(|| panic!("model {:?}", f[1])),
                initial: if f[2] == "nil" {
                    serde_json::Value::Null
                } else {
                    serde_json::from_str(f[2]).expect("initial")
                },
                linearizable: match f[3] {
                    "linearizable" => true,
                    "not-linearizable" => false,
                    other => panic!("label {other:?}"),
                },
            }
        })
        .collect()
}

fn check_folder(folder: &str, expected_files: usize) {
    let labels = labels(folder);
    assert_eq!(labels.len(), expected_files);
    let mut wrong = Vec::new();
    for label in &labels {
        let loaded = load_file(&label.path, None).expect("parses");
        for exact_cache_max_ops in [usize::MAX, 0] {
            let opts = LinearizableOptions {
                model: label.model,
                initial: label.initial.clone(),
                exact_cache_max_ops,
                ..Default::default()
            };
            let result = check(&loaded.history, &opts);
            let expected = if label.linearizable {
                Validity::Valid
            } else {
                Validity::Invalid
            };
            if result.valid != expected {
                wrong.push(format!(
                    "{} (exact cache up to {exact_cache_max_ops} ops): got {:?} ({:?}), label {:?}",
                    label.path.display(),
                    result.valid,
                    result.reason,
                    expected
                ));
                continue;
            }
            if !label.linearizable {
                let w = result
                    .anomalies
                    .first()
                    .expect("a witness for an invalid history");
                assert_eq!(w["type"], "not-linearizable");
                assert!(w["op"]["index"].is_u64(), "witness names the op: {w}");
                assert!(w["prefix"].is_array());
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} disagree with their labels:\n{}",
        wrong.len(),
        labels.len(),
        wrong.join("\n")
    );
}

#[test]
fn etcd_jepsen_histories_match_their_labels() {
    check_folder("etcd-jepsen", 50);
}

#[test]
fn porcupine_kv_histories_match_their_labels() {
    check_folder("kv", 4);
}

#[test]
fn knossos_cas_histories_match_their_labels() {
    check_folder("knossos-cas", 61);
}

#[test]
fn elastickv_histories_match_their_labels() {
    check_folder("elastickv", 3);
}

/// Runs the labelled `folder` with and without the fast path; returns (keys on the fast
/// path, keys on the search) over the folder, after checking that both engines agree on
/// the verdict and on the number of invalid keys of every file.
fn engines_agree(folder: &str) -> (u64, u64) {
    let (mut fast_keys, mut search_keys) = (0, 0);
    for label in labels(folder) {
        let loaded = load_file(&label.path, None).expect("parses");
        let opts = |fast_path| LinearizableOptions {
            model: label.model,
            initial: label.initial.clone(),
            fast_path,
            first_invalid_grace: None,
            ..Default::default()
        };
        let fast = check(&loaded.history, &opts(true));
        let search = check(&loaded.history, &opts(false));
        let name = label.path.display();
        assert_eq!(fast.valid, search.valid, "{name}");
        assert_eq!(
            fast.counts["keys-invalid"], search.counts["keys-invalid"],
            "{name}"
        );
        fast_keys += fast.counts["keys-fast-path"];
        search_keys += fast.counts["keys-wgl"];
    }
    (fast_keys, search_keys)
}

#[test]
fn fast_path_agrees_with_the_search_on_every_labelled_history() {
    let mut fast_total = 0;
    for folder in ["etcd-jepsen", "kv", "knossos-cas", "elastickv"] {
        let (fast, search) = engines_agree(folder);
        eprintln!("{folder}: {fast} key(s) on the fast path, {search} on the search");
        fast_total += fast;
        if folder == "elastickv" {
            assert!(
                fast > 0 && search == 0,
                "elastickv writes unique values: every key takes the fast path"
            );
        }
    }
    assert!(fast_total > 0);
}

/// Histories outside the repository (e.g. Porcupine's 50-client kv files, which are not
/// copied here): every `*.txt` file of the folder named by `FAULTLINE_EXTRA_KV`, fast path
/// against the search, key by key, where the search decides. Run by hand:
/// `FAULTLINE_EXTRA_KV=DIR cargo test -p analysis --release --test lin_labelled -- --ignored`.
#[test]
#[ignore]
fn fast_path_agrees_with_the_search_on_extra_kv_histories() {
    let dir =
        PathBuf::from(std::env::var("FAULTLINE_EXTRA_KV").expect("FAULTLINE_EXTRA_KV=folder"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for path in files {
        let loaded = load_file(&path, None).expect("parses");
        let opts = |fast_path| LinearizableOptions {
            model: Model::Kv,
            initial: serde_json::json!(""),
            fast_path,
            first_invalid_grace: None,
            ..Default::default()
        };
        let fast = check(&loaded.history, &opts(true));
        let search = check(&loaded.history, &opts(false));
        let by_key = |r: &analysis::verdict::CheckerResult| -> Vec<(String, String)> {
            let keys = r.details["keys"].as_array().expect("keys").iter();
            keys.map(|k| (k["key"].to_string(), k["valid"].to_string()))
                .collect()
        };
        let (f, s) = (by_key(&fast), by_key(&search));
        let name = path.display();
        let on_fast = fast.counts["keys-fast-path"];
        eprintln!(
            "{name}: fast {:?} ({on_fast} keys on the fast path); search {:?}",
            fast.valid, search.valid
        );
        for ((key, fv), (_, sv)) in f.iter().zip(&s) {
            eprintln!("  key {key}: fast {fv}, search {sv}");
            if sv != "\"unknown\"" {
                assert_eq!(fv, sv, "{name} key {key}");
            }
        }
    }
}

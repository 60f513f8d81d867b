//! Expanding the PATH arguments of `faultline analyze` into history files.
//!
//! A file is taken as given. A directory is searched recursively: a directory holding
//! `history.jsonl` (a run directory) contributes only that file; elsewhere files with a
//! history extension (`.jsonl`, `.ndjson`, `.edn`, `.log`, `.txt`) are taken if their
//! content looks like a history (or, with an explicit `--format`, if their extension
//! suggests that format). Symbolic links to directories are followed only when named on
//! the command line, so a link loop cannot trap the search.

use analysis::formats::detect::{detect_content, detect_extension, SNIFF_BYTES};
use analysis::formats::Format;
use std::io::Read;
use std::path::{Path, PathBuf};

const RUN_HISTORY: &str = "history.jsonl";

/// The history files under `paths`, sorted within each argument, and the problems met.
pub fn collect(paths: &[PathBuf], format: Option<Format>) -> (Vec<PathBuf>, Vec<String>) {
    let mut files = Vec::new();
    let mut problems = Vec::new();
    for path in paths {
        match std::fs::metadata(path) {
            Err(e) => problems.push(format!("{}: cannot read: {e}", path.display())),
            Ok(m) if m.is_dir() => {
                let mut found = Vec::new();
                walk(path, format, &mut found, &mut problems);
                found.sort();
                if found.is_empty() {
                    problems.push(format!(
                        "{}: no history files in this directory",
                        path.display()
                    ));
                }
                files.extend(found);
            }
            Ok(_) => files.push(path.clone()),
        }
    }
    (files, problems)
}

fn walk(dir: &Path, format: Option<Format>, found: &mut Vec<PathBuf>, problems: &mut Vec<String>) {
    let run_history = dir.join(RUN_HISTORY);
    if run_history.is_file() {
        found.push(run_history);
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            problems.push(format!("{}: cannot list: {e}", dir.display()));
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        if file_type.is_dir() {
            walk(&path, format, found, problems);
        } else if (file_type.is_file() || file_type.is_symlink())
            && path.is_file()
            && looks_like_history(&path, format)
        {
            found.push(path);
        }
    }
}

fn looks_like_history(path: &Path, format: Option<Format>) -> bool {
    let Some(by_extension) = detect_extension(path) else {
        return false;
    };
    match format {
        Some(f) => f == by_extension,
        None => sniff(path).is_some(),
    }
}

/// The format the start of the file looks like.
fn sniff(path: &Path) -> Option<Format> {
    let mut head = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .ok()?;
    detect_content(&String::from_utf8_lossy(&head))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_directories_contribute_their_history_and_noise_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("store/t/2026");
        std::fs::create_dir_all(run.join("logs")).unwrap();
        std::fs::write(run.join("history.jsonl"), "").unwrap();
        std::fs::write(
            run.join("logs/n1.log"),
            "INFO  jepsen.util - 1\t:ok\t:read\t1\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
        std::fs::write(dir.path().join("h.edn"), "[{:process 0}]").unwrap();
        std::fs::write(dir.path().join("README.md"), "[x]").unwrap();
        let (files, problems) = collect(&[dir.path().to_path_buf()], None);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            files,
            vec![dir.path().join("h.edn"), run.join("history.jsonl")]
        );

        let (files, _) = collect(&[dir.path().to_path_buf()], Some(Format::PorcupineKv));
        assert_eq!(
            files,
            vec![dir.path().join("notes.txt"), run.join("history.jsonl")]
        );
    }

    #[test]
    fn missing_paths_and_empty_directories_are_problems() {
        let dir = tempfile::tempdir().unwrap();
        let (files, problems) = collect(&[dir.path().join("nope"), dir.path().to_path_buf()], None);
        assert!(files.is_empty());
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("cannot read"));
        assert!(problems[1].contains("no history files"));
    }
}

//! The store: one directory per run, `store/<test-name>/<UTC timestamp>/`, holding
//! `history.jsonl`, `test.json`, `results.json`, `faultline.log`, `nodes/*.log` and the
//! nodes' `data/`. `store/latest` and `store/<test-name>/latest` point at the newest run.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// A run's directory in the store.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub root: PathBuf,
    pub dir: PathBuf,
    pub test_name: String,
    pub timestamp: String,
}

impl RunDir {
    /// Creates `root/<test_name>/<timestamp>/` (absolute) and points the `latest` links at it.
    pub fn create(root: &Path, test_name: &str) -> Result<RunDir> {
        check_name(test_name)?;
        let root = absolute(root)?;
        let mut timestamp = utc_timestamp(SystemTime::now());
        let mut dir = root.join(test_name).join(&timestamp);
        // Two runs in the same millisecond: add a suffix rather than sharing a directory.
        let mut n = 1;
        while dir.exists() {
            timestamp = format!("{}-{n}", utc_timestamp(SystemTime::now()));
            dir = root.join(test_name).join(&timestamp);
            n += 1;
        }
        std::fs::create_dir_all(dir.join("nodes"))
            .with_context(|| format!("creating {}", dir.display()))?;
        let run = RunDir {
            root,
            dir,
            test_name: test_name.to_string(),
            timestamp,
        };
        run.link_latest()?;
        Ok(run)
    }

    pub fn history(&self) -> PathBuf {
        self.dir.join("history.jsonl")
    }
    pub fn test_json(&self) -> PathBuf {
        self.dir.join("test.json")
    }
    pub fn results(&self) -> PathBuf {
        self.dir.join("results.json")
    }
    pub fn log(&self) -> PathBuf {
        self.dir.join("faultline.log")
    }
    pub fn nodes(&self) -> PathBuf {
        self.dir.join("nodes")
    }

    fn link_latest(&self) -> Result<()> {
        replace_symlink(
            &Path::new(&self.test_name).join(&self.timestamp),
            &self.root.join("latest"),
        )?;
        replace_symlink(
            Path::new(&self.timestamp),
            &self.root.join(&self.test_name).join("latest"),
        )
    }
}

/// Writes pretty JSON to `path` via a temporary file, so readers never see half a file.
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<()> {
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(value).context("serialising JSON")?;
    std::fs::write(&tmp, text + "\n").with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
}

/// Checks a test name is usable as one directory name in the store.
pub fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name != "latest"
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.+".contains(c))
        && !name.starts_with('.');
    anyhow::ensure!(ok, "test name {name:?} must be non-empty, not `latest`, and use only letters, digits, `-`, `_`, `.`, `+`");
    Ok(())
}

fn absolute(p: &Path) -> Result<PathBuf> {
    if p.is_absolute() {
        return Ok(p.to_path_buf());
    }
    Ok(std::env::current_dir()
        .context("reading the current directory")?
        .join(p))
}

/// Atomically points `link` at `target` (a relative path).
fn replace_symlink(target: &Path, link: &Path) -> Result<()> {
    let tmp = link.with_file_name(format!(".latest.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp)
        .with_context(|| format!("creating symlink {}", tmp.display()))?;
    std::fs::rename(&tmp, link).with_context(|| format!("replacing {}", link.display()))
}

/// `YYYYMMDDTHHMMSS.mmmZ` in UTC.
pub fn utc_timestamp(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, day) = civil_from_days(days as i64);
    format!(
        "{y:04}{m:02}{day:02}T{:02}{:02}{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's method).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(utc_timestamp(UNIX_EPOCH), "19700101T000000.000Z");
        // 2024-02-29T12:34:56.789Z = 1709210096.789
        let t = UNIX_EPOCH + Duration::from_millis(1_709_210_096_789);
        assert_eq!(utc_timestamp(t), "20240229T123456.789Z");
    }

    #[test]
    fn run_dirs_are_distinct_and_latest_links_follow_the_newest() {
        let root = tempfile::tempdir().unwrap();
        let a = RunDir::create(root.path(), "t1").unwrap();
        let b = RunDir::create(root.path(), "t1").unwrap();
        assert_ne!(a.dir, b.dir);
        let latest = std::fs::canonicalize(root.path().join("latest")).unwrap();
        assert_eq!(latest, std::fs::canonicalize(&b.dir).unwrap());
        let per_test = std::fs::canonicalize(root.path().join("t1/latest")).unwrap();
        assert_eq!(per_test, latest);
    }

    #[test]
    fn bad_test_names_are_refused() {
        let root = tempfile::tempdir().unwrap();
        for bad in ["", "latest", "../x", "a/b", ".hidden"] {
            assert!(
                RunDir::create(root.path(), bad).is_err(),
                "{bad:?} accepted"
            );
        }
    }
}

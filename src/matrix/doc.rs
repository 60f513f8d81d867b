//! The matrix's Markdown section: command, date, machine, the table, the legend and the
//! reasons behind unknown cells. Written into `--out` between the markers
//! `<!-- matrix:begin -->` and `<!-- matrix:end -->` when the file has them (so the prose
//! around the table survives a re-run), else as the whole file.

use super::table::{self, RunRow};
use anyhow::{Context, Result};
use std::path::Path;

pub const BEGIN: &str = "<!-- matrix:begin -->";
pub const END: &str = "<!-- matrix:end -->";

/// The generated section.
/// `measured`: when the runs ran (default: now).
pub fn section(
    rows: &[RunRow],
    command: &str,
    interrupted: bool,
    measured: Option<&str>,
) -> String {
    let total_s: f64 = rows.iter().map(|r| r.wall_s).sum();
    let mut s = String::new();
    s.push_str(&format!("Command: `{command}`\n\n"));
    let when = measured.map(str::to_string).unwrap_or_else(utc_now);
    s.push_str(&format!("Measured: {when} — machine: {}.\n", machine()));
    s.push_str(&format!(
        "{} runs, {:.1} min of wall time in all",
        rows.len(),
        total_s / 60.0
    ));
    if interrupted {
        s.push_str(" (interrupted: the last configuration is incomplete)");
    }
    s.push_str(".\n\n");
    s.push_str(&table::render(rows));
    s.push_str(
        "\nCells: runs in which the checker said **invalid** / runs; `(n?)` = n runs where it said unknown; \
         `n/a` = not applicable to these runs; bold = the checker expected to catch the bug. \
         *caught* = runs where an expected checker said invalid (⚠ = below the 9/10 target; for clean: \
         runs whose verdict was valid). *any checker invalid*: runs in which at least one checker \
         said invalid, expected or not. *other checkers invalid*: on a bug row, further detections; on the \
         clean row, false positives. *unknown verdicts*: runs whose overall verdict was unknown.\n",
    );
    let reasons = table::render_reasons(rows);
    if !reasons.is_empty() {
        s.push_str("\nReasons given by checkers that said unknown (or invalid without being expected), with counts:\n\n");
        s.push_str(&reasons);
    }
    s
}

/// Writes the section into `out` (between the markers if present).
pub fn write_out(
    out: &Path,
    rows: &[RunRow],
    command: &str,
    interrupted: bool,
    measured: Option<&str>,
) -> Result<()> {
    let generated = section(rows, command, interrupted, measured);
    let existing = std::fs::read_to_string(out).ok();
    let text = match existing.as_deref().and_then(|t| splice(t, &generated)) {
        Some(t) => t,
        None => format!("# Detection matrix\n\n{BEGIN}\n{generated}{END}\n"),
    };
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(out, text).with_context(|| format!("writing {}", out.display()))
}

/// `text` with the part between the markers replaced, or None without both markers.
pub fn splice(text: &str, generated: &str) -> Option<String> {
    let b = text.find(BEGIN)?;
    let e = text[b..].find(END)? + b;
    Some(format!("{}{BEGIN}\n{generated}{}", &text[..b], &text[e..]))
}

fn utc_now() -> String {
    std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "(date unavailable)".into())
}

/// Cores, CPU model, memory and kernel, from /proc.
fn machine() -> String {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, m)| m.trim().to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_gib = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map(|kb| kb / (1024.0 * 1024.0));
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mem = mem_gib
        .map(|g| format!("{g:.1} GiB RAM"))
        .unwrap_or_else(|| "unknown RAM".into());
    format!("{cores} cores ({model}), {mem}, Linux {}", kernel.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splice_replaces_only_between_the_markers() {
        let text = format!("# Title\n\nprose before\n{BEGIN}\nold table\n{END}\nprose after\n");
        let out = splice(&text, "new table\n").expect("markers found");
        assert_eq!(
            out,
            format!("# Title\n\nprose before\n{BEGIN}\nnew table\n{END}\nprose after\n")
        );
        assert!(splice("no markers here", "x").is_none());
    }
}

//! Loads the report of the fixture run in headless Chromium and checks that the page
//! renders without console errors and shows the verdict, the plots, the heat map and the
//! anomaly timeline. Needs `chromium` (`.ci/run` installs it).

use std::path::{Path, PathBuf};
use std::process::Command;

const FIXTURE: &str = "tests/fixtures/report-run/hotspot/20261129T120000Z";

fn chromium() -> PathBuf {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(out) = Command::new("which").arg(name).output() {
            if out.status.success() {
                return PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            }
        }
    }
    panic!("chromium is not installed: apt-get install -y chromium (.ci/run does this)");
}

/// The DOM after scripts ran, and the console lines Chromium logged, for a local file.
fn load(page: &Path) -> (String, Vec<String>) {
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .map(str::to_string)
        .collect();
    (String::from_utf8_lossy(&out.stdout).into_owned(), console)
}

fn report_of(run_dir: &str, out: &Path) {
    let status = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["report", run_dir, "--out"])
        .arg(out)
        .status()
        .expect("faultline runs");
    assert!(status.success());
}

/// The markup of the element with `id` up to its first child element (for presence checks).
fn element_after<'a>(dom: &'a str, id: &str) -> &'a str {
    let at = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no element #{id} in the page"));
    &dom[at..(at + 400).min(dom.len())]
}

#[test]
fn report_renders_in_chromium_without_console_errors() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    report_of(FIXTURE, &page);
    let (dom, console) = load(&page);
    assert!(console.is_empty(), "console output: {console:#?}");
    assert!(
        dom.contains(r#"data-report-ready="1""#),
        "the page script did not run to the end"
    );
    assert!(
        element_after(&dom, "overall").contains(">invalid<"),
        "overall verdict shown"
    );
    assert!(
        dom.contains(r#"data-checker="linearizable""#) && dom.contains("overwritten by write 183"),
        "reason of the invalid checker"
    );
    assert!(
        dom.contains("no commit metadata for 12 writes"),
        "reason of the unknown checker"
    );
    for plot in ["latency-plot", "throughput-plot", "heatmap-plot"] {
        assert!(
            element_after(&dom, plot).contains("<svg"),
            "{plot} holds an SVG"
        );
    }
    assert!(
        dom.contains("r3 [hot/00082, ∞) g1→g2"),
        "heat map row of the moved right child"
    );
    assert!(
        dom.contains("v2: split r1 → r2, r3"),
        "catalog split marked"
    );
    // The anomaly links to its ops, and the linked rows exist.
    for op in [172, 183, 370, 371] {
        assert!(
            dom.contains(&format!(r##"href="#w0-op{op}""##)),
            "link to op {op}"
        );
        assert!(
            dom.contains(&format!(r#"id="w0-op{op}""#)),
            "anchor of op {op}"
        );
    }
}

#[test]
fn the_console_check_catches_a_script_error() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("broken.html");
    std::fs::write(
        &page,
        "<html><body><script>undefinedFunction();</script></body></html>",
    )
    .unwrap();
    let (_, console) = load(&page);
    assert!(
        console
            .iter()
            .any(|l| l.contains("Uncaught ReferenceError")),
        "{console:#?}"
    );
}

//! The detection matrix's table, rendered from fixture rows (`faultline::matrix::table` and
//! `faultline::matrix::configs`), and the `faultline matrix` CLI's argument errors.

use faultline::matrix::{configs, table};
use std::collections::BTreeMap;
use table::RunRow;

fn row(config: &str, run: u32, verdict: &str, checkers: &[(&str, &str)]) -> RunRow {
    let c = configs::config_named(config).expect("known configuration");
    RunRow {
        config: config.into(),
        bug: c.bug.map(str::to_string),
        run,
        workload: c.workload.into(),
        nemesis: c.nemesis.into(),
        expected: c.expected.iter().map(|s| s.to_string()).collect(),
        expected_kinds: c
            .expected_kinds
            .iter()
            .map(|(c, k)| (c.to_string(), k.iter().map(|s| s.to_string()).collect()))
            .collect(),
        anomaly_kinds: BTreeMap::new(),
        seed: Some(u64::from(run)),
        exit_code: Some(0),
        verdict: verdict.into(),
        checkers: checkers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        reasons: BTreeMap::new(),
        wall_s: 60.0 + f64::from(run),
        run_dir: None,
        interrupted: false,
        error: None,
    }
}

/// The table's line for a configuration, split into trimmed cells.
fn line_of(table: &str, config: &str) -> Vec<String> {
    let line = table
        .lines()
        .find(|l| l.starts_with(&format!("| {config} |")))
        .unwrap_or_else(|| panic!("no row for {config}:\n{table}"));
    line.trim_matches('|')
        .split('|')
        .map(|c| c.trim().to_string())
        .collect()
}

fn header(table: &str) -> Vec<String> {
    table
        .lines()
        .next()
        .expect("header")
        .trim_matches('|')
        .split('|')
        .map(|c| c.trim().to_string())
        .collect()
}

fn cell(table: &str, config: &str, column: &str) -> String {
    let h = header(table);
    let i = h
        .iter()
        .position(|c| c == column)
        .unwrap_or_else(|| panic!("no column {column} in {h:?}"));
    line_of(table, config)[i].clone()
}

fn with_kinds(mut r: RunRow, checker: &str, kinds: &[&str]) -> RunRow {
    r.anomaly_kinds.insert(
        checker.into(),
        kinds.iter().map(|k| k.to_string()).collect(),
    );
    r
}

fn fixture() -> Vec<RunRow> {
    let ok = "valid";
    let no_fence_1 = row(
        "no-fence",
        1,
        "invalid",
        &[
            ("linearizable", ok),
            ("set-full", "invalid"),
            ("epoch-authority", "invalid"),
            ("split", ok),
            ("vacuity", ok),
        ],
    );
    vec![
        row(
            "clean",
            1,
            "valid",
            &[
                ("linearizable", ok),
                ("set-full", ok),
                ("epoch-authority", ok),
                ("split", ok),
                ("vacuity", ok),
            ],
        ),
        row(
            "clean",
            2,
            "invalid",
            &[
                ("linearizable", ok),
                ("set-full", "invalid"),
                ("epoch-authority", ok),
                ("split", ok),
                ("vacuity", ok),
            ],
        ),
        with_kinds(
            no_fence_1,
            "epoch-authority",
            &["split-job-not-settled", "stale-epoch-write"],
        ),
        row(
            "no-fence",
            2,
            "unknown",
            &[
                ("linearizable", ok),
                ("set-full", ok),
                ("epoch-authority", "unknown"),
                ("split", ok),
                ("vacuity", ok),
            ],
        ),
        row(
            "stale-read",
            1,
            "invalid",
            &[
                ("linearizable", "invalid"),
                ("split", "not-applicable"),
                ("vacuity", ok),
            ],
        ),
        row(
            "stale-read",
            2,
            "invalid",
            &[
                ("linearizable", "invalid"),
                ("split", "not-applicable"),
                ("vacuity", ok),
            ],
        ),
    ]
}

#[test]
fn counts_per_configuration_and_checker() {
    let t = table::render(&fixture());
    assert_eq!(
        t.lines().count(),
        2 + 3,
        "header, separator, one line per configuration:\n{t}"
    );
    let h = header(&t);
    assert_eq!(
        t.lines().nth(1).expect("separator").matches("---").count(),
        h.len(),
        "separator matches the header"
    );
    for l in t.lines() {
        assert_eq!(
            l.matches('|').count(),
            h.len() + 1,
            "every line has every column: {l}"
        );
    }
    assert_eq!(cell(&t, "clean", "caught"), "1/2 valid ⚠");
    assert_eq!(cell(&t, "clean", "set-full"), "1/2");
    assert_eq!(
        cell(&t, "clean", "other checkers invalid"),
        "set-full 1/2",
        "a clean invalid is a false positive"
    );
    assert_eq!(
        cell(&t, "no-fence", "caught"),
        "1/2 ⚠",
        "below 9/10 is marked"
    );
    assert_eq!(cell(&t, "no-fence", "any checker invalid"), "1/2");
    assert_eq!(cell(&t, "clean", "any checker invalid"), "1/2");
    assert_eq!(
        cell(&t, "no-fence", "epoch-authority"),
        "**1/2** (1?)",
        "expected checker bold, unknowns counted"
    );
    assert_eq!(
        cell(&t, "no-fence", "other checkers invalid"),
        "set-full 1/2"
    );
    assert_eq!(cell(&t, "no-fence", "unknown verdicts"), "1/2");
    assert_eq!(cell(&t, "stale-read", "caught"), "2/2");
    assert_eq!(cell(&t, "stale-read", "split"), "n/a", "never applicable");
    assert_eq!(
        cell(&t, "stale-read", "set-full"),
        "n/a",
        "absent from every run"
    );
    assert_eq!(cell(&t, "stale-read", "expected checker"), "linearizable");
    assert_eq!(
        cell(&t, "stale-read", "mean wall s"),
        "62",
        "mean of 61 and 62 rounds to 62 (61.5)"
    );
}

#[test]
fn errors_and_extra_checkers_get_columns_and_reasons() {
    let mut rows = fixture();
    let mut broken = row("split-midpoint", 1, "error", &[]);
    broken.error = Some("no run directory was created".into());
    rows.push(broken);
    let mut with_run = row(
        "split-midpoint",
        2,
        "unknown",
        &[("split", "unknown"), ("run", "unknown")],
    );
    with_run.reasons.insert(
        "split".into(),
        "no split happened — nothing was tested".into(),
    );
    with_run
        .reasons
        .insert("run".into(), "the run was interrupted | by Ctrl-C".into());
    rows.push(with_run);
    let t = table::render(&rows);
    assert!(
        header(&t).contains(&"run".to_string()),
        "a checker outside the fixed columns gets one"
    );
    assert_eq!(cell(&t, "split-midpoint", "errors"), "1");
    assert_eq!(cell(&t, "split-midpoint", "caught"), "0/2 ⚠");
    let reasons = table::render_reasons(&rows);
    assert!(reasons.contains("- **split-midpoint**:"), "{reasons}");
    assert!(
        reasons.contains("1× split unknown: no split happened — nothing was tested"),
        "{reasons}"
    );
    assert!(
        reasons.contains("1× run unknown: the run was interrupted \\| by Ctrl-C"),
        "pipes escaped for Markdown: {reasons}"
    );
    assert!(
        reasons.contains("1× run error: no run directory was created"),
        "{reasons}"
    );
    assert!(
        reasons.contains("1× set-full invalid"),
        "unexpected invalid checkers are listed: {reasons}"
    );
    assert!(
        !reasons.contains("**stale-read**"),
        "a configuration with nothing to explain is left out"
    );
}

#[test]
fn an_anomaly_that_is_not_the_bugs_symptom_does_not_count_as_caught() {
    let invalid = &[("epoch-authority", "invalid")];
    let unsettled = with_kinds(
        row("no-fence", 1, "invalid", invalid),
        "epoch-authority",
        &["split-job-not-settled"],
    );
    let stale = with_kinds(
        row("no-fence", 2, "invalid", invalid),
        "epoch-authority",
        &["stale-epoch-write"],
    );
    assert!(!unsettled.caught() && stale.caught());
    let lin = row(
        "ack-before-commit",
        1,
        "invalid",
        &[("linearizable", "invalid"), ("epoch-authority", "valid")],
    );
    assert!(
        lin.caught(),
        "a checker without named kinds counts with any anomaly"
    );
    let rows = vec![unsettled, stale];
    let t = table::render(&rows);
    assert_eq!(cell(&t, "no-fence", "caught"), "1/2 ⚠");
    assert_eq!(
        cell(&t, "no-fence", "epoch-authority"),
        "**2/2**",
        "the checker column still counts every invalid"
    );
    assert!(cell(&t, "no-fence", "expected checker")
        .starts_with("epoch-authority (two-groups-one-epoch, "));
    let reasons = table::render_reasons(&rows);
    assert!(
        reasons.contains(
            "1× epoch-authority invalid, but not with the bug's symptom: split-job-not-settled"
        ),
        "{reasons}"
    );
}

#[test]
fn rows_round_trip_through_json() {
    let rows = fixture();
    let text = serde_json::to_string(&rows).expect("serialises");
    let back: Vec<RunRow> = serde_json::from_str(&text).expect("parses");
    assert_eq!(back, rows);
    assert!(rows[2].caught() && !rows[3].caught());
}

#[test]
fn matrix_cli_refuses_unknown_bugs_before_running_anything() {
    let store = tempfile::tempdir().expect("temp dir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["matrix", "--bugs", "no-fence,nofence", "--store"])
        .arg(store.path())
        .output()
        .expect("faultline runs");
    assert_eq!(out.status.code(), Some(254));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown bug \"nofence\""), "{err}");
    assert!(
        std::fs::read_dir(store.path())
            .expect("listable")
            .next()
            .is_none(),
        "nothing ran"
    );
}

#[test]
fn a_clean_transaction_row_counts_valid_runs_like_the_clean_row() {
    let ok = "valid";
    let rows = vec![
        row(
            "clean-txn",
            1,
            "valid",
            &[("isolation", ok), ("vacuity", ok)],
        ),
        row(
            "clean-txn",
            2,
            "invalid",
            &[("isolation", "invalid"), ("vacuity", ok)],
        ),
    ];
    let t = table::render(&rows);
    assert_eq!(
        cell(&t, "clean-txn", "caught"),
        "1/2 valid ⚠",
        "a clean configuration is counted by valid runs"
    );
    assert_eq!(
        cell(&t, "clean-txn", "other checkers invalid"),
        "isolation 1/2",
        "its invalid is a false positive"
    );
}

#[test]
fn matrix_cli_refuses_an_unknown_clean_configuration_before_running_anything() {
    let store = tempfile::tempdir().expect("temp dir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args([
            "matrix",
            "--bugs",
            "none",
            "--clean",
            "clean,txn",
            "--store",
        ])
        .arg(store.path())
        .output()
        .expect("faultline runs");
    assert_eq!(out.status.code(), Some(254));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown --clean \"txn\": expected all or a list of clean, clean-txn, clean-txn+dynamodb"),
        "{err}"
    );
    assert!(
        std::fs::read_dir(store.path())
            .expect("listable")
            .next()
            .is_none(),
        "nothing ran"
    );
}

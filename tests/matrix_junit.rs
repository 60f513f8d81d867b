//! The JUnit XML writer (`faultline::junit`): one test case per checker, invalid →
//! `<failure>`, unknown / not-applicable → `<skipped>` with the reason, text escaped so the
//! document stays well-formed.

use analysis::verdict::{CheckerResult, Validity, Verdict};
use faultline::junit;
use serde_json::json;
use std::collections::BTreeMap;

fn result(valid: Validity, reason: Option<&str>) -> CheckerResult {
    let mut r = CheckerResult::new(valid);
    r.reason = reason.map(str::to_string);
    r
}

fn verdict(entries: Vec<(&str, CheckerResult)>) -> Verdict {
    Verdict::from_checkers(
        entries
            .into_iter()
            .map(|(n, r)| (n.to_string(), r))
            .collect::<BTreeMap<_, _>>(),
    )
}

/// A small well-formedness check: balanced, properly nested elements, quoted attributes,
/// no raw `<` or `&` outside markup/entities, one root element.
fn assert_well_formed(xml: &str) {
    let body = xml
        .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
        .expect("XML declaration first");
    let mut stack: Vec<String> = Vec::new();
    let mut roots = 0;
    let mut rest = body;
    while !rest.is_empty() {
        let Some(lt) = rest.find('<') else {
            check_text(rest);
            break;
        };
        check_text(&rest[..lt]);
        let gt = rest[lt..].find('>').expect("every tag is closed") + lt;
        let tag = &rest[lt + 1..gt];
        assert!(!tag.contains('<'), "raw < inside a tag: {tag}");
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(
                stack.pop().as_deref(),
                Some(name),
                "closing tag matches the open one"
            );
        } else {
            let self_closing = tag.ends_with('/');
            let inner = tag.trim_end_matches('/');
            let name = inner.split_whitespace().next().expect("tag name");
            check_attributes(&inner[name.len()..]);
            if stack.is_empty() {
                roots += 1;
            }
            if !self_closing {
                stack.push(name.to_string());
            }
        }
        rest = &rest[gt + 1..];
    }
    assert!(stack.is_empty(), "unclosed elements {stack:?}");
    assert_eq!(roots, 1, "one root element");
}

fn check_text(text: &str) {
    assert!(!text.contains('<'), "raw < in text");
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        let after = &rest[amp..];
        let ok = ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
            .iter()
            .any(|e| after.starts_with(e));
        assert!(ok, "unescaped & in {text:?}");
        rest = &rest[amp + 1..];
    }
    assert!(
        !text
            .chars()
            .any(|c| (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r')),
        "control character in {text:?}"
    );
}

fn check_attributes(attrs: &str) {
    let mut rest = attrs.trim();
    while !rest.is_empty() {
        let eq = rest.find('=').expect("attribute has a value");
        assert!(
            rest[eq + 1..].starts_with('"'),
            "attribute value is quoted: {rest}"
        );
        let close = rest[eq + 2..].find('"').expect("attribute value closed") + eq + 2;
        check_text(&rest[eq + 2..close]);
        rest = rest[close + 1..].trim();
    }
}

fn count(xml: &str, needle: &str) -> usize {
    xml.matches(needle).count()
}

#[test]
fn one_test_case_per_checker_with_failure_and_skipped() {
    let mut invalid = result(Validity::Invalid, Some("1 stale-epoch-write"));
    invalid.anomalies.push(json!({"rule": "b", "op": 17}));
    invalid.counts.insert("b-violations".into(), 1);
    invalid.details = json!({"check_ms": 1500});
    let v = verdict(vec![
        ("linearizable", result(Validity::Valid, None)),
        ("epoch-authority", invalid),
        (
            "split",
            result(
                Validity::Unknown,
                Some("no split happened — nothing was tested"),
            ),
        ),
        (
            "vacuity",
            result(Validity::NotApplicable, Some("no nemesis")),
        ),
    ]);
    let xml = junit::render("refkv-hotspot-split", &v);
    assert_well_formed(&xml);
    assert_eq!(count(&xml, "<testcase "), 4, "{xml}");
    assert!(
        xml.contains("tests=\"4\" failures=\"1\" errors=\"0\" skipped=\"2\""),
        "{xml}"
    );
    assert_eq!(count(&xml, "<failure "), 1);
    assert_eq!(count(&xml, "<skipped "), 2);
    assert!(xml.contains("name=\"epoch-authority\" time=\"1.500\">\n      <failure type=\"invalid\" message=\"invalid: 1 stale-epoch-write\">"), "{xml}");
    assert!(
        xml.contains("b-violations=1"),
        "counts in the failure body: {xml}"
    );
    assert!(
        xml.contains("{&quot;op&quot;:17,&quot;rule&quot;:&quot;b&quot;}"),
        "witness JSON escaped in the body: {xml}"
    );
    assert!(
        xml.contains("<skipped message=\"unknown: no split happened — nothing was tested\"/>"),
        "{xml}"
    );
    assert!(
        xml.contains("<skipped message=\"not-applicable: no nemesis\"/>"),
        "{xml}"
    );
    assert!(
        xml.contains("name=\"linearizable\" time=\"0.000\"/>"),
        "a valid checker passes: {xml}"
    );
    assert!(
        xml.contains("<property name=\"verdict\" value=\"invalid\"/>"),
        "{xml}"
    );
}

#[test]
fn hostile_text_is_escaped_and_stays_well_formed() {
    let nasty = "a<b & c>\"d\" 'e' ]]> \u{1}\u{7f} \n ünïcode";
    let mut r = result(Validity::Invalid, Some(nasty));
    r.anomalies.push(json!({"value": nasty}));
    let v = verdict(vec![
        (nasty, r),
        ("other", result(Validity::Unknown, Some(nasty))),
    ]);
    let xml = junit::render(nasty, &v);
    assert_well_formed(&xml);
    assert!(
        xml.contains("a&lt;b &amp; c&gt;&quot;d&quot; &apos;e&apos; ]]&gt; \\u{1}\u{7f}"),
        "{xml}"
    );
    assert!(!xml.contains('\u{1}'));
}

#[test]
fn an_empty_verdict_is_an_empty_suite_and_many_witnesses_are_cut() {
    let xml = junit::render("t", &verdict(vec![]));
    assert_well_formed(&xml);
    assert_eq!(count(&xml, "<testcase"), 0);
    assert!(xml.contains("tests=\"0\" failures=\"0\""));

    let mut r = result(Validity::Invalid, None);
    r.anomalies = (0..12).map(|i| json!({"op": i})).collect();
    let xml = junit::render("t", &verdict(vec![("set-full", r)]));
    assert_well_formed(&xml);
    assert!(
        xml.contains("message=\"invalid\""),
        "no reason: plain message"
    );
    assert!(
        xml.contains("... 7 more anomalies in results.json"),
        "{xml}"
    );
}

#[test]
fn write_puts_the_file_next_to_results_json() {
    let dir = tempfile::tempdir().expect("temp dir");
    let v = verdict(vec![("linearizable", result(Validity::Valid, None))]);
    junit::write(dir.path(), "t", &v).expect("written");
    let text = std::fs::read_to_string(dir.path().join("results.junit.xml")).expect("file exists");
    assert_eq!(text, junit::render("t", &v));
    assert!(!dir.path().join("results.junit.xml.tmp").exists());
}

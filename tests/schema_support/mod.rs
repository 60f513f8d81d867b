//! Checks a `results.json` document against the published JSON Schema,
//! `docs/results.schema.json`, so every verdict the test suite produces also tests the
//! documented contract (`docs/results-format.md`). The schema is compiled once per test
//! binary.
#![allow(dead_code)]

use serde_json::Value;
use std::path::Path;
use std::sync::OnceLock;

fn validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/results.schema.json");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let schema: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
        jsonschema::draft202012::new(&schema)
            .unwrap_or_else(|e| panic!("{} is not a valid schema: {e}", path.display()))
    })
}

/// The schema violations of `doc`, one line each (empty when it conforms).
pub fn schema_errors(doc: &Value) -> Vec<String> {
    validator()
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// Panics, naming `what` and every violation, unless `doc` conforms to the schema.
pub fn assert_matches_schema(doc: &Value, what: &str) {
    let errors = schema_errors(doc);
    assert!(
        errors.is_empty(),
        "{what} does not match docs/results.schema.json:\n{}\n{doc:#}",
        errors.join("\n")
    );
}

/// Reads `path` (a results.json), checks it against the schema and returns it.
pub fn read_results(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let doc: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    assert_matches_schema(&doc, &path.display().to_string());
    doc
}

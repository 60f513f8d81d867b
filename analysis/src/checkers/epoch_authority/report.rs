//! The outcome of one epoch-authority rule: how many operations (or catalog versions) it
//! could judge, how many broke it, a bounded list of witnesses, and its own validity.

use crate::verdict::Validity;
use serde_json::{json, Value};

#[derive(Debug, Clone)]
pub struct RuleReport {
    /// Short rule id: `a` … `e`.
    pub rule: &'static str,
    /// What the rule asserts, in words.
    pub title: &'static str,
    /// Items the rule could judge.
    pub checked: u64,
    /// Items that broke the rule.
    pub violations: u64,
    /// Items that lacked what the rule needs (metadata, a catalog observation, ...).
    pub skipped: u64,
    /// Why the rule could not be (fully) decided, when it could not.
    pub unknown_reason: Option<String>,
    /// The first violations found, as JSON objects naming the ops involved.
    pub witnesses: Vec<Value>,
    /// The `op` of every violation (all of them, past the witness cap).
    pub violating_ops: rustc_hash::FxHashSet<u64>,
    max_witnesses: usize,
}

impl RuleReport {
    pub fn new(rule: &'static str, title: &'static str, max_witnesses: usize) -> Self {
        RuleReport {
            rule,
            title,
            checked: 0,
            violations: 0,
            skipped: 0,
            unknown_reason: None,
            witnesses: Vec::new(),
            violating_ops: Default::default(),
            max_witnesses,
        }
    }

    /// Record one violation; the witness is kept while under the cap.
    pub fn violation(&mut self, witness: Value) {
        self.violations += 1;
        if let Some(op) = witness["op"].as_u64() {
            self.violating_ops.insert(op);
        }
        if self.witnesses.len() < self.max_witnesses {
            let mut w = witness;
            if let Value::Object(map) = &mut w {
                map.insert("rule".into(), json!(self.rule));
            }
            self.witnesses.push(w);
        }
    }

    /// Mark the rule undecidable when it judged nothing.
    pub fn unknown_if_nothing_checked(&mut self, reason: impl Into<String>) {
        if self.checked == 0 && self.unknown_reason.is_none() {
            self.unknown_reason = Some(reason.into());
        }
    }

    /// Invalid on any violation, unknown when undecidable, valid otherwise.
    pub fn validity(&self) -> Validity {
        if self.violations > 0 {
            Validity::Invalid
        } else if self.unknown_reason.is_some() {
            Validity::Unknown
        } else {
            Validity::Valid
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "rule": self.rule,
            "title": self.title,
            "valid": self.validity(),
            "checked": self.checked,
            "violations": self.violations,
            "skipped": self.skipped,
            "reason": self.unknown_reason,
        })
    }
}

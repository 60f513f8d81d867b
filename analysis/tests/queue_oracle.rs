//! The queue checker against a brute-force reading of its own definitions
//! (`docs/checkers.md` § queue), evaluated pair by pair on the raw history entries, on
//! many small histories: simulated FIFO queues (`queue_synth`) with one entry altered —
//! a receive's batch reordered, truncated or given a message again, or a delete's outcome
//! flipped.

use analysis::checkers::queue;
use analysis::history::{History, Op, OpType};
use analysis::queue_synth::{generate_queue, QueueSynthConfig, VISIBILITY_S};
use analysis::verdict::Validity;
use std::collections::BTreeSet;

/// One call: invoke entry and its completion (if any).
struct C<'h> {
    inv: &'h Op,
    end: Option<&'h Op>,
}

fn calls(h: &History) -> Vec<C<'_>> {
    let mut out: Vec<C> = Vec::new();
    for op in h.ops.iter().filter(|o| o.process.client().is_some()) {
        if op.kind == OpType::Invoke {
            out.push(C { inv: op, end: None });
        } else if let Some(c) = out.iter_mut().rev().find(|c| c.inv.process == op.process) {
            c.end = Some(op);
        }
    }
    out
}

fn ok(c: &C) -> bool {
    c.end.is_some_and(|e| e.kind == OpType::Ok)
}

fn bodies(c: &C) -> Vec<String> {
    c.end
        .and_then(|e| e.value.as_array())
        .map(|a| {
            a.iter()
                .map(|m| m["body"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The kinds the definitions find.
fn oracle(h: &History) -> BTreeSet<&'static str> {
    let cs = calls(h);
    let vt = (VISIBILITY_S * 1e9) as u64;
    let sends: Vec<&C> = cs.iter().filter(|c| c.inv.f == "send").collect();
    let recvs: Vec<&C> = cs
        .iter()
        .filter(|c| c.inv.f == "receive" && ok(c))
        .collect();
    let dels: Vec<&C> = cs.iter().filter(|c| c.inv.f == "delete-message").collect();
    let received = |b: &str| -> Vec<&C> {
        recvs
            .iter()
            .copied()
            .filter(|r| bodies(r).iter().any(|x| x == b))
            .collect()
    };
    let mut found = BTreeSet::new();
    let last_send = sends
        .iter()
        .map(|s| s.end.map_or(s.inv.index, |e| e.index))
        .max()
        .unwrap_or(0);
    let last_vis = recvs
        .iter()
        .filter(|r| !bodies(r).is_empty())
        .map(|r| r.end.unwrap().time + vt)
        .max()
        .unwrap_or(0);
    let drained = recvs
        .iter()
        .any(|r| bodies(r).is_empty() && r.inv.index > last_send && r.inv.time > last_vis);
    for s in sends.iter().filter(|s| ok(s)) {
        let b = s.inv.value.as_str().unwrap();
        if drained && received(b).is_empty() {
            found.insert("lost");
        }
    }
    for d in dels.iter().filter(|d| ok(d)) {
        let b = d.inv.value.as_str().unwrap();
        let before = received(b)
            .into_iter()
            .filter(|r| r.inv.process == d.inv.process && r.end.unwrap().index < d.inv.index)
            .max_by_key(|r| r.end.unwrap().index);
        if let Some(r0) = before {
            let d_end = d.end.unwrap();
            if d_end.time < r0.inv.time + vt
                && received(b).iter().any(|r| r.inv.index > d_end.index)
            {
                found.insert("duplicated");
            }
        }
    }
    for r in &recvs {
        for b in bodies(r) {
            let first = received(&b)
                .into_iter()
                .min_by_key(|x| x.end.unwrap().index)
                .unwrap();
            if first.inv.index != r.inv.index {
                continue;
            }
            let of_b: Vec<&&C> = sends.iter().filter(|s| s.inv.value == b.as_str()).collect();
            let failed = |s: &&&C| s.end.is_some_and(|e| e.kind == OpType::Fail);
            if of_b.is_empty()
                || of_b.iter().all(failed)
                || of_b.iter().all(|s| s.inv.index > r.end.unwrap().index)
            {
                found.insert("unexpected");
            }
        }
    }
    // order: first deliveries (receive completion, position) of two messages of a group.
    let first = |b: &str| {
        received(b)
            .into_iter()
            .map(|r| {
                (
                    r.end.unwrap().index,
                    r.inv.index,
                    bodies(r).iter().position(|x| x == b).unwrap(),
                )
            })
            .min()
    };
    for a in &sends {
        for bs in sends.iter().filter(|s| ok(s)) {
            let (ba, bb) = (
                a.inv.value.as_str().unwrap(),
                bs.inv.value.as_str().unwrap(),
            );
            if ba == bb || a.inv.key != bs.inv.key {
                continue;
            }
            let a_sent = sends
                .iter()
                .filter(|s| s.inv.value == ba)
                .map(|s| s.inv.index)
                .min()
                .unwrap();
            let b_acked = sends
                .iter()
                .filter(|s| s.inv.value == bb && ok(s))
                .map(|s| s.end.unwrap().index)
                .min()
                .unwrap();
            if b_acked >= a_sent {
                continue;
            }
            if let (Some(fa), Some(fb)) = (first(ba), first(bb)) {
                if fa.0 < fb.1 || (fa.0 == fb.0 && fa.2 < fb.2) {
                    found.insert("order");
                }
            }
        }
    }
    found
}

/// Alters one receive or delete of `h`, by `choice`.
fn alter(h: &mut History, choice: u64) {
    let targets: Vec<usize> = (0..h.ops.len())
        .filter(|&i| h.ops[i].kind != OpType::Invoke && h.ops[i].process.client().is_some())
        .filter(|&i| h.ops[i].f != "send")
        .collect();
    if targets.is_empty() {
        return;
    }
    let i = targets[(choice / 4) as usize % targets.len()];
    let op = &mut h.ops[i];
    if op.f == "delete-message" {
        op.kind = if op.kind == OpType::Ok {
            OpType::Fail
        } else {
            OpType::Ok
        };
        return;
    }
    let Some(list) = op.value.as_array_mut() else {
        return;
    };
    match choice % 4 {
        0 => list.reverse(),
        1 => {
            list.pop();
        }
        2 if !list.is_empty() => {
            let again = list[0].clone();
            list.push(again);
        }
        _ => list.clear(),
    }
}

#[test]
fn the_checker_finds_what_the_definitions_find() {
    let mut invalid = 0;
    for seed in 0..600u64 {
        let mut h = generate_queue(&QueueSynthConfig {
            ops: 12 + seed % 20,
            groups: 1 + (seed % 3) as u32,
            concurrency: 1 + (seed % 4) as u32,
            indeterminate: 0.1,
            seed,
            anomaly: None,
        })
        .unwrap();
        if seed % 3 != 0 {
            alter(&mut h, seed * 7);
        }
        let want = oracle(&h);
        let r = queue::check(&h);
        let got: BTreeSet<&str> = r
            .anomalies
            .iter()
            .map(|a| *queue::KINDS.iter().find(|k| a["kind"] == **k).unwrap())
            .collect();
        assert_eq!(got, want, "seed {seed}: {r:?}");
        assert_eq!(
            r.valid == Validity::Invalid,
            !want.is_empty(),
            "seed {seed}"
        );
        invalid += usize::from(!want.is_empty());
    }
    assert!(
        invalid > 50,
        "only {invalid} altered histories were invalid"
    );
}

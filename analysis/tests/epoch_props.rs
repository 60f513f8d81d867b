//! Property tests: any clean random evolution of a catalog (splits at random interior keys,
//! moves under fresh epochs) with writes carrying the right metadata passes every
//! epoch-authority rule and the split checker sees every split; one stale write from a
//! moved route's old owner is always caught by rule (b), with the right witness.

mod epoch_support;

use analysis::checkers::epoch_authority::{check, EpochAuthorityOptions};
use analysis::checkers::split;
use analysis::history::RouteRecord;
use analysis::verdict::Validity;
use epoch_support::*;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Action {
    Split(usize, u64),
    Move(usize),
    Write(u64, u64),
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        1 => (any::<usize>(), any::<u64>()).prop_map(|(r, f)| Action::Split(r, f)),
        1 => any::<usize>().prop_map(Action::Move),
        6 => (0..10_000u64, 0..8u64).prop_map(|(k, p)| Action::Write(k, p)),
    ]
}

struct Sim {
    h: HistoryBuilder,
    routes: Vec<(RouteRecord, u64, u64)>,
    version: u64,
    next_id: u64,
    next_epoch: u64,
    log: [u64; 4],
    /// (route id, old group, old epoch, first key index) of every move.
    moved: Vec<(u64, u64, u64, u64)>,
    splits: u64,
}

fn key(i: u64) -> String {
    format!("k{i:05}")
}

impl Sim {
    fn new() -> Self {
        let mut h = HistoryBuilder::new();
        h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
        Sim {
            h,
            routes: vec![(route(1, "", "", 1, 1), 0, 10_000)],
            version: 1,
            next_id: 2,
            next_epoch: 2,
            log: [0; 4],
            moved: vec![],
            splits: 0,
        }
    }

    fn publish(&mut self) {
        self.version += 1;
        let t = self.h.now_ms() + 5;
        let snapshot = self.routes.iter().map(|r| r.0.clone()).collect();
        self.h.at_ms(t).catalog(self.version, snapshot, vec![]);
    }

    fn apply(&mut self, a: &Action) {
        match *a {
            Action::Split(i, f) => {
                let i = i % self.routes.len();
                let (p, lo, hi) = self.routes[i].clone();
                if hi - lo < 2 {
                    return;
                }
                let mid = lo + 1 + f % (hi - lo - 1);
                let left = (
                    child(self.next_id, &p.start, &key(mid), p.group, p.epoch, p.id),
                    lo,
                    mid,
                );
                let right = (
                    child(self.next_id + 1, &key(mid), &p.end, p.group, p.epoch, p.id),
                    mid,
                    hi,
                );
                self.next_id += 2;
                self.routes.splice(i..=i, [left, right]);
                self.splits += 1;
                self.publish();
            }
            Action::Move(i) => {
                let i = i % self.routes.len();
                let lo = self.routes[i].1;
                let r = &mut self.routes[i].0;
                self.moved.push((r.id, r.group, r.epoch, lo));
                r.group = r.group % 3 + 1;
                r.epoch = self.next_epoch;
                self.next_epoch += 1;
                self.publish();
            }
            Action::Write(k, p) => {
                let r = self
                    .routes
                    .iter()
                    .find(|r| r.1 <= k && k < r.2)
                    .expect("routes tile")
                    .0
                    .clone();
                self.log[r.group as usize] += 1;
                let t = self.h.now_ms() + 1;
                self.h.at_ms(t).put(
                    p,
                    &key(k),
                    k as i64,
                    meta(r.group, 1, self.log[r.group as usize], r.id, r.epoch),
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn clean_random_evolutions_pass_every_rule(actions in prop::collection::vec(action(), 1..200)) {
        let mut sim = Sim::new();
        sim.apply(&Action::Write(1, 0));
        for a in &actions {
            sim.apply(a);
        }
        let history = sim.h.build();
        let r = check(&history, &EpochAuthorityOptions::default());
        prop_assert_eq!(r.valid, Validity::Valid, "{:?} {:?}", r.reason, r.anomalies);
        let s = split::check(&history, &split::SplitOptions::default());
        prop_assert_eq!(s.counts["splits"], sim.splits);
    }

    #[test]
    fn a_write_by_a_moved_routes_old_owner_is_caught(actions in prop::collection::vec(action(), 1..200), pick in any::<usize>()) {
        let mut sim = Sim::new();
        for a in actions.iter().chain([Action::Move(0)].iter()) {
            sim.apply(a);
        }
        // The route may have been split or moved again since: its key now lives in a
        // descendant whose epoch is at least the move's.
        let (id, old_group, old_epoch, lo) = sim.moved[pick % sim.moved.len()];
        let t = sim.h.now_ms() + 10;
        let stale = sim.h.at_ms(t).put(99, &key(lo), -1, meta(old_group, 1, 1_000_000, id, old_epoch));
        let r = check(&sim.h.build(), &EpochAuthorityOptions::default());
        prop_assert_eq!(r.valid, Validity::Invalid);
        let w = r.anomalies.iter().find(|a| a["rule"] == "b").expect("rule (b) witness");
        prop_assert_eq!(w["op"].as_u64(), Some(stale));
        prop_assert_eq!(w["epoch"].as_u64(), Some(old_epoch));
    }
}

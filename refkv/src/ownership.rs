//! What a data group knows about which key ranges it serves, and the commit-time epoch
//! fence built on it.
//!
//! Each group's state machine holds a range map: for every range it owns, the epoch it owns
//! it under and whether writes are fenced; for ranges it gave away, a tombstone with the new
//! owner's epoch. A write routed under epoch `e` applies only if the key's range is owned
//! here at exactly `e` and not fenced — so a node routing with a stale catalog can never
//! commit into a group that no longer owns the key (single write authority per epoch).

use std::collections::BTreeMap;
use std::ops::Bound;

use serde::{Deserialize, Serialize};

use crate::catalog::Catalog;
use crate::keys::{below_end, Key};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Owned {
    pub end: Key,
    pub epoch: u64,
    pub fenced: bool,
    /// `Some(group)` when this range moved away; `epoch` is then the new owner's epoch.
    pub moved_to: Option<u64>,
}

/// Why an operation may not be served here, with the epoch a client should refresh to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub current_epoch: u64,
    pub reason: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Ownership {
    /// Keyed by range start; ranges never overlap.
    #[serde(with = "crate::keys::pairs")]
    ranges: BTreeMap<Key, Owned>,
}

impl Ownership {
    /// The ranges `group` owns in a catalog (used for the genesis state).
    pub fn from_catalog(catalog: &Catalog, group: u64) -> Ownership {
        let mut ranges = BTreeMap::new();
        for r in catalog.routes.values().filter(|r| r.group == group) {
            ranges.insert(
                r.start.clone(),
                Owned {
                    end: r.end.clone(),
                    epoch: r.epoch,
                    fenced: false,
                    moved_to: None,
                },
            );
        }
        Ownership { ranges }
    }

    fn entry_for(&self, key: &[u8]) -> Option<(&Key, &Owned)> {
        self.ranges
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(key)))
            .next_back()
            .filter(|(_, o)| below_end(key, &o.end))
    }

    /// May a write routed under `epoch` commit here?
    pub fn check_write(&self, key: &[u8], epoch: u64) -> Result<(), Refusal> {
        let owned = self.check_read(key, epoch)?;
        if owned.fenced {
            return Err(Refusal {
                current_epoch: owned.epoch,
                reason: "range is write-fenced (moving)".into(),
            });
        }
        Ok(())
    }

    /// May a read routed under `epoch` be served from this group's state?
    pub fn check_read(&self, key: &[u8], epoch: u64) -> Result<&Owned, Refusal> {
        match self.entry_for(key) {
            None => Err(Refusal {
                current_epoch: 0,
                reason: "key is not owned by this group".into(),
            }),
            Some((_, o)) if o.moved_to.is_some() => Err(Refusal {
                current_epoch: o.epoch,
                reason: format!("range moved to group {}", o.moved_to.unwrap_or_default()),
            }),
            Some((_, o)) if o.epoch != epoch => Err(Refusal {
                current_epoch: o.epoch,
                reason: format!("stale route epoch {epoch}, current {}", o.epoch),
            }),
            Some((_, o)) => Ok(o),
        }
    }

    /// Does this group currently serve `key` (own it, fenced or not)?
    pub fn serves(&self, key: &[u8]) -> bool {
        self.entry_for(key)
            .is_some_and(|(_, o)| o.moved_to.is_none())
    }

    /// Makes `key` a range boundary (splitting the entry that contains it).
    fn cut_at(&mut self, key: &[u8]) {
        if key.is_empty() {
            return;
        }
        let Some((start, owned)) = self.entry_for(key).map(|(s, o)| (s.clone(), o.clone())) else {
            return;
        };
        if start.as_slice() == key {
            return;
        }
        let right = Owned {
            end: owned.end.clone(),
            ..owned.clone()
        };
        self.ranges.insert(
            start,
            Owned {
                end: key.to_vec(),
                ..owned
            },
        );
        self.ranges.insert(key.to_vec(), right);
    }

    /// Entries fully inside `[start, end)` after cutting at both bounds.
    fn covered(&mut self, start: &[u8], end: &[u8]) -> Vec<Key> {
        self.cut_at(start);
        self.cut_at(end);
        self.ranges
            .range::<[u8], _>((Bound::Included(start), Bound::Unbounded))
            .take_while(|(s, _)| below_end(s, end))
            .map(|(s, _)| s.clone())
            .collect()
    }

    pub fn fence(&mut self, start: &[u8], end: &[u8], fenced: bool) {
        for s in self.covered(start, end) {
            if let Some(o) = self.ranges.get_mut(&s) {
                if o.moved_to.is_none() {
                    o.fenced = fenced;
                }
            }
        }
    }

    /// Replaces whatever is recorded for `[start, end)` by one entry.
    fn replace(&mut self, start: &[u8], end: &[u8], owned: Owned) {
        for s in self.covered(start, end) {
            self.ranges.remove(&s);
        }
        self.ranges.insert(start.to_vec(), owned);
    }

    pub fn own(&mut self, start: &[u8], end: &[u8], epoch: u64) {
        self.replace(
            start,
            end,
            Owned {
                end: end.to_vec(),
                epoch,
                fenced: false,
                moved_to: None,
            },
        );
    }

    pub fn disown(&mut self, start: &[u8], end: &[u8], new_epoch: u64, new_group: u64) {
        self.replace(
            start,
            end,
            Owned {
                end: end.to_vec(),
                epoch: new_epoch,
                fenced: false,
                moved_to: Some(new_group),
            },
        );
    }

    /// (start, entry) pairs in key order, for status output and tests.
    pub fn entries(&self) -> impl Iterator<Item = (&Key, &Owned)> {
        self.ranges.iter()
    }
}

#[cfg(test)]
#[path = "ownership_tests.rs"]
mod tests;

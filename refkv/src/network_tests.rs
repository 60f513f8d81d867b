//! Unit tests of the AppendEntries byte cap (`entries_within`): a batch never exceeds the
//! cap unless it is a single entry, and small entries are never split up.

use openraft::{EntryPayload, LogId};

use super::*;
use crate::types::Command;

fn put(index: u64, value_bytes: usize) -> Entry {
    Entry {
        log_id: LogId::new(openraft::CommittedLeaderId::new(1, 1), index),
        payload: EntryPayload::Normal(Command::Put {
            key: format!("k{index}").into_bytes(),
            value: vec![b'v'; value_bytes],
            epoch: 1,
            cas: None,
        }),
    }
}

fn batch_json_len(entries: &[Entry]) -> usize {
    entries.iter().map(json_len).sum()
}

#[test]
fn small_entries_are_sent_together() {
    let entries: Vec<Entry> = (1..=64).map(|i| put(i, 20)).collect();
    assert_eq!(entries_within(&entries, MAX_APPEND_BYTES), 64);
}

#[test]
fn large_entries_are_capped_by_bytes() {
    // The size of a move's copy batch: 32 KB of data per entry.
    let entries: Vec<Entry> = (1..=64).map(|i| put(i, 32 << 10)).collect();
    let fit = entries_within(&entries, MAX_APPEND_BYTES);
    assert!((1..64).contains(&fit), "fit {fit}");
    assert!(batch_json_len(&entries[..fit]) <= MAX_APPEND_BYTES);
    assert!(
        batch_json_len(&entries[..fit + 1]) > MAX_APPEND_BYTES,
        "the cap is not undershot"
    );
}

#[test]
fn an_entry_over_the_cap_is_sent_alone() {
    let huge = vec![put(1, MAX_APPEND_BYTES), put(2, 10)];
    assert!(json_len(&huge[0]) > MAX_APPEND_BYTES);
    assert_eq!(entries_within(&huge, MAX_APPEND_BYTES), 1);
    assert_eq!(entries_within(&huge[..1], MAX_APPEND_BYTES), 1);
}

#[test]
fn json_len_is_the_encoded_length() {
    let e = put(7, 1000);
    assert_eq!(json_len(&e), serde_json::to_vec(&e).unwrap().len());
}

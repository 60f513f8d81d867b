//! Memory of the streamed check of a run history ([`analysis::partitioned`]) follows its
//! largest key group, not the history: measured with a counting allocator (this test binary
//! runs this one test, so nothing else allocates meanwhile), the heap the check needs grows
//! far less than a history four times as long, while holding the history whole grows with
//! it. No clock is read: the bound is on bytes.

mod partitioned_support;

use analysis::checkers::registry;
use analysis::partitioned::{check_file, Options, Streamed};
use partitioned_support::{facts, hotspot_history, write_jsonl};
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The heap `f` needs above what was live before it.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(before))
}

/// Small batches and parts, so that a few MB of history make many of each.
fn options(spill: &Path) -> Options {
    Options {
        part_bytes: 256 << 10,
        spill_dir: Some(spill.to_path_buf()),
        read_batch_bytes: 128 << 10,
    }
}

#[test]
fn a_streamed_check_needs_memory_of_its_largest_part_not_of_the_history() {
    let facts = facts(&["linearizable", "set-full"], &["partition", "split"]);
    let mut streamed = Vec::new();
    let mut whole = Vec::new();
    for sets in [150, 600] {
        let dir = tempfile::tempdir().unwrap();
        let path = {
            let history = hotspot_history(11, sets);
            write_jsonl(&history, dir.path())
        };
        let bytes = std::fs::metadata(&path).unwrap().len() as usize;
        let (judged, peak) = peak_of(|| check_file(&path, &facts, &options(dir.path())).unwrap());
        let Streamed::Judged {
            checkers, stats, ..
        } = judged
        else {
            panic!("streamed")
        };
        assert!(stats.parts >= 8, "{} parts", stats.parts);
        assert_eq!(
            checkers["set-full"].valid.as_str(),
            "invalid",
            "it still judges"
        );
        streamed.push((bytes, peak));
        let (_, whole_peak) = peak_of(|| {
            let loaded = analysis::formats::load_file(&path, None).unwrap();
            let mut out = BTreeMap::new();
            registry::run_into(&loaded.history, &facts, &mut out);
            out
        });
        whole.push(whole_peak);
    }
    let ((small_bytes, small), (big_bytes, big)) = (streamed[0], streamed[1]);
    assert!(
        big_bytes >= 3 * small_bytes,
        "{small_bytes} → {big_bytes} bytes of history"
    );
    // What still grows is bounded: the findings listed (at most 1,000 of each kind), one
    // buffered writer per part file.
    assert!(
        big < small * 2,
        "streamed: {small} → {big} bytes of heap for {small_bytes} → {big_bytes} bytes of history"
    );
    eprintln!("streamed {small} → {big}, whole {whole:?}, history {small_bytes} → {big_bytes}");
    assert!(
        whole[1] > 3 * big,
        "whole: {} bytes; streamed: {big}",
        whole[1]
    );
    assert!(
        whole[1] * 2 > whole[0] * 5,
        "whole grows with the history: {whole:?}"
    );
}

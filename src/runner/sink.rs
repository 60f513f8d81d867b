//! The run's history sink: assigns each entry its index and its time (nanoseconds since the
//! test started, on a monotonic clock) and streams it to `history.jsonl` as one JSON line.
//! The file is flushed at most [`FLUSH_EVERY`] after a write (and on [`JsonlSink::flush`]),
//! so it can be followed while the test runs; the analysis reads the history back from it
//! ([`JsonlSink::read_back`]).
//!
//! Memory is O(what is in flight), not O(history): an entry is held in memory only until a
//! flush has put its line in the file (at most [`FLUSH_EVERY`] of entries), plus bounded
//! state for the live display and the split nemesis. A failing disk never loses an entry:
//! from the first write error on, every entry not known to be in the file stays in memory,
//! the error is reported, and [`JsonlSink::finish`] tries to write them after the part of
//! the file that was flushed before the error.

use analysis::formats::jsonl::read_history_parallel;
use analysis::formats::{load_file_as, Format, TxnForm};
use analysis::history::{History, HistorySink, Op};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Longest time a written line may stay in the buffer.
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// Running totals over the recorded entries, for the progress display.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub ok: u64,
    pub fail: u64,
    pub info: u64,
    /// Routes in the first and in the latest catalog snapshot the watcher recorded.
    pub first_routes: Option<u64>,
    pub latest_routes: Option<u64>,
}

impl Counters {
    fn count(&mut self, op: &Op) {
        use analysis::history::{OpType, Process};
        match (op.process, op.kind) {
            (Process::Client(_), OpType::Ok) => self.ok += 1,
            (Process::Client(_), OpType::Fail) => self.fail += 1,
            (Process::Client(_), OpType::Info) => self.info += 1,
            (Process::Watcher, _) if op.f == analysis::history::events::CATALOG => {
                if let Some(n) = op
                    .value
                    .get("routes")
                    .and_then(|r| r.as_array())
                    .map(|r| r.len() as u64)
                {
                    self.first_routes.get_or_insert(n);
                    self.latest_routes = Some(n);
                }
            }
            _ => {}
        }
    }

    /// Splits observed so far (route count growth seen by the watcher).
    pub fn splits(&self) -> u64 {
        match (self.first_routes, self.latest_routes) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => 0,
        }
    }
}

/// How many recent client invocations [`JsonlSink::hottest_key`] looks at.
const RECENT_KEYS: usize = 2048;

struct Inner {
    counters: Counters,
    recent_keys: std::collections::VecDeque<String>,
    /// Transactions invoked and not completed yet: process → (invoke index, keys).
    pending_txns: std::collections::HashMap<u64, (u64, Vec<String>)>,
    next_index: u64,
    last_time: u64,
    /// Entries whose line is not known to be in the file: those since the last successful
    /// flush, and every entry after a write error.
    unflushed: Vec<Op>,
    /// Bytes handed to the writer so far, and how many of them a flush put in the file.
    written_bytes: u64,
    flushed_bytes: u64,
    writer: Option<BufWriter<File>>,
    last_flush: Instant,
    write_error: Option<String>,
}

/// A [`HistorySink`] writing `history.jsonl`.
pub struct JsonlSink {
    path: PathBuf,
    start: Instant,
    /// Wall-clock time (Unix nanoseconds) of `start`, to relate history times to a store's
    /// wall-clock-based timestamps (elastickv's HLC).
    start_unix_ns: u64,
    inner: Mutex<Inner>,
}

impl JsonlSink {
    /// Creates (truncates) `path`; time 0 is now.
    pub fn create(path: &Path) -> std::io::Result<JsonlSink> {
        let file = File::create(path)?;
        Ok(JsonlSink {
            path: path.to_path_buf(),
            start: Instant::now(),
            start_unix_ns: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
            inner: Mutex::new(Inner {
                counters: Counters::default(),
                recent_keys: std::collections::VecDeque::with_capacity(RECENT_KEYS),
                pending_txns: Default::default(),
                next_index: 0,
                last_time: 0,
                unflushed: Vec::new(),
                written_bytes: 0,
                flushed_bytes: 0,
                writer: Some(BufWriter::with_capacity(64 * 1024, file)),
                last_flush: Instant::now(),
                write_error: None,
            }),
        })
    }

    /// Nanoseconds since the test started.
    pub fn now_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Wall-clock time (Unix nanoseconds) at history time 0.
    pub fn start_unix_ns(&self) -> u64 {
        self.start_unix_ns
    }

    /// Number of entries recorded so far.
    pub fn len(&self) -> usize {
        self.lock().next_index as usize
    }

    /// Whether nothing is recorded yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries held in memory now (not yet known to be in the file).
    pub fn held_in_memory(&self) -> usize {
        self.lock().unflushed.len()
    }

    /// Totals so far.
    pub fn counters(&self) -> Counters {
        self.lock().counters
    }

    /// The key invoked most often among the last few thousand client operations (ties go
    /// to the most recent), for the split nemesis.
    pub fn hottest_key(&self) -> Option<String> {
        self.hot_keys().into_iter().next()
    }

    /// The keys invoked more than once among the last few thousand client operations,
    /// hottest first (ties: the most recent first); when none repeats (unique inserts
    /// only), the most recent key alone. A key seen once is never a fallback for a hotter
    /// one: a sequential insert key marks the growing tail of a range, not a hot spot.
    pub fn hot_keys(&self) -> Vec<String> {
        let inner = self.lock();
        let mut counts: std::collections::HashMap<&str, (usize, usize)> =
            std::collections::HashMap::new();
        for (i, k) in inner.recent_keys.iter().enumerate() {
            let e = counts.entry(k.as_str()).or_insert((0, 0));
            e.0 += 1;
            e.1 = i;
        }
        let mut ranked: Vec<(&str, (usize, usize))> = counts.into_iter().collect();
        ranked.sort_by_key(|(_, c)| std::cmp::Reverse(*c));
        let repeated = ranked.iter().take_while(|(_, c)| c.0 > 1).count();
        ranked
            .into_iter()
            .take(repeated.max(1))
            .map(|(k, _)| k.to_string())
            .collect()
    }

    /// The transactions in flight now (invoked, not completed): their invoke indices and
    /// keys, in invoke order, for the split nemesis's events.
    pub fn in_flight_txns(&self) -> Vec<(u64, Vec<String>)> {
        let mut txns: Vec<(u64, Vec<String>)> =
            self.lock().pending_txns.values().cloned().collect();
        txns.sort();
        txns
    }

    /// Pushes buffered lines to the file.
    pub fn flush(&self) {
        let mut inner = self.lock();
        flush_inner(&mut inner);
    }

    /// The entries recorded so far, read back from the file (as `faultline analyze` reads
    /// it) followed by those only memory holds. Call [`JsonlSink::flush`] or
    /// [`JsonlSink::finish`] first so that the file holds what was written.
    pub fn read_back(&self) -> Result<History, String> {
        let inner = self.lock();
        let source = self.path.display().to_string();
        if inner.unflushed.is_empty() && inner.write_error.is_none() {
            return load_file_as(&self.path, Some(Format::Jsonl), TxnForm::Compact)
                .map(|loaded| loaded.history)
                .map_err(|e| e.to_string());
        }
        let file = File::open(&self.path).map_err(|e| format!("{source}: {e}"))?;
        let (flushed, _) = read_history_parallel(file.take(inner.flushed_bytes), &source)
            .map_err(|e| e.to_string())?;
        let mut ops = flushed.ops;
        ops.extend(inner.unflushed.iter().cloned());
        Ok(History::new(ops))
    }

    /// Flushes and closes the file. If writing ever failed, writes the entries memory holds
    /// after the part of the file flushed before the error. Returns the write error that
    /// remains, if any.
    pub fn finish(&self) -> Option<String> {
        let mut inner = self.lock();
        flush_inner(&mut inner);
        inner.writer = None;
        if inner.write_error.is_some() {
            match append_after(&self.path, inner.flushed_bytes, &inner.unflushed) {
                Ok(len) => {
                    tracing::warn!("history.jsonl was completed from memory after a write error");
                    inner.write_error = None;
                    inner.flushed_bytes = len;
                    inner.unflushed.clear();
                }
                Err(e) => {
                    inner.write_error = Some(format!(
                        "{} (rewrite failed: {e})",
                        inner.write_error.clone().unwrap_or_default()
                    ))
                }
            }
        }
        inner.write_error.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave Inner inconsistent in a way that
        // matters more than losing the history; keep going.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The store keys a client invocation touches, for the split nemesis's hot keys: its `key`,
/// or every string key of a transaction's micro-ops (`[f, key, value]`).
fn invoked_keys(op: &Op) -> Vec<String> {
    if let Some(k) = &op.key {
        return vec![k.to_string()];
    }
    if op.f != analysis::ops::TXN {
        return Vec::new();
    }
    let mops = op.value.as_array().map(Vec::as_slice).unwrap_or_default();
    mops.iter()
        .filter_map(|m| {
            m.get(1)
                .and_then(serde_json::Value::as_str)
                .map(str::to_string)
        })
        .collect()
}

fn flush_inner(inner: &mut Inner) {
    if let Some(w) = inner.writer.as_mut() {
        match w.flush() {
            Ok(()) => {
                inner.flushed_bytes = inner.written_bytes;
                inner.unflushed.clear();
            }
            Err(e) => note_error(inner, e),
        }
    }
    inner.last_flush = Instant::now();
}

fn note_error(inner: &mut Inner, e: std::io::Error) {
    if inner.write_error.is_none() {
        tracing::error!("writing history.jsonl failed: {e}; entries are kept in memory");
        inner.write_error = Some(e.to_string());
    }
    inner.writer = None;
}

/// Cuts `path` to its first `keep` bytes and appends `ops`; returns the new length.
fn append_after(path: &Path, keep: u64, ops: &[Op]) -> std::io::Result<u64> {
    let mut file = OpenOptions::new().write(true).open(path)?;
    file.set_len(keep)?;
    file.seek(SeekFrom::Start(keep))?;
    let mut w = BufWriter::new(file);
    for op in ops {
        serde_json::to_writer(&mut w, op)?;
        w.write_all(b"\n")?;
    }
    w.flush()?;
    w.get_ref().stream_position()
}

/// Writes `op`'s line; returns its length in bytes.
fn write_line(w: &mut BufWriter<File>, op: &Op) -> std::io::Result<u64> {
    let line = serde_json::to_vec(op).map_err(std::io::Error::from)?;
    w.write_all(&line)?;
    w.write_all(b"\n")?;
    Ok(line.len() as u64 + 1)
}

impl HistorySink for JsonlSink {
    fn record(&self, mut op: Op) -> u64 {
        let now = self.now_ns();
        let mut inner = self.lock();
        op.index = inner.next_index;
        // Monotonic even if two threads race between reading the clock and the lock.
        op.time = now.max(inner.last_time);
        inner.last_time = op.time;
        inner.next_index += 1;
        if let Some(w) = inner.writer.as_mut() {
            match write_line(w, &op) {
                Ok(n) => inner.written_bytes += n,
                Err(e) => note_error(&mut inner, e),
            }
        }
        let index = op.index;
        inner.counters.count(&op);
        if op.kind != analysis::history::OpType::Invoke && op.f == analysis::ops::TXN {
            if let analysis::history::Process::Client(p) = op.process {
                inner.pending_txns.remove(&p);
            }
        }
        if op.kind == analysis::history::OpType::Invoke
            && matches!(op.process, analysis::history::Process::Client(_))
        {
            if op.f == analysis::ops::TXN {
                if let analysis::history::Process::Client(p) = op.process {
                    inner.pending_txns.insert(p, (op.index, invoked_keys(&op)));
                }
            }
            for k in invoked_keys(&op) {
                if inner.recent_keys.len() == RECENT_KEYS {
                    inner.recent_keys.pop_front();
                }
                inner.recent_keys.push_back(k);
            }
        }
        inner.unflushed.push(op);
        if inner.writer.is_some() && inner.last_flush.elapsed() >= FLUSH_EVERY {
            flush_inner(&mut inner);
        }
        index
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::history::{OpType, Process};

    fn op(p: u64) -> Op {
        Op {
            index: 999,
            kind: OpType::Invoke,
            process: Process::Client(p),
            f: "write".into(),
            key: Some("k".into()),
            value: serde_json::json!(p),
            time: 0,
            node: None,
            error: None,
            meta: None,
        }
    }

    fn done(p: u64) -> Op {
        Op {
            kind: OpType::Ok,
            ..op(p)
        }
    }

    #[test]
    fn indices_and_times_are_assigned_in_order_and_streamed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        let sink = JsonlSink::create(&path).unwrap();
        assert_eq!(sink.record(op(1)), 0);
        assert_eq!(sink.record(op(2)), 1);
        sink.flush();
        let text = std::fs::read_to_string(&path).unwrap();
        let ops: Vec<Op> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(ops.len(), 2);
        assert_eq!((ops[0].index, ops[1].index), (0, 1));
        assert!(ops[0].time <= ops[1].time);
        assert_eq!(sink.finish(), None);
    }

    #[test]
    fn concurrent_recording_gives_unique_dense_indices_and_monotonic_times() {
        let dir = tempfile::tempdir().unwrap();
        let sink = std::sync::Arc::new(JsonlSink::create(&dir.path().join("h.jsonl")).unwrap());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let s = sink.clone();
                std::thread::spawn(move || {
                    (0..250).for_each(|_| {
                        let _ = s.record(op(t));
                        let _ = s.record(done(t));
                    })
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        sink.flush();
        let ops = sink.read_back().unwrap().ops;
        assert_eq!(ops.len(), 2000);
        for (i, w) in ops.windows(2).enumerate() {
            assert_eq!(w[0].index, i as u64);
            assert!(w[0].time <= w[1].time);
        }
    }

    #[test]
    fn hot_keys_rank_repeated_recent_keys_and_leave_out_keys_seen_once() {
        let dir = tempfile::tempdir().unwrap();
        let sink = JsonlSink::create(&dir.path().join("h.jsonl")).unwrap();
        assert_eq!(sink.hottest_key(), None);
        assert!(sink.hot_keys().is_empty());
        for key in ["x", "y"] {
            let mut o = op(1);
            o.key = Some(key.into());
            sink.record(o);
        }
        assert_eq!(
            sink.hot_keys(),
            ["y"],
            "no key repeats: the most recent one"
        );
        for key in ["a", "b", "b", "c", "b", "a", "d", "e", "e"] {
            let mut o = op(1);
            o.key = Some(key.into());
            sink.record(o);
        }
        assert_eq!(sink.hottest_key().as_deref(), Some("b"));
        assert_eq!(
            sink.hot_keys(),
            ["b", "e", "a"],
            "ties go to the most recent; c and d were seen once"
        );
    }

    #[test]
    fn a_transaction_heats_every_key_of_its_micro_ops() {
        let dir = tempfile::tempdir().unwrap();
        let sink = JsonlSink::create(&dir.path().join("h.jsonl")).unwrap();
        for (p, value) in [
            (
                1,
                serde_json::json!([["append", "la/1", 1], ["r", "la/2", null]]),
            ),
            (2, serde_json::json!([["r", "la/2", null]])),
        ] {
            let mut o = op(p);
            o.f = analysis::ops::TXN.into();
            o.key = None;
            o.value = value;
            sink.record(o);
        }
        assert_eq!(sink.hot_keys(), ["la/2"], "la/2 twice, la/1 once");
        assert_eq!(
            sink.in_flight_txns(),
            [
                (0, vec!["la/1".to_string(), "la/2".to_string()]),
                (1, vec!["la/2".to_string()])
            ]
        );
        let mut done = op(2);
        (done.kind, done.f, done.key, done.value) = (
            OpType::Ok,
            analysis::ops::TXN.into(),
            None,
            serde_json::json!([["r", "la/2", []]]),
        );
        sink.record(done);
        assert_eq!(
            sink.in_flight_txns(),
            [(0, vec!["la/1".to_string(), "la/2".to_string()])],
            "process 2's completion ends its transaction"
        );
    }

    #[test]
    fn a_failing_disk_keeps_every_entry_in_memory() {
        // /dev/full accepts the open and fails every write with ENOSPC.
        let Ok(sink) = JsonlSink::create(Path::new("/dev/full")) else {
            return;
        };
        for p in 0..10_000 {
            sink.record(op(p));
        }
        sink.flush();
        assert_eq!(sink.len(), 10_000);
        assert_eq!(sink.held_in_memory(), 10_000, "nothing reached the disk");
        assert!(sink.finish().is_some(), "the write error must be reported");
    }

    #[test]
    fn flushed_entries_leave_memory_and_are_read_back_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let sink = JsonlSink::create(&dir.path().join("h.jsonl")).unwrap();
        for p in 0..100_000 {
            sink.record(op(p % 50));
            sink.record(done(p % 50));
        }
        sink.flush();
        assert_eq!(
            sink.held_in_memory(),
            0,
            "a flushed entry is only in the file"
        );
        for p in 0..3 {
            sink.record(op(p));
        }
        assert!(sink.held_in_memory() <= 3);
        assert_eq!(sink.finish(), None);
        assert_eq!(sink.held_in_memory(), 0);
        let ops = sink.read_back().unwrap().ops;
        assert_eq!(ops.len(), 200_003);
        assert!(ops.iter().enumerate().all(|(i, o)| o.index == i as u64));
    }

    #[test]
    fn entries_after_a_write_error_are_appended_to_the_flushed_part_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.jsonl");
        let sink = JsonlSink::create(&path).unwrap();
        for p in 0..10 {
            sink.record(op(p));
        }
        sink.flush();
        {
            // The disk fails: the writer loses its file.
            let mut inner = sink.lock();
            note_error(&mut inner, std::io::Error::other("disk full"));
        }
        for p in 10..25 {
            sink.record(op(p));
        }
        assert_eq!(sink.held_in_memory(), 15);
        let before = sink.read_back().unwrap().ops;
        assert_eq!(
            before.len(),
            25,
            "the flushed part from the file, the rest from memory"
        );
        assert_eq!(
            sink.finish(),
            None,
            "the entries held in memory were written"
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let values: Vec<u64> = text
            .lines()
            .map(|l| {
                serde_json::from_str::<Op>(l)
                    .unwrap()
                    .value
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert_eq!(values, (0..25).collect::<Vec<u64>>());
    }
}

//! The run's history sink: assigns each entry its index and its time (nanoseconds since the
//! test started, on a monotonic clock), keeps every entry in memory for the analysis and
//! streams it to `history.jsonl` as one JSON line. The file is flushed at most
//! [`FLUSH_EVERY`] after a write (and on [`JsonlSink::flush`]), so it can be followed while
//! the test runs. A failing disk never loses an entry: it stays in memory, the error is
//! reported, and [`JsonlSink::finish`] tries to rewrite the whole file at the end.

use super::op_chunks::OpChunks;
use analysis::history::{HistorySink, Op};
use std::fs::File;
use std::io::{BufWriter, Write};
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
    ops: OpChunks,
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
                ops: OpChunks::default(),
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
        self.lock().ops.len()
    }

    /// Whether nothing is recorded yet.
    pub fn is_empty(&self) -> bool {
        self.lock().ops.is_empty()
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

    /// A copy of the entries recorded so far (for the analysis and tests).
    pub fn snapshot(&self) -> Vec<Op> {
        self.lock().ops.to_vec()
    }

    /// Flushes and closes the file. If writing ever failed, rewrites the whole history from
    /// memory. Returns the write error that remains, if any.
    pub fn finish(&self) -> Option<String> {
        let mut inner = self.lock();
        flush_inner(&mut inner);
        inner.writer = None;
        if inner.write_error.is_some() {
            match rewrite(&self.path, &inner.ops) {
                Ok(()) => {
                    tracing::warn!("history.jsonl was rewritten from memory after a write error");
                    inner.write_error = None;
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
        return vec![k.clone()];
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
        if let Err(e) = w.flush() {
            note_error(inner, e);
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

fn rewrite(path: &Path, ops: &OpChunks) -> std::io::Result<()> {
    let mut w = BufWriter::new(File::create(path)?);
    for op in ops.iter() {
        serde_json::to_writer(&mut w, op)?;
        w.write_all(b"\n")?;
    }
    w.flush()
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
            let written = serde_json::to_writer(&mut *w, &op)
                .map_err(std::io::Error::from)
                .and_then(|()| w.write_all(b"\n"));
            if let Err(e) = written {
                note_error(&mut inner, e);
            }
        }
        if inner.last_flush.elapsed() >= FLUSH_EVERY {
            flush_inner(&mut inner);
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
        inner.ops.push(op);
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
                    (0..500).for_each(|_| {
                        let _ = s.record(op(t));
                    })
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let ops = sink.snapshot();
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
        assert!(sink.finish().is_some(), "the write error must be reported");
    }
}

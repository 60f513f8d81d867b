//! Tracing for a run: everything at `info` (or `RUST_LOG`) into the run's `faultline.log`,
//! and the same events on stderr, printed around the progress bar so they do not tear it.

use indicatif::ProgressBar;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

static BAR: OnceLock<Mutex<Option<ProgressBar>>> = OnceLock::new();

/// Makes stderr log lines print above `bar` while it is shown (`None` hides it again).
pub fn set_bar(bar: Option<ProgressBar>) {
    if let Ok(mut g) = BAR.get_or_init(|| Mutex::new(None)).lock() {
        *g = bar;
    }
}

/// Writes one formatted event to stderr, suspending the progress bar around it.
pub struct StderrAroundBar(Vec<u8>);

impl Write for StderrAroundBar {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for StderrAroundBar {
    fn drop(&mut self) {
        let text = std::mem::take(&mut self.0);
        let print = || {
            let _ = std::io::stderr().write_all(&text);
        };
        let bar = BAR
            .get()
            .and_then(|m| m.lock().ok())
            .and_then(|g| g.clone());
        match bar {
            Some(b) => b.suspend(print),
            None => print(),
        }
    }
}

#[derive(Clone, Copy)]
struct StderrMaker;

impl<'a> MakeWriter<'a> for StderrMaker {
    type Writer = StderrAroundBar;
    fn make_writer(&'a self) -> Self::Writer {
        StderrAroundBar(Vec::new())
    }
}

#[derive(Clone)]
struct FileMaker(Arc<Mutex<std::fs::File>>);

struct FileWriter(Arc<Mutex<std::fs::File>>);

impl Write for FileWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.0.lock() {
            Ok(mut f) => f.write(buf),
            Err(_) => Ok(buf.len()),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for FileMaker {
    type Writer = FileWriter;
    fn make_writer(&'a self) -> Self::Writer {
        FileWriter(self.0.clone())
    }
}

/// Installs the global subscriber: `log_file` gets everything at the filter level, stderr
/// gets the same with less decoration. Safe to call once per process; later calls are no-ops.
pub fn init(log_file: &Path) -> anyhow::Result<()> {
    let file = std::fs::File::create(log_file)
        .map_err(|e| anyhow::anyhow!("creating {}: {e}", log_file.display()))?;
    let filter = || {
        EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| EnvFilter::new("info,h2=warn,tower=warn,hyper=warn"))
    };
    let file_layer = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_writer(FileMaker(Arc::new(Mutex::new(file))))
        .with_filter(filter());
    let stderr_layer = tracing_subscriber::fmt::layer()
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(StderrMaker)
        .with_filter(filter());
    let _ = tracing_subscriber::registry()
        .with(file_layer)
        .with(stderr_layer)
        .try_init();
    Ok(())
}

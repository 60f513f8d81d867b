//! Reading and writing histories on disk.
//!
//! faultline's own format is JSON Lines ([`jsonl`], documented in
//! `docs/history-format.md`). For checking other people's histories it also reads the
//! Jepsen log lines of `jepsen.util` ([`jepsen_log`]), Knossos EDN op vectors ([`edn_ops`])
//! and Porcupine's kv Clojure-map lines ([`porcupine_kv`]); [`detect`] tells them apart.
//!
//! Every reader produces a [`History`] plus a [`ParseReport`] of tolerated problems, or a
//! [`FormatError`] naming the source, the line and what was wrong. All readers run the
//! same structural checks ([`validate::Validator`]): indices strictly increase, and each
//! client process alternates invoke / completion.

pub mod detect;
pub mod edn;
pub mod edn_ops;
pub mod edn_write;
pub mod foreign;
pub mod jepsen_log;
pub mod jsonl;
pub mod porcupine_kv;
pub mod txn_check;
pub mod txn_json;
pub mod validate;

use crate::history::History;
use std::fmt;
use std::io::Read;
use std::path::Path;

/// The on-disk formats faultline reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// faultline's JSON Lines, one op per line.
    Jsonl,
    /// `INFO  jepsen.util - 3<TAB>:ok<TAB>:read<TAB>4` lines (etcd Jepsen logs).
    JepsenLog,
    /// A Knossos/Jepsen EDN vector (or list) of op maps.
    Edn,
    /// Porcupine's kv test data: one Clojure op map per line.
    PorcupineKv,
}

impl Format {
    pub const ALL: [Format; 4] = [
        Format::Jsonl,
        Format::JepsenLog,
        Format::Edn,
        Format::PorcupineKv,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::JepsenLog => "jepsen-log",
            Format::Edn => "edn",
            Format::PorcupineKv => "porcupine-kv",
        }
    }

    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The register value a history of this format starts from when nothing says
    /// otherwise: Jepsen's etcd runs start absent, Knossos' tests at 0, Porcupine's kv
    /// keys at the empty string, faultline's own stores absent.
    pub fn default_initial(self) -> serde_json::Value {
        match self {
            Format::Jsonl | Format::JepsenLog => serde_json::Value::Null,
            Format::Edn => serde_json::Value::from(0),
            Format::PorcupineKv => serde_json::Value::from(""),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a history could not be read: the source (usually a file path), the 1-based line,
/// and what was wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    pub source: String,
    /// 0 when the problem is not tied to a line (e.g. the file could not be opened).
    pub line: usize,
    pub message: String,
}

impl FormatError {
    pub fn new(source: &str, line: usize, message: impl Into<String>) -> Self {
        FormatError {
            source: source.to_string(),
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.source, self.message)
        } else {
            write!(f, "{}:{}: {}", self.source, self.line, self.message)
        }
    }
}

impl std::error::Error for FormatError {}

/// Problems a reader tolerated (a truncated last line, skipped noise), and what it read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParseReport {
    /// Human-readable warnings, each naming its line.
    pub warnings: Vec<String>,
    /// Number of history entries read.
    pub ops: usize,
    /// Lines skipped as noise (foreign log formats only).
    pub skipped_lines: usize,
    /// True if the last line was dropped: it had no newline, so it may have been cut short
    /// (e.g. the writer crashed); for EDN, the file ended inside an op or its vector.
    pub truncated_last_line: bool,
    /// The 1-based line each history entry was read from, by position.
    pub op_lines: Vec<u32>,
}

impl ParseReport {
    /// The line the entry at `position` in the history came from.
    pub fn line_of(&self, position: usize) -> Option<usize> {
        self.op_lines.get(position).map(|&l| l as usize)
    }
}

/// The warning of a line-based reader (JSON Lines, Jepsen log, Porcupine kv) that dropped
/// the input's last line, `line`, because it has no newline. Such a line may be a longer
/// line cut short by a writer that crashed, and a cut line can still parse (`:read 4` cut
/// from `:read 42`), so it is never trusted, whatever it parses to — also when the writer
/// merely omitted the final newline. `docs/history-format.md` quotes this text.
pub fn unterminated_last_line_warning(source: &str, line: usize) -> String {
    format!(
        "{source}:{line}: dropped the last line because it has no newline: it may have been cut short, \
         so it is never trusted (end every line, the last one too, with a newline)"
    )
}

/// How a reader keeps the micro-ops of client transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TxnForm {
    /// In each op's `value`, as JSON (what the file holds).
    #[default]
    Json,
    /// In the history's compact [`crate::history::txn_table::TxnTable`], the op's `value`
    /// left `null` (JSON Lines and EDN; the other formats keep JSON): a fraction of the memory.
    Compact,
}

/// A history read from disk, with the format it was in.
#[derive(Debug, Clone)]
pub struct LoadedHistory {
    pub history: History,
    pub format: Format,
    pub report: ParseReport,
}

/// Parses `text` in `format`; `source` names it in errors (usually the file path).
pub fn parse_str(text: &str, format: Format, source: &str) -> Result<LoadedHistory, FormatError> {
    parse_str_as(text, format, source, TxnForm::Json)
}

/// [`parse_str`], keeping a JSON Lines or EDN history's transactions in `form`.
pub fn parse_str_as(
    text: &str,
    format: Format,
    source: &str,
    form: TxnForm,
) -> Result<LoadedHistory, FormatError> {
    let (history, report) = match format {
        Format::Jsonl => jsonl::read_history_parallel_as(text.as_bytes(), source, form)?,
        Format::JepsenLog => jepsen_log::parse(text, source)?,
        Format::Edn => edn_ops::parse_as(text, source, form)?,
        Format::PorcupineKv => porcupine_kv::parse(text, source)?,
    };
    Ok(LoadedHistory {
        history,
        format,
        report,
    })
}

/// Reads a history file. `format` `None` means detect it from the content (and the file
/// extension as a hint). JSON Lines files are read in batches parsed on all cores.
pub fn load_file(path: &Path, format: Option<Format>) -> Result<LoadedHistory, FormatError> {
    load_file_as(path, format, TxnForm::Json)
}

/// [`load_file`], keeping a JSON Lines history's transactions in `form`.
pub fn load_file_as(
    path: &Path,
    format: Option<Format>,
    form: TxnForm,
) -> Result<LoadedHistory, FormatError> {
    let source = path.display().to_string();
    let io_error = |e: std::io::Error| FormatError::new(&source, 0, format!("cannot read: {e}"));
    let mut file = std::fs::File::open(path).map_err(io_error)?;
    let mut head = Vec::with_capacity(detect::SNIFF_BYTES);
    (&mut file)
        .take(detect::SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(io_error)?;
    let format = match format {
        Some(f) => f,
        None => {
            let head_text = String::from_utf8_lossy(&head);
            detect::detect(&head_text, path).ok_or_else(|| {
                FormatError::new(
                    &source,
                    0,
                    "cannot tell the history format from the content; pass --format jsonl|jepsen-log|edn|porcupine-kv",
                )
            })?
        }
    };
    if format == Format::Jsonl {
        // Decoded line by line, so invalid UTF-8 is reported at its line.
        let (history, report) =
            jsonl::read_history_parallel_as(std::io::Cursor::new(head).chain(file), &source, form)?;
        return Ok(LoadedHistory {
            history,
            format,
            report,
        });
    }
    let mut bytes = head;
    // Sized once: growing by doubling would copy a large file several times.
    let size = file.metadata().map_or(0, |m| m.len() as usize);
    bytes.reserve_exact((size + 1).saturating_sub(bytes.len()));
    file.read_to_end(&mut bytes).map_err(io_error)?;
    let text = decode_utf8(&bytes, &source)?;
    parse_str_as(text, format, &source, form)
}

/// Decodes UTF-8, reporting the line of the first invalid byte.
pub fn decode_utf8<'a>(bytes: &'a [u8], source: &str) -> Result<&'a str, FormatError> {
    std::str::from_utf8(bytes).map_err(|e| {
        let line = 1 + bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        FormatError::new(source, line, "invalid UTF-8")
    })
}

//! The fast path of the EDN history reader: an op map in the shape Jepsen and Elle write
//! (`{:type :ok, :f :txn, :value [[:append 1 2] [:r 1 [1 2]]], :process 0, :time 5, :index
//! 7}`) read byte by byte straight into an op's fields, a transaction's `:value` straight
//! into micro-ops, with no [`Edn`] tree and no string allocated for keywords.
//!
//! Invariant: [`EdnReader::read_op_fast`] returns `Some` only for a map that the generic
//! path ([`EdnReader::next_element`] then `op_from_map`) reads into the same op, and a
//! transaction's micro-ops only when `parse_txn` of the value's JSON form gives the same
//! micro-ops. Anything else — comments or discards inside the map, duplicate or non-keyword
//! keys, string escapes, numbers that are not plain integers, sets, tags, non-ASCII outside
//! strings, any syntax error — makes it return `None` with the reader where it was, and the
//! generic path reads the form and says exactly what is wrong.

use super::{Edn, EdnReader};
use crate::history::txn::{MicroOp, MopKind, MopValue, TxnScalar};
use crate::history::{OpType, Process};

/// An op map read by the fast path.
pub(crate) struct FastOp<'a> {
    pub process: Process,
    pub kind: OpType,
    pub f: &'a str,
    pub key: Option<String>,
    pub value: FastValue,
    pub error: Option<&'a str>,
    pub time: Option<u64>,
}

/// An op's `:value`: micro-ops when it reads as a transaction, else the generic form.
pub(crate) enum FastValue {
    Mops(Vec<MicroOp>),
    Edn(Edn),
}

/// A scalar token: a plain integer, a keyword's name or a string without escapes.
#[derive(Clone, Copy)]
enum Atom<'a> {
    Int(i64),
    Keyword(&'a str),
    Str(&'a str),
    Nil,
}

/// The map keys the fast path reads, by their bit in the set of keys seen (0: another
/// key, whose value is skipped).
const TYPE: u8 = 1;
const PROCESS: u8 = 1 << 1;
const F: u8 = 1 << 2;
const TIME: u8 = 1 << 3;
const ERROR: u8 = 1 << 4;
const KEY: u8 = 1 << 5;
const VALUE: u8 = 1 << 6;

fn key_bit(name: &str) -> u8 {
    match name {
        "type" => TYPE,
        "process" => PROCESS,
        "f" => F,
        "time" => TIME,
        "error" => ERROR,
        "key" => KEY,
        "value" => VALUE,
        _ => 0,
    }
}

impl<'a> EdnReader<'a> {
    /// Reads the next form as an op map if it has the common shape (the map itself at
    /// nesting `depth`), after skipping plain whitespace; `None` leaves the reader where
    /// the form starts, for the generic path. Returns the line the map starts on.
    pub(crate) fn read_op_fast(&mut self, depth: usize) -> Option<(usize, FastOp<'a>)> {
        self.skip_plain_space();
        let (pos, line) = (self.pos, self.line);
        let op = self.op_map(depth);
        if op.is_none() {
            (self.pos, self.line) = (pos, line);
        }
        op.map(|op| (line, op))
    }

    fn byte(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    /// Skips spaces, tabs, newlines and commas (never comments or discards).
    fn skip_plain_space(&mut self) {
        while let Some(b) = self.byte() {
            match b {
                b'\n' => self.line += 1,
                b' ' | b',' | b'\t' | b'\r' | 0x0b | 0x0c => {}
                _ => return,
            }
            self.pos += 1;
        }
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.byte() == Some(b)).then(|| self.pos += 1)
    }

    fn op_map(&mut self, depth: usize) -> Option<FastOp<'a>> {
        self.eat(b'{')?;
        let mut seen = 0u8;
        let (mut kind, mut process, mut f) = (None, None, None);
        let (mut time, mut error, mut key, mut value) = (None, None, None, None);
        loop {
            self.skip_plain_space();
            if self.eat(b'}').is_some() {
                break;
            }
            let name = match self.atom()? {
                Atom::Keyword(k) => k,
                _ => return None,
            };
            self.skip_plain_space();
            let bit = key_bit(name);
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            match bit {
                TYPE => kind = Some(op_type(self.atom()?)?),
                PROCESS => process = Some(process_of(self.atom()?)?),
                F => match self.atom()? {
                    Atom::Keyword(s) | Atom::Str(s) => f = Some(s),
                    _ => return None,
                },
                TIME => match self.atom()? {
                    Atom::Nil => {}
                    Atom::Int(t) if t >= 0 => time = Some(t as u64),
                    _ => return None,
                },
                ERROR => match self.atom()? {
                    Atom::Nil => {}
                    Atom::Keyword(s) | Atom::Str(s) => error = Some(s),
                    Atom::Int(_) => return None,
                },
                KEY => match self.atom()? {
                    Atom::Nil => {}
                    Atom::Keyword(s) | Atom::Str(s) => key = Some(s.to_string()),
                    Atom::Int(i) => key = Some(i.to_string()),
                },
                VALUE => value = Some(self.op_value(depth + 1)?),
                _ => self.skip_value(depth + 1)?,
            }
        }
        Some(FastOp {
            process: process?,
            kind: kind?,
            f: f?,
            key,
            value: value.unwrap_or(FastValue::Edn(Edn::Nil)),
            error,
            time,
        })
    }

    /// Skips the value of a key the fast path does not read (`:index`, `:node`, ...): a
    /// plain atom directly, anything else as a generic form at `depth`.
    fn skip_value(&mut self, depth: usize) -> Option<()> {
        let (pos, line) = (self.pos, self.line);
        if self.atom().is_some() && self.at_delimiter() {
            return Some(());
        }
        (self.pos, self.line) = (pos, line);
        self.closing_or_form(depth).map(|_| ())
    }

    /// Whether the cursor is at the end of the text or at an ASCII byte that ends a token.
    fn at_delimiter(&self) -> bool {
        self.byte().is_none_or(|b| STOPS[b as usize] && b < 0x80)
    }

    /// Reads a generic form at `depth` (never a closing bracket); `None` on any error.
    fn closing_or_form(&mut self, depth: usize) -> Option<Edn> {
        if matches!(self.byte(), Some(b'}' | b']' | b')') | None) {
            return None;
        }
        self.read_form(depth).ok()
    }

    /// An op's value: micro-ops when it reads as a transaction, else the generic form.
    fn op_value(&mut self, depth: usize) -> Option<FastValue> {
        let (pos, line) = (self.pos, self.line);
        if let Some(mops) = self.mops() {
            return Some(FastValue::Mops(mops));
        }
        (self.pos, self.line) = (pos, line);
        self.closing_or_form(depth).map(FastValue::Edn)
    }

    /// `[` or `(`: returns the byte that closes it.
    fn open_seq(&mut self) -> Option<u8> {
        let close = match self.byte()? {
            b'[' => b']',
            b'(' => b')',
            _ => return None,
        };
        self.pos += 1;
        Some(close)
    }

    /// True (consumed) if `close` comes next after plain space.
    fn closes(&mut self, close: u8) -> bool {
        self.skip_plain_space();
        self.eat(close).is_some()
    }

    fn mops(&mut self) -> Option<Vec<MicroOp>> {
        let close = self.open_seq()?;
        let mut mops = Vec::with_capacity(4);
        while !self.closes(close) {
            mops.push(self.mop()?);
        }
        Some(mops)
    }

    /// `[function key value]`, as `parse_txn` reads its JSON form.
    fn mop(&mut self) -> Option<MicroOp> {
        let close = self.open_seq()?;
        self.skip_plain_space();
        let kind = match self.atom()? {
            Atom::Keyword("append") | Atom::Str("append") => MopKind::Append,
            Atom::Keyword("r") | Atom::Str("r") => MopKind::Read,
            Atom::Keyword("w") | Atom::Str("w") => MopKind::Write,
            _ => return None,
        };
        self.skip_plain_space();
        let key = scalar(self.atom()?)?;
        self.skip_plain_space();
        let value = match (kind, self.byte()?) {
            (MopKind::Read, b'[' | b'(') => MopValue::List(self.scalar_list()?),
            (MopKind::Read, _) => match self.atom()? {
                Atom::Nil => MopValue::Null,
                a => MopValue::Scalar(scalar(a)?),
            },
            _ => MopValue::Scalar(scalar(self.atom()?)?),
        };
        self.closes(close).then_some(MicroOp { kind, key, value })
    }

    fn scalar_list(&mut self) -> Option<Vec<TxnScalar>> {
        let close = self.open_seq()?;
        let mut items = std::mem::take(&mut self.scratch);
        items.clear();
        let mut ok = true;
        while !self.closes(close) {
            match self.atom().and_then(scalar) {
                Some(s) => items.push(s),
                None => {
                    ok = false;
                    break;
                }
            }
        }
        // Copied out, so the scratch buffer keeps its capacity and the list its exact length.
        #[allow(clippy::drain_collect)]
        let list = ok.then(|| items.drain(..).collect());
        self.scratch = items;
        list
    }

    /// A plain integer, `nil`, a keyword or a string without escapes.
    fn atom(&mut self) -> Option<Atom<'a>> {
        let text = self.text;
        match self.byte()? {
            b'"' => {
                let start = self.pos + 1;
                let len = text.as_bytes()[start..]
                    .iter()
                    .position(|&b| b == b'"' || b == b'\\')?;
                let end = start + len;
                if text.as_bytes()[end] != b'"' {
                    return None;
                }
                let s = &text[start..end];
                self.line += s.bytes().filter(|&b| b == b'\n').count();
                self.pos = end + 1;
                Some(Atom::Str(s))
            }
            b':' => {
                self.pos += 1;
                let name = self.token()?;
                (!name.is_empty()).then_some(Atom::Keyword(name))
            }
            _ => {
                if let Some(i) = self.int() {
                    return Some(Atom::Int(i));
                }
                match self.token()? {
                    "nil" => Some(Atom::Nil),
                    t => plain_int(t).map(Atom::Int),
                }
            }
        }
    }

    /// The ASCII token at the cursor, up to a delimiter; `None` at a non-ASCII byte.
    fn token(&mut self) -> Option<&'a str> {
        let bytes = &self.text.as_bytes()[self.pos..];
        let len = bytes
            .iter()
            .position(|&b| STOPS[b as usize])
            .unwrap_or(bytes.len());
        if bytes.get(len).is_some_and(|&b| b >= 0x80) {
            return None;
        }
        let t = &self.text[self.pos..self.pos + len];
        self.pos += len;
        Some(t)
    }

    /// A plain integer (`-?[0-9]+` fitting an `i64`, then a delimiter) read in one pass;
    /// `None`, the cursor unmoved, for anything else.
    fn int(&mut self) -> Option<i64> {
        let bytes = &self.text.as_bytes()[self.pos..];
        let negative = bytes.first() == Some(&b'-');
        let digits = &bytes[usize::from(negative)..];
        let n = digits.iter().take_while(|b| b.is_ascii_digit()).count();
        let ends_token = digits.get(n).is_none_or(|&b| STOPS[b as usize] && b < 0x80);
        if n == 0 || n > 19 || !ends_token {
            return None;
        }
        let magnitude = digits[..n]
            .iter()
            .fold(0u64, |acc, &d| acc * 10 + u64::from(d - b'0'));
        let value = if negative {
            0i64.checked_sub_unsigned(magnitude)?
        } else {
            i64::try_from(magnitude).ok()?
        };
        self.pos += usize::from(negative) + n;
        Some(value)
    }
}

/// The bytes that end a token as the generic reader ends it (whitespace, commas, brackets,
/// quotes, comments), and every non-ASCII byte, where the fast path stops.
static STOPS: [bool; 256] = {
    let mut t = [false; 256];
    let ascii = b" \n\t\r\x0b\x0c,()[]{}\";";
    let mut i = 0;
    while i < ascii.len() {
        t[ascii[i] as usize] = true;
        i += 1;
    }
    let mut b = 0x80;
    while b < 256 {
        t[b] = true;
        b += 1;
    }
    t
};

/// `-?[0-9]+` fitting an `i64`.
fn plain_int(t: &str) -> Option<i64> {
    let digits = t.strip_prefix('-').unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// A key, written value or list element: keywords and strings are strings, as in JSON.
fn scalar(a: Atom<'_>) -> Option<TxnScalar> {
    match a {
        Atom::Int(i) => Some(TxnScalar::Int(i)),
        Atom::Keyword(s) | Atom::Str(s) => Some(TxnScalar::Str(s.to_string())),
        Atom::Nil => None,
    }
}

fn op_type(a: Atom<'_>) -> Option<OpType> {
    match a {
        Atom::Keyword(k) | Atom::Str(k) => match k {
            "invoke" => Some(OpType::Invoke),
            "ok" => Some(OpType::Ok),
            "fail" => Some(OpType::Fail),
            "info" => Some(OpType::Info),
            _ => None,
        },
        _ => None,
    }
}

fn process_of(a: Atom<'_>) -> Option<Process> {
    match a {
        Atom::Int(p) if p >= 0 => Some(Process::Client(p as u64)),
        Atom::Keyword("nemesis") | Atom::Str("nemesis") => Some(Process::Nemesis),
        Atom::Keyword("watcher") | Atom::Str("watcher") => Some(Process::Watcher),
        _ => None,
    }
}

//! A small reader for the subset of EDN that Jepsen and Knossos histories use: maps,
//! vectors, lists, sets, keywords, symbols, strings, numbers, characters, `nil`,
//! `true`/`false`, tagged literals (`#inst "..."` — the tag is kept, the value read), the
//! discard form `#_`, `;` comments and commas as whitespace.
//!
//! It never panics on garbage: every problem is an [`EdnError`] with the line where it
//! was found, and nesting is bounded so that `[[[[...` cannot overflow the stack.

use crate::history::txn::TxnScalar;
use std::fmt;

mod fast;
pub(crate) use fast::{FastOp, FastValue};

/// A parsed EDN value.
#[derive(Debug, Clone, PartialEq)]
pub enum Edn {
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Char(char),
    /// A keyword, without its leading colon (`:ok` is `Keyword("ok")`).
    Keyword(String),
    Symbol(String),
    List(Vec<Edn>),
    Vector(Vec<Edn>),
    Set(Vec<Edn>),
    Map(Vec<(Edn, Edn)>),
    Tagged(String, Box<Edn>),
}

impl Edn {
    /// The value under keyword `key` if this is a map.
    pub fn get(&self, key: &str) -> Option<&Edn> {
        match self {
            Edn::Map(entries) => entries.iter().find_map(|(k, v)| match k {
                Edn::Keyword(name) if name == key => Some(v),
                _ => None,
            }),
            _ => None,
        }
    }

    /// A short name of the value's type for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Edn::Nil => "nil",
            Edn::Bool(_) => "boolean",
            Edn::Int(_) => "integer",
            Edn::Float(_) => "float",
            Edn::Str(_) => "string",
            Edn::Char(_) => "character",
            Edn::Keyword(_) => "keyword",
            Edn::Symbol(_) => "symbol",
            Edn::List(_) => "list",
            Edn::Vector(_) => "vector",
            Edn::Set(_) => "set",
            Edn::Map(_) => "map",
            Edn::Tagged(..) => "tagged value",
        }
    }

    /// The JSON value faultline stores for this EDN value: keywords and symbols become
    /// strings without the colon, lists and sets become arrays, map keys become strings.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Edn::Nil => Value::Null,
            Edn::Bool(b) => Value::Bool(*b),
            Edn::Int(i) => Value::from(*i),
            Edn::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Edn::Str(s) | Edn::Keyword(s) | Edn::Symbol(s) => Value::String(s.clone()),
            Edn::Char(c) => Value::String(c.to_string()),
            Edn::List(items) | Edn::Vector(items) | Edn::Set(items) => {
                Value::Array(items.iter().map(Edn::to_json).collect())
            }
            Edn::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.as_map_key(), v.to_json()))
                    .collect(),
            ),
            Edn::Tagged(_, inner) => inner.to_json(),
        }
    }

    fn as_map_key(&self) -> String {
        match self {
            Edn::Str(s) | Edn::Keyword(s) | Edn::Symbol(s) => s.clone(),
            other => other.to_string(),
        }
    }
}

impl fmt::Display for Edn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn seq(f: &mut fmt::Formatter<'_>, open: &str, items: &[Edn], close: &str) -> fmt::Result {
            f.write_str(open)?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(" ")?;
                }
                write!(f, "{item}")?;
            }
            f.write_str(close)
        }
        match self {
            Edn::Nil => f.write_str("nil"),
            Edn::Bool(b) => write!(f, "{b}"),
            Edn::Int(i) => write!(f, "{i}"),
            Edn::Float(x) => write!(f, "{x}"),
            Edn::Str(s) => write!(f, "{s:?}"),
            Edn::Char(c) => write!(f, "\\{c}"),
            Edn::Keyword(k) => write!(f, ":{k}"),
            Edn::Symbol(s) => f.write_str(s),
            Edn::List(items) => seq(f, "(", items, ")"),
            Edn::Vector(items) => seq(f, "[", items, "]"),
            Edn::Set(items) => seq(f, "#{", items, "}"),
            Edn::Map(entries) => {
                f.write_str("{")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k} {v}")?;
                }
                f.write_str("}")
            }
            Edn::Tagged(tag, inner) => write!(f, "#{tag} {inner}"),
        }
    }
}

/// A syntax error, with the 1-based line where it was detected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct EdnError {
    pub line: usize,
    pub message: String,
    /// The input ended inside a form (a truncated file rather than garbage).
    pub at_end_of_input: bool,
}

/// Deeper nesting than this is refused rather than risking the stack.
const MAX_DEPTH: usize = 200;

/// Reads EDN forms one after another from a string, tracking line numbers.
pub struct EdnReader<'a> {
    text: &'a str,
    pos: usize,
    line: usize,
    /// The buffer the fast path gathers read lists in.
    scratch: Vec<TxnScalar>,
}

impl<'a> EdnReader<'a> {
    pub fn new(text: &'a str) -> Self {
        EdnReader {
            text,
            pos: 0,
            line: 1,
            scratch: Vec::new(),
        }
    }

    /// The current 1-based line (where the next form would start after whitespace).
    pub fn line(&self) -> usize {
        self.line
    }

    /// Skips whitespace, commas, comments and `#_` discards; true if a form follows.
    pub fn has_more(&mut self) -> Result<bool, EdnError> {
        self.skip_ignorable(0)?;
        Ok(self.pos < self.text.len())
    }

    /// Reads the next top-level form, or `None` at the end of the input.
    pub fn next_form(&mut self) -> Option<Result<(usize, Edn), EdnError>> {
        match self.has_more() {
            Ok(false) => None,
            Ok(true) => {
                let line = self.line;
                Some(self.read_form(0).map(|v| (line, v)))
            }
            Err(e) => Some(Err(e)),
        }
    }

    /// If the next form opens a vector or list, consumes the opening bracket and returns
    /// the closing one to expect; used to stream the elements of a top-level collection.
    pub fn open_collection(&mut self) -> Result<Option<char>, EdnError> {
        self.skip_ignorable(0)?;
        match self.peek() {
            Some('[') => {
                self.bump();
                Ok(Some(']'))
            }
            Some('(') => {
                self.bump();
                Ok(Some(')'))
            }
            _ => Ok(None),
        }
    }

    /// Reads the next element of a collection opened by [`Self::open_collection`], or
    /// `None` once `close` is consumed.
    pub fn next_element(&mut self, close: char) -> Option<Result<(usize, Edn), EdnError>> {
        if let Err(e) = self.skip_ignorable(1) {
            return Some(Err(e));
        }
        match self.peek() {
            None => Some(Err(self.eof_error(&format!(
                "expected `{close}` to close the top-level collection"
            )))),
            Some(c) if c == close => {
                self.bump();
                None
            }
            Some(_) => {
                let line = self.line;
                Some(self.read_form(1).map(|v| (line, v)))
            }
        }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn error(&self, message: impl Into<String>) -> EdnError {
        EdnError {
            line: self.line,
            message: message.into(),
            at_end_of_input: false,
        }
    }

    fn eof_error(&self, what: &str) -> EdnError {
        EdnError {
            line: self.line,
            message: format!("unexpected end of input: {what}"),
            at_end_of_input: true,
        }
    }

    fn skip_ignorable(&mut self, depth: usize) -> Result<(), EdnError> {
        loop {
            match self.peek() {
                Some(c) if c.is_whitespace() || c == ',' => {
                    self.bump();
                }
                Some(';') => {
                    while let Some(c) = self.bump() {
                        if c == '\n' {
                            break;
                        }
                    }
                }
                Some('#') if self.text[self.pos..].starts_with("#_") => {
                    self.pos += 2;
                    self.read_form(depth + 1)?;
                }
                _ => return Ok(()),
            }
        }
    }

    fn read_form(&mut self, depth: usize) -> Result<Edn, EdnError> {
        if depth > MAX_DEPTH {
            return Err(self.error(format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        self.skip_ignorable(depth)?;
        let Some(c) = self.peek() else {
            return Err(self.eof_error("expected a value"));
        };
        match c {
            '[' => {
                self.bump();
                self.read_seq(']', depth).map(Edn::Vector)
            }
            '(' => {
                self.bump();
                self.read_seq(')', depth).map(Edn::List)
            }
            '{' => {
                self.bump();
                self.read_map(depth)
            }
            '#' => self.read_dispatch(depth),
            '"' => {
                self.bump();
                self.read_string().map(Edn::Str)
            }
            ':' => {
                self.bump();
                let name = self.read_token();
                if name.is_empty() {
                    return Err(self.error("a lone `:` is not a keyword"));
                }
                Ok(Edn::Keyword(name.to_string()))
            }
            '\\' => {
                self.bump();
                self.read_char()
            }
            ']' | ')' | '}' => Err(self.error(format!("unexpected `{c}` with nothing to close"))),
            _ => {
                let token = self.read_token();
                if token.is_empty() {
                    self.bump();
                    return Err(self.error(format!("unexpected character {c:?}")));
                }
                Ok(parse_atom(token))
            }
        }
    }

    fn read_seq(&mut self, close: char, depth: usize) -> Result<Vec<Edn>, EdnError> {
        let mut items = Vec::new();
        loop {
            self.skip_ignorable(depth + 1)?;
            match self.peek() {
                None => return Err(self.eof_error(&format!("expected `{close}`"))),
                Some(c) if c == close => {
                    self.bump();
                    return Ok(items);
                }
                Some(_) => items.push(self.read_form(depth + 1)?),
            }
        }
    }

    fn read_map(&mut self, depth: usize) -> Result<Edn, EdnError> {
        let items = self.read_seq('}', depth)?;
        if items.len() % 2 != 0 {
            return Err(self.error("a map needs an even number of forms (key value pairs)"));
        }
        let mut entries = Vec::with_capacity(items.len() / 2);
        let mut it = items.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            entries.push((k, v));
        }
        Ok(Edn::Map(entries))
    }

    fn read_dispatch(&mut self, depth: usize) -> Result<Edn, EdnError> {
        self.bump(); // '#'
        match self.peek() {
            Some('{') => {
                self.bump();
                self.read_seq('}', depth).map(Edn::Set)
            }
            Some(c) if c.is_alphabetic() => {
                let tag = self.read_token().to_string();
                let inner = self.read_form(depth + 1)?;
                Ok(Edn::Tagged(tag, Box::new(inner)))
            }
            Some(c) => Err(self.error(format!("unsupported dispatch `#{c}`"))),
            None => Err(self.eof_error("expected a form after `#`")),
        }
    }

    fn read_token(&mut self) -> &'a str {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c.is_whitespace() || matches!(c, ',' | '(' | ')' | '[' | ']' | '{' | '}' | '"' | ';')
            {
                break;
            }
            self.bump();
        }
        &self.text[start..self.pos]
    }

    fn read_string(&mut self) -> Result<String, EdnError> {
        let mut out = String::new();
        loop {
            match self.bump() {
                None => return Err(self.eof_error("unterminated string")),
                Some('"') => return Ok(out),
                Some('\\') => match self.bump() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('r') => out.push('\r'),
                    Some('"') => out.push('"'),
                    Some('\\') => out.push('\\'),
                    Some('u') => out.push(self.read_unicode_escape()?),
                    Some(c) => return Err(self.error(format!("unknown string escape `\\{c}`"))),
                    None => return Err(self.eof_error("unterminated string")),
                },
                Some(c) => out.push(c),
            }
        }
    }

    fn read_unicode_escape(&mut self) -> Result<char, EdnError> {
        let end = self.pos + 4;
        let hex = self
            .text
            .get(self.pos..end)
            .ok_or_else(|| self.error("short \\u escape"))?;
        let code = u32::from_str_radix(hex, 16)
            .map_err(|_| self.error(format!("bad \\u escape {hex:?}")))?;
        self.pos = end;
        char::from_u32(code).ok_or_else(|| self.error(format!("\\u{hex} is not a character")))
    }

    fn read_char(&mut self) -> Result<Edn, EdnError> {
        let first = self
            .bump()
            .ok_or_else(|| self.eof_error("expected a character after `\\`"))?;
        let rest = self.read_token();
        let c = match (first, rest) {
            (c, "") => c,
            ('n', "ewline") => '\n',
            ('s', "pace") => ' ',
            ('t', "ab") => '\t',
            ('r', "eturn") => '\r',
            _ => return Err(self.error(format!("unknown character literal \\{first}{rest}"))),
        };
        Ok(Edn::Char(c))
    }
}

/// A token that is not a string, keyword or collection: a number, `nil`, a boolean or a
/// symbol.
fn parse_atom(token: &str) -> Edn {
    match token {
        "nil" => return Edn::Nil,
        "true" => return Edn::Bool(true),
        "false" => return Edn::Bool(false),
        _ => {}
    }
    let numeric = token.trim_end_matches(['N', 'M']);
    let starts_numeric = numeric
        .trim_start_matches(['+', '-'])
        .starts_with(|c: char| c.is_ascii_digit());
    if starts_numeric {
        if let Ok(i) = numeric.parse::<i64>() {
            return Edn::Int(i);
        }
        if let Ok(f) = numeric.parse::<f64>() {
            return Edn::Float(f);
        }
    }
    Edn::Symbol(token.to_string())
}

/// Parses a whole string holding exactly one form.
pub fn parse_one(text: &str) -> Result<Edn, EdnError> {
    let mut reader = EdnReader::new(text);
    let (_, form) = reader
        .next_form()
        .ok_or_else(|| reader.eof_error("expected a value"))??;
    if reader.has_more()? {
        return Err(reader.error("unexpected text after the value"));
    }
    Ok(form)
}

/// Parses the one form `text` begins with; returns it and the text after it, untouched
/// (whitespace included).
pub fn parse_prefix(text: &str) -> Result<(Edn, &str), EdnError> {
    let mut reader = EdnReader::new(text);
    let (_, form) = reader
        .next_form()
        .ok_or_else(|| reader.eof_error("expected a value"))??;
    Ok((form, &text[reader.pos..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_an_op_map_with_comments_and_commas() {
        let v =
            parse_one("{:process 4, :type :ok ; done\n :f :cas, :value [1 -2], :x nil}").unwrap();
        assert_eq!(v.get("process"), Some(&Edn::Int(4)));
        assert_eq!(v.get("type"), Some(&Edn::Keyword("ok".into())));
        assert_eq!(
            v.get("value"),
            Some(&Edn::Vector(vec![Edn::Int(1), Edn::Int(-2)]))
        );
        assert_eq!(v.get("x"), Some(&Edn::Nil));
        assert_eq!(v.get("missing"), None);
    }

    #[test]
    fn strings_sets_tags_chars_and_discard() {
        let v =
            parse_one(r#"[ "a\"b\u0041" #{1 2} #inst "2020" \c \newline #_ ignored 2.5 true sym]"#)
                .unwrap();
        assert_eq!(
            v,
            Edn::Vector(vec![
                Edn::Str("a\"bA".into()),
                Edn::Set(vec![Edn::Int(1), Edn::Int(2)]),
                Edn::Tagged("inst".into(), Box::new(Edn::Str("2020".into()))),
                Edn::Char('c'),
                Edn::Char('\n'),
                Edn::Float(2.5),
                Edn::Bool(true),
                Edn::Symbol("sym".into()),
            ])
        );
    }

    #[test]
    fn errors_carry_lines_and_truncation_is_recognised() {
        let e = parse_one("[1\n2\n}").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(!e.at_end_of_input);
        let e = parse_one("[{:a 1}\n{:b").unwrap_err();
        assert!(e.at_end_of_input, "{e}");
        assert!(parse_one("{:a}")
            .unwrap_err()
            .message
            .contains("even number"));
        assert!(parse_one("1 2").is_err());
        assert!(parse_one("").unwrap_err().at_end_of_input);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let text = "[".repeat(100_000);
        assert!(parse_one(&text).unwrap_err().message.contains("nesting"));
    }

    #[test]
    fn streams_elements_of_a_top_level_vector_with_their_lines() {
        let mut r = EdnReader::new("; header\n[{:a 1}\n {:b 2}]\n");
        assert_eq!(r.open_collection().unwrap(), Some(']'));
        let (l1, _) = r.next_element(']').unwrap().unwrap();
        let (l2, v2) = r.next_element(']').unwrap().unwrap();
        assert_eq!((l1, l2), (2, 3));
        assert_eq!(v2.get("b"), Some(&Edn::Int(2)));
        assert!(r.next_element(']').is_none());
        assert!(!r.has_more().unwrap());
    }

    #[test]
    fn converts_to_json() {
        let v = parse_one(r#"{:k :timed-out, "s" [1 nil 2.5], 3 #{:x}}"#).unwrap();
        assert_eq!(
            v.to_json(),
            serde_json::json!({"k": "timed-out", "s": [1, null, 2.5], "3": ["x"]})
        );
    }
}

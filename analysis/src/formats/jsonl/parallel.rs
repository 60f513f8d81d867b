//! Reading JSON Lines on all cores. The input is read in large batches cut at line
//! boundaries; each batch is split into chunks whose lines are parsed in parallel (the
//! expensive part), then validated in order by the [`Assembler`]. Only one batch of text
//! is held at a time.

use super::{parse_line, Assembler, PendingOp};
use crate::formats::FormatError;
use crate::history::Op;
use rayon::prelude::*;
use std::io::Read;

/// Bytes of text parsed per batch.
pub(crate) const BATCH_BYTES: usize = 32 << 20;
/// Bytes per chunk handed to one task.
const CHUNK_BYTES: usize = 1 << 20;

/// One non-blank line: where it was and what parsing it gave.
struct ParsedLine {
    line: usize,
    ends_with_newline: bool,
    result: Result<PendingOp, String>,
}

/// Reads every op of `input`.
pub(crate) fn read<R: Read>(input: R, asm: Assembler) -> Result<(Vec<Op>, Assembler), FormatError> {
    let mut ops = Vec::new();
    let asm = for_each_batched(input, asm, BATCH_BYTES, false, |op| {
        ops.push(op);
        Ok(())
    })?;
    Ok((ops, asm))
}

/// Hands every op of `input` to `each`, in order, holding one batch of text at a time and
/// (unlike [`read`]) no line numbers: memory does not grow with the input. An error of
/// `each` ends the read as an error at that op's line.
pub(crate) fn for_each<R: Read>(
    input: R,
    asm: Assembler,
    batch_bytes: usize,
    each: impl FnMut(Op) -> Result<(), String>,
) -> Result<Assembler, FormatError> {
    for_each_batched(input, asm, batch_bytes, true, each)
}

#[cfg(test)]
fn read_batched<R: Read>(
    input: R,
    asm: Assembler,
    batch_bytes: usize,
) -> Result<(Vec<Op>, Assembler), FormatError> {
    let mut ops = Vec::new();
    let asm = for_each_batched(input, asm, batch_bytes, false, |op| {
        ops.push(op);
        Ok(())
    })?;
    Ok((ops, asm))
}

fn for_each_batched<R: Read>(
    mut input: R,
    mut asm: Assembler,
    batch_bytes: usize,
    forget_lines: bool,
    mut each: impl FnMut(Op) -> Result<(), String>,
) -> Result<Assembler, FormatError> {
    let mut buf: Vec<u8> = Vec::new();
    let mut first_line = 1;
    loop {
        let eof = fill(&mut input, &mut buf, batch_bytes, &asm, first_line)?;
        let cut = if eof {
            buf.len()
        } else {
            match buf.iter().rposition(|&b| b == b'\n') {
                Some(p) => p + 1,
                None => continue, // one enormous line: keep reading
            }
        };
        let batch = &buf[..cut];
        for chunk in parse_batch(batch, first_line) {
            for parsed in chunk {
                // Only the input's last line can lack its newline; perhaps cut short, it is
                // never trusted, even when it parses.
                if !parsed.ends_with_newline {
                    asm.dropped_unterminated_last_line(parsed.line);
                    return Ok(asm);
                }
                let op = match parsed.result {
                    Ok(pending) => asm.push(parsed.line, pending)?,
                    Err(message) => return Err(asm.error(parsed.line, message)),
                };
                each(op).map_err(|message| asm.error(parsed.line, message))?;
            }
        }
        if forget_lines {
            asm.forget_lines();
        }
        first_line += count_newlines(batch);
        buf.drain(..cut);
        if eof {
            return Ok(asm);
        }
    }
}

/// Reads until `buf` holds a batch or the input ends; true at the end of the input.
fn fill<R: Read>(
    input: &mut R,
    buf: &mut Vec<u8>,
    batch_bytes: usize,
    asm: &Assembler,
    line: usize,
) -> Result<bool, FormatError> {
    let want = buf.len() + batch_bytes;
    let got = input
        .take(batch_bytes as u64)
        .read_to_end(buf)
        .map_err(|e| asm.error(line, format!("read error: {e}")))?;
    Ok(got == 0 || buf.len() < want)
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

fn count_newlines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

/// Splits a batch into chunks ending at newlines: (text, first line number).
fn split(batch: &[u8], first_line: usize) -> Vec<(&[u8], usize)> {
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < batch.len() {
        let mut end = (start + CHUNK_BYTES).min(batch.len());
        while end < batch.len() && batch[end - 1] != b'\n' {
            end += 1;
        }
        pieces.push(&batch[start..end]);
        start = end;
    }
    let newlines: Vec<usize> = pieces.par_iter().map(|p| count_newlines(p)).collect();
    let mut line = first_line;
    pieces
        .into_iter()
        .zip(newlines)
        .map(|(piece, n)| {
            let at = line;
            line += n;
            (piece, at)
        })
        .collect()
}

/// Parses one chunk's non-blank lines, stopping after the first bad one (it is either the
/// input's last line or the error that ends the read).
fn parse_chunk(piece: &[u8], first_line: usize) -> Vec<ParsedLine> {
    let mut lines = Vec::new();
    for (i, raw) in piece.split_inclusive(|&b| b == b'\n').enumerate() {
        if is_blank(raw) {
            continue;
        }
        let result = parse_line(raw);
        let failed = result.is_err();
        lines.push(ParsedLine {
            line: first_line + i,
            ends_with_newline: raw.last() == Some(&b'\n'),
            result,
        });
        if failed {
            break;
        }
    }
    lines
}

fn parse_batch(batch: &[u8], first_line: usize) -> Vec<Vec<ParsedLine>> {
    split(batch, first_line)
        .into_par_iter()
        .map(|(piece, line)| parse_chunk(piece, line))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &[u8] = b"{\"type\":\"invoke\",\"process\":1,\"f\":\"read\"}\n";

    #[test]
    fn chunks_start_on_line_boundaries_with_correct_line_numbers() {
        let bytes: Vec<u8> = LINE
            .iter()
            .copied()
            .cycle()
            .take(LINE.len() * 60_000)
            .collect();
        let pieces = split(&bytes, 1);
        assert!(pieces.len() > 1);
        let mut expected_first_line = 1;
        for (piece, first_line) in &pieces {
            assert_eq!(piece.last(), Some(&b'\n'));
            assert_eq!(*first_line, expected_first_line);
            expected_first_line += count_newlines(piece);
        }
        let lines: Vec<usize> = parse_batch(&bytes, 1)
            .iter()
            .flatten()
            .map(|l| l.line)
            .collect();
        assert_eq!(lines.len(), 60_000);
        assert!(lines.iter().enumerate().all(|(i, &l)| l == i + 1));
    }

    #[test]
    fn reads_across_batches_with_line_numbers_intact() {
        // Invoke/complete pairs over more than one batch, then a bad line.
        let pair = b"{\"type\":\"invoke\",\"process\":1,\"f\":\"read\"}\n{\"type\":\"ok\",\"process\":1,\"f\":\"read\",\"value\":1}\n";
        const BATCH: usize = 1000;
        let pairs = 3 * BATCH / pair.len() + 7;
        let mut bytes: Vec<u8> = pair
            .iter()
            .copied()
            .cycle()
            .take(pair.len() * pairs)
            .collect();
        let (ops, asm) = read_batched(
            &bytes[..],
            Assembler::new("big", crate::formats::TxnForm::Json),
            BATCH,
        )
        .unwrap();
        assert_eq!(ops.len(), 2 * pairs);
        assert_eq!(asm.report.op_lines.last().copied(), Some(2 * pairs as u32));
        assert!(ops.windows(2).all(|w| w[1].index == w[0].index + 1));

        bytes.extend_from_slice(b"garbage\n");
        bytes.extend_from_slice(pair);
        let e = read_batched(
            &bytes[..],
            Assembler::new("big", crate::formats::TxnForm::Json),
            BATCH,
        )
        .unwrap_err();
        assert_eq!(e.line, 2 * pairs + 1);

        // A line longer than a batch, and a cut-short last line in a later batch.
        let long = format!(
            "{{\"type\":\"invoke\",\"process\":2,\"f\":\"write\",\"value\":\"{}\"}}\n",
            "x".repeat(3 * BATCH)
        );
        let mut bytes: Vec<u8> = pair
            .iter()
            .copied()
            .cycle()
            .take(pair.len() * pairs)
            .collect();
        bytes.extend_from_slice(long.as_bytes());
        bytes.extend_from_slice(b"{\"type\":\"ok\",\"proc");
        let (ops, asm) = read_batched(
            &bytes[..],
            Assembler::new("big", crate::formats::TxnForm::Json),
            BATCH,
        )
        .unwrap();
        assert_eq!(ops.len(), 2 * pairs + 1);
        assert!(asm.report.truncated_last_line);
        assert!(
            asm.report.warnings[0].starts_with(&format!("big:{}: dropped", 2 * pairs + 2)),
            "{:?}",
            asm.report.warnings
        );
    }
}

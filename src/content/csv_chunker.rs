//! CSV/TSV chunking: rows split evenly, the header row first in every chunk, rows per chunk
//! from the column count (fewer columns, more rows). Records are found with an RFC 4180
//! scanner, so a quoted field with embedded newlines is never split across chunks.

use super::chunk::{ChunkContext, ChunkOptions, ChunkStrategy, Draft};
use super::line_index::LineIndex;
use super::line_range::LineRange;

/// One record: its lines, where it ends in the text, and how many fields it has.
#[derive(Debug, Clone, Copy)]
struct Record {
    lines: LineRange,
    end_byte: usize,
    fields: usize,
}

pub(crate) fn chunk_delimited(index: &LineIndex<'_>, opts: &ChunkOptions) -> Vec<Draft> {
    let text = index.text();
    let delimiter = guess_delimiter(index.line(1));
    let records = scan_records(text, delimiter);
    let Some((header, rows)) = records.split_first().filter(|(_, rows)| !rows.is_empty()) else {
        let lines = LineRange::new(1, index.len());
        return vec![Draft::verbatim(index, lines, ChunkContext::new(ChunkStrategy::Rows))];
    };
    let columns = header.fields.max(1);
    let (min_rows, max_rows) = opts.csv_rows;
    let per_chunk = (opts.csv_cells / columns).clamp(min_rows.max(1), max_rows.max(min_rows).max(1));
    let row_bytes = text.len() - header.end_byte;
    let chunks = rows
        .len()
        .div_ceil(per_chunk)
        .max(row_bytes.div_ceil(opts.max_chunk_bytes.max(1)))
        .clamp(1, rows.len());
    let header_text = &text[..header.end_byte];
    let mut drafts = Vec::with_capacity(chunks);
    let mut prev_end_byte = header.end_byte;
    for k in 0..chunks {
        // Even split: chunk k holds rows [k·n/chunks, (k+1)·n/chunks).
        let last = &rows[(k + 1) * rows.len() / chunks - 1];
        let first = &rows[k * rows.len() / chunks];
        let body = &text[prev_end_byte..last.end_byte];
        let mut context = ChunkContext::new(ChunkStrategy::Rows);
        let (start_line, content) = if k == 0 {
            (1, format!("{header_text}{body}"))
        } else {
            context.prepended = Some(header.lines);
            let separator = if header_text.ends_with('\n') { "" } else { "\n" };
            (first.lines.start, format!("{header_text}{separator}{body}"))
        };
        drafts.push(Draft {
            lines: LineRange::new(start_line, last.lines.end),
            content,
            context,
        });
        prev_end_byte = last.end_byte;
    }
    drafts
}

/// Tab when the header has at least as many tabs as commas; `;` when it has only those.
fn guess_delimiter(header: &str) -> u8 {
    let count = |c: char| header.matches(c).count();
    let (tabs, commas, semicolons) = (count('\t'), count(','), count(';'));
    if tabs > 0 && tabs >= commas {
        b'\t'
    } else if commas == 0 && semicolons > 0 {
        b';'
    } else {
        b','
    }
}

#[derive(Clone, Copy, PartialEq)]
enum State {
    FieldStart,
    Unquoted,
    Quoted,
    /// A `"` inside a quoted field: either the first of `""` or the closing quote.
    QuoteInQuoted,
}

/// Every record of `text`, RFC 4180 style: a `"` opens quoting only at a field's start,
/// `""` inside quotes is a literal quote, and a newline inside quotes belongs to the field.
/// An unterminated quote runs to the end of the text (one record), rather than be cut.
fn scan_records(text: &str, delimiter: u8) -> Vec<Record> {
    let mut records = Vec::with_capacity(text.len() / 64 + 1);
    let mut state = State::FieldStart;
    let mut fields = 1;
    let mut line = 1;
    let mut record_start_line = 1;
    for (i, &b) in text.as_bytes().iter().enumerate() {
        state = match (state, b) {
            (State::Quoted, b'"') => State::QuoteInQuoted,
            (State::Quoted, _) => State::Quoted,
            (State::FieldStart, b'"') => State::Quoted,
            (State::QuoteInQuoted, b'"') => State::Quoted,
            (_, b'\n') => {
                records.push(Record {
                    lines: LineRange::new(record_start_line, line),
                    end_byte: i + 1,
                    fields,
                });
                fields = 1;
                record_start_line = line + 1;
                State::FieldStart
            }
            (_, d) if d == delimiter => {
                fields += 1;
                State::FieldStart
            }
            _ => State::Unquoted,
        };
        if b == b'\n' {
            line += 1;
        }
    }
    if records.last().map_or(0, |r| r.end_byte) < text.len() {
        // Text after the last record's end: no final newline, or an unterminated quote
        // (whose newlines were counted, a final one included).
        let last_line = if text.ends_with('\n') { line - 1 } else { line };
        records.push(Record {
            lines: LineRange::new(record_start_line, last_line),
            end_byte: text.len(),
            fields,
        });
    }
    records
}

/// The field count of every non-blank record of `text` (for sniffing a CSV header).
pub(crate) fn record_field_counts(text: &str, delimiter: u8) -> Vec<usize> {
    let mut start = 0;
    let mut counts = Vec::new();
    for r in scan_records(text, delimiter) {
        if !text[start..r.end_byte].trim().is_empty() {
            counts.push(r.fields);
        }
        start = r.end_byte;
    }
    counts
}

#[cfg(test)]
#[path = "csv_chunker_tests.rs"]
mod tests;

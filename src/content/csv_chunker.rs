//! CSV/TSV chunking: rows split evenly, the header row first in every chunk, rows per chunk
//! from the column count (fewer columns, more rows), and never more than the budget: a
//! chunk closes early rather than overflow it, and a record too long for any chunk is cut
//! alone by lines (a line too long, inside the line). Records are found with an RFC 4180
//! scanner, so a quoted field with embedded newlines is never split across chunks.

use super::chunk::{ChunkContext, ChunkOptions, ChunkStrategy, Content, Draft, WindowSize};
use super::line_index::LineIndex;
use super::line_range::LineRange;
use super::windows::{budget_windows, pieces_to_drafts, window_drafts};

/// One record: its lines, where it ends in the text, and how many fields it has.
#[derive(Debug, Clone, Copy)]
struct Record {
    lines: LineRange,
    end_byte: usize,
    fields: usize,
}

pub(crate) fn chunk_delimited(index: &LineIndex<'_>, opts: &ChunkOptions) -> Vec<Draft> {
    let text = index.text();
    let max_bytes = opts.max_bytes();
    let delimiter = guess_delimiter(index.line(1));
    let records = scan_records(text, delimiter);
    let whole = LineRange::new(1, index.len());
    let Some((header, rows)) = records.split_first().filter(|(_, rows)| !rows.is_empty()) else {
        if text.len() <= max_bytes {
            return vec![Draft::verbatim(index, whole, ChunkContext::new(ChunkStrategy::Rows))];
        }
        return window_drafts(index, whole, opts.fallback, Some("no rows below a header"), opts);
    };
    let columns = header.fields.max(1);
    let (min_rows, max_rows) = opts.csv_rows;
    let per_chunk = (opts.csv_cells / columns).clamp(min_rows.max(1), max_rows.max(min_rows).max(1));
    let header_text = &text[..header.end_byte];
    // The header is repeated only while it takes at most half the budget.
    let header_cost = header_text.len() + usize::from(!header_text.ends_with('\n'));
    let repeat_header = header_cost <= max_bytes / 2;
    let room = max_bytes - if repeat_header { header_cost } else { 0 };
    let row_bytes = text.len() - header.end_byte;
    let chunks = rows
        .len()
        .div_ceil(per_chunk)
        .max(row_bytes.div_ceil(room.max(1)))
        .max(1);
    let target = rows.len().div_ceil(chunks);

    let mut drafts: Vec<Draft> = Vec::with_capacity(chunks);
    // The first chunk holds the header as its own lines; when it does not fit, it is cut.
    let mut group_start_byte = 0;
    let mut group_first_line = 1;
    let mut group_rows = 0usize;
    if header_text.len() > max_bytes / 2 {
        let pieces = budget_windows(index, header.lines, opts.fallback, 0, |_| false, max_bytes);
        drafts.extend(pieces_to_drafts(
            index,
            &pieces,
            Some("the header row is too long to repeat"),
            max_bytes,
        ));
        group_start_byte = header.end_byte;
        group_first_line = header.lines.end + 1;
    }
    // Bytes `from..to` (whole records, lines `first..=last`) as one chunk, after the
    // header unless they hold it.
    let flush = |drafts: &mut Vec<Draft>, from: usize, to: usize, first: usize, last: usize| {
        if to <= from {
            return;
        }
        let mut context = ChunkContext::new(ChunkStrategy::Rows);
        let mut content = Content::default();
        if from > 0 && repeat_header {
            context.prepended = Some(header.lines);
            content.lines(index, header.lines);
            content.end_line();
        }
        content.push(&text[from..to], Some(first));
        drafts.push(content.into_draft(LineRange::new(first, last), context));
    };
    let mut last_line = header.lines.end;
    let mut last_byte = header.end_byte;
    for row in rows {
        let size = row.end_byte - last_byte;
        if size > room {
            // A record too long to go with the header: alone, and cut by lines (a line
            // inside) when it is longer than a chunk.
            flush(&mut drafts, group_start_byte, last_byte, group_first_line, last_line);
            if size <= max_bytes {
                let context = ChunkContext::new(ChunkStrategy::Rows)
                    .with_note("one record, too long to repeat the header with it");
                drafts.push(Draft::verbatim(index, row.lines, context));
            } else {
                let whole = WindowSize {
                    lines: usize::MAX,
                    overlap: 0,
                };
                let pieces = budget_windows(index, row.lines, whole, 0, |_| false, max_bytes);
                drafts.extend(pieces_to_drafts(
                    index,
                    &pieces,
                    Some("one record longer than a chunk"),
                    max_bytes,
                ));
            }
            group_start_byte = row.end_byte;
            group_first_line = row.lines.end + 1;
            group_rows = 0;
        } else {
            let group_bytes = last_byte - group_start_byte;
            if group_rows > 0 && (group_rows >= target || group_bytes + size > room) {
                flush(&mut drafts, group_start_byte, last_byte, group_first_line, last_line);
                group_start_byte = last_byte;
                group_first_line = row.lines.start;
                group_rows = 0;
            }
            group_rows += 1;
        }
        last_line = row.lines.end;
        last_byte = row.end_byte;
    }
    flush(&mut drafts, group_start_byte, last_byte, group_first_line, last_line);
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

//! Prose chunking: cut at headings of any level — ATX `#` … `######`, setext `===`/`---`
//! underlines, AsciiDoc `=` … `======` — preferring the highest level: the text is cut at
//! its top-level headings, whole sections are packed into chunks within the prose window
//! and the budget, and only a section too big for one chunk is cut at its next level of
//! headings, and so on. A section with no headings left, and text without headings, fall
//! back to 250-line windows with 25 lines of overlap. Nothing inside a fenced code block
//! (```` ``` ```` or `~~~`) or a front-matter block is a heading: a `# comment` in a shell
//! example is not.

use super::chunk::{ChunkContext, ChunkOptions, ChunkStrategy, Draft};
use super::line_index::LineIndex;
use super::line_range::{pack, segments_between, LineRange, Packed, Split};
use super::windows::{all_lines, budget_windows, bytes_of, pieces_to_drafts, Piece};

/// A heading: its first line and its level (1 is the highest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Heading {
    line: usize,
    level: u8,
}

pub(crate) fn chunk_prose(index: &LineIndex<'_>, opts: &ChunkOptions) -> Vec<Draft> {
    let whole = all_lines(index);
    let size = opts.prose;
    let max_bytes = opts.max_bytes();
    let fits = |r: LineRange| r.len() <= size.lines.max(1) && bytes_of(index, r) <= max_bytes;
    if fits(whole) {
        return vec![Draft::verbatim(index, whole, ChunkContext::new(ChunkStrategy::Whole))];
    }
    let windows = |range: LineRange| budget_windows(index, range, size, 0, |_| false, max_bytes);
    let headings = headings(index);
    if headings.is_empty() {
        return pieces_to_drafts(index, &windows(whole), None, max_bytes);
    }
    let segments = sections(index, &headings, whole, false);
    let packed = pack(&segments, fits, |section| {
        let parts = sections(index, &headings, section, true);
        if parts.len() > 1 {
            Split::Segments(parts)
        } else {
            Split::Final(windows(section))
        }
    });
    let mut drafts = Vec::with_capacity(packed.len());
    let mut finals: Vec<Piece> = Vec::new();
    let flush = |finals: &mut Vec<Piece>, drafts: &mut Vec<Draft>| {
        drafts.extend(pieces_to_drafts(index, finals, None, max_bytes));
        finals.clear();
    };
    for p in packed {
        match p {
            Packed::Range(lines) => {
                flush(&mut finals, &mut drafts);
                drafts.push(Draft::verbatim(
                    index,
                    lines,
                    ChunkContext::new(ChunkStrategy::Headings),
                ));
            }
            Packed::Final(piece) => finals.push(piece),
        }
    }
    flush(&mut finals, &mut drafts);
    drafts
}

/// `range` cut at the highest level of heading inside it: every heading of the smallest
/// level found. `nested`: the range is a section, whose own heading (its first line) does
/// not count — nor do the headings that follow it with nothing but blank lines between
/// (`## Part 1` then `### Section 1.0`): a section's heading stays with the text it heads,
/// never left alone at the end of the chunk before.
fn sections(index: &LineIndex<'_>, headings: &[Heading], range: LineRange, nested: bool) -> Vec<LineRange> {
    let mut from = range.start;
    if nested {
        from += 1;
        let is_heading = |n: usize| headings.binary_search_by_key(&n, |h| h.line).is_ok();
        // A setext heading's underline goes with the text line above it.
        let underline = |n: usize| n > 1 && is_heading(n - 1) && is_underline(index.line(n).trim_end());
        while from <= range.end && (index.line(from).trim().is_empty() || is_heading(from) || underline(from)) {
            from += 1;
        }
    }
    let first = headings.partition_point(|h| h.line < from);
    let last = headings.partition_point(|h| h.line <= range.end);
    let inside = &headings[first..last];
    let Some(level) = inside.iter().map(|h| h.level).min() else {
        return vec![range];
    };
    let cuts: Vec<usize> = inside.iter().filter(|h| h.level == level).map(|h| h.line).collect();
    segments_between(range, &cuts)
}

/// Every heading outside fenced code blocks and front matter, in order.
fn headings(index: &LineIndex<'_>) -> Vec<Heading> {
    let mut out: Vec<Heading> = Vec::new();
    let mut fence: Option<(u8, usize)> = None;
    // The line that closed the last fence: never the text of a setext heading.
    let mut fence_closed = 0;
    let mut n = 1;
    if index.line(1).trim_end() == "---" {
        // YAML front matter: up to the closing `---` or `...`.
        if let Some(close) = (2..=index.len()).find(|&m| matches!(index.line(m).trim_end(), "---" | "...")) {
            n = close + 1;
        }
    }
    while n <= index.len() {
        let line = index.line(n);
        let indent = line.len() - line.trim_start_matches(' ').len();
        let t = line[indent..].trim_end();
        if let Some((c, len)) = fence {
            if indent <= 3 && t.len() >= len && t.bytes().all(|b| b == c) {
                fence = None;
                fence_closed = n;
            }
            n += 1;
            continue;
        }
        if let Some(open) = fence_opening(t).filter(|_| indent <= 3) {
            fence = Some(open);
            n += 1;
            continue;
        }
        if let Some(level) = atx_level(t).filter(|_| indent <= 3) {
            out.push(Heading { line: n, level });
        } else if n > 1 && indent <= 3 {
            let above = index.line(n - 1);
            let level = if is_underline(t) && t.starts_with('=') {
                Some(1)
            } else if is_underline(t) {
                Some(2)
            } else {
                None
            };
            let heading_above = out.last().is_some_and(|h| h.line == n - 1) || fence_closed == n - 1;
            if let Some(level) = level.filter(|_| !above.trim().is_empty() && !heading_above && !is_underline(above)) {
                // Setext: the heading is the text line above its underline.
                out.push(Heading { line: n - 1, level });
            }
        }
        n += 1;
    }
    out
}

/// The level of an ATX (`## Title`) or AsciiDoc (`== Title`) heading.
fn atx_level(t: &str) -> Option<u8> {
    for mark in [b'#', b'='] {
        let count = t.bytes().take_while(|&b| b == mark).count();
        if (1..=6).contains(&count) && matches!(t.as_bytes().get(count), None | Some(b' ' | b'\t')) {
            // A lone `=` line is a setext underline, not a heading.
            if mark == b'=' && t.len() == count {
                return None;
            }
            return u8::try_from(count).ok();
        }
    }
    None
}

/// A fence opening: three or more backticks or tildes (a backtick fence's info string has
/// no backtick). Returns the fence character and length.
fn fence_opening(t: &str) -> Option<(u8, usize)> {
    let c = *t.as_bytes().first()?;
    if c != b'`' && c != b'~' {
        return None;
    }
    let len = t.bytes().take_while(|&b| b == c).count();
    let info_ok = c == b'~' || !t[len..].contains('`');
    (len >= 3 && info_ok).then_some((c, len))
}

fn is_run_of(t: &str, c: u8) -> bool {
    !t.is_empty() && t.bytes().all(|b| b == c)
}

/// `===` or `---` (at least three, nothing else): a setext or reStructuredText underline.
fn is_underline(line: &str) -> bool {
    let t = line.trim_end();
    t.len() >= 3 && (is_run_of(t, b'=') || is_run_of(t, b'-'))
}

#[cfg(test)]
#[path = "prose_chunker_tests.rs"]
mod tests;

//! Windows of whole lines within a budget: the one rule every chunker falls back on (and
//! logs, markup and config are cut by), a line longer than the budget cut alone into
//! [`PartialLine`] pieces, and the measures of a range of lines.

use super::chunk::{ChunkContext, ChunkOptions, ChunkStrategy, Content, Draft, PartialLine, WindowSize};
use super::line_index::LineIndex;
use super::line_range::LineRange;

pub(crate) fn all_lines(index: &LineIndex<'_>) -> LineRange {
    LineRange::new(1, index.len())
}

/// The bytes of lines `range` of the file, terminators included.
pub(crate) fn bytes_of(index: &LineIndex<'_>, range: LineRange) -> usize {
    if range.is_empty() {
        return 0;
    }
    index.start_of(range.end + 1) - index.start_of(range.start)
}

/// What a budget-aware window cut produces: windows of whole lines, and the lines too long
/// for any window, which are cut on their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece {
    Window {
        lines: LineRange,
        overlap_before: Option<LineRange>,
    },
    LongLine(usize),
}

/// The window rules in one place: windows of at most `size.lines` lines and `max_bytes`
/// bytes over `range`, each starting `size.overlap` lines before the previous one ended
/// (less when the budget made the previous window shorter, in proportion, so a small
/// budget does not send every line many times). `extend(line)` may say that a window must
/// not end just before `line` (a stack frame continuing an entry): the window then grows
/// over such lines, at most `max_extend`, while the budget allows. A line longer than
/// `max_bytes` is a [`Piece::LongLine`] of its own; the windows around it do not overlap it.
pub(crate) fn budget_windows(
    index: &LineIndex<'_>,
    range: LineRange,
    size: WindowSize,
    max_extend: usize,
    extend: impl Fn(usize) -> bool,
    max_bytes: usize,
) -> Vec<Piece> {
    windows_with(index, range, size, (max_extend, &extend, false), max_bytes)
}

/// Windows as [`budget_windows`] gives them, none of which ends just before or starts on a
/// line where `inside(line)` (a line that goes on a string or comment of the line above):
/// a window that would is made shorter, to end before the literal, unless the literal
/// alone is longer than a window.
pub(crate) fn windows_around(
    index: &LineIndex<'_>,
    range: LineRange,
    size: WindowSize,
    inside: impl Fn(usize) -> bool,
    max_bytes: usize,
) -> Vec<Piece> {
    windows_with(index, range, size, (size.lines, &inside, true), max_bytes)
}

/// The windows: `extend` is how far a window may grow past its size over lines it must
/// not end before, the predicate, and whether a window that still would is pulled back.
fn windows_with(
    index: &LineIndex<'_>,
    range: LineRange,
    size: WindowSize,
    extend: (usize, &dyn Fn(usize) -> bool, bool),
    max_bytes: usize,
) -> Vec<Piece> {
    let (max_extend, extend, pull_back) = extend;
    let size_lines = size.lines.max(1);
    let line_bytes = |n: usize| bytes_of(index, LineRange::new(n, n));
    let mut out = Vec::with_capacity(range.len() / size_lines + 1);
    let mut start = range.start;
    let mut prev_end: Option<usize> = None;
    while start <= range.end {
        if line_bytes(start) > max_bytes {
            out.push(Piece::LongLine(start));
            prev_end = None;
            start += 1;
            continue;
        }
        let mut end = start;
        let mut bytes = line_bytes(start);
        while end < range.end && end + 1 - start < size_lines && bytes + line_bytes(end + 1) <= max_bytes {
            end += 1;
            bytes += line_bytes(end);
        }
        let mut extended = 0;
        while end < range.end && extended < max_extend && extend(end + 1) && bytes + line_bytes(end + 1) <= max_bytes {
            end += 1;
            extended += 1;
            bytes += line_bytes(end);
        }
        if pull_back && end < range.end && extend(end + 1) {
            // Still inside a literal: end before it, if the window keeps a line.
            if let Some(before) = (start..end).rev().find(|&e| !extend(e + 1)) {
                end = before;
            }
        }
        let overlap_before = prev_end.filter(|&p| p >= start).map(|p| LineRange::new(start, p));
        out.push(Piece::Window {
            lines: LineRange::new(start, end),
            overlap_before,
        });
        if end >= range.end {
            break;
        }
        let len = end + 1 - start;
        let mut overlap = size.overlap.min(len * size.overlap / size_lines).min(len - 1);
        if line_bytes(end + 1) > max_bytes {
            // The next line is cut on its own: repeating lines before it gains nothing.
            overlap = 0;
        }
        // The next window must reach past this one.
        while overlap > 0 && bytes_of(index, LineRange::new(end + 1 - overlap, end + 1)) > max_bytes {
            overlap -= 1;
        }
        while pull_back && overlap > 0 && extend(end + 1 - overlap) {
            overlap -= 1;
        }
        prev_end = Some(end);
        start = end + 1 - overlap;
    }
    out
}

/// Plain windows over `range` within the budget, each chunk verbatim; `note` says why,
/// when this is a fallback.
pub(crate) fn window_drafts(
    index: &LineIndex<'_>,
    range: LineRange,
    size: WindowSize,
    note: Option<&str>,
    opts: &ChunkOptions,
) -> Vec<Draft> {
    let pieces = budget_windows(index, range, size, 0, |_| false, opts.max_bytes());
    pieces_to_drafts(index, &pieces, note, opts.max_bytes())
}

/// Windows as verbatim drafts (with `note`), long lines cut alone.
pub(crate) fn pieces_to_drafts(
    index: &LineIndex<'_>,
    pieces: &[Piece],
    note: Option<&str>,
    max_bytes: usize,
) -> Vec<Draft> {
    let mut out = Vec::with_capacity(pieces.len());
    for piece in pieces {
        match *piece {
            Piece::Window { lines, overlap_before } => {
                let mut context = ChunkContext::new(ChunkStrategy::Windows);
                context.overlap_before = overlap_before;
                context.note = note.map(str::to_owned);
                out.push(Draft::verbatim(index, lines, context));
            }
            Piece::LongLine(n) => out.extend(cut_line(index, n, max_bytes)),
        }
    }
    out
}

/// Line `n`, longer than `max_bytes`, cut into pieces of at most `max_bytes` (at character
/// boundaries, after a space or comma near the end of a piece when there is one), each a
/// chunk of its own marked as a [`PartialLine`].
pub(crate) fn cut_line(index: &LineIndex<'_>, n: usize, max_bytes: usize) -> Vec<Draft> {
    let line = index.slice(n, n);
    cut_line_span(index, n, 0..line.len(), max_bytes, &format!("line {n}"))
}

/// Bytes `span` of line `n` (with its terminator) cut like [`cut_line`]; `what` names the
/// whole in the note ("line 12", "element $[3] on line 1").
pub(crate) fn cut_line_span(
    index: &LineIndex<'_>,
    n: usize,
    span: std::ops::Range<usize>,
    max_bytes: usize,
    what: &str,
) -> Vec<Draft> {
    let line = index.slice(n, n);
    let max_bytes = max_bytes.max(4);
    let mut cuts = vec![span.start];
    let mut at = span.start;
    while span.end - at > max_bytes {
        let mut end = at + max_bytes;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        // Prefer ending after a separator in the piece's last eighth.
        let floor = end - max_bytes / 8;
        if let Some(sep) = line.as_bytes()[floor..end]
            .iter()
            .rposition(|&b| matches!(b, b' ' | b'\t' | b','))
        {
            end = floor + sep + 1;
        }
        cuts.push(end);
        at = end;
    }
    cuts.push(span.end);
    let parts = cuts.len() - 1;
    cuts.windows(2)
        .enumerate()
        .map(|(k, w)| {
            let context = ChunkContext::new(ChunkStrategy::PartialLine).with_note(format!(
                "part {} of {parts} of {what}, which is too long for one chunk",
                k + 1
            ));
            let mut content = Content::default();
            content.push(&line[w[0]..w[1]], Some(n));
            let mut draft = content.into_draft(LineRange::new(n, n), context);
            draft.partial_line = Some(PartialLine {
                line: n,
                part: k + 1,
                parts,
                start: w[0],
                end: w[1],
            });
            draft
        })
        .collect()
}

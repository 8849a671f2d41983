//! The Markdown a citation parser must see through: escaped and matching brackets, where a
//! line starts, ATX headings and list items, and the code (fenced blocks and inline spans)
//! in which nothing is a citation.

use std::ops::Range;

pub(super) fn escaped(bytes: &[u8], i: usize) -> bool {
    bytes[..i].iter().rev().take_while(|b| **b == b'\\').count() % 2 == 1
}

/// The `]` that closes the `[` at `open` on the same line (escaped brackets ignored).
pub(super) fn matching_bracket(bytes: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (k, &b) in bytes.iter().enumerate().skip(open) {
        match b {
            b'\n' => return None,
            b'[' if !escaped(bytes, k) => depth += 1,
            b']' if !escaped(bytes, k) => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether only up to three spaces precede `i` on its line.
pub(super) fn at_line_start(bytes: &[u8], i: usize) -> bool {
    let line_start = bytes[..i].iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
    i - line_start <= 3 && bytes[line_start..i].iter().all(|b| *b == b' ')
}

pub(super) fn line_of(text: &str, i: usize) -> usize {
    text.as_bytes()[..i].iter().filter(|b| **b == b'\n').count() + 1
}

/// The text of an ATX heading line (`## Sources` → `Sources`).
pub(super) fn heading_text(line: &str) -> Option<&str> {
    let hashes = line.len() - line.trim_start_matches('#').len();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = &line[hashes..];
    (rest.is_empty() || rest.starts_with(' ')).then(|| rest.trim().trim_end_matches('#').trim())
}

/// The text of a `- x` / `* x` / `+ x` list item line.
pub(super) fn list_item(line: &str) -> Option<&str> {
    let rest = line.strip_prefix(['-', '*', '+'])?;
    rest.starts_with([' ', '\t']).then(|| rest.trim())
}

/// Byte ranges of fenced code blocks and inline code spans.
pub(super) fn code_regions(text: &str) -> Vec<Range<usize>> {
    let mut regions = Vec::new();
    let mut fence: Option<(u8, usize, usize)> = None; // (char, length, start)
    let mut prose: Vec<Range<usize>> = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let indent = line.len() - line.trim_start_matches(' ').len();
        let body = line.trim_start_matches(' ').trim_end();
        let run = |c: u8| body.bytes().take_while(|b| *b == c).count();
        let opener = [b'`', b'~'].into_iter().map(|c| (c, run(c))).find(|(_, n)| *n >= 3);
        match (fence, opener) {
            (Some((c, n, from)), Some((c2, n2))) if indent <= 3 && c == c2 && n2 >= n && body.len() == n2 => {
                regions.push(from..offset);
                fence = None;
            }
            (Some(_), _) => {}
            (None, Some((c, n))) if indent <= 3 => fence = Some((c, n, start)),
            (None, _) => prose.push(start..offset),
        }
    }
    if let Some((_, _, from)) = fence {
        regions.push(from..text.len()); // an unclosed fence runs to the end
    }
    for range in prose {
        code_spans(text, range, &mut regions);
    }
    regions
}

/// Inline code spans of one line: a run of N backticks up to the next run of exactly N.
pub(super) fn code_spans(text: &str, line: Range<usize>, regions: &mut Vec<Range<usize>>) {
    let bytes = &text.as_bytes()[line.clone()];
    let run_at = |k: usize| bytes[k..].iter().take_while(|b| **b == b'`').count();
    let mut k = 0;
    while k < bytes.len() {
        if bytes[k] != b'`' {
            k += 1;
            continue;
        }
        let n = run_at(k);
        let mut j = k + n;
        let mut closed = None;
        while j < bytes.len() {
            if bytes[j] == b'`' {
                let m = run_at(j);
                if m == n {
                    closed = Some(j + m);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match closed {
            Some(end) => {
                regions.push(line.start + k..line.start + end);
                k = end;
            }
            None => k += n,
        }
    }
}

//! The strict citation parser: inline `[path@hash16, L42-58]`, `[path@hash16, L42]`,
//! `[path@hash16]`, path-only `[path, L88]` / `[path, L88-90]`, and the items of a
//! `## Sources` footer.
//!
//! Strict means a citation is recognised only when it cannot be something else:
//! - the hash is exactly 16 lowercase hex characters after the LAST `@` (so paths may
//!   hold `@` and spaces); the line range is `L<n>[-<m>]` after the last comma, never part
//!   of the path;
//! - a path-only citation needs its line range and a path that looks like one (a `/`, or
//!   one word with an extension), so `[x]`, `[ ]`, `[TODO, L1]` and bracketed prose are
//!   not citations; a hash that is hex but not 16 lowercase characters (`[a.ts@DEADBEEF,
//!   L3]`), or 16 characters that are not hex (`@zzzzzzzzzzzzzzzz`), makes the bracket
//!   malformed (below), while a suffix that is no hash at all (`[a.ts@xyz, L3]`) leaves a
//!   path-only citation of the path `a.ts@xyz`, which verification then reports as missing
//!   rather than ignoring;
//! - a bracket followed by `(` is a markdown link (`[t](u)`), the second bracket of
//!   `[t][r]` a reference (unless the first was a citation), one preceded by `!` an image,
//!   `[^n]` a footnote, `[r]:` at a line start a link definition, `\[` escaped;
//! - code spans and fenced code blocks are literal text, so examples in them do not count;
//! - brackets nest (`[see [a.ts@…, L1]]` finds the inner citation, and
//!   `[app/[id]/page.tsx@…, L3]` is one citation).
//!
//! A citation written wrongly is not dropped in silence (issue 17): a bracket (or footer
//! item) on a path that looks like one, with a hash that is hex but not 16 lowercase
//! characters (`@DEADBEEF`) or a line range that is no range (`L0`, `L50-5`, `L-3`, `Lx`, a
//! bare `12`), is found as
//! *malformed*, with the problem — by [`parse_for_verification`], never by the parsers whose
//! citations are carried into aggregates.

use std::ops::Range;

use super::tuple::{is_content_hash, Citation, LineRange};

/// Longest path we accept inside brackets.
const MAX_PATH: usize = 1024;

/// Extension-less file names a path-only citation may name.
const BARE_NAMES: &[&str] = &[
    "Makefile",
    "Dockerfile",
    "Rakefile",
    "Gemfile",
    "Justfile",
    "LICENSE",
    "README",
];

/// A citation found in a text, with where it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub citation: Citation,
    /// Byte span of the whole bracket (or footer item) in the text.
    pub span: Range<usize>,
    /// 1-based line of the span's start.
    pub line: usize,
    /// Why it is malformed (then `citation` holds what could be read of it); `None` for a
    /// well-formed citation.
    pub problem: Option<String>,
}

/// Every inline citation in `text`, in order.
pub fn parse_inline(text: &str) -> Vec<Located> {
    scan_inline(text, false)
}

/// Every citation of a markdown document, well-formed or malformed, in order: what
/// `rlm verify-citations` checks.
pub fn parse_for_verification(text: &str) -> Vec<Located> {
    scan_document(text, true)
}

/// The inline citations of `text`; with `malformed`, also the brackets that are citations
/// written wrongly.
fn scan_inline(text: &str, malformed: bool) -> Vec<Located> {
    let code = code_regions(text);
    let in_code = |i: usize| code.iter().any(|r| r.contains(&i));
    let bytes = text.as_bytes();
    let mut found: Vec<Located> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'[' || in_code(i) || escaped(bytes, i) {
            i += 1;
            continue;
        }
        let Some(close) = matching_bracket(bytes, i) else {
            i += 1;
            continue;
        };
        let after = bytes.get(close + 1).copied();
        let before = i.checked_sub(1).map(|p| bytes[p]);
        let follows_citation = found.last().is_some_and(|l| l.span.end == i);
        // `[a][b]` is a reference link unless `[a]` was itself a citation: adjacent
        // citations (`[x.ts@…, L1][y.ts@…, L2]`) stay citations.
        let link_like = after == Some(b'(')
            || before == Some(b'!')
            || (before == Some(b']') && !follows_citation)
            || (after == Some(b':') && at_line_start(bytes, i));
        if !link_like {
            let content = &text[i + 1..close];
            let parsed = match parse_bracket_content(content) {
                Some(citation) => Some((citation, None)),
                None if malformed => malformed_bracket(content).map(|(c, why)| (c, Some(why))),
                None => None,
            };
            if let Some((citation, problem)) = parsed {
                found.push(Located {
                    citation,
                    span: i..close + 1,
                    line: line_of(text, i),
                    problem,
                });
                i = close + 1;
                continue;
            }
        }
        i += 1;
    }
    found
}

/// Every citation of a markdown document: inline ones, then the items of its
/// `## Sources` footers (`- path@hash (L42-58)`, `- path (L88) [un-versioned]`).
pub fn parse_document(text: &str) -> Vec<Located> {
    scan_document(text, false)
}

/// [`parse_document`], with the malformed citations when `malformed`.
fn scan_document(text: &str, malformed: bool) -> Vec<Located> {
    let mut found = scan_inline(text, malformed);
    let code = code_regions(text);
    let mut in_sources = false;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        if code.iter().any(|r| r.contains(&start)) {
            continue;
        }
        let trimmed = line.trim();
        if let Some(heading) = heading_text(trimmed) {
            in_sources = heading.eq_ignore_ascii_case("sources");
            continue;
        }
        let Some(item) = in_sources.then(|| list_item(trimmed)).flatten() else {
            continue;
        };
        // An item written in the inline form was found above.
        if item.starts_with('[') {
            continue;
        }
        let parsed = match parse_source_entry(item) {
            Some(citation) => Some((citation, None)),
            None if malformed => malformed_source_entry(item).map(|(c, why)| (c, Some(why))),
            None => None,
        };
        if let Some((citation, problem)) = parsed {
            let at = start + line.find(item).unwrap_or(0);
            found.push(Located {
                citation,
                span: at..at + item.len(),
                line: line_of(text, start),
                problem,
            });
        }
    }
    found.sort_by_key(|l| l.span.start);
    found
}

/// A bracket's inside as a citation, or `None`.
pub fn parse_bracket_content(content: &str) -> Option<Citation> {
    if content.contains(['\n', '\r']) {
        return None;
    }
    let (target, lines) = match content.rsplit_once(',') {
        Some((target, range)) => match range.trim_start_matches(' ').parse::<LineRange>() {
            Ok(lines) => (target, Some(lines)),
            Err(_) => (content, None),
        },
        None => (content, None),
    };
    citation_from_target(target, lines, false)
}

/// One `## Sources` item: `path@hash`, `path@hash (L42-58)`, `path (L88) [un-versioned]`.
pub fn parse_source_entry(item: &str) -> Option<Citation> {
    let mut rest = item.trim();
    let tagged = rest.ends_with("[un-versioned]");
    rest = rest.trim_end_matches("[un-versioned]").trim_end();
    let mut lines = None;
    if let Some(inner) = rest.strip_suffix(')') {
        if let Some((target, range)) = inner.rsplit_once(" (") {
            lines = Some(range.parse::<LineRange>().ok()?);
            rest = target;
        }
    }
    let citation = citation_from_target(rest, lines, true)?;
    // A tag that contradicts a hash is not our footer format.
    (!(tagged && citation.is_versioned())).then_some(citation)
}

/// A bracket's inside that is a citation written wrongly, with what is wrong: see the
/// module doc. `None` when it is well-formed or no citation at all.
pub fn malformed_bracket(content: &str) -> Option<(Citation, String)> {
    if content.contains(['\n', '\r']) {
        return None;
    }
    let (target, range) = match content.rsplit_once(',') {
        Some((target, range)) if looks_like_range(range.trim_start_matches(' ')) => {
            (target, Some(range.trim_start_matches(' ')))
        }
        _ => (content, None),
    };
    malformed_target(target, range)
}

/// A `## Sources` item that is a citation written wrongly (`- a.ts@DEADBEEF (L0)`).
fn malformed_source_entry(item: &str) -> Option<(Citation, String)> {
    let rest = item.trim().trim_end_matches("[un-versioned]").trim_end();
    let (target, range) = match rest.strip_suffix(')').and_then(|inner| inner.rsplit_once(" (")) {
        Some((target, range)) if looks_like_range(range) => (target, Some(range)),
        _ => (rest, None),
    };
    malformed_target(target, range)
}

/// `target` (`path` or `path@hash`) and a line range text, when one of them is wrong and
/// the path looks like a file's.
fn malformed_target(target: &str, range: Option<&str>) -> Option<(Citation, String)> {
    let mut problems = Vec::new();
    let lines = range.and_then(|r| match r.parse::<LineRange>() {
        Ok(lines) => Some(lines),
        Err(e) => {
            problems.push(e);
            None
        }
    });
    let (path, hash) = match target.rsplit_once('@') {
        Some((path, hash)) if looks_like_hash(hash) => (path, Some(hash)),
        _ => (target, None),
    };
    if let Some(hash) = hash.filter(|h| !is_content_hash(h)) {
        problems.push(format!("`{hash}` is not a content hash (16 lowercase hex characters)"));
    }
    if problems.is_empty() || !valid_path(path) || !looks_like_path(path) {
        return None;
    }
    let citation = Citation {
        artifact_id: path.to_string(),
        content_hash: hash.map(str::to_string),
        lines,
    };
    Some((citation, problems.join("; ")))
}

/// Meant as a line range, whether or not it is one: `L` and a short word (`L42`, `L-3`,
/// `Lx`, `L50-5`), or a bare number or range (`12`, `12-15`) — never prose with a space.
fn looks_like_range(text: &str) -> bool {
    let word =
        |rest: &str| (1..=16).contains(&rest.len()) && rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    match text.strip_prefix('L') {
        Some(rest) => word(rest),
        None => {
            word(text)
                && text.chars().any(|c| c.is_ascii_digit())
                && text.chars().all(|c| c.is_ascii_digit() || c == '-')
        }
    }
}

/// Meant as a content hash: hex of a plausible hash length in any case, or a word of
/// exactly the 16 characters a content hash has (`zzzzzzzzzzzzzzzz`).
fn looks_like_hash(text: &str) -> bool {
    let hex = (6..=64).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_hexdigit());
    let slot = text.len() == 16 && text.bytes().all(|b| b.is_ascii_alphanumeric());
    hex || slot
}

/// `path@hash16` or a bare path. A bare path is a citation only with lines (inline) or in
/// a footer, and only when it looks like a path.
fn citation_from_target(target: &str, lines: Option<LineRange>, in_footer: bool) -> Option<Citation> {
    if let Some((path, hash)) = target.rsplit_once('@') {
        if is_content_hash(hash) && valid_path(path) {
            return Some(Citation::versioned(path, hash, lines));
        }
        if looks_like_hash(hash) {
            return None; // a hash written wrongly: malformed, not a file named `a.ts@DEADBEEF`
        }
    }
    let path_only = (lines.is_some() || in_footer) && valid_path(target) && looks_like_path(target);
    path_only.then(|| Citation::path_only(target, lines))
}

fn valid_path(path: &str) -> bool {
    !path.is_empty()
        && path.len() <= MAX_PATH
        && path.trim() == path
        && !path.starts_with(['^', '#', '!'])
        && !path.contains("://")
        && !path
            .chars()
            .any(|c| c.is_control() || matches!(c, '<' | '>' | '|' | '"' | '*' | '?' | '`'))
        && path.chars().any(|c| c != '.' && c != '/')
}

/// A path with a `/`, or a single word that is a file name: `name.ext` (the extension
/// alphanumeric with a letter, so `3.2` is not one) or a well-known bare name. Prose like
/// `[see above, L5]` or `[chapter 3.2, L4]` fails both.
fn looks_like_path(path: &str) -> bool {
    if path.contains('/') {
        return true;
    }
    if path.contains(char::is_whitespace) {
        return false;
    }
    let extension = path
        .rsplit_once('.')
        .filter(|(stem, _)| !stem.is_empty())
        .map(|(_, e)| e);
    let is_extension = |e: &str| {
        e.len() <= 12 && e.chars().all(|c| c.is_ascii_alphanumeric()) && e.chars().any(|c| c.is_ascii_alphabetic())
    };
    extension.is_some_and(is_extension) || BARE_NAMES.contains(&path)
}

fn escaped(bytes: &[u8], i: usize) -> bool {
    bytes[..i].iter().rev().take_while(|b| **b == b'\\').count() % 2 == 1
}

/// The `]` that closes the `[` at `open` on the same line (escaped brackets ignored).
fn matching_bracket(bytes: &[u8], open: usize) -> Option<usize> {
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
fn at_line_start(bytes: &[u8], i: usize) -> bool {
    let line_start = bytes[..i].iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
    i - line_start <= 3 && bytes[line_start..i].iter().all(|b| *b == b' ')
}

fn line_of(text: &str, i: usize) -> usize {
    text.as_bytes()[..i].iter().filter(|b| **b == b'\n').count() + 1
}

/// The text of an ATX heading line (`## Sources` → `Sources`).
fn heading_text(line: &str) -> Option<&str> {
    let hashes = line.len() - line.trim_start_matches('#').len();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = &line[hashes..];
    (rest.is_empty() || rest.starts_with(' ')).then(|| rest.trim().trim_end_matches('#').trim())
}

/// The text of a `- x` / `* x` / `+ x` list item line.
fn list_item(line: &str) -> Option<&str> {
    let rest = line.strip_prefix(['-', '*', '+'])?;
    rest.starts_with([' ', '\t']).then(|| rest.trim())
}

/// Byte ranges of fenced code blocks and inline code spans.
fn code_regions(text: &str) -> Vec<Range<usize>> {
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
fn code_spans(text: &str, line: Range<usize>, regions: &mut Vec<Range<usize>>) {
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

#[cfg(test)]
#[path = "parser_tests.rs"]
mod tests;

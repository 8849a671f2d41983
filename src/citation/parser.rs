//! The strict citation parser: inline `[path@hash16, L42-58]`, `[path@hash16, L42]`,
//! `[path@hash16]`, path-only `[path, L88]` / `[path, L88-90]`, and the items of a
//! `## Sources` footer. One bracket may cite several ranges (`[path@hash16, L3, L7-9]`, one
//! citation each) or several citations separated by `;` (`[a.rs@…, L3; b.rs@…, L8]`), and
//! an en or em dash in a range is a hyphen (`L3–5`).
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
//! characters (`@DEADBEEF`), a line range that is no range (`L0`, `L50-5`, `L-3`, `Lx`, a
//! bare `12`, `lines 3-5`), a range with no comma before it (`[a.rs@hash L3]`,
//! `[a.rs L3]`), other text after a good hash (`[a.rs@hash, see L3]`), or several
//! citations run together with commas, is found as *malformed*, with the problem — by
//! [`parse_for_verification`], never by the parsers whose citations are carried into
//! aggregates.

use std::ops::Range;

use super::markdown::{at_line_start, code_regions, escaped, heading_text, line_of, list_item, matching_bracket};
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
            let cited = bracket_citations(&text[i + 1..close], malformed);
            if !cited.is_empty() {
                let line = line_of(text, i);
                // Several citations of one bracket share its span: it is what was written.
                found.extend(cited.into_iter().map(|(citation, problem)| Located {
                    citation,
                    span: i..close + 1,
                    line,
                    problem,
                }));
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
        let parsed = source_entry(item).filter(|(_, problem)| malformed || problem.is_none());
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

/// The citations of a bracket's inside, each with its problem when it is written wrongly
/// (only when `malformed`; otherwise such a bracket yields nothing). Empty when the bracket
/// is no citation at all.
///
/// One bracket may hold one citation (`path@hash, L3-5`), one per line range
/// (`path@hash, L3, L7-9`), or several citations separated by `;`
/// (`a.rs@hash, L3; b.rs@hash, L8`). A path may hold `,` and `;` itself: a piece between
/// `;`s that is no citation is joined to the next (`a;b.rs@hash, L3; c.rs@hash, L8` is two
/// citations, the first of `a;b.rs`), and the split is taken only when every piece then is
/// one.
pub fn bracket_citations(content: &str, malformed: bool) -> Vec<(Citation, Option<String>)> {
    if content.contains(['\n', '\r']) {
        return Vec::new();
    }
    if content.contains(';') {
        let mut found = Vec::new();
        let mut start = 0;
        for (at, _) in content.match_indices(';').chain(std::iter::once((content.len(), ""))) {
            let part = one_citation(content[start..at].trim(), malformed);
            if !part.is_empty() {
                found.extend(part);
                start = (at + 1).min(content.len());
            }
        }
        if start >= content.len() && !found.is_empty() {
            return found;
        }
    }
    one_citation(content, malformed)
}

/// One citation `target[, range]*`: the comma-separated items at the end that are meant as
/// line ranges are its ranges (each one citation), the rest is `path@hash` or a path.
fn one_citation(content: &str, malformed: bool) -> Vec<(Citation, Option<String>)> {
    let mut target = content;
    let mut ranges: Vec<&str> = Vec::new();
    while let Some((before, last)) = target.rsplit_once(',') {
        let last = last.trim();
        if !looks_like_range(last) {
            break;
        }
        ranges.push(last);
        target = before;
    }
    ranges.reverse();
    let lines: Vec<Result<LineRange, String>> = ranges.iter().map(|r| r.parse::<LineRange>()).collect();
    let Some((citation, problems)) = target_citation(target, !lines.is_empty(), false) else {
        return Vec::new();
    };
    if !malformed && (!problems.is_empty() || lines.iter().any(Result::is_err)) {
        return Vec::new();
    }
    if lines.is_empty() {
        return vec![(citation, joined(problems))];
    }
    lines
        .into_iter()
        .map(|range| {
            let mut problems = problems.clone();
            let lines = range.map_err(|e| problems.push(e)).ok();
            (
                Citation {
                    lines,
                    ..citation.clone()
                },
                joined(problems),
            )
        })
        .collect()
}

fn joined(problems: Vec<String>) -> Option<String> {
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// `path@hash` or a path, with what is wrong with it: a hash written wrongly (`@DEADBEEF`),
/// text after a good hash that is not a comma and a line range (`@hash L3`,
/// `@hash lines 3-5`), a line range with no comma before it (`src/a.rs L3`), several
/// citations run together with commas. `None` when it is no citation: a path-only one needs
/// lines (or a footer) and a path that looks like one.
fn target_citation(target: &str, has_lines: bool, in_footer: bool) -> Option<(Citation, Vec<String>)> {
    let citation = |path: &str, hash: Option<&str>| Citation {
        artifact_id: path.to_string(),
        content_hash: hash.map(str::to_string),
        lines: None,
    };
    let file_like = |path: &str| valid_path(path) && looks_like_path(path);
    if let Some((path, hash)) = target.rsplit_once('@') {
        if is_content_hash(hash) && valid_path(path) {
            if let Some((_, earlier, _)) = hash_then_text(path).filter(|_| looks_like_path(path)) {
                let why = format!("several citations run together (after `@{earlier}`): separate them with `;`");
                return Some((citation(path, Some(hash)), vec![why]));
            }
            return Some((citation(path, Some(hash)), Vec::new()));
        }
        if looks_like_hash(hash) {
            // A hash written wrongly: malformed, not a file named `a.ts@DEADBEEF`.
            let why = format!("`{hash}` is not a content hash (16 lowercase hex characters)");
            return file_like(path).then(|| (citation(path, Some(hash)), vec![why]));
        }
        if let Some((path, hash, rest)) = hash_then_text(target).filter(|(p, _, _)| file_like(p)) {
            let rest = rest.trim_start_matches([' ', ',']).trim_end();
            let why = if looks_like_range(rest) {
                format!("a comma must separate the hash from the line range: `{hash}, {rest}`")
            } else {
                format!("`{rest}` after the hash is not a line range (`, L42` or `, L42-58`)")
            };
            return Some((citation(path, Some(hash)), vec![why]));
        }
    }
    if let Some((path, range)) = target.rsplit_once(' ') {
        if range.starts_with('L') && looks_like_range(range) && !path.contains(' ') && file_like(path) {
            let why = format!("a comma must separate the path from the line range: `{path}, {range}`");
            return Some((citation(path, None), vec![why]));
        }
    }
    ((has_lines || in_footer) && file_like(target)).then(|| (citation(target, None), Vec::new()))
}

/// The last `@hash16` of `target` that a space or a comma follows (` L3`, `, L3`): the path
/// before it, the hash and the text after it.
fn hash_then_text(target: &str) -> Option<(&str, &str, &str)> {
    target.match_indices('@').rev().find_map(|(at, _)| {
        let hash = target.get(at + 1..at + 17)?;
        let rest = &target[at + 17..];
        (is_content_hash(hash) && rest.starts_with([' ', ','])).then(|| (&target[..at], hash, rest))
    })
}

/// One `## Sources` item: `path@hash`, `path@hash (L42-58)`, `path (L88) [un-versioned]`.
pub fn parse_source_entry(item: &str) -> Option<Citation> {
    match source_entry(item) {
        Some((citation, None)) => Some(citation),
        _ => None,
    }
}

/// A `## Sources` item as a citation, with its problem when it is written wrongly
/// (`- a.ts@DEADBEEF (L0)`).
fn source_entry(item: &str) -> Option<(Citation, Option<String>)> {
    let mut rest = item.trim();
    let tagged = rest.ends_with("[un-versioned]");
    rest = rest.trim_end_matches("[un-versioned]").trim_end();
    let mut lines = None;
    let mut problems = Vec::new();
    if let Some((target, range)) = rest.strip_suffix(')').and_then(|inner| inner.rsplit_once(" (")) {
        if looks_like_range(range) {
            match range.parse::<LineRange>() {
                Ok(range) => lines = Some(range),
                Err(e) => problems.push(e),
            }
            rest = target;
        }
    }
    let (mut citation, mut target_problems) = target_citation(rest, lines.is_some(), true)?;
    // A tag that contradicts a hash is not our footer format.
    if tagged && citation.is_versioned() && target_problems.is_empty() {
        return None;
    }
    problems.append(&mut target_problems);
    citation.lines = lines;
    Some((citation, joined(problems)))
}

/// Meant as a line range, whether or not it is one: `L` and a short word (`L42`, `L-3`,
/// `Lx`, `L50-5`, `L50–5`), a bare number or range (`12`, `12-15`), or `line`/`lines` and
/// numbers (`lines 3-5`) — never other prose with a space.
fn looks_like_range(text: &str) -> bool {
    let dash = |c: char| matches!(c, '-' | '\u{2013}' | '\u{2014}');
    let word = |rest: &str| {
        // (Longer than any two line numbers: `L1-99999999999999999999` is meant as a range,
        // and reported as one that cannot be.)
        (1..=32).contains(&rest.chars().count()) && rest.chars().all(|c| c.is_ascii_alphanumeric() || dash(c))
    };
    let numbers = |rest: &str| {
        rest.chars().any(|c| c.is_ascii_digit()) && rest.chars().all(|c| c.is_ascii_digit() || dash(c) || c == 'L')
    };
    let lower = text.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("lines").or_else(|| lower.strip_prefix("line")) {
        let rest = rest.trim_start_matches([' ', '.']);
        return rest.len() <= 24 && numbers(&rest.replace(' ', ""));
    }
    match text.strip_prefix('L') {
        Some(rest) => word(rest),
        None => word(text) && numbers(text),
    }
}

/// Meant as a content hash: hex of a plausible hash length in any case, or a word of
/// exactly the 16 characters a content hash has (`zzzzzzzzzzzzzzzz`).
fn looks_like_hash(text: &str) -> bool {
    let hex = (6..=64).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_hexdigit());
    let slot = text.len() == 16 && text.bytes().all(|b| b.is_ascii_alphanumeric());
    hex || slot
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

#[cfg(test)]
#[path = "parser_tests.rs"]
mod tests;

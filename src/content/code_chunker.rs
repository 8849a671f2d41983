//! Source code chunking: cut at top-level item boundaries (def, class, fn, impl, func,
//! export, …) and pack whole items into chunks of up to `code_max_lines`; an item longer
//! than that is cut at its nested items (methods), and only an item with none is cut into
//! windows. The file's import block is prepended to every chunk that does not hold it.
//! A file without any boundary falls back to 200-line windows with 20 lines of overlap.

use super::chunk::{all_lines, ChunkContext, ChunkOptions, ChunkStrategy, Draft};
use super::code_rules::{rules_for, CodeRules};
use super::content_type::Language;
use super::line_index::LineIndex;
use super::line_range::{pack, segments_between, windows, LineRange, Split};

pub(crate) fn chunk_code(index: &LineIndex<'_>, language: Option<Language>, opts: &ChunkOptions) -> Vec<Draft> {
    let rules = rules_for(language);
    let whole = all_lines(index);
    let imports = import_block(index, rules, opts.max_import_lines);
    let top = item_starts(index, rules, whole, Depth::Margin);
    let max = opts.code_max_lines.max(1);
    let (ranges, strategy, note) = if whole.len() <= max {
        (vec![whole], ChunkStrategy::Whole, None)
    } else if top.is_empty() {
        let fallback = windows(whole, opts.fallback.lines, opts.fallback.overlap, 0, |_| false);
        (
            fallback,
            ChunkStrategy::Windows,
            Some("no top-level definitions found; cut into overlapping windows"),
        )
    } else {
        let segments = segments_between(whole, &top);
        let ranges = pack(&segments, max, |item| split_item(index, rules, item, opts));
        (ranges, ChunkStrategy::Boundaries, None)
    };
    ranges
        .into_iter()
        .map(|lines| {
            let mut context = ChunkContext::new(strategy);
            context.note = note.map(str::to_owned);
            let body = index.slice(lines.start, lines.end);
            let content = match imports.filter(|imports| imports.end < lines.start) {
                Some(block) => {
                    context.prepended = Some(block);
                    with_imports(index, block, lines, body, language)
                }
                None => body.to_owned(),
            };
            Draft {
                lines,
                content,
                context,
            }
        })
        .collect()
}

/// The import block, then a one-line comment naming the lines left out (when any), then
/// the chunk's own lines.
fn with_imports(
    index: &LineIndex<'_>,
    block: LineRange,
    lines: LineRange,
    body: &str,
    language: Option<Language>,
) -> String {
    let head = index.slice(block.start, block.end);
    let mut out = String::with_capacity(head.len() + body.len() + 80);
    out.push_str(head);
    if !head.ends_with('\n') {
        out.push('\n');
    }
    if block.end + 1 < lines.start {
        let comment = language.map_or("//", Language::line_comment);
        let close = if comment == "(*" { " *)" } else { "" };
        out.push_str(&format!(
            "{comment} … lines {}–{} are not in this chunk; it continues at line {}{close}\n",
            block.end + 1,
            lines.start - 1,
            lines.start
        ));
    }
    out.push_str(body);
    out
}

/// An item longer than the chunk limit: its nested items (methods of a class, functions in
/// a block) as segments, or windows when it has none.
fn split_item(index: &LineIndex<'_>, rules: &CodeRules, item: LineRange, opts: &ChunkOptions) -> Split {
    let own_indent = (item.start..=item.end)
        .map(|n| split_indent(index.line(n)))
        .find(|(_, t)| !t.is_empty())
        .map_or(0, |(indent, _)| indent);
    let body = LineRange::new(item.start + 1, item.end);
    let inner = item_starts(index, rules, body, Depth::DeeperThan(own_indent));
    let segments = segments_between(item, &inner);
    if segments.len() > 1 {
        Split::Segments(segments)
    } else {
        Split::Windows(windows(item, opts.fallback.lines, opts.fallback.overlap, 0, |_| false))
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Depth {
    /// Items at indentation 0.
    Margin,
    /// Items at the smallest indentation deeper than the given one at which any item
    /// opens: the methods of a class.
    DeeperThan(usize),
}

/// The first lines of the items in `range`, each moved up over the decorators, attributes
/// and doc comments attached to it; sorted, without duplicates.
fn item_starts(index: &LineIndex<'_>, rules: &CodeRules, range: LineRange, depth: Depth) -> Vec<usize> {
    let mut opens: Vec<(usize, usize)> = Vec::new();
    let mut block_comment = false;
    for n in range.start..=range.end {
        let line = index.line(n);
        let (indent, t) = split_indent(line);
        // Lines inside /* … */ never open an item.
        if block_comment {
            block_comment = !t.contains("*/");
            continue;
        }
        if t.starts_with("/*") && !t.contains("*/") {
            block_comment = true;
            continue;
        }
        if !t.is_empty() && rules.opens_item(t) && !rules.is_comment_only(t) {
            opens.push((n, indent));
        }
    }
    let level = match depth {
        Depth::Margin => 0,
        Depth::DeeperThan(outer) => match opens.iter().map(|&(_, indent)| indent).filter(|&i| i > outer).min() {
            Some(level) => level,
            None => return Vec::new(),
        },
    };
    let mut starts: Vec<usize> = opens
        .into_iter()
        .filter(|&(_, indent)| indent == level)
        .map(|(n, indent)| attached_start(index, rules, n, indent, range.start))
        .collect();
    starts.sort_unstable();
    starts.dedup();
    starts
}

/// Walks up from item line `n` over the lines attached to it.
fn attached_start(index: &LineIndex<'_>, rules: &CodeRules, n: usize, indent: usize, floor: usize) -> usize {
    let mut start = n;
    while start > floor {
        let (above_indent, t) = split_indent(index.line(start - 1));
        // Doc-comment continuation lines (` * text`) sit one column in.
        if t.is_empty() || above_indent < indent || above_indent > indent + 1 || !rules.attaches(t) {
            break;
        }
        start -= 1;
    }
    start
}

/// The file's import block: from its first import to the last import before the first
/// line that is neither an import, a comment, a blank line nor a module docstring; cut to
/// at most `max_lines` lines at an import's end.
fn import_block(index: &LineIndex<'_>, rules: &CodeRules, max_lines: usize) -> Option<LineRange> {
    let mut first: Option<usize> = None;
    let mut last: Option<usize> = None;
    let mut n = 1;
    while n <= index.len() {
        let (_, t) = split_indent(index.line(n));
        let end = if t.is_empty() || (n == 1 && t.starts_with("#!")) {
            n
        } else if rules.imports(t) {
            let end = statement_end(index, n);
            if first.is_some_and(|f| end + 1 - f > max_lines) {
                break;
            }
            first.get_or_insert(n);
            last = Some(end);
            end
        } else if let Some(end) = comment_or_docstring_end(index, rules, n, t) {
            end
        } else {
            break;
        };
        n = end + 1;
    }
    let (first, last) = (first?, last?);
    (last + 1 - first <= max_lines).then(|| LineRange::new(first, last))
}

/// The last line of a statement that starts on line `n` and may span lines: an open
/// `(`/`{` (`from x import (`, `use a::{`, `import {`, Go's `import (`) closes later.
fn statement_end(index: &LineIndex<'_>, n: usize) -> usize {
    let mut depth: i64 = 0;
    let mut m = n;
    loop {
        for c in index.line(m).chars() {
            match c {
                '(' | '{' | '[' => depth += 1,
                ')' | '}' | ']' => depth -= 1,
                _ => {}
            }
        }
        if depth <= 0 || m >= index.len() || m - n > 200 {
            return m;
        }
        m += 1;
    }
}

/// The last line of a comment or docstring starting on line `n`, if `t` starts one.
fn comment_or_docstring_end(index: &LineIndex<'_>, rules: &CodeRules, n: usize, t: &str) -> Option<usize> {
    let closing = if t.starts_with("\"\"\"") {
        "\"\"\""
    } else if t.starts_with("'''") {
        "'''"
    } else if t.starts_with("/*") {
        "*/"
    } else if rules.is_comment(t) {
        return Some(n);
    } else {
        return None;
    };
    // Closed on the same line (after the opening delimiter)?
    if t[closing.len().min(t.len())..].contains(closing) {
        return Some(n);
    }
    (n + 1..=index.len())
        .find(|&m| index.line(m).contains(closing))
        .or(Some(index.len()))
}

/// The indentation width (spaces and tabs) and the rest of the line.
fn split_indent(line: &str) -> (usize, &str) {
    let t = line.trim_start_matches([' ', '\t']);
    (line.len() - t.len(), t.trim_end())
}

impl CodeRules {
    /// A comment line never opens an item, even where comment and item prefixes overlap
    /// (`#` comments against `#define`).
    fn is_comment_only(&self, t: &str) -> bool {
        self.is_comment(t) && !t.starts_with("#define")
    }
}

#[cfg(test)]
#[path = "code_chunker_tests.rs"]
mod tests;

//! Source code chunking: the file's items (functions, classes, top-level statements; from
//! the language's tree-sitter grammar, [`super::code_grammar`], or for Kotlin, Scala, Swift
//! and Zig the lexical scanner of [`super::code_scan`]) are packed whole into chunks of up
//! to `code_max_lines` lines and the token budget. An item too big for a chunk is cut where
//! the grammar allows:
//!
//! - a class (impl, struct, interface, namespace, object literal, `describe` callback…)
//!   between its members, which join the packing; each chunk that starts inside it carries
//!   the headers of every block it is in (outermost first) after the import block;
//! - a function is never cut while it fits the budget, even over the line target, counting
//!   its decorators and its doc comment (which goes to the chunk before only when the
//!   function needs the room); one that does not fit is cut between its top-level
//!   statements, its signature repeated as a header;
//! - only a statement bigger than the budget is cut inside, into overlapping windows that
//!   do not end inside a string or comment, with a note saying so — and a single line
//!   bigger than the budget into pieces of its own.
//!
//! The import block (after a shebang, comments, a module docstring, `'use strict'`,
//! attributes, a package clause or an include guard; in C/C++ the includes under `#if`
//! too) is prepended to every chunk that does not hold it, followed by a comment line
//! naming the lines left out. Prepended lines and markers count against the budget: the
//! headers take at most a third of it, the import block what is left of that third; what
//! does not fit is named in the chunk's note, never left out silently.
//!
//! Languages with neither (Lua, Elixir, Haskell, OCaml, shell, unknown) use the seed's
//! keyword-and-indentation rules of [`super::code_rules`] to find items and the members of
//! an item; as those items may be anything, one over the line target is cut into windows
//! (the seed's fallback when no boundary is found).

use std::cell::RefCell;
use std::collections::HashMap;

use super::chunk::{ChunkContext, ChunkOptions, ChunkStrategy, Content, Draft};
use super::code_grammar::{self, Grammar};
use super::code_rules::{rules_for, CodeRules};
use super::code_scan::{scan, scan_knows, Body, BodyKind, Item};
use super::content_type::Language;
use super::line_index::LineIndex;
use super::line_range::{pack, segments_between, LineRange, Packed, Split};
use super::windows::{bytes_of, cut_line, windows_around, Piece};

/// The most bytes one marker line (`// … lines 12–340 are not in this chunk; …`) of a file
/// of `lines` lines takes, in `language`'s comment syntax.
fn marker_bytes(language: Option<Language>, lines: usize) -> usize {
    let comment = language.map_or("//", Language::line_comment);
    let n = lines.max(1);
    format!("{comment} … lines {n}–{n} are not in this chunk; it continues at line {n} *)\n").len()
}

pub(crate) fn chunk_code(index: &LineIndex<'_>, language: Option<Language>, opts: &ChunkOptions) -> Vec<Draft> {
    let rules = rules_for(language);
    let whole = LineRange::new(1, index.len());
    let max_bytes = opts.max_bytes();
    if whole.len() <= opts.code_max_lines.max(1) && bytes_of(index, whole) <= max_bytes {
        return vec![Draft::verbatim(index, whole, ChunkContext::new(ChunkStrategy::Whole))];
    }
    let tree = language
        .and_then(Grammar::of)
        .and_then(|grammar| grammar.parse(index.text()).map(|tree| (grammar, tree)));
    let (items, block, no_cut) = match &tree {
        Some((grammar, tree)) => (
            code_grammar::items(grammar, tree, index.text(), index.len()),
            code_grammar::import_block(grammar, tree, index.text(), opts.max_import_lines),
            code_grammar::no_cut_lines(grammar, tree, index.len()),
        ),
        None => (
            scan(index, language).unwrap_or_else(|| rule_items(index, rules, whole, 0)),
            import_block(index, rules, language, opts.max_import_lines),
            Vec::new(),
        ),
    };
    let grammar = tree.is_some() || scan_knows(language);
    let marker = marker_bytes(language, index.len());
    let fits_third = |block: LineRange| bytes_of(index, block) + marker <= max_bytes / 3;
    let imports = block.filter(|&b| fits_third(b));
    let planner = Planner {
        index,
        language,
        opts,
        imports,
        left_out: block.filter(|&b| !fits_third(b)),
        max_bytes,
        marker_bytes: marker,
        grammar,
        no_cut,
        items: RefCell::new(items.iter().map(|i| (i.lines, i.clone())).collect()),
        classes: RefCell::new(Vec::new()),
    };
    planner.plan(&items)
}

struct Planner<'a, 't> {
    index: &'a LineIndex<'t>,
    language: Option<Language>,
    opts: &'a ChunkOptions,
    imports: Option<LineRange>,
    /// An import block too big to prepend (more than a third of the budget): the chunks
    /// after it say so.
    left_out: Option<LineRange>,
    max_bytes: usize,
    /// The most bytes one marker line takes.
    marker_bytes: usize,
    /// The items come from a scanner that knows the language's grammar: an item is a
    /// whole function or statement, kept whole over the line target while it fits the
    /// budget. Items found by the line rules may be anything: over the line target, they
    /// are cut into windows.
    grammar: bool,
    /// `no_cut[n]`: line `n` continues a string or comment of the line above, so a window
    /// does not end just before it (empty without a grammar).
    no_cut: Vec<bool>,
    /// Every item met so far by its lines: the top-level ones, and the members of the
    /// classes that were split.
    items: RefCell<HashMap<LineRange, Item>>,
    /// The classes that were split, with their headers.
    classes: RefCell<Vec<(LineRange, LineRange)>>,
}

impl Planner<'_, '_> {
    /// Packs the items into drafts. A class that does not fit is replaced by its header
    /// lines and members, which join the packing; a chunk that starts inside a class gets
    /// its header prepended.
    fn plan(&self, items: &[Item]) -> Vec<Draft> {
        let max_lines = self.opts.code_max_lines.max(1);
        let fits =
            |r: LineRange| r.len() <= max_lines && bytes_of(self.index, r) <= self.available(&self.headers_at(r.start));
        let segments: Vec<LineRange> = items.iter().map(|i| i.lines).collect();
        let packed = pack(&segments, fits, |segment| {
            let item = self.items.borrow().get(&segment).cloned();
            let headers = self.headers_at(segment.start);
            let available = self.available(&headers);
            let body = item.as_ref().and_then(|i| i.body.as_ref());
            let bytes = bytes_of(self.index, segment);
            let mut drafts = Vec::new();
            if let Some(body) = body.filter(|b| b.kind == BodyKind::Class) {
                return Split::Segments(self.open_class(segment, body));
            }
            if self.grammar && bytes <= available {
                // One function over the line target: whole, while it fits the budget.
                drafts.push(self.draft(segment, &headers, ChunkStrategy::Boundaries));
                return Split::Final(drafts);
            }
            if let Some(parts) = item.as_ref().and_then(|i| self.detach_comment(i)) {
                return Split::Segments(parts);
            }
            if self.grammar
                && self.imports.is_some()
                && bytes <= self.max_bytes.saturating_sub(self.header_bytes(&headers))
            {
                // A function that fits only without the import block is sent without it,
                // never cut for it.
                drafts.push(self.draft_without_imports(segment, &headers));
                return Split::Final(drafts);
            }
            match body {
                Some(body) => return Split::Segments(self.open_class(segment, body)),
                None => self.windows(segment, &headers, available, &mut drafts),
            }
            Split::Final(drafts)
        });
        packed
            .into_iter()
            .map(|p| match p {
                Packed::Range(lines) => self.draft(lines, &self.headers_at(lines.start), ChunkStrategy::Boundaries),
                Packed::Final(draft) => draft,
            })
            .collect()
    }

    /// A class too big for one chunk: its lines up to the header's end, then its members.
    fn open_class(&self, item: LineRange, body: &Body) -> Vec<LineRange> {
        let head = LineRange::new(item.start, body.header.end);
        let mut items = self.items.borrow_mut();
        items.insert(
            head,
            Item {
                lines: head,
                lead: 0,
                body: None,
            },
        );
        let mut parts = vec![head];
        for member in &body.members {
            items.insert(member.lines, member.clone());
            parts.push(member.lines);
        }
        self.classes.borrow_mut().push((item, body.header));
        parts
    }

    /// An item that fits only without the comment lines above its code (a long doc
    /// comment): the comment and the code as two segments, so the comment may close the
    /// chunk before and the code is never cut for it.
    fn detach_comment(&self, item: &Item) -> Option<Vec<LineRange>> {
        if !self.grammar || item.lead == 0 || item.lead >= item.lines.len() {
            return None;
        }
        let comment = LineRange::new(item.lines.start, item.lines.start + item.lead - 1);
        let code = LineRange::new(comment.end + 1, item.lines.end);
        if bytes_of(self.index, code) > self.available(&self.headers_at(code.start)) {
            return None;
        }
        let mut items = self.items.borrow_mut();
        for lines in [comment, code] {
            items.insert(
                lines,
                Item {
                    lines,
                    lead: 0,
                    body: None,
                },
            );
        }
        Some(vec![comment, code])
    }

    /// The headers of the split classes and functions that line `start` is in (below
    /// their header), outermost first.
    fn enclosing(&self, start: usize) -> Vec<LineRange> {
        let mut headers: Vec<LineRange> = self
            .classes
            .borrow()
            .iter()
            .filter(|(class, header)| class.contains(start) && header.end < start)
            .map(|&(_, header)| header)
            .collect();
        headers.sort_by_key(|h| h.start);
        headers.dedup();
        headers
    }

    /// The headers prepended to a chunk starting at line `start`: the enclosing ones, the
    /// outermost left out while they take more than a third of the budget (the innermost
    /// — the signature of the function a chunk is cut from — says most).
    fn headers_at(&self, start: usize) -> Vec<LineRange> {
        let mut headers = self.enclosing(start);
        while !headers.is_empty() && self.header_bytes(&headers) > self.max_bytes / 3 {
            headers.remove(0);
        }
        headers
    }

    /// The import block when it fits a third of the budget beside `headers`: the headers
    /// come first, as they say where the chunk is.
    fn imports_with(&self, headers: &[LineRange]) -> Option<LineRange> {
        self.imports
            .filter(|&b| bytes_of(self.index, b) + self.marker_bytes + self.header_bytes(headers) <= self.max_bytes / 3)
    }

    /// The bytes left for a chunk's own lines under `headers`.
    fn available(&self, headers: &[LineRange]) -> usize {
        self.max_bytes.saturating_sub(self.prefix_bytes(headers))
    }

    /// An item bigger than the budget: overlapping windows, each with the prepended
    /// context, and lines bigger than the budget cut alone.
    fn windows(&self, item: LineRange, headers: &[LineRange], available: usize, out: &mut Vec<Draft>) {
        let note = format!("lines {item} are one item longer than a chunk; it is cut into overlapping windows");
        let inside_literal = |n: usize| self.no_cut.get(n).copied().unwrap_or(false);
        for piece in windows_around(self.index, item, self.opts.fallback, inside_literal, available) {
            match piece {
                Piece::Window { lines, overlap_before } => {
                    let mut draft = self.draft(lines, headers, ChunkStrategy::Windows);
                    draft.context.overlap_before = overlap_before;
                    draft.context.note = Some(match draft.context.note.take() {
                        Some(other) => format!("{note}; {other}"),
                        None => note.clone(),
                    });
                    out.push(draft);
                }
                Piece::LongLine(n) => out.extend(cut_line(self.index, n, self.max_bytes)),
            }
        }
    }

    /// The most bytes the prepended context can take: imports, headers, and a marker after
    /// each.
    fn prefix_bytes(&self, headers: &[LineRange]) -> usize {
        let imports = self
            .imports_with(headers)
            .map_or(0, |b| bytes_of(self.index, b) + self.marker_bytes);
        // One marker's room more, as slack for the marker before the chunk's own lines.
        imports + self.header_bytes(headers) + if headers.is_empty() { self.marker_bytes } else { 0 }
    }

    /// The most bytes the class headers can take, with their markers.
    fn header_bytes(&self, headers: &[LineRange]) -> usize {
        if headers.is_empty() {
            return 0;
        }
        let headers: usize = headers
            .iter()
            .map(|&h| bytes_of(self.index, h) + 1 + self.marker_bytes)
            .sum();
        headers + self.marker_bytes
    }

    /// A chunk of lines `lines`, after the imports and the headers that are above it.
    fn draft(&self, lines: LineRange, headers: &[LineRange], strategy: ChunkStrategy) -> Draft {
        self.draft_with(lines, headers, strategy, self.imports_with(headers))
    }

    /// A chunk of one item that fits only without the import block: after its headers,
    /// with a note saying the imports are left out.
    fn draft_without_imports(&self, lines: LineRange, headers: &[LineRange]) -> Draft {
        let mut draft = self.draft_with(lines, headers, ChunkStrategy::Boundaries, None);
        if let Some(imports) = self.imports.filter(|i| i.end < lines.start) {
            draft.context.note = Some(format!(
                "the file's import block (lines {imports}) is not prepended: this item alone fills the chunk"
            ));
        }
        draft
    }

    fn draft_with(
        &self,
        lines: LineRange,
        headers: &[LineRange],
        strategy: ChunkStrategy,
        imports: Option<LineRange>,
    ) -> Draft {
        let mut context = ChunkContext::new(strategy);
        let mut content = Content::default();
        let mut shown_to = 0;
        let above = |r: &LineRange| r.end < lines.start;
        let parts = imports.filter(above).into_iter().chain(
            headers
                .iter()
                .copied()
                .filter(|h| above(h) && imports.is_none_or(|i| h.start > i.end)),
        );
        for part in parts {
            if shown_to > 0 && shown_to + 1 < part.start {
                content.marker(&self.marker(shown_to + 1, part.start - 1, part.start));
            }
            content.lines(self.index, part);
            content.end_line();
            if Some(part) == imports {
                context.prepended = Some(part);
            } else {
                context.header.push(part);
            }
            shown_to = part.end;
        }
        if shown_to > 0 && shown_to + 1 < lines.start {
            content.marker(&self.marker(shown_to + 1, lines.start - 1, lines.start));
        }
        content.lines(self.index, lines);
        let mut notes = Vec::new();
        let dropped: Vec<String> = self
            .enclosing(lines.start)
            .into_iter()
            .filter(|h| !headers.contains(h))
            .map(|h| h.to_string())
            .collect();
        if !dropped.is_empty() {
            notes.push(format!(
                "the headers at lines {} are not prepended: with the others they would take more than a third of the chunk",
                dropped.join(", ")
            ));
        }
        if let Some(block) = self.left_out.filter(|b| b.end < lines.start) {
            notes.push(format!(
                "the file's import block (lines {block}) is not prepended: it would take more than a third of the chunk"
            ));
        } else if let Some(block) = self.imports.filter(|b| b.end < lines.start && imports.is_none()) {
            if self.imports_with(headers).is_none() {
                notes.push(format!(
                    "the file's import block (lines {block}) is not prepended: the headers of the blocks this chunk is in take the room"
                ));
            }
        }
        if !notes.is_empty() {
            context.note = Some(notes.join("; "));
        }
        content.into_draft(lines, context)
    }

    /// `// … lines 7–40 are not in this chunk; it continues at line 41`, in the language's
    /// comment syntax.
    fn marker(&self, from: usize, to: usize, next: usize) -> String {
        let comment = self.language.map_or("//", Language::line_comment);
        let close = if comment == "(*" { " *)" } else { "" };
        format!("{comment} … lines {from}–{to} are not in this chunk; it continues at line {next}{close}\n")
    }
}

// ---------------------------------------------------------------------------------------
// Items by the line rules (languages without a scanner).

/// Items at the margin (or, inside an item, at the first deeper indentation where items
/// open), each with the nested items as members.
fn rule_items(index: &LineIndex<'_>, rules: &CodeRules, range: LineRange, nesting: usize) -> Vec<Item> {
    let depth = if nesting == 0 {
        Depth::Margin
    } else {
        let own = (range.start..=range.end)
            .map(|n| split_indent(index.line(n)))
            .find(|(_, t)| !t.is_empty())
            .map_or(0, |(indent, _)| indent);
        Depth::DeeperThan(own)
    };
    let starts = item_starts(index, rules, range, depth);
    segments_between(range, &starts)
        .into_iter()
        .map(|lines| Item {
            lines,
            lead: 0,
            body: (nesting < 4).then(|| rule_body(index, rules, lines, nesting)).flatten(),
        })
        .collect()
}

/// The members of an item by the line rules: nested items deeper than its first line.
fn rule_body(index: &LineIndex<'_>, rules: &CodeRules, item: LineRange, nesting: usize) -> Option<Body> {
    let head = (item.start..=item.end).find(|&n| {
        let (_, t) = split_indent(index.line(n));
        !t.is_empty() && rules.opens_item(t) && !rules.is_comment_only(t)
    })?;
    let (indent, _) = split_indent(index.line(head));
    let rest = LineRange::new(head + 1, item.end);
    if rest.is_empty() {
        return None;
    }
    let inner = item_starts(index, rules, rest, Depth::DeeperThan(indent));
    if inner.is_empty() {
        return None;
    }
    let members = segments_between(rest, &inner)
        .into_iter()
        .map(|lines| Item {
            lines,
            lead: 0,
            body: (nesting + 1 < 4)
                .then(|| rule_body(index, rules, lines, nesting + 1))
                .flatten(),
        })
        .collect();
    Some(Body {
        header: LineRange::new(head, head),
        kind: BodyKind::Class,
        members,
    })
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

// ---------------------------------------------------------------------------------------
// The import block.

/// The file's import block: from its first import to the last import before the first
/// line that is none of: an import, a comment, a blank line, a shebang, a module
/// docstring, a dunder assignment (`__all__ = […]`), a directive (`'use strict'`), an
/// attribute (`#![…]`, `#[…]`) or a package clause; cut to at most `max_lines` lines at an
/// import's end.
fn import_block(
    index: &LineIndex<'_>,
    rules: &CodeRules,
    language: Option<Language>,
    max_lines: usize,
) -> Option<LineRange> {
    let python = language == Some(Language::Python);
    let mut first: Option<usize> = None;
    let mut last: Option<usize> = None;
    let mut n = 1;
    while n <= index.len() {
        let line = index.line(n);
        let line = if n == 1 {
            line.trim_start_matches('\u{feff}')
        } else {
            line
        };
        let (_, t) = split_indent(line);
        let end = if t.is_empty() || (n == 1 && t.starts_with("#!")) {
            n
        } else if passed_over(t, python) {
            statement_end(index, n)
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

/// Lines that may stand before or between imports without ending the block.
fn passed_over(t: &str, python: bool) -> bool {
    let dunder = t.starts_with("__") && {
        let name_end = t.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(t.len());
        let name = &t[..name_end];
        name.len() > 4 && name.ends_with("__") && t[name_end..].trim_start().starts_with(['=', ':'])
    };
    (python && dunder)
        || t.starts_with("'use ")
        || t.starts_with("\"use ")
        || t.starts_with("#![")
        || t.starts_with("#[")
        || t.starts_with("#pragma once")
}

/// The last line of a statement that starts on line `n` and may span lines: an open
/// `(`/`{`/`[` (`from x import (`, `use a::{`, `import {`, Go's `import (`,
/// `__all__ = [`) closes later.
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
        if depth <= 0 || m >= index.len() || m - n > 400 {
            return m;
        }
        m += 1;
    }
}

/// The last line of a comment or docstring starting on line `n`, if `t` starts one.
fn comment_or_docstring_end(index: &LineIndex<'_>, rules: &CodeRules, n: usize, t: &str) -> Option<usize> {
    // A docstring may carry a prefix: r"""…""", u'''…'''.
    let unprefixed = t.trim_start_matches(['r', 'R', 'u', 'U', 'b', 'B']);
    let (t, closing) = if unprefixed.starts_with("\"\"\"") {
        (unprefixed, "\"\"\"")
    } else if unprefixed.starts_with("'''") {
        (unprefixed, "'''")
    } else if t.starts_with("/*") {
        (t, "*/")
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

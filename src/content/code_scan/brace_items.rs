//! The items of brace-language code ([`BraceItems`]), from the lexer's lines and blocks: an
//! item starts on a line at the wanted depth, outside any parenthesis, after a line that
//! ended a statement, unless the line continues the one above. Decorators, attributes and
//! the comment lines directly above an item belong to it; a class, or a block that holds
//! functions or classes, has a [`Body`] whose members are found one level deeper.

use super::brace_lexer::{Block, LineInfo};
use super::brace_literals::is_ident;
use super::brace_syntax::Syntax;
use super::{split_at, Body, BodyKind, Item, Start, MAX_NESTING};
use crate::content::line_index::LineIndex;
use crate::content::line_range::LineRange;

/// The items of brace-language code.
pub(super) struct BraceItems<'a, 't> {
    pub(super) index: &'a LineIndex<'t>,
    pub(super) syntax: &'a Syntax,
    pub(super) lines: &'a [LineInfo],
    pub(super) blocks: &'a [Block],
}

/// Words that continue the statement of the line above.
const CONTINUING_WORDS: &[&str] = &[
    "else",
    "catch",
    "finally",
    "where",
    "while",
    "extends",
    "implements",
    "throws",
    "except",
];

/// Words that make an item class-like, and words that make it a function.
const CLASS_WORDS: &[&str] = &[
    "class",
    "struct",
    "interface",
    "impl",
    "trait",
    "enum",
    "union",
    "namespace",
    "module",
    "object",
    "extension",
    "protocol",
    "record",
    "mod",
    "extern",
];
const FUNCTION_WORDS: &[&str] = &["fn", "function", "func", "fun", "def"];

impl BraceItems<'_, '_> {
    /// The items of `range`, whose lines of code are at `level` (see [`LineInfo::level`]).
    pub(super) fn items(&self, range: LineRange, level: u32, nesting: usize) -> Vec<Item> {
        let starts = self.starts(range, level);
        split_at(range, &starts)
            .into_iter()
            .map(|(lines, lead)| {
                let body = (nesting < MAX_NESTING)
                    .then(|| self.body(lines, lead, level, nesting))
                    .flatten();
                Item { lines, lead, body }
            })
            .collect()
    }

    /// The first lines of the items at `level` in `range`, each moved up over the comments
    /// directly above it.
    fn starts(&self, range: LineRange, level: u32) -> Vec<Start> {
        let mut starts: Vec<usize> = Vec::new();
        let mut prev_code: Option<usize> = None;
        for n in range.start..=range.end {
            let li = self.lines[n];
            if !li.code {
                continue;
            }
            let t = self.index.line(n).trim_start();
            let candidate = li.clean && li.level == level && !continues_above(t);
            let after_end = match prev_code {
                None => true,
                Some(p) => self.ends_statement(p, level),
            };
            if candidate && after_end {
                // A decorator or attribute statement belongs to the item below it.
                let decorated = starts.last().is_some_and(|&s| self.decorates(s, n));
                if !decorated {
                    starts.push(n);
                }
            }
            prev_code = Some(n);
        }
        starts
            .into_iter()
            .map(|s| {
                let mut first = s;
                while first > range.start && self.lines[first - 1].comment {
                    first -= 1;
                }
                Start {
                    line: first,
                    lead: s - first,
                }
            })
            .collect()
    }

    /// Whether the statement from line `s` to the line before `n` is only a decorator or
    /// an attribute (`@Component({…})`, `@Test`, `#[derive(Debug)]`), which belongs to the
    /// item at `n`.
    fn decorates(&self, s: usize, n: usize) -> bool {
        let level = self.lines[s].level;
        decorator_only(self.index.line(s).trim_start())
            && (s + 1..n).all(|m| !self.lines[m].code || !self.lines[m].clean || self.lines[m].level > level)
    }

    /// Whether line `p`, the last line of code before another, ends a statement at `level`.
    fn ends_statement(&self, p: usize, level: u32) -> bool {
        match self.lines[p].last {
            b';' | b'}' => true,
            b',' => level > 0,
            c if self.syntax.newline_ends => is_ident(c) || matches!(c, b')' | b']' | b'"' | b'\'' | b'`'),
            _ => false,
        }
    }

    /// The blocks opened on the lines of `item`.
    fn blocks_in(&self, item: LineRange) -> &[Block] {
        let from = self.blocks.partition_point(|b| b.open_line < item.start);
        let to = self.blocks.partition_point(|b| b.open_line <= item.end);
        &self.blocks[from..to.max(from)]
    }

    /// The header and members of an item that can be cut between its members: a class
    /// (its first block at its level, after a class-like header), else the item's largest
    /// block when it holds functions or classes — an IIFE or UMD wrapper, a
    /// `describe(…, () => {…})`, a compiled class, a function returning a class.
    fn body(&self, item: LineRange, lead: usize, level: u32, nesting: usize) -> Option<Body> {
        let blocks = self.blocks_in(item);
        if let Some(first) = blocks.iter().find(|b| b.level == level) {
            let open = first.open_line;
            if open < item.end {
                let head_text = self.index.slice(item.start, open);
                let head_text = &head_text[..head_text.rfind('{').unwrap_or(head_text.len())];
                if let Some(keyword_line) = self.class_keyword_line(item, open, head_text) {
                    let members = self.items(LineRange::new(open + 1, item.end), level + 1, nesting + 1);
                    return Some(Body {
                        header: LineRange::new(keyword_line, open),
                        kind: BodyKind::Class,
                        members,
                    });
                }
            }
        }
        let container = blocks
            .iter()
            .filter(|b| b.level >= level && b.close_line > b.open_line + 1 && b.close_line <= item.end)
            .max_by_key(|b| (b.close_line - b.open_line, std::cmp::Reverse(b.open_line)))?;
        let open = container.open_line;
        let members = self.items(LineRange::new(open + 1, item.end), container.level + 1, nesting + 1);
        if !members.iter().any(|m| m.body.is_some() || self.declares(m)) {
            // A leaf: cut inside only when it alone is over the budget, into windows.
            return None;
        }
        let code_start = (item.start + lead..=open)
            .find(|&n| self.lines[n].code && !self.lines[n].comment)
            .unwrap_or(open);
        Some(Body {
            header: LineRange::new(code_start, open),
            kind: BodyKind::Block,
            members,
        })
    }

    /// Whether a member declares a function or a class: the words before its first block
    /// name one (`function`, `=>`, `class`, `fn`, `def`…).
    fn declares(&self, member: &Item) -> bool {
        let Some(block) = self.blocks_in(member.lines).first() else {
            return false;
        };
        let from = member.lines.start + member.lead;
        if block.open_line < from || block.open_line > from + 8 {
            return false;
        }
        let head = strip_comments_and_strings(self.index.slice(from, block.open_line));
        head.contains("=>")
            || words(&head).any(|(at, w)| {
                FUNCTION_WORDS.contains(&w) || (CLASS_WORDS.contains(&w) && !is_module_object(&head, at, w))
            })
    }

    /// The line naming a class-like item (its keyword, or the `= {` of an object literal),
    /// when the header text before the body's `{` is class-like and not a function: a
    /// class word comes before any function word or arrow (`class A { m() {`, not
    /// `fn f() -> impl T {`), or an arrow's body is a class (`cls => class X extends cls {`).
    fn class_keyword_line(&self, item: LineRange, open: usize, head: &str) -> Option<usize> {
        let code = strip_comments_and_strings(head);
        let arrow_at = code.find("=>");
        let class_at = words(&code)
            .find(|&(at, w)| CLASS_WORDS.contains(&w) && !is_module_object(&code, at, w))
            .map(|(at, _)| at);
        let function_at = words(&code)
            .find(|(_, w)| FUNCTION_WORDS.contains(w))
            .map(|(at, _)| at)
            .into_iter()
            .chain(arrow_at)
            .min();
        let arrow_class = code
            .split("=>")
            .skip(1)
            .any(|after| after.trim_start().starts_with("class") && !code.contains("function"));
        let trimmed = code.trim_end();
        let object_literal = trimmed.ends_with('=') || trimmed.ends_with("default");
        let class_like = (match (class_at, function_at) {
            (Some(c), Some(f)) => c < f,
            (Some(_), None) => true,
            (None, _) => false,
        } || arrow_class);
        if !(class_like || (object_literal && function_at.is_none())) {
            return None;
        }
        // The line that holds the keyword (or, for a literal, the `=`): the first code line
        // of the statement that is not a decorator or an attribute.
        let keyword = if class_like {
            class_at.map(|at| words(&code[at..]).next().map_or("", |(_, w)| w))
        } else {
            None
        };
        (item.start..=open).find(|&n| {
            let t = self.index.line(n).trim_start();
            let is_code = self.lines[n].code && !self.lines[n].comment;
            is_code
                && !t.starts_with('@')
                && !t.starts_with("#[")
                && keyword.is_none_or(|k| words(&strip_comments_and_strings(t)).any(|(_, w)| w == k))
        })
    }
}

/// The words of `code` (letters, digits, `_`) with their byte offsets.
fn words(code: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut rest = code;
    let mut offset = 0;
    std::iter::from_fn(move || {
        let start = rest.find(|c: char| c.is_alphanumeric() || c == '_')?;
        let len = rest[start..]
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len() - start);
        let word = &rest[start..start + len];
        let at = offset + start;
        offset += start + len;
        rest = &rest[start + len..];
        Some((at, word))
    })
}

/// Whether the word `w` at `at` is JavaScript's `module` object (`module.exports`), not a
/// module declaration.
fn is_module_object(code: &str, at: usize, w: &str) -> bool {
    w == "module" && code[at + w.len()..].starts_with('.')
}

/// Whether a line holds only decorators or attributes: `@name`, `@a.b(args…)`, `#[attr]`,
/// an argument list left open on the line allowed.
pub(super) fn decorator_only(t: &str) -> bool {
    let mut rest = t.trim();
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let (open, close, body) = if let Some(r) = rest.strip_prefix("#[") {
            (b'[', b']', r)
        } else if let Some(r) = rest.strip_prefix('@') {
            let name = r
                .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | ':')))
                .unwrap_or(r.len());
            if name == 0 {
                return false;
            }
            let after = &r[name..];
            match after.strip_prefix('(') {
                Some(args) => (b'(', b')', args),
                None => {
                    rest = after.trim_start();
                    continue;
                }
            }
        } else {
            return false;
        };
        // To the matching bracket; a list still open at the line's end continues below.
        let mut depth = 1;
        let mut end = None;
        for (k, c) in body.bytes().enumerate() {
            if c == open {
                depth += 1;
            } else if c == close {
                depth -= 1;
                if depth == 0 {
                    end = Some(k);
                    break;
                }
            }
        }
        match end {
            Some(k) => rest = body[k + 1..].trim_start(),
            None => return true,
        }
    }
    true
}

/// Whether a line (without its indentation) continues the statement above.
fn continues_above(t: &str) -> bool {
    let Some(&c) = t.as_bytes().first() else {
        return false;
    };
    if b".,)]}?:&|+%=<>^{".contains(&c) || (c == b'-' && !t.starts_with("-->")) || t.starts_with("/ ") {
        return true;
    }
    let word_end = t
        .find(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
        .unwrap_or(t.len());
    CONTINUING_WORDS.contains(&&t[..word_end])
}

/// `code` without `//` and `/* */` comments and with string contents removed, for looking
/// at the words of a header.
fn strip_comments_and_strings(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut prev = ' ';
                for c in chars.by_ref() {
                    if prev == '*' && c == '/' {
                        break;
                    }
                    prev = c;
                }
                out.push(' ');
            }
            '"' | '`' => {
                let mut escaped = false;
                for s in chars.by_ref() {
                    if !escaped && s == c {
                        break;
                    }
                    escaped = !escaped && s == '\\';
                }
                out.push_str("\"\"");
            }
            _ => out.push(c),
        }
    }
    out
}

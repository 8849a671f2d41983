//! The Python scanner: logical lines (through brackets, `\` continuations and triple-quoted
//! strings) at one indentation; `else`/`elif`/`except`/`finally` continue the statement.

use super::{split_at, Body, BodyKind, Item, Start, MAX_NESTING};
use crate::content::line_index::LineIndex;
use crate::content::line_range::LineRange;

/// What the scanner knows about one line of Python.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct PyLine {
    /// The line starts a logical line (not inside brackets, a triple-quoted string or
    /// after a `\`), and has code.
    starts: bool,
    /// Blank, or a comment only (and not inside a logical line).
    blank: bool,
    comment: bool,
    indent: usize,
}

pub(super) fn python_lines(index: &LineIndex<'_>) -> Vec<PyLine> {
    let mut out = vec![PyLine::default(); index.len() + 2];
    let mut depth: i32 = 0;
    let mut triple: Option<&str> = None;
    let mut continued = false;
    for (n, slot) in out.iter_mut().enumerate().take(index.len() + 1).skip(1) {
        let line = index.line(n);
        let line = if n == 1 {
            line.trim_start_matches('\u{feff}')
        } else {
            line
        };
        let t = line.trim_start_matches([' ', '\t', '\u{c}']);
        let indent = line[..line.len() - t.len()]
            .chars()
            .fold(0, |col, c| if c == '\t' { (col / 8 + 1) * 8 } else { col + 1 });
        let inside = triple.is_some() || depth > 0 || continued;
        let t_trim = t.trim_end();
        *slot = PyLine {
            starts: !inside && !t_trim.is_empty() && !t_trim.starts_with('#'),
            blank: !inside && t_trim.is_empty(),
            comment: !inside && t_trim.starts_with('#'),
            indent,
        };
        // Scan the line for strings, comments and brackets.
        let b = line.as_bytes();
        let mut i = 0;
        continued = false;
        while i < b.len() {
            if let Some(q) = triple {
                match line[i..].find(q) {
                    Some(at) if !escaped_at(b, i + at) => {
                        triple = None;
                        i += at + 3;
                    }
                    Some(at) => i += at + 1,
                    None => break,
                }
                continue;
            }
            match b[i] {
                b'#' => break,
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth = (depth - 1).max(0),
                b'\\' if i + 1 == b.len() || line[i + 1..].trim().is_empty() => {
                    continued = true;
                    break;
                }
                q @ (b'"' | b'\'') => {
                    let delim = if q == b'"' { "\"\"\"" } else { "'''" };
                    if line[i..].starts_with(delim) {
                        triple = Some(delim);
                        i += 3;
                        continue;
                    }
                    // A one-line string: to its closing quote, or the line's end.
                    let mut j = i + 1;
                    while j < b.len() && b[j] != q {
                        j += if b[j] == b'\\' { 2 } else { 1 };
                    }
                    i = j + 1;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }
    out
}

/// Whether the byte at `i` is preceded by an odd number of backslashes.
fn escaped_at(b: &[u8], i: usize) -> bool {
    b[..i].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 1
}

pub(super) struct PythonItems<'a, 't> {
    pub(super) index: &'a LineIndex<'t>,
    pub(super) lines: &'a [PyLine],
}

impl PythonItems<'_, '_> {
    pub(super) fn items(&self, range: LineRange, indent: usize, nesting: usize) -> Vec<Item> {
        let starts = self.starts(range, indent);
        split_at(range, &starts)
            .into_iter()
            .map(|(lines, lead)| {
                let body = (nesting < MAX_NESTING)
                    .then(|| self.body(lines, indent, nesting))
                    .flatten();
                Item { lines, lead, body }
            })
            .collect()
    }

    fn starts(&self, range: LineRange, indent: usize) -> Vec<Start> {
        let mut starts: Vec<usize> = Vec::new();
        let mut decorated = false;
        for n in range.start..=range.end {
            let l = self.lines[n];
            if !l.starts || l.indent != indent {
                continue;
            }
            let t = self.index.line(n).trim_start();
            if CLAUSE_WORDS.contains(&first_word(t)) {
                continue;
            }
            if !decorated {
                starts.push(n);
            }
            decorated = t.starts_with('@');
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

    /// The header (its first logical line) and members of a compound statement that can
    /// be cut between its members: a class, or a `def`/`if`/`try`/`for`/`with`… whose
    /// blocks hold functions or classes. Each `else:`/`elif`/`except`/`finally:` clause is
    /// a member with its own header, so a chunk in it carries both lines (`if
    /// sys.platform == 'win32':` and `else:`).
    fn body(&self, item: LineRange, indent: usize, nesting: usize) -> Option<Body> {
        let head = (item.start..=item.end).find(|&n| {
            let l = self.lines[n];
            l.starts && l.indent == indent && !self.index.line(n).trim_start().starts_with('@')
        })?;
        let t = self.index.line(head).trim_start();
        let word = match first_word(t) {
            "async" => first_word(t["async".len()..].trim_start()),
            w => w,
        };
        let class = word == "class";
        if !class && !COMPOUND_WORDS.contains(&word) && !CLAUSE_WORDS.contains(&word) {
            return None;
        }
        // The header runs until the next line that starts something (or is blank).
        let header_end = (head + 1..=item.end)
            .find(|&n| self.lines[n].starts || self.lines[n].blank || self.lines[n].comment)
            .map_or(item.end, |n| n - 1);
        let body_indent = (header_end + 1..=item.end)
            .find(|&n| self.lines[n].starts)
            .map(|n| self.lines[n].indent)
            .filter(|&i| i > indent)?;
        let clauses: Vec<usize> = (header_end + 1..=item.end)
            .filter(|&n| self.lines[n].starts && self.lines[n].indent == indent)
            .collect();
        let first_end = clauses.first().map_or(item.end, |&c| c - 1);
        let mut members = self.items(LineRange::new(header_end + 1, first_end), body_indent, nesting + 1);
        for (k, &c) in clauses.iter().enumerate() {
            let lines = LineRange::new(c, clauses.get(k + 1).map_or(item.end, |&n| n - 1));
            let body = (nesting + 1 < MAX_NESTING)
                .then(|| self.body(lines, indent, nesting + 1))
                .flatten();
            members.push(Item { lines, lead: 0, body });
        }
        if !class && !members.iter().any(|m| m.body.is_some() || self.declares(m)) {
            // A leaf: cut inside only when it alone is over the budget, into windows.
            return None;
        }
        Some(Body {
            header: LineRange::new(head, header_end),
            kind: if class { BodyKind::Class } else { BodyKind::Block },
            members,
        })
    }

    /// Whether a member is a function or a class (or decorated, which makes it one).
    fn declares(&self, member: &Item) -> bool {
        (member.lines.start..=member.lines.end)
            .find(|&n| self.lines[n].starts)
            .is_some_and(|n| {
                let t = self.index.line(n).trim_start();
                t.starts_with('@') || matches!(first_word(t), "def" | "class" | "async")
            })
    }
}

/// Statements that open a block (besides `class`).
const COMPOUND_WORDS: &[&str] = &["def", "if", "try", "for", "while", "with", "match"];

/// Words that continue the compound statement above rather than start one.
const CLAUSE_WORDS: &[&str] = &["else", "elif", "except", "finally"];

/// The first word of `t` (letters, digits, `_`).
fn first_word(t: &str) -> &str {
    let end = t.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(t.len());
    &t[..end]
}

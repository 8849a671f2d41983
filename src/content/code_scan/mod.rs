//! Where code may be cut in the brace languages that have no grammar here (Kotlin, Scala,
//! Swift, Zig; those with one are cut by [`super::code_grammar`]): a lexical scanner that
//! finds the items of a file (functions, classes, statements at depth 0) and the members of
//! the items that may be cut between them.
//!
//! The scanner tracks `{}` depth and `()`/`[]` nesting through strings, character literals
//! (told from Scala symbols and digit separators), `"""` text blocks, comments (nested
//! where the language nests them) and Zig's `\\` string lines. An item starts on a line at
//! the wanted depth, outside any parenthesis, after a line that ended a statement (`;`,
//! `}`, `,` between members, or — in languages without semicolons — a value), unless the
//! line continues the one above (`.`, `else`, `catch`, `where`, `{`, an operator…).
//!
//! Decorators, attributes and the comment lines directly above an item belong to it. An
//! item that may be cut between its members has a [`Body`]: its header lines and its
//! members, found the same way one level deeper. A class (impl, struct, interface,
//! trait, enum, namespace, object literal…) always has one; so has any other item whose
//! block holds functions or classes — a wrapper function (IIFE, UMD), a `describe`
//! callback, a compiled class, a Python `if`/`try` of defs, each clause a member with its
//! own header — which the chunker opens only when the item does not fit. A leaf function
//! has none: it is never cut inside while it fits.
//!
//! The scanner is in [`brace_syntax`] (each language's literals and comments),
//! [`brace_lexer`] (with [`brace_literals`]) and [`brace_items`]. This file holds what it
//! shares with the grammar's item finder: the [`Item`]s they return, and [`scan`].

mod brace_items;
mod brace_lexer;
mod brace_literals;
mod brace_syntax;

use super::content_type::Language;
use super::line_index::LineIndex;
use super::line_range::LineRange;

use brace_items::BraceItems;
use brace_lexer::lex_braces;
use brace_syntax::Syntax;

/// How deep classes are cut into (a class in a namespace in a module…).
const MAX_NESTING: usize = 4;

/// One item of a file or of a class body: a contiguous run of lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Item {
    /// From the first attached line (decorator, doc comment) to the line before the next
    /// item.
    pub lines: LineRange,
    /// How many comment lines directly above the item's code open it: they may go to the
    /// chunk before when the item fits only without them.
    pub lead: usize,
    /// Set for an item that can be cut between its members: a class, or a block that holds
    /// functions or classes (a wrapper function, a `describe` callback, an `if` of defs).
    pub body: Option<Body>,
}

/// The header and members of an item that can be cut between its members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Body {
    /// From the line naming the class (or opening the wrapper) to the line opening its
    /// body; carried into every chunk that starts among the members.
    pub header: LineRange,
    pub kind: BodyKind,
    /// The members, contiguous, from the line after the header to the item's last line.
    pub members: Vec<Item>,
}

/// What a [`Body`] belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyKind {
    /// A class, impl, struct, namespace, object literal…: cut between its members when it
    /// does not fit.
    Class,
    /// A function or a block that holds functions or classes: cut between its members only
    /// when it does not fit even without the import block.
    Block,
}

/// The items of the file, contiguous from line 1 to the last, when a scanner knows the
/// language; `None` otherwise.
pub(crate) fn scan(index: &LineIndex<'_>, language: Option<Language>) -> Option<Vec<Item>> {
    if index.is_empty() {
        return Some(Vec::new());
    }
    let whole = LineRange::new(1, index.len());
    let syntax = Syntax::of(language?)?;
    let (lines, blocks) = lex_braces(index.text(), index.len(), &syntax);
    let scanner = BraceItems {
        index,
        syntax: &syntax,
        lines: &lines,
        blocks: &blocks,
    };
    Some(scanner.items(whole, 0, 0))
}

/// Whether [`scan`] knows `language`'s grammar well enough that its items are whole
/// functions and statements.
pub(crate) fn scan_knows(language: Option<Language>) -> bool {
    language.and_then(Syntax::of).is_some()
}

/// An item's first line, and how many attached comment lines come before its code.
#[derive(Debug, Clone, Copy)]
struct Start {
    line: usize,
    lead: usize,
}

/// Splits `range` at `starts` (sorted) into items, each with its lead; lines before the
/// first start are an item of their own.
fn split_at(range: LineRange, starts: &[Start]) -> Vec<(LineRange, usize)> {
    let mut out = Vec::with_capacity(starts.len() + 1);
    let mut from = range.start;
    let mut lead = 0;
    for s in starts {
        if s.line > from && s.line <= range.end {
            out.push((LineRange::new(from, s.line - 1), lead));
            from = s.line;
            lead = s.lead;
        } else if s.line == from {
            lead = s.lead;
        }
    }
    if from <= range.end {
        out.push((LineRange::new(from, range.end), lead));
    }
    out
}

#[cfg(test)]
#[path = "code_scan_tests.rs"]
mod tests;

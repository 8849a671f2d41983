//! The import block by the grammar: from the file's first import to its last one before the
//! first node that is neither an import nor what may stand among imports (comments, a
//! package clause, a module docstring, `'use strict'`, an include guard's `#define`). A C
//! or C++ conditional (`#ifdef _WIN32 … #endif`) holding only includes is an import whole,
//! so the block never ends inside an `#if`.

use tree_sitter::{Node, Tree};

use super::{first_line, last_line, node_text, Grammar};
use crate::content::line_range::LineRange;

/// What a top-level node is to the import block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    Import,
    /// May stand before or between imports.
    Preamble,
    Other,
}

/// The import block of `tree`, cut at an import's end to at most `max_lines` lines.
pub(crate) fn import_block(grammar: &Grammar, tree: &Tree, text: &str, max_lines: usize) -> Option<LineRange> {
    if grammar.imports.contains(&"preproc_include") {
        return preprocessor_block(text, max_lines);
    }
    let mut first: Option<usize> = None;
    let mut last: Option<usize> = None;
    for (node, role) in grammar.top_nodes_with_roles(tree.root_node(), text) {
        match role {
            Role::Preamble => {}
            Role::Import => {
                let (start, end) = (first_line(node), last_line(node));
                if first.is_some_and(|f| end + 1 - f > max_lines) {
                    break;
                }
                first.get_or_insert(start);
                last = Some(end);
            }
            Role::Other => break,
        }
    }
    let (first, last) = (first?, last?);
    (last + 1 - first <= max_lines).then(|| LineRange::new(first, last))
}

impl Grammar {
    /// The nodes at the top of the file, in order: the root's named children, with
    /// conditionals that are not imports (an include guard, `#ifdef __cplusplus`) replaced
    /// by what they hold.
    pub(super) fn top_nodes<'t>(&self, root: Node<'t>, text: &str) -> Vec<Node<'t>> {
        self.top_nodes_with_roles(root, text)
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    }

    /// [`Grammar::top_nodes`], each with its [`Role`].
    pub(super) fn top_nodes_with_roles<'t>(&self, root: Node<'t>, text: &str) -> Vec<(Node<'t>, Role)> {
        let mut out = Vec::new();
        self.flatten_with_roles(root, text, &mut out);
        out
    }

    /// The named children of `node`, transparent ones replaced by theirs (a conditional
    /// holding only imports kept whole).
    pub(super) fn flatten_into<'t>(&self, node: Node<'t>, text: &str, out: &mut Vec<Node<'t>>) {
        let mut nodes = Vec::new();
        self.flatten_with_roles(node, text, &mut nodes);
        out.extend(nodes.into_iter().map(|(n, _)| n));
    }

    /// [`Grammar::flatten_into`], each node with its [`Role`]: a conditional is flattened
    /// once, and kept whole when what it holds makes it an import (deciding that by
    /// flattening it again for each conditional around it doubled the work at every level:
    /// 20 nested `#ifdef`s took 14 s).
    fn flatten_with_roles<'t>(&self, node: Node<'t>, text: &str, out: &mut Vec<(Node<'t>, Role)>) {
        // One cursor over the children: it knows each child's field name at once, where
        // asking the node for child i's field walks its children again (a module of
        // thousands of functions made that quadratic).
        let transparent = self.is_transparent(node);
        let mut cursor = node.walk();
        if !cursor.goto_first_child() {
            return;
        }
        loop {
            let child = cursor.node();
            // The condition or name of a conditional is part of its first line.
            let heading = transparent && matches!(cursor.field_name(), Some("name" | "condition"));
            if !child.is_named() || heading {
                // Neither a member nor a piece.
            } else if child.is_error() {
                // What the parser could not read stands for its pieces.
                self.flatten_with_roles(child, text, out);
            } else if self.is_transparent(child) {
                match self.own_role(child, text) {
                    Some(Role::Import) => out.push((child, Role::Import)),
                    Some(_) => self.flatten_with_roles(child, text, out),
                    None => {
                        let start = out.len();
                        self.flatten_with_roles(child, text, out);
                        if conditional_role(&out[start..]) == Role::Import {
                            out.truncate(start);
                            out.push((child, Role::Import));
                        }
                    }
                }
            } else {
                out.push((child, self.own_role(child, text).unwrap_or(Role::Other)));
            }
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }

    /// What `node` is to the import block by itself, when that is decided without looking
    /// into it as a conditional.
    fn own_role(&self, node: Node<'_>, text: &str) -> Option<Role> {
        let kind = node.kind();
        if self.is_comment(node) || self.preamble.contains(&kind) {
            return Some(Role::Preamble);
        }
        // A PHP `namespace X { … }` holds code; `namespace X;` opens the imports.
        if self.imports.contains(&kind)
            && !(kind == "namespace_definition" && node.child_by_field_name("body").is_some())
        {
            return Some(Role::Import);
        }
        let source = node_text(node, text);
        match kind {
            // `mod cache;` (a `mod` with a body is code).
            "mod_item" if self.imports.contains(&"mod_declaration") && node.child_by_field_name("body").is_none() => {
                Some(Role::Import)
            }
            // `const fs = require('fs')`; Ruby `require "x"`; PHP `require_once 'x.php';`.
            "lexical_declaration" | "variable_declaration" | "expression_statement" | "call"
                if self.imports.contains(&"require") && is_require(source) =>
            {
                Some(Role::Import)
            }
            // A docstring, `'use strict'`, `__all__ = [...]`.
            "expression_statement" => {
                let only = (node.named_child_count() == 1).then(|| node.named_child(0)).flatten();
                if only.is_some_and(|c| c.kind() == "string")
                    && (self.preamble.contains(&"docstring") || self.preamble.contains(&"directive"))
                {
                    return Some(Role::Preamble);
                }
                if self.preamble.contains(&"dunder") && is_dunder_assignment(source) {
                    return Some(Role::Preamble);
                }
                Some(Role::Other)
            }
            _ => None,
        }
    }
}

/// What a conditional is, by what it holds (flattened): an import when it holds imports
/// and nothing but imports and what may stand among them.
fn conditional_role(inner: &[(Node<'_>, Role)]) -> Role {
    let roles = || inner.iter().map(|(_, r)| *r);
    if roles().any(|r| r == Role::Import) && !roles().any(|r| r == Role::Other) {
        Role::Import
    } else {
        Role::Other
    }
}

/// `const x = require("y")`, `require "x"`, `require_once __DIR__ . '/x.php';`.
fn is_require(source: &str) -> bool {
    let t = source.trim_start();
    let first_line = t.lines().next().unwrap_or("");
    let words = [
        "require",
        "require_relative",
        "require_once",
        "include",
        "include_once",
        "load",
    ];
    words.iter().any(|w| {
        t.strip_prefix(w)
            .is_some_and(|rest| rest.starts_with([' ', '(', '\'', '"']))
    }) || (["const ", "let ", "var "].iter().any(|p| t.starts_with(p)) && first_line.contains("require("))
}

/// `__all__ = [...]`, `__version__: str = "1"`.
fn is_dunder_assignment(source: &str) -> bool {
    let t = source.trim_start();
    let name_end = t.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(t.len());
    let name = &t[..name_end];
    name.len() > 4
        && name.starts_with("__")
        && name.ends_with("__")
        && t[name_end..].trim_start().starts_with(['=', ':'])
}

/// The import block of a C or C++ file, read by its preprocessor lines: tree-sitter's C
/// grammars parse a conditional's expression as C, so `#if FMT_HAS_INCLUDE(<variant>)`
/// breaks the tree around the includes it guards. From the first `#include` (or the
/// conditional it is in, an include guard aside) to the last one before the first line of
/// code, then on to the `#endif`s that close what the block opened: the block prepended is
/// balanced.
fn preprocessor_block(text: &str, max_lines: usize) -> Option<LineRange> {
    let lines: Vec<&str> = text.lines().collect();
    // The conditionals open at this point: their first lines, and whether each is an
    // include guard (`#ifndef X_H` then `#define X_H`).
    let mut open: Vec<(usize, bool)> = Vec::new();
    let mut first: Option<usize> = None;
    let mut last: Option<usize> = None;
    let mut in_comment = false;
    let mut n = 0;
    while n < lines.len() {
        let line = lines[n].trim_start_matches('\u{feff}').trim();
        let start = n + 1;
        let mut end = n;
        while lines[end].trim_end().ends_with('\\') && end + 1 < lines.len() {
            end += 1;
        }
        n = end + 1;
        if in_comment {
            in_comment = !line.contains("*/");
            continue;
        }
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        if line.starts_with("/*") {
            in_comment = !line.contains("*/");
            continue;
        }
        let Some((word, rest)) = directive(line) else { break };
        match word {
            "if" | "ifdef" | "ifndef" => {
                let guard = word == "ifndef"
                    && lines.get(n).and_then(|l| directive(l.trim())).is_some_and(|(w, r)| {
                        w == "define" && r.split_whitespace().next() == rest.split_whitespace().next()
                    });
                open.push((start, guard));
            }
            "endif" => {
                open.pop();
            }
            "include" | "import" => {
                if first.is_some_and(|f| end + 2 - f > max_lines) {
                    break;
                }
                let opened = open.iter().filter(|(_, guard)| !guard).map(|&(line, _)| line).min();
                first.get_or_insert(opened.unwrap_or(start).min(start));
                last = Some(end + 1);
            }
            _ => {}
        }
    }
    let (first, mut last) = (first?, last?);
    // Close what the block opened: the `#endif`s after its last include.
    let mut depth: usize = 0;
    for line in &lines[first - 1..last] {
        match directive(line.trim()) {
            Some(("if" | "ifdef" | "ifndef", _)) => depth += 1,
            Some(("endif", _)) => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    let mut n = last;
    while depth > 0 && n < lines.len() {
        let t = lines[n].trim();
        match directive(t) {
            Some(("if" | "ifdef" | "ifndef", _)) => depth += 1,
            Some(("endif", _)) => {
                depth -= 1;
                last = n + 1;
            }
            Some(_) => {}
            None if t.is_empty() || t.starts_with("//") => {}
            None => break,
        }
        n += 1;
    }
    (depth == 0 && last + 1 - first <= max_lines).then(|| LineRange::new(first, last))
}

/// The word of a preprocessor line (`#  include <x>` → `include`) and what follows it.
fn directive(line: &str) -> Option<(&str, &str)> {
    let d = line.strip_prefix('#')?.trim_start();
    let end = d
        .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .unwrap_or(d.len());
    Some((&d[..end], &d[end..]))
}

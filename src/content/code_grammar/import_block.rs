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
    let mut first: Option<usize> = None;
    let mut last: Option<usize> = None;
    for node in grammar.top_nodes(tree.root_node(), text) {
        match grammar.role(node, text) {
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
        let mut out = Vec::new();
        self.flatten_into(root, text, &mut out);
        out
    }

    /// The named children of `node`, transparent ones replaced by theirs (a conditional
    /// holding only imports kept whole).
    pub(super) fn flatten_into<'t>(&self, node: Node<'t>, text: &str, out: &mut Vec<Node<'t>>) {
        let mut cursor = node.walk();
        for (i, child) in node.children(&mut cursor).enumerate() {
            if !child.is_named() {
                continue;
            }
            // The condition or name of a conditional is part of its first line.
            if matches!(node.field_name_for_child(i as u32), Some("name" | "condition")) && self.is_transparent(node) {
                continue;
            }
            if self.is_transparent(child) && self.role(child, text) != Role::Import {
                self.flatten_into(child, text, out);
            } else {
                out.push(child);
            }
        }
    }

    /// What `node` is to the import block.
    pub(super) fn role(&self, node: Node<'_>, text: &str) -> Role {
        let kind = node.kind();
        if self.is_comment(node) || self.preamble.contains(&kind) {
            return Role::Preamble;
        }
        // A PHP `namespace X { … }` holds code; `namespace X;` opens the imports.
        if self.imports.contains(&kind)
            && !(kind == "namespace_definition" && node.child_by_field_name("body").is_some())
        {
            return Role::Import;
        }
        let source = node_text(node, text);
        match kind {
            // `mod cache;` (a `mod` with a body is code).
            "mod_item" if self.imports.contains(&"mod_declaration") => {
                if node.child_by_field_name("body").is_none() {
                    return Role::Import;
                }
            }
            // `const fs = require('fs')`; Ruby `require "x"`; PHP `require_once 'x.php';`.
            "lexical_declaration" | "variable_declaration" | "expression_statement" | "call"
                if self.imports.contains(&"require") && is_require(source) =>
            {
                return Role::Import;
            }
            // A docstring, `'use strict'`, `__all__ = [...]`.
            "expression_statement" => {
                let only = (node.named_child_count() == 1).then(|| node.named_child(0)).flatten();
                if only.is_some_and(|c| c.kind() == "string")
                    && (self.preamble.contains(&"docstring") || self.preamble.contains(&"directive"))
                {
                    return Role::Preamble;
                }
                if self.preamble.contains(&"dunder") && is_dunder_assignment(source) {
                    return Role::Preamble;
                }
            }
            // `#ifdef _WIN32 #include <windows.h> #endif`.
            _ if self.is_transparent(node) => {
                let mut inner = Vec::new();
                self.flatten_into(node, text, &mut inner);
                let roles: Vec<Role> = inner.iter().map(|&n| self.role(n, text)).collect();
                if roles.contains(&Role::Import) && !roles.contains(&Role::Other) {
                    return Role::Import;
                }
            }
            _ => {}
        }
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

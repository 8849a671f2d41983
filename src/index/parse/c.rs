//! C/C++ includes: `#include "x.h"` and `#include <x.h>` (also `#import`, `#include_next`),
//! read from the preprocessor nodes of the tree, so an include in a comment, a string, a
//! raw string or a macro's body never becomes an edge. Angle includes are kept as
//! `<path>`: the resolver tries them only against include roots.
//!
//! The C grammars parse a conditional's expression as C, so `#if FMT_HAS_INCLUDE(<x>)`
//! can leave the includes after it inside an ERROR node, and an `#include` inside an
//! initializer is no node at all: directive lines the query did not find are read too,
//! where the tree says they are neither in a comment, a string nor a macro's body.

use tree_sitter::{Node, Tree};

use super::{captures, text_of, unquoted, RawImport};
use crate::index::language::EdgeKind;

const PATTERNS: &[&str] = &[
    "(preproc_include path: (_) @include)",
    "(preproc_call directive: (preproc_directive) @directive argument: (preproc_arg) @argument)",
];

pub(super) fn imports(tree: &Tree, text: &str) -> Vec<RawImport> {
    // (where the directive starts, what it includes)
    let mut found: Vec<(usize, String)> = Vec::new();
    let mut directive = "";
    for (name, node) in captures(tree, text, PATTERNS) {
        // A directive stands at the start of its line (`int a; #include "x"` is an error
        // the parser recovers from, not an include).
        let line_start = text[..node.start_byte()].rfind('\n').map_or(0, |i| i + 1);
        let directive_start = node.parent().map_or(node.start_byte(), |p| p.start_byte());
        if !only_comments(&text[line_start..directive_start.max(line_start)]) {
            continue;
        }
        let spec = match name.as_str() {
            "include" if node.kind() == "system_lib_string" => text_of(node, text).trim().to_string(),
            "include" => unquoted(node, text),
            "directive" => {
                directive = text_of(node, text);
                continue;
            }
            // `#import <x.h>` (Objective-C, MSVC) and `#include_next <x.h>` (GNU).
            "argument" if ["#import", "#include_next"].contains(&directive.replace(' ', "").as_str()) => {
                match path_of(text_of(node, text)) {
                    Some(path) => path,
                    None => continue,
                }
            }
            _ => continue,
        };
        found.push((line_start, spec));
    }
    let lines_found: std::collections::HashSet<usize> = found.iter().map(|(at, _)| *at).collect();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let start = at;
        at += line.len();
        if lines_found.contains(&start) {
            continue;
        }
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let rest = rest.trim_start();
        let word_end = rest
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(rest.len());
        if !matches!(&rest[..word_end], "include" | "import" | "include_next") {
            continue;
        }
        let hash = start + (line.len() - line.trim_start().len());
        if in_literal(tree.root_node(), hash) {
            continue;
        }
        if let Some(path) = path_of(&rest[word_end..]) {
            found.push((start, path));
        }
    }
    found.sort_by_key(|(at, _)| *at);
    found
        .into_iter()
        .filter(|(_, spec)| !spec.is_empty() && spec != "<>")
        .map(|(_, spec)| RawImport::new(spec, EdgeKind::Include))
        .collect()
}

/// `x.h` of ` "x.h"`, `<x.h>` of ` <x.h> // why`.
fn path_of(argument: &str) -> Option<String> {
    let arg = argument.trim();
    if let Some(quoted) = arg.strip_prefix('"') {
        return quoted.split('"').next().map(str::to_string);
    }
    arg.starts_with('<')
        .then(|| arg.split_inclusive('>').next().unwrap_or("").to_string())
        .filter(|p| p.ends_with('>'))
}

/// Whether byte `at` is in a comment, a string or the body of a macro definition.
fn in_literal(root: Node<'_>, at: usize) -> bool {
    let mut node = root.descendant_for_byte_range(at, at + 1);
    while let Some(n) = node {
        let kind = n.kind();
        if kind.contains("comment")
            || kind.contains("string")
            || kind.contains("char_literal")
            || kind.starts_with("preproc_def")
            || kind == "preproc_function_def"
        {
            return true;
        }
        node = n.parent();
    }
    false
}

/// Whether `before` (what stands before a directive on its line) is blanks and `/* … */`
/// comments only.
fn only_comments(before: &str) -> bool {
    let mut rest = before.trim_start();
    while let Some(inner) = rest.strip_prefix("/*") {
        match inner.split_once("*/") {
            Some((_, after)) => rest = after.trim_start(),
            None => return false,
        }
    }
    rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::language::Language;

    fn imports_of(src: &str) -> Vec<RawImport> {
        super::super::extract_imports(Language::C, src)
    }

    #[test]
    fn includes_outside_comments_and_literals() {
        let src = r##"#include "config.h"
#  include <lib/vec.h>
#include <stdio.h>
// #include "commented.h"
/* #include "block.h" */ #include "after_comment.h"
const char *s = "#include \"in_string.h\"";
const char *r = R"x(
#include "in_raw.h"
)x";
int a = 1; #include "not_at_line_start.h"
#define INCLUDE_IT \
  #include "continued.h"
"##;
        let specs: Vec<String> = imports_of(src).into_iter().map(|i| i.specifier).collect();
        assert_eq!(specs, vec!["config.h", "<lib/vec.h>", "<stdio.h>", "after_comment.h"]);
    }
}

//! Rust module edges: `mod x;` (with `#[path = "…"]`) and `use` declarations of project
//! paths (`crate::`, `self::`, `super::`, and 2018-style paths that start with a child
//! module), read from the tree.
//!
//! Inline modules (`mod tests { use super::*; }`) are the `mod` items around a node, so
//! `mod` files nest under them and `self`/`super` are taken relative to the right module.
//! Qualified paths in expressions (`crate::a::f()` without a `use`) are not edges.

use tree_sitter::{Node, Tree};

use super::{captures, text_of, unquoted, RawImport};
use crate::content::code_grammar::Grammar;
use crate::content::Language as ContentLanguage;
use crate::index::language::EdgeKind;

const PATTERNS: &[&str] = &[
    "(mod_item) @mod",
    "(use_declaration) @use",
    "(macro_invocation (token_tree) @macro)",
];

pub(super) fn imports(tree: &Tree, text: &str) -> Vec<RawImport> {
    let mut found = Vec::new();
    imports_in(tree, text, &[], 0, &mut found);
    found
}

/// How deep macro bodies are read inside macro bodies (`cfg_rt! { cfg_net! { … } }`).
const MAX_MACRO_DEPTH: usize = 4;

/// The imports of `tree`, inside the inline modules `outer`; the items in the bodies of
/// macro calls (`cfg_unix! { mod unix; pub use unix::Pipe; }`, which the grammar keeps as
/// tokens) are parsed as Rust in turn.
fn imports_in(tree: &Tree, text: &str, outer: &[String], depth: usize, found: &mut Vec<RawImport>) {
    let scope_of = |node: Node<'_>| -> Vec<String> {
        outer
            .iter()
            .cloned()
            .chain(inline_modules(node, text).into_iter().map(str::to_string))
            .collect()
    };
    for (name, node) in captures(tree, text, PATTERNS) {
        let scope = scope_of(node);
        match name.as_str() {
            "mod" => {
                if node.child_by_field_name("body").is_some() {
                    continue;
                }
                let Some(module) = node.child_by_field_name("name").map(|n| text_of(n, text)) else {
                    continue;
                };
                let spec = match path_attribute(node, text) {
                    Some(path) if scope.is_empty() => format!("{module}#path={path}"),
                    _ => scope
                        .iter()
                        .map(String::as_str)
                        .chain([module])
                        .collect::<Vec<_>>()
                        .join("/"),
                };
                found.push(RawImport::new(spec, EdgeKind::Mod));
            }
            "use" => {
                let mut cursor = node.walk();
                let public = node.children(&mut cursor).any(|c| c.kind() == "visibility_modifier");
                let kind = if public { EdgeKind::Reexport } else { EdgeKind::Use };
                let Some(argument) = node.child_by_field_name("argument") else {
                    continue;
                };
                let mut paths = Vec::new();
                expand(argument, text, &[], &mut paths);
                let scope: Vec<&str> = scope.iter().map(String::as_str).collect();
                for path in paths {
                    if let Some(spec) = use_specifier(&scope, path) {
                        found.push(RawImport::new(spec, kind));
                    }
                }
            }
            "macro" if depth < MAX_MACRO_DEPTH => {
                let body = text_of(node, text);
                if !(body.contains("mod ") || body.contains("use ")) {
                    continue;
                }
                // The tokens between the delimiters, read as items.
                let inner = body.get(1..body.len().saturating_sub(1)).unwrap_or("");
                let Some(tree) = Grammar::of(ContentLanguage::Rust).and_then(|g| g.parse(inner)) else {
                    continue;
                };
                imports_in(&tree, inner, &scope, depth + 1, found);
            }
            _ => {}
        }
    }
}

/// The names of the inline modules around `node`, outermost first.
fn inline_modules<'s>(node: Node<'_>, text: &'s str) -> Vec<&'s str> {
    let mut names = Vec::new();
    let mut at = node.parent();
    while let Some(parent) = at {
        if parent.kind() == "mod_item" {
            if let Some(name) = parent.child_by_field_name("name") {
                names.push(text_of(name, text));
            }
        }
        at = parent.parent();
    }
    names.reverse();
    names
}

/// The `"x"` of a `#[path = "x"]` among the attributes directly above a `mod`.
fn path_attribute(node: Node<'_>, text: &str) -> Option<String> {
    let mut above = node.prev_named_sibling();
    while let Some(attribute) = above.filter(|n| n.kind() == "attribute_item") {
        let mut cursor = attribute.walk();
        for inner in attribute.named_children(&mut cursor) {
            let named_path = inner
                .named_child(0)
                .is_some_and(|n| n.kind() == "identifier" && text_of(n, text) == "path");
            if let Some(value) = inner.child_by_field_name("value").filter(|_| named_path) {
                return Some(unquoted(value, text));
            }
        }
        above = attribute.prev_named_sibling();
    }
    None
}

/// The paths a use tree names, each after `prefix`: `a::{b, c::{self, d}}` gives `a::b`,
/// `a::c::self`, `a::c::d`.
fn expand(node: Node<'_>, text: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let with = |segments: Vec<String>| prefix.iter().cloned().chain(segments).collect::<Vec<_>>();
    match node.kind() {
        "use_as_clause" => {
            if let Some(path) = node.child_by_field_name("path") {
                expand(path, text, prefix, out);
            }
        }
        "use_wildcard" => {
            let path = node.named_child(0).map(|p| segments(p, text)).unwrap_or_default();
            out.push(with(path));
        }
        "scoped_use_list" => {
            let path = node
                .child_by_field_name("path")
                .map(|p| segments(p, text))
                .unwrap_or_default();
            let inner = with(path);
            if let Some(list) = node.child_by_field_name("list") {
                expand(list, text, &inner, out);
            }
        }
        "use_list" => {
            let mut cursor = node.walk();
            for item in node.named_children(&mut cursor) {
                expand(item, text, prefix, out);
            }
        }
        _ => {
            let path = segments(node, text);
            if !path.is_empty() {
                out.push(with(path));
            }
        }
    }
}

/// The segments of a path (`crate::a::b` → `crate`, `a`, `b`).
fn segments(node: Node<'_>, text: &str) -> Vec<String> {
    match node.kind() {
        "scoped_identifier" => {
            let mut path = node
                .child_by_field_name("path")
                .map(|p| segments(p, text))
                .unwrap_or_default();
            if let Some(name) = node.child_by_field_name("name") {
                path.push(text_of(name, text).to_string());
            }
            path
        }
        "identifier" | "crate" | "self" | "super" | "metavariable" => vec![text_of(node, text).to_string()],
        _ => Vec::new(),
    }
}

/// The specifier of one expanded use path inside the inline modules `scope`, or `None`
/// when it names nothing in the project (`use self;`).
fn use_specifier(scope: &[&str], mut path: Vec<String>) -> Option<String> {
    if path.last().is_some_and(|s| s == "self") {
        path.pop();
    }
    let first = path.first()?.clone();
    let mut scope: Vec<String> = scope.iter().map(ToString::to_string).collect();
    let (prefix, rest): (String, Vec<String>) = match first.as_str() {
        "crate" => ("crate".into(), path[1..].to_vec()),
        "self" => (
            "self".into(),
            scope.iter().cloned().chain(path[1..].iter().cloned()).collect(),
        ),
        "super" => {
            let supers = path.iter().take_while(|s| *s == "super").count();
            let mut leftover = 0;
            for _ in 0..supers {
                if scope.pop().is_none() {
                    leftover += 1;
                }
            }
            let rest = scope.into_iter().chain(path[supers..].iter().cloned()).collect();
            let prefix = if leftover == 0 {
                "self".to_string()
            } else {
                vec!["super"; leftover].join("::")
            };
            (prefix, rest)
        }
        // `$crate` in macros and `::std` style absolute paths name other crates.
        "$crate" | "std" | "core" | "alloc" => return None,
        _ => ("?self".into(), scope.into_iter().chain(path).collect()),
    };
    if rest.is_empty() {
        return (prefix != "self").then_some(prefix);
    }
    Some(format!("{prefix}::{}", rest.join("::")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::language::Language;

    fn imports(src: &str) -> Vec<RawImport> {
        super::super::extract_imports(Language::Rust, src)
    }

    fn specs(text: &str) -> Vec<(String, EdgeKind)> {
        imports(text).into_iter().map(|i| (i.specifier, i.kind)).collect()
    }

    fn s(spec: &str, kind: EdgeKind) -> (String, EdgeKind) {
        (spec.to_string(), kind)
    }

    #[test]
    fn mods_and_use_trees() {
        let src = r#"
//! Crate docs: mod fake; use crate::fake;
pub mod cli;
mod exec;
#[cfg(unix)]
#[path = "os/unix.rs"]
mod platform;
pub use crate::exec::{pool::Pool, retry::{self, Policy}};
use self::cli::Args as A;
use std::path::Path;
use serde::Serialize;
use cli::*;
pub(crate) use super::sibling;
mod tests {
    use super::*;
    use super::cli::Args;
    mod nested;
}
"#;
        assert_eq!(
            specs(src),
            vec![
                s("cli", EdgeKind::Mod),
                s("exec", EdgeKind::Mod),
                s("platform#path=os/unix.rs", EdgeKind::Mod),
                s("crate::exec::pool::Pool", EdgeKind::Reexport),
                s("crate::exec::retry", EdgeKind::Reexport),
                s("crate::exec::retry::Policy", EdgeKind::Reexport),
                s("self::cli::Args", EdgeKind::Use),
                s("?self::serde::Serialize", EdgeKind::Use),
                s("?self::cli", EdgeKind::Use),
                s("super::sibling", EdgeKind::Reexport),
                s("tests/nested", EdgeKind::Mod),
            ]
        );
    }

    #[test]
    fn strings_chars_lifetimes_and_comments_make_no_edges() {
        let src = r##"
/* outer /* nested mod fake; */ still comment use crate::fake; */
const S: &str = "mod fake;";
const R: &str = r#"use crate::fake; "quoted" "#;
fn f<'a>(x: &'a str) -> char { let _q = '"'; let _b = b'\''; 'x' }
mod real;
"##;
        assert_eq!(specs(src), vec![s("real", EdgeKind::Mod)]);
    }
}

//! Import extraction: source text → the raw imports it declares, per language, read from
//! tree-sitter's syntax tree of the file with a query per language (the grammars that cut
//! code into chunks, [`crate::content`]), so an import in a comment, a string, a docstring
//! or a regex never becomes an edge, and one spread over lines or nested in a block does.
//!
//! This half of the index only reads one file; it does not know the project. What a
//! specifier points at is decided later by [`crate::index::resolve`], so an unchanged file
//! is never parsed again but its imports are re-resolved when other files appear or vanish.

mod c;
mod go;
mod javascript;
mod python;
mod rust;

use serde::{Deserialize, Serialize};
use tree_sitter::{Node, Query, QueryCursor, StreamingIterator, Tree};

use super::language::{EdgeKind, Language};
use crate::content::code_grammar::Grammar;
use crate::content::Language as ContentLanguage;

/// One import as written in a file, before resolution.
///
/// `specifier` is what the source names: `./util` (JS), `..pkg.mod` (Python, dots for
/// relative levels), `crate::a::b` / `self::a` / `super::a` / `?self::a` (Rust `use`; `?`
/// marks a path that may name an external crate), `a/b` or `name#path=x.rs` (Rust `mod`: the
/// inline modules around it, then its name),
/// `example.com/m/pkg` (Go), `util.h` or `<lib/x.h>` (C/C++).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawImport {
    pub specifier: String,
    pub kind: EdgeKind,
    /// Python `from X import a, b`: the imported names, any of which may be a submodule.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
}

impl RawImport {
    pub(crate) fn new(specifier: impl Into<String>, kind: EdgeKind) -> Self {
        RawImport {
            specifier: specifier.into(),
            kind,
            names: Vec::new(),
        }
    }
}

/// The imports of one file's text, in source order, duplicates removed.
pub fn extract_imports(language: Language, text: &str) -> Vec<RawImport> {
    let grammar_language = match language {
        Language::JavaScript => ContentLanguage::JavaScript,
        Language::TypeScript => ContentLanguage::TypeScript,
        Language::Python => ContentLanguage::Python,
        Language::Rust => ContentLanguage::Rust,
        Language::Go => ContentLanguage::Go,
        Language::C => ContentLanguage::C,
        Language::Cpp => ContentLanguage::Cpp,
    };
    let Some(tree) = Grammar::of(grammar_language).and_then(|g| g.parse(text)) else {
        return Vec::new();
    };
    let mut found = match language {
        Language::JavaScript | Language::TypeScript => javascript::imports(&tree, text),
        Language::Python => python::imports(&tree, text),
        Language::Rust => rust::imports(&tree, text),
        Language::Go => go::imports(&tree, text),
        Language::C | Language::Cpp => c::imports(&tree, text),
    };
    let mut seen = std::collections::HashSet::new();
    found.retain(|i| seen.insert((i.specifier.clone(), i.kind, i.names.clone())));
    found
}

/// A node a query captured, with the capture's name.
pub(crate) type Capture<'t> = (String, Node<'t>);

/// The matches of `patterns` over `tree`, in source order, each as its captures with their
/// names. Each pattern is compiled alone: one naming a kind the tree's grammar lacks
/// (TypeScript's `import_require_clause` in JavaScript) finds nothing, the others still do.
pub(crate) fn matches<'t>(tree: &'t Tree, text: &str, patterns: &[&str]) -> Vec<Vec<Capture<'t>>> {
    // (where the match starts, which pattern, its captures)
    let mut out: Vec<(usize, usize, Vec<Capture<'t>>)> = Vec::new();
    for (order, pattern) in patterns.iter().enumerate() {
        let Some(query) = compiled(tree, pattern) else {
            continue;
        };
        let names = query.capture_names();
        let mut cursor = QueryCursor::new();
        let mut found = cursor.matches(&query, tree.root_node(), text.as_bytes());
        while let Some(m) = found.next() {
            let captures: Vec<Capture<'t>> = m
                .captures
                .iter()
                .map(|c| (names.get(c.index as usize).copied().unwrap_or("").to_string(), c.node))
                .collect();
            let start = captures.iter().map(|(_, n)| n.start_byte()).min().unwrap_or(0);
            out.push((start, order, captures));
        }
    }
    out.sort_by_key(|(start, order, _)| (*start, *order));
    out.into_iter().map(|(_, _, captures)| captures).collect()
}

/// `pattern` compiled for `tree`'s grammar, once a run: compiling a query is far slower
/// than running it over one file (an index of 10,000 files spent four fifths of its time
/// compiling the same few queries again). `None` when the grammar has no such pattern.
fn compiled(tree: &Tree, pattern: &str) -> Option<std::sync::Arc<Query>> {
    type Compiled = std::collections::HashMap<(usize, String), Option<std::sync::Arc<Query>>>;
    static COMPILED: std::sync::LazyLock<std::sync::Mutex<Compiled>> = std::sync::LazyLock::new(Default::default);
    let language = tree.language();
    // The grammar's identity: the address of its (static) table.
    let grammar = language.clone().into_raw() as usize;
    let key = (grammar, pattern.to_string());
    let mut compiled = COMPILED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    compiled
        .entry(key)
        .or_insert_with(|| Query::new(&language, pattern).ok().map(std::sync::Arc::new))
        .clone()
}

/// The captures of `patterns` over `tree`, in source order, each with its capture name.
pub(crate) fn captures<'t>(tree: &'t Tree, text: &str, patterns: &[&str]) -> Vec<Capture<'t>> {
    matches(tree, text, patterns).into_iter().flatten().collect()
}

/// The text of `node`.
pub(crate) fn text_of<'s>(node: Node<'_>, text: &'s str) -> &'s str {
    text.get(node.byte_range()).unwrap_or("")
}

/// The content of a string literal node: its text without the quotes around it.
pub(crate) fn unquoted(node: Node<'_>, text: &str) -> String {
    let t = text_of(node, text);
    let t = t.strip_prefix(['"', '\'', '`']).unwrap_or(t);
    t.strip_suffix(['"', '\'', '`']).unwrap_or(t).to_string()
}

//! Import extraction: source text → the raw imports it declares, per language.
//!
//! This half of the index only reads one file; it does not know the project. What a
//! specifier points at is decided later by [`crate::index::resolve`], so an unchanged file
//! is never parsed again but its imports are re-resolved when other files appear or vanish.

mod c;
mod go;
mod javascript;
mod python;
mod rust;
mod scanner;

use serde::{Deserialize, Serialize};

use super::language::{EdgeKind, Language};

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
    let mut found = match language {
        Language::JavaScript | Language::TypeScript => javascript::imports(text),
        Language::Python => python::imports(text),
        Language::Rust => rust::imports(text),
        Language::Go => go::imports(text),
        Language::C | Language::Cpp => c::imports(text),
    };
    let mut seen = std::collections::HashSet::new();
    found.retain(|i| seen.insert((i.specifier.clone(), i.kind, i.names.clone())));
    found
}

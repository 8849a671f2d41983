//! The languages the index understands and the kinds of edge their imports make.
//!
//! A file becomes a node of the graph only when its extension names one of these languages;
//! everything else in the project (docs, data, configuration) is not a node.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The source language of an indexed file, chosen by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    JavaScript,
    TypeScript,
    Python,
    Rust,
    Go,
    C,
    Cpp,
}

impl Language {
    /// The language of a file name, or `None` when it is not a source file we index.
    /// `.h` counts as C (a C++ project's headers resolve the same way).
    pub fn from_file_name(name: &str) -> Option<Language> {
        let ext = name.rsplit_once('.').map(|(_, e)| e)?;
        Some(match ext {
            "ts" | "tsx" | "mts" | "cts" => Language::TypeScript,
            "js" | "jsx" | "mjs" | "cjs" => Language::JavaScript,
            "py" | "pyi" => Language::Python,
            "rs" => Language::Rust,
            "go" => Language::Go,
            "c" | "h" => Language::C,
            "cc" | "cpp" | "cxx" | "c++" | "hh" | "hpp" | "hxx" | "h++" | "ipp" | "tpp" | "inl" => Language::Cpp,
            _ => return None,
        })
    }

    /// The name used in the index file and in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
            Language::Python => "python",
            Language::Rust => "rust",
            Language::Go => "go",
            Language::C => "c",
            Language::Cpp => "cpp",
        }
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How one file depends on another; the `type` of an edge in the index and in
/// `rlm index neighbors --json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EdgeKind {
    /// JS/TS `import … from`, a side-effect `import "x"`; Python `import` / `from … import`;
    /// Go `import`.
    Import,
    /// JS/TS `export … from`; Rust `pub use`.
    Reexport,
    /// CommonJS `require("x")` (and TS `import x = require("x")`).
    Require,
    /// JS/TS `import("x")`.
    DynamicImport,
    /// Rust `mod x;`.
    Mod,
    /// Rust `use crate::…`, `use self::…`, `use super::…`.
    Use,
    /// C/C++ `#include`.
    Include,
}

impl EdgeKind {
    /// The name used in the index file and in output.
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::Import => "import",
            EdgeKind::Reexport => "reexport",
            EdgeKind::Require => "require",
            EdgeKind::DynamicImport => "dynamic-import",
            EdgeKind::Mod => "mod",
            EdgeKind::Use => "use",
            EdgeKind::Include => "include",
        }
    }
}

impl fmt::Display for EdgeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_by_extension() {
        assert_eq!(Language::from_file_name("a.d.ts"), Some(Language::TypeScript));
        assert_eq!(Language::from_file_name("App.tsx"), Some(Language::TypeScript));
        assert_eq!(Language::from_file_name("x.cjs"), Some(Language::JavaScript));
        assert_eq!(Language::from_file_name("__init__.py"), Some(Language::Python));
        assert_eq!(Language::from_file_name("vec.hpp"), Some(Language::Cpp));
        assert_eq!(Language::from_file_name("README.md"), None);
        assert_eq!(Language::from_file_name("Makefile"), None);
    }

    #[test]
    fn kinds_serialize_kebab_case() {
        assert_eq!(
            serde_json::to_string(&EdgeKind::DynamicImport).unwrap(),
            "\"dynamic-import\""
        );
        assert_eq!(EdgeKind::DynamicImport.to_string(), "dynamic-import");
        assert_eq!(serde_json::to_string(&Language::Cpp).unwrap(), "\"cpp\"");
    }
}

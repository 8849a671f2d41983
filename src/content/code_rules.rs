//! Per-language line rules for the code chunker, as data, for the languages without a
//! grammar ([`super::code_grammar`]): which line prefixes open an item (a boundary
//! candidate), which lines belong to the item below them (decorators, attributes, doc
//! comments), which lines form the import block, and which are comments.
//!
//! The seed's "blank-line + indentation heuristic" with keyword prefixes; Kotlin, Scala,
//! Swift and Zig use only the import rules (their items come from [`super::code_scan`]).

use super::content_type::Language;

/// The line rules of one language.
#[derive(Debug)]
pub(crate) struct CodeRules {
    /// Prefixes (of a line with its indentation removed) that open an item.
    items: &'static [&'static str],
    /// Prefixes of lines that attach to the item below (`@decorator`, `#[derive]`, `///`).
    attach: &'static [&'static str],
    /// Prefixes of import lines.
    imports: &'static [&'static str],
    /// Prefixes of comment lines, skipped while looking for the import block.
    comments: &'static [&'static str],
    /// C-family: a line like `static int parse(char *s)` opens a function.
    signatures: bool,
    /// Shell: `name() {` opens a function.
    shell_functions: bool,
    /// Haskell: `name args = …` and `name :: Type` at the margin open a definition.
    bare_definitions: bool,
}

const SLASH_COMMENTS: &[&str] = &["//", "/*", "*"];
const HASH_COMMENTS: &[&str] = &["#"];

const GENERIC: CodeRules = CodeRules {
    // The seed's boundary keywords.
    items: &[
        "def ",
        "class ",
        "function ",
        "func ",
        "fn ",
        "pub fn ",
        "impl ",
        "module ",
        "export ",
        "const ",
        "type ",
        "interface ",
    ],
    attach: &["@", "#[", "//", "#"],
    imports: &["import ", "from ", "use ", "require", "#include", "using ", "package "],
    comments: &["//", "/*", "*", "#", "--"],
    signatures: false,
    shell_functions: false,
    bare_definitions: false,
};

/// Kotlin, Scala, Swift: modifiers and declaration keywords.
const JVM_LIKE: CodeRules = CodeRules {
    items: &[
        "public ",
        "private ",
        "protected ",
        "internal ",
        "static ",
        "final ",
        "abstract ",
        "sealed ",
        "open ",
        "override ",
        "suspend ",
        "async ",
        "synchronized ",
        "partial ",
        "readonly ",
        "class ",
        "interface ",
        "enum ",
        "record ",
        "struct ",
        "object ",
        "trait ",
        "data class ",
        "case class ",
        "fun ",
        "def ",
        "func ",
        "val ",
        "var ",
        "let ",
        "extension ",
        "protocol ",
        "namespace ",
        "typealias ",
        "init(",
        "deinit",
    ],
    attach: &["@", "[", "///", "//", "/*", "*"],
    imports: &["package ", "import ", "using "],
    comments: SLASH_COMMENTS,
    signatures: true,
    ..GENERIC
};

const LUA: CodeRules = CodeRules {
    items: &["function ", "local function ", "local "],
    attach: &["--"],
    imports: &["local ", "require"],
    comments: &["--"],
    ..GENERIC
};

const ZIG: CodeRules = CodeRules {
    items: &["fn ", "pub ", "const ", "var ", "test ", "export ", "extern "],
    attach: &["///", "//"],
    imports: &["const "],
    comments: &["//"],
    ..GENERIC
};

const ELIXIR: CodeRules = CodeRules {
    items: &[
        "defmodule ",
        "def ",
        "defp ",
        "defmacro ",
        "defmacrop ",
        "defstruct",
        "defimpl ",
        "defprotocol ",
        "defguard ",
    ],
    attach: &["@", "#"],
    imports: &["import ", "alias ", "require ", "use "],
    comments: HASH_COMMENTS,
    ..GENERIC
};

const HASKELL: CodeRules = CodeRules {
    items: &["data ", "type ", "newtype ", "class ", "instance ", "module "],
    attach: &["--", "{-"],
    imports: &["module ", "import "],
    comments: &["--", "{-"],
    bare_definitions: true,
    ..GENERIC
};

const OCAML: CodeRules = CodeRules {
    items: &[
        "let ",
        "and ",
        "type ",
        "module ",
        "exception ",
        "class ",
        "val ",
        "external ",
    ],
    attach: &["(*"],
    imports: &["open "],
    comments: &["(*"],
    ..GENERIC
};

const SHELL: CodeRules = CodeRules {
    items: &["function "],
    attach: &["#"],
    imports: &["source ", ". "],
    comments: HASH_COMMENTS,
    shell_functions: true,
    ..GENERIC
};

/// The rules for `language`; the seed's generic keywords when it is unknown.
pub(crate) fn rules_for(language: Option<Language>) -> &'static CodeRules {
    match language {
        None => &GENERIC,
        // The languages with a grammar never reach the line rules.
        Some(
            Language::Python
            | Language::JavaScript
            | Language::TypeScript
            | Language::Rust
            | Language::Go
            | Language::Java
            | Language::CSharp
            | Language::C
            | Language::Cpp
            | Language::Ruby
            | Language::Php,
        ) => &GENERIC,
        Some(Language::Kotlin | Language::Scala | Language::Swift) => &JVM_LIKE,
        Some(Language::Lua) => &LUA,
        Some(Language::Zig) => &ZIG,
        Some(Language::Elixir) => &ELIXIR,
        Some(Language::Haskell) => &HASKELL,
        Some(Language::OCaml) => &OCAML,
        Some(Language::Shell) => &SHELL,
    }
}

const CONTROL_WORDS: &[&str] = &[
    "if", "else", "for", "while", "switch", "return", "do", "case", "sizeof", "catch", "try", "throw", "new", "delete",
    "goto", "await", "yield",
];

impl CodeRules {
    /// Whether `t` (a line without its indentation) opens an item.
    pub(crate) fn opens_item(&self, t: &str) -> bool {
        if self.items.iter().any(|p| t.starts_with(p)) {
            return true;
        }
        (self.signatures && looks_like_signature(t))
            || (self.shell_functions && looks_like_shell_function(t))
            || (self.bare_definitions && looks_like_bare_definition(t))
    }

    /// Whether `t` belongs to the item below it.
    pub(crate) fn attaches(&self, t: &str) -> bool {
        self.attach.iter().any(|p| t.starts_with(p))
    }

    /// Whether `t` is (the first line of) an import. For languages whose imports share a
    /// keyword with ordinary statements (`const x = require(…)`), the line must also name
    /// the import mechanism.
    pub(crate) fn imports(&self, t: &str) -> bool {
        if !self.imports.iter().any(|p| t.starts_with(p)) {
            return false;
        }
        let declaration = ["const ", "let ", "var ", "local "].iter().any(|p| t.starts_with(p));
        let mod_decl = t.starts_with("mod ") || t.starts_with("pub mod ");
        if declaration {
            t.contains("require(") || t.contains("require \"") || t.contains("@import(")
        } else if mod_decl {
            t.trim_end().ends_with(';')
        } else {
            true
        }
    }

    /// Whether `t` is a comment line.
    pub(crate) fn is_comment(&self, t: &str) -> bool {
        // `#include` and `#[attr]` are not comments even where `#` starts one.
        self.comments.iter().any(|p| t.starts_with(p)) && !t.starts_with("#include") && !t.starts_with("#[")
    }
}

/// `static int parse(char *s) {` — a return type and a name before `(`, no `;` at the end.
fn looks_like_signature(t: &str) -> bool {
    let Some(paren) = t.find('(') else { return false };
    let before = &t[..paren];
    let first = before.split_whitespace().next().unwrap_or("");
    t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && !t.trim_end().ends_with(';')
        && before.split_whitespace().count() >= 2
        && !before.contains(['=', '.'])
        && !CONTROL_WORDS.contains(&first)
}

/// `deploy() {` or `deploy () {`.
fn looks_like_shell_function(t: &str) -> bool {
    let Some(paren) = t.find("()") else { return false };
    let name = t[..paren].trim_end();
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':'))
}

/// `parse :: String -> Expr` or `parse input = …` at the margin.
fn looks_like_bare_definition(t: &str) -> bool {
    t.starts_with(|c: char| c.is_ascii_lowercase()) && (t.contains(" :: ") || t.contains(" = "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_told_from_statements() {
        assert!(looks_like_signature("static int parse(char *s) {"));
        assert!(looks_like_signature("public void run() {"));
        assert!(!looks_like_signature("if (x) {"));
        assert!(!looks_like_signature("printf(\"%d\", x);"));
        assert!(!looks_like_signature("int x = f(y)"));
        assert!(!looks_like_signature("obj.call(a, b)"));
    }

    #[test]
    fn imports_need_their_mechanism() {
        let lua = rules_for(Some(Language::Lua));
        assert!(lua.imports("local json = require(\"json\")"));
        assert!(!lua.imports("local max = 10"));
        let zig = rules_for(Some(Language::Zig));
        assert!(zig.imports("const std = @import(\"std\");"));
        assert!(!zig.imports("const max = 10;"));
        let kotlin = rules_for(Some(Language::Kotlin));
        assert!(kotlin.imports("import a.b.C") && kotlin.imports("package a.b"));
    }

    #[test]
    fn shell_and_haskell_definitions() {
        let sh = rules_for(Some(Language::Shell));
        assert!(sh.opens_item("deploy() {"));
        assert!(sh.opens_item("function build {"));
        assert!(!sh.opens_item("echo hi"));
        let hs = rules_for(Some(Language::Haskell));
        assert!(hs.opens_item("parse :: String -> Expr"));
        assert!(!hs.opens_item("  where x = 1"));
    }
}

//! The vocabulary of content detection: what a file is ([`ContentType`]), which programming
//! language a source file is written in ([`Language`]), and how big it is ([`SizeTier`]).
//!
//! The names and tiers come from the content-aware and multi-file seeds; they appear in
//! plans (`--dry-run --json`), prompts and reports, so their serialized spellings are fixed.

use serde::{Deserialize, Serialize};

/// What a file is, as far as chunking and analyst routing care.
///
/// The declaration order is the order in which per-type groups (batches, syntheses) are
/// listed, so it is part of what makes plans deterministic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContentType {
    SourceCode,
    /// CSV or TSV.
    StructuredData,
    Json,
    Jsonl,
    Log,
    Prose,
    Markup,
    Config,
}

impl ContentType {
    /// Every content type, in declaration order.
    pub const ALL: [ContentType; 8] = [
        ContentType::SourceCode,
        ContentType::StructuredData,
        ContentType::Json,
        ContentType::Jsonl,
        ContentType::Log,
        ContentType::Prose,
        ContentType::Markup,
        ContentType::Config,
    ];

    /// The serialized name (`source_code`, `structured_data`, …), as shown to users and models.
    pub fn as_str(self) -> &'static str {
        match self {
            ContentType::SourceCode => "source_code",
            ContentType::StructuredData => "structured_data",
            ContentType::Json => "json",
            ContentType::Jsonl => "jsonl",
            ContentType::Log => "log",
            ContentType::Prose => "prose",
            ContentType::Markup => "markup",
            ContentType::Config => "config",
        }
    }
}

impl std::fmt::Display for ContentType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The programming language of a source file. It picks the boundary keywords the code
/// chunker cuts at and is named in the code analyst's prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    Python,
    JavaScript,
    TypeScript,
    Rust,
    Go,
    Java,
    Kotlin,
    CSharp,
    C,
    Cpp,
    Ruby,
    Php,
    Swift,
    Scala,
    Lua,
    Zig,
    Elixir,
    Haskell,
    OCaml,
    Shell,
}

impl Language {
    /// The serialized name, as named to the model (`python`, `cpp`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
            Language::Rust => "rust",
            Language::Go => "go",
            Language::Java => "java",
            Language::Kotlin => "kotlin",
            Language::CSharp => "csharp",
            Language::C => "c",
            Language::Cpp => "cpp",
            Language::Ruby => "ruby",
            Language::Php => "php",
            Language::Swift => "swift",
            Language::Scala => "scala",
            Language::Lua => "lua",
            Language::Zig => "zig",
            Language::Elixir => "elixir",
            Language::Haskell => "haskell",
            Language::OCaml => "ocaml",
            Language::Shell => "shell",
        }
    }

    /// The language a source extension (lower case, no dot) names, if any.
    pub fn from_extension(ext: &str) -> Option<Language> {
        Some(match ext {
            "py" | "pyi" | "pyw" => Language::Python,
            "js" | "jsx" | "mjs" | "cjs" => Language::JavaScript,
            "ts" | "tsx" | "mts" | "cts" => Language::TypeScript,
            "rs" => Language::Rust,
            "go" => Language::Go,
            "java" => Language::Java,
            "kt" | "kts" => Language::Kotlin,
            "cs" => Language::CSharp,
            "c" | "h" => Language::C,
            "cpp" | "cc" | "cxx" | "hpp" | "hh" | "hxx" => Language::Cpp,
            "rb" => Language::Ruby,
            "php" => Language::Php,
            "swift" => Language::Swift,
            "scala" | "sc" => Language::Scala,
            "lua" => Language::Lua,
            "zig" => Language::Zig,
            "ex" | "exs" => Language::Elixir,
            "hs" => Language::Haskell,
            "ml" | "mli" => Language::OCaml,
            "sh" | "bash" | "zsh" | "ksh" => Language::Shell,
            _ => return None,
        })
    }

    /// The language of a shebang interpreter (`python3`, `node`, `bash`, …), if known.
    pub fn from_interpreter(name: &str) -> Option<Language> {
        let name = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
        Some(match name {
            "python" | "pypy" => Language::Python,
            "node" | "nodejs" | "deno" | "bun" => Language::JavaScript,
            "ts-node" | "tsx" => Language::TypeScript,
            "ruby" => Language::Ruby,
            "php" => Language::Php,
            "lua" | "luajit" => Language::Lua,
            "elixir" => Language::Elixir,
            "sh" | "bash" | "zsh" | "ksh" | "dash" | "ash" => Language::Shell,
            _ => return None,
        })
    }

    /// How a line comment starts, used for the one marker line the code chunker writes
    /// between a prepended import block and the chunk body.
    pub fn line_comment(self) -> &'static str {
        match self {
            Language::Python | Language::Ruby | Language::Shell | Language::Elixir => "#",
            Language::Lua | Language::Haskell => "--",
            Language::OCaml => "(*",
            _ => "//",
        }
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The multi-file seed's size tiers. Small files are sent whole (and batched with others of
/// their type); medium and large ones are chunked by their type's target size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeTier {
    /// At most [`SizeTier::SMALL_MAX_LINES`] lines.
    Small,
    /// 1501–5000 lines.
    Medium,
    /// Over 5000 lines.
    Large,
}

impl SizeTier {
    /// The largest line count of a small file; also the combined-line cap of a batch.
    pub const SMALL_MAX_LINES: usize = 1500;
    /// The largest line count of a medium file.
    pub const MEDIUM_MAX_LINES: usize = 5000;

    /// The tier of a file with `lines` lines.
    pub fn of(lines: usize) -> SizeTier {
        if lines <= Self::SMALL_MAX_LINES {
            SizeTier::Small
        } else if lines <= Self::MEDIUM_MAX_LINES {
            SizeTier::Medium
        } else {
            SizeTier::Large
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_follow_the_seed_table() {
        assert_eq!(SizeTier::of(0), SizeTier::Small);
        assert_eq!(SizeTier::of(1500), SizeTier::Small);
        assert_eq!(SizeTier::of(1501), SizeTier::Medium);
        assert_eq!(SizeTier::of(5000), SizeTier::Medium);
        assert_eq!(SizeTier::of(5001), SizeTier::Large);
    }

    #[test]
    fn names_serialize_in_snake_case() {
        for t in ContentType::ALL {
            assert_eq!(serde_json::to_string(&t).unwrap(), format!("\"{}\"", t.as_str()));
        }
        assert_eq!(serde_json::to_string(&Language::CSharp).unwrap(), "\"csharp\"");
        assert_eq!(serde_json::to_string(&Language::JavaScript).unwrap(), "\"javascript\"");
        assert_eq!(serde_json::to_string(&SizeTier::Medium).unwrap(), "\"medium\"");
    }

    #[test]
    fn interpreters_with_versions_are_recognized() {
        assert_eq!(Language::from_interpreter("python3.11"), Some(Language::Python));
        assert_eq!(Language::from_interpreter("bash"), Some(Language::Shell));
        assert_eq!(Language::from_interpreter("perl"), None);
    }
}

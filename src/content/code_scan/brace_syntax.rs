//! What each brace language's literals and comments look like ([`Syntax`]): what a `'`
//! opens, template literals, raw strings, text blocks, regex literals, JSX, comments that
//! nest, preprocessor lines, and whether a newline can end a statement.

use crate::content::content_type::Language;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Quote {
    /// `'` opens a string (JavaScript, PHP).
    String,
    /// `'` opens a character literal when one closes right after (`'a'`, `'\n'`);
    /// otherwise it is a Rust lifetime, a Scala symbol or a C++ digit separator.
    Char,
}

#[derive(Debug, Clone)]
pub(super) struct Syntax {
    pub(super) single_quote: Quote,
    /// JavaScript template literals: backticks with `${…}`.
    pub(super) templates: bool,
    /// Go raw strings: backticks without interpolation.
    pub(super) backtick_raw: bool,
    /// `"""` text blocks (Java, Kotlin, Scala, Swift, C#).
    pub(super) triple_quotes: bool,
    /// Rust `r"…"`, `r#"…"#`.
    pub(super) rust_raw: bool,
    /// C++ `R"delim(…)delim"`.
    pub(super) cpp_raw: bool,
    /// C# `@"…"` with `""` for a quote.
    pub(super) verbatim: bool,
    /// JavaScript regex literals.
    pub(super) regex: bool,
    /// JSX elements where an expression may start (JavaScript, TypeScript).
    pub(super) jsx: bool,
    /// TypeScript: `<T>(x) => x` and `<Type>value` are no JSX.
    pub(super) typescript: bool,
    /// `#` line comments (PHP).
    pub(super) hash_comments: bool,
    /// Zig `\\` multiline string lines.
    pub(super) zig_lines: bool,
    /// `/* /* */ */` nests (Rust, Swift, Kotlin, Scala).
    pub(super) nested_comments: bool,
    /// `#` preprocessor lines (C, C++, C#).
    pub(super) preprocessor: bool,
    /// A newline can end a statement (JavaScript, Go, Kotlin, Swift, Scala).
    pub(super) newline_ends: bool,
    /// C and C++: a header with `(` is a function (`struct s *make(void) {`).
    pub(super) paren_means_function: bool,
}

impl Syntax {
    pub(super) fn of(language: Language) -> Option<Syntax> {
        let base = Syntax {
            single_quote: Quote::Char,
            templates: false,
            backtick_raw: false,
            triple_quotes: false,
            rust_raw: false,
            cpp_raw: false,
            verbatim: false,
            regex: false,
            jsx: false,
            typescript: false,
            hash_comments: false,
            zig_lines: false,
            nested_comments: false,
            preprocessor: false,
            newline_ends: false,
            paren_means_function: false,
        };
        Some(match language {
            Language::JavaScript | Language::TypeScript => Syntax {
                single_quote: Quote::String,
                templates: true,
                regex: true,
                jsx: true,
                typescript: language == Language::TypeScript,
                newline_ends: true,
                ..base
            },
            Language::Rust => Syntax {
                rust_raw: true,
                nested_comments: true,
                ..base
            },
            Language::Go => Syntax {
                backtick_raw: true,
                newline_ends: true,
                ..base
            },
            Language::Java => Syntax {
                triple_quotes: true,
                ..base
            },
            Language::Kotlin | Language::Scala | Language::Swift => Syntax {
                triple_quotes: true,
                nested_comments: true,
                newline_ends: true,
                ..base
            },
            Language::CSharp => Syntax {
                triple_quotes: true,
                verbatim: true,
                preprocessor: true,
                ..base
            },
            Language::C | Language::Cpp => Syntax {
                cpp_raw: language == Language::Cpp,
                preprocessor: true,
                paren_means_function: true,
                ..base
            },
            Language::Php => Syntax {
                single_quote: Quote::String,
                hash_comments: true,
                ..base
            },
            Language::Zig => Syntax {
                zig_lines: true,
                ..base
            },
            _ => return None,
        })
    }
}

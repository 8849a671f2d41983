//! Where code may be cut: a lexical scanner per language family that finds the items of a
//! file (functions, classes, statements at depth 0) and the members of its classes,
//! without a parser.
//!
//! - Brace languages (JavaScript/TypeScript, Rust, Go, Java, Kotlin, C#, Scala, Swift,
//!   C/C++, PHP, Zig): the scanner tracks `{}` depth and `()`/`[]` nesting through
//!   strings, character literals (told from Rust lifetimes and C++ digit separators),
//!   template literals with `${…}`, comments (nested where the language nests them), raw
//!   strings (Rust `r#"…"#`, C++ `R"d(…)d"`, Go and JavaScript backticks, `"""` text
//!   blocks, C# `@"…"`), JavaScript regex literals and C preprocessor lines. An item
//!   starts on a line at the wanted depth, outside any parenthesis, after a line that
//!   ended a statement (`;`, `}`, `,` between members, or — in languages without
//!   semicolons — a value), unless the line continues the one above (`.`, `else`, `catch`,
//!   `where`, `{`, an operator…).
//! - Python: logical lines (through brackets, `\` continuations and triple-quoted
//!   strings) at one indentation; `else`/`elif`/`except`/`finally` continue the statement.
//!
//! Decorators, attributes and the comment lines directly above an item belong to it. A
//! class (impl, struct, interface, trait, enum, namespace, object literal…) has a
//! [`Body`]: its header lines and its members, found the same way one level deeper. A
//! function never has one: it is never cut inside.
//!
//! Why not tree-sitter (issue 16): the grammars for these languages, measured in a scratch
//! crate on this 2-core machine, add about 40 s to a clean `cargo build --release`
//! (63 s of CPU; 21 s for a debug build) and 9.7 MB to the stripped binary (0.34 MB →
//! 10.0 MB). For choosing cut points between items a scanner that understands literals
//! and comments is enough, costs one pass over the bytes, and adds nothing to the build.

use super::content_type::Language;
use super::line_index::LineIndex;
use super::line_range::LineRange;

/// How deep classes are cut into (a class in a namespace in a module…).
const MAX_NESTING: usize = 4;

/// One item of a file or of a class body: a contiguous run of lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Item {
    /// From the first attached line (decorator, doc comment) to the line before the next
    /// item.
    pub lines: LineRange,
    /// Set for a class-like item that can be cut between its members.
    pub body: Option<Body>,
}

/// A class-like item's header and members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Body {
    /// From the line naming the class to the line opening its body.
    pub header: LineRange,
    /// The members, contiguous, from the line after the header to the item's last line.
    pub members: Vec<Item>,
}

/// The items of the file, contiguous from line 1 to the last, when a scanner knows the
/// language; `None` otherwise.
pub(crate) fn scan(index: &LineIndex<'_>, language: Option<Language>) -> Option<Vec<Item>> {
    if index.is_empty() {
        return Some(Vec::new());
    }
    let whole = LineRange::new(1, index.len());
    match language? {
        Language::Python => {
            let lines = python_lines(index);
            Some(PythonItems { index, lines: &lines }.items(whole, 0, 0))
        }
        language => {
            let syntax = Syntax::of(language)?;
            let (lines, blocks) = lex_braces(index.text(), index.len(), &syntax);
            let scanner = BraceItems {
                index,
                syntax: &syntax,
                lines: &lines,
                blocks: &blocks,
            };
            Some(scanner.items(whole, 0, 0))
        }
    }
}

/// Splits `range` at `starts` (sorted first lines) into items; lines before the first
/// start are an item of their own.
fn split_at(range: LineRange, starts: &[usize]) -> Vec<LineRange> {
    let mut out = Vec::with_capacity(starts.len() + 1);
    let mut from = range.start;
    for &s in starts {
        if s > from && s <= range.end {
            out.push(LineRange::new(from, s - 1));
            from = s;
        }
    }
    if from <= range.end {
        out.push(LineRange::new(from, range.end));
    }
    out
}

// ---------------------------------------------------------------------------------------
// Brace languages.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quote {
    /// `'` opens a string (JavaScript, PHP).
    String,
    /// `'` opens a character literal when one closes right after (`'a'`, `'\n'`);
    /// otherwise it is a Rust lifetime, a Scala symbol or a C++ digit separator.
    Char,
}

#[derive(Debug, Clone)]
struct Syntax {
    single_quote: Quote,
    /// JavaScript template literals: backticks with `${…}`.
    templates: bool,
    /// Go raw strings: backticks without interpolation.
    backtick_raw: bool,
    /// `"""` text blocks (Java, Kotlin, Scala, Swift, C#).
    triple_quotes: bool,
    /// Rust `r"…"`, `r#"…"#`.
    rust_raw: bool,
    /// C++ `R"delim(…)delim"`.
    cpp_raw: bool,
    /// C# `@"…"` with `""` for a quote.
    verbatim: bool,
    /// JavaScript regex literals.
    regex: bool,
    /// `#` line comments (PHP).
    hash_comments: bool,
    /// Zig `\\` multiline string lines.
    zig_lines: bool,
    /// `/* /* */ */` nests (Rust, Swift, Kotlin, Scala).
    nested_comments: bool,
    /// `#` preprocessor lines (C, C++, C#).
    preprocessor: bool,
    /// A newline can end a statement (JavaScript, Go, Kotlin, Swift, Scala).
    newline_ends: bool,
    /// C and C++: a header with `(` is a function (`struct s *make(void) {`).
    paren_means_function: bool,
}

impl Syntax {
    fn of(language: Language) -> Option<Syntax> {
        let base = Syntax {
            single_quote: Quote::Char,
            templates: false,
            backtick_raw: false,
            triple_quotes: false,
            rust_raw: false,
            cpp_raw: false,
            verbatim: false,
            regex: false,
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

/// What the scanner knows about one line.
#[derive(Debug, Clone, Copy, Default)]
struct LineInfo {
    /// `{` open at the line's start.
    braces: u32,
    /// At the line's start: no `(`/`[`/`${` open, not inside a literal or comment.
    clean: bool,
    /// The line has code (not only blanks and comments); lines inside a multi-line string
    /// count as code.
    code: bool,
    /// The line has a comment and no code.
    comment: bool,
    /// A preprocessor line (or its continuation).
    directive: bool,
    /// The last byte of code on the line (the closing quote of a string), 0 if unknown.
    last: u8,
}

/// A `{…}` block opened outside any parenthesis.
#[derive(Debug, Clone, Copy)]
struct Block {
    open_line: usize,
    /// `{` open before this one.
    depth: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opener {
    Brace,
    Paren,
    /// `${` in a template literal: its `}` goes back into the template.
    TemplateExpr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Code,
    LineComment,
    BlockComment(u32),
    /// A string closed by `quote`; `multiline`: a newline does not end it.
    Str {
        quote: u8,
        multiline: bool,
    },
    Template,
    /// `"""` text block.
    Triple,
    /// Raw string closed by `"` and this many `#` (Rust) — or by a backtick (Go, hashes 0,
    /// `quote` b'`').
    Raw {
        quote: u8,
        hashes: usize,
    },
    /// C++ raw string closed by `)delim"`; the delimiter is at `start..end` of the text.
    CppRaw {
        start: usize,
        end: usize,
    },
    /// C# verbatim string (`""` is a quote).
    Verbatim,
    Regex {
        class: bool,
    },
    Directive,
}

/// One pass over `text`: the facts of each line (index 1..=lines) and the blocks.
fn lex_braces(text: &str, lines: usize, syntax: &Syntax) -> (Vec<LineInfo>, Vec<Block>) {
    let b = text.as_bytes();
    let mut info = vec![LineInfo::default(); lines + 2];
    let mut blocks: Vec<Block> = Vec::new();
    let mut stack: Vec<Opener> = Vec::new();
    let mut braces: u32 = 0;
    let mut others: u32 = 0;
    let mut state = State::Code;
    let mut line = 1;
    let mut at_line_start = true;
    // The last byte of code and where it was, for telling a regex from a division.
    let mut prev_code: (u8, usize) = (0, 0);
    let mut i = 0;
    while i < b.len() {
        if at_line_start {
            at_line_start = false;
            let li = &mut info[line];
            li.braces = braces;
            li.clean = others == 0 && state == State::Code;
            if !matches!(state, State::Code | State::LineComment | State::BlockComment(_)) {
                li.code = true;
            }
            if state == State::Directive {
                li.directive = true;
            }
            if state == State::Code && syntax.preprocessor {
                let rest = &b[i..];
                let ws = rest.iter().take_while(|&&c| c == b' ' || c == b'\t').count();
                if rest.get(ws) == Some(&b'#') {
                    state = State::Directive;
                    li.directive = true;
                    li.code = true;
                    li.last = b'#';
                }
            }
        }
        let c = b[i];
        if c == b'\n' {
            match state {
                State::LineComment => state = State::Code,
                State::Str { multiline: false, .. } | State::Regex { .. } => state = State::Code,
                State::Directive if !ends_with_backslash(&b[..i]) => state = State::Code,
                _ => {}
            }
            line += 1;
            at_line_start = true;
            i += 1;
            continue;
        }
        match state {
            State::Code => {
                let next = b.get(i + 1).copied().unwrap_or(0);
                if c == b' ' || c == b'\t' || c == b'\r' {
                    i += 1;
                    continue;
                }
                if c == b'/' && next == b'/' {
                    state = State::LineComment;
                    mark_comment(&mut info[line]);
                    i += 2;
                    continue;
                }
                if c == b'/' && next == b'*' {
                    state = State::BlockComment(1);
                    mark_comment(&mut info[line]);
                    i += 2;
                    continue;
                }
                if c == b'#' && syntax.hash_comments && next != b'[' {
                    state = State::LineComment;
                    mark_comment(&mut info[line]);
                    i += 1;
                    continue;
                }
                if c == b'\\' && next == b'\\' && syntax.zig_lines {
                    state = State::LineComment;
                    code_byte(&mut info[line], b'"');
                    i += 2;
                    continue;
                }
                code_byte(&mut info[line], c);
                let prev = prev_code;
                prev_code = (c, i);
                match c {
                    b'{' => {
                        if others == 0 {
                            blocks.push(Block {
                                open_line: line,
                                depth: braces,
                            });
                        }
                        stack.push(Opener::Brace);
                        braces += 1;
                    }
                    b'(' | b'[' => {
                        stack.push(Opener::Paren);
                        others += 1;
                    }
                    b'}' | b')' | b']' => match stack.pop() {
                        Some(Opener::Brace) => braces -= 1,
                        Some(Opener::Paren) => others -= 1,
                        Some(Opener::TemplateExpr) => {
                            others -= 1;
                            state = State::Template;
                        }
                        None => {}
                    },
                    b'"' => {
                        if syntax.triple_quotes && b[i..].starts_with(b"\"\"\"") {
                            state = State::Triple;
                            i += 3;
                            continue;
                        }
                        state = if syntax.verbatim && i > 0 && b[i - 1] == b'@' {
                            State::Verbatim
                        } else if let Some(hashes) = rust_raw_opening(b, i, syntax) {
                            State::Raw { quote: b'"', hashes }
                        } else if let Some((start, end)) = cpp_raw_opening(b, i, syntax) {
                            // Past the `(` (with the `i += 1` below).
                            i = end;
                            State::CppRaw { start, end }
                        } else {
                            State::Str {
                                quote: b'"',
                                multiline: false,
                            }
                        };
                    }
                    b'#' if syntax.rust_raw && rust_raw_hash_opening(b, i) => {
                        // `r#"`: the `r` was taken as code; the hashes open the string.
                        let hashes = b[i..].iter().take_while(|&&h| h == b'#').count();
                        state = State::Raw { quote: b'"', hashes };
                        i += hashes + 1;
                        continue;
                    }
                    b'\'' => match syntax.single_quote {
                        Quote::String => {
                            state = State::Str {
                                quote: b'\'',
                                multiline: false,
                            }
                        }
                        Quote::Char => {
                            if let Some(end) = char_literal_end(text, i) {
                                info[line].last = b'\'';
                                i = end;
                                continue;
                            }
                        }
                    },
                    b'`' if syntax.templates => state = State::Template,
                    b'`' if syntax.backtick_raw => state = State::Raw { quote: b'`', hashes: 0 },
                    b'/' if syntax.regex && regex_may_start(b, prev) => state = State::Regex { class: false },
                    _ => {}
                }
                i += 1;
            }
            State::LineComment => i += 1,
            State::BlockComment(depth) => {
                let next = b.get(i + 1).copied().unwrap_or(0);
                if c == b'*' && next == b'/' {
                    state = if depth > 1 {
                        State::BlockComment(depth - 1)
                    } else {
                        State::Code
                    };
                    i += 2;
                } else if c == b'/' && next == b'*' && syntax.nested_comments {
                    state = State::BlockComment(depth + 1);
                    i += 2;
                } else {
                    mark_comment(&mut info[line]);
                    i += 1;
                }
            }
            State::Str { quote, .. } => {
                if c == b'\\' {
                    // An escaped newline continues the string on the next line.
                    if b.get(i + 1) == Some(&b'\n') {
                        state = State::Str { quote, multiline: true };
                        i += 1;
                        continue;
                    }
                    i += 2;
                    continue;
                }
                if c == quote {
                    state = State::Code;
                    code_byte(&mut info[line], quote);
                    prev_code = (quote, i);
                }
                i += 1;
            }
            State::Template => {
                if c == b'\\' {
                    i += 2;
                    continue;
                }
                if c == b'`' {
                    state = State::Code;
                    code_byte(&mut info[line], b'`');
                    prev_code = (b'`', i);
                } else if c == b'$' && b.get(i + 1) == Some(&b'{') {
                    stack.push(Opener::TemplateExpr);
                    others += 1;
                    state = State::Code;
                    i += 2;
                    continue;
                }
                i += 1;
            }
            State::Triple => {
                if c == b'\\' {
                    i += 2;
                    continue;
                }
                if b[i..].starts_with(b"\"\"\"") {
                    state = State::Code;
                    code_byte(&mut info[line], b'"');
                    prev_code = (b'"', i);
                    i += 3;
                    continue;
                }
                i += 1;
            }
            State::Raw { quote, hashes } => {
                if c == quote && b[i + 1..].iter().take(hashes).filter(|&&h| h == b'#').count() == hashes {
                    state = State::Code;
                    code_byte(&mut info[line], quote);
                    prev_code = (quote, i);
                    i += 1 + hashes;
                    continue;
                }
                i += 1;
            }
            State::CppRaw { start, end } => {
                let delim = &b[start..end];
                if c == b')' && b[i + 1..].starts_with(delim) && b.get(i + 1 + delim.len()) == Some(&b'"') {
                    state = State::Code;
                    code_byte(&mut info[line], b'"');
                    i += delim.len() + 2;
                    continue;
                }
                i += 1;
            }
            State::Verbatim => {
                if c == b'"' {
                    if b.get(i + 1) == Some(&b'"') {
                        i += 2;
                        continue;
                    }
                    state = State::Code;
                    code_byte(&mut info[line], b'"');
                }
                i += 1;
            }
            State::Regex { class } => {
                match c {
                    b'\\' => {
                        i += 2;
                        continue;
                    }
                    b'[' => state = State::Regex { class: true },
                    b']' => state = State::Regex { class: false },
                    b'/' if !class => {
                        state = State::Code;
                        code_byte(&mut info[line], b'/');
                        prev_code = (b'a', i);
                    }
                    _ => {}
                }
                i += 1;
            }
            State::Directive => i += 1,
        }
    }
    (info, blocks)
}

fn mark_comment(li: &mut LineInfo) {
    if !li.code {
        li.comment = true;
    }
}

fn code_byte(li: &mut LineInfo, c: u8) {
    li.code = true;
    li.comment = false;
    li.last = c;
}

fn ends_with_backslash(before_newline: &[u8]) -> bool {
    let trimmed = before_newline.strip_suffix(b"\r").unwrap_or(before_newline);
    trimmed.last() == Some(&b'\\')
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// At a `"` (index `i`): the number of `#` of a Rust raw string `r"`/`br"` (0), if it is
/// one. `r#"` is found at its `#` by [`rust_raw_hash_opening`].
fn rust_raw_opening(b: &[u8], i: usize, syntax: &Syntax) -> Option<usize> {
    if !syntax.rust_raw || i == 0 || b[i - 1] != b'r' {
        return None;
    }
    let before = if i >= 2 && b[i - 2] == b'b' {
        i.checked_sub(3)
    } else {
        i.checked_sub(2)
    };
    before.is_none_or(|p| !is_ident(b[p])).then_some(0)
}

/// At a `#`: whether it starts the hashes of `r#"` (or `br#"`).
fn rust_raw_hash_opening(b: &[u8], i: usize) -> bool {
    if i == 0 || b[i - 1] != b'r' {
        return false;
    }
    let before = if i >= 2 && b[i - 2] == b'b' {
        i.checked_sub(3)
    } else {
        i.checked_sub(2)
    };
    let hashes = b[i..].iter().take_while(|&&h| h == b'#').count();
    before.is_none_or(|p| !is_ident(b[p])) && b.get(i + hashes) == Some(&b'"')
}

/// At a `"` after `R` (C++ raw string, with an optional `u8`/`u`/`U`/`L` prefix): the
/// delimiter's byte range, up to its `(`.
fn cpp_raw_opening(b: &[u8], i: usize, syntax: &Syntax) -> Option<(usize, usize)> {
    if !syntax.cpp_raw || i == 0 || b[i - 1] != b'R' {
        return None;
    }
    let mut p = i - 1;
    while p > 0 && matches!(b[p - 1], b'u' | b'8' | b'U' | b'L') {
        p -= 1;
    }
    if p > 0 && is_ident(b[p - 1]) {
        return None;
    }
    let start = i + 1;
    let len = b[start..].iter().take(17).position(|&c| c == b'(')?;
    let delim = &b[start..start + len];
    if delim.iter().any(|&c| matches!(c, b' ' | b')' | b'\\' | b'\n' | b'"')) {
        return None;
    }
    Some((start, start + len))
}

/// At a `'`: the byte after a character literal (`'a'`, `'é'`, `'\n'`, `'\u{1F600}'`),
/// or `None` when the quote is a lifetime, a symbol or a digit separator.
fn char_literal_end(text: &str, i: usize) -> Option<usize> {
    let b = text.as_bytes();
    if i > 0 && b[i - 1].is_ascii_digit() {
        return None;
    }
    let rest = text.get(i + 1..)?;
    let mut chars = rest.char_indices();
    let (_, first) = chars.next()?;
    if first == '\\' {
        // An escape: up to the closing quote, within a few characters.
        let close = rest.bytes().skip(2).take(12).position(|c| c == b'\'' || c == b'\n')?;
        return (rest.as_bytes()[close + 2] == b'\'').then_some(i + 1 + close + 3);
    }
    if first == '\'' || first == '\n' {
        return None;
    }
    let (at, second) = chars.next()?;
    (second == '\'').then_some(i + 1 + at + 1)
}

/// Whether a `/` after the code byte `prev` (and its position) starts a regex literal
/// rather than a division: after an operator, an opening bracket, or a keyword.
fn regex_may_start(b: &[u8], prev: (u8, usize)) -> bool {
    let (c, at) = prev;
    if c == 0 || b"(,=:[!&|?{};+-*%<>~^".contains(&c) {
        return true;
    }
    if !is_ident(c) {
        return false;
    }
    let start = b[..=at].iter().rposition(|&x| !is_ident(x)).map_or(0, |p| p + 1);
    matches!(
        &b[start..=at],
        b"return"
            | b"typeof"
            | b"instanceof"
            | b"in"
            | b"of"
            | b"new"
            | b"delete"
            | b"void"
            | b"throw"
            | b"case"
            | b"do"
            | b"else"
            | b"yield"
            | b"await"
    )
}

/// The items of brace-language code.
struct BraceItems<'a, 't> {
    index: &'a LineIndex<'t>,
    syntax: &'a Syntax,
    lines: &'a [LineInfo],
    blocks: &'a [Block],
}

/// Words that continue the statement of the line above.
const CONTINUING_WORDS: &[&str] = &[
    "else",
    "catch",
    "finally",
    "where",
    "while",
    "extends",
    "implements",
    "throws",
    "except",
];

/// Words that make an item class-like, and words that make it a function.
const CLASS_WORDS: &[&str] = &[
    "class",
    "struct",
    "interface",
    "impl",
    "trait",
    "enum",
    "union",
    "namespace",
    "module",
    "object",
    "extension",
    "protocol",
    "record",
    "mod",
    "extern",
];
const FUNCTION_WORDS: &[&str] = &["fn", "function", "func", "fun", "def"];

impl BraceItems<'_, '_> {
    fn items(&self, range: LineRange, depth: u32, nesting: usize) -> Vec<Item> {
        let starts = self.starts(range, depth);
        split_at(range, &starts)
            .into_iter()
            .map(|lines| {
                let body = (nesting < MAX_NESTING)
                    .then(|| self.body(lines, depth, nesting))
                    .flatten();
                Item { lines, body }
            })
            .collect()
    }

    /// The first lines of the items at `depth` in `range`, each moved up over the comments
    /// directly above it.
    fn starts(&self, range: LineRange, depth: u32) -> Vec<usize> {
        let mut starts: Vec<usize> = Vec::new();
        let mut prev_code: Option<usize> = None;
        for n in range.start..=range.end {
            let li = self.lines[n];
            if !li.code {
                continue;
            }
            let t = self.index.line(n).trim_start();
            let candidate = li.clean && li.braces == depth && (li.directive || !continues_above(t));
            let after_end = match prev_code {
                None => true,
                Some(p) => li.directive || self.lines[p].directive || self.ends_statement(p, depth),
            };
            if candidate && after_end {
                // A decorator or attribute statement belongs to the item below it.
                let decorated = starts.last().is_some_and(|&s| self.decorates(s, n));
                if !decorated || li.directive {
                    starts.push(n);
                }
            }
            prev_code = Some(n);
        }
        starts
            .into_iter()
            .map(|s| {
                let mut first = s;
                while first > range.start && self.lines[first - 1].comment {
                    first -= 1;
                }
                first
            })
            .collect()
    }

    /// Whether the statement from line `s` to the line before `n` is only a decorator or
    /// an attribute (`@Component({…})`, `@Test`, `#[derive(Debug)]`), which belongs to the
    /// item at `n`.
    fn decorates(&self, s: usize, n: usize) -> bool {
        decorator_only(self.index.line(s).trim_start())
            && (s + 1..n).all(|m| !self.lines[m].code || !self.lines[m].clean)
    }

    /// Whether line `p`, the last line of code before another, ends a statement at `depth`.
    fn ends_statement(&self, p: usize, depth: u32) -> bool {
        match self.lines[p].last {
            b';' | b'}' => true,
            b',' => depth > 0,
            c if self.syntax.newline_ends => is_ident(c) || matches!(c, b')' | b']' | b'"' | b'\'' | b'`'),
            _ => false,
        }
    }

    /// The header and members of a class-like item.
    fn body(&self, item: LineRange, depth: u32, nesting: usize) -> Option<Body> {
        let from = self.blocks.partition_point(|b| b.open_line < item.start);
        let open = self.blocks[from..]
            .iter()
            .take_while(|b| b.open_line <= item.end)
            .find(|b| b.depth == depth)?
            .open_line;
        if open >= item.end {
            return None;
        }
        let head_text = self.index.slice(item.start, open);
        let head_text = &head_text[..head_text.rfind('{').unwrap_or(head_text.len())];
        let keyword_line = self.class_keyword_line(item, open, head_text)?;
        let header = LineRange::new(keyword_line, open);
        let members = self.items(LineRange::new(open + 1, item.end), depth + 1, nesting + 1);
        Some(Body { header, members })
    }

    /// The line naming a class-like item (its keyword, or the `= {` of an object literal),
    /// when the header text before the body's `{` is class-like and not a function.
    fn class_keyword_line(&self, item: LineRange, open: usize, head: &str) -> Option<usize> {
        let code = strip_comments_and_strings(head);
        let words: Vec<&str> = code
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        let class_at = words.iter().position(|w| CLASS_WORDS.contains(w));
        let function_at = words
            .iter()
            .position(|w| FUNCTION_WORDS.contains(w))
            .or_else(|| code.contains("=>").then_some(0));
        let trimmed = code.trim_end();
        let object_literal = trimmed.ends_with('=') || trimmed.ends_with("default");
        let class_like = match (class_at, function_at) {
            (Some(c), Some(f)) => c < f,
            (Some(_), None) => true,
            (None, _) => false,
        } && !(self.syntax.paren_means_function && code.contains('('));
        if !(class_like || (object_literal && function_at.is_none())) {
            return None;
        }
        // The line that holds the keyword (or, for a literal, the `=`): the first code line
        // of the statement that is not a decorator or an attribute.
        let keyword = if class_like { class_at.map(|k| words[k]) } else { None };
        (item.start..=open).find(|&n| {
            let t = self.index.line(n).trim_start();
            let is_code = self.lines[n].code && !self.lines[n].comment;
            is_code
                && !t.starts_with('@')
                && !t.starts_with("#[")
                && keyword.is_none_or(|k| {
                    strip_comments_and_strings(t)
                        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .any(|w| w == k)
                })
        })
    }
}

/// Whether a line holds only decorators or attributes: `@name`, `@a.b(args…)`, `#[attr]`,
/// an argument list left open on the line allowed.
fn decorator_only(t: &str) -> bool {
    let mut rest = t.trim();
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let (open, close, body) = if let Some(r) = rest.strip_prefix("#[") {
            (b'[', b']', r)
        } else if let Some(r) = rest.strip_prefix('@') {
            let name = r
                .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | ':')))
                .unwrap_or(r.len());
            if name == 0 {
                return false;
            }
            let after = &r[name..];
            match after.strip_prefix('(') {
                Some(args) => (b'(', b')', args),
                None => {
                    rest = after.trim_start();
                    continue;
                }
            }
        } else {
            return false;
        };
        // To the matching bracket; a list still open at the line's end continues below.
        let mut depth = 1;
        let mut end = None;
        for (k, c) in body.bytes().enumerate() {
            if c == open {
                depth += 1;
            } else if c == close {
                depth -= 1;
                if depth == 0 {
                    end = Some(k);
                    break;
                }
            }
        }
        match end {
            Some(k) => rest = body[k + 1..].trim_start(),
            None => return true,
        }
    }
    true
}

/// Whether a line (without its indentation) continues the statement above.
fn continues_above(t: &str) -> bool {
    let Some(&c) = t.as_bytes().first() else {
        return false;
    };
    if b".,)]}?:&|+%=<>^{".contains(&c) || (c == b'-' && !t.starts_with("-->")) || t.starts_with("/ ") {
        return true;
    }
    let word_end = t
        .find(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
        .unwrap_or(t.len());
    CONTINUING_WORDS.contains(&&t[..word_end])
}

/// `code` without `//` and `/* */` comments and with string contents removed, for looking
/// at the words of a header.
fn strip_comments_and_strings(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut prev = ' ';
                for c in chars.by_ref() {
                    if prev == '*' && c == '/' {
                        break;
                    }
                    prev = c;
                }
                out.push(' ');
            }
            '"' | '`' => {
                let mut escaped = false;
                for s in chars.by_ref() {
                    if !escaped && s == c {
                        break;
                    }
                    escaped = !escaped && s == '\\';
                }
                out.push_str("\"\"");
            }
            _ => out.push(c),
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Python.

/// What the scanner knows about one line of Python.
#[derive(Debug, Clone, Copy, Default)]
struct PyLine {
    /// The line starts a logical line (not inside brackets, a triple-quoted string or
    /// after a `\`), and has code.
    starts: bool,
    /// Blank, or a comment only (and not inside a logical line).
    blank: bool,
    comment: bool,
    indent: usize,
}

fn python_lines(index: &LineIndex<'_>) -> Vec<PyLine> {
    let mut out = vec![PyLine::default(); index.len() + 2];
    let mut depth: i32 = 0;
    let mut triple: Option<&str> = None;
    let mut continued = false;
    for (n, slot) in out.iter_mut().enumerate().take(index.len() + 1).skip(1) {
        let line = index.line(n);
        let line = if n == 1 {
            line.trim_start_matches('\u{feff}')
        } else {
            line
        };
        let t = line.trim_start_matches([' ', '\t', '\u{c}']);
        let indent = line[..line.len() - t.len()]
            .chars()
            .fold(0, |col, c| if c == '\t' { (col / 8 + 1) * 8 } else { col + 1 });
        let inside = triple.is_some() || depth > 0 || continued;
        let t_trim = t.trim_end();
        *slot = PyLine {
            starts: !inside && !t_trim.is_empty() && !t_trim.starts_with('#'),
            blank: !inside && t_trim.is_empty(),
            comment: !inside && t_trim.starts_with('#'),
            indent,
        };
        // Scan the line for strings, comments and brackets.
        let b = line.as_bytes();
        let mut i = 0;
        continued = false;
        while i < b.len() {
            if let Some(q) = triple {
                match line[i..].find(q) {
                    Some(at) if !escaped_at(b, i + at) => {
                        triple = None;
                        i += at + 3;
                    }
                    Some(at) => i += at + 1,
                    None => break,
                }
                continue;
            }
            match b[i] {
                b'#' => break,
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth = (depth - 1).max(0),
                b'\\' if i + 1 == b.len() || line[i + 1..].trim().is_empty() => {
                    continued = true;
                    break;
                }
                q @ (b'"' | b'\'') => {
                    let delim = if q == b'"' { "\"\"\"" } else { "'''" };
                    if line[i..].starts_with(delim) {
                        triple = Some(delim);
                        i += 3;
                        continue;
                    }
                    // A one-line string: to its closing quote, or the line's end.
                    let mut j = i + 1;
                    while j < b.len() && b[j] != q {
                        j += if b[j] == b'\\' { 2 } else { 1 };
                    }
                    i = j + 1;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }
    out
}

/// Whether the byte at `i` is preceded by an odd number of backslashes.
fn escaped_at(b: &[u8], i: usize) -> bool {
    b[..i].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 1
}

struct PythonItems<'a, 't> {
    index: &'a LineIndex<'t>,
    lines: &'a [PyLine],
}

impl PythonItems<'_, '_> {
    fn items(&self, range: LineRange, indent: usize, nesting: usize) -> Vec<Item> {
        let starts = self.starts(range, indent);
        split_at(range, &starts)
            .into_iter()
            .map(|lines| {
                let body = (nesting < MAX_NESTING)
                    .then(|| self.body(lines, indent, nesting))
                    .flatten();
                Item { lines, body }
            })
            .collect()
    }

    fn starts(&self, range: LineRange, indent: usize) -> Vec<usize> {
        let mut starts: Vec<usize> = Vec::new();
        let mut decorated = false;
        for n in range.start..=range.end {
            let l = self.lines[n];
            if !l.starts || l.indent != indent {
                continue;
            }
            let t = self.index.line(n).trim_start();
            let word_end = t.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(t.len());
            if matches!(&t[..word_end], "else" | "elif" | "except" | "finally") {
                continue;
            }
            if !decorated {
                starts.push(n);
            }
            decorated = t.starts_with('@');
        }
        starts
            .into_iter()
            .map(|s| {
                let mut first = s;
                while first > range.start && self.lines[first - 1].comment {
                    first -= 1;
                }
                first
            })
            .collect()
    }

    /// A class's header (its `class` logical line) and members (at the body's indentation).
    fn body(&self, item: LineRange, indent: usize, nesting: usize) -> Option<Body> {
        let class_line = (item.start..=item.end).find(|&n| {
            let l = self.lines[n];
            l.starts && l.indent == indent && !self.index.line(n).trim_start().starts_with('@')
        })?;
        let t = self.index.line(class_line).trim_start();
        if !t.starts_with("class ") && !t.starts_with("class\t") {
            return None;
        }
        // The header runs until the next line that starts something (or is blank).
        let header_end = (class_line + 1..=item.end)
            .find(|&n| self.lines[n].starts || self.lines[n].blank || self.lines[n].comment)
            .map_or(item.end, |n| n - 1);
        let body_indent = (header_end + 1..=item.end)
            .find(|&n| self.lines[n].starts)
            .map(|n| self.lines[n].indent)
            .filter(|&i| i > indent)?;
        let members = self.items(LineRange::new(header_end + 1, item.end), body_indent, nesting + 1);
        Some(Body {
            header: LineRange::new(class_line, header_end),
            members,
        })
    }
}

#[cfg(test)]
#[path = "code_scan_tests.rs"]
mod tests;

//! Where code may be cut: a lexical scanner per language family that finds the items of a
//! file (functions, classes, statements at depth 0) and the members of the items that may
//! be cut between them, without a parser.
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
//!   `where`, `{`, an operator…). JSX elements are read as such where an expression may
//!   start (text in them is not code: `Can't` opens no string, `</p>` is no regex), and
//!   only the first branch of a preprocessor conditional moves the nesting (`#ifdef W /
//!   int f(int a, int b) { / #else / int f(int a) { / #endif` opens one block).
//! - Python: logical lines (through brackets, `\` continuations and triple-quoted
//!   strings) at one indentation; `else`/`elif`/`except`/`finally` continue the statement.
//!
//! Decorators, attributes and the comment lines directly above an item belong to it. An
//! item that may be cut between its members has a [`Body`]: its header lines and its
//! members, found the same way one level deeper. A class (impl, struct, interface,
//! trait, enum, namespace, object literal…) always has one; so has any other item whose
//! block holds functions or classes — a wrapper function (IIFE, UMD), a `describe`
//! callback, a compiled class, a Python `if`/`try` of defs, each clause a member with its
//! own header — which the chunker opens only when the item does not fit. A leaf function
//! has none: it is never cut inside while it fits.
//!
//! Why not tree-sitter (issue 16): the grammars for these languages, measured in a scratch
//! crate on this 2-core machine, add about 40 s to a clean `cargo build --release`
//! (63 s of CPU; 21 s for a debug build) and 9.7 MB to the stripped binary (0.34 MB →
//! 10.0 MB). For choosing cut points between items a scanner that understands literals,
//! comments, JSX and conditional compilation is enough, costs one pass over the bytes,
//! and adds nothing to the build. Checked against tree-sitter's grammars on 172 real and
//! tricky files (npm's JavaScript, the Python standard library, Java, Rust, C), it cuts
//! inside a function that would fit only on minified one-line files, whose lines are cut
//! anyway; what it cannot see is code a parser would reject, or a macro that opens a
//! block.

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
    /// How many comment lines directly above the item's code open it: they may go to the
    /// chunk before when the item fits only without them.
    pub lead: usize,
    /// Set for an item that can be cut between its members: a class, or a block that holds
    /// functions or classes (a wrapper function, a `describe` callback, an `if` of defs).
    pub body: Option<Body>,
}

/// The header and members of an item that can be cut between its members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Body {
    /// From the line naming the class (or opening the wrapper) to the line opening its
    /// body; carried into every chunk that starts among the members.
    pub header: LineRange,
    pub kind: BodyKind,
    /// The members, contiguous, from the line after the header to the item's last line.
    pub members: Vec<Item>,
}

/// What a [`Body`] belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyKind {
    /// A class, impl, struct, namespace, object literal…: cut between its members when it
    /// does not fit.
    Class,
    /// A function or a block that holds functions or classes: cut between its members only
    /// when it does not fit even without the import block.
    Block,
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

/// An item's first line, and how many attached comment lines come before its code.
#[derive(Debug, Clone, Copy)]
struct Start {
    line: usize,
    lead: usize,
}

/// Splits `range` at `starts` (sorted) into items, each with its lead; lines before the
/// first start are an item of their own.
fn split_at(range: LineRange, starts: &[Start]) -> Vec<(LineRange, usize)> {
    let mut out = Vec::with_capacity(starts.len() + 1);
    let mut from = range.start;
    let mut lead = 0;
    for s in starts {
        if s.line > from && s.line <= range.end {
            out.push((LineRange::new(from, s.line - 1), lead));
            from = s.line;
            lead = s.lead;
        } else if s.line == from {
            lead = s.lead;
        }
    }
    if from <= range.end {
        out.push((LineRange::new(from, range.end), lead));
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
    /// JSX elements where an expression may start (JavaScript, TypeScript).
    jsx: bool,
    /// TypeScript: `<T>(x) => x` and `<Type>value` are no JSX.
    typescript: bool,
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

/// What the scanner knows about one line.
#[derive(Debug, Clone, Copy, Default)]
struct LineInfo {
    /// Openers (`{`, `(`, `[`, `${`) open at the line's start: the items of a block opened
    /// at level `n` are the lines at level `n + 1`.
    level: u32,
    /// At the line's start: in code, not inside a literal, a comment or a JSX element, nor
    /// in another branch of a preprocessor conditional whose first branch opens a block.
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

/// A `{…}` block.
#[derive(Debug, Clone, Copy)]
struct Block {
    open_line: usize,
    /// The line of its `}`; 0 when it never closes (a block opened in a preprocessor branch
    /// that is not followed).
    close_line: usize,
    /// Openers open before this one.
    level: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opener {
    /// A `{`: the index of its block.
    Brace(usize),
    /// A `(` or `[`; `keyword`: the `(` of `if`/`while`/`for`/`with`, after whose `)` a
    /// `/` starts a regex.
    Paren { keyword: bool },
    /// `${` in a template literal: its `}` goes back into the template.
    TemplateExpr,
}

/// A `#if` being read: the openers at its start (each branch starts from them), and those
/// at the end of its first branch (where the code after `#endif` continues). Only the
/// first branch moves the nesting: `#ifdef W / int f(int a, int b) { / #else / int f(int
/// a) { / #endif` opens one block, not two.
#[derive(Debug, Clone)]
struct Conditional {
    at_if: Vec<Opener>,
    first_end: Option<Vec<Opener>>,
    /// The first branch ended at another nesting than it started: the lines of the other
    /// branches repeat its opening and start no item.
    uneven: bool,
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
    /// A JSX element, up to byte `end` (see [`jsx_element_end`]).
    Jsx {
        end: usize,
    },
}

/// One pass over `text`: the facts of each line (index 1..=lines) and the blocks.
fn lex_braces(text: &str, lines: usize, syntax: &Syntax) -> (Vec<LineInfo>, Vec<Block>) {
    let b = text.as_bytes();
    let mut info = vec![LineInfo::default(); lines + 2];
    let mut blocks: Vec<Block> = Vec::new();
    let mut stack: Vec<Opener> = Vec::new();
    let mut conditionals: Vec<Conditional> = Vec::new();
    // Bytes the JSX reader may look at in all, so that a `<` taken for a tag and refused
    // costs linear time at most.
    let mut jsx_budget = b.len().saturating_mul(4).saturating_add(1 << 16);
    let mut state = State::Code;
    let mut line = 1;
    let mut at_line_start = true;
    // The last byte of code and where it was, for telling a regex from a division.
    let mut prev_code: (u8, usize) = (0, 0);
    let mut i = 0;
    while i < b.len() {
        if let State::Jsx { end } = state {
            if i >= end {
                state = State::Code;
                code_byte(&mut info[line], b')');
                prev_code = (b')', end.saturating_sub(1));
            }
        }
        if at_line_start {
            at_line_start = false;
            let quiet = conditionals.iter().any(|c| c.uneven && c.first_end.is_some());
            let li = &mut info[line];
            li.level = u32::try_from(stack.len()).unwrap_or(u32::MAX);
            li.clean = state == State::Code && !quiet;
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
                    follow_conditional(&rest[ws + 1..], &mut stack, &mut conditionals);
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
                        blocks.push(Block {
                            open_line: line,
                            close_line: 0,
                            level: u32::try_from(stack.len()).unwrap_or(u32::MAX),
                        });
                        stack.push(Opener::Brace(blocks.len() - 1));
                    }
                    b'(' | b'[' => {
                        let keyword = c == b'(' && syntax.regex && ends_with_word(b, prev, CONDITION_WORDS);
                        stack.push(Opener::Paren { keyword });
                    }
                    b'}' | b')' | b']' => match stack.pop() {
                        Some(Opener::Brace(k)) => blocks[k].close_line = line,
                        Some(Opener::Paren { keyword: true }) => {
                            // `if (x) /re/.test(s)`: after a condition, a `/` is a regex.
                            prev_code = (b'{', i);
                        }
                        Some(Opener::Paren { .. }) => {}
                        Some(Opener::TemplateExpr) => state = State::Template,
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
                    b'<' if syntax.jsx && jsx_budget > 0 && regex_may_start(b, prev) => {
                        let mut spent = 0;
                        let end = jsx_element_end(b, i, syntax.typescript, 0, &mut spent, jsx_budget);
                        jsx_budget = jsx_budget.saturating_sub(spent);
                        if let Some(end) = end {
                            state = State::Jsx { end };
                        }
                    }
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
            State::Directive | State::Jsx { .. } => i += 1,
        }
    }
    (info, blocks)
}

/// Follows a preprocessor line (`rest` is after its `#`): `#if…` remembers the openers,
/// `#elif`/`#else` starts its branch from them, `#endif` continues from where the first
/// branch ended (see [`Conditional`]).
fn follow_conditional(rest: &[u8], stack: &mut Vec<Opener>, conditionals: &mut Vec<Conditional>) {
    let rest = &rest[rest.iter().take_while(|&&c| c == b' ' || c == b'\t').count()..];
    let word_end = rest
        .iter()
        .position(|&c| !c.is_ascii_alphanumeric())
        .unwrap_or(rest.len());
    match &rest[..word_end] {
        b"if" | b"ifdef" | b"ifndef" => conditionals.push(Conditional {
            at_if: stack.clone(),
            first_end: None,
            uneven: false,
        }),
        b"elif" | b"else" | b"elifdef" | b"elifndef" => {
            if let Some(c) = conditionals.last_mut() {
                if c.first_end.is_none() {
                    c.uneven = *stack != c.at_if;
                    c.first_end = Some(std::mem::take(stack));
                }
                stack.clone_from(&c.at_if);
            }
        }
        b"endif" => {
            if let Some(Conditional {
                first_end: Some(end), ..
            }) = conditionals.pop()
            {
                *stack = end;
            }
        }
        _ => {}
    }
}

/// Words after which a `(` holds a condition (`if (x) /re/.test(s)`).
const CONDITION_WORDS: &[&[u8]] = &[b"if", b"while", b"for", b"with"];

/// Whether the code byte `prev` (and its position) ends one of `words`.
fn ends_with_word(b: &[u8], prev: (u8, usize), words: &[&[u8]]) -> bool {
    let (c, at) = prev;
    if !is_ident(c) || at >= b.len() {
        return false;
    }
    let start = b[..=at].iter().rposition(|&x| !is_ident(x)).map_or(0, |p| p + 1);
    words.contains(&&b[start..=at])
}

/// Where the JSX element whose `<` is byte `i` ends (the byte after its last `>`), when
/// what follows is one: a tag name (or `>`, a fragment), attributes (`a`, `a="…"`,
/// `a={…}`, `{...spread}`), then `/>`, or children — text, `{…}` expressions, elements —
/// and the closing tag of the same name. Text is not code: an apostrophe in it opens no
/// string, `</p>` is no regex. In TypeScript a tag followed by `(` (`<T>(x) => x`), or
/// text running over a line that ends in `;` (`<Type>value;`, a cast), is no element.
/// `spent` counts the bytes looked at; past `budget` the answer is no.
fn jsx_element_end(
    b: &[u8],
    i: usize,
    typescript: bool,
    depth: usize,
    spent: &mut usize,
    budget: usize,
) -> Option<usize> {
    if depth > 64 {
        return None;
    }
    let tag_char = |c: u8| is_ident(c) || matches!(c, b'.' | b':' | b'-' | b'$');
    let mut j = i + 1;
    let name_start = j;
    if b.get(j)
        .is_some_and(|&c| c.is_ascii_alphabetic() || c == b'_' || c == b'$')
    {
        while j < b.len() && tag_char(b[j]) {
            j += 1;
        }
    } else if b.get(j) != Some(&b'>') {
        return None;
    }
    let name = &b[name_start..j];
    // The opening tag's attributes.
    loop {
        j = skip_blank(b, j);
        match *b.get(j)? {
            b'/' if !name.is_empty() => return (b.get(j + 1) == Some(&b'>')).then_some(j + 2),
            b'>' => {
                j += 1;
                break;
            }
            _ if name.is_empty() => return None,
            b'{' => j = jsx_expression_end(b, j, typescript, depth, spent, budget)?,
            c if c.is_ascii_alphabetic() || c == b'_' || c == b'$' => {
                while j < b.len() && tag_char(b[j]) {
                    j += 1;
                }
                let k = skip_blank(b, j);
                if b.get(k) == Some(&b'=') {
                    j = skip_blank(b, k + 1);
                    match *b.get(j)? {
                        q @ (b'"' | b'\'') => j += 2 + b[j + 1..].iter().position(|&c| c == q)?,
                        b'{' => j = jsx_expression_end(b, j, typescript, depth, spent, budget)?,
                        b'<' => j = jsx_element_end(b, j, typescript, depth + 1, spent, budget)?,
                        _ => return None,
                    }
                }
            }
            _ => return None,
        }
        if j > i + 4096 {
            // An opening tag this long is something else.
            return None;
        }
    }
    if typescript && b.get(skip_blank(b, j)) == Some(&b'(') {
        return None;
    }
    // Children, up to the closing tag.
    loop {
        let text_start = j;
        while j < b.len() && b[j] != b'<' && b[j] != b'{' {
            j += 1;
        }
        *spent += j - text_start;
        if *spent > budget {
            return None;
        }
        if typescript
            && b[text_start..j]
                .windows(2)
                .any(|w| w[0] == b';' && matches!(w[1], b'\n' | b'\r'))
        {
            return None;
        }
        match *b.get(j)? {
            b'{' => j = jsx_expression_end(b, j, typescript, depth, spent, budget)?,
            _ if b.get(j + 1) == Some(&b'/') => {
                let mut k = skip_blank(b, j + 2);
                let close_start = k;
                while k < b.len() && tag_char(b[k]) {
                    k += 1;
                }
                let close = &b[close_start..k];
                k = skip_blank(b, k);
                return (close == name && b.get(k) == Some(&b'>')).then_some(k + 1);
            }
            _ => j = jsx_element_end(b, j, typescript, depth + 1, spent, budget)?,
        }
    }
}

/// Where the JSX expression `{…}` whose `{` is byte `j` ends (the byte after its `}`):
/// brackets, strings, template literals, comments and nested elements followed.
fn jsx_expression_end(
    b: &[u8],
    j: usize,
    typescript: bool,
    depth: usize,
    spent: &mut usize,
    budget: usize,
) -> Option<usize> {
    let mut nesting = 0usize;
    let mut k = j;
    let mut prev = (b'{', j);
    while k < b.len() {
        *spent += 1;
        if *spent > budget {
            return None;
        }
        let c = b[k];
        let next = b.get(k + 1).copied().unwrap_or(0);
        match c {
            b'{' | b'(' | b'[' => nesting += 1,
            b'}' | b')' | b']' => {
                nesting = nesting.checked_sub(1)?;
                if nesting == 0 {
                    return (c == b'}').then_some(k + 1);
                }
            }
            b'"' | b'\'' => {
                k += 1;
                while k < b.len() && b[k] != c && b[k] != b'\n' {
                    k += if b[k] == b'\\' { 2 } else { 1 };
                }
            }
            b'`' => {
                k += 1;
                while k < b.len() && b[k] != b'`' {
                    if b[k] == b'\\' {
                        k += 2;
                    } else if b[k] == b'$' && b.get(k + 1) == Some(&b'{') {
                        k = jsx_expression_end(b, k + 1, typescript, depth, spent, budget)?;
                    } else {
                        k += 1;
                    }
                }
            }
            b'/' if next == b'/' => {
                while k < b.len() && b[k] != b'\n' {
                    k += 1;
                }
                continue;
            }
            b'/' if next == b'*' => {
                k += 2;
                while k + 1 < b.len() && !(b[k] == b'*' && b[k + 1] == b'/') {
                    k += 1;
                }
                k += 2;
                continue;
            }
            b'<' if regex_may_start(b, prev) && (next.is_ascii_alphabetic() || next == b'>') => {
                k = jsx_element_end(b, k, typescript, depth + 1, spent, budget)?;
                prev = (b')', k - 1);
                continue;
            }
            _ => {}
        }
        if !c.is_ascii_whitespace() {
            prev = (c, k);
        }
        k += 1;
    }
    None
}

/// The first byte at or after `j` that is not blank (a space, a tab, a line end).
fn skip_blank(b: &[u8], mut j: usize) -> usize {
    while j < b.len() && b[j].is_ascii_whitespace() {
        j += 1;
    }
    j
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
    /// The items of `range`, whose lines of code are at `level` (see [`LineInfo::level`]).
    fn items(&self, range: LineRange, level: u32, nesting: usize) -> Vec<Item> {
        let starts = self.starts(range, level);
        split_at(range, &starts)
            .into_iter()
            .map(|(lines, lead)| {
                let body = (nesting < MAX_NESTING)
                    .then(|| self.body(lines, lead, level, nesting))
                    .flatten();
                Item { lines, lead, body }
            })
            .collect()
    }

    /// The first lines of the items at `level` in `range`, each moved up over the comments
    /// directly above it.
    fn starts(&self, range: LineRange, level: u32) -> Vec<Start> {
        let mut starts: Vec<usize> = Vec::new();
        let mut prev_code: Option<usize> = None;
        for n in range.start..=range.end {
            let li = self.lines[n];
            if !li.code {
                continue;
            }
            let t = self.index.line(n).trim_start();
            let candidate = li.clean && li.level == level && (li.directive || !continues_above(t));
            let after_end = match prev_code {
                None => true,
                Some(p) => li.directive || self.lines[p].directive || self.ends_statement(p, level),
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
                Start {
                    line: first,
                    lead: s - first,
                }
            })
            .collect()
    }

    /// Whether the statement from line `s` to the line before `n` is only a decorator or
    /// an attribute (`@Component({…})`, `@Test`, `#[derive(Debug)]`), which belongs to the
    /// item at `n`.
    fn decorates(&self, s: usize, n: usize) -> bool {
        let level = self.lines[s].level;
        decorator_only(self.index.line(s).trim_start())
            && (s + 1..n).all(|m| !self.lines[m].code || !self.lines[m].clean || self.lines[m].level > level)
    }

    /// Whether line `p`, the last line of code before another, ends a statement at `level`.
    fn ends_statement(&self, p: usize, level: u32) -> bool {
        match self.lines[p].last {
            b';' | b'}' => true,
            b',' => level > 0,
            c if self.syntax.newline_ends => is_ident(c) || matches!(c, b')' | b']' | b'"' | b'\'' | b'`'),
            _ => false,
        }
    }

    /// The blocks opened on the lines of `item`.
    fn blocks_in(&self, item: LineRange) -> &[Block] {
        let from = self.blocks.partition_point(|b| b.open_line < item.start);
        let to = self.blocks.partition_point(|b| b.open_line <= item.end);
        &self.blocks[from..to.max(from)]
    }

    /// The header and members of an item that can be cut between its members: a class
    /// (its first block at its level, after a class-like header), else the item's largest
    /// block when it holds functions or classes — an IIFE or UMD wrapper, a
    /// `describe(…, () => {…})`, a compiled class, a function returning a class.
    fn body(&self, item: LineRange, lead: usize, level: u32, nesting: usize) -> Option<Body> {
        let blocks = self.blocks_in(item);
        if let Some(first) = blocks.iter().find(|b| b.level == level) {
            let open = first.open_line;
            if open < item.end {
                let head_text = self.index.slice(item.start, open);
                let head_text = &head_text[..head_text.rfind('{').unwrap_or(head_text.len())];
                if let Some(keyword_line) = self.class_keyword_line(item, open, head_text) {
                    let members = self.items(LineRange::new(open + 1, item.end), level + 1, nesting + 1);
                    return Some(Body {
                        header: LineRange::new(keyword_line, open),
                        kind: BodyKind::Class,
                        members,
                    });
                }
            }
        }
        let container = blocks
            .iter()
            .filter(|b| b.level >= level && b.close_line > b.open_line + 1 && b.close_line <= item.end)
            .max_by_key(|b| (b.close_line - b.open_line, std::cmp::Reverse(b.open_line)))?;
        let open = container.open_line;
        let members = self.items(LineRange::new(open + 1, item.end), container.level + 1, nesting + 1);
        if !members.iter().any(|m| m.body.is_some() || self.declares(m)) {
            // A leaf: cut inside only when it alone is over the budget, into windows.
            return None;
        }
        let code_start = (item.start + lead..=open)
            .find(|&n| self.lines[n].code && !self.lines[n].comment)
            .unwrap_or(open);
        Some(Body {
            header: LineRange::new(code_start, open),
            kind: BodyKind::Block,
            members,
        })
    }

    /// Whether a member declares a function or a class: the words before its first block
    /// name one (`function`, `=>`, `class`, `fn`, `def`…).
    fn declares(&self, member: &Item) -> bool {
        let Some(block) = self.blocks_in(member.lines).first() else {
            return false;
        };
        let from = member.lines.start + member.lead;
        if block.open_line < from || block.open_line > from + 8 {
            return false;
        }
        let head = strip_comments_and_strings(self.index.slice(from, block.open_line));
        head.contains("=>")
            || words(&head).any(|(at, w)| {
                FUNCTION_WORDS.contains(&w) || (CLASS_WORDS.contains(&w) && !is_module_object(&head, at, w))
            })
    }

    /// The line naming a class-like item (its keyword, or the `= {` of an object literal),
    /// when the header text before the body's `{` is class-like and not a function: a
    /// class word comes before any function word or arrow (`class A { m() {`, not
    /// `fn f() -> impl T {`), or an arrow's body is a class (`cls => class X extends cls {`).
    fn class_keyword_line(&self, item: LineRange, open: usize, head: &str) -> Option<usize> {
        let code = strip_comments_and_strings(head);
        let arrow_at = code.find("=>");
        let class_at = words(&code)
            .find(|&(at, w)| CLASS_WORDS.contains(&w) && !is_module_object(&code, at, w))
            .map(|(at, _)| at);
        let function_at = words(&code)
            .find(|(_, w)| FUNCTION_WORDS.contains(w))
            .map(|(at, _)| at)
            .into_iter()
            .chain(arrow_at)
            .min();
        let arrow_class = code
            .split("=>")
            .skip(1)
            .any(|after| after.trim_start().starts_with("class") && !code.contains("function"));
        let trimmed = code.trim_end();
        let object_literal = trimmed.ends_with('=') || trimmed.ends_with("default");
        let class_like = (match (class_at, function_at) {
            (Some(c), Some(f)) => c < f,
            (Some(_), None) => true,
            (None, _) => false,
        } || arrow_class)
            && !(self.syntax.paren_means_function && code.contains('('));
        if !(class_like || (object_literal && function_at.is_none())) {
            return None;
        }
        // The line that holds the keyword (or, for a literal, the `=`): the first code line
        // of the statement that is not a decorator or an attribute.
        let keyword = if class_like {
            class_at.map(|at| words(&code[at..]).next().map_or("", |(_, w)| w))
        } else {
            None
        };
        (item.start..=open).find(|&n| {
            let t = self.index.line(n).trim_start();
            let is_code = self.lines[n].code && !self.lines[n].comment;
            is_code
                && !t.starts_with('@')
                && !t.starts_with("#[")
                && keyword.is_none_or(|k| words(&strip_comments_and_strings(t)).any(|(_, w)| w == k))
        })
    }
}

/// The words of `code` (letters, digits, `_`) with their byte offsets.
fn words(code: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut rest = code;
    let mut offset = 0;
    std::iter::from_fn(move || {
        let start = rest.find(|c: char| c.is_alphanumeric() || c == '_')?;
        let len = rest[start..]
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len() - start);
        let word = &rest[start..start + len];
        let at = offset + start;
        offset += start + len;
        rest = &rest[start + len..];
        Some((at, word))
    })
}

/// Whether the word `w` at `at` is JavaScript's `module` object (`module.exports`), not a
/// module declaration.
fn is_module_object(code: &str, at: usize, w: &str) -> bool {
    w == "module" && code[at + w.len()..].starts_with('.')
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
            .map(|(lines, lead)| {
                let body = (nesting < MAX_NESTING)
                    .then(|| self.body(lines, indent, nesting))
                    .flatten();
                Item { lines, lead, body }
            })
            .collect()
    }

    fn starts(&self, range: LineRange, indent: usize) -> Vec<Start> {
        let mut starts: Vec<usize> = Vec::new();
        let mut decorated = false;
        for n in range.start..=range.end {
            let l = self.lines[n];
            if !l.starts || l.indent != indent {
                continue;
            }
            let t = self.index.line(n).trim_start();
            if CLAUSE_WORDS.contains(&first_word(t)) {
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
                Start {
                    line: first,
                    lead: s - first,
                }
            })
            .collect()
    }

    /// The header (its first logical line) and members of a compound statement that can
    /// be cut between its members: a class, or a `def`/`if`/`try`/`for`/`with`… whose
    /// blocks hold functions or classes. Each `else:`/`elif`/`except`/`finally:` clause is
    /// a member with its own header, so a chunk in it carries both lines (`if
    /// sys.platform == 'win32':` and `else:`).
    fn body(&self, item: LineRange, indent: usize, nesting: usize) -> Option<Body> {
        let head = (item.start..=item.end).find(|&n| {
            let l = self.lines[n];
            l.starts && l.indent == indent && !self.index.line(n).trim_start().starts_with('@')
        })?;
        let t = self.index.line(head).trim_start();
        let word = match first_word(t) {
            "async" => first_word(t["async".len()..].trim_start()),
            w => w,
        };
        let class = word == "class";
        if !class && !COMPOUND_WORDS.contains(&word) && !CLAUSE_WORDS.contains(&word) {
            return None;
        }
        // The header runs until the next line that starts something (or is blank).
        let header_end = (head + 1..=item.end)
            .find(|&n| self.lines[n].starts || self.lines[n].blank || self.lines[n].comment)
            .map_or(item.end, |n| n - 1);
        let body_indent = (header_end + 1..=item.end)
            .find(|&n| self.lines[n].starts)
            .map(|n| self.lines[n].indent)
            .filter(|&i| i > indent)?;
        let clauses: Vec<usize> = (header_end + 1..=item.end)
            .filter(|&n| self.lines[n].starts && self.lines[n].indent == indent)
            .collect();
        let first_end = clauses.first().map_or(item.end, |&c| c - 1);
        let mut members = self.items(LineRange::new(header_end + 1, first_end), body_indent, nesting + 1);
        for (k, &c) in clauses.iter().enumerate() {
            let lines = LineRange::new(c, clauses.get(k + 1).map_or(item.end, |&n| n - 1));
            let body = (nesting + 1 < MAX_NESTING)
                .then(|| self.body(lines, indent, nesting + 1))
                .flatten();
            members.push(Item { lines, lead: 0, body });
        }
        if !class && !members.iter().any(|m| m.body.is_some() || self.declares(m)) {
            // A leaf: cut inside only when it alone is over the budget, into windows.
            return None;
        }
        Some(Body {
            header: LineRange::new(head, header_end),
            kind: if class { BodyKind::Class } else { BodyKind::Block },
            members,
        })
    }

    /// Whether a member is a function or a class (or decorated, which makes it one).
    fn declares(&self, member: &Item) -> bool {
        (member.lines.start..=member.lines.end)
            .find(|&n| self.lines[n].starts)
            .is_some_and(|n| {
                let t = self.index.line(n).trim_start();
                t.starts_with('@') || matches!(first_word(t), "def" | "class" | "async")
            })
    }
}

/// Statements that open a block (besides `class`).
const COMPOUND_WORDS: &[&str] = &["def", "if", "try", "for", "while", "with", "match"];

/// Words that continue the compound statement above rather than start one.
const CLAUSE_WORDS: &[&str] = &["else", "elif", "except", "finally"];

/// The first word of `t` (letters, digits, `_`).
fn first_word(t: &str) -> &str {
    let end = t.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(t.len());
    &t[..end]
}

#[cfg(test)]
#[path = "code_scan_tests.rs"]
mod tests;

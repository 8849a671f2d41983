//! The brace-language lexer: one pass over the bytes ([`lex_braces`]) that tracks `{}` depth
//! and `()`/`[]` nesting through strings, character literals, template literals with `${…}`,
//! comments, raw strings, regex literals, JSX elements and C preprocessor lines (only the
//! first branch of a preprocessor conditional moves the nesting), and records what it knows
//! of each line ([`LineInfo`]) and the blocks ([`Block`]).

use super::brace_literals::{
    char_literal_end, cpp_raw_opening, ends_with_word, regex_may_start, rust_raw_hash_opening, rust_raw_opening,
    CONDITION_WORDS,
};
use super::brace_syntax::{Quote, Syntax};
use super::jsx::jsx_element_end;

/// What the scanner knows about one line.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct LineInfo {
    /// Openers (`{`, `(`, `[`, `${`) open at the line's start: the items of a block opened
    /// at level `n` are the lines at level `n + 1`.
    pub(super) level: u32,
    /// At the line's start: in code, not inside a literal, a comment or a JSX element, nor
    /// in another branch of a preprocessor conditional whose first branch opens a block.
    pub(super) clean: bool,
    /// The line has code (not only blanks and comments); lines inside a multi-line string
    /// count as code.
    pub(super) code: bool,
    /// The line has a comment and no code.
    pub(super) comment: bool,
    /// A preprocessor line (or its continuation).
    pub(super) directive: bool,
    /// The last byte of code on the line (the closing quote of a string), 0 if unknown.
    pub(super) last: u8,
}

/// A `{…}` block.
#[derive(Debug, Clone, Copy)]
pub(super) struct Block {
    pub(super) open_line: usize,
    /// The line of its `}`; 0 when it never closes (a block opened in a preprocessor branch
    /// that is not followed).
    pub(super) close_line: usize,
    /// Openers open before this one.
    pub(super) level: u32,
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
pub(super) fn lex_braces(text: &str, lines: usize, syntax: &Syntax) -> (Vec<LineInfo>, Vec<Block>) {
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

//! The brace-language lexer: one pass over the bytes ([`lex_braces`]) that tracks `{}` depth
//! and `()`/`[]` nesting through strings, `"""` text blocks, character literals, comments
//! (nested where the language nests them) and Zig's string lines, and records what it knows
//! of each line ([`LineInfo`]) and the blocks ([`Block`]).

use super::brace_literals::char_literal_end;
use super::brace_syntax::Syntax;

/// What the scanner knows about one line.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct LineInfo {
    /// Openers (`{`, `(`, `[`, `${`) open at the line's start: the items of a block opened
    /// at level `n` are the lines at level `n + 1`.
    pub(super) level: u32,
    /// At the line's start: in code, not inside a literal or a comment.
    pub(super) clean: bool,
    /// The line has code (not only blanks and comments); lines inside a multi-line string
    /// count as code.
    pub(super) code: bool,
    /// The line has a comment and no code.
    pub(super) comment: bool,
    /// The last byte of code on the line (the closing quote of a string), 0 if unknown.
    pub(super) last: u8,
}

/// A `{…}` block.
#[derive(Debug, Clone, Copy)]
pub(super) struct Block {
    pub(super) open_line: usize,
    /// The line of its `}`; 0 when it never closes.
    pub(super) close_line: usize,
    /// Openers open before this one.
    pub(super) level: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opener {
    /// A `{`: the index of its block.
    Brace(usize),
    /// A `(` or `[`.
    Paren,
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
    /// `"""` text block.
    Triple,
}

/// One pass over `text`: the facts of each line (index 1..=lines) and the blocks.
pub(super) fn lex_braces(text: &str, lines: usize, syntax: &Syntax) -> (Vec<LineInfo>, Vec<Block>) {
    let b = text.as_bytes();
    let mut info = vec![LineInfo::default(); lines + 2];
    let mut blocks: Vec<Block> = Vec::new();
    let mut stack: Vec<Opener> = Vec::new();
    let mut state = State::Code;
    let mut line = 1;
    let mut at_line_start = true;
    let mut i = 0;
    while i < b.len() {
        if at_line_start {
            at_line_start = false;
            let li = &mut info[line];
            li.level = u32::try_from(stack.len()).unwrap_or(u32::MAX);
            li.clean = state == State::Code;
            if !matches!(state, State::Code | State::LineComment | State::BlockComment(_)) {
                li.code = true;
            }
        }
        let c = b[i];
        if c == b'\n' {
            match state {
                State::LineComment | State::Str { multiline: false, .. } => state = State::Code,
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
                if c == b'\\' && next == b'\\' && syntax.zig_lines {
                    state = State::LineComment;
                    code_byte(&mut info[line], b'"');
                    i += 2;
                    continue;
                }
                code_byte(&mut info[line], c);
                match c {
                    b'{' => {
                        blocks.push(Block {
                            open_line: line,
                            close_line: 0,
                            level: u32::try_from(stack.len()).unwrap_or(u32::MAX),
                        });
                        stack.push(Opener::Brace(blocks.len() - 1));
                    }
                    b'(' | b'[' => stack.push(Opener::Paren),
                    b'}' | b')' | b']' => {
                        if let Some(Opener::Brace(k)) = stack.pop() {
                            blocks[k].close_line = line;
                        }
                    }
                    b'"' => {
                        if syntax.triple_quotes && b[i..].starts_with(b"\"\"\"") {
                            state = State::Triple;
                            i += 3;
                            continue;
                        }
                        state = State::Str {
                            quote: b'"',
                            multiline: false,
                        };
                    }
                    b'\'' => {
                        if let Some(end) = char_literal_end(text, i) {
                            info[line].last = b'\'';
                            i = end;
                            continue;
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
                    i += 3;
                    continue;
                }
                i += 1;
            }
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

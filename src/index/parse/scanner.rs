//! A character cursor and the token type the language tokenizers share.
//!
//! The tokenizers do not aim at a full grammar: they only need to tell code from comments
//! and string literals, so that an import is recognised in code and never in a comment,
//! a docstring or a string that happens to contain `import "x"`.

/// One token of source code, as much as import extraction needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Token {
    /// An identifier, keyword or number (and a placeholder for values such as regex
    /// literals and templates with substitutions, so they still read as values).
    Word(String),
    /// A complete string literal, its content with backslash escapes reduced to the
    /// escaped character.
    Str(String),
    /// Any other single character.
    Punct(char),
    /// The end of a logical line (Python only: NEWLINE outside brackets, or `;`).
    Newline,
}

impl Token {
    /// The word, when this is one.
    pub(crate) fn word(&self) -> Option<&str> {
        match self {
            Token::Word(w) => Some(w),
            _ => None,
        }
    }

    pub(crate) fn is_punct(&self, c: char) -> bool {
        matches!(self, Token::Punct(p) if *p == c)
    }

    pub(crate) fn is_word(&self, w: &str) -> bool {
        matches!(self, Token::Word(x) if x == w)
    }
}

/// Whether `c` can start an identifier (non-ASCII letters count, as most languages allow).
pub(crate) fn is_ident_start(c: char) -> bool {
    c == '_' || c == '$' || c.is_alphabetic()
}

/// Whether `c` can continue an identifier or number.
pub(crate) fn is_ident_char(c: char) -> bool {
    c == '_' || c == '$' || c.is_alphanumeric()
}

/// A cursor over source text, by character.
pub(crate) struct Scanner<'a> {
    src: &'a str,
    pos: usize,
}

impl<'a> Scanner<'a> {
    pub(crate) fn new(src: &'a str) -> Self {
        Scanner { src, pos: 0 }
    }

    pub(crate) fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    /// The character `n` characters ahead (`peek_at(0) == peek()`).
    pub(crate) fn peek_at(&self, n: usize) -> Option<char> {
        self.src[self.pos..].chars().nth(n)
    }

    pub(crate) fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    pub(crate) fn starts_with(&self, s: &str) -> bool {
        self.src[self.pos..].starts_with(s)
    }

    /// Skips `n` characters.
    pub(crate) fn skip(&mut self, n: usize) {
        for _ in 0..n {
            self.bump();
        }
    }

    /// Skips to the end of the line, leaving the newline for the caller.
    pub(crate) fn skip_line(&mut self) {
        match self.src[self.pos..].find('\n') {
            Some(i) => self.pos += i,
            None => self.pos = self.src.len(),
        }
    }

    /// Skips the rest of a block comment whose `/*` has been consumed. Rust nests them.
    pub(crate) fn skip_block_comment(&mut self, nested: bool) {
        let mut depth = 1usize;
        while let Some(c) = self.bump() {
            if c == '*' && self.peek() == Some('/') {
                self.bump();
                depth -= 1;
                if depth == 0 {
                    return;
                }
            } else if nested && c == '/' && self.peek() == Some('*') {
                self.bump();
                depth += 1;
            }
        }
    }

    /// Reads the rest of a string literal whose opening `quote` has been consumed, up to and
    /// including the closing quote. A backslash keeps the next character. Unless
    /// `multiline`, an unescaped newline ends the literal (unterminated: the newline is
    /// left, so a stray quote costs at most one line).
    pub(crate) fn quoted(&mut self, quote: char, multiline: bool) -> String {
        let mut out = String::new();
        while let Some(c) = self.peek() {
            if c == '\n' && !multiline {
                break;
            }
            self.bump();
            if c == '\\' {
                if let Some(next) = self.bump() {
                    out.push(next);
                }
            } else if c == quote {
                break;
            } else {
                out.push(c);
            }
        }
        out
    }

    /// Reads a literal whose opening has been consumed up to `close` (not kept), with no
    /// escapes (Go raw strings, C header names).
    pub(crate) fn until(&mut self, close: &str) -> String {
        match self.src[self.pos..].find(close) {
            Some(i) => {
                let s = self.src[self.pos..self.pos + i].to_string();
                self.pos += i + close.len();
                s
            }
            None => {
                let s = self.src[self.pos..].to_string();
                self.pos = self.src.len();
                s
            }
        }
    }

    /// Reads an identifier or number starting here.
    pub(crate) fn word(&mut self) -> String {
        let start = self.pos;
        while self.peek().is_some_and(is_ident_char) {
            self.bump();
        }
        self.src[start..self.pos].to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_handles_escapes_and_stops_at_newline() {
        let mut s = Scanner::new(r#"a\"b" rest"#);
        assert_eq!(s.quoted('"', false), "a\"b");
        assert_eq!(s.peek(), Some(' '));
        let mut s = Scanner::new("unterminated\nnext");
        assert_eq!(s.quoted('\'', false), "unterminated");
        assert_eq!(s.peek(), Some('\n'));
    }

    #[test]
    fn nested_block_comments() {
        let mut s = Scanner::new("a /* b */ c */ d");
        s.skip_block_comment(true);
        assert_eq!(s.peek(), Some(' '));
        assert!(s.starts_with(" d"));
    }
}

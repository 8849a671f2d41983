//! Python imports: `import a.b [as c], d` and `from [.]*a.b import x, (y, z), *`.
//!
//! The tokenizer skips `#` comments and every string form (prefixed, triple-quoted, so
//! docstrings too) and tracks brackets so a parenthesised import list stays one statement.
//! An import counts at the start of a logical line or right after a `:` (`try: import x`).

use super::scanner::{is_ident_start, Scanner, Token};
use super::RawImport;
use crate::index::language::EdgeKind;

/// String prefixes (lowercased) that may precede a quote.
const PREFIXES: &[&str] = &["r", "u", "b", "f", "br", "rb", "fr", "rf", "t", "tr", "rt"];

pub(super) fn imports(text: &str) -> Vec<RawImport> {
    let tokens = tokenize(text);
    let mut found = Vec::new();
    for statement in tokens.split(|t| *t == Token::Newline) {
        for (i, t) in statement.iter().enumerate() {
            if i > 0 && !statement[i - 1].is_punct(':') {
                continue;
            }
            if t.is_word("import") {
                plain_import(&statement[i + 1..], &mut found);
            } else if t.is_word("from") {
                from_import(&statement[i + 1..], &mut found);
            }
        }
    }
    found
}

fn tokenize(src: &str) -> Vec<Token> {
    let mut s = Scanner::new(src);
    let mut out = Vec::new();
    let mut depth = 0usize;
    let newline = |out: &mut Vec<Token>| {
        if !matches!(out.last(), None | Some(Token::Newline)) {
            out.push(Token::Newline);
        }
    };
    while let Some(c) = s.peek() {
        match c {
            '#' => s.skip_line(),
            '\\' if matches!(s.peek_at(1), Some('\n' | '\r')) => {
                s.skip(2);
            }
            '\n' => {
                s.bump();
                if depth == 0 {
                    newline(&mut out);
                }
            }
            ';' if depth == 0 => {
                s.bump();
                newline(&mut out);
            }
            c if c.is_whitespace() => {
                s.bump();
            }
            '\'' | '"' => {
                s.bump();
                out.push(Token::Str(string(&mut s, c)));
            }
            c if is_ident_start(c) || c.is_ascii_digit() => {
                let word = s.word();
                match s.peek() {
                    Some(q @ ('\'' | '"')) if PREFIXES.contains(&word.to_lowercase().as_str()) => {
                        s.bump();
                        out.push(Token::Str(string(&mut s, q)));
                    }
                    _ => out.push(Token::Word(word)),
                }
            }
            _ => {
                s.bump();
                match c {
                    '(' | '[' | '{' => depth += 1,
                    ')' | ']' | '}' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                out.push(Token::Punct(c));
            }
        }
    }
    out
}

/// A string whose first quote has been consumed: triple-quoted (multi-line) or not.
fn string(s: &mut Scanner, quote: char) -> String {
    if s.peek() == Some(quote) && s.peek_at(1) == Some(quote) {
        s.skip(2);
        let mut text = String::new();
        while let Some(c) = s.bump() {
            if c == '\\' {
                s.bump();
            } else if c == quote && s.peek() == Some(quote) && s.peek_at(1) == Some(quote) {
                s.skip(2);
                break;
            } else {
                text.push(c);
            }
        }
        text
    } else {
        s.quoted(quote, false)
    }
}

/// A dotted name `a.b.c` at the start of `tokens`, and how many tokens it used.
fn dotted(tokens: &[Token]) -> (String, usize) {
    let mut name = String::new();
    let mut j = 0;
    // `import` is a keyword, never a module name: `from . import x`.
    while let Some(w) = tokens.get(j).and_then(Token::word).filter(|w| *w != "import") {
        name.push_str(w);
        j += 1;
        if tokens.get(j).is_some_and(|t| t.is_punct('.')) && tokens.get(j + 1).and_then(Token::word).is_some() {
            name.push('.');
            j += 1;
        } else {
            break;
        }
    }
    (name, j)
}

/// `import a.b as c, d` (tokens after `import`).
fn plain_import(tokens: &[Token], found: &mut Vec<RawImport>) {
    let mut j = 0;
    loop {
        let (name, used) = dotted(&tokens[j..]);
        if used == 0 {
            return;
        }
        found.push(RawImport::new(name, EdgeKind::Import));
        j += used;
        if tokens.get(j).is_some_and(|t| t.is_word("as")) {
            j += 2;
        }
        if !tokens.get(j).is_some_and(|t| t.is_punct(',')) {
            return;
        }
        j += 1;
    }
}

/// `from ..a.b import x as y, z` (tokens after `from`); `(`…`)` and `*` allowed.
fn from_import(tokens: &[Token], found: &mut Vec<RawImport>) {
    let mut j = 0;
    let mut module = String::new();
    while tokens.get(j).is_some_and(|t| t.is_punct('.')) {
        module.push('.');
        j += 1;
    }
    let (name, used) = dotted(&tokens[j..]);
    module.push_str(&name);
    j += used;
    if module.is_empty() || !tokens.get(j).is_some_and(|t| t.is_word("import")) {
        return;
    }
    j += 1;
    let mut names = Vec::new();
    while let Some(t) = tokens.get(j) {
        match t {
            Token::Word(w) if w == "as" => j += 2,
            Token::Word(w) => {
                names.push(w.clone());
                j += 1;
            }
            Token::Punct('(' | ')' | ',' | '*') => j += 1,
            _ => break,
        }
    }
    found.push(RawImport {
        specifier: module,
        kind: EdgeKind::Import,
        names,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs(text: &str) -> Vec<(String, Vec<String>)> {
        imports(text).into_iter().map(|i| (i.specifier, i.names)).collect()
    }

    fn s(spec: &str, names: &[&str]) -> (String, Vec<String>) {
        (spec.to_string(), names.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn every_import_form() {
        let src = r"
import os, app.models as m
from app.services import auth, billing as b
from . import views
from ..core.db import (
    Session,
    engine,
)
from .util import *
try: import ujson as json
except ImportError: import json
if TYPE_CHECKING:
    from app.types import User; import app.extra
";
        assert_eq!(
            specs(src),
            vec![
                s("os", &[]),
                s("app.models", &[]),
                s("app.services", &["auth", "billing"]),
                s(".", &["views"]),
                s("..core.db", &["Session", "engine"]),
                s(".util", &[]),
                s("ujson", &[]),
                s("json", &[]),
                s("app.types", &["User"]),
                s("app.extra", &[]),
            ]
        );
    }

    #[test]
    fn docstrings_comments_and_strings_make_no_edges() {
        let src = r#"'''Module doc.
import not_a_module
from fake import thing
'''
# import commented
x = "from also_fake import y"
y = f"import {z}"
z = rb'import raw'
def f():
    """
    from docstring import nothing
    """
    return 1  # from trailing import comment
raise ValueError("x") from err
from real import thing
"#;
        assert_eq!(specs(src), vec![s("real", &["thing"])]);
    }
}

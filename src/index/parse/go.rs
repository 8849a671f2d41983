//! Go imports: `import "p"`, `import alias "p"`, and `import ( … )` groups with `_` and `.`
//! aliases. Comments, interpreted and raw (backquoted) strings and runes are skipped.

use super::scanner::{is_ident_start, Scanner, Token};
use super::RawImport;
use crate::index::language::EdgeKind;

pub(super) fn imports(text: &str) -> Vec<RawImport> {
    let tokens = tokenize(text);
    let mut found = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        if !t.is_word("import") || (i > 0 && tokens[i - 1].is_punct('.')) {
            continue;
        }
        let mut j = i + 1;
        let grouped = tokens.get(j).is_some_and(|t| t.is_punct('('));
        if grouped {
            j += 1;
        }
        while let Some(t) = tokens.get(j) {
            match t {
                Token::Str(path) => {
                    found.push(RawImport::new(path.as_str(), EdgeKind::Import));
                    if !grouped {
                        break;
                    }
                }
                Token::Punct(')') => break,
                // An alias (`name`, `_`, `.`) or a separator inside a group.
                Token::Word(_) | Token::Punct('.' | ';') => {}
                _ => break,
            }
            j += 1;
        }
    }
    found
}

fn tokenize(src: &str) -> Vec<Token> {
    let mut s = Scanner::new(src);
    let mut out = Vec::new();
    while let Some(c) = s.peek() {
        match c {
            c if c.is_whitespace() => {
                s.bump();
            }
            '/' if s.peek_at(1) == Some('/') => s.skip_line(),
            '/' if s.peek_at(1) == Some('*') => {
                s.skip(2);
                s.skip_block_comment(false);
            }
            '"' => {
                s.bump();
                out.push(Token::Str(s.quoted('"', false)));
            }
            '`' => {
                s.bump();
                out.push(Token::Str(s.until("`")));
            }
            '\'' => {
                s.bump();
                s.quoted('\'', false);
                out.push(Token::Word("<rune>".into()));
            }
            c if is_ident_start(c) || c.is_ascii_digit() => out.push(Token::Word(s.word())),
            _ => {
                s.bump();
                out.push(Token::Punct(c));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_grouped_and_aliased_imports() {
        let src = r#"package main

// import "example.com/m/commented"
/* import "example.com/m/block" */
import "fmt"
import util "example.com/m/internal/util"
import (
	"os"
	_ "example.com/m/plugins"
	. "example.com/m/dsl"
	db "example.com/m/store/db"
)

var s = `import "example.com/m/raw"`
"#;
        let specs: Vec<String> = imports(src).into_iter().map(|i| i.specifier).collect();
        assert_eq!(
            specs,
            vec![
                "fmt",
                "example.com/m/internal/util",
                "os",
                "example.com/m/plugins",
                "example.com/m/dsl",
                "example.com/m/store/db",
            ]
        );
    }
}

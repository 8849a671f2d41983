//! Rust module edges: `mod x;` (with `#[path = "…"]`) and `use` declarations of project
//! paths (`crate::`, `self::`, `super::`, and 2018-style paths that start with a child
//! module).
//!
//! Inline modules (`mod tests { use super::*; }`) are tracked so `mod` files nest under
//! them and `self`/`super` are taken relative to the right module. Qualified paths in
//! expressions (`crate::a::f()` without a `use`) are not edges.

use super::scanner::{is_ident_start, Scanner, Token};
use super::RawImport;
use crate::index::language::EdgeKind;

pub(super) fn imports(text: &str) -> Vec<RawImport> {
    extract(&tokenize(text))
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
                s.skip_block_comment(true);
            }
            '"' => {
                s.bump();
                out.push(Token::Str(s.quoted('"', true)));
            }
            '\'' => {
                // 'a' and '\n' are chars; 'a (no closing quote after one char) a lifetime.
                if s.peek_at(1) == Some('\\') || s.peek_at(2) == Some('\'') {
                    s.bump();
                    s.quoted('\'', false);
                    out.push(Token::Word("<char>".into()));
                } else {
                    s.bump();
                    out.push(Token::Punct('\''));
                }
            }
            c if is_ident_start(c) || c.is_ascii_digit() => {
                let word = s.word();
                match (word.as_str(), s.peek(), s.peek_at(1)) {
                    ("r" | "br" | "cr", Some('#'), Some('"' | '#')) | ("r" | "br" | "cr", Some('"'), _) => {
                        out.push(Token::Str(raw_string(&mut s)));
                    }
                    ("r", Some('#'), Some(n)) if is_ident_start(n) => {
                        s.bump();
                        out.push(Token::Word(s.word()));
                    }
                    ("b" | "c", Some('"'), _) => {
                        s.bump();
                        out.push(Token::Str(s.quoted('"', true)));
                    }
                    ("b", Some('\''), _) => {
                        s.bump();
                        s.quoted('\'', false);
                        out.push(Token::Word("<char>".into()));
                    }
                    _ => out.push(Token::Word(word)),
                }
            }
            _ => {
                s.bump();
                out.push(Token::Punct(c));
            }
        }
    }
    out
}

/// `#*"…"#*` after the `r`: the hashes before the quote close it after the quote.
fn raw_string(s: &mut Scanner) -> String {
    let mut hashes = 0;
    while s.peek() == Some('#') {
        s.bump();
        hashes += 1;
    }
    s.bump(); // the opening quote
    let close = format!("\"{}", "#".repeat(hashes));
    s.until(&close)
}

fn extract(tokens: &[Token]) -> Vec<RawImport> {
    let mut found = Vec::new();
    let mut depth = 0usize;
    // Inline modules open around the current token: (name, brace depth outside it).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut path_attr: Option<String> = None;
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Punct('#') => {
                if let Some(value) = path_attribute(&tokens[i + 1..]) {
                    path_attr = Some(value);
                    i += 6;
                    continue;
                }
            }
            Token::Punct('{') => {
                depth += 1;
                path_attr = None;
            }
            Token::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                path_attr = None;
            }
            Token::Punct(';') => path_attr = None,
            Token::Word(w) if w == "mod" => {
                if let Some(name) = tokens.get(i + 1).and_then(Token::word) {
                    match tokens.get(i + 2) {
                        Some(Token::Punct(';')) => {
                            let spec = match path_attr.take() {
                                Some(p) if inline.is_empty() => format!("{name}#path={p}"),
                                _ => inline_path(&inline, name, "/"),
                            };
                            found.push(RawImport::new(spec, EdgeKind::Mod));
                            i += 3;
                            continue;
                        }
                        Some(Token::Punct('{')) => {
                            inline.push((name.to_string(), depth));
                            depth += 1;
                            path_attr = None;
                            i += 3;
                            continue;
                        }
                        _ => {}
                    }
                }
            }
            Token::Word(w) if w == "use" => {
                let kind = if is_pub(tokens, i) {
                    EdgeKind::Reexport
                } else {
                    EdgeKind::Use
                };
                let mut paths = Vec::new();
                use_tree(tokens, i + 1, Vec::new(), &mut paths);
                let scope: Vec<&str> = inline.iter().map(|(n, _)| n.as_str()).collect();
                for path in paths {
                    if let Some(spec) = use_specifier(&scope, path) {
                        found.push(RawImport::new(spec, kind));
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    found
}

fn inline_path(inline: &[(String, usize)], name: &str, sep: &str) -> String {
    let mut parts: Vec<&str> = inline.iter().map(|(n, _)| n.as_str()).collect();
    parts.push(name);
    parts.join(sep)
}

/// `[path = "x"]` after a `#`.
fn path_attribute(tokens: &[Token]) -> Option<String> {
    match tokens.get(..5)? {
        [open, name, eq, Token::Str(value), close]
            if open.is_punct('[') && name.is_word("path") && eq.is_punct('=') && close.is_punct(']') =>
        {
            Some(value.clone())
        }
        _ => None,
    }
}

/// Whether the `use` at `i` is `pub use` or `pub(…) use`.
fn is_pub(tokens: &[Token], i: usize) -> bool {
    let Some(prev) = i.checked_sub(1).and_then(|p| tokens.get(p)) else {
        return false;
    };
    if prev.is_word("pub") {
        return true;
    }
    if prev.is_punct(')') {
        let open = tokens[..i - 1].iter().rposition(|t| t.is_punct('('));
        return open.is_some_and(|o| o > 0 && tokens[o - 1].is_word("pub"));
    }
    false
}

/// Expands a use tree starting at `j` into full paths; returns the index after it.
fn use_tree(tokens: &[Token], mut j: usize, mut path: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    loop {
        match tokens.get(j) {
            Some(Token::Punct(':')) if tokens.get(j + 1).is_some_and(|t| t.is_punct(':')) => j += 2,
            Some(Token::Word(w)) => {
                path.push(w.clone());
                j += 1;
                let separator = tokens.get(j).is_some_and(|t| t.is_punct(':'))
                    && tokens.get(j + 1).is_some_and(|t| t.is_punct(':'));
                if !separator {
                    if tokens.get(j).is_some_and(|t| t.is_word("as")) {
                        j += 2;
                    }
                    out.push(path);
                    return j;
                }
            }
            Some(Token::Punct('*')) => {
                out.push(path);
                return j + 1;
            }
            Some(Token::Punct('{')) => {
                j += 1;
                loop {
                    match tokens.get(j) {
                        Some(Token::Punct('}')) => return j + 1,
                        Some(Token::Punct(',')) => j += 1,
                        Some(_) => {
                            let next = use_tree(tokens, j, path.clone(), out);
                            if next == j {
                                return j; // malformed: stop rather than loop
                            }
                            j = next;
                        }
                        None => return j,
                    }
                }
            }
            _ => return j,
        }
    }
}

/// The specifier of one expanded use path inside the inline modules `scope`, or `None`
/// when it names nothing in the project (`use self;`).
fn use_specifier(scope: &[&str], mut path: Vec<String>) -> Option<String> {
    if path.last().is_some_and(|s| s == "self") {
        path.pop();
    }
    let first = path.first()?.clone();
    let mut scope: Vec<String> = scope.iter().map(ToString::to_string).collect();
    let (prefix, rest): (String, Vec<String>) = match first.as_str() {
        "crate" => ("crate".into(), path[1..].to_vec()),
        "self" => (
            "self".into(),
            scope.iter().cloned().chain(path[1..].iter().cloned()).collect(),
        ),
        "super" => {
            let supers = path.iter().take_while(|s| *s == "super").count();
            let mut leftover = 0;
            for _ in 0..supers {
                if scope.pop().is_none() {
                    leftover += 1;
                }
            }
            let rest = scope.into_iter().chain(path[supers..].iter().cloned()).collect();
            let prefix = if leftover == 0 {
                "self".to_string()
            } else {
                vec!["super"; leftover].join("::")
            };
            (prefix, rest)
        }
        // `$crate` in macros and `::std` style absolute paths name other crates.
        "$crate" | "std" | "core" | "alloc" => return None,
        _ => ("?self".into(), scope.into_iter().chain(path).collect()),
    };
    if rest.is_empty() {
        return (prefix != "self").then_some(prefix);
    }
    Some(format!("{prefix}::{}", rest.join("::")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs(text: &str) -> Vec<(String, EdgeKind)> {
        imports(text).into_iter().map(|i| (i.specifier, i.kind)).collect()
    }

    fn s(spec: &str, kind: EdgeKind) -> (String, EdgeKind) {
        (spec.to_string(), kind)
    }

    #[test]
    fn mods_and_use_trees() {
        let src = r#"
//! Crate docs: mod fake; use crate::fake;
pub mod cli;
mod exec;
#[cfg(unix)]
#[path = "os/unix.rs"]
mod platform;
pub use crate::exec::{pool::Pool, retry::{self, Policy}};
use self::cli::Args as A;
use std::path::Path;
use serde::Serialize;
use cli::*;
pub(crate) use super::sibling;
mod tests {
    use super::*;
    use super::cli::Args;
    mod nested;
}
"#;
        assert_eq!(
            specs(src),
            vec![
                s("cli", EdgeKind::Mod),
                s("exec", EdgeKind::Mod),
                s("platform#path=os/unix.rs", EdgeKind::Mod),
                s("crate::exec::pool::Pool", EdgeKind::Reexport),
                s("crate::exec::retry", EdgeKind::Reexport),
                s("crate::exec::retry::Policy", EdgeKind::Reexport),
                s("self::cli::Args", EdgeKind::Use),
                s("?self::serde::Serialize", EdgeKind::Use),
                s("?self::cli", EdgeKind::Use),
                s("super::sibling", EdgeKind::Reexport),
                s("self::cli::Args", EdgeKind::Use),
                s("tests/nested", EdgeKind::Mod),
            ]
        );
    }

    #[test]
    fn strings_chars_lifetimes_and_comments_make_no_edges() {
        let src = r##"
/* outer /* nested mod fake; */ still comment use crate::fake; */
const S: &str = "mod fake;";
const R: &str = r#"use crate::fake; "quoted" "#;
fn f<'a>(x: &'a str) -> char { let _q = '"'; let _b = b'\''; 'x' }
mod real;
"##;
        assert_eq!(specs(src), vec![s("real", EdgeKind::Mod)]);
    }
}

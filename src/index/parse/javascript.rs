//! JavaScript / TypeScript imports: `import … from "x"`, `import "x"`, `export … from "x"`,
//! `require("x")` and `import("x")`.
//!
//! The tokenizer skips comments, string contents, template literals (but not the code in
//! their `${…}`), and regex literals (a `/` where an operand is expected), so a
//! commented-out or quoted import never becomes an edge.

use super::scanner::{is_ident_start, Scanner, Token};
use super::RawImport;
use crate::index::language::EdgeKind;

/// Keywords after which a `/` starts a regex literal rather than a division.
const REGEX_AFTER: &[&str] = &[
    "return",
    "typeof",
    "instanceof",
    "in",
    "of",
    "new",
    "delete",
    "void",
    "throw",
    "case",
    "do",
    "else",
    "yield",
    "await",
];

pub(super) fn imports(text: &str) -> Vec<RawImport> {
    extract(&tokenize(text))
}

fn tokenize(src: &str) -> Vec<Token> {
    let mut s = Scanner::new(src);
    let mut out = Vec::new();
    // One entry per open `{`: true when it is the `${` of a template literal, so its `}`
    // resumes the template instead of closing a block.
    let mut braces: Vec<bool> = Vec::new();
    if s.starts_with("#!") {
        s.skip_line();
    }
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
            '/' if regex_allowed(out.last()) => {
                s.bump();
                skip_regex(&mut s);
                out.push(Token::Word("<regex>".into()));
            }
            '\'' | '"' => {
                s.bump();
                let v = s.quoted(c, false);
                out.push(Token::Str(v));
            }
            '`' => {
                s.bump();
                template(&mut s, &mut out, &mut braces, false);
            }
            '{' => {
                s.bump();
                braces.push(false);
                out.push(Token::Punct('{'));
            }
            '}' => {
                s.bump();
                if braces.pop() == Some(true) {
                    template(&mut s, &mut out, &mut braces, true);
                } else {
                    out.push(Token::Punct('}'));
                }
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

/// Scans a template literal body up to its closing backtick or its next `${`. A template
/// without substitutions is a plain string (`import(`./x`)` works); one with them is a value.
fn template(s: &mut Scanner, out: &mut Vec<Token>, braces: &mut Vec<bool>, resumed: bool) {
    let mut text = String::new();
    while let Some(c) = s.bump() {
        match c {
            '\\' => {
                if let Some(n) = s.bump() {
                    text.push(n);
                }
            }
            '`' => {
                if !resumed {
                    out.push(Token::Str(text));
                }
                return;
            }
            '$' if s.peek() == Some('{') => {
                s.bump();
                if !resumed {
                    out.push(Token::Word("<template>".into()));
                }
                braces.push(true);
                return;
            }
            _ => text.push(c),
        }
    }
}

fn regex_allowed(prev: Option<&Token>) -> bool {
    match prev {
        None => true,
        Some(Token::Punct(c)) => !matches!(c, ')' | ']' | '}'),
        Some(Token::Word(w)) => REGEX_AFTER.contains(&w.as_str()),
        Some(Token::Str(_) | Token::Newline) => false,
    }
}

/// Skips a regex literal body and flags (its `/` consumed); stops at a newline.
fn skip_regex(s: &mut Scanner) {
    let mut in_class = false;
    while let Some(c) = s.peek() {
        match c {
            '\n' => return,
            '\\' => s.skip(2),
            '[' => {
                in_class = true;
                s.bump();
            }
            ']' => {
                in_class = false;
                s.bump();
            }
            '/' if !in_class => {
                s.bump();
                s.word();
                return;
            }
            _ => {
                s.bump();
            }
        }
    }
}

fn extract(tokens: &[Token]) -> Vec<RawImport> {
    let mut found = Vec::new();
    let at = |i: usize| tokens.get(i);
    for (i, token) in tokens.iter().enumerate() {
        // `obj.import(…)`, `module.require(…)` are member calls, not imports.
        if i > 0 && tokens[i - 1].is_punct('.') {
            continue;
        }
        let Some(word) = token.word() else { continue };
        match word {
            "import" => match at(i + 1) {
                Some(Token::Punct('(')) => {
                    if let (Some(Token::Str(spec)), Some(next)) = (at(i + 2), at(i + 3)) {
                        if next.is_punct(')') || next.is_punct(',') {
                            found.push(RawImport::new(spec.as_str(), EdgeKind::DynamicImport));
                        }
                    }
                }
                Some(Token::Str(spec)) => found.push(RawImport::new(spec.as_str(), EdgeKind::Import)),
                Some(Token::Punct('.')) | None => {}
                Some(_) => {
                    if let Some(spec) = import_clause(tokens, i + 1) {
                        found.push(RawImport::new(spec, EdgeKind::Import));
                    }
                }
            },
            "export" => {
                if let Some(spec) = export_clause(tokens, i + 1) {
                    found.push(RawImport::new(spec, EdgeKind::Reexport));
                }
            }
            "require" => {
                if let (Some(open), Some(Token::Str(spec)), Some(close)) = (at(i + 1), at(i + 2), at(i + 3)) {
                    if open.is_punct('(') && close.is_punct(')') {
                        found.push(RawImport::new(spec.as_str(), EdgeKind::Require));
                    }
                }
            }
            _ => {}
        }
    }
    found
}

/// `default, { a, b as c }`, `* as ns`, `type { T }` … up to `from "x"`; `None` as soon as
/// a token cannot belong to an import clause (so nothing runs on into the next statement).
fn import_clause(tokens: &[Token], mut j: usize) -> Option<String> {
    while let Some(t) = tokens.get(j) {
        match t {
            Token::Word(w) if w == "from" => {
                if let Some(Token::Str(spec)) = tokens.get(j + 1) {
                    return Some(spec.clone());
                }
                j += 1; // `import from from "x"`: a binding named `from`
            }
            Token::Word(w) if w == "import" || w == "export" => return None,
            Token::Word(_) | Token::Punct(',' | '*') => j += 1,
            Token::Punct('{') => j = after_braces(tokens, j)?,
            _ => return None,
        }
    }
    None
}

/// `* from "x"`, `* as ns from "x"`, `{ a, b as c } from "x"`, `type { T } from "x"`.
fn export_clause(tokens: &[Token], mut j: usize) -> Option<String> {
    if tokens.get(j).is_some_and(|t| t.is_word("type")) {
        j += 1;
    }
    match tokens.get(j)? {
        Token::Punct('*') => {
            j += 1;
            if tokens.get(j).is_some_and(|t| t.is_word("as")) {
                j += 2;
            }
        }
        Token::Punct('{') => j = after_braces(tokens, j)?,
        _ => return None,
    }
    match (tokens.get(j), tokens.get(j + 1)) {
        (Some(from), Some(Token::Str(spec))) if from.is_word("from") => Some(spec.clone()),
        _ => None,
    }
}

/// The index after the `}` matching the `{` at `j`, when everything between is names,
/// string names and commas (an import or export list).
fn after_braces(tokens: &[Token], j: usize) -> Option<usize> {
    let mut k = j + 1;
    loop {
        match tokens.get(k)? {
            Token::Punct('}') => return Some(k + 1),
            Token::Word(_) | Token::Str(_) | Token::Punct(',') => k += 1,
            _ => return None,
        }
    }
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
    fn every_import_form() {
        let src = r#"
import React, { useState } from "react";
import * as path from 'node:path';
import type { Session } from "./types";
import "./polyfill";
import def, * as ns from "./both";
import {
  a,
  b as c,
  "string name" as d,
} from "./multi";
export * from "./reexported";
export * as helpers from "./helpers";
export { x, y as z } from "./named";
export type { T } from "./typeonly";
const fs = require("fs");
const lazy = await import("./lazy");
const tpl = import(`./template`);
import x = require("./ts-require");
"#;
        assert_eq!(
            specs(src),
            vec![
                s("react", EdgeKind::Import),
                s("node:path", EdgeKind::Import),
                s("./types", EdgeKind::Import),
                s("./polyfill", EdgeKind::Import),
                s("./both", EdgeKind::Import),
                s("./multi", EdgeKind::Import),
                s("./reexported", EdgeKind::Reexport),
                s("./helpers", EdgeKind::Reexport),
                s("./named", EdgeKind::Reexport),
                s("./typeonly", EdgeKind::Reexport),
                s("fs", EdgeKind::Require),
                s("./lazy", EdgeKind::DynamicImport),
                s("./template", EdgeKind::DynamicImport),
                s("./ts-require", EdgeKind::Require),
            ]
        );
    }

    #[test]
    fn comments_strings_and_regexes_make_no_edges() {
        let src = r#"
// import a from "./commented";
/* import b from "./block";
   require("./block2") */
const msg = "import c from './in-string'";
const t = `require("./in-template") ${ require("./in-substitution") }`;
const re = /import d from "\.\/regex"/g;
const half = 10 / 2; const other = require("./real");
obj.require("./member");
const meta = import.meta.url;
export const value = 1;
export { local };
import e from "./after-export";
"#;
        assert_eq!(
            specs(src),
            vec![
                s("./in-substitution", EdgeKind::Require),
                s("./real", EdgeKind::Require),
                s("./after-export", EdgeKind::Import),
            ]
        );
    }

    #[test]
    fn dynamic_import_with_a_computed_path_is_skipped() {
        assert!(specs("const m = import(`./pages/${name}`); const n = import(base + '/x');").is_empty());
    }

    #[test]
    fn jsx_text_with_apostrophes_costs_at_most_one_line() {
        let src = "import a from './a';\nconst el = <p>Don't stop</p>;\nimport b from './b';\n";
        assert_eq!(specs(src), vec![s("./a", EdgeKind::Import), s("./b", EdgeKind::Import)]);
    }
}

//! C/C++ includes: `#include "x.h"` and `#include <x.h>` (also `#import`, `#include_next`).
//!
//! A directive counts only where a line starts with `#` outside comments and literals, so
//! an include in a comment, a string or a C++ raw string never becomes an edge. Angle
//! includes are kept as `<path>`: the resolver tries them only against include roots.

use super::scanner::{is_ident_start, Scanner};
use super::RawImport;
use crate::index::language::EdgeKind;

/// Raw-string prefixes of C++ (`R"delim(…)delim"`).
const RAW_PREFIXES: &[&str] = &["R", "LR", "uR", "UR", "u8R"];

pub(super) fn imports(text: &str) -> Vec<RawImport> {
    let mut s = Scanner::new(text);
    let mut found = Vec::new();
    let mut line_start = true;
    while let Some(c) = s.peek() {
        match c {
            '\n' => {
                s.bump();
                line_start = true;
            }
            c if c.is_whitespace() => {
                s.bump();
            }
            '/' if s.peek_at(1) == Some('/') => s.skip_line(),
            // A comment is a space to the preprocessor: it does not end "line start".
            '/' if s.peek_at(1) == Some('*') => {
                s.skip(2);
                s.skip_block_comment(false);
            }
            '#' if line_start => {
                s.bump();
                directive(&mut s, &mut found);
                line_start = false;
            }
            '"' | '\'' => {
                s.bump();
                s.quoted(c, false);
                line_start = false;
            }
            c if is_ident_start(c) || c.is_ascii_digit() => {
                let word = s.word();
                if s.peek() == Some('"') && RAW_PREFIXES.contains(&word.as_str()) {
                    s.bump();
                    let delimiter = s.until("(");
                    s.until(&format!("){delimiter}\""));
                }
                line_start = false;
            }
            _ => {
                s.bump();
                line_start = false;
            }
        }
    }
    found
}

/// The rest of a preprocessor line after its `#`.
fn directive(s: &mut Scanner, found: &mut Vec<RawImport>) {
    let skip_blanks = |s: &mut Scanner| {
        while matches!(s.peek(), Some(' ' | '\t')) {
            s.bump();
        }
    };
    skip_blanks(s);
    let name = s.word();
    if matches!(name.as_str(), "include" | "import" | "include_next") {
        skip_blanks(s);
        match s.peek() {
            Some('"') => {
                s.bump();
                let path = s.quoted('"', false);
                if !path.is_empty() {
                    found.push(RawImport::new(path, EdgeKind::Include));
                }
            }
            Some('<') => {
                s.bump();
                let path = s.until(">");
                if !path.is_empty() && !path.contains('\n') {
                    found.push(RawImport::new(format!("<{path}>"), EdgeKind::Include));
                }
            }
            _ => {}
        }
    }
    // The rest of the directive (including `\` continuations) is not code.
    let mut last = ' ';
    while let Some(c) = s.peek() {
        if c == '\n' {
            if last != '\\' {
                return;
            }
            s.bump();
            last = ' ';
            continue;
        }
        s.bump();
        if c != '\r' {
            last = c;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_outside_comments_and_literals() {
        let src = r##"#include "config.h"
#  include <lib/vec.h>
#include <stdio.h>
// #include "commented.h"
/* #include "block.h" */ #include "after_comment.h"
const char *s = "#include \"in_string.h\"";
const char *r = R"x(
#include "in_raw.h"
)x";
int a = 1; #include "not_at_line_start.h"
#define INCLUDE_IT \
  #include "continued.h"
"##;
        let specs: Vec<String> = imports(src).into_iter().map(|i| i.specifier).collect();
        assert_eq!(specs, vec!["config.h", "<lib/vec.h>", "<stdio.h>", "after_comment.h"]);
    }
}

//! JSX elements, read as such where an expression may start (JavaScript, TypeScript): where
//! an element or a `{…}` expression in it ends, so that the text in it is not read as code
//! (`Can't` opens no string, `</p>` is no regex).

use super::brace_literals::{is_ident, regex_may_start};

/// Where the JSX element whose `<` is byte `i` ends (the byte after its last `>`), when
/// what follows is one: a tag name (or `>`, a fragment), attributes (`a`, `a="…"`,
/// `a={…}`, `{...spread}`), then `/>`, or children — text, `{…}` expressions, elements —
/// and the closing tag of the same name. Text is not code: an apostrophe in it opens no
/// string, `</p>` is no regex. In TypeScript a tag followed by `(` (`<T>(x) => x`), or
/// text running over a line that ends in `;` (`<Type>value;`, a cast), is no element.
/// `spent` counts the bytes looked at; past `budget` the answer is no.
pub(super) fn jsx_element_end(
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

//! Where a brace-language literal opens: Rust raw strings (`r#"…"#`), C++ raw strings
//! (`R"d(…)d"`), character literals (told from Rust lifetimes and C++ digit separators), and
//! whether a `/` may start a JavaScript regex literal.

use super::brace_syntax::Syntax;

/// Words after which a `(` holds a condition (`if (x) /re/.test(s)`).
pub(super) const CONDITION_WORDS: &[&[u8]] = &[b"if", b"while", b"for", b"with"];

/// Whether the code byte `prev` (and its position) ends one of `words`.
pub(super) fn ends_with_word(b: &[u8], prev: (u8, usize), words: &[&[u8]]) -> bool {
    let (c, at) = prev;
    if !is_ident(c) || at >= b.len() {
        return false;
    }
    let start = b[..=at].iter().rposition(|&x| !is_ident(x)).map_or(0, |p| p + 1);
    words.contains(&&b[start..=at])
}

pub(super) fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// At a `"` (index `i`): the number of `#` of a Rust raw string `r"`/`br"` (0), if it is
/// one. `r#"` is found at its `#` by [`rust_raw_hash_opening`].
pub(super) fn rust_raw_opening(b: &[u8], i: usize, syntax: &Syntax) -> Option<usize> {
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
pub(super) fn rust_raw_hash_opening(b: &[u8], i: usize) -> bool {
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
pub(super) fn cpp_raw_opening(b: &[u8], i: usize, syntax: &Syntax) -> Option<(usize, usize)> {
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
pub(super) fn char_literal_end(text: &str, i: usize) -> Option<usize> {
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
pub(super) fn regex_may_start(b: &[u8], prev: (u8, usize)) -> bool {
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

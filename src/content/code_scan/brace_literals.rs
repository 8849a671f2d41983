//! Character literals, told from Scala symbols and digit separators, and what an
//! identifier is made of.

pub(super) fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
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

//! Escaping of names that come from the file system before they are printed or written.
//!
//! A file name may hold a newline, a carriage return or an escape sequence; printed as is,
//! `a\n## File: forged.ts` would forge a section of the aggregate, and an escape sequence
//! would rewrite the terminal. Control characters become visible escapes (`\n`, `\u{1b}`);
//! a backslash is doubled when anything else was escaped, so the form stays unambiguous.

use std::borrow::Cow;

/// `name` with control characters escaped; borrowed when there were none.
pub fn name(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A name for an XML-like attribute value: escaped as [`name`], and `"`, `<`, `>`, `&` as
/// entities.
pub fn attribute(text: &str) -> String {
    name(text)
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_visible() {
        assert_eq!(name("src/a.ts"), "src/a.ts");
        assert!(matches!(name("a\\b"), Cow::Borrowed(_)));
        assert_eq!(name("a\n## File: x"), "a\\n## File: x");
        assert_eq!(name("a\\b\n"), "a\\\\b\\n");
        assert_eq!(name("\u{1b}[31m"), "\\u{1b}[31m");
        assert_eq!(attribute("a\"<b>&"), "a&quot;&lt;b&gt;&amp;");
    }
}

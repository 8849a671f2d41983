//! What each brace language without a grammar looks like ([`Syntax`]): `"""` text blocks,
//! comments that nest, Zig's `\\` string lines, and whether a newline can end a statement.

use crate::content::content_type::Language;

#[derive(Debug, Clone)]
pub(super) struct Syntax {
    /// `"""` text blocks (Kotlin, Scala, Swift).
    pub(super) triple_quotes: bool,
    /// Zig `\\` multiline string lines.
    pub(super) zig_lines: bool,
    /// `/* /* */ */` nests (Swift, Kotlin, Scala).
    pub(super) nested_comments: bool,
    /// A newline can end a statement (Kotlin, Swift, Scala).
    pub(super) newline_ends: bool,
}

impl Syntax {
    /// The syntax of a language the scanner reads; `None` for the others (those with a
    /// grammar, [`crate::content::code_grammar`], and those read by line rules).
    pub(super) fn of(language: Language) -> Option<Syntax> {
        let base = Syntax {
            triple_quotes: false,
            zig_lines: false,
            nested_comments: false,
            newline_ends: false,
        };
        Some(match language {
            Language::Kotlin | Language::Scala | Language::Swift => Syntax {
                triple_quotes: true,
                nested_comments: true,
                newline_ends: true,
                ..base
            },
            Language::Zig => Syntax {
                zig_lines: true,
                ..base
            },
            _ => return None,
        })
    }
}

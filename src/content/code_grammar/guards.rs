//! Text no parse should be trusted with, told before parsing: what a grammar's external
//! scanner would abort the process on (a C `assert` takes rlm down with it), brackets left
//! open deeper than real code goes, and after parsing a tree deeper than the walks over it
//! may recurse. Such a file is cut by the lines' rules instead.

use tree_sitter::Tree;

/// Deeper than this, in brackets left open or in the tree, a file is cut by the lines' rules:
/// real code stays far below it (the deepest of the fixtures is under 100).
pub(super) const MAX_NESTING: usize = 1_000;

/// Whether `text` holds heredocs tree-sitter-ruby cannot keep. Its scanner stores a word's
/// length in one byte and asserts, when it reads its state back, that the bytes add up, so a
/// word of 256 characters or more (`<<"…"` up to its closing quote or the end of the text,
/// or `<<WORD`) aborts the process. And it checks the room its state needs two bytes short,
/// so open heredocs and string literals whose state comes to 1,025 bytes overrun the
/// runtime's buffer (which asserts as well). Heredocs stay open across lines (one opened
/// inside another's body), and each string literal inside another opens a bracket (`#{`,
/// `%w(`), so the state is bounded by the whole text's: every `<<` counted as a heredoc
/// (four bytes and its word), five bytes a bracket at the deepest, at most 900 bytes.
pub(super) fn ruby_heredoc_word_too_long(text: &str, brackets: usize) -> bool {
    const MAX_WORD: usize = 255;
    const MAX_STATE: usize = 900;
    let mut state = 2 + 5 * (brackets + 1);
    let mut from = 0;
    while let Some(at) = text[from..].find("<<") {
        let start = from + at + 2;
        let after = &text[start..];
        let after = after.strip_prefix(['-', '~']).unwrap_or(after);
        let mut chars = after.chars();
        let word = match chars.next() {
            Some(quote @ ('\'' | '"' | '`')) => chars.take_while(|&c| c != quote).take(MAX_WORD + 1).count(),
            Some(c) if c.is_alphanumeric() || c == '_' => {
                1 + chars
                    .take_while(|&c| c.is_alphanumeric() || c == '_')
                    .take(MAX_WORD)
                    .count()
            }
            _ => 0,
        };
        if word > MAX_WORD {
            return true;
        }
        if word > 0 {
            state += 4 + word;
            if state > MAX_STATE {
                return true;
            }
        }
        // One past the first `<`: in `<<<` the second and third make a `<<` as well.
        from = start - 1;
    }
    false
}

/// Whether `text` nests blocks deeper than tree-sitter-python can keep: its scanner keeps
/// two bytes a level of indentation and one an open string, checks its room one byte short,
/// and the runtime asserts on the overrun (511 nested `if`s and a string aborted the
/// process). Levels are counted as Python's tokenizer does, by a stack of indentation
/// widths; open strings (an f-string in another opens a bracket) are bounded by the
/// brackets' depth. At most 900 bytes of state, else the file is cut by the lines' rules.
pub(super) fn python_indentation_too_deep(text: &str, brackets: usize) -> bool {
    const MAX_STATE: usize = 900;
    let mut deepest = 0;
    let mut widths: Vec<usize> = Vec::new();
    for line in text.lines() {
        let body = line.trim_start_matches([' ', '\t', '\x0c']);
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let width = line.len() - body.len();
        while widths.last().is_some_and(|&w| w > width) {
            widths.pop();
        }
        if widths.last().is_none_or(|&w| w < width) {
            widths.push(width);
            deepest = deepest.max(widths.len());
        }
    }
    2 + 2 * deepest + brackets > MAX_STATE
}

/// How deep `tree` is, in nodes.
pub(super) fn tree_depth(tree: &Tree) -> usize {
    let mut cursor = tree.walk();
    let (mut depth, mut deepest) = (1, 1);
    loop {
        if cursor.goto_first_child() {
            depth += 1;
            deepest = deepest.max(depth);
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return deepest;
            }
            depth -= 1;
        }
    }
}

/// How deep brackets (`(`, `[`, `{`) are opened at most in `text`, counted as they come
/// (in strings and comments too: a file that holds a thousand unclosed ones anywhere is no
/// code to parse).
pub(super) fn bracket_depth(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for b in text.bytes() {
        match b {
            b'(' | b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

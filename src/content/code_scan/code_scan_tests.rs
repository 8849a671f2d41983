//! Scanner tests: literals and comments that would fool a brace counter, and the items and
//! class members found in small files of the languages without a grammar.

use super::brace_items::decorator_only;
use super::brace_literals::char_literal_end;
use super::*;

fn items(language: Language, text: &str) -> Vec<Item> {
    let index = LineIndex::new(text);
    let items = scan(&index, Some(language)).expect("a scanner for the language");
    // Items are contiguous from line 1 to the last.
    let mut next = 1;
    for i in &items {
        assert_eq!(i.lines.start, next, "{items:?}");
        next = i.lines.end + 1;
    }
    assert_eq!(next, index.len() + 1);
    items
}

fn starts(items: &[Item]) -> Vec<usize> {
    items.iter().map(|i| i.lines.start).collect()
}

#[test]
fn kotlin_text_blocks_nested_comments_and_a_class() {
    let text = "package a\n\nimport b.C\n\n/* outer /* nested { */ still } */\nval s = \"\"\"\n  }\n\"\"\"\n@Service\nclass Repo(val c: C) {\n    fun a() {\n        val x = '}'\n    }\n\n    fun b() = 1\n}\nfun main() {}\n";
    let found = items(Language::Kotlin, text);
    assert_eq!(starts(&found), vec![1, 3, 5, 9, 17]);
    let class = found[3].body.as_ref().expect("Repo is a class");
    assert_eq!(class.header, LineRange::new(10, 10));
    assert_eq!(starts(&class.members), vec![11, 15]);
}

#[test]
fn zig_multiline_string_lines_are_not_code() {
    let text = "const std = @import(\"std\");\n\nconst s =\n    \\\\ a } brace\n    \\\\ {\n;\n\npub fn main() void {\n    _ = s;\n}\n";
    let found = items(Language::Zig, text);
    assert_eq!(starts(&found), vec![1, 3, 8]);
}

#[test]
fn decorator_only_lines() {
    assert!(decorator_only("@Override"));
    assert!(decorator_only("@Component({"));
    assert!(decorator_only("@a.b(1) @c"));
    assert!(decorator_only("#[derive(Debug, Clone)]"));
    assert!(!decorator_only("@Test fun a() {}"));
    assert!(!decorator_only("@Input() name"));
    assert!(!decorator_only("x = 1"));
}

#[test]
fn char_literals_are_told_from_lifetimes_and_separators() {
    assert_eq!(char_literal_end("'a' x", 0), Some(3));
    assert_eq!(char_literal_end("'é'", 0), Some(4));
    assert_eq!(char_literal_end(r"'\n'", 0), Some(4));
    assert_eq!(char_literal_end(r"'\u{1F600}'", 0), Some(11));
    assert_eq!(char_literal_end("'a str", 0), None);
    assert_eq!(char_literal_end("1'000'000", 1), None);
}

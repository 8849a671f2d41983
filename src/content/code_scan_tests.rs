//! Scanner tests: literals and comments that would fool a brace counter, and the items and
//! class members found in small files of each language.

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
fn javascript_literals_do_not_move_the_depth() {
    let text = r#"import { a } from './a';
const re = /[{}]+\/{/g;
const s = '}' + "{" + `${a ? `}` : '{'} }`;
// a comment with {
/* and } another */
function f(x) {
  return x / 2 / { a: 1 }.a;
}
class K {
  m() { return `${1}`; }
  n() {
    const t = `
      }
    `;
  }
}
export default f;
"#;
    let found = items(Language::JavaScript, text);
    assert_eq!(starts(&found), vec![1, 2, 3, 4, 9, 17]);
    let class = found[4].body.as_ref().expect("K is a class");
    assert_eq!(class.header, LineRange::new(9, 9));
    assert_eq!(starts(&class.members), vec![10, 11]);
    assert!(found[3].body.is_none(), "a function has no members");
}

#[test]
fn statements_without_semicolons_and_decorators() {
    let text = "const a = 1\nconst b = a\n  .map(x => x)\n  .filter(Boolean)\n@Component({\n  selector: 'x',\n})\nexport class C {\n  @Input() name\n  @Output()\n  changed = new Emitter()\n}\n";
    let found = items(Language::TypeScript, text);
    assert_eq!(starts(&found), vec![1, 2, 5]);
    let class = found[2].body.as_ref().unwrap();
    assert_eq!(class.header, LineRange::new(8, 8));
    assert_eq!(starts(&class.members), vec![9, 10]);
}

#[test]
fn rust_raw_strings_lifetimes_and_chars() {
    let text = r##"use std::fmt;

/// Docs.
#[derive(Debug)]
pub struct S<'a> {
    name: &'a str,
}

impl<'a> S<'a> {
    pub fn open(&self) -> char {
        '{'
    }

    pub fn raw(&self) -> &'static str {
        r#"}"#
    }
}

fn nested() {
    /* outer /* inner } */ still comment { */
}
"##;
    let found = items(Language::Rust, text);
    assert_eq!(starts(&found), vec![1, 3, 9, 19]);
    let imp = found[2].body.as_ref().unwrap();
    assert_eq!(imp.header, LineRange::new(9, 9));
    assert_eq!(starts(&imp.members), vec![10, 14]);
    assert!(found[3].body.is_none());
}

#[test]
fn go_raw_strings_and_methods() {
    let text = "package main\n\nimport (\n\t\"fmt\"\n)\n\nvar tpl = `\n}\n`\n\ntype Server struct {\n\tName string\n\tPort int\n}\n\n// Run runs.\nfunc (s *Server) Run() error {\n\tfmt.Println(\"}\")\n\treturn nil\n}\n";
    let found = items(Language::Go, text);
    assert_eq!(starts(&found), vec![1, 3, 7, 11, 16]);
    assert!(found[3].body.is_some(), "a struct is class-like");
    assert!(found[4].body.is_none(), "a method is a function");
}

#[test]
fn java_annotations_and_text_blocks() {
    let text = "package a;\n\nimport java.util.List;\n\n@Service\npublic class Repo {\n    private final String q = \"\"\"\n        }\n        \"\"\";\n\n    @Override\n    public String toString() {\n        return \"{\";\n    }\n\n    @Test\n    void b() {\n    }\n}\n";
    let found = items(Language::Java, text);
    assert_eq!(starts(&found), vec![1, 3, 5]);
    let class = found[2].body.as_ref().unwrap();
    assert_eq!(class.header, LineRange::new(6, 6));
    assert_eq!(starts(&class.members), vec![7, 11, 16]);
}

#[test]
fn cpp_namespaces_classes_raw_strings_and_the_preprocessor() {
    let text = "#ifndef UTIL_H\n#define UTIL_H\n#include <string>\n#define OPEN {\n\nnamespace util {\n\nclass Parser : public Base {\npublic:\n    int parse(const char *s) {\n        auto r = R\"x(})x\";\n        return '}';\n    }\n\nprivate:\n    int n_ = 1'000;\n};\n\nstruct point *make(void) {\n    return 0;\n}\n\n}  // namespace util\n#endif\n";
    let found = items(Language::Cpp, text);
    assert_eq!(starts(&found), vec![1, 2, 3, 4, 6, 24]);
    let ns = found[4].body.as_ref().unwrap();
    assert_eq!(ns.header, LineRange::new(6, 6));
    // The blank line after the namespace's `{` is an item of its own.
    assert_eq!(starts(&ns.members), vec![7, 8, 19]);
    let class = ns.members[1].body.as_ref().unwrap();
    assert_eq!(class.header, LineRange::new(8, 8));
    assert_eq!(starts(&class.members), vec![9, 15]);
    assert!(ns.members[2].body.is_none(), "`struct point *make(void)` is a function");
}

#[test]
fn python_logical_lines_decorators_and_classes() {
    let text = "\u{feff}\"\"\"Doc.\n\ndef not_a_def():\n\"\"\"\nimport os\nx = (1,\n2)\n\n# About C.\n@decorator(\n    arg=1,\n)\nclass C(\n    Base,\n):\n    \"\"\"C.\"\"\"\n\n    @property\n    def a(self):\n        def inner():\n            pass\n        s = '''\nclass Fake:\n'''\n        return 1 \\\n            + 2\n\n    def b(self):\n        if x:\n            pass\n        else:\n            pass\n\nif __name__ == '__main__':\n    main()\nelse:\n    pass\n";
    let found = items(Language::Python, text);
    assert_eq!(starts(&found), vec![1, 5, 6, 9, 34]);
    let class = found[3].body.as_ref().unwrap();
    assert_eq!(class.header, LineRange::new(13, 15));
    assert_eq!(starts(&class.members), vec![16, 18, 28]);
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

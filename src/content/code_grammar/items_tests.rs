//! The items the grammar finds in small files of each language: the cases the lexical
//! scanner was written against (literals and comments that would fool a brace counter,
//! wrappers, `describe` callbacks, preprocessor branches), now read from the tree.

use super::super::content_type::Language;
use super::super::line_index::LineIndex;
use super::super::line_range::LineRange;
use super::{items as grammar_items, Grammar};
use crate::content::code_scan::{BodyKind, Item};

fn items(language: Language, text: &str) -> Vec<Item> {
    let index = LineIndex::new(text);
    let grammar = Grammar::of(language).expect("a grammar for the language");
    let tree = grammar.parse(text).expect("a tree");
    let items = grammar_items(grammar, &tree, text, index.len());
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

/// Whether `item` is a function: its body is its statements, opened only when it is
/// bigger than the budget.
fn is_function(item: &Item) -> bool {
    item.body.as_ref().is_none_or(|b| b.kind == BodyKind::Block)
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
    assert!(is_function(&found[3]), "a function is no class");
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
    assert!(is_function(&found[3]));
}

#[test]
fn go_raw_strings_and_methods() {
    let text = "package main\n\nimport (\n\t\"fmt\"\n)\n\nvar tpl = `\n}\n`\n\ntype Server struct {\n\tName string\n\tPort int\n}\n\n// Run runs.\nfunc (s *Server) Run() error {\n\tfmt.Println(\"}\")\n\treturn nil\n}\n";
    let found = items(Language::Go, text);
    assert_eq!(starts(&found), vec![1, 3, 7, 11, 16]);
    assert!(found[3].body.is_some(), "a struct is class-like");
    assert!(is_function(&found[4]), "a method is a function");
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
    // The include guard's two lines are one item, its `#endif` ends the namespace's.
    assert_eq!(starts(&found), vec![1, 3, 4, 6]);
    let ns = found[3].body.as_ref().unwrap();
    assert_eq!(ns.header, LineRange::new(6, 6));
    // The blank line after the namespace's `{` goes with its first member.
    assert_eq!(starts(&ns.members), vec![7, 19]);
    let class = ns.members[0].body.as_ref().unwrap();
    assert_eq!(class.header, LineRange::new(8, 8));
    assert_eq!(starts(&class.members), vec![9, 15]);
    assert!(is_function(&ns.members[1]), "`struct point *make(void)` is a function");
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
fn a_umd_wrapper_is_a_block_whose_members_are_its_functions() {
    let text = "(function (root, factory) {\n  module.exports = factory();\n})(this, function () {\n  'use strict';\n\n  function a(x) {\n    return x;\n  }\n\n  function b(x) {\n    return x;\n  }\n  return { a: a, b: b };\n});\n";
    let found = items(Language::JavaScript, text);
    assert_eq!(starts(&found), vec![1]);
    let wrapper = found[0].body.as_ref().expect("the wrapper holds functions");
    assert_eq!(wrapper.kind, BodyKind::Block);
    assert_eq!(wrapper.header, LineRange::new(1, 3));
    assert_eq!(starts(&wrapper.members), vec![4, 6, 10, 13]);
    assert!(wrapper.members.iter().all(is_function), "its functions are functions");
}

#[test]
fn an_arrow_returning_a_class_is_a_class() {
    let text = "const x = require('x')\nmodule.exports = cls => class Builder extends cls {\n  constructor (options) {\n    super(options)\n  }\n\n  async build () {\n    return 1\n  }\n}\n";
    let found = items(Language::JavaScript, text);
    assert_eq!(starts(&found), vec![1, 2]);
    let class = found[1].body.as_ref().expect("a class");
    assert_eq!(class.kind, BodyKind::Class);
    assert_eq!(class.header, LineRange::new(2, 2));
    assert_eq!(starts(&class.members), vec![3, 7]);
}

#[test]
fn test_files_and_compiled_classes_open_at_their_callbacks() {
    let text = "describe('compute', () => {\n  beforeEach(() => {\n    reset();\n  });\n\n  it('adds', () => {\n    expect(add(1, 2)).toBe(3);\n  });\n\n  it('subtracts', async function () {\n    expect(sub(2, 1)).toBe(1);\n  });\n});\n";
    let found = items(Language::JavaScript, text);
    let suite = found[0].body.as_ref().expect("describe holds its tests");
    assert_eq!(suite.header, LineRange::new(1, 1));
    assert_eq!(starts(&suite.members), vec![2, 6, 10]);
    let babel = "var Parser = /*#__PURE__*/function () {\n  function Parser(rule) {\n    this.rule = rule;\n  }\n  var _proto = Parser.prototype;\n  _proto.parse = function parse() {\n    return this.rule;\n  };\n  return Parser;\n}();\n";
    let found = items(Language::JavaScript, babel);
    let class = found[0].body.as_ref().expect("the compiled class opens");
    assert_eq!(class.header, LineRange::new(1, 1));
    assert_eq!(starts(&class.members), vec![2, 5, 6, 9]);
    // A function of plain statements and callbacks is a leaf only when none declares.
    let leaf =
        "function f(xs) {\n  let total = 0;\n  for (const x of xs) {\n    total += x;\n  }\n  return total;\n}\n";
    assert!(is_function(&items(Language::JavaScript, leaf)[0]));
}

#[test]
fn jsx_text_and_closing_tags_do_not_move_the_depth() {
    let text = "import React from 'react';\n\nexport default class App extends React.Component {\n  render() {\n    return <div>{this.error && <p>Can't load</p>}</div>;\n  }\n\n  link() {\n    return (<a href=\"/x\">{x}</a>) || (open && (\n      <p>Don't {items.map(i => (<b key={i}>{i}</b>))}</p>\n    ));\n  }\n\n  frag() {\n    return <>\n      <img src='a.png' />\n      it's {`t${1}`}\n    </>;\n  }\n}\n";
    for language in [Language::JavaScript, Language::TypeScript] {
        let found = items(language, text);
        assert_eq!(starts(&found), vec![1, 3], "{language:?}");
        let class = found[1].body.as_ref().expect("a class");
        assert_eq!(starts(&class.members), vec![4, 8, 14], "{language:?}");
    }
    // TypeScript generics and casts are not elements.
    let ts = "const id = <T,>(x: T) => x;\nconst f = <T>(x: T): T => x;\nconst n = <number>value;\nclass K {\n  m() {\n    return 1;\n  }\n}\n";
    let found = items(Language::TypeScript, ts);
    assert_eq!(starts(&found), vec![1, 2, 3, 4]);
    assert!(found[3].body.is_some());
}

#[test]
fn a_regex_after_a_condition_is_a_regex() {
    let text = "class K {\n  a(s) {\n    if (s) /}/.test(s);\n  }\n\n  b() {\n    return 1;\n  }\n}\n";
    let found = items(Language::JavaScript, text);
    let class = found[0].body.as_ref().unwrap();
    assert_eq!(starts(&class.members), vec![2, 6]);
}

#[test]
fn only_the_first_branch_of_a_preprocessor_conditional_moves_the_depth() {
    let text = "#include <stdio.h>\n\n#ifdef WIDE\nint f(int a, int b) {\n#else\nint f(int a) {\n#endif\n    return a;\n}\n\nint g(void) {\n    return 0;\n}\n\n#ifdef _WIN32\nint h(void) {\n    return 1;\n}\n#else\nint h(void) {\n    return 2;\n}\n#endif\n";
    let found = items(Language::C, text);
    // The functions of balanced branches are items of their own, and g after them is found
    // at the top. A function whose opening differs between branches is beyond the grammar:
    // its branches are items apart (lines 4, 5, 6), kept together only while they fit.
    assert_eq!(starts(&found), vec![1, 3, 4, 5, 6, 11, 16, 20]);
    assert_eq!(found[4].lines, LineRange::new(6, 10));
}

#[test]
fn python_blocks_of_defs_open_with_their_clauses() {
    let text = "import sys\n\nif sys.platform == 'win32':\n    def a():\n        return 1\n\n    def b():\n        return 2\nelse:\n    def a():\n        return 3\n\ntry:\n    from fast import c\nexcept ImportError:\n    def c():\n        return 4\n\nclass K:\n    if sys.version_info >= (3, 12):\n        def m(self):\n            return 5\n    else:\n        def m(self):\n            return 6\n\ndef leaf():\n    if True:\n        x = 1\n    return x\n";
    let found = items(Language::Python, text);
    assert_eq!(starts(&found), vec![1, 3, 13, 19, 27]);
    let platform = found[1].body.as_ref().expect("an if of defs opens");
    assert_eq!(platform.kind, BodyKind::Block);
    assert_eq!(platform.header, LineRange::new(3, 3));
    assert_eq!(starts(&platform.members), vec![4, 7, 9]);
    let other = platform.members[2].body.as_ref().expect("its else clause opens");
    assert_eq!(other.header, LineRange::new(9, 9));
    let attempt = found[2].body.as_ref().expect("a try holding a def");
    assert_eq!(starts(&attempt.members), vec![14, 15]);
    let class = found[3].body.as_ref().unwrap();
    let inner = class.members[0].body.as_ref().expect("an if of methods inside a class");
    assert_eq!(inner.header, LineRange::new(20, 20));
    assert!(is_function(&found[4]), "a leaf function is a function");
}

//! Code chunker tests on real-shaped files of several languages.

use crate::content::chunk::tests::{content_matches, covers_all_lines};
use crate::content::chunk::{chunk, Chunk, ChunkOptions, ChunkStrategy};
use crate::content::content_type::{ContentType, Language};
use crate::content::detect::Detection;
use crate::content::line_index::LineIndex;
use crate::content::line_range::LineRange;

fn code(language: Language, text: &str) -> Vec<Chunk> {
    let chunks = chunk(
        &Detection::given(ContentType::SourceCode, Some(language)),
        text,
        &ChunkOptions::default(),
    );
    assert!(covers_all_lines(&chunks, LineIndex::new(text).len()));
    for c in &chunks {
        assert!(content_matches(c, text), "chunk {} does not hold its lines", c.index);
        assert!(
            c.lines().len() <= 300,
            "chunk {} has {} lines",
            c.index,
            c.lines().len()
        );
    }
    chunks
}

/// The first line of each chunk's own range (not of prepended imports).
fn first_lines<'t>(chunks: &[Chunk], text: &'t str) -> Vec<&'t str> {
    let index = LineIndex::new(text);
    chunks.iter().map(|c| index.line(c.start_line)).collect()
}

fn body(indent: &str, lines: usize, stmt: &str) -> String {
    (0..lines)
        .map(|i| format!("{indent}{stmt}_{i} = compute({i})\n"))
        .collect()
}

fn python_pipeline() -> String {
    let mut s = String::from(
        "\"\"\"Data pipeline.\n\nLoads, transforms and validates.\n\"\"\"\nimport os\nimport subprocess\n\
         from typing import (\n    Any,\n    Dict,\n)\n\nCONSTANT = 1\n\n\n@dataclass\nclass Config:\n",
    );
    s.push_str(&body("    ", 100, "field"));
    s.push_str("\n\nclass DataLoader:\n    \"\"\"Loads data.\"\"\"\n\n    @staticmethod\n    def load(url):\n");
    s.push_str(&body("        ", 150, "step"));
    s.push_str("\n    def query(self, table):\n");
    s.push_str(&body("        ", 150, "row"));
    s.push_str("\n    class Inner:\n        def helper(self):\n");
    s.push_str(&body("            ", 40, "x"));
    s.push_str("\n\n# Route for the API.\n@app.route(\"/x\")\ndef handler():\n");
    s.push_str(&body("    ", 250, "y"));
    s
}

#[test]
fn python_is_cut_at_definitions_with_decorators_kept_and_imports_prepended() {
    let text = python_pipeline();
    let chunks = code(Language::Python, &text);
    assert_eq!(
        first_lines(&chunks, &text),
        vec![
            "\"\"\"Data pipeline.",
            "    def query(self, table):",
            "# Route for the API."
        ]
    );
    // The import block runs from the first import to the closing parenthesis.
    let imports = LineRange::new(5, 10);
    assert_eq!(chunks[0].context.prepended, None);
    for c in &chunks[1..] {
        assert_eq!(c.context.prepended, Some(imports));
        assert!(c
            .content
            .starts_with("import os\nimport subprocess\nfrom typing import (\n    Any,\n    Dict,\n)\n# … lines 11–"));
        assert_eq!(c.context.strategy, ChunkStrategy::Boundaries);
    }
    // The oversize class was cut between its methods, the decorator staying with `load`,
    // the comment and decorator with `handler`.
    assert!(chunks[0].content.contains("    @staticmethod\n    def load(url):"));
    assert!(chunks[1]
        .content
        .contains("    class Inner:\n        def helper(self):"));
    assert!(chunks[2]
        .content
        .contains("# Route for the API.\n@app.route(\"/x\")\ndef handler():"));
}

#[test]
fn typescript_exports_with_jsdoc_and_multiline_imports() {
    let mut text = String::from(
        "import { a } from './a';\nimport {\n  b,\n  c,\n} from './bc';\nconst fs = require('fs');\n\n\
         /**\n * The first export.\n */\nexport function one(): number {\n",
    );
    text.push_str(&body("  ", 120, "const v"));
    text.push_str("}\n\nexport class Two {\n");
    text.push_str(&body("  ", 200, "private f"));
    text.push_str("}\n\nexport const three = () => {\n");
    text.push_str(&body("  ", 100, "let z"));
    text.push_str("};\n");
    let chunks = code(Language::TypeScript, &text);
    assert_eq!(
        first_lines(&chunks, &text),
        vec![
            "import { a } from './a';",
            "export class Two {",
            "export const three = () => {"
        ]
    );
    let marker = format!(
        "// … lines 7–{} are not in this chunk; it continues at line {}\n",
        chunks[1].start_line - 1,
        chunks[1].start_line
    );
    assert!(chunks[1].content.starts_with(&format!("import {{ a }} from './a';\nimport {{\n  b,\n  c,\n}} from './bc';\nconst fs = require('fs');\n{marker}export class Two {{")));
}

#[test]
fn rust_impl_blocks_are_cut_at_methods_with_doc_comments_and_attributes() {
    let mut text = String::from("use std::collections::HashMap;\nuse std::io::{\n    self,\n    Read,\n};\n\n/// A cache.\npub struct Cache {\n    map: HashMap<String, String>,\n}\n\nimpl Cache {\n");
    for name in ["get", "put", "evict"] {
        text.push_str(&format!(
            "    /// Does {name}.\n    #[inline]\n    pub fn {name}(&mut self) -> io::Result<()> {{\n"
        ));
        text.push_str(&body("        ", 130, "let v"));
        text.push_str("        Ok(())\n    }\n\n");
    }
    text.push_str("}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn works() {}\n}\n");
    let chunks = code(Language::Rust, &text);
    // `impl Cache` is too long: cut between its methods, each with its doc and attribute.
    assert_eq!(
        first_lines(&chunks, &text),
        vec!["use std::collections::HashMap;", "    /// Does evict."]
    );
    for name in ["get", "put", "evict"] {
        let holder = chunks
            .iter()
            .find(|c| c.content.contains(&format!("pub fn {name}(")))
            .unwrap();
        assert!(holder
            .content
            .contains(&format!("    /// Does {name}.\n    #[inline]\n    pub fn {name}(")));
    }
    assert_eq!(chunks[1].context.prepended, Some(LineRange::new(1, 5)));
    assert!(chunks[1]
        .content
        .ends_with("#[cfg(test)]\nmod tests {\n    #[test]\n    fn works() {}\n}\n"));
}

#[test]
fn go_and_c_keep_their_headers() {
    let mut go = String::from("package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\n");
    for f in ["parse", "run"] {
        go.push_str(&format!("// {f} does things.\nfunc {f}(args []string) error {{\n"));
        go.push_str(&body("\t", 200, "x"));
        go.push_str("}\n\n");
    }
    let chunks = code(Language::Go, &go);
    assert_eq!(first_lines(&chunks, &go), vec!["package main", "// run does things."]);
    assert_eq!(chunks[1].context.prepended, Some(LineRange::new(1, 6)));

    let mut c = String::from("#include <stdio.h>\n#include \"util.h\"\n\n");
    for f in ["parse", "emit"] {
        c.push_str(&format!(
            "/*\n * {f}: the details.\n */\nstatic int {f}(const char *s)\n{{\n"
        ));
        c.push_str(&body("    ", 200, "int v"));
        c.push_str("    return 0;\n}\n\n");
    }
    let chunks = code(Language::C, &c);
    assert_eq!(first_lines(&chunks, &c), vec!["#include <stdio.h>", "/*"]);
    assert!(chunks[1]
        .content
        .starts_with("#include <stdio.h>\n#include \"util.h\"\n// … lines 3–"));

    // A header behind an include guard still has its includes found.
    let guarded = format!("/* util.h */\n#ifndef UTIL_H\n#define UTIL_H\n\n#include <stddef.h>\n\n{c}#endif\n");
    let chunks = code(Language::C, &guarded);
    // Its own include, then those of the body pasted below it.
    assert_eq!(chunks[1].context.prepended, Some(LineRange::new(5, 8)));
}

#[test]
fn shell_functions_and_ruby_classes() {
    let mut sh = String::from("#!/usr/bin/env bash\nset -euo pipefail\nsource ./lib.sh\n\n");
    for f in ["build", "deploy"] {
        sh.push_str(&format!("{f}() {{\n"));
        sh.push_str(&body("  ", 180, "local v"));
        sh.push_str("}\n\n");
    }
    let chunks = code(Language::Shell, &sh);
    assert_eq!(first_lines(&chunks, &sh), vec!["#!/usr/bin/env bash", "deploy() {"]);

    let mut rb = String::from("require 'json'\n\nmodule Billing\n  class Invoice\n");
    for m in ["total", "tax", "render"] {
        rb.push_str(&format!("    def {m}\n"));
        rb.push_str(&body("      ", 140, "v"));
        rb.push_str("    end\n\n");
    }
    rb.push_str("  end\nend\n");
    let chunks = code(Language::Ruby, &rb);
    // Module, then class, then methods: cut at the methods.
    assert_eq!(first_lines(&chunks, &rb), vec!["require 'json'", "    def render"]);
    assert_eq!(chunks[1].context.prepended, Some(LineRange::new(1, 1)));
}

#[test]
fn without_boundaries_unknown_code_falls_back_to_overlapping_windows() {
    let text: String = (0..500).map(|i| format!("x{i} = {i}\n")).collect();
    let chunks = chunk(
        &Detection::given(ContentType::SourceCode, None),
        &text,
        &ChunkOptions::default(),
    );
    let ranges: Vec<(usize, usize)> = chunks.iter().map(|c| (c.start_line, c.end_line)).collect();
    assert_eq!(ranges, vec![(1, 200), (181, 380), (361, 500)]);
    assert!(chunks
        .iter()
        .all(|c| c.context.strategy == ChunkStrategy::Windows && c.context.note.is_some()));
    // Python statements are items of their own: packed, not windowed.
    let chunks = code(Language::Python, &text);
    let ranges: Vec<(usize, usize)> = chunks.iter().map(|c| (c.start_line, c.end_line)).collect();
    assert_eq!(ranges, vec![(1, 300), (301, 500)]);
}

#[test]
fn a_huge_import_block_is_capped_and_small_files_stay_whole() {
    let mut text: String = (0..100).map(|i| format!("import mod{i}\n")).collect();
    for f in 0..3 {
        text.push_str(&format!("def f{f}():\n"));
        text.push_str(&body("    ", 250, "v"));
    }
    let chunks = code(Language::Python, &text);
    assert_eq!(chunks[1].context.prepended, Some(LineRange::new(1, 60)));

    let small = "import os\n\ndef main():\n    print(os.name)\n";
    let chunks = code(Language::Python, small);
    assert_eq!(chunks.len(), 1);
    assert_eq!(
        (chunks[0].context.strategy, chunks[0].content.as_str()),
        (ChunkStrategy::Whole, small)
    );
}

#[test]
fn unknown_language_uses_the_seeds_keywords() {
    let mut text = String::new();
    for f in 0..3 {
        text.push_str(&format!("function f{f}() {{\n"));
        text.push_str(&body("  ", 150, "v"));
        text.push_str("}\n");
    }
    let chunks = chunk(
        &Detection::given(ContentType::SourceCode, None),
        &text,
        &ChunkOptions::default(),
    );
    assert_eq!(chunks.len(), 3);
    assert!(chunks
        .iter()
        .all(|c| c.content.starts_with("function f") || c.content.contains("\nfunction f")));
}

// ---------------------------------------------------------------------------------------
// Cut where the grammar allows: realistic files with classes bigger than a chunk.

/// Chunks of `text` under `opts`, checked: every line covered, content as the layout says,
/// within the budget, and no chunk boundary inside a function: every line strictly inside
/// one carries the word BODY, and no chunk starts on such a line, but windows of one
/// statement bigger than the budget and the chunks of a function bigger than the budget,
/// which carry its signature (a header without BODY).
fn grammar_chunks(language: Language, text: &str, opts: &ChunkOptions) -> Vec<Chunk> {
    let chunks = chunk(&Detection::given(ContentType::SourceCode, Some(language)), text, opts);
    let index = LineIndex::new(text);
    assert!(covers_all_lines(&chunks, index.len()));
    crate::content::chunk::tests::assert_within_budget(&chunks, opts);
    for c in &chunks {
        assert!(content_matches(c, text), "chunk {} does not hold its lines", c.index);
        let signature = c
            .context
            .header
            .last()
            .is_some_and(|h| (h.start..=h.end).all(|n| !index.line(n).contains("BODY")));
        if c.context.strategy != ChunkStrategy::Windows && !signature {
            assert!(
                !index.line(c.start_line).contains("BODY"),
                "chunk {} starts inside a function, at line {}: {}",
                c.index,
                c.start_line,
                index.line(c.start_line)
            );
        }
    }
    chunks
}

/// `n` lines of a JavaScript method body full of braces in literals and comments.
fn js_body(n: usize) -> String {
    let kinds = [
        "    const a = `${x} } ${ {y: 1}.y }`; // BODY",
        "    if (/[{}]+/.test(s)) { s = s.replace(/\\}/g, '{'); } // BODY",
        "    const o = { open: '{', close: \"}\" }; /* BODY } */",
        "    for (const k of keys) { total += k.length / 2; } // BODY",
    ];
    (0..n).map(|i| format!("{}\n", kinds[i % kinds.len()])).collect()
}

fn js_bitset() -> String {
    let mut s = String::from(
        "/*! bit.js | MIT License */\n'use strict';\n\nimport { Base } from './base.js';\nimport {\n  mask,\n  shift,\n} from './ops.js';\n\nconst WORD = 32;\n\n/**\n * A set of bits.\n */\nexport class BitSet extends Base {\n  #words = [];\n\n",
    );
    for name in ["get", "set", "clear", "flip", "union", "toString"] {
        s.push_str(&format!("  /** {name} the bits. */\n  {name}(index) {{\n"));
        s.push_str(&js_body(70));
        s.push_str("  } // BODY end\n\n");
    }
    s.push_str("}\n\nexport default BitSet;\n");
    s
}

#[test]
fn a_js_class_of_six_long_methods_is_cut_between_methods_with_its_header() {
    let text = js_bitset();
    let chunks = grammar_chunks(Language::JavaScript, &text, &ChunkOptions::default());
    let index = LineIndex::new(&text);
    assert!(chunks.len() >= 2, "{} chunks", chunks.len());
    let header = LineRange::new(15, 15);
    assert_eq!(index.line(15), "export class BitSet extends Base {");
    for c in &chunks[1..] {
        assert_eq!(c.context.prepended, Some(LineRange::new(4, 8)), "chunk {}", c.index);
        if c.start_line < index.len() - 2 {
            assert_eq!(c.context.header, vec![header], "chunk {}", c.index);
            assert!(c.content.starts_with(
                "import { Base } from './base.js';\nimport {\n  mask,\n  shift,\n} from './ops.js';\n// … lines 9–14 are not in this chunk; it continues at line 15\nexport class BitSet extends Base {\n// … lines 16–"
            ), "chunk {}:\n{}", c.index, &c.content[..300]);
        }
        // Every chunk opens on a method's doc comment.
        assert!(
            index.line(c.start_line).starts_with("  /**"),
            "chunk {} starts at {}",
            c.index,
            index.line(c.start_line)
        );
    }
    // Lines of the content map back to the file: imports, header, markers, own lines.
    let c = &chunks[1];
    assert_eq!(c.original_line(1), Some(4));
    assert_eq!(c.original_line(5), Some(8));
    assert_eq!(c.original_line(6), None);
    assert_eq!(c.original_line(7), Some(15));
    assert_eq!(c.original_line(8), None);
    assert_eq!(c.original_line(9), Some(c.start_line));
    let last = LineIndex::new(&c.content).len();
    assert_eq!(c.original_line(last), Some(c.end_line));
    assert_eq!(c.original_line(last + 1), None);
}

#[test]
fn a_function_bigger_than_the_budget_is_cut_between_its_statements_with_its_signature() {
    let mut text = String::from(
        "import { a } from './a';\n\nfunction small() {\n  return 1; // BODY\n} // BODY\n\nfunction huge() {\n",
    );
    text.push_str(&js_body(400));
    text.push_str("} // BODY\n\nfunction after() {\n  return 2; // BODY\n} // BODY\n");
    let opts = ChunkOptions {
        max_chunk_tokens: 6_000,
        ..ChunkOptions::default()
    };
    let chunks = grammar_chunks(Language::JavaScript, &text, &opts);
    let inside: Vec<&Chunk> = chunks
        .iter()
        .filter(|c| c.start_line > 7 && c.start_line < 409)
        .collect();
    assert!(!inside.is_empty());
    for c in &inside {
        assert_eq!(c.context.strategy, ChunkStrategy::Boundaries);
        assert_eq!(c.context.header, vec![LineRange::new(7, 7)], "chunk {}", c.index);
        assert_eq!(c.context.prepended, Some(LineRange::new(1, 1)));
        assert!(c.content.contains("function huge() {\n// … lines 8–"));
    }
    // Within the default budget the same function is kept whole, over the line target.
    let chunks = grammar_chunks(Language::JavaScript, &text, &ChunkOptions::default());
    assert!(
        chunks.iter().any(|c| c.lines() == LineRange::new(7, 409)),
        "{:?}",
        chunks.iter().map(Chunk::lines).collect::<Vec<_>>()
    );
}

#[test]
fn only_a_statement_bigger_than_the_budget_is_cut_into_windows() {
    let mut text = String::from("import { a } from './a';\n\nfunction huge() {\n  const x = 1;\n  if (x) {\n");
    text.push_str(&js_body(400));
    text.push_str("  } // BODY\n  return x;\n} // BODY\n");
    let opts = ChunkOptions {
        max_chunk_tokens: 6_000,
        ..ChunkOptions::default()
    };
    let chunks = chunk(
        &Detection::given(ContentType::SourceCode, Some(Language::JavaScript)),
        &text,
        &opts,
    );
    let windows: Vec<&Chunk> = chunks
        .iter()
        .filter(|c| c.context.strategy == ChunkStrategy::Windows)
        .collect();
    assert!(windows.len() >= 2);
    for w in &windows {
        assert_eq!(
            w.context.note.as_deref(),
            Some("lines 5–406 are one item longer than a chunk; it is cut into overlapping windows")
        );
        assert_eq!(w.context.header, vec![LineRange::new(3, 3)]);
        assert!(w.lines().start >= 5 && w.lines().end <= 406);
    }
    assert!(windows[1].context.overlap_before.is_some());
}

fn py_body(indent: &str, n: usize) -> String {
    let kinds = [
        "value = compute(x)  # BODY",
        "text = \"\"\"BODY\nclass NotAClass:\n    BODY\"\"\"",
        "if value:  # BODY\n{indent}    value += 1  # BODY",
        "total = (value +  # BODY\n{indent}         2)  # BODY",
    ];
    (0..n)
        .map(|i| format!("{indent}{}\n", kinds[i % kinds.len()].replace("{indent}", indent)))
        .collect()
}

#[test]
fn python_after_a_docstring_dunders_and_a_bom_with_a_decorated_class_cut_between_methods() {
    let mut text = String::from(
        "\u{feff}# Author: someone\n\"\"\"Command-line parsing library.\n\nimport this is prose, not code.\n\"\"\"\n\n__version__ = '1.1'\n__all__ = [\n    'ArgumentParser',\n    'Namespace',\n]\n\nimport os as _os\nimport re as _re\nfrom gettext import gettext as _\n\n\n@dataclass(frozen=True)\nclass ArgumentParser(\n    _AttributeHolder,\n):\n    \"\"\"Parses.\"\"\"\n\n",
    );
    for name in ["parse_args", "add_argument", "format_help", "error"] {
        text.push_str(&format!(
            "    @staticmethod\n    def {name}(self):\n        def nested():\n            return 1  # BODY\n"
        ));
        text.push_str(&py_body("        ", 60));
        text.push('\n');
    }
    text.push_str("\ndef main():\n    pass  # BODY\n");
    let chunks = grammar_chunks(Language::Python, &text, &ChunkOptions::default());
    let index = LineIndex::new(&text);
    assert_eq!(index.line(13), "import os as _os");
    assert!(chunks.len() >= 2);
    for c in &chunks[1..] {
        assert_eq!(c.context.prepended, Some(LineRange::new(13, 15)), "chunk {}", c.index);
        assert_eq!(c.context.header, vec![LineRange::new(19, 21)], "chunk {}", c.index);
        assert!(index.line(c.start_line).starts_with("    @staticmethod"));
        assert!(c
            .content
            .contains("class ArgumentParser(\n    _AttributeHolder,\n):\n# … lines 22–"));
    }
}

#[test]
fn rust_go_java_and_cpp_classes_are_cut_between_members() {
    let member = |sig: &str, comment: &str, n: usize| {
        let mut m = format!("    {sig} {{\n");
        for i in 0..n {
            m.push_str(&format!("        let_{i} = \"}}{{\"; {comment} BODY\n"));
        }
        m.push_str(&format!("    }} {comment} BODY\n\n"));
        m
    };
    let cases: Vec<(Language, String, &str)> = vec![
        (
            Language::Rust,
            format!(
                "//! Crate docs.\n#![allow(dead_code)]\n\nuse std::io;\n\npub struct Cache;\n\nimpl<'a> Cache {{\n{}{}{}}}\n",
                member("pub fn get(&self) -> char", "//", 120),
                member("pub fn put(&mut self, s: &'a str)", "//", 120),
                member("fn evict(&mut self)", "//", 120)
            ),
            "impl<'a> Cache {",
        ),
        (
            Language::CSharp,
            format!(
                "// Cache.\nusing System;\n\nnamespace Store.Cache\n{{\n    public sealed class Cache : IDisposable\n    {{\n{}{}{}    }}\n}}\n",
                member("public string Get(string key)", "//", 120),
                member("public void Put(string key)", "//", 120),
                member("public void Dispose()", "//", 120)
            ),
            "    {",
        ),
        (
            Language::Java,
            format!(
                "/* License. */\npackage a.b;\n\nimport java.util.List;\n\n@Service\npublic class Repo extends Base {{\n{}{}{}}}\n",
                member("@Override\n    public String toString()", "//", 120),
                member("public List<String> all()", "//", 120),
                member("private void clear()", "//", 120)
            ),
            "public class Repo extends Base {",
        ),
        (
            Language::Cpp,
            format!(
                "#ifndef REPO_H\n#define REPO_H\n#include <string>\n\nnamespace store {{\n\nclass Repo : public Base {{\npublic:\n{}{}{}}};\n\n}}  // namespace store\n#endif\n",
                member("std::string name() const", "//", 120),
                member("int size() const", "//", 120),
                member("void clear()", "//", 120)
            ),
            "class Repo : public Base {",
        ),
    ];
    for (language, text, header) in cases {
        let chunks = grammar_chunks(language, &text, &ChunkOptions::default());
        assert!(chunks.len() >= 2, "{language}: {} chunks", chunks.len());
        let index = LineIndex::new(&text);
        let with_header = chunks
            .iter()
            .filter(|c| c.context.header.iter().any(|h| index.line(h.end) == header))
            .count();
        assert!(with_header >= 1, "{language}: no chunk carries `{header}`");
        for c in chunks.iter().filter(|c| !c.context.header.is_empty()) {
            assert!(
                c.context.prepended.is_some(),
                "{language}: chunk {} has no imports",
                c.index
            );
            assert!(c.content.contains(header), "{language}: chunk {}", c.index);
        }
    }
}

// ---------------------------------------------------------------------------------------
// The import block, after whatever may stand before it.

/// The import block of `text`: by the grammar where the language has one, else by the
/// line rules.
fn imports_of(language: Language, text: &str) -> Option<(usize, usize)> {
    let index = LineIndex::new(text);
    let block = match crate::content::code_grammar::Grammar::of(language) {
        Some(grammar) => {
            let tree = grammar.parse(text).expect("a tree");
            crate::content::code_grammar::import_block(grammar, &tree, text, 60)
        }
        None => super::import_block(
            &index,
            crate::content::code_rules::rules_for(Some(language)),
            Some(language),
            60,
        ),
    };
    block.map(|r| (r.start, r.end))
}

#[test]
fn the_import_block_is_found_after_what_may_precede_it() {
    // _pydecimal.py: comments, a docstring, `__all__`, dunder assignments, then imports,
    // with another dunder between them.
    let pydecimal = "# Copyright (c) 2004 Python Software Foundation.\n# All rights reserved.\n\nr\"\"\"Python decimal arithmetic module.\n\nimport this is prose\n\"\"\"\n\n__all__ = [\n    'Decimal', 'Context',\n]\n\n__xname__ = __name__\n__name__ = 'decimal'\n__version__ = '1.70'\n__libmpdec_version__: str = \"2.4.2\"\n\nimport math as _math\nimport numbers as _numbers\n__x__ = 1\nimport sys\n\ntry:\n    from collections import namedtuple as _namedtuple\nexcept ImportError:\n    pass\n";
    assert_eq!(imports_of(Language::Python, pydecimal), Some((18, 21)));
    // A BOM, a shebang and an encoding line.
    let py = "\u{feff}#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\n'''Doc.'''\nfrom __future__ import annotations\nimport os\n\nx = 1\n";
    assert_eq!(imports_of(Language::Python, py), Some((4, 5)));
    // JavaScript: a license comment and 'use strict'.
    let js = "/*!\n * lib v1 | MIT\n */\n'use strict';\n\nconst fs = require('fs');\nimport { a } from './a';\n\nconst MAX = 3;\n";
    assert_eq!(imports_of(Language::JavaScript, js), Some((6, 7)));
    // Rust: inner docs and attributes, `use` with attributes between.
    let rs = "//! The crate.\n//! More docs.\n#![forbid(unsafe_code)]\n#![cfg_attr(\n    docsrs,\n    feature(doc_cfg)\n)]\n\nuse std::io;\n#[cfg(unix)]\nuse std::os::unix;\nmod cache;\n\npub fn f() {}\n";
    assert_eq!(imports_of(Language::Rust, rs), Some((9, 12)));
    // Go: the package clause and its doc comment.
    let go = "// Package x does things.\npackage x\n\nimport (\n\t\"fmt\"\n)\n\nfunc F() {}\n";
    assert_eq!(imports_of(Language::Go, go), Some((2, 6)));
    // Java: a license comment and the package.
    let java = "/*\n * License.\n */\npackage a.b;\n\nimport java.util.List;\nimport static java.lang.Math.max;\n\npublic class A {}\n";
    assert_eq!(imports_of(Language::Java, java), Some((4, 7)));
    // C: an include guard and `#pragma once`.
    let c = "/* util.h */\n#pragma once\n#ifndef UTIL_H\n#define UTIL_H\n\n#include <stddef.h>\n#include \"a.h\"\n\nint f(void);\n";
    assert_eq!(imports_of(Language::C, c), Some((6, 7)));
    // Kotlin, by the line rules.
    let kotlin = "/* License. */\npackage a.b\n\nimport c.D\nimport e.F\n\nclass A\n";
    assert_eq!(imports_of(Language::Kotlin, kotlin), Some((2, 5)));
}

#[test]
fn prepended_import_lines_map_back_to_the_file() {
    let text = python_pipeline();
    let chunks = code(Language::Python, &text);
    let c = &chunks[1];
    let index = LineIndex::new(&text);
    // Imports (lines 5–10), a marker, the class header, a marker, the chunk's own lines.
    assert_eq!(c.context.prepended, Some(LineRange::new(5, 10)));
    let header = c.context.header[0];
    assert_eq!(index.line(header.start), "class DataLoader:");
    let mapped: Vec<Option<usize>> = (1..=10).map(|k| c.original_line(k)).collect();
    let expected = vec![
        Some(5),
        Some(6),
        Some(7),
        Some(8),
        Some(9),
        Some(10),
        None,
        Some(header.start),
        None,
        Some(c.start_line),
    ];
    assert_eq!(mapped, expected);
    assert_eq!(c.original_line(10 + 9), Some(c.start_line + 9));
}

#[test]
fn a_wrapper_too_big_for_a_chunk_is_cut_between_its_functions_with_its_header() {
    let mut text = String::from(
        "(function (root, factory) {\n  module.exports = factory();\n})(this, function () {\n  'use strict';\n\n",
    );
    for i in 0..8 {
        text.push_str(&format!("  function f{i}(s) {{\n"));
        text.push_str(&js_body(40));
        text.push_str("  } // BODY end\n\n");
    }
    text.push_str("  return { f0: f0 };\n});\n");
    let opts = ChunkOptions {
        max_chunk_tokens: 2_000,
        ..ChunkOptions::default()
    };
    let chunks = grammar_chunks(Language::JavaScript, &text, &opts);
    assert!(chunks.len() >= 4, "{} chunks", chunks.len());
    for c in &chunks {
        assert_eq!(c.context.strategy, ChunkStrategy::Boundaries, "chunk {}", c.index);
    }
    for c in &chunks[1..] {
        assert_eq!(c.context.header, vec![LineRange::new(1, 3)], "chunk {}", c.index);
        assert!(c.content.starts_with("(function (root, factory) {\n"), "{}", c.content);
    }
}

#[test]
fn python_defs_in_if_and_else_are_cut_between_them_carrying_both_lines() {
    let mut text = String::from("import sys\n\nif sys.platform == 'win32':\n");
    for i in 0..4 {
        text.push_str(&format!("    def w{i}(x):\n"));
        text.push_str(&py_body("        ", 40));
    }
    text.push_str("else:\n");
    for i in 0..4 {
        text.push_str(&format!("    def p{i}(x):\n"));
        text.push_str(&py_body("        ", 40));
    }
    let opts = ChunkOptions {
        max_chunk_tokens: 2_000,
        ..ChunkOptions::default()
    };
    let chunks = grammar_chunks(Language::Python, &text, &opts);
    let index = LineIndex::new(&text);
    let else_line = (1..=index.len()).find(|&n| index.line(n) == "else:").unwrap();
    assert!(chunks.len() >= 4, "{} chunks", chunks.len());
    for c in &chunks[1..] {
        assert!(
            index.line(c.start_line).trim_start().starts_with("def "),
            "chunk {} starts at {}",
            c.index,
            index.line(c.start_line)
        );
        assert_eq!(
            c.context.header.first(),
            Some(&LineRange::new(3, 3)),
            "chunk {}",
            c.index
        );
        if c.start_line > else_line {
            assert_eq!(
                c.context.header,
                vec![LineRange::new(3, 3), LineRange::new(else_line, else_line)]
            );
        }
    }
}

#[test]
fn a_doc_comment_never_pushes_a_fitting_method_into_windows() {
    let mut text = String::from("import java.util.List;\n\npublic class Map {\n");
    for name in ["get", "put", "compute", "merge"] {
        text.push_str("    /**\n");
        for i in 0..60 {
            text.push_str(&format!(
                "     * Line {i} of the documentation of {name}, which is long.\n"
            ));
        }
        text.push_str(&format!("     */\n    public int {name}(int k) {{\n"));
        for i in 0..60 {
            text.push_str(&format!("        int v{i} = k * {i}; // BODY\n"));
        }
        text.push_str("        return k; // BODY\n    } // BODY\n\n");
    }
    text.push_str("}\n");
    // The doc comment and the method together are over the budget; the method alone fits.
    let opts = ChunkOptions {
        max_chunk_tokens: 1_600,
        ..ChunkOptions::default()
    };
    let chunks = grammar_chunks(Language::Java, &text, &opts);
    let index = LineIndex::new(&text);
    assert!(chunks.iter().all(|c| c.context.strategy == ChunkStrategy::Boundaries));
    for name in ["get", "put", "compute", "merge"] {
        let line = (1..=index.len())
            .find(|&n| index.line(n).contains(&format!("public int {name}(")))
            .unwrap();
        assert!(
            chunks.iter().any(|c| c.start_line == line && c.end_line >= line + 62),
            "{name} is whole"
        );
    }
}

#[test]
fn a_function_that_fits_only_without_the_imports_is_sent_whole_without_them() {
    let mut text = String::new();
    for i in 0..10 {
        text.push_str(&format!(
            "import {{ name{i} }} from './module-with-a-long-name-{i}.js';\n"
        ));
    }
    text.push_str("\nexport function big(s) {\n");
    text.push_str(&js_body(80));
    text.push_str("} // BODY end\n");
    let index = LineIndex::new(&text);
    let function = index.len() - 81 - 1;
    let bytes = crate::content::windows::bytes_of(&index, LineRange::new(function, index.len()));
    // Room for the function, not for the function and the imports.
    let opts = ChunkOptions {
        max_chunk_tokens: crate::tokens::upper_bound(bytes as u64 + 300),
        ..ChunkOptions::default()
    };
    let chunks = grammar_chunks(Language::JavaScript, &text, &opts);
    let whole = chunks
        .iter()
        .find(|c| c.start_line <= function + 1 && c.end_line == index.len())
        .expect("the function in one chunk");
    assert_eq!(whole.context.prepended, None);
    assert!(whole
        .context
        .note
        .as_deref()
        .is_some_and(|n| n.contains("import block")));
}

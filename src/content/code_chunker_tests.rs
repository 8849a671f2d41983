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
fn no_boundaries_falls_back_to_overlapping_windows() {
    let text: String = (0..500).map(|i| format!("x{i} = {i}\n")).collect();
    let chunks = code(Language::Python, &text);
    let ranges: Vec<(usize, usize)> = chunks.iter().map(|c| (c.start_line, c.end_line)).collect();
    assert_eq!(ranges, vec![(1, 200), (181, 380), (361, 500)]);
    assert!(chunks
        .iter()
        .all(|c| c.context.strategy == ChunkStrategy::Windows && c.context.note.is_some()));
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

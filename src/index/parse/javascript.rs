//! JavaScript / TypeScript imports: `import … from "x"`, `import "x"`, `export … from "x"`,
//! `require("x")`, TypeScript's `import x = require("x")` and `import("x")` — read from the
//! tree, so an import in a comment, a string, a template's text or a regex, or a method
//! named `require`, never becomes an edge.

use tree_sitter::{Node, Tree};

use super::{matches, text_of, unquoted, RawImport};
use crate::index::language::EdgeKind;

/// One pattern per form; `import_require_clause` is TypeScript's only.
const PATTERNS: &[&str] = &[
    "(import_statement source: (string) @import)",
    "(export_statement source: (string) @reexport)",
    "(import_require_clause source: (string) @require)",
    "(call_expression function: (identifier) @function arguments: (arguments . (_) @require))",
    "(call_expression function: (import) arguments: (arguments . (_) @dynamic))",
];

pub(super) fn imports(tree: &Tree, text: &str) -> Vec<RawImport> {
    let mut found = Vec::new();
    for found_match in matches(tree, text, PATTERNS) {
        let function = found_match.iter().find(|(name, _)| name == "function");
        if function.is_some_and(|(_, f)| text_of(*f, text) != "require") {
            continue;
        }
        for (name, node) in &found_match {
            let kind = match name.as_str() {
                "import" => EdgeKind::Import,
                "reexport" => EdgeKind::Reexport,
                "require" => EdgeKind::Require,
                "dynamic" => EdgeKind::DynamicImport,
                _ => continue,
            };
            if let Some(spec) = literal(*node, text) {
                found.push(RawImport::new(spec, kind));
            }
        }
    }
    found
}

/// The value of a string literal, or of a template literal without substitutions; `None`
/// for anything computed.
fn literal(node: Node<'_>, text: &str) -> Option<String> {
    match node.kind() {
        "string" => Some(unquoted(node, text)),
        "template_string" => {
            let mut cursor = node.walk();
            let computed = node
                .named_children(&mut cursor)
                .any(|c| c.kind() == "template_substitution");
            (!computed).then(|| unquoted(node, text))
        }
        _ => None,
    }
    .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::language::Language;

    fn imports(src: &str) -> Vec<RawImport> {
        super::super::extract_imports(Language::TypeScript, src)
    }

    fn specs(text: &str) -> Vec<(String, EdgeKind)> {
        imports(text).into_iter().map(|i| (i.specifier, i.kind)).collect()
    }

    fn s(spec: &str, kind: EdgeKind) -> (String, EdgeKind) {
        (spec.to_string(), kind)
    }

    #[test]
    fn every_import_form() {
        let src = r#"
import React, { useState } from "react";
import * as path from 'node:path';
import type { Session } from "./types";
import "./polyfill";
import def, * as ns from "./both";
import {
  a,
  b as c,
  "string name" as d,
} from "./multi";
export * from "./reexported";
export * as helpers from "./helpers";
export { x, y as z } from "./named";
export type { T } from "./typeonly";
const fs = require("fs");
const lazy = await import("./lazy");
const tpl = import(`./template`);
import x = require("./ts-require");
"#;
        assert_eq!(
            specs(src),
            vec![
                s("react", EdgeKind::Import),
                s("node:path", EdgeKind::Import),
                s("./types", EdgeKind::Import),
                s("./polyfill", EdgeKind::Import),
                s("./both", EdgeKind::Import),
                s("./multi", EdgeKind::Import),
                s("./reexported", EdgeKind::Reexport),
                s("./helpers", EdgeKind::Reexport),
                s("./named", EdgeKind::Reexport),
                s("./typeonly", EdgeKind::Reexport),
                s("fs", EdgeKind::Require),
                s("./lazy", EdgeKind::DynamicImport),
                s("./template", EdgeKind::DynamicImport),
                s("./ts-require", EdgeKind::Require),
            ]
        );
    }

    #[test]
    fn comments_strings_and_regexes_make_no_edges() {
        let src = r#"
// import a from "./commented";
/* import b from "./block";
   require("./block2") */
const msg = "import c from './in-string'";
const t = `require("./in-template") ${ require("./in-substitution") }`;
const re = /import d from "\.\/regex"/g;
const half = 10 / 2; const other = require("./real");
obj.require("./member");
const meta = import.meta.url;
export const value = 1;
export { local };
import e from "./after-export";
"#;
        assert_eq!(
            specs(src),
            vec![
                s("./in-substitution", EdgeKind::Require),
                s("./real", EdgeKind::Require),
                s("./after-export", EdgeKind::Import),
            ]
        );
    }

    #[test]
    fn dynamic_import_with_a_computed_path_is_skipped() {
        assert!(specs("const m = import(`./pages/${name}`); const n = import(base + '/x');").is_empty());
    }

    #[test]
    fn jsx_text_with_apostrophes_costs_at_most_one_line() {
        let src = "import a from './a';\nconst el = <p>Don't stop</p>;\nimport b from './b';\n";
        assert_eq!(specs(src), vec![s("./a", EdgeKind::Import), s("./b", EdgeKind::Import)]);
    }
}

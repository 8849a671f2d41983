//! Python imports: `import a.b [as c], d` and `from [.]*a.b import x, (y, z), *`, wherever
//! they stand (`try: import x`, `if TYPE_CHECKING:`), never in a string or a docstring.

use tree_sitter::{Node, Tree};

use super::{captures, text_of, RawImport};
use crate::index::language::EdgeKind;

const PATTERNS: &[&str] = &[
    "(import_statement) @import",
    "(import_from_statement) @from",
    "(future_import_statement) @from",
];

pub(super) fn imports(tree: &Tree, text: &str) -> Vec<RawImport> {
    let mut found = Vec::new();
    for (name, node) in captures(tree, text, PATTERNS) {
        let names = imported_names(node, text);
        if name == "import" {
            found.extend(names.into_iter().map(|n| RawImport::new(n, EdgeKind::Import)));
            continue;
        }
        let module = match node.child_by_field_name("module_name") {
            Some(module) => compact(text_of(module, text)),
            None => "__future__".to_string(),
        };
        let mut import = RawImport::new(module, EdgeKind::Import);
        import.names = names;
        found.push(import);
    }
    found
}

/// The names an import statement lists (`a.b` of `import a.b as c`; `x`, `y` of
/// `from m import x, y as z`); none for `*`.
fn imported_names(node: Node<'_>, text: &str) -> Vec<String> {
    let mut cursor = node.walk();
    node.children_by_field_name("name", &mut cursor)
        .map(|n| match n.kind() {
            "aliased_import" => n.child_by_field_name("name").unwrap_or(n),
            _ => n,
        })
        .map(|n| compact(text_of(n, text)))
        .filter(|n| !n.is_empty())
        .collect()
}

/// A dotted name without the spaces, line breaks and comments a statement may hold.
fn compact(name: &str) -> String {
    name.lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .collect::<String>()
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '\\')
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::language::Language;

    fn imports(src: &str) -> Vec<RawImport> {
        super::super::extract_imports(Language::Python, src)
    }

    fn specs(text: &str) -> Vec<(String, Vec<String>)> {
        imports(text).into_iter().map(|i| (i.specifier, i.names)).collect()
    }

    fn s(spec: &str, names: &[&str]) -> (String, Vec<String>) {
        (spec.to_string(), names.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn every_import_form() {
        let src = r"
import os, app.models as m
from app.services import auth, billing as b
from . import views
from ..core.db import (
    Session,
    engine,
)
from .util import *
try: import ujson as json
except ImportError: import json
if TYPE_CHECKING:
    from app.types import User; import app.extra
";
        assert_eq!(
            specs(src),
            vec![
                s("os", &[]),
                s("app.models", &[]),
                s("app.services", &["auth", "billing"]),
                s(".", &["views"]),
                s("..core.db", &["Session", "engine"]),
                s(".util", &[]),
                s("ujson", &[]),
                s("json", &[]),
                s("app.types", &["User"]),
                s("app.extra", &[]),
            ]
        );
    }

    #[test]
    fn docstrings_comments_and_strings_make_no_edges() {
        let src = r#"'''Module doc.
import not_a_module
from fake import thing
'''
# import commented
x = "from also_fake import y"
y = f"import {z}"
z = rb'import raw'
def f():
    """
    from docstring import nothing
    """
    return 1  # from trailing import comment
raise ValueError("x") from err
from real import thing
"#;
        assert_eq!(specs(src), vec![s("real", &["thing"])]);
    }
}

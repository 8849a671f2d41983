//! Go imports: `import "p"`, `import alias "p"`, and `import ( … )` groups with `_` and `.`
//! aliases: the `path` of every `import_spec`.

use tree_sitter::Tree;

use super::{captures, unquoted, RawImport};
use crate::index::language::EdgeKind;

const PATTERNS: &[&str] = &["(import_spec path: (_) @path)"];

pub(super) fn imports(tree: &Tree, text: &str) -> Vec<RawImport> {
    captures(tree, text, PATTERNS)
        .into_iter()
        .map(|(_, node)| RawImport::new(unquoted(node, text), EdgeKind::Import))
        .filter(|i| !i.specifier.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::language::Language;

    fn imports_of(src: &str) -> Vec<RawImport> {
        super::super::extract_imports(Language::Go, src)
    }

    #[test]
    fn single_grouped_and_aliased_imports() {
        let src = r#"package main

// import "example.com/m/commented"
/* import "example.com/m/block" */
import "fmt"
import util "example.com/m/internal/util"
import (
	"os"
	_ "example.com/m/plugins"
	. "example.com/m/dsl"
	db "example.com/m/store/db"
)

var s = `import "example.com/m/raw"`
"#;
        let specs: Vec<String> = imports_of(src).into_iter().map(|i| i.specifier).collect();
        assert_eq!(
            specs,
            vec![
                "fmt",
                "example.com/m/internal/util",
                "os",
                "example.com/m/plugins",
                "example.com/m/dsl",
                "example.com/m/store/db",
            ]
        );
    }
}

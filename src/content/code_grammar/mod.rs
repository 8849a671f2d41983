//! Where code may be cut, decided by a real parser: tree-sitter grammars for Python,
//! JavaScript (with JSX), TypeScript and TSX, Rust, Go, Java, C, C++, C#, Ruby and PHP
//! (issue 26). The same trees give the index its imports ([`crate::index`]).
//!
//! What each grammar's node kinds mean for cutting is data, one [`Grammar`] per language:
//! which nodes are functions (cut between their top-level statements only when they do not
//! fit, their signature repeated), which are classes (impl, module, namespace, interface,
//! object literal…: cut between their members, their header repeated), which attach to the
//! item below them (comments, decorators, attributes), which form the import block, and
//! which stand for their children (a Go `statement_list`, a C `#ifdef` that is no import).
//! The items themselves are found in [`items`], the import block in [`import_block`].
//! Text no parse should be trusted with is told in [`guards`]; a parse runs under a deadline
//! on a thread of its own ([`deadline`]).
//!
//! Why a parser and not the lexical scanner of [`super::code_scan`] (kept for Kotlin,
//! Scala, Swift and Zig, which have no grammar here): checked against tree-sitter on large
//! real files, the scanner windowed functions that fit once their doc comment was counted,
//! took a TypeScript parameter named `namespace` for a namespace block, missed includes
//! under `#if` and cut oversize functions inside strings and comments. A grammar knows.
//! The price, measured on the 2-core build machine, is in the README.

mod deadline;
mod guards;
mod import_block;
mod items;

pub(crate) use import_block::import_block;
pub(crate) use items::{items, no_cut_lines};

use std::time::Instant;

use tree_sitter::{Node, Parser, Tree};

use super::content_type::Language;
use deadline::{parse_deadline, within, PARSE_GRACE};
use guards::MAX_NESTING;
use guards::{bracket_depth, python_indentation_too_deep, ruby_heredoc_word_too_long, tree_depth};

/// What one grammar's node kinds mean for cutting and for imports.
pub(crate) struct Grammar {
    /// The tree-sitter languages to try, in order: TypeScript is parsed as TSX when the
    /// TypeScript grammar finds errors (a `.tsx` file).
    languages: &'static [fn() -> tree_sitter::Language],
    /// Functions, methods, closures: kept whole while they fit; cut between the top-level
    /// statements of their `body` when they do not.
    functions: &'static [&'static str],
    /// Classes, impls, modules, namespaces, interfaces, object literals: cut between the
    /// members of their `body` (or of the node itself when it has none).
    classes: &'static [&'static str],
    /// Nodes that belong to the item below them: comments, decorators, attributes.
    attached: &'static [&'static str],
    /// Comment nodes (an attached comment may go to the chunk before; a cut never falls
    /// inside one).
    comments: &'static [&'static str],
    /// Nodes whose named children stand in their place in a list of members.
    transparent: &'static [&'static str],
    /// Compound statements and their clauses (Python `if`/`else`, `try`/`except`): cut
    /// like a function, between the statements of their first block and their other
    /// clauses, when they hold a function or class (platform-dependent definitions).
    compounds: &'static [&'static str],
    /// Imports: the nodes that make the import block.
    pub(crate) imports: &'static [&'static str],
    /// Nodes that may stand before or between imports without ending the block: a package
    /// clause, a module docstring, `'use strict'`, an include guard's `#define`.
    preamble: &'static [&'static str],
    /// Text the grammar's external scanner would abort the process on (a C `assert`, which
    /// takes rlm down with it): such a file is cut by the lines' rules instead.
    /// It is given the text and how deep its brackets go ([`bracket_depth`]).
    aborts_on: Option<fn(&str, usize) -> bool>,
}

fn python() -> tree_sitter::Language {
    tree_sitter_python::LANGUAGE.into()
}
fn javascript() -> tree_sitter::Language {
    tree_sitter_javascript::LANGUAGE.into()
}
fn typescript() -> tree_sitter::Language {
    tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into()
}
fn tsx() -> tree_sitter::Language {
    tree_sitter_typescript::LANGUAGE_TSX.into()
}
fn rust() -> tree_sitter::Language {
    tree_sitter_rust::LANGUAGE.into()
}
fn go() -> tree_sitter::Language {
    tree_sitter_go::LANGUAGE.into()
}
fn java() -> tree_sitter::Language {
    tree_sitter_java::LANGUAGE.into()
}
fn c() -> tree_sitter::Language {
    tree_sitter_c::LANGUAGE.into()
}
fn cpp() -> tree_sitter::Language {
    tree_sitter_cpp::LANGUAGE.into()
}
fn csharp() -> tree_sitter::Language {
    tree_sitter_c_sharp::LANGUAGE.into()
}
fn ruby() -> tree_sitter::Language {
    tree_sitter_ruby::LANGUAGE.into()
}
fn php() -> tree_sitter::Language {
    tree_sitter_php::LANGUAGE_PHP.into()
}

const PREPROC: &[&str] = &[
    "preproc_if",
    "preproc_ifdef",
    "preproc_else",
    "preproc_elif",
    "preproc_elifdef",
];

const PYTHON: Grammar = Grammar {
    languages: &[python],
    functions: &["function_definition"],
    classes: &["class_definition"],
    attached: &["comment"],
    comments: &["comment"],
    transparent: &[],
    compounds: &[
        "if_statement",
        "elif_clause",
        "else_clause",
        "try_statement",
        "except_clause",
        "finally_clause",
        "with_statement",
    ],
    imports: &["import_statement", "import_from_statement", "future_import_statement"],
    preamble: &["docstring", "dunder"],
    aborts_on: Some(python_indentation_too_deep),
};

const JS_FUNCTIONS: &[&str] = &[
    "function_declaration",
    "function_expression",
    "generator_function",
    "generator_function_declaration",
    "arrow_function",
    "method_definition",
    "class_static_block",
];

const JAVASCRIPT: Grammar = Grammar {
    languages: &[javascript],
    functions: JS_FUNCTIONS,
    classes: &["class_declaration", "class", "object"],
    attached: &["comment", "decorator"],
    comments: &["comment", "html_comment"],
    transparent: &[],
    compounds: &[],
    imports: &["import_statement", "require"],
    preamble: &["directive"],
    aborts_on: None,
};

const TYPESCRIPT: Grammar = Grammar {
    languages: &[typescript, tsx],
    classes: &[
        "class_declaration",
        "class",
        "abstract_class_declaration",
        "interface_declaration",
        "enum_declaration",
        "internal_module",
        "module",
        "object",
    ],
    ..JAVASCRIPT
};

const RUST: Grammar = Grammar {
    languages: &[rust],
    functions: &["function_item", "closure_expression"],
    classes: &[
        "impl_item",
        "trait_item",
        "mod_item",
        "foreign_mod_item",
        "struct_item",
        "enum_item",
    ],
    attached: &["line_comment", "block_comment", "attribute_item"],
    comments: &["line_comment", "block_comment"],
    transparent: &[],
    compounds: &[],
    imports: &["use_declaration", "extern_crate_declaration", "mod_declaration"],
    preamble: &["inner_attribute_item", "attribute_item"],
    aborts_on: None,
};

const GO: Grammar = Grammar {
    languages: &[go],
    functions: &["function_declaration", "method_declaration", "func_literal"],
    classes: &["struct_type", "interface_type"],
    attached: &["comment"],
    comments: &["comment"],
    transparent: &["statement_list", "field_declaration_list"],
    compounds: &[],
    imports: &["package_clause", "import_declaration"],
    preamble: &[],
    aborts_on: None,
};

const JAVA: Grammar = Grammar {
    languages: &[java],
    functions: &[
        "method_declaration",
        "constructor_declaration",
        "compact_constructor_declaration",
        "lambda_expression",
        "static_initializer",
    ],
    classes: &[
        "class_declaration",
        "interface_declaration",
        "enum_declaration",
        "record_declaration",
        "annotation_type_declaration",
        "object_creation_expression",
    ],
    attached: &["line_comment", "block_comment"],
    comments: &["line_comment", "block_comment"],
    transparent: &["enum_body_declarations"],
    compounds: &[],
    imports: &["package_declaration", "import_declaration"],
    preamble: &[],
    aborts_on: None,
};

/// C++, and C: a `.h` file may be either, so C is parsed as C++ when the C grammar finds
/// errors. The kinds are C++'s, a superset of C's.
const CPP: Grammar = Grammar {
    languages: &[cpp],
    functions: &["function_definition", "lambda_expression"],
    classes: &[
        "class_specifier",
        "struct_specifier",
        "union_specifier",
        "enum_specifier",
        "namespace_definition",
        "linkage_specification",
    ],
    // `public:` goes with the member below it.
    attached: &["comment", "access_specifier"],
    comments: &["comment"],
    transparent: PREPROC,
    compounds: &[],
    imports: &["preproc_include", "using_declaration", "namespace_alias_definition"],
    preamble: &["preproc_def", "preproc_function_def", "preproc_call"],
    aborts_on: None,
};

const C: Grammar = Grammar {
    languages: &[c, cpp],
    ..CPP
};

const CSHARP: Grammar = Grammar {
    languages: &[csharp],
    functions: &[
        "method_declaration",
        "constructor_declaration",
        "destructor_declaration",
        "operator_declaration",
        "conversion_operator_declaration",
        "local_function_statement",
        "lambda_expression",
        "anonymous_method_expression",
        "accessor_declaration",
    ],
    classes: &[
        "class_declaration",
        "struct_declaration",
        "interface_declaration",
        "record_declaration",
        "enum_declaration",
        "namespace_declaration",
        "property_declaration",
    ],
    attached: &["comment"],
    comments: &["comment"],
    transparent: &[
        "preproc_if",
        "preproc_else",
        "preproc_elif",
        "preproc_region",
        "preproc_endregion",
    ],
    compounds: &[],
    imports: &[
        "using_directive",
        "file_scoped_namespace_declaration",
        "extern_alias_directive",
    ],
    preamble: &["global_attribute"],
    aborts_on: None,
};

const RUBY: Grammar = Grammar {
    languages: &[ruby],
    functions: &["method", "singleton_method", "do_block", "block", "lambda"],
    classes: &["class", "module", "singleton_class"],
    attached: &["comment"],
    comments: &["comment"],
    transparent: &[],
    compounds: &[],
    imports: &["require"],
    preamble: &[],
    aborts_on: Some(ruby_heredoc_word_too_long),
};

const PHP: Grammar = Grammar {
    languages: &[php],
    functions: &[
        "function_definition",
        "method_declaration",
        "anonymous_function",
        "arrow_function",
    ],
    classes: &[
        "class_declaration",
        "interface_declaration",
        "trait_declaration",
        "enum_declaration",
        "namespace_definition",
        "anonymous_class",
    ],
    attached: &["comment", "attribute_list"],
    comments: &["comment"],
    transparent: &[],
    compounds: &[],
    imports: &[
        "php_tag",
        "namespace_use_declaration",
        "require",
        "namespace_definition",
    ],
    preamble: &["declare_statement"],
    aborts_on: None,
};

impl Grammar {
    /// The grammar of `language`, when rlm has one.
    pub(crate) fn of(language: Language) -> Option<&'static Grammar> {
        Some(match language {
            Language::Python => &PYTHON,
            Language::JavaScript => &JAVASCRIPT,
            Language::TypeScript => &TYPESCRIPT,
            Language::Rust => &RUST,
            Language::Go => &GO,
            Language::Java => &JAVA,
            Language::C => &C,
            Language::Cpp => &CPP,
            Language::CSharp => &CSHARP,
            Language::Ruby => &RUBY,
            Language::Php => &PHP,
            Language::Kotlin
            | Language::Scala
            | Language::Swift
            | Language::Zig
            | Language::Lua
            | Language::Elixir
            | Language::Haskell
            | Language::OCaml
            | Language::Shell => return None,
        })
    }

    /// The syntax tree of `text`: by the first of the grammar's languages that parses it
    /// without an error, else by the one with the smallest error (tree-sitter recovers
    /// from errors, so a tree is always had unless the parser refuses the language).
    ///
    /// No tree (the file is then cut by the lines' rules) for text no parse should be
    /// trusted with: text a grammar's scanner would abort the process on
    /// ([`Grammar::aborts_on`]), brackets opened more than [`MAX_NESTING`] deep (tree-sitter's
    /// error recovery is quadratic in the depth of what is left open: 76 KB of C with 20,000
    /// calls never closed took over a minute and 6 GB), a tree deeper than [`MAX_NESTING`]
    /// (the walks over it recurse), and a parse that overran [`parse_deadline`] (tree-sitter
    /// recovers from errors for minutes on text that is no code of its language: 4 KB of
    /// random symbols named `.ts`).
    pub(crate) fn parse(&'static self, text: &str) -> Option<Tree> {
        let brackets = bracket_depth(text);
        if brackets > MAX_NESTING || self.aborts_on.is_some_and(|aborts| aborts(text, brackets)) {
            return None;
        }
        let deadline = Instant::now() + parse_deadline(text.len());
        let owned = text.to_owned();
        let tree = within(deadline + PARSE_GRACE, move || self.parse_until(&owned, deadline)).unwrap_or_else(|| {
            tracing::debug!(
                bytes = text.len(),
                "a parse overran its deadline; the file is cut by lines"
            );
            None
        })?;
        (tree_depth(&tree) <= MAX_NESTING).then_some(tree)
    }

    /// [`Grammar::parse`] on this thread, giving up between tree-sitter's steps once
    /// `deadline` has passed.
    fn parse_until(&self, text: &str, deadline: Instant) -> Option<Tree> {
        let mut best: Option<(usize, Tree)> = None;
        let bytes = text.as_bytes();
        for language in self.languages {
            let mut parser = Parser::new();
            parser.set_language(&language()).ok()?;
            let mut past_deadline = |_: &tree_sitter::ParseState| {
                if Instant::now() > deadline {
                    std::ops::ControlFlow::Break(())
                } else {
                    std::ops::ControlFlow::Continue(())
                }
            };
            let options = tree_sitter::ParseOptions::new().progress_callback(&mut past_deadline);
            let read = &mut |i: usize, _| bytes.get(i..).unwrap_or_default();
            let Some(tree) = parser.parse_with_options(read, None, Some(options)) else {
                continue;
            };
            if !tree.root_node().has_error() {
                return Some(tree);
            }
            let errors = error_bytes(tree.root_node());
            if best.as_ref().is_none_or(|(e, _)| errors < *e) {
                best = Some((errors, tree));
            }
        }
        best.map(|(_, tree)| tree)
    }

    fn is_function(&self, node: Node<'_>) -> bool {
        self.functions.contains(&node.kind()) && node.child_by_field_name("body").is_some()
    }

    fn is_class(&self, node: Node<'_>) -> bool {
        self.classes.contains(&node.kind())
    }

    pub(crate) fn is_comment(&self, node: Node<'_>) -> bool {
        self.comments.contains(&node.kind())
    }

    fn is_attached(&self, node: Node<'_>) -> bool {
        self.attached.contains(&node.kind())
    }

    fn is_compound(&self, node: Node<'_>) -> bool {
        self.compounds.contains(&node.kind())
    }

    fn is_transparent(&self, node: Node<'_>) -> bool {
        self.transparent.contains(&node.kind())
    }
}

/// How many bytes of `node` are in ERROR or MISSING nodes.
fn error_bytes(node: Node<'_>) -> usize {
    // A walk with a stack of its own: a tree may be thousands of nodes deep.
    let mut bytes = 0;
    let mut stack = vec![node];
    while let Some(node) = stack.pop() {
        if node.is_error() || node.is_missing() {
            bytes += node.byte_range().len().max(1);
        } else if node.has_error() {
            let mut cursor = node.walk();
            stack.extend(node.children(&mut cursor));
        }
    }
    bytes
}

/// The 1-based first line of `node`.
pub(crate) fn first_line(node: Node<'_>) -> usize {
    node.start_position().row + 1
}

/// The 1-based last line of `node`: a node that ends with its line's newline (a C
/// `#include`) ends on that line, not the next.
pub(crate) fn last_line(node: Node<'_>) -> usize {
    let (start, end) = (node.start_position(), node.end_position());
    if end.column == 0 && end.row > start.row {
        end.row
    } else {
        end.row + 1
    }
}

/// The text of `node` in `text`.
pub(crate) fn node_text<'t>(node: Node<'_>, text: &'t str) -> &'t str {
    text.get(node.byte_range()).unwrap_or("")
}

#[cfg(test)]
#[path = "code_grammar_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "items_tests.rs"]
mod items_tests;

//! The cases of issue 26, each cut by the grammar, and a property over generated code: no
//! cut inside a function that fits, a function cut only with its signature repeated, no
//! cut inside a string.

use proptest::prelude::*;

use crate::content::chunk::tests::{content_matches, covers_all_lines};
use crate::content::chunk::{chunk, Chunk, ChunkOptions, ChunkStrategy};
use crate::content::content_type::{ContentType, Language};
use crate::content::detect::Detection;
use crate::content::line_index::LineIndex;
use crate::content::line_range::LineRange;

fn chunks_of(language: Language, text: &str, tokens: u64) -> Vec<Chunk> {
    let opts = ChunkOptions {
        max_chunk_tokens: tokens,
        ..ChunkOptions::default()
    };
    let chunks = chunk(&Detection::given(ContentType::SourceCode, Some(language)), text, &opts);
    assert!(covers_all_lines(&chunks, LineIndex::new(text).len()));
    for c in &chunks {
        assert!(content_matches(c, text), "chunk {} does not hold its lines", c.index);
    }
    chunks
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).map(|i| i + 1).unwrap()
}

#[test]
fn a_java_method_that_fits_without_its_javadoc_is_kept_whole_the_javadoc_goes_before() {
    let mut text = String::from("package a;\n\nimport java.util.List;\n\npublic class Repo {\n");
    for m in 0..3 {
        text.push_str("    /**\n");
        for i in 0..35 {
            text.push_str(&format!(
                "     * Line {i} of a long explanation of what method {m} does.\n"
            ));
        }
        text.push_str("     */\n");
        text.push_str(&format!("    public int method{m}(int x) {{\n"));
        for i in 0..70 {
            text.push_str(&format!("        x = x + {i}; // step {i}\n"));
        }
        text.push_str("        return x;\n    }\n\n");
    }
    text.push_str("}\n");
    // A budget the method fits but not with its javadoc.
    let chunks = chunks_of(Language::Java, &text, 1_400);
    for m in 0..3 {
        let signature = line_of(&text, &format!("public int method{m}"));
        let holder = chunks.iter().find(|c| c.lines().contains(signature)).unwrap();
        assert_eq!(holder.context.strategy, ChunkStrategy::Boundaries);
        assert!(
            holder.lines().contains(signature + 72),
            "method {m} is cut: {:?}",
            holder.lines()
        );
    }
    assert!(chunks
        .iter()
        .all(|c| c.context.note.is_none() || !c.context.note.as_deref().unwrap_or("").contains("windows")));
}

#[test]
fn a_typescript_parameter_named_namespace_is_no_namespace() {
    let mut text = String::from("import { h } from './h';\n\nexport function createElement(\n  tag: string,\n  namespace: ElementNamespace,\n  isCustom?: boolean,\n): Element {\n");
    for i in 0..120 {
        text.push_str(&format!("  const v{i} = h(tag, namespace, {i});\n"));
    }
    text.push_str("  return el;\n}\n");
    let chunks = chunks_of(Language::TypeScript, &text, 800);
    assert!(chunks.len() >= 3);
    for c in &chunks[1..] {
        assert_eq!(c.context.header, vec![LineRange::new(3, 7)], "chunk {}", c.index);
        assert!(c.content.contains("export function createElement(\n"));
        assert_eq!(c.context.strategy, ChunkStrategy::Boundaries);
    }
}

#[test]
fn nested_describes_and_a_method_in_a_class_repeat_every_header() {
    let mut text =
        String::from("import { render } from './render';\n\ndescribe('outer', () => {\n  describe('inner', () => {\n");
    for t in 0..6 {
        text.push_str(&format!("    it('case {t}', () => {{\n"));
        for i in 0..25 {
            text.push_str(&format!("      expect(render(<p>{t} {i}</p>)).toBe('{i}');\n"));
        }
        text.push_str("    });\n");
    }
    text.push_str("  });\n});\n\nclass Store {\n  load(items: string[]) {\n");
    for i in 0..120 {
        text.push_str(&format!("    this.items.push(items[{i}]);\n"));
    }
    text.push_str("  }\n}\n");
    let chunks = chunks_of(Language::TypeScript, &text, 700);
    let outer = line_of(&text, "describe('outer'");
    let inner = line_of(&text, "describe('inner'");
    let class = line_of(&text, "class Store");
    let load = line_of(&text, "load(items");
    for c in &chunks {
        if c.start_line > inner + 1 && c.start_line < class - 3 {
            assert_eq!(
                c.context.header,
                vec![LineRange::new(outer, outer), LineRange::new(inner, inner)],
                "chunk {}",
                c.index
            );
        }
        if c.start_line > load + 1 {
            assert_eq!(
                c.context.header,
                vec![LineRange::new(class, class), LineRange::new(load, load)],
                "chunk {}",
                c.index
            );
        }
    }
}

#[test]
fn cpp_includes_under_conditionals_are_the_import_block() {
    let mut text = String::from(
        "// fmt-like\n#ifndef LIB_H_\n#define LIB_H_\n\n#include \"base.h\"\n\n#ifndef LIB_MODULE\n#  include <atomic>\n#  if LIB_HAS_INCLUDE(<variant>)\n#    include <variant>\n#  endif\n#endif  // LIB_MODULE\n\nnamespace lib {\n",
    );
    for f in 0..8 {
        text.push_str(&format!("int f{f}(int x) {{\n"));
        for i in 0..20 {
            text.push_str(&format!("  x += {i};\n"));
        }
        text.push_str("  return x;\n}\n\n");
    }
    text.push_str("}  // namespace lib\n#endif\n");
    let chunks = chunks_of(Language::Cpp, &text, 450);
    assert!(chunks.len() >= 3);
    for c in &chunks[1..] {
        assert_eq!(c.context.prepended, Some(LineRange::new(5, 12)), "chunk {}", c.index);
    }
}

#[test]
fn a_window_does_not_end_inside_a_multi_line_string() {
    let mut text = String::from("def f():\n    x = [\n");
    for i in 0..60 {
        text.push_str(&format!(
            "        \"\"\"text {i}\n        more text {i}\n        end {i}\"\"\",\n"
        ));
    }
    text.push_str("    ]\n    return x\n");
    let chunks = chunks_of(Language::Python, &text, 300);
    let index = LineIndex::new(&text);
    let windows: Vec<&Chunk> = chunks
        .iter()
        .filter(|c| c.context.strategy == ChunkStrategy::Windows)
        .collect();
    assert!(windows.len() >= 2);
    for w in windows {
        assert!(w
            .context
            .note
            .as_deref()
            .unwrap_or("")
            .contains("one item longer than a chunk"));
        let last = index.line(w.end_line).trim_start();
        assert!(
            last.starts_with("end ") || !last.starts_with("more"),
            "window ends inside a string: {last}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// A property over generated JavaScript.

/// A generated top-level item: a function of `statements` lines (some of them a template
/// literal over three lines), or a class of methods.
#[derive(Debug, Clone)]
enum Generated {
    Function { statements: Vec<bool> },
    Class { methods: Vec<Vec<bool>> },
}

fn item_strategy() -> impl Strategy<Value = Generated> {
    let statements = prop::collection::vec(any::<bool>(), 1..40);
    prop_oneof![
        statements
            .clone()
            .prop_map(|statements| Generated::Function { statements }),
        prop::collection::vec(statements, 1..5).prop_map(|methods| Generated::Class { methods }),
    ]
}

/// The source, and every function's lines (from its doc comment) with the line of its
/// signature.
fn render(items: &[Generated]) -> (String, Vec<(LineRange, usize)>) {
    let mut text = String::from("import { a } from './a';\nimport b from './b';\n\n");
    let mut functions = Vec::new();
    let mut line = 4;
    let push = |text: &mut String, s: &str, line: &mut usize| {
        text.push_str(s);
        *line += s.matches('\n').count();
    };
    let body = |text: &mut String, statements: &[bool], indent: &str, line: &mut usize| {
        for (i, &template) in statements.iter().enumerate() {
            if template {
                push(
                    text,
                    &format!("{indent}const t{i} = `first {i}\n{{ not code }}\n}} last`;\n"),
                    line,
                );
            } else {
                push(text, &format!("{indent}a.call({i}, '{{', \"}}\");\n"), line);
            }
        }
    };
    for (n, item) in items.iter().enumerate() {
        match item {
            Generated::Function { statements } => {
                let start = line;
                push(
                    &mut text,
                    &format!("/** Function {n}. */\nfunction f{n}(x) {{\n"),
                    &mut line,
                );
                body(&mut text, statements, "  ", &mut line);
                push(&mut text, "}\n", &mut line);
                functions.push((LineRange::new(start, line - 1), start + 1));
            }
            Generated::Class { methods } => {
                push(&mut text, &format!("class C{n} {{\n"), &mut line);
                for (m, statements) in methods.iter().enumerate() {
                    let start = line;
                    push(&mut text, &format!("  m{m}(x) {{\n"), &mut line);
                    body(&mut text, statements, "    ", &mut line);
                    push(&mut text, "  }\n", &mut line);
                    functions.push((LineRange::new(start, line - 1), start));
                }
                push(&mut text, "}\n", &mut line);
            }
        }
        push(&mut text, "\n", &mut line);
    }
    (text, functions)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn cuts_fall_between_items_or_between_statements_of_a_function_too_big(
        items in prop::collection::vec(item_strategy(), 1..8),
        tokens in 150u64..1_500,
    ) {
        let (text, functions) = render(&items);
        let chunks = chunks_of(Language::JavaScript, &text, tokens);
        let max_bytes = ChunkOptions { max_chunk_tokens: tokens, ..ChunkOptions::default() }.max_bytes();
        let index = LineIndex::new(&text);
        for pair in chunks.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            if b.partial_line.is_some() || a.partial_line.is_some() || b.context.strategy == ChunkStrategy::Windows {
                continue;
            }
            let cut = b.start_line;
            // Never inside a template literal.
            let line_above = index.line(cut - 1);
            prop_assert!(!line_above.contains("`first") && !line_above.contains("{ not code }"), "cut inside a string at {cut}");
            for &(f, signature) in functions.iter().filter(|(f, _)| f.start < cut && cut <= f.end) {
                // Inside a function's code only when the code with a class header line and
                // the markers would not fit, with its signature repeated.
                if cut <= signature {
                    // Between a doc comment and its function: the comment went before.
                    continue;
                }
                let code = index.slice(signature, f.end).len();
                prop_assert!(code + 3 * 128 + 40 > max_bytes, "function {f} ({code} B) cut at {cut} under a budget of {max_bytes} B");
                // The signature repeated, or (a budget too small for it) the note naming it.
                let named = b.context.note.as_deref().is_some_and(|n| n.contains("the headers at lines") && n.contains(&format!("{signature}–{signature}")));
                prop_assert!(
                    b.context.header.iter().any(|h| h.contains(signature)) || named,
                    "function {f} cut at {cut} without its signature: {:?} {:?}", b.context.header, b.context.note
                );
            }
        }
    }
}

#[test]
fn a_ruby_heredoc_word_too_long_for_the_scanner_is_cut_by_the_lines_rules_and_a_shorter_one_by_the_grammar() {
    // tree-sitter-ruby aborts the process on a heredoc word of 256 characters or more.
    let grammar = super::Grammar::of(Language::Ruby).unwrap();
    let methods: String = (0..60).map(|i| format!("def f{i}\n  {i}\nend\n")).collect();
    for (word, parsed) in [
        (format!("\"{}\"", "a".repeat(300)), false),
        (format!("'{}", "é".repeat(256)), false),
        (format!("~{}", "b_".repeat(128)), false),
        (format!("\"{}\"", "a".repeat(255)), true),
        (format!("-{}", "b".repeat(255)), true),
    ] {
        let text = format!(
            "x = <<{word}\nbody\n{}\n{methods}",
            word.trim_matches(['"', '\'', '-', '~'])
        );
        assert_eq!(grammar.parse(&text).is_some(), parsed, "<<{word}");
        let chunks = chunks_of(Language::Ruby, &text, 200);
        assert!(chunks.len() > 1);
    }
    assert!(grammar.parse("a <<<< b\n").is_some());
    // Heredocs opened on one line whose state comes to 1,025 bytes overran the runtime's
    // buffer (an assert in tree-sitter's parser.c); a few of ordinary length are parsed.
    let mut words: Vec<String> = (0..4).map(|i| format!("<<W{i}{}", "x".repeat(185))).collect();
    words.push(format!("<<Z{}", "y".repeat(254)));
    let text = format!("f({})\nbody\n{methods}", words.join(", "));
    assert!(grammar.parse(&text).is_none());
    assert!(chunks_of(Language::Ruby, &text, 200).len() > 1);
    assert!(grammar.parse("f(<<A, <<~B, <<-'C')\na\nA\nb\nB\nc\nC\n").is_some());
    // So did string literals opened one inside another, then a heredoc.
    for (depth, word) in [(200, 19), (199, 19), (201, 17)] {
        let text = format!("x = {}\nf(<<{})\nbody\n", "\"#{".repeat(depth), "W".repeat(word));
        assert!(grammar.parse(&text).is_none());
    }
}

#[test]
fn brackets_left_open_deeper_than_any_code_are_cut_by_the_lines_rules_in_every_language() {
    // 20,000 calls opened and never closed, in C: tree-sitter's error recovery took minutes
    // and gigabytes inside one step, where it never asks whether to go on.
    let filler: String = (0..60).map(|i| format!("int x{i} = {i};\n")).collect();
    let stuck = format!("x = {}\n{filler}", "%w(".repeat(20_000));
    // Deep and closed, with an error at the bottom: the walk over the tree's errors
    // recursed once a level and overflowed its thread's stack.
    let deep = |open: &str, close: &str| format!("x = {}1 +{};\n{filler}", open.repeat(5_000), close.repeat(5_000));
    let cases = [
        (Language::C, stuck.clone()),
        (
            Language::Java,
            format!("class A {{ void f() {{ {} }} }}\n{filler}", "%w(".repeat(5_000)),
        ),
        (Language::Python, deep("[", "]")),
        (Language::JavaScript, deep("[", "]")),
        (Language::TypeScript, deep("[", "]")),
        (Language::Ruby, deep("[", "]")),
        (Language::CSharp, deep("[", "]")),
        (
            Language::Go,
            format!("package a\nfunc f() {{ {} }}\n{filler}", deep("(", ")")),
        ),
        (Language::Cpp, format!("int {}", deep("(", ")"))),
        (Language::Php, format!("<?php ${}", deep("(", ")"))),
        (Language::Rust, format!("fn f() {{ {} }}\n", deep("{a: ", "}"))),
    ];
    for (language, text) in cases {
        let grammar = super::Grammar::of(language).unwrap();
        assert!(grammar.parse(&text).is_none(), "{language:?}");
        let chunks = chunks_of(language, &text, 2_000);
        assert!(chunks.len() > 1, "{language:?}");
    }
    // Up to the bound, brackets are code.
    let nested = format!("x = {}1{}\n", "[".repeat(200), "]".repeat(200));
    assert!(super::Grammar::of(Language::Python).unwrap().parse(&nested).is_some());
}

#[test]
fn a_tree_deeper_than_any_code_is_cut_by_the_lines_rules() {
    // Python `if`s nested 600 deep, one space an indent: no bracket, and a tree over a
    // thousand nodes deep, which the walks over it would recurse through.
    let text: String = (0..600)
        .map(|d| format!("{}if x{d}:\n", " ".repeat(d)))
        .collect::<String>()
        + &" ".repeat(600)
        + "pass\n";
    let grammar = super::Grammar::of(Language::Python).unwrap();
    assert!(grammar.parse(&text).is_none());
    let shallow: String = (0..50)
        .map(|d| format!("{}if x{d}:\n", " ".repeat(d)))
        .collect::<String>()
        + &" ".repeat(50)
        + "pass\n";
    assert!(grammar.parse(&shallow).is_some());
}

#[test]
fn preprocessor_conditionals_nested_deep_are_flattened_in_time_linear_in_their_depth() {
    // Deciding whether a conditional is an import by flattening it again for each one
    // around it doubled the work at each level: 20 levels took 14 s, these 60 would take
    // years.
    let filler: String = (0..40).map(|i| format!("int x{i} = {i};\n")).collect();
    for (language, open, inner, close) in [
        (Language::C, "#ifdef A\n", "int x;\n", "#endif\n"),
        (Language::Cpp, "#if A\nint a;\n#else\n", "int x;\n", "#endif\n"),
        (Language::CSharp, "#if A\n", "class A {}\n", "#endif\n"),
    ] {
        let text = format!("{}{inner}{}{filler}", open.repeat(60), close.repeat(60));
        let chunks = chunks_of(language, &text, 200);
        assert!(!chunks.is_empty(), "{language:?}");
    }
    // A conditional of includes is still one import, kept whole.
    let text = "#ifdef _WIN32\n#ifdef X\n#include <windows.h>\n#endif\n#endif\nint main() { return 0; }\n";
    let grammar = super::Grammar::of(Language::Cpp).unwrap();
    let tree = grammar.parse(text).unwrap();
    let top = grammar.top_nodes_with_roles(tree.root_node(), text);
    assert_eq!(top[0].1, super::import_block::Role::Import);
    assert_eq!(top[0].0.kind(), "preproc_ifdef");
}

#[test]
fn work_past_its_deadline_is_not_waited_for() {
    let start = std::time::Instant::now();
    let slow = super::within(start + std::time::Duration::from_millis(50), || {
        std::thread::sleep(std::time::Duration::from_secs(30));
        1
    });
    assert_eq!(slow, None);
    assert!(start.elapsed() < std::time::Duration::from_secs(20));
    let fast = super::within(std::time::Instant::now() + std::time::Duration::from_secs(30), || 2);
    assert_eq!(fast, Some(2));
}

#[test]
fn no_work_starts_while_the_most_left_past_their_deadline_still_run() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    // A counter of its own: the parses of other tests count in the process's.
    static LEFT: AtomicUsize = AtomicUsize::new(0);
    let release = Arc::new(AtomicBool::new(false));
    let stuck = || {
        let release = release.clone();
        move || {
            while !release.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(5));
            }
            0
        }
    };
    let soon = || Instant::now() + Duration::from_millis(20);
    assert_eq!(super::deadline::within_counted(soon(), stuck(), &LEFT, 2), None);
    assert_eq!(super::deadline::within_counted(soon(), stuck(), &LEFT, 2), None);
    assert_eq!(LEFT.load(Ordering::Acquire), 2);
    // Two are left running: the next is not started, however long it may take.
    let ran = Arc::new(AtomicBool::new(false));
    let later = Instant::now() + Duration::from_secs(30);
    let marked = ran.clone();
    let refused = super::deadline::within_counted(later, move || marked.store(true, Ordering::Release), &LEFT, 2);
    assert_eq!(refused, None);
    std::thread::sleep(Duration::from_millis(50));
    assert!(!ran.load(Ordering::Acquire), "work started while two were left running");
    // Once they end, work starts again.
    release.store(true, Ordering::Release);
    let until = Instant::now() + Duration::from_secs(20);
    while LEFT.load(Ordering::Acquire) > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(LEFT.load(Ordering::Acquire), 0);
    assert_eq!(super::deadline::within_counted(later, || 4, &LEFT, 2), Some(4));
}

#[test]
fn scanner_state_a_grammar_cannot_hold_is_cut_by_the_lines_rules() {
    // Each aborted the process (tree-sitter's `length <= 1024` assert in parser.c).
    let filler: String = (0..40).map(|i| format!("y{i} = {i}\n")).collect();
    // Ruby heredocs opened inside another heredoc's body stay open across lines.
    let a = "a".repeat(250);
    let ruby = format!(
        "x = <<A\n#{{<<{a} + <<{a}}}\n#{{<<{a} + <<{}}}\n{filler}",
        "b".repeat(252)
    );
    assert!(super::Grammar::of(Language::Ruby).unwrap().parse(&ruby).is_none());
    assert!(chunks_of(Language::Ruby, &ruby, 200).len() > 1);
    // Python blocks 511 deep, then a string.
    let python: String = (0..511)
        .map(|i| format!("{}if a:\n", " ".repeat(i)))
        .collect::<String>()
        + &" ".repeat(511)
        + "x = \"s\"\n"
        + &filler;
    assert!(super::Grammar::of(Language::Python).unwrap().parse(&python).is_none());
    assert!(chunks_of(Language::Python, &python, 2_000).len() > 1);
    // Ordinary nesting and heredocs are parsed.
    let shallow: String =
        (0..40).map(|i| format!("{}if a:\n", " ".repeat(i))).collect::<String>() + &" ".repeat(40) + "x = \"s\"\n";
    assert!(super::Grammar::of(Language::Python).unwrap().parse(&shallow).is_some());
    let heredocs: String = (0..30).map(|i| format!("q{i} = <<~SQL\n  select {i}\nSQL\n")).collect();
    assert!(super::Grammar::of(Language::Ruby).unwrap().parse(&heredocs).is_some());
}

#[test]
fn a_long_run_of_comments_is_grouped_in_time_linear_in_its_length() {
    // Each comment asked again whether every node before it was a comment: 20,000 lines
    // of `//` took 14 s; these 100,000 would take six minutes.
    let text = "// c\n".repeat(100_000) + "int f() { return 0; }\n" + "int x = 1;\n";
    let chunks = chunks_of(Language::C, &text, 2_000);
    assert!(chunks.len() > 1);
}

//! Every cut checked against a real parser: large files from real projects in each language
//! with a grammar (`data/code_grammar/`, licenses in its README) are planned through the
//! binary with `--dry-run --json` at small budgets, and each place where one chunk ends and
//! the next begins is judged on tree-sitter's tree of the file, parsed here on its own:
//!
//! - every node the cut falls inside (it starts above the cut and ends below it) is
//!   announced: the line naming it (past its decorators and annotations) is in one of the
//!   headers prepended to the chunk after the cut — so the cut is between the members of a
//!   class, namespace or `describe` callback, or between the top-level statements of a
//!   function, with the whole chain of headers repeated;
//! - a function the cut falls inside is bigger than any chunk of the file (so it did not
//!   fit the budget);
//! - only windows (their note naming the item) may cut inside a node that is not
//!   announced, and then the item is one statement bigger than any chunk;
//! - a C/C++ conditional around the whole file (an include guard) or around declarations
//!   is not a node the cut is inside: its lines are not a block;
//! - every chunk after the import block carries it, or its note says why not.

use std::collections::HashSet;

use crate::support::mock_llm::*;
use crate::support::*;
use serde_json::Value;
use tree_sitter::{Language, Node, Parser, Tree};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/data/code_grammar");

/// A fixture, the grammars to parse it with (the first without error wins) and the
/// smallest number of chunks it must be cut into at the smallest budget.
fn fixtures() -> Vec<(&'static str, Vec<Language>)> {
    let c: Language = tree_sitter_c::LANGUAGE.into();
    let cpp: Language = tree_sitter_cpp::LANGUAGE.into();
    vec![
        ("dataclasses.py", vec![tree_sitter_python::LANGUAGE.into()]),
        ("textwrap.py", vec![tree_sitter_python::LANGUAGE.into()]),
        ("ts_define_grammar.js", vec![tree_sitter_javascript::LANGUAGE.into()]),
        (
            "vue_renderer.ts",
            vec![tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into()],
        ),
        (
            "use-swr-config.test.tsx",
            vec![tree_sitter_typescript::LANGUAGE_TSX.into()],
        ),
        ("tokio_mutex.rs", vec![tree_sitter_rust::LANGUAGE.into()]),
        ("gin_context.go", vec![tree_sitter_go::LANGUAGE.into()]),
        ("GsonBuilder.java", vec![tree_sitter_java::LANGUAGE.into()]),
        ("tree_sitter_subtree.c", vec![c.clone(), cpp.clone()]),
        ("fmt_std.h", vec![c.clone(), cpp.clone()]),
        ("fmt_os.h", vec![c, cpp]),
        ("AutoMapperConstructors.cs", vec![tree_sitter_c_sharp::LANGUAGE.into()]),
        ("sinatra_base.rb", vec![tree_sitter_ruby::LANGUAGE.into()]),
        ("CurlFactory.php", vec![tree_sitter_php::LANGUAGE_PHP.into()]),
    ]
}

/// The tree of the first grammar that parses `text` without an error, else of the one with
/// the fewest bytes in errors.
fn parse(text: &str, languages: &[Language]) -> Tree {
    fn error_bytes(n: Node<'_>) -> usize {
        if n.is_error() || n.is_missing() {
            return n.byte_range().len().max(1);
        }
        let mut cursor = n.walk();
        n.children(&mut cursor).filter(|c| c.has_error()).map(error_bytes).sum()
    }
    let mut best: Option<(usize, Tree)> = None;
    for language in languages {
        let mut parser = Parser::new();
        parser.set_language(language).unwrap();
        let tree = parser.parse(text, None).unwrap();
        let errors = error_bytes(tree.root_node());
        if errors == 0 {
            return tree;
        }
        if best.as_ref().is_none_or(|(e, _)| errors < *e) {
            best = Some((errors, tree));
        }
    }
    best.unwrap().1
}

fn first_line(n: Node<'_>) -> usize {
    n.start_position().row + 1
}

fn last_line(n: Node<'_>) -> usize {
    let (s, e) = (n.start_position(), n.end_position());
    if e.column == 0 && e.row > s.row {
        e.row
    } else {
        e.row + 1
    }
}

/// The line that names `n`: its first token outside decorators, annotations, attributes
/// and comments.
fn naming_line(n: Node<'_>) -> usize {
    let skipped = |k: &str| {
        ["decorator", "annotation", "attribute", "comment"]
            .iter()
            .any(|s| k.contains(s))
    };
    let mut node = n;
    'down: loop {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if skipped(child.kind()) {
                continue;
            }
            if child.child_count() == 0 {
                return first_line(child);
            }
            node = child;
            continue 'down;
        }
        return first_line(node);
    }
}

/// The nodes the cut before line `cut` falls inside, outermost first: they start above the
/// line and end on or below it. Preprocessor conditionals are not blocks, nor is what the
/// parser could not read (an ERROR node); the body of a node (a Python block, a Ruby
/// body) is not counted apart from it.
fn spanning(tree: &Tree, cut: usize) -> Vec<Node<'_>> {
    let mut out = Vec::new();
    let root = tree.root_node().id();
    let mut node = tree.root_node();
    'down: loop {
        let mut cursor = node.walk();
        for (i, child) in node.children(&mut cursor).enumerate() {
            if first_line(child) < cut && last_line(child) >= cut {
                // The body of a node that is announced is announced with it.
                let body = matches!(node.field_name_for_child(i as u32), Some("body"))
                    || ["block", "body", "_list"].iter().any(|k| child.kind().contains(k));
                let skipped = child.kind().starts_with("preproc_") || child.is_error() || (body && node.id() != root);
                if !skipped {
                    out.push(child);
                }
                node = child;
                continue 'down;
            }
        }
        return out;
    }
}

fn is_function(kind: &str) -> bool {
    [
        "function",
        "method",
        "arrow",
        "lambda",
        "closure",
        "constructor",
        "do_block",
    ]
    .iter()
    .any(|s| kind.contains(s))
        && !kind.contains("signature")
        && !kind.contains("call")
        && !kind.contains("invocation")
}

/// `(start, end)` of each context span of a unit's chunk with `role`.
fn spans(unit: &Value, role: &str) -> Vec<(usize, usize)> {
    unit["chunk"]["context_lines"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|s| s["role"] == role)
                .map(|s| (as_usize(&s["start_line"]), as_usize(&s["end_line"])))
                .collect()
        })
        .unwrap_or_default()
}

fn as_usize(v: &Value) -> usize {
    v.as_u64().unwrap_or(0) as usize
}

/// `A–B` of a note "lines A–B are one item longer than a chunk…".
fn windowed_item(note: &str) -> Option<(usize, usize)> {
    let rest = note.strip_prefix("lines ")?;
    let (range, tail) = rest.split_once(' ')?;
    tail.starts_with("are one item longer than a chunk")
        .then(|| range.split_once('–'))
        .flatten()
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
}

/// The cuts of one file's plan judged on its tree; the problems found, and how many cuts.
fn judge(name: &str, text: &str, tree: &Tree, units: &[&Value]) -> (Vec<String>, usize) {
    let lines: Vec<&str> = text.lines().collect();
    let bytes = |a: usize, b: usize| -> usize { lines[a - 1..b].iter().map(|l| l.len() + 1).sum() };
    let largest = units
        .iter()
        .map(|u| u["content"].as_str().map_or(0, str::len))
        .max()
        .unwrap_or(0);
    let mut problems = Vec::new();
    let mut cuts = 0;
    for pair in units.windows(2) {
        let (a, b) = (&pair[0]["chunk"], &pair[1]["chunk"]);
        let cut = as_usize(&b["start_line"]);
        // What the chunk after the cut carries besides its own lines: a node that would
        // have fit with it is no reason to cut.
        let own = bytes(cut, as_usize(&b["end_line"]));
        let prefix = pair[1]["content"].as_str().map_or(0, str::len).saturating_sub(own);
        let fits = |n: Node<'_>| bytes(first_line(n), last_line(n)) + prefix <= largest;
        if !b["partial_line"].is_null() || !a["partial_line"].is_null() {
            continue;
        }
        cuts += 1;
        let headers = spans(pair[1], "enclosing_header");
        // Headers the budget had no room for are named in the note: said, not silent.
        let note = b["note"].as_str().unwrap_or("");
        let said: Vec<(usize, usize)> = note
            .split_once("the headers at lines ")
            .map(|(_, rest)| {
                rest.split(" are not prepended")
                    .next()
                    .unwrap_or("")
                    .split(", ")
                    .filter_map(|r| r.split_once('–'))
                    .filter_map(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
                    .collect()
            })
            .unwrap_or_default();
        let announced = |n: Node<'_>| {
            let line = naming_line(n);
            line >= cut || headers.iter().chain(&said).any(|&(s, e)| s <= line && line <= e)
        };
        let window = b["strategy"] == "windows" && (a["strategy"] == "windows" || as_usize(&a["end_line"]) >= cut);
        let item = b["note"].as_str().and_then(windowed_item);
        for n in spanning(tree, cut) {
            if announced(n) {
                if is_function(n.kind()) && fits(n) {
                    problems.push(format!(
                        "{name}: cut before line {cut} inside {} at {}–{}, which fits a chunk",
                        n.kind(),
                        first_line(n),
                        last_line(n)
                    ));
                }
                continue;
            }
            match item {
                Some((start, end)) if window && first_line(n) >= start && last_line(n) <= end => {
                    if fits(n) {
                        problems.push(format!(
                            "{name}: windows at line {cut} over {} at {}–{}, which fits a chunk",
                            n.kind(),
                            first_line(n),
                            last_line(n)
                        ));
                    }
                }
                _ => problems.push(format!(
                    "{name}: cut before line {cut} inside {} at {}–{}, not announced (headers {headers:?}, note {note:?}): {:?}",
                    n.kind(),
                    first_line(n),
                    last_line(n),
                    lines.get(cut - 1)
                )),
            }
            break;
        }
    }
    // The import block goes with every later chunk, or the note says why not.
    if let Some(&(_, end)) = units
        .iter()
        .flat_map(|u| spans(u, "import_block"))
        .collect::<Vec<_>>()
        .first()
    {
        for u in units {
            let c = &u["chunk"];
            let after = as_usize(&c["start_line"]) > end;
            let said = c["note"].as_str().is_some_and(|n| n.contains("import block"));
            if after && spans(u, "import_block").is_empty() && !said && c["partial_line"].is_null() {
                problems.push(format!(
                    "{name}: the chunk at line {} lacks the import block",
                    c["start_line"]
                ));
            }
        }
    }
    (problems, cuts)
}

/// The units of `rlm batch PATTERN --dry-run --json` at a context window of `window`
/// tokens, against the mock's address (a dry run calls nothing).
fn planned_units(project: &Project, pattern: &str, window: &str) -> Vec<Value> {
    let mock = MockLlm::start();
    let out = project
        .rlm(&[
            "batch",
            pattern,
            "Review {file}",
            "--dry-run",
            "--json",
            "--context-window",
            window,
            "--base-url",
            &mock.url(),
            "--provider",
            "openai",
        ])
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(0);
    out.json()["units"].as_array().cloned().unwrap_or_default()
}

#[test]
fn every_cut_in_real_files_of_twelve_languages_falls_where_the_parse_tree_allows() {
    let mut project = Project::new();
    let mut texts = Vec::new();
    for (name, _) in fixtures() {
        let text = std::fs::read_to_string(format!("{FIXTURES}/{name}")).unwrap();
        project = project.file(&format!("src/{name}"), &text);
        texts.push(text);
    }
    let mut problems = Vec::new();
    for window in ["6000", "16000"] {
        let units = planned_units(&project, "src/*", window);
        for ((name, languages), text) in fixtures().into_iter().zip(&texts) {
            let path = format!("src/{name}");
            let mine: Vec<&Value> = units
                .iter()
                .filter(|u| u["inputs"][0]["path"] == path.as_str() && u["kind"] == "chunk")
                .collect();
            if window != "6000" && mine.len() < 3 {
                continue;
            }
            assert!(mine.len() >= 3, "{name} at {window}: {} chunks", mine.len());
            let starts: HashSet<usize> = mine.iter().map(|u| as_usize(&u["chunk"]["start_line"])).collect();
            assert!(starts.contains(&1), "{name}: no chunk starts at line 1");
            let tree = parse(text, &languages);
            let (found, cuts) = judge(name, text, &tree, &mine);
            assert!(cuts >= 2, "{name} at {window}: {cuts} cuts");
            eprintln!(
                "{name} at --context-window {window}: {} chunks, {cuts} cuts judged",
                mine.len()
            );
            problems.extend(found.into_iter().map(|p| format!("[{window}] {p}")));
        }
    }
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn cpp_includes_under_if_travel_with_every_later_chunk() {
    let text = std::fs::read_to_string(format!("{FIXTURES}/fmt_std.h")).unwrap();
    let project = Project::new().file("fmt/std.h", &text);
    let units = planned_units(&project, "fmt/std.h", "8000");
    assert!(units.len() >= 3, "{} units", units.len());
    let lines: Vec<&str> = text.lines().collect();
    let atomic = lines.iter().position(|l| l.contains("#  include <atomic>")).unwrap() + 1;
    let version = lines.iter().position(|l| l.contains("#  include <version>")).unwrap() + 1;
    let mut carried = 0;
    for u in &units[1..] {
        let block = spans(u, "import_block");
        let note = u["chunk"]["note"].as_str().unwrap_or("");
        if block.is_empty() {
            assert!(note.contains("import block (lines 11–"), "{}", u["chunk"]);
            continue;
        }
        carried += 1;
        let (start, end) = block[0];
        assert!(start <= atomic && end > version, "{start}–{end}");
        let user = u["prompt"]["user"].as_str().unwrap_or("");
        assert!(user.contains("the file's import block"), "{user}");
    }
    assert!(carried >= 2, "{carried} chunks carry the includes");
}

/// tree-sitter-ruby's scanner aborts the process (a C `assert`) on a heredoc word of 256
/// characters or more; such a file is cut by the lines' rules, and its neighbours by the
/// grammar, in the same run.
#[test]
fn a_ruby_file_whose_heredoc_word_would_abort_the_parser_is_planned_and_cut_all_the_same() {
    let word = "A".repeat(300);
    let methods: String = (0..400).map(|i| format!("def f{i}\n  {i}\nend\n")).collect();
    let hostile = format!("x = <<\"{word}\"\nbody\n{word}\n{methods}");
    let project = Project::new()
        .file("lib/hostile.rb", &hostile)
        .file("lib/plain.rb", &methods);
    let units = planned_units(&project, "lib/*.rb", "8000");
    let of = |file: &str| {
        units
            .iter()
            .filter(|u| u["inputs"][0]["path"].as_str() == Some(file))
            .count()
    };
    assert!(
        of("lib/hostile.rb") >= 2,
        "{} units of the hostile file",
        of("lib/hostile.rb")
    );
    assert!(
        of("lib/plain.rb") >= 2,
        "{} units of the plain file",
        of("lib/plain.rb")
    );
}

/// Code built to stall or crash a parser is planned like any other file, in one run beside
/// ordinary code: calls opened 20,000 deep and never closed (tree-sitter's error recovery
/// took minutes and gigabytes on them), brackets nested 5,000 deep around an error (the walk
/// over the errors overflowed the stack) and `#ifdef`s nested 60 deep (each level doubled
/// the work).
#[test]
fn code_built_to_stall_or_crash_the_parser_is_planned_beside_ordinary_code() {
    let filler: String = (0..1_600).map(|i| format!("int x{i} = {i};\n")).collect();
    let project = Project::new()
        .file("src/stuck.c", &format!("x = {}\n{filler}", "%w(".repeat(20_000)))
        .file(
            "src/deep.py",
            &format!(
                "x = {}1 +{}\n{}",
                "[".repeat(5_000),
                "]".repeat(5_000),
                filler.replace("int ", "")
            ),
        )
        .file(
            "src/ifdefs.h",
            &format!("{}int y;\n{}{filler}", "#ifdef A\n".repeat(60), "#endif\n".repeat(60)),
        )
        .file("src/plain.c", &filler);
    let units = planned_units(&project, "src/*", "8000");
    for file in ["src/stuck.c", "src/deep.py", "src/ifdefs.h", "src/plain.c"] {
        let n = units
            .iter()
            .filter(|u| u["inputs"][0]["path"].as_str() == Some(file))
            .count();
        assert!(n >= 2, "{file}: {n} units");
    }
}

//! Chunks sized from the budget and cut where the grammar allows, through the binary: long
//! lines run (not only planned), nothing planned is blocked whatever the prompt carries,
//! code cut between members with its header, prose at headings, encodings decoded.

use crate::support::mock_llm::*;
use crate::support::*;
use serde_json::Value;

/// `rlm ARGS --base-url URL --provider openai -o out`, without the Anthropic key.
fn run(p: &Project, url: &str, args: &[&str]) -> Output {
    let mut all: Vec<&str> = args.to_vec();
    all.extend_from_slice(&["--base-url", url, "--provider", "openai", "-o", "out", "--yes"]);
    p.rlm(&all).env_remove("ANTHROPIC_API_KEY").run()
}

/// The units of `rlm batch PATTERN "Review {file}" --dry-run --json EXTRA…`.
fn planned(p: &Project, url: &str, pattern: &str, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["batch", pattern, "Review {file}", "--dry-run", "--json"];
    args.extend_from_slice(extra);
    let out = run(p, url, &args);
    out.assert_exit(0);
    out.json()["units"].as_array().cloned().unwrap_or_default()
}

fn blocked(units: &[Value]) -> Vec<String> {
    units
        .iter()
        .filter(|u| !u["blocked"].is_null())
        .map(|u| format!("{}: {}", u["path"], u["blocked"]))
        .collect()
}

/// A log of `n` lines whose line `long_at` is `long_bytes` long.
fn log_with_long_line(n: usize, long_at: usize, long_bytes: usize) -> String {
    let mut log = String::new();
    for i in 1..=n {
        if i == long_at {
            log.push_str("2026-01-01T00:00:00 DEBUG payload ");
            log.push_str(&"abcdefgh, ".repeat(long_bytes / 10));
            log.push('\n');
        } else {
            log.push_str(&format!(
                "2026-01-01T00:00:{:02} INFO request {i} served in 3ms\n",
                i % 60
            ));
        }
    }
    log
}

#[test]
fn a_megabyte_line_is_run_in_pieces_each_answer_kept() {
    let mock = MockLlm::start();
    let url = mock.url();
    let p = Project::new().file("big.log", &log_with_long_line(600, 300, 1_000_000));
    let out = run(
        &p,
        &url,
        &[
            "batch",
            "big.log",
            "Find problems in {file}",
            "--context-window",
            "8000",
            "--json",
        ],
    );
    out.assert_exit(0);
    assert!(!out.stderr.contains("unique"), "{}", out.stderr);
    let report = p.report();
    assert_eq!(report["status"], "SUCCESS", "{report:#}");
    let units = report["units"].as_array().unwrap();
    let pieces: Vec<&str> = units
        .iter()
        .filter_map(|u| u["path"].as_str().filter(|l| l.starts_with("big.log:300 (part ")))
        .collect();
    assert!(pieces.len() > 100, "a 1 MB line at 8000 tokens: {}", pieces.len());
    assert!(units.iter().all(|u| u["status"] == "succeeded"), "{report:#}");
    // Every call was made once and every answer is in the aggregate, under its own name.
    assert_eq!(mock.requests(), units.len());
    let aggregate = p.aggregate_json();
    for piece in &pieces {
        assert!(aggregate.get(*piece).is_some(), "{piece} is not in the aggregate");
    }
    let ids: std::collections::HashSet<&str> = units.iter().filter_map(|u| u["id"].as_str()).collect();
    assert_eq!(ids.len(), units.len(), "unit ids are unique");
}

#[test]
fn a_minified_json_document_is_run_in_element_groups_each_answer_kept() {
    let mock = MockLlm::start();
    let url = mock.url();
    let items: Vec<Value> = (0..3000)
        .map(|i| serde_json::json!({"id": i, "name": format!("item {i}"), "text": "x".repeat(50)}))
        .collect();
    let p = Project::new().file("min.json", &Value::Array(items).to_string());
    let out = run(
        &p,
        &url,
        &[
            "batch",
            "min.json",
            "Review {file}",
            "--context-window",
            "8000",
            "--json",
        ],
    );
    out.assert_exit(0);
    let report = p.report();
    let units = report["units"].as_array().unwrap();
    assert!(units.len() > 10, "{}", units.len());
    assert!(units.iter().all(|u| u["status"] == "succeeded"), "{report:#}");
    let aggregate = p.aggregate_json();
    assert_eq!(
        aggregate.as_object().map(|o| o.len()),
        Some(units.len()),
        "{aggregate:#}"
    );
}

/// An object of `n` members with long keys, each an object: a schema line of 60 long
/// fields, a JSON path with long keys.
fn services(n: usize) -> String {
    let members: Vec<String> = (0..n)
        .map(|i| {
            format!(
                "  \"service_name_that_is_really_very_quite_long_indeed_number_{i:05}\": {{\"e\": {{\"r0\": \"{}\"}}}}",
                "h".repeat(40)
            )
        })
        .collect();
    format!("{{\"services\": {{\n{}\n}}, \"version\": 3}}\n", members.join(",\n"))
}

/// A translation file: `n` sentence-like keys.
fn translations(n: usize) -> String {
    let words = [
        "brown", "lazy", "quick", "saved", "account", "please", "continue", "over",
    ];
    let members: Vec<String> = (0..n)
        .map(|i| {
            let key: Vec<&str> = (0..6).map(|k| words[(i * 7 + k * 3) % words.len()]).collect();
            let key = format!("{} {i}", key.join(" "));
            format!("  \"{key}\": \"{}\"", key.to_uppercase())
        })
        .collect();
    format!("{{\n{}\n}}\n", members.join(",\n"))
}

#[test]
fn json_csv_and_jsonl_chunks_are_never_blocked_whatever_the_prompt_carries() {
    let mock = MockLlm::start();
    let url = mock.url();
    let mut csv = String::from("id,name,email,amount,note\n");
    let mut jsonl = String::new();
    for i in 0..6000 {
        csv.push_str(&format!(
            "{i},name {i},user{i}@example.com,{}.50,\"a note, with a comma\"\n",
            i % 977
        ));
        jsonl.push_str(&format!(
            "{{\"id\": {i}, \"event\": \"click\", \"user\": \"user{i}\", \"ms\": {}}}\n",
            i % 300
        ));
    }
    let p = Project::new()
        .file("data/schema.json", &services(3000))
        .file("data/i18n.json", &translations(4000))
        .file("data/rows.csv", &csv)
        .file("data/events.jsonl", &jsonl);
    for extra in [&[][..], &["--require-citations"][..]] {
        let mut args = vec!["--context-window", "8000"];
        args.extend_from_slice(extra);
        let units = planned(&p, &url, "data/*", &args);
        assert!(units.len() > 40, "{}", units.len());
        assert_eq!(blocked(&units), Vec::<String>::new(), "{extra:?}");
        // Every file was cut: none is sent whole at this window.
        for name in ["schema.json", "i18n.json", "rows.csv", "events.jsonl"] {
            let of_file = units
                .iter()
                .filter(|u| {
                    u["path"]
                        .as_str()
                        .is_some_and(|p| p.starts_with(&format!("data/{name}:")))
                })
                .count();
            assert!(of_file > 1, "{name}: {of_file}");
        }
    }
    // And the run sends them: nothing fails for its size.
    let out = run(
        &p,
        &url,
        &[
            "batch",
            "data/*.json",
            "Review {file}",
            "--context-window",
            "8000",
            "--require-citations",
        ],
    );
    out.assert_exit(0);
    assert_eq!(p.report()["status"], "SUCCESS");
}

#[test]
fn a_window_the_answer_nearly_fills_is_said_once_naming_the_flags() {
    let mock = MockLlm::start();
    let url = mock.url();
    let p = Project::new()
        .file("src/a.py", &python_functions(200))
        .file("src/b.py", &python_functions(150));
    let out = run(
        &p,
        &url,
        &[
            "batch",
            "src/*.py",
            "Review {file}",
            "--context-window",
            "6000",
            "--dry-run",
            "--json",
        ],
    );
    out.assert_exit(0);
    let plan = out.json();
    let warnings: Vec<&str> = plan["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|w| w.contains("--max-tokens"))
        .collect();
    assert_eq!(warnings.len(), 1, "{plan:#}");
    assert!(warnings[0].contains("--context-window"), "{}", warnings[0]);
    assert!(warnings[0].contains("and 1 more file"), "{}", warnings[0]);
    assert_eq!(
        out.stderr.lines().filter(|l| l.contains("--max-tokens")).count(),
        1,
        "said once: {}",
        out.stderr
    );
    // A window with room for content plans without it.
    let out = run(
        &p,
        &url,
        &[
            "batch",
            "src/*.py",
            "Review {file}",
            "--context-window",
            "16000",
            "--dry-run",
            "--json",
        ],
    );
    assert!(!out.stderr.contains("--max-tokens"), "{}", out.stderr);
}

/// A Python file of `n` functions of 12 lines after an import block.
fn python_functions(n: usize) -> String {
    let mut s = String::from("import os\nimport sys\n\n");
    for i in 0..n {
        s.push_str(&format!("def f{i}(x):\n    \"\"\"Step {i}.\"\"\"\n"));
        for j in 0..10 {
            s.push_str(&format!("    x = x + {j}  # step\n"));
        }
        s.push_str("    return x\n\n");
    }
    s
}

/// The units of one file in a dry run, in order: (first line, last line, content, user
/// prompt).
fn pieces_of(units: &[Value], path: &str) -> Vec<(u64, u64, String, String)> {
    let mut out: Vec<(u64, u64, String, String)> = units
        .iter()
        .filter(|u| {
            u["path"]
                .as_str()
                .is_some_and(|p| p == path || p.starts_with(&format!("{path}:")))
        })
        .map(|u| {
            let input = &u["inputs"][0];
            (
                input["start_line"].as_u64().unwrap_or(1),
                input["end_line"].as_u64().unwrap_or(0),
                u["content"].as_str().unwrap_or_default().to_owned(),
                u["prompt"]["user"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    out.sort_by_key(|p| p.0);
    out
}

/// A method of `n` body lines full of braces in literals, each line marked `BODY`.
fn js_method(name: &str, n: usize) -> String {
    let mut s = format!("  /** {name} the bits. */\n  {name}(index) {{\n");
    for i in 0..n {
        s.push_str(match i % 3 {
            0 => "    const a = `${index} } ${ {y: 1}.y }`; // BODY\n",
            1 => "    if (/[{}]+/.test(s)) { s = s.replace(/\\}/g, '{'); } // BODY\n",
            _ => "    const o = { open: '{', close: \"}\" }; /* BODY } */\n",
        });
    }
    s.push_str("  } // BODY\n\n");
    s
}

#[test]
fn js_classes_and_wrappers_are_cut_between_methods_with_their_header() {
    let mock = MockLlm::start();
    let url = mock.url();
    let mut class = String::from("import { Base } from './base.js';\n\nexport class BitSet extends Base {\n");
    let mut builder =
        String::from("const { Base } = require('./base');\n\nmodule.exports = cls => class Builder extends cls {\n");
    let mut umd = String::from(
        "(function (root, factory) {\n  module.exports = factory();\n})(this, function () {\n  'use strict';\n\n",
    );
    for name in ["get", "set", "clear", "flip", "union", "toString", "and", "or"] {
        class.push_str(&js_method(name, 60));
        builder.push_str(&js_method(name, 60));
        umd.push_str(
            &js_method(name, 60).replace(&format!("  {name}(index) {{"), &format!("  function {name}(index) {{")),
        );
    }
    class.push_str("}\n");
    builder.push_str("}\n");
    umd.push_str("  return {};\n});\n");
    let p = Project::new()
        .file("src/bitset.js", &class)
        .file("src/builder.js", &builder)
        .file("src/umd.js", &umd);
    let units = planned(&p, &url, "src/*.js", &["--context-window", "8000"]);
    assert_eq!(blocked(&units), Vec::<String>::new());
    for (path, header) in [
        ("src/bitset.js", "export class BitSet extends Base {"),
        ("src/builder.js", "module.exports = cls => class Builder extends cls {"),
        ("src/umd.js", "})(this, function () {"),
    ] {
        let pieces = pieces_of(&units, path);
        assert!(pieces.len() >= 3, "{path}: {} chunks", pieces.len());
        let text = p.read(path);
        let lines: Vec<&str> = text.lines().collect();
        for (start, _, content, user) in &pieces[1..] {
            let first = lines[*start as usize - 1];
            assert!(
                !first.contains("BODY"),
                "{path}: a chunk starts inside a method, at {start}: {first}"
            );
            assert!(
                content.contains(header),
                "{path}: the chunk at {start} lacks the header:\n{content}"
            );
            assert!(user.contains("the header of the class (or block)"), "{user}");
            assert!(!user.contains("longer than a chunk"), "{path}: windows at {start}");
        }
    }
}

#[test]
fn python_imports_are_found_after_a_docstring_dunders_and_a_bom() {
    let mock = MockLlm::start();
    let url = mock.url();
    let mut text = String::from(
        "\u{feff}#!/usr/bin/env python3\n\"\"\"A module.\n\nIt does things.\n\"\"\"\n\n__all__ = [\n    'f0',\n]\n__version__ = '1.0'\n\nimport os\nfrom typing import (\n    Any,\n)\n\n",
    );
    for i in 0..150 {
        text.push_str(&format!("def f{i}(x):\n"));
        for j in 0..12 {
            text.push_str(&format!("    x = os.path.join(x, '{j}')  # step\n"));
        }
        text.push_str("    return x\n\n");
    }
    let p = Project::new().file("mod.py", &text);
    let units = planned(&p, &url, "mod.py", &["--context-window", "8000"]);
    let pieces = pieces_of(&units, "mod.py");
    assert!(pieces.len() >= 3, "{}", pieces.len());
    for (start, _, content, user) in &pieces[1..] {
        assert!(
            content.starts_with("import os\nfrom typing import (\n    Any,\n)\n"),
            "chunk at {start}:\n{content}"
        );
        assert!(user.contains("lines 12–15, the file's import block"), "{user}");
    }
}

#[test]
fn prose_is_cut_at_any_heading_level_and_never_inside_a_fence() {
    let mock = MockLlm::start();
    let url = mock.url();
    let mut doc = String::from("Intro paragraph.\n\n");
    for i in 0..30 {
        if i % 10 == 0 {
            // A chapter's heading directly above its first part: it opens that part's
            // chunk, never ends the chunk before.
            doc.push_str(&format!("## Chapter {}\n\n", i / 10));
        }
        doc.push_str(&format!("### Part {i}\n\n"));
        for j in 0..20 {
            doc.push_str(&format!("Sentence {j} of part {i} says something about the release.\n"));
        }
        doc.push_str("\n```sh\n# not a heading: a shell comment\n");
        for j in 0..15 {
            doc.push_str(&format!("echo step {j}\n"));
        }
        doc.push_str("# another comment\n```\n\n");
    }
    let p = Project::new().file("notes.md", &doc);
    let units = planned(&p, &url, "notes.md", &["--context-window", "8000"]);
    let pieces = pieces_of(&units, "notes.md");
    assert!(pieces.len() >= 3, "{}", pieces.len());
    let lines: Vec<&str> = doc.lines().collect();
    for (start, _, _, _) in &pieces[1..] {
        let first = lines[*start as usize - 1];
        assert!(
            first.starts_with("### Part ") || first.starts_with("## Chapter "),
            "a chunk starts at line {start}: {first}"
        );
    }
    for (start, end, _, _) in &pieces {
        let last = lines[*start as usize - 1..*end as usize]
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap();
        assert!(
            !last.starts_with("## "),
            "the chunk {start}-{end} ends with a heading: {last}"
        );
    }
}

#[test]
fn overlapping_log_windows_say_which_lines_the_previous_one_held() {
    let mock = MockLlm::start();
    let url = mock.url();
    let log = log_with_long_line(3000, 0, 0);
    let p = Project::new().file("app.log", &log);
    let units = planned(&p, &url, "app.log", &[]);
    let pieces = pieces_of(&units, "app.log");
    assert!(pieces.len() >= 5, "{}", pieces.len());
    for pair in pieces.windows(2) {
        let (prev_end, (start, _, _, user)) = (pair[0].1, &pair[1]);
        assert!(*start <= prev_end, "windows overlap: {start} after {prev_end}");
        let said = format!("Lines {start}–{prev_end} were also in the previous chunk");
        assert!(user.contains(&said), "{said}:\n{user}");
    }
    // What the dry run shows is what is sent.
    run(&p, &url, &["batch", "app.log", "Review {file}"]).assert_exit(0);
    let sent = mock.recorded();
    assert_eq!(sent.len(), pieces.len());
    assert!(
        sent.iter()
            .filter(|r| r.user_text().contains("were also in the previous chunk"))
            .count()
            >= pieces.len() - 1
    );
}

#[test]
fn utf16_is_decoded_and_latin1_is_read_with_a_warning_naming_the_file() {
    let mock = MockLlm::start();
    let url = mock.url();
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(
            "Café crème, line one\nligne deux\n"
                .encode_utf16()
                .flat_map(u16::to_le_bytes),
        )
        .collect();
    let latin1: Vec<u8> = b"Caf\xe9 cr\xe8me br\xfbl\xe9e\n".to_vec();
    let p = Project::new()
        .bytes("docs/wide.txt", &utf16)
        .bytes("docs/latin.txt", &latin1);
    run(
        &p,
        &url,
        &["batch", "docs/*.txt", "Summarize {file}", "--no-batch-small"],
    )
    .assert_exit(0);
    let sent = mock.recorded();
    assert_eq!(sent.len(), 2, "neither file is skipped as binary");
    let wide = sent.iter().find(|r| r.user_text().contains("docs/wide.txt")).unwrap();
    assert!(
        wide.user_text().contains("Café crème, line one\nligne deux\n"),
        "{}",
        wide.user_text()
    );
    let latin = sent.iter().find(|r| r.user_text().contains("docs/latin.txt")).unwrap();
    assert!(latin.user_text().contains("Café crème brûlée"), "{}", latin.user_text());
    let report = p.report();
    let warnings: Vec<&str> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("docs/latin.txt") && w.contains("not UTF-8")),
        "{warnings:?}"
    );
    assert_eq!(report["files_succeeded"], 2);
}

#[test]
fn a_dry_run_whose_units_are_all_too_large_gives_the_real_runs_refusal() {
    let mock = MockLlm::start();
    let url = mock.url();
    let p = Project::new().file("big.py", &python_functions(300));
    let args = [
        "batch",
        "big.py",
        "Review {file}",
        "--chunking",
        "off",
        "--context-window",
        "8000",
    ];
    let real = run(&p, &url, &[&args[..], &["--json"]].concat());
    real.assert_exit(2);
    let error = real.json()["error"].clone();
    assert_eq!(error["kind"], "too_large", "{error}");
    let message = error["message"].as_str().unwrap().to_string();
    assert!(message.starts_with("nothing can be sent: big.py: "), "{message}");
    assert!(message.contains("> 8000 tokens"), "the window's real size: {message}");

    let dry = run(&p, &url, &[&args[..], &["--dry-run", "--json"]].concat());
    dry.assert_exit(0);
    let plan = dry.json();
    assert_eq!(plan["refusal"]["kind"], "too_large", "{plan:#}");
    assert_eq!(plan["refusal"]["exit_code"], 2);
    assert_eq!(plan["refusal"]["message"], message.as_str());
    assert_eq!(plan["cost_check"], format!("cannot start: {message}").as_str());

    let dry = run(&p, &url, &[&args[..], &["--dry-run"]].concat());
    dry.assert_exit(0);
    let last = dry.stdout.lines().last().unwrap_or_default().to_string();
    assert_eq!(last, format!("the real run cannot start: {message}"), "{}", dry.stdout);

    // A plan with something to send proceeds, and says so.
    let plan = run(
        &p,
        &url,
        &[
            "batch",
            "big.py",
            "Review {file}",
            "--context-window",
            "8000",
            "--dry-run",
            "--json",
        ],
    )
    .json();
    assert_eq!(plan["cost_check"], "proceeds", "{plan:#}");
    assert!(plan["refusal"].is_null(), "{plan:#}");
    assert_eq!(mock.requests(), 0);
}

#[test]
fn a_max_tokens_that_leaves_the_window_no_room_is_one_usage_error_naming_both_flags() {
    let mock = MockLlm::start();
    let url = mock.url();
    let p = Project::new().file("big.py", &python_functions(300));
    for (window, max_tokens, said) in [
        // The answer alone fills the window.
        (
            "4000",
            None,
            "--max-tokens 4096 is not less than the context window (--context-window 4000)",
        ),
        (
            "2000",
            Some("2000"),
            "--max-tokens 2000 is not less than the context window (--context-window 2000)",
        ),
        // The answer and the instructions leave no room for content.
        ("5000", None, "--max-tokens 4096 for the answer and ~"),
        ("9000", Some("8700"), "--max-tokens 8700 for the answer and ~"),
    ] {
        let mut args = vec!["batch", "big.py", "Review {file}", "--context-window", window];
        if let Some(m) = max_tokens {
            args.extend(["--max-tokens", m]);
        }
        for dry in [true, false] {
            let mut args = args.clone();
            if dry {
                args.push("--dry-run");
            }
            let out = run(&p, &url, &args);
            out.assert_exit(2);
            assert_eq!(out.stderr.lines().count(), 1, "one line: {}", out.stderr);
            assert!(out.stderr.starts_with("rlm: error: "), "{}", out.stderr);
            assert!(out.stderr.contains(said), "{window}: {}", out.stderr);
            assert!(
                out.stderr.contains(&format!("--context-window {window}"))
                    && out.stderr.contains("smaller --max-tokens"),
                "{}",
                out.stderr
            );
            assert!(out.stdout.is_empty(), "no plan: {}", out.stdout);
            args.push("--json");
            let doc = run(&p, &url, &args).json();
            assert_eq!(doc["error"]["kind"], "usage", "{doc:#}");
        }
    }
    // A window rlm only assumes: the message says so, and to pass the real one.
    let out = run(&p, &url, &["batch", "big.py", "Review {file}", "--max-tokens", "31900"]);
    out.assert_exit(2);
    assert!(
        out.stderr.contains("rlm assumes") && out.stderr.contains("pass --context-window"),
        "{}",
        out.stderr
    );
    // Room for a little content still plans (and warns), with no chunk blocked.
    let units = planned(&p, &url, "big.py", &["--context-window", "5600"]);
    assert!(units.len() > 1, "{}", units.len());
    assert_eq!(blocked(&units), Vec::<String>::new());
    assert_eq!(mock.requests(), 0);
}

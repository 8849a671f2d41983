//! Content-aware units through the binary: large files cut into chunks along their
//! structure, small files batched, analyst prompts, inspectable plans, two-phase synthesis.

use crate::support::mock_llm::*;
use crate::support::*;
use serde_json::Value;

/// A Python file of `n` functions, 20 lines each, after an import block.
fn python(n: usize) -> String {
    let mut s = String::from("import os\nimport sys\n\n");
    for i in 0..n {
        s.push_str(&format!("def f{i}(x):\n"));
        for j in 0..18 {
            s.push_str(&format!("    x = x + {j}  # step\n"));
        }
        s.push_str("    return x\n");
    }
    s
}

fn local(p: &Project, url: &str, extra: &[&str]) -> Output {
    let mut args = batch("src/**/*", url, &["--provider", "openai", "-o", "out"]);
    args.extend_from_slice(extra);
    p.rlm(&args).env_remove("ANTHROPIC_API_KEY").run()
}

#[test]
fn a_large_file_is_cut_at_function_boundaries_and_each_chunk_names_its_lines() {
    let mock = MockLlm::start();
    let p = Project::new().file("src/big.py", &python(100)); // 2003 lines
    local(&p, &mock.url(), &[]).assert_exit(0);
    let recorded = mock.recorded();
    assert!(
        recorded.len() >= 7,
        "2003 lines in chunks of at most 300: {}",
        recorded.len()
    );
    let mut covered = Vec::new();
    for r in &recorded {
        let user = r.user_text();
        assert!(user.contains("File: src/big.py"), "{user}");
        assert!(user.contains("of 2003 (chunk "), "the chunk names its place: {user}");
        assert!(
            user.contains("import os\nimport sys"),
            "the import block is prepended: {user}"
        );
        // Never cut inside a function: every chunk's own lines start at a def (or line 1).
        let lines = user.split("Lines: ").nth(1).unwrap();
        let (start, rest) = lines.split_once('–').unwrap();
        let end: usize = rest.split(' ').next().unwrap().parse().unwrap();
        let start: usize = start.parse().unwrap();
        covered.push((start, end));
        assert!(
            r.system_text().contains("code"),
            "the code analyst: {}",
            r.system_text()
        );
    }
    covered.sort();
    assert_eq!(covered[0].0, 1);
    assert_eq!(covered.last().unwrap().1, 2003);
    for pair in covered.windows(2) {
        assert_eq!(pair[0].1 + 1, pair[1].0, "chunks cover every line once: {covered:?}");
    }
    let report = p.report();
    assert_eq!(report["succeeded"], recorded.len());

    // A rerun pays for nothing; --chunking off sends the file whole.
    mock.reset_counts();
    local(&p, &mock.url(), &[]).assert_exit(0);
    assert_eq!(mock.requests(), 0);
    local(&p, &mock.url(), &["--chunking", "off"]).assert_exit(0);
    assert_eq!(mock.requests(), 1);
    assert!(!mock.recorded()[0].user_text().contains("(chunk "));
}

#[test]
fn small_files_are_batched_by_type_and_the_answer_is_split_back_per_file() {
    let mock = MockLlm::start();
    let answer = "### File: src/a.ts\nA findings\n\n### File: src/b.ts\nB findings\n";
    let p = Project::new()
        .file(
            "src/a.ts",
            &format!("export const a = 1; // {}\n", reply_marker(answer)),
        )
        .file("src/b.ts", "export const b = 2;\n")
        .file("src/notes.md", "# Notes\n\nSome prose.\n")
        .file("src/more.md", "# More\n\nMore prose.\n");
    local(&p, &mock.url(), &["--batch-small"]).assert_exit(0);
    assert_eq!(mock.requests(), 2, "one call per content type");
    let ts = mock
        .recorded()
        .into_iter()
        .find(|r| r.user_text().contains("src/a.ts"))
        .unwrap();
    assert!(ts.user_text().contains("src/b.ts"), "both ts files in one call");
    assert_eq!(p.read("out/src-a.ts.result.md").trim(), "A findings");
    assert_eq!(p.read("out/src-b.ts.result.md").trim(), "B findings");
    // Without --batch-small every file is its own call, as always.
    mock.reset_counts();
    local(&p, &mock.url(), &[]).assert_exit(0);
    assert_eq!(mock.requests(), 4);
}

#[test]
fn the_dry_run_plan_shows_types_line_ranges_content_and_prompts() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("src/big.py", &python(100))
        .file("src/data.csv", "a,b\n1,2\n")
        .file("src/small.ts", "export const s = 1;\n");
    let out = local(&p, &mock.url(), &["--dry-run", "--json"]);
    out.assert_exit(0);
    assert_eq!(mock.requests(), 0);
    let plan: Value = serde_json::from_str(&out.stdout).unwrap();
    let files = plan["files"].as_array().unwrap();
    let csv = files.iter().find(|f| f["path"] == "src/data.csv").unwrap();
    assert_eq!(csv["content_type"], "structured_data");
    assert_eq!(csv["detected_by"], "extension");
    let units = plan["units"].as_array().unwrap();
    let chunks: Vec<&Value> = units
        .iter()
        .filter(|u| u["inputs"][0]["path"] == "src/big.py")
        .collect();
    assert!(chunks.len() >= 7);
    for c in &chunks {
        assert_eq!(c["content_type"], "source_code");
        assert_eq!(c["analyst"], "code");
        let start = c["inputs"][0]["start_line"].as_u64().unwrap();
        let end = c["inputs"][0]["end_line"].as_u64().unwrap();
        assert!(start >= 1 && end >= start && end <= 2003);
        let content = c["content"].as_str().unwrap();
        assert!(content.starts_with("import os\nimport sys"), "{content}");
        let user = c["prompt"]["user"].as_str().unwrap();
        assert!(user.contains(content.lines().last().unwrap()));
        assert!(!c["prompt"]["system"].as_str().unwrap().is_empty());
    }
    let small = units.iter().find(|u| u["path"] == "src/small.ts").unwrap();
    assert_eq!(small["inputs"][0]["start_line"], 1);
    assert_eq!(small["inputs"][0]["end_line"], 1);
    assert_eq!(small["content"], "export const s = 1;\n");
}

#[test]
fn synthesize_runs_one_call_per_type_then_one_cross_type_report() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("src/a.ts", "export const a = 1;\n")
        .file("src/b.ts", "export const b = 1;\n")
        .file("src/data.csv", "x,y\n1,2\n");
    let out = local(&p, &mock.url(), &["--aggregate", "synthesize"]);
    out.assert_exit(0);
    assert_eq!(mock.requests(), 3 + 2 + 1, "3 files, 2 types, 1 report");
    let recorded = mock.recorded();
    let last = recorded.last().unwrap();
    let synthesis_calls = recorded[3..5].iter().map(|r| r.user_text()).collect::<Vec<_>>();
    assert!(
        synthesis_calls.iter().any(|u| u.contains("source_code")),
        "{synthesis_calls:?}"
    );
    assert!(
        synthesis_calls.iter().any(|u| u.contains("structured_data")),
        "{synthesis_calls:?}"
    );
    let final_reply = reply_for(&last.system_text(), &last.user_text());
    assert_eq!(p.aggregate_md().trim(), final_reply.trim());
    // Every dispatched unit's prompt is kept in the run directory.
    let prompts = file_names(&p.path().join("out/prompts"));
    assert_eq!(prompts.len(), 3, "{prompts:?}");
    // A rerun is free: answers and syntheses come from the cache.
    mock.reset_counts();
    local(&p, &mock.url(), &["--aggregate", "synthesize"]).assert_exit(0);
    assert_eq!(mock.requests(), 0);
}

#[test]
fn query_reads_one_file_through_its_analyst_and_prints_the_answer_on_stdout() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file(
            "notes.md",
            &format!("# Notes\n\n{}\n", reply_marker("The answer is 42.")),
        )
        .file("src/big.py", &python(100));
    let url = mock.url();
    let out = p
        .rlm(&[
            "query",
            "notes.md",
            "What is the answer? Answer in one sentence.",
            "--base-url",
            &url,
            "--provider",
            "openai",
        ])
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(0);
    assert_eq!(
        out.stdout.trim(),
        "The answer is 42.",
        "stdout is the answer: {}",
        out.stdout
    );
    assert_eq!(mock.requests(), 1, "one piece, no synthesis needed");
    assert!(mock.recorded()[0].user_text().contains("Content type: prose"));

    // A long file: chunks, then one final report (one content type needs no per-type phase).
    mock.reset_counts();
    let out = p
        .rlm(&[
            "query",
            "src/big.py",
            "Where is x changed?",
            "--base-url",
            &url,
            "--provider",
            "openai",
            "-q",
        ])
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(0);
    let recorded = mock.recorded();
    let chunks = recorded.iter().filter(|r| r.user_text().contains("(chunk ")).count();
    assert!(chunks >= 7, "{chunks}");
    assert_eq!(
        recorded.len(),
        chunks + 1,
        "one type: the chunks, then the final report"
    );
    let last = recorded.last().unwrap();
    assert_eq!(
        out.stdout.trim(),
        reply_for(&last.system_text(), &last.user_text()).trim()
    );

    let out = p.rlm(&["query", "src", "x", "--base-url", &url]).run();
    out.assert_exit(2);
    assert!(
        out.stderr
            .contains("rlm query: src is a directory, not a file: name one file"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_analyst_answer_in_prose_is_kept_with_a_warning_and_paid_for_once() {
    let mock = MockLlm::start();
    // The last function of a long file makes the mock answer in prose, whatever it is asked.
    let source = format!(
        "{}def chatty():\n    # {}\n    return 1\n",
        python(100),
        reply_marker("Sure! Here is what I found: nothing much.")
    );
    let p = Project::new().file("src/big.py", &source);
    let url = mock.url();
    // A prompt that names no format of its own: the analyst asks for the findings JSON,
    // through structured output.
    let args = [
        "batch",
        "src/*.py",
        "Review {file}",
        "--base-url",
        &url,
        "--provider",
        "openai",
        "-o",
        "out",
        "-j",
        "1",
    ];
    let out = p.rlm(&args).env_remove("ANTHROPIC_API_KEY").run();
    out.assert_exit(0);
    let recorded = mock.recorded();
    let chatty: Vec<&Recorded> = recorded
        .iter()
        .filter(|r| r.user_text().contains("def chatty"))
        .collect();
    assert_eq!(chatty.len(), 1, "a paid answer is never asked for again for its format");
    assert_eq!(
        chatty[0].body["response_format"]["json_schema"]["schema"]["required"],
        serde_json::json!(["findings"]),
        "the analyst asks for its findings through structured output"
    );
    assert!(out.stderr.contains("answered in prose"), "{}", out.stderr);
    let report = p.report();
    assert!(report["failed"].as_array().unwrap().is_empty(), "{report}");
    assert_eq!(report["files_succeeded"], 1, "{report}");
    assert!(
        report["warnings"].to_string().contains("answered in prose"),
        "the warning is in the report: {report}"
    );
    let kept = std::fs::read_dir(p.path().join("out"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".result.md"))
        .any(|e| std::fs::read_to_string(e.path()).unwrap().contains("nothing much"));
    assert!(kept, "the prose is the chunk's answer");
    // Every answer is cached: a rerun pays nothing.
    mock.reset_counts();
    p.rlm(&args).env_remove("ANTHROPIC_API_KEY").run().assert_exit(0);
    assert_eq!(mock.requests(), 0);
}

#[test]
fn focus_steers_the_code_analyst_and_only_it() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("src/big.py", &python(100))
        .file("src/notes.md", &"# Notes\n\nsome prose\n".repeat(600));
    let url = mock.url();
    let plan = |focus: &str| {
        let out = p
            .rlm(&batch("src/*", &url, &["--focus", focus, "--dry-run", "--json"]))
            .run();
        out.assert_exit(0);
        out.json()
    };
    let units_of = |plan: &Value, path: &str| -> Vec<String> {
        plan["units"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|u| u["inputs"][0]["path"] == path)
            .map(|u| u["prompt"].to_string())
            .collect()
    };
    let security = plan("security");
    let code = units_of(&security, "src/big.py");
    assert!(code.len() >= 2, "{security}");
    assert!(code.iter().all(|p| p.contains("Analysis focus: security")), "{code:?}");
    let prose = units_of(&security, "src/notes.md");
    assert!(!prose.is_empty());
    assert!(prose.iter().all(|p| !p.contains("Analysis focus")), "{prose:?}");
    let general = plan("general");
    assert!(units_of(&general, "src/big.py")
        .iter()
        .all(|p| !p.contains("Analysis focus: security")));
    assert_eq!(mock.requests(), 0);
}

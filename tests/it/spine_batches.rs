//! Batches of small files through the binary: every member is answered, retried alone, or
//! said not to have run — never counted as processed on its batch's word — and each
//! member's entry is read as the value it is.

use serde_json::{json, Value};

use crate::support::mock_llm::*;
use crate::support::*;

/// `rlm ARGS --base-url URL --provider openai -o out`, without the Anthropic key.
fn openai(p: &Project, url: &str, args: &[&str]) -> Output {
    let mut all: Vec<&str> = args.to_vec();
    all.extend_from_slice(&["--base-url", url, "--provider", "openai", "-o", "out"]);
    p.rlm(&all).env_remove("ANTHROPIC_API_KEY").run()
}

#[test]
fn a_member_missing_when_the_budget_stops_the_run_is_not_run_never_processed() {
    let mock = MockLlm::start();
    let url = mock.url();
    // The batch's answer leaves out c.md, and is long: it costs more than estimated.
    let partial = json!({"files": [
        {"file": "src/a.md", "answer": "a is about apples"},
        {"file": "src/b.md", "answer": format!("b is about bees {}", "and more bees ".repeat(600))},
    ]})
    .to_string();
    let p = Project::new()
        .file("src/a.md", &format!("# A\napples {}\n", reply_marker(&partial)))
        .file("src/b.md", "# B\nbees\n")
        .file("src/c.md", "# C\ncats\n");
    let args = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "batch",
            "src",
            "Answer in one line: what is {file} about?",
            "--aggregate",
            "concat",
            "--base-url",
            &url,
            "--model",
            "claude-sonnet-4-5",
            "-o",
            "out",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let dry = p.rlm(&as_strs(&args(&["--dry-run", "--json"]))).run();
    dry.assert_exit(0);
    let plan = dry.json();
    assert_eq!(plan["units_planned"], 1, "one batch: {plan:#}");
    let budget = format!("{:.6}", plan["estimated_cost_usd"].as_f64().unwrap() * 1.01);
    let out = p.rlm(&as_strs(&args(&["--max-cost", &budget]))).run();
    assert_eq!(
        mock.requests(),
        1,
        "the budget stopped the run before c.md was asked alone"
    );
    let report = p.report();
    assert_eq!(report["status"], "BUDGET_EXCEEDED", "{report:#}");
    assert_eq!(report["files_succeeded"], 2, "{report:#}");
    assert_eq!(report["not_run"], json!(["src/c.md"]), "{report:#}");
    let c = report["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["path"] == "src/c.md")
        .unwrap_or_else(|| panic!("c.md has a record of its own: {report:#}"));
    let reason = c["reason"].as_str().unwrap();
    assert!(
        reason.contains("no usable entry") && reason.contains("--max-cost"),
        "{reason}"
    );
    assert!(!p.exists("out/src-c.md.result.md"), "no answer, no result file");
    assert!(out.stdout.contains("Files processed: 2/3"), "{}", out.stdout);
    let md = p.report_md();
    assert!(!md.contains("Successfully processed: 3"), "{md}");
    assert_ne!(out.status, 0);
    // `rlm merge` serves the run as it recorded it: c.md is still not run.
    let merged = p.rlm(&["merge", "out", "-o", "merged", "--json"]).run();
    let merged = merged.json();
    assert_eq!(merged["files_succeeded"], 2, "{merged:#}");
    assert_eq!(merged["not_run"], json!(["src/c.md"]), "{merged:#}");
    assert_eq!(mock.requests(), 1, "merge calls nothing");
}

fn as_strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn a_string_schema_checks_each_member_as_the_string_it_is() {
    let mock = MockLlm::start();
    let url = mock.url();
    let answer = json!({"files": [
        {"file": "src/a.ts", "answer": "yes"},
        {"file": "src/b.ts", "answer": "no"},
        {"file": "src/c.ts", "answer": "maybe"},
    ]})
    .to_string();
    let p = Project::new()
        .file("yn.json", r#"{"type": "string", "enum": ["yes", "no"]}"#)
        .file(
            "src/a.ts",
            &format!("export const a = 1; // {}\n", reply_marker(&answer)),
        )
        .file("src/b.ts", "let b = 2;\n")
        .file("src/c.ts", "export const c = 3;\n");
    let out = openai(
        &p,
        &url,
        &[
            "batch",
            "src",
            "Does {file} export a constant?",
            "--schema",
            "yn.json",
            "--aggregate",
            "concat",
        ],
    );
    out.assert_exit(0);
    let recorded = mock.recorded();
    assert_eq!(
        recorded.len(),
        2,
        "the batch, then c.ts alone (\"maybe\" is not in the enum): {:?}",
        recorded.iter().map(|r| r.user_text()).collect::<Vec<_>>()
    );
    assert!(recorded[1].user_text().contains("export const c"));
    assert_eq!(p.read("out/src-a.ts.result.md").trim(), "\"yes\"");
    assert_eq!(p.read("out/src-b.ts.result.md").trim(), "\"no\"");
    let report = p.report();
    assert_eq!(report["files_succeeded"], 3, "{report:#}");
    let aggregate = p.aggregate_json();
    assert_eq!(aggregate["src/a.ts"], "yes", "{aggregate:#}");
    assert_eq!(aggregate["src/b.ts"], "no", "{aggregate:#}");
}

#[test]
fn a_flat_findings_answer_answers_every_member_and_keeps_what_names_no_file() {
    let mock = MockLlm::start();
    let url = mock.url();
    let answer = json!({"findings": [
        {"file": "src/a.py", "line": 2, "summary": "TODO in a", "severity": "medium", "type": "todo"},
        {"summary": "a stray remark about nothing", "severity": "low", "type": "note", "file": "elsewhere/zzz.py"},
    ], "metadata": {}})
    .to_string();
    let p = Project::new()
        .file("src/a.py", &format!("x = 1\n# TODO {}\n", reply_marker(&answer)))
        .file("src/b.py", "y = 2\n")
        .file("src/c.py", "z = 3\n");
    let out = openai(
        &p,
        &url,
        &[
            "batch",
            "src",
            "Find the TODOs in {file}",
            "--aggregate",
            "concat",
            "--sarif",
            "r.sarif",
        ],
    );
    out.assert_exit(0);
    assert_eq!(
        mock.requests(),
        1,
        "files no finding names have none: nothing is paid again"
    );
    let report = p.report();
    assert_eq!(report["files_succeeded"], 3, "{report:#}");
    for name in ["a", "b", "c"] {
        assert!(p.exists(&format!("out/src-{name}.py.result.md")), "{name}");
    }
    let sarif = read_json(&p.path().join("r.sarif"));
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let todo: Vec<&Value> = results.iter().filter(|r| r["message"]["text"] == "TODO in a").collect();
    assert_eq!(todo.len(), 1, "{sarif:#}");
    // The finding that names no file of the batch is not dropped: the run says where it is.
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("names none of its files"), "{report:#}");
    assert!(warnings.contains("stray remark"), "{report:#}");
    assert!(out.stderr.contains("names none of its files"), "{}", out.stderr);
    // Quoted as a person reads it: one line, no escaped JSON (issue 25).
    let line = out
        .stderr
        .lines()
        .find(|l| l.contains("names none of its files"))
        .unwrap();
    assert!(
        line.contains(r#""summary": "a stray remark about nothing""#) && !line.contains(r"\n"),
        "{line}"
    );
}

#[test]
fn a_batch_answered_in_prose_asks_each_file_alone_once() {
    let mock = MockLlm::start();
    let url = mock.url();
    let p = Project::new()
        .file(
            "src/a.py",
            &format!("x = 1\n# {}\n", reply_marker("These files look fine to me.")),
        )
        .file("src/b.py", "y = 2\n");
    let out = openai(&p, &url, &["batch", "src", "Review {file}", "--aggregate", "concat"]);
    out.assert_exit(0);
    // The batch's prose names no file: each file is asked alone, once (docs/batch.md says so).
    let recorded = mock.recorded();
    assert_eq!(recorded.len(), 3, "the batch, then a.py and b.py alone");
    // The progress counts the plan's one unit, then the files asked alone apart, and the
    // counter never grows under the user's eyes (issue 25).
    let lines: Vec<&str> = out.stderr.lines().filter(|l| l.contains(" ok     ")).collect();
    assert_eq!(lines.len(), 3, "{}", out.stderr);
    assert!(lines[0].starts_with("[1/1] ok     src/a.py"), "{}", out.stderr);
    let mut alone: Vec<&str> = lines[1..].iter().map(|l| &l[..l.find(']').unwrap() + 1]).collect();
    alone.sort();
    assert_eq!(alone, ["[asked alone 1/2]", "[asked alone 2/2]"], "{}", out.stderr);
    let report = p.report();
    assert_eq!(report["files_succeeded"], 2, "{report:#}");
    assert!(
        report["warnings"].to_string().contains("These files look fine"),
        "the batch's prose is said, not dropped: {report:#}"
    );
}

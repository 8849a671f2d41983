//! Findings read once, through the binary: the aggregate (`aggregate.json`, merge,
//! synthesis) shows each finding at its file and its line of the original file, as SARIF
//! does; one event seen by two overlapping windows is reported once; and a file whose name
//! is not UTF-8 keeps its own name in findings.

use serde_json::{json, Value};

use crate::support::mock_llm::*;
use crate::support::*;

/// `rlm ARGS --base-url URL --provider openai -o out`, without the Anthropic key.
fn openai(p: &Project, url: &str, args: &[&str]) -> Run {
    let mut all: Vec<&str> = args.to_vec();
    all.extend_from_slice(&["--base-url", url, "--provider", "openai", "-o", "out"]);
    p.rlm(&all).env_remove("ANTHROPIC_API_KEY")
}

/// A findings answer, as the reply marker's JSON: (line, summary, severity).
fn findings(items: &[(Value, &str, &str)]) -> String {
    let items: Vec<Value> = items
        .iter()
        .map(|(line, m, severity)| json!({"type": "issue", "summary": m, "line": line, "severity": severity}))
        .collect();
    json!({"findings": items, "metadata": {}}).to_string()
}

/// A Python file of 100 functions of 20 lines each, after an import block (3 lines).
fn python() -> String {
    let mut s = String::from("import os\nimport sys\n\n");
    for i in 0..100 {
        s.push_str(&format!("def f{i}(x):\n"));
        for j in 0..18 {
            s.push_str(&format!("    x = x + {j}  # step\n"));
        }
        s.push_str("    return x\n");
    }
    s
}

/// The SARIF results as (uri, start line, message, level).
fn sarif_results(path: &std::path::Path) -> Vec<(String, u64, String, String)> {
    let sarif = read_json(path);
    sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let loc = &r["locations"][0]["physicalLocation"];
            (
                loc["artifactLocation"]["uri"].as_str().unwrap().to_string(),
                loc["region"]["startLine"].as_u64().unwrap_or(0),
                r["message"]["text"].as_str().unwrap().to_string(),
                r["level"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_aggregate_shows_findings_at_their_file_and_true_line() {
    let mock = MockLlm::start();
    let url = mock.url();
    let mut lines: Vec<String> = python().lines().map(str::to_string).collect();
    // The chunk holding line 1203 answers once with the original line, once counted from the
    // top of its content, once with a range counted so, once at its marker line.
    lines[1202] = format!(
        "    # TODO {}",
        reply_marker(&findings(&[
            (json!(1203), "absolute TODO", "medium"),
            (json!(25), "relative TODO", "medium"),
            (json!("L25-27"), "relative range", "low"),
            (json!(3), "at the marker line", "low"),
        ]))
    );
    let p = Project::new().file("big.py", &(lines.join("\n") + "\n"));
    let merge = ["batch", "big.py", "Find the TODOs in {file}", "--aggregate", "merge"];
    openai(&p, &url, &merge).run().assert_exit(0);
    let report = p.report();
    let start: u64 = report["units"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|u| u["path"].as_str().unwrap().strip_prefix("big.py:"))
        .filter_map(|r| {
            let (s, e) = r.split_once('-')?;
            let (s, e): (u64, u64) = (s.parse().ok()?, e.parse().ok()?);
            (s <= 1203 && 1203 <= e).then_some(s)
        })
        .next()
        .unwrap();
    // The content: the import block (lines 1-2), a marker line, then the chunk's lines.
    let relative = start + 25 - 4;
    let json = p.aggregate_json();
    let merged = json["findings"].as_array().unwrap_or_else(|| panic!("{json:#}"));
    let of = |summary: &str| -> &Value {
        merged
            .iter()
            .find(|f| f["summary"] == summary)
            .unwrap_or_else(|| panic!("{summary} in {json:#}"))
    };
    assert_eq!(of("absolute TODO")["line"], 1203);
    assert_eq!(of("relative TODO")["line"], relative);
    assert_eq!(of("relative range")["line"], relative);
    assert_eq!(of("relative range")["end_line"], relative + 2);
    assert!(
        of("at the marker line").get("line").is_none(),
        "a line that is no line of the file is not shown: {json:#}"
    );
    for f in merged {
        assert_eq!(f["path"], "big.py", "every finding names its file: {f}");
    }
    let md = p.aggregate_md();
    assert!(md.contains(&format!("\"line\":{relative}")), "{md}");
    assert!(!md.contains("\"line\":25,"), "no chunk-relative line: {md}");

    // Synthesis reads the same answers (served by the cache): the same lines.
    mock.reset_counts();
    let synthesize = [
        "batch",
        "big.py",
        "Find the TODOs in {file}",
        "--aggregate",
        "synthesize",
    ];
    openai(&p, &url, &synthesize).run().assert_exit(0);
    let recorded = mock.recorded();
    assert_eq!(recorded.len(), 1, "only the synthesis is called");
    let user = recorded[0].user_text();
    assert!(user.contains(&format!("\"line\": {relative}")), "{user}");
    assert!(!user.contains("\"line\": 25,"), "{user}");
    // The concatenation and aggregate.json of a concat run show the same.
    openai(&p, &url, &["batch", "big.py", "Find the TODOs in {file}"])
        .run()
        .assert_exit(0);
    let json = p.aggregate_json();
    let label = json
        .as_object()
        .unwrap()
        .keys()
        .find(|k| k.starts_with(&format!("big.py:{start}-")))
        .unwrap()
        .clone();
    assert!(
        json[&label]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["summary"] == "relative TODO" && f["line"] == relative),
        "{json:#}"
    );
}

#[test]
fn one_event_seen_by_two_overlapping_windows_is_reported_once() {
    let mock = MockLlm::start();
    let url = mock.url();
    let mut lines: Vec<String> = (1..=1600)
        .map(|i| {
            format!(
                "2026-01-01T00:00:{:02} INFO worker {i} processed request id={i}",
                i % 60
            )
        })
        .collect();
    lines[189] = "2026-01-01T00:03:10 ERROR db call exceeded 30s".to_string();
    // The first window (1-200) and the second (181-380) both hold line 190, and word it
    // differently; the second rates it higher.
    lines[4] = format!(
        "2026-01-01T00:00:05 INFO {}",
        reply_marker(&findings(&[(json!(190), "Timeout talking to db", "medium")]))
    );
    lines[299] = format!(
        "2026-01-01T00:05:00 INFO {}",
        reply_marker(&findings(&[
            (json!(190), "Database call timed out", "high"),
            (json!(300), "Retry storm begins", "low"),
        ]))
    );
    let p = Project::new().file("app.log", &(lines.join("\n") + "\n"));
    let plan = openai(
        &p,
        &url,
        &["batch", "app.log", "Find problems in {file}", "--dry-run", "--json"],
    )
    .run()
    .json();
    let windows: Vec<(u64, u64)> = plan["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            let i = &u["inputs"][0];
            (i["start_line"].as_u64().unwrap(), i["end_line"].as_u64().unwrap())
        })
        .collect();
    assert!(
        windows.iter().filter(|(s, e)| *s <= 190 && 190 <= *e).count() == 2
            && windows.iter().filter(|(s, e)| *s <= 300 && 300 <= *e).count() == 1
            && windows[0].0 == 1
            && windows[0].1 >= 190,
        "the test needs line 190 in the first two windows and line 300 in the second alone: {windows:?}"
    );
    let out = openai(
        &p,
        &url,
        &[
            "batch",
            "app.log",
            "Find problems in {file}",
            "--aggregate",
            "merge",
            "--sarif",
            "r.sarif",
            "--fail-on",
            "error",
        ],
    )
    .run();
    out.assert_exit(1);
    let at_190: Vec<_> = sarif_results(&p.path().join("r.sarif"))
        .into_iter()
        .filter(|r| r.0.ends_with("app.log") && r.1 == 190)
        .collect();
    assert_eq!(
        at_190,
        vec![(
            at_190[0].0.clone(),
            190,
            "Timeout talking to db".to_string(),
            "error".to_string()
        )],
        "once, in the first window's words, at the higher level"
    );
    assert_eq!(p.report()["gate"], "failed", "--fail-on saw the higher level");
    let json = p.aggregate_json();
    let merged: Vec<&Value> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["line"] == 190)
        .collect();
    assert_eq!(merged.len(), 1, "{json:#}");
    assert!(
        json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["line"] == 300 && f["summary"] == "Retry storm begins"),
        "{json:#}"
    );
}

#[test]
fn a_name_that_is_not_utf8_keeps_its_own_name_in_findings() {
    use std::os::unix::ffi::OsStrExt;
    let mock = MockLlm::start();
    let url = mock.url();
    let p = Project::new().file("src/x/xFF.ts", "export const other = 0;\n");
    let answer = json!({"findings": [
        {"path": "src/x\\xFF.ts", "line": 1, "severity": "error", "message": "named by the model"},
        {"line": 1, "severity": "warning", "message": "named by nobody"},
    ]})
    .to_string();
    std::fs::write(
        p.path().join("src").join(std::ffi::OsStr::from_bytes(b"x\xff.ts")),
        format!("export const x = 1; // {}\n", reply_marker(&answer)),
    )
    .unwrap();
    let out = openai(&p, &url, &["batch", "src/*.ts", "Review {file}", "--sarif", "r.sarif"])
        .env("GITHUB_ACTIONS", "true")
        .run();
    out.assert_exit(0);
    let results = sarif_results(&p.path().join("r.sarif"));
    let ours: Vec<_> = results.iter().filter(|r| r.2.starts_with("named by")).collect();
    assert_eq!(ours.len(), 2, "{results:?}");
    for r in &ours {
        assert!(r.0.ends_with("src/x%FF.ts"), "the URI holds the name's bytes: {r:?}");
    }
    assert!(
        !results.iter().any(|r| r.0.ends_with("src/x/xFF.ts")),
        "no finding moved to the other file: {results:?}"
    );
    let annotations = format!("{}{}", out.stdout, out.stderr);
    assert!(
        annotations.contains("src/x\\xFF.ts,line=1"),
        "annotations show the escaped name: {annotations}"
    );
    assert!(!annotations.contains("src/x/xFF.ts,line=1"), "{annotations}");
}

#[test]
fn a_batch_answer_that_copies_the_templates_path_gives_each_member_its_findings() {
    // The README's CI prompt puts `"path": "{file}"` in its template; in a batch `{file}` is
    // the members joined by ", ", and a model that copies the template writes that list as
    // the path of every member's finding.
    let mock = MockLlm::start();
    let url = mock.url();
    let joined = "src/a.py, src/b.py";
    let finding = |line: u64, m: &str| json!({"path": joined, "line": line, "severity": "warning", "message": m});
    let answer = json!({"files": [
        {"file": "src/a.py", "findings": [finding(2, "TODO here")]},
        {"file": "src/b.py", "findings": [finding(2, "TODO here")]},
    ]})
    .to_string();
    let p = Project::new()
        .file("src/a.py", &format!("x = 1\n# TODO\n# {}\n", reply_marker(&answer)))
        .file("src/b.py", "y = 2\n# TODO\n");
    let prompt = r#"Review {file}. Answer with JSON only: {"findings": [{"path": "{file}", "line": 1, "severity": "error|warning|note", "message": "what"}]}"#;
    let out = openai(
        &p,
        &url,
        // The log in a directory the run makes (a fresh CI checkout has no `reports/`).
        &[
            "batch",
            "src",
            prompt,
            "--sarif",
            "reports/ci/r.sarif",
            "--fail-on",
            "warning",
        ],
    )
    .run();
    out.assert_exit(1);
    let batch_calls = mock
        .recorded()
        .iter()
        .filter(|r| r.user_text().contains(&format!("Review {joined}.")))
        .count();
    assert_eq!(batch_calls, 1, "one batch call, its {{file}} naming the members");
    let mut found = sarif_results(&p.path().join("reports/ci/r.sarif"));
    found.sort();
    let uris: Vec<(&str, u64)> = found
        .iter()
        .map(|(uri, line, _, _)| (uri.rsplit_once("/project/").map_or(uri.as_str(), |(_, rel)| rel), *line))
        .collect();
    assert_eq!(uris, [("src/a.py", 2), ("src/b.py", 2)], "{found:?}");
}

#[test]
fn a_finding_whose_path_leaves_the_project_is_placed_at_its_file() {
    // A model (or a file's content steering it) names a path outside the project: SARIF and
    // the annotations never point there; the finding was in this file's answer.
    let mock = MockLlm::start();
    let url = mock.url();
    let answer = json!({"findings": [
        {"path": "../../etc/passwd", "line": 1, "severity": "error", "message": "escape"},
    ]})
    .to_string();
    let p = Project::new().file("src/a.py", &format!("x = 1\n# {}\n", reply_marker(&answer)));
    let out = openai(&p, &url, &["batch", "src/*.py", "Review {file}", "--sarif", "r.sarif"])
        .env("GITHUB_ACTIONS", "true")
        .run();
    out.assert_exit(0);
    let found = sarif_results(&p.path().join("r.sarif"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].0.ends_with("/src/a.py") || found[0].0 == "src/a.py",
        "{found:?}"
    );
    assert!(
        !out.stdout.contains("passwd") && !out.stderr.contains("file=../"),
        "{}",
        out.stderr
    );
}

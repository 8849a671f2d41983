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

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

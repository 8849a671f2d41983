//! `rlm batch --neighbors-of` (graph-bounded inputs) and `--require-citations` through the
//! binary, against the mock LLM (issue 10).

mod support;

use std::collections::BTreeSet;

use support::mock_llm::*;
use support::*;

/// session → db; api → session; test → session; `src/other.ts` is unconnected.
fn ts_project() -> Project {
    Project::new()
        .file("src/db.ts", "export const db = {};\n")
        .file("src/session.ts", "import { db } from './db';\nexport const s = db;\n")
        .file("src/api.ts", "import { s } from './session';\nexport const api = s;\n")
        .file(
            "test/session.test.ts",
            "import { s } from '../src/session';\ntest(s);\n",
        )
        .file("src/other.ts", "export const other = 1;\n")
}

/// The files the mock was sent (the `File:` line of each per-file message).
fn files_sent(mock: &MockLlm) -> BTreeSet<String> {
    mock.recorded()
        .iter()
        .flat_map(|r| {
            r.user_text()
                .lines()
                .filter_map(|l| l.strip_prefix("File: ").map(str::to_string))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn set(paths: &[&str]) -> BTreeSet<String> {
    paths.iter().map(|p| p.to_string()).collect()
}

/// `rlm batch --neighbors-of NODE PROMPT --base-url URL EXTRA…`
fn neighbors_batch<'a>(node: &'a str, prompt: &'a str, url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["batch", "--neighbors-of", node, prompt, "--base-url", url];
    args.extend_from_slice(extra);
    args
}

#[test]
fn each_direction_and_depth_sends_exactly_the_connected_files() {
    let cases: &[(&str, &[&str], &[&str])] = &[
        ("src/session.ts", &["--direction", "in"], &["src/db.ts"]),
        (
            "src/session.ts",
            &["--direction", "out"],
            &["src/api.ts", "test/session.test.ts"],
        ),
        (
            "src/session.ts",
            &[],
            &["src/api.ts", "src/db.ts", "test/session.test.ts"],
        ),
        (
            "src/db.ts",
            &["--direction", "out", "--depth", "1"],
            &["src/session.ts"],
        ),
        (
            "./src/db.ts",
            &["--direction", "out", "--depth", "2"],
            &["src/api.ts", "src/session.ts", "test/session.test.ts"],
        ),
        (
            "src/api.ts",
            &["--direction", "in", "--depth", "2"],
            &["src/db.ts", "src/session.ts"],
        ),
        (
            "src/api.ts",
            &["--direction", "both", "--depth", "2"],
            &["src/db.ts", "src/session.ts", "test/session.test.ts"],
        ),
    ];
    let p = ts_project();
    for (i, (node, extra, expected)) in cases.iter().enumerate() {
        let mock = MockLlm::start();
        let url = mock.url();
        let out = p.rlm(&neighbors_batch(node, "List {file}", &url, extra)).run();
        out.assert_exit(0);
        assert_eq!(files_sent(&mock), set(expected), "case {i}: {node} {extra:?}");
        assert_eq!(mock.requests(), expected.len(), "case {i}");
        // Only the first run builds the index, and says so on stderr.
        let built = out.stderr.contains("rlm: no dependency index yet: built ");
        assert_eq!(built, i == 0, "case {i}: {}", out.stderr);
    }
}

#[test]
fn plan_settings_and_report_record_how_the_inputs_were_chosen() {
    let mock = MockLlm::start();
    let p = ts_project();
    let url = mock.url();
    p.rlm(&neighbors_batch(
        "src/db.ts",
        "List {file}",
        &url,
        &["--direction", "out", "--depth", "2", "-o", "out"],
    ))
    .run()
    .assert_exit(0);
    let expected = serde_json::json!({
        "axis": "neighbors",
        "node": "src/db.ts",
        "direction": "out",
        "depth": 2,
        "graph": "project",
    });
    let settings = read_json(&p.path().join("out/settings.json"));
    assert_eq!(settings["input"]["source"], expected);
    let plan = read_json(&p.path().join("out/plan.json"));
    assert_eq!(plan["input"], expected);
    let label = "--neighbors-of src/db.ts (direction out, depth 2, graph project)";
    assert_eq!(p.report()["pattern"], label);
    assert!(p.report_md().contains(label));
}

#[test]
fn a_graph_file_is_queried_instead_of_the_index() {
    let mock = MockLlm::start();
    let p = ts_project().file(
        "deps.json",
        r#"{"src/other.ts": {"downstream": [{"path": "src/db.ts", "type": "test"}]}}"#,
    );
    let url = mock.url();
    let out = p
        .rlm(&neighbors_batch(
            "src/other.ts",
            "List {file}",
            &url,
            &["--graph-file", "deps.json"],
        ))
        .run();
    out.assert_exit(0);
    assert_eq!(files_sent(&mock), set(&["src/db.ts"]));
    assert!(!p.exists(".aiwg/rlm/index/graph-v1.json"), "no index needed");
}

#[test]
fn an_unknown_node_is_a_usage_error_naming_it() {
    let mock = MockLlm::start();
    let p = ts_project();
    let url = mock.url();
    let out = p.rlm(&neighbors_batch("src/sesion.ts", "List {file}", &url, &[])).run();
    out.assert_exit(2);
    assert!(
        out.stderr
            .contains("unknown node `src/sesion.ts` in the project graph; did you mean")
            && out.stderr.contains("`src/session.ts`"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.requests(), 0);
}

#[test]
fn a_node_without_neighbors_is_an_error_naming_it() {
    let mock = MockLlm::start();
    let p = ts_project();
    let url = mock.url();
    let out = p
        .rlm(&neighbors_batch(
            "src/db.ts",
            "List {file}",
            &url,
            &["--direction", "in"],
        ))
        .run();
    assert_ne!(out.status, 0);
    assert!(
        out.stderr
            .contains("`src/db.ts` has no neighbors in the project graph (direction in, depth 1)"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.requests(), 0);
}

#[test]
fn a_pattern_and_neighbors_of_together_are_a_usage_error() {
    let mock = MockLlm::start();
    let p = ts_project();
    let url = mock.url();
    let out = p
        .rlm(&[
            "batch",
            "src/**/*.ts",
            "List {file}",
            "--neighbors-of",
            "src/db.ts",
            "--base-url",
            &url,
        ])
        .run();
    out.assert_exit(2);
    assert!(out.stderr.contains("exactly one input axis"), "{}", out.stderr);
    assert_eq!(mock.requests(), 0);
}

#[test]
fn graph_flags_need_neighbors_of_and_depth_is_range_checked() {
    let p = ts_project();
    let out = p.rlm(&["batch", "src/*.ts", "List", "--direction", "in"]).run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("--direction needs --neighbors-of PATH"),
        "{}",
        out.stderr
    );
    for depth in ["0", "11"] {
        let out = p
            .rlm(&["batch", "--neighbors-of", "src/db.ts", "List", "--depth", depth])
            .run();
        out.assert_exit(2);
        assert!(out.stderr.contains("--depth"), "{}", out.stderr);
    }
    let out = p
        .rlm(&["batch", "--neighbors-of", "src/db.ts", "List", "--graph", "ssot"])
        .run();
    out.assert_exit(2);
    assert!(out.stderr.contains("unknown graph `ssot`"), "{}", out.stderr);
}

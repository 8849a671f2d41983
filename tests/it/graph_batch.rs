//! `rlm batch --neighbors-of` (graph-bounded inputs) and `--require-citations` through the
//! binary, against the mock LLM (issue 10).

use std::collections::BTreeSet;

use crate::support::mock_llm::*;
use crate::support::*;

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

/// The files the mock was sent (named by their delimiters: one a message, or a pack's).
fn files_sent(mock: &MockLlm) -> BTreeSet<String> {
    mock.recorded()
        .iter()
        .flat_map(|r| crate::support::mock_llm::delimited_paths(&r.user_text()))
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
        // The connected files are TypeScript: one pack, or one call for a file alone.
        assert_eq!(mock.requests(), 1, "case {i}");
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
    let out = p
        .rlm(&[
            "batch",
            "--neighbors-of",
            "src/db.ts",
            "List",
            "--changed-since",
            "main",
        ])
        .run();
    out.assert_exit(2);
    assert!(
        out.stderr
            .contains("--changed-since and --neighbors-of each choose the input files"),
        "{}",
        out.stderr
    );
    let out = p
        .rlm(&["batch", "--neighbors-of", "src/db.ts", "List", "--include", "*.ts"])
        .run();
    out.assert_exit(2);
    assert!(
        out.stderr
            .contains("--include applies to a directory, not to --neighbors-of"),
        "{}",
        out.stderr
    );
}

// ---------------------------------------------------------------------------
// --require-citations

/// The first 16 hex characters of the sha256 of a project file.
fn hash16(p: &Project, path: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(p.read(path).as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

#[test]
fn require_citations_puts_each_files_hash_in_its_prompt_and_changes_the_cache_key() {
    let mock = MockLlm::start();
    let p = ts_project();
    let url = mock.url();
    let plain = neighbors_batch("src/session.ts", "List {file}", &url, &[]);
    p.rlm(&plain).run().assert_exit(0);
    // The three neighbours, all TypeScript, in one pack.
    assert_eq!(mock.requests(), 1);
    assert!(mock
        .recorded()
        .iter()
        .all(|r| !r.user_text().contains("CITATION REQUIREMENT")));

    mock.reset_counts();
    let cited = neighbors_batch("src/session.ts", "List {file}", &url, &["--require-citations"]);
    p.rlm(&cited).run().assert_exit(0);
    assert_eq!(
        mock.requests(),
        1,
        "a cited answer is not the uncited one from the cache"
    );
    let recorded = mock.recorded();
    for path in ["src/api.ts", "src/db.ts", "test/session.test.ts"] {
        let hash = hash16(&p, path);
        let prompt = recorded
            .iter()
            .map(|r| r.user_text())
            .find(|t| t.contains(&format!(" path=\"{path}\">")))
            .unwrap_or_else(|| panic!("no prompt for {path}"));
        assert!(
            prompt.contains("CITATION REQUIREMENT (--require-citations is active):"),
            "{prompt}"
        );
        assert!(prompt.contains(&format!("[{path}@{hash}, L<start>-<end>]")), "{prompt}");
        assert!(
            prompt.contains(&format!("content_hash is {hash}. Use it verbatim.")),
            "{prompt}"
        );
    }

    mock.reset_counts();
    p.rlm(&cited).run().assert_exit(0);
    assert_eq!(mock.requests(), 0, "the cited answers are cached under their own key");
}

#[test]
fn cited_aggregates_verify_when_fresh_and_fail_after_an_edit() {
    let mock = MockLlm::start();
    let p = ts_project();
    let url = mock.url();
    let (db, session) = (hash16(&p, "src/db.ts"), hash16(&p, "src/session.ts"));
    let reply = format!(
        "- **Shared db object** [src/db.ts@{db}, L1]\n- **Session wraps db** [src/session.ts@{session}, L1-2]\n"
    );
    let prompt = format!("List issues in {{file}} {}", reply_marker(&reply));
    for strategy in ["concat", "merge", "summarize"] {
        let out_dir = format!("out-{strategy}");
        let args = neighbors_batch(
            "src/api.ts",
            &prompt,
            &url,
            &[
                "--direction",
                "in",
                "--depth",
                "2",
                "--require-citations",
                "--aggregate",
                strategy,
                "-o",
                &out_dir,
            ],
        );
        p.rlm(&args).run().assert_exit(0);
        let aggregate = p.read(&format!("{out_dir}/aggregate.md"));
        match strategy {
            "merge" => assert!(
                aggregate.contains(&format!("- **Shared db object** [src/db.ts@{db}, L1]\n")),
                "{aggregate}"
            ),
            "summarize" => assert!(
                aggregate.contains(&format!(
                    "## Sources\n\n- src/db.ts@{db} (L1)\n- src/session.ts@{session} (L1-2)\n"
                )),
                "{aggregate}"
            ),
            _ => assert!(aggregate.contains(reply.trim_end()), "{aggregate}"),
        }
        let out = p.rlm(&["verify-citations", &format!("{out_dir}/aggregate.md")]).run();
        out.assert_exit(0);
    }
    let json = read_json(&p.path().join("out-merge/aggregate.json"));
    assert_eq!(
        json["citations"],
        serde_json::json!([
            {"artifact_id": "src/db.ts", "content_hash": db, "lines": "L1"},
            {"artifact_id": "src/session.ts", "content_hash": session, "lines": "L1-2"}
        ])
    );
    p.rlm(&["verify-citations", "out-merge/aggregate.json"])
        .run()
        .assert_exit(0);
    // The summarizer was told not to drop citations.
    let summary_call = mock
        .recorded()
        .into_iter()
        .find(|r| r.user_text().contains(SUMMARY_PHRASE))
        .expect("a summary call");
    assert!(summary_call
        .system_text()
        .contains("You MUST NOT drop or omit citations"));

    p.write("src/db.ts", "export const db = { edited: true };\n");
    for file in [
        "out-concat/aggregate.md",
        "out-merge/aggregate.md",
        "out-summarize/aggregate.md",
        "out-merge/aggregate.json",
    ] {
        let out = p.rlm(&["verify-citations", file]).run();
        out.assert_exit(1);
        assert!(
            out.stdout.contains("stale") || out.stderr.contains("stale"),
            "{file}: {}{}",
            out.stdout,
            out.stderr
        );
    }
}

#[test]
fn require_citations_reaches_batched_and_chunked_units() {
    let mock = MockLlm::start();
    let long: String = (0..1800).map(|i| format!("export const v{i} = {i};\n")).collect();
    let p = ts_project().file("big/long.ts", &long);
    let url = mock.url();
    // Small files batched together: every member's hash is in the one prompt.
    let out = p
        .rlm(&batch(
            "src/*.ts",
            &url,
            &["--batch-small", "--require-citations", "--dry-run", "--json"],
        ))
        .run();
    out.assert_exit(0);
    let plan = out.stdout.clone();
    for path in ["src/api.ts", "src/db.ts", "src/session.ts"] {
        let cite = format!("[{path}@{}, L<start>-<end>]", hash16(&p, path));
        assert!(plan.contains(&cite), "{cite} missing from {plan}");
    }
    // A file cut into chunks: each chunk cites the whole file's hash within its own lines.
    let out = p
        .rlm(&batch(
            "big/long.ts",
            &url,
            &["--require-citations", "--dry-run", "--json"],
        ))
        .run();
    out.assert_exit(0);
    let plan = out.json();
    let units = plan["units"].as_array().expect("units");
    assert!(units.len() >= 2, "{plan}");
    let cite = format!("[big/long.ts@{}, L<start>-<end>]", hash16(&p, "big/long.ts"));
    for unit in units {
        let text = unit.to_string();
        assert!(text.contains(&cite.replace('"', "\\\"")), "{text}");
        assert!(text.contains("This part of the file is lines L"), "{text}");
    }
    assert_eq!(mock.requests(), 0, "a dry run calls nothing");
}

/// A graph file is another tool's word on which files are connected, not the user's
/// pointing at them: a neighbour it names through a symbolic link that leads out of the
/// project (`keys -> ~/.ssh`, `src/pw.ts -> /etc/passwd`) is held to the policy of a glob
/// and `--files-from` — skipped, named, never sent — unless `--follow-links`.
#[cfg(unix)]
#[test]
fn a_neighbor_reached_through_a_link_out_of_the_project_is_never_sent() {
    let mock = MockLlm::start();
    let p = ts_project().file(
        "deps.json",
        r#"{"src/other.ts": {"upstream": ["keys/id_rsa", "src/pw.ts", "src/db.ts"]}}"#,
    );
    let ssh = p.path().parent().unwrap().join("home/.ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_rsa"), "-----BEGIN PRIVATE KEY-----\n").unwrap();
    std::fs::write(ssh.join("passwd"), "root:x:0:0\n").unwrap();
    std::os::unix::fs::symlink(&ssh, p.path().join("keys")).unwrap();
    std::os::unix::fs::symlink(ssh.join("passwd"), p.path().join("src/pw.ts")).unwrap();
    let url = mock.url();
    let out = p
        .rlm(&neighbors_batch(
            "src/other.ts",
            "List {file}",
            &url,
            &["--graph-file", "deps.json", "--direction", "in"],
        ))
        .run();
    out.assert_exit(0);
    assert_eq!(files_sent(&mock), set(&["src/db.ts"]), "{}", out.stderr);
    assert!(
        mock.recorded()
            .iter()
            .all(|r| !r.user_text().contains("PRIVATE KEY") && !r.user_text().contains("root:x")),
        "a file outside the project was sent"
    );
    assert!(
        out.stderr.contains("keys/id_rsa") && out.stderr.contains("src/pw.ts") && out.stderr.contains("--follow-links"),
        "{}",
        out.stderr
    );
}

//! CI inputs and outputs through the binary: `--changed-since` in a real git repository,
//! `--files-from` (and `--null`), a pattern as their filter, findings written as SARIF,
//! GitHub annotations and step summary, `--fail-on`, and an empty change set exiting 0.

use std::path::Path;
use std::process::Command;

use crate::support::mock_llm::*;
use crate::support::*;
use serde_json::Value;

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git runs (the CI tests need git)");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A file whose call the mock answers with one finding at `line` of `level`.
fn with_finding(path: &str, line: u32, level: &str) -> String {
    let answer = format!(
        r#"{{"findings": [{{"path": "{path}", "line": {line}, "severity": "{level}", "type": "bug", "message": "a {level} here"}}]}}"#
    );
    format!("export const x = 1;\n// {}\n", reply_marker(&answer))
}

/// A repository with a base commit (tagged `base`) and a head commit that modifies a.ts,
/// adds c.ts and c.md, and deletes b.ts.
fn repo() -> Project {
    let p = Project::new()
        .file("src/a.ts", "export const a = 1;\n")
        .file("src/b.ts", "export const b = 1;\n")
        .file("src/keep.ts", "export const k = 1;\n")
        .file("src/old_name.ts", "export const renamed = 1;\n");
    git(p.path(), &["init", "-q", "-b", "main"]);
    git(p.path(), &["add", "."]);
    git(p.path(), &["commit", "-qm", "base"]);
    git(p.path(), &["tag", "base"]);
    p.write("src/a.ts", &with_finding("src/a.ts", 2, "error"));
    p.write("src/c.ts", "export const c = 1;\n");
    p.write("docs/c.md", "# c\n");
    std::fs::remove_file(p.path().join("src/b.ts")).unwrap();
    git(p.path(), &["add", "-A"]);
    git(p.path(), &["mv", "src/old_name.ts", "src/new_name.ts"]);
    git(p.path(), &["commit", "-qm", "head"]);
    p
}

/// Git must not see the repository the tests run inside (target/ of rlm's own checkout).
fn isolated(p: &Project, args: &[&str]) -> Run {
    let parent = p.path().parent().unwrap().display().to_string();
    p.rlm(args).env("GIT_CEILING_DIRECTORIES", &parent)
}

/// The files the requests sent, each named by its delimiters (one a request, or the files
/// of a pack).
fn sent_paths(mock: &MockLlm) -> Vec<String> {
    let mut paths: Vec<String> = mock
        .recorded()
        .iter()
        .flat_map(|r| delimited_paths(&r.user_text()))
        .collect();
    paths.sort();
    paths
}

#[test]
fn changed_since_sends_only_added_and_modified_files_and_a_pattern_filters_them() {
    let mock = MockLlm::start();
    let p = repo();
    let url = mock.url();
    isolated(
        &p,
        &[
            "batch",
            "Review {file}",
            "--changed-since",
            "base",
            "--base-url",
            &url,
            "-o",
            "out",
        ],
    )
    .run()
    .assert_exit(0);
    assert_eq!(
        sent_paths(&mock),
        ["docs/c.md", "src/a.ts", "src/c.ts", "src/new_name.ts"],
        "added, modified and renamed; deleted b.ts is not an input"
    );
    mock.reset_counts();
    isolated(
        &p,
        &[
            "batch",
            "src/**/*.ts",
            "Review {file}",
            "--changed-since",
            "base",
            "--base-url",
            &url,
            "-o",
            "out",
            "--no-cache",
        ],
    )
    .run()
    .assert_exit(0);
    assert_eq!(sent_paths(&mock), ["src/a.ts", "src/c.ts", "src/new_name.ts"]);
    assert_eq!(p.report()["pattern"], "files changed since base matching src/**/*.ts");
}

#[test]
fn no_changed_file_is_success_with_an_empty_sarif_and_no_key_needed() {
    let mock = MockLlm::start();
    let p = repo();
    let url = mock.url();
    let out = isolated(
        &p,
        &[
            "batch",
            "**/*.py",
            "Review {file}",
            "--changed-since",
            "HEAD",
            "--base-url",
            &url,
            "--sarif",
            "reports/empty.sarif",
        ],
    )
    .env_remove("ANTHROPIC_API_KEY")
    .run();
    out.assert_exit(0);
    assert!(out.stderr.contains("no files to process"), "{}", out.stderr);
    assert_eq!(mock.requests(), 0);
    let sarif: Value = serde_json::from_str(&p.read("reports/empty.sarif")).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    assert_eq!(sarif["runs"][0]["results"].as_array().unwrap().len(), 0);

    // --json: the same words as every report (SUCCESS, a schema version, the exit code).
    let args = [
        "batch",
        "**/*.py",
        "Review {file}",
        "--changed-since",
        "HEAD",
        "--base-url",
        &url,
        "--json",
    ];
    let out = isolated(&p, &args).env_remove("ANTHROPIC_API_KEY").run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(doc["status"], "SUCCESS", "{doc}");
    assert_eq!(doc["exit_code"], 0, "{doc}");
    assert!(doc["schema_version"].is_u64(), "{doc}");
    // A SARIF log that cannot be written is an error of the run, not a silent pass.
    p.write("blocker", "a file, not a directory\n");
    let mut args = args.to_vec();
    args.extend_from_slice(&["--sarif", "blocker/out.sarif"]);
    let out = isolated(&p, &args).env_remove("ANTHROPIC_API_KEY").run();
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(doc["status"], "PARTIAL", "{doc}");
    assert!(doc["error"].as_str().unwrap().starts_with("--sarif: "), "{doc}");
}

/// A SARIF path that cannot be written (under a file, or a directory itself) stops the run
/// before anything is sent, exit 2, naming it; it was found out once every call had been
/// paid for, and the run ended PARTIAL. Directories missing on its way are made, as ESLint's
/// `-o` and rlm's `--save-trajectory` do: `-o out --sarif out/rlm.sarif` on a first run, or
/// `--sarif reports/rlm.sarif` in a fresh CI checkout.
#[test]
fn a_sarif_path_that_cannot_be_written_stops_the_run_before_a_call_and_the_report_names_the_one_asked_for() {
    let mock = MockLlm::start();
    let url = mock.url();
    let p = Project::new()
        .file("src/a.ts", &with_finding("src/a.ts", 2, "warning"))
        .file("blocker", "a file, not a directory\n");
    let base = ["batch", "src/*.ts", "Review {file}", "--base-url", &url, "-o", "out"];
    for sarif in ["blocker/out.sarif", "blocker/deeper/out.sarif", "src"] {
        let mut args = base.to_vec();
        args.extend_from_slice(&["--sarif", sarif]);
        let out = p.rlm(&args).env_remove("ANTHROPIC_API_KEY").run();
        out.assert_exit(2);
        let last = out.stderr.lines().last().unwrap_or_default();
        assert!(last.starts_with("rlm: error: --sarif "), "{}", out.stderr);
        assert!(last.contains(sarif), "{}", out.stderr);
        assert_eq!(mock.requests(), 0, "{sarif}: nothing is sent");
        assert!(!p.exists("out/report.json"));
    }

    for sarif in ["asked.sarif", "out/in-the-run-directory.sarif", "reports/ci/rlm.sarif"] {
        let mut args = base.to_vec();
        args.extend_from_slice(&["--sarif", sarif]);
        let out = p.rlm(&args).env_remove("ANTHROPIC_API_KEY").run();
        out.assert_exit(0);
        let report = p.report();
        assert_eq!(report["findings"]["sarif"], sarif, "{report:#}");
        assert_valid_sarif(&serde_json::from_str(&p.read(sarif)).unwrap());
    }
}

#[test]
fn a_bad_ref_or_no_repository_is_one_clear_usage_error() {
    let mock = MockLlm::start();
    let p = repo();
    let url = mock.url();
    let out = isolated(
        &p,
        &[
            "batch",
            "Review {file}",
            "--changed-since",
            "no-such-branch",
            "--base-url",
            &url,
        ],
    )
    .run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("unknown git ref `no-such-branch`"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    let plain = Project::new().file("a.ts", "x\n");
    let out = isolated(
        &plain,
        &["batch", "Review {file}", "--changed-since", "main", "--base-url", &url],
    )
    .run();
    out.assert_exit(2);
    assert!(out.stderr.contains("not inside a git work tree"), "{}", out.stderr);
    assert_eq!(mock.requests(), 0);
}

#[test]
fn files_from_reads_a_list_or_stdin_skips_missing_files_and_links_out_of_the_tree() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("src/a.ts", "export const a = 1;\n")
        .file("src/b.py", "b = 1\n")
        .file("list.txt", "src/a.ts\n./src/b.py\nsrc/gone.ts\n");
    let url = mock.url();
    let out = isolated(
        &p,
        &[
            "batch",
            "Review {file}",
            "--files-from",
            "list.txt",
            "--base-url",
            &url,
            "-o",
            "out",
        ],
    )
    .run();
    out.assert_exit(0);
    assert_eq!(sent_paths(&mock), ["src/a.ts", "src/b.py"]);
    let skipped = p.report()["skipped"].to_string();
    assert!(
        skipped.contains("src/gone.ts") && skipped.contains("does not exist"),
        "{skipped}"
    );

    // NUL-separated on stdin, with a pattern as the filter.
    mock.reset_counts();
    isolated(
        &p,
        &[
            "batch",
            "**/*.py",
            "Review {file}",
            "--files-from",
            "-",
            "--null",
            "--base-url",
            &url,
            "-o",
            "out",
            "--no-cache",
        ],
    )
    .stdin(b"src/a.ts\0src/b.py\0")
    .run()
    .assert_exit(0);
    assert_eq!(sent_paths(&mock), ["src/b.py"]);

    // A listed link that leads out of the working directory is not followed.
    #[cfg(unix)]
    {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "KEY=1\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), p.path().join("link.txt")).unwrap();
        p.write("list2.txt", "link.txt\nsrc/a.ts\n");
        mock.reset_counts();
        isolated(
            &p,
            &[
                "batch",
                "Review {file}",
                "--files-from",
                "list2.txt",
                "--base-url",
                &url,
                "-o",
                "out",
                "--no-cache",
            ],
        )
        .run()
        .assert_exit(0);
        assert_eq!(sent_paths(&mock), ["src/a.ts"]);
        assert!(!mock.recorded().iter().any(|r| r.user_text().contains("KEY=1")));
    }
}

/// A branch (after `base`) that changes a source file and files a walk leaves out: a hidden
/// `.env` and workflow, a lock file, build output, a dependency, a minified file.
fn repo_with_left_out_changes() -> Project {
    let p = repo();
    for (path, content) in [
        (".env", "API_TOKEN=do-not-send\n"),
        (".github/workflows/ci.yml", "on: push\n"),
        ("package-lock.json", "{}\n"),
        ("dist/x.js", "built();\n"),
        ("node_modules/z/y.js", "dep();\n"),
        ("app.min.js", "min();\n"),
        ("src/d.ts", "export const d = 1;\n"),
    ] {
        p.write(path, content);
    }
    git(p.path(), &["add", "-A", "--force"]);
    git(p.path(), &["commit", "-qm", "more"]);
    p
}

/// What a walk leaves out, as the changed files list it.
const LEFT_OUT: [&str; 6] = [
    ".env",
    ".github/workflows/ci.yml",
    "app.min.js",
    "dist/x.js",
    "node_modules/z/y.js",
    "package-lock.json",
];

#[test]
fn both_ci_input_axes_select_what_the_pattern_selects_in_a_walk_and_list_what_they_leave_out() {
    let mock = MockLlm::start();
    let p = repo_with_left_out_changes();
    let url = mock.url();
    let diff = Command::new("git")
        .args(["diff", "-z", "--name-only", "--diff-filter=ACMR", "base...HEAD"])
        .current_dir(p.path())
        .output()
        .unwrap();
    p.write_bytes("changed.z", &diff.stdout);
    let reviewed = ["docs/c.md", "src/a.ts", "src/c.ts", "src/d.ts", "src/new_name.ts"];
    let axes: [&[&str]; 2] = [&["--changed-since", "base"], &["--files-from", "changed.z", "--null"]];
    for axis in axes {
        mock.reset_counts();
        let mut args = vec![
            "batch",
            "**/*",
            "Review {file}",
            "--base-url",
            &url,
            "-o",
            "out",
            "--no-cache",
        ];
        args.extend_from_slice(axis);
        isolated(&p, &args).run().assert_exit(0);
        assert_eq!(sent_paths(&mock), reviewed, "{axis:?}");
        assert!(
            !mock.recorded().iter().any(|r| r.user_text().contains("do-not-send")),
            "{axis:?}: .env sent"
        );
        let report = p.report();
        let skipped: Vec<(String, String)> = report["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["path"].as_str().unwrap().to_string(),
                    s["reason"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let paths: Vec<&str> = skipped.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, LEFT_OUT, "{axis:?}: listed with why");
        assert!(
            skipped[0].1.contains("hidden") && skipped[0].1.contains("--hidden"),
            "{skipped:?}"
        );
        assert!(skipped[3].1.contains("excluded by default (in dist/)"), "{skipped:?}");
        assert!(skipped[5].1.contains("a lock file"), "{skipped:?}");
    }
    // The walk under the same pattern agrees (it also sees the unchanged files).
    let plan = isolated(
        &p,
        &[
            "batch",
            "**/*",
            "Review {file}",
            "--base-url",
            &url,
            "--dry-run",
            "--json",
        ],
    )
    .run()
    .json();
    let walked: Vec<&str> = plan["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert!(reviewed.iter().all(|r| walked.contains(r)), "{walked:?}");
    assert!(LEFT_OUT.iter().all(|l| !walked.contains(l)), "{walked:?}");

    // A pattern that names a rule lifts it, as for a glob; so does --hidden.
    for (pattern, extra, sent) in [
        (".env", &[][..], vec![".env"]),
        ("**/*.min.js", &[][..], vec!["app.min.js"]),
        ("node_modules/**", &[][..], vec!["node_modules/z/y.js"]),
        (".github/**/*.yml", &[][..], vec![".github/workflows/ci.yml"]),
        (
            "**/*",
            &["--hidden"][..],
            vec![
                ".env",
                ".github/workflows/ci.yml",
                "docs/c.md",
                "src/a.ts",
                "src/c.ts",
                "src/d.ts",
                "src/new_name.ts",
            ],
        ),
    ] {
        for axis in axes {
            mock.reset_counts();
            let mut args = vec![
                "batch",
                pattern,
                "Review {file}",
                "--base-url",
                &url,
                "-o",
                "out",
                "--no-cache",
            ];
            args.extend_from_slice(axis);
            args.extend_from_slice(extra);
            isolated(&p, &args).run().assert_exit(0);
            assert_eq!(sent_paths(&mock), sent, "{pattern} {axis:?} {extra:?}");
        }
    }
}

#[test]
fn the_action_script_reviews_the_same_files_from_either_axis_with_its_default_pattern() {
    let mock = MockLlm::start();
    let p = repo_with_left_out_changes();
    let diff = Command::new("git")
        .args(["diff", "-z", "--name-only", "--diff-filter=ACMR", "base...HEAD"])
        .current_dir(p.path())
        .output()
        .unwrap();
    p.write_bytes("changed.z", &diff.stdout);
    let parent = p.path().parent().unwrap().display().to_string();
    let axes: [&[(&str, &str)]; 2] = [
        &[("RLM_CHANGED_SINCE", "base")],
        &[("RLM_FILES_FROM", "changed.z"), ("RLM_NULL", "true")],
    ];
    for axis in axes {
        // RLM_PATTERN unset: the Action's default, **/*.
        let out = Command::new("bash")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/ci-review"))
            .current_dir(p.path())
            .env("RLM_BIN", env!("CARGO_BIN_EXE_rlm"))
            .env("RLM_BASE_URL", mock.url())
            .env("RLM_OUTPUT_DIR", "out")
            .env("RLM_API_KEY", TEST_KEY)
            .env("GIT_CEILING_DIRECTORIES", &parent)
            .env_remove("RLM_PATTERN")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .envs(axis.iter().copied())
            .output()
            .expect("bash runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{axis:?}: {stderr}");
        // The second axis is answered from the cache: the same files, each with its result.
        let report = p.report();
        assert_eq!(report["files_succeeded"], 5, "{axis:?}");
        assert_eq!(
            sent_paths(&mock),
            ["docs/c.md", "src/a.ts", "src/c.ts", "src/d.ts", "src/new_name.ts"],
            "{axis:?}"
        );
        for file in ["docs-c.md", "src-a.ts", "src-c.ts", "src-d.ts", "src-new_name.ts"] {
            assert!(p.exists(&format!("out/{file}.result.md")), "{axis:?}: {file}");
        }
        assert_eq!(report["skipped"].as_array().unwrap().len(), LEFT_OUT.len(), "{axis:?}");
    }
    // docs/c.md alone of its type, the four TypeScript files in one pack.
    assert_eq!(sent_paths(&mock).len(), 5, "each file reviewed once, whichever axis");
    assert_eq!(mock.requests(), 2);
    assert!(!mock.recorded().iter().any(|r| r.user_text().contains("do-not-send")));
}

#[test]
fn a_bare_files_from_list_sends_what_it_names_and_warns_about_what_a_walk_leaves_out() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file(".env", "API_TOKEN=1\n")
        .file("dist/x.js", "built();\n")
        .file("src/a.ts", "export const a = 1;\n")
        .file("list.txt", ".env\ndist/x.js\nsrc/a.ts\n");
    let url = mock.url();
    let out = isolated(
        &p,
        &[
            "batch",
            "Review {file}",
            "--files-from",
            "list.txt",
            "--base-url",
            &url,
            "-o",
            "out",
        ],
    )
    .run();
    out.assert_exit(0);
    assert_eq!(
        sent_paths(&mock),
        [".env", "dist/x.js", "src/a.ts"],
        "an explicit list is sent as named"
    );
    let warning = out
        .stderr
        .lines()
        .find(|l| l.contains("listed files are sent"))
        .unwrap_or_else(|| panic!("{}", out.stderr))
        .to_string();
    assert!(
        warning.contains(".env (hidden)") && warning.contains("dist/x.js (in dist/)") && !warning.contains("src/a.ts"),
        "{warning}"
    );
    assert!(warning.contains("'**/*'"), "says how to filter: {warning}");
    let warnings = p.report()["warnings"].to_string();
    assert!(warnings.contains(".env (hidden)"), "{warnings}");
    // Under -q the warning is still said: it is what left the machine.
    let out = isolated(
        &p,
        &[
            "batch",
            "Review {file}",
            "--files-from",
            "list.txt",
            "--base-url",
            &url,
            "-o",
            "out",
            "-q",
        ],
    )
    .run();
    assert!(out.stderr.contains(".env (hidden)"), "{}", out.stderr);
}

#[test]
fn findings_become_sarif_annotations_a_step_summary_and_fail_on_decides_the_exit() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("src/a.ts", &with_finding("src/a.ts", 2, "error"))
        .file("src/b.ts", &with_finding("src/b.ts", 1, "note"))
        .file("summary.md", "");
    let url = mock.url();
    let summary = p.path().join("summary.md").display().to_string();
    let out = isolated(
        &p,
        &[
            "batch",
            "src/*.ts",
            "Review {file}",
            // The mock answers a pack with the first file's findings only.
            "--no-batch-small",
            "--base-url",
            &url,
            "-o",
            "out",
            "--sarif",
            "review.sarif",
        ],
    )
    .env("GITHUB_ACTIONS", "true")
    .env("GITHUB_STEP_SUMMARY", &summary)
    .run();
    out.assert_exit(0);
    let sarif: Value = serde_json::from_str(&p.read("review.sarif")).unwrap();
    assert_eq!(
        sarif,
        serde_json::from_str::<Value>(&p.read("out/results.sarif")).unwrap()
    );
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    let error = results.iter().find(|r| r["level"] == "error").unwrap();
    let location = &error["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], "src/a.ts");
    assert_eq!(location["region"]["startLine"], 2);
    assert!(out.stderr.contains("::error file=src/a.ts,line=2"), "{}", out.stderr);
    assert!(out.stderr.contains("::notice file=src/b.ts,line=1"), "{}", out.stderr);
    assert!(p.read("summary.md").contains("RLM Batch Completion Report"));
    let report = p.report();
    assert_eq!(report["findings"]["error"], 1);
    assert_eq!(report["findings"]["note"], 1);

    // --fail-on: an error fails the run; only notes under --fail-on warning do not.
    let out = isolated(
        &p,
        &[
            "batch",
            "src/*.ts",
            "Review {file}",
            // The mock answers a pack with the first file's findings only.
            "--no-batch-small",
            "--base-url",
            &url,
            "-o",
            "out",
            "--fail-on",
            "error",
        ],
    )
    .run();
    out.assert_exit(1);
    assert_eq!(mock.requests(), 2, "the rerun is served from the cache");
    isolated(
        &p,
        &[
            "batch",
            "src/b.ts",
            "Review {file}",
            // The mock answers a pack with the first file's findings only.
            "--no-batch-small",
            "--base-url",
            &url,
            "-o",
            "out",
            "--fail-on",
            "warning",
        ],
    )
    .run()
    .assert_exit(0);
}

#[test]
fn json_stdout_is_one_document_even_with_annotations() {
    let mock = MockLlm::start();
    let p = Project::new().file("src/a.ts", &with_finding("src/a.ts", 2, "warning"));
    let url = mock.url();
    let out = isolated(
        &p,
        &[
            "batch",
            "src/*.ts",
            "Review {file}",
            "--base-url",
            &url,
            "--json",
            "--fail-on",
            "warning",
        ],
    )
    .env("GITHUB_ACTIONS", "true")
    .run();
    out.assert_exit(1);
    let report: Value = serde_json::from_str(&out.stdout).expect("stdout is one JSON document");
    assert_eq!(report["findings"]["warning"], 1);
    assert!(out.stderr.contains("::warning file=src/a.ts,line=2"));
}

/// Validates against the published SARIF 2.1.0 schema (tests/data, no network). Its two
/// `language` patterns have a stray `]` that the validator rejects as a regex: escaped here.
fn assert_valid_sarif(sarif: &Value) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/data/sarif-2.1.0-rtm.5.json");
    let bad = "^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$";
    let text = std::fs::read_to_string(path).unwrap().replace(
        &serde_json::to_string(bad).unwrap(),
        &serde_json::to_string(&bad.replace("}]", "}\\]")).unwrap(),
    );
    let schema: Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft4)
        .build(&schema)
        .expect("the SARIF schema compiles");
    let errors: Vec<String> = validator.iter_errors(sarif).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "invalid SARIF: {errors:?}\n{sarif:#}");
}

#[test]
fn the_action_script_reviews_a_pull_request_end_to_end() {
    let mock = MockLlm::start();
    let p = repo();
    let summary = p.path().join("summary.md");
    let output = p.path().join("github_output");
    std::fs::write(&summary, "").unwrap();
    let parent = p.path().parent().unwrap().display().to_string();
    let run = |fail_on: &str| {
        Command::new("bash")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/ci-review"))
            .current_dir(p.path())
            .env("RLM_BIN", env!("CARGO_BIN_EXE_rlm"))
            .env("RLM_CHANGED_SINCE", "base")
            .env("RLM_PATTERN", "src/**/*.ts")
            .env("RLM_BASE_URL", mock.url())
            .env("RLM_FAIL_ON", fail_on)
            .env("RLM_SARIF", "review.sarif")
            .env("RLM_API_KEY", TEST_KEY)
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env("GITHUB_OUTPUT", &output)
            .env("GIT_CEILING_DIRECTORIES", &parent)
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .output()
            .expect("bash runs")
    };
    let out = run("error");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "an error finding fails the step: {stderr}");
    assert_eq!(sent_paths(&mock), ["src/a.ts", "src/c.ts", "src/new_name.ts"]);
    assert!(stderr.contains("::error file=src/a.ts,line=2"), "{stderr}");
    assert!(!stderr.contains(TEST_KEY), "the key never reaches the log");
    let sarif: Value = serde_json::from_str(&p.read("review.sarif")).unwrap();
    assert_valid_sarif(&sarif);
    assert!(p.read("summary.md").contains("RLM Batch Completion Report"));
    let outputs = p.read("github_output");
    assert!(
        outputs.contains("exit-code=1") && outputs.contains("sarif=review.sarif"),
        "{outputs}"
    );
    // fail-on none: the same findings, exit 0, nothing paid twice (the three files were
    // one pack).
    let out = run("none");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(mock.requests(), 1);
}

/// The Action and the example workflow as zizmor wants them (CI runs zizmor itself; this
/// says what must hold without it): every action pinned to a 40-hex commit SHA with its
/// version in a comment, the build cached by restore/save steps with the save right after
/// the build, no write to GITHUB_PATH, and a checkout that does not keep the token.
#[test]
fn the_action_and_example_pin_every_action_and_cache_right_after_the_build() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let action = std::fs::read_to_string(root.join("action.yml")).unwrap();
    let example = std::fs::read_to_string(root.join("examples/ci/rlm-review.yml")).unwrap();
    for (name, text) in [("action.yml", &action), ("rlm-review.yml", &example)] {
        for line in text
            .lines()
            .filter(|l| l.trim_start().starts_with("- uses:") || l.trim_start().starts_with("uses:"))
        {
            let reference = line.split("uses:").nth(1).unwrap().trim();
            let (_, rest) = reference.split_once('@').unwrap_or_else(|| panic!("{name}: {line}"));
            let (sha, comment) = rest.split_once(' ').unwrap_or((rest, ""));
            assert!(
                sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
                "{name}: not pinned to a SHA: {line}"
            );
            assert!(
                comment.trim_start().starts_with("# v"),
                "{name}: no version comment: {line}"
            );
        }
        assert!(!text.contains("GITHUB_PATH"), "{name} writes GITHUB_PATH");
    }
    let at = |needle: &str| {
        action
            .find(needle)
            .unwrap_or_else(|| panic!("action.yml has no {needle}"))
    };
    assert!(
        !action.contains("uses: actions/cache@"),
        "the all-in-one cache saves only on success"
    );
    assert!(at("uses: actions/cache/restore@") < at("name: Build rlm"));
    assert!(at("name: Build rlm") < at("uses: actions/cache/save@"));
    assert!(at("uses: actions/cache/save@") < at("name: Review with rlm"));
    assert!(example.contains("persist-credentials: false"));
}

//! Directory mode through the binary: `rlm batch DIR "prompt"` with its default exclusions,
//! `--include` / `--exclude`, `--no-recursive`, `--max-files`, the symbolic-link policy and
//! the usage errors, against the mock LLM.

use crate::support::mock_llm::*;
use crate::support::*;
use serde_json::Value;

/// The paths of a dry run's `files`, in order.
/// `rlm batch DIR "List {file}" --base-url URL EXTRA...` with directory mode's defaults
/// (small files batched), not the shared helper's one call a file.
fn batch<'a>(dir: &'a str, url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    packed(dir, url, extra)
}

fn planned(out: &Output) -> Vec<String> {
    out.json()["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect()
}

/// `rlm batch DIR "List {file}" --dry-run --json EXTRA...` against a mock.
fn dry_run(p: &Project, url: &str, dir: &str, extra: &[&str]) -> Vec<String> {
    let mut args = batch(dir, url, &["--dry-run", "--json"]);
    args.extend_from_slice(extra);
    let out = p.rlm(&args).run();
    out.assert_exit(0);
    planned(&out)
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// A file of `n` lines.
fn lines(n: usize) -> String {
    (0..n).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn default_exclusions_apply_below_the_directory() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("src/main.py", "print(1)\n")
        .file("src/lib/util.py", "x = 1\n")
        .file("src/node_modules/dep/index.js", "x\n")
        .file("src/vendor/v.py", "x\n")
        .file("src/.venv/lib.py", "x\n")
        .file("src/__pycache__/m.py", "x\n")
        .file("src/dist/bundle.js", "x\n")
        .file("src/build/out.py", "x\n")
        .file("src/target/debug.rs", "x\n")
        .file("src/out/gen.py", "x\n")
        .file("src/package-lock.json", "{}\n")
        .file("src/Cargo.lock", "x\n")
        .file("src/app.min.js", "x\n")
        .file("src/app.js.map", "x\n")
        .file("src/types.d.ts", "x\n")
        .file("src/.git/config", "x\n");
    let url = mock.url();
    let got = dry_run(&p, &url, "src", &[]);
    assert_eq!(sorted(got), ["src/lib/util.py", "src/main.py"]);
    assert_eq!(mock.requests(), 0);
}

#[test]
fn an_include_that_names_a_default_exclusion_lifts_it() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("src/a.py", "a\n")
        .file("src/vendor/v.py", "v\n")
        .file("src/types.d.ts", "t\n")
        .file("src/x.ts", "x\n");
    let url = mock.url();
    let got = dry_run(&p, &url, "src", &["--include", "vendor/**", "--include", "*.d.ts"]);
    assert_eq!(sorted(got), ["src/types.d.ts", "src/vendor/v.py"]);
}

#[test]
fn include_and_exclude_match_paths_relative_to_the_directory() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("proj/app.py", "a\n")
        .file("proj/pkg/deep/mod.py", "m\n")
        .file("proj/pkg/data.csv", "c\n")
        .file("proj/tests/test_app.py", "t\n")
        .file("proj/README.md", "r\n");
    let url = mock.url();
    // A bare glob matches at any depth.
    let got = dry_run(&p, &url, "proj", &["--include", "*.py"]);
    assert_eq!(
        sorted(got),
        ["proj/app.py", "proj/pkg/deep/mod.py", "proj/tests/test_app.py"]
    );
    // Repeatable, and a folder excluded by name is not walked into.
    let got = dry_run(
        &p,
        &url,
        "proj",
        &["--include", "*.py", "--include", "*.md", "--exclude", "tests"],
    );
    assert_eq!(sorted(got), ["proj/README.md", "proj/app.py", "proj/pkg/deep/mod.py"]);
    // A glob with a slash is anchored at the directory.
    let got = dry_run(&p, &url, "proj", &["--include", "pkg/*.csv"]);
    assert_eq!(got, ["proj/pkg/data.csv"]);
    let got = dry_run(&p, &url, "./proj/", &["--exclude", "pkg/**", "--exclude", "*.md"]);
    assert_eq!(sorted(got), ["proj/app.py", "proj/tests/test_app.py"]);
}

#[test]
fn no_recursive_keeps_only_the_top_level() {
    let mock = MockLlm::start();
    let p = Project::new().file("d/top.txt", "t\n").file("d/sub/inner.txt", "i\n");
    let url = mock.url();
    assert_eq!(dry_run(&p, &url, "d", &["--no-recursive"]), ["d/top.txt"]);
    assert_eq!(sorted(dry_run(&p, &url, "d", &[])), ["d/sub/inner.txt", "d/top.txt"]);
}

#[test]
fn max_files_keeps_the_largest_warns_and_lists_the_rest() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("d/small.txt", &lines(1))
        .file("d/big.txt", &lines(40))
        .file("d/medium.txt", &lines(10))
        .file("d/sub/large.txt", &lines(20));
    let url = mock.url();
    let out = p.rlm(&batch("d", &url, &["--max-files", "2", "-o", "out"])).run();
    out.assert_exit(0);
    assert!(
        out.stderr
            .contains("Found 4 files, processing the 2 largest (raise --max-files)"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.requests(), 2);
    let sent: Vec<String> = mock.recorded().iter().map(|r| r.user_text()).collect();
    assert!(sent.iter().any(|t| t.contains("d/big.txt")), "{sent:?}");
    assert!(sent.iter().any(|t| t.contains("d/sub/large.txt")), "{sent:?}");
    assert!(!sent.iter().any(|t| t.contains("d/small.txt")), "{sent:?}");
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
    assert_eq!(
        skipped,
        [
            ("d/medium.txt".to_string(), "over --max-files".to_string()),
            ("d/small.txt".to_string(), "over --max-files".to_string()),
        ]
    );
    // The plan lists the largest first.
    let order = dry_run(&p, &url, "d", &["--max-files", "3"]);
    assert_eq!(order, ["d/big.txt", "d/sub/large.txt", "d/medium.txt"]);
}

#[test]
fn a_directory_is_capped_at_20_files_by_default() {
    let mock = MockLlm::start();
    let mut p = Project::new();
    for i in 0..25 {
        p = p.file(&format!("many/f{i:02}.txt"), &lines(i + 1));
    }
    let url = mock.url();
    let out = p.rlm(&batch("many", &url, &["--dry-run", "--json"])).run();
    out.assert_exit(0);
    assert!(
        out.stderr
            .contains("Found 25 files, processing the 20 largest (raise --max-files)"),
        "{}",
        out.stderr
    );
    let files = planned(&out);
    assert_eq!(files.len(), 20);
    assert_eq!(files[0], "many/f24.txt");
    assert!(!files.contains(&"many/f04.txt".to_string()));
    let doc = out.json();
    let over = doc["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["reason"] == "over --max-files")
        .count();
    assert_eq!(over, 5);
}

#[test]
fn max_files_caps_a_glob_too_and_a_glob_is_unlimited_by_default() {
    let mock = MockLlm::start();
    let mut p = Project::new();
    for i in 0..22 {
        p = p.file(&format!("g/f{i:02}.txt"), &lines(i + 1));
    }
    let url = mock.url();
    assert_eq!(dry_run(&p, &url, "g/*.txt", &[]).len(), 22);
    // The largest three, in the glob's path order.
    assert_eq!(
        dry_run(&p, &url, "g/*.txt", &["--max-files", "3"]),
        ["g/f19.txt", "g/f20.txt", "g/f21.txt"]
    );
}

#[test]
fn max_files_is_range_checked() {
    let p = Project::new().file("d/a.txt", "a\n");
    for bad in ["0", "100001", "-1", "x"] {
        let out = p.rlm(&["batch", "d", "List", "--max-files", bad, "--dry-run"]).run();
        out.assert_exit(2);
        assert!(out.stderr.contains("--max-files"), "{bad}: {}", out.stderr);
    }
}

#[test]
fn one_unit_per_file_is_sent() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("code/a.py", "print('a')\n")
        .file("code/b.py", "print('b')\n")
        .file("code/pkg/c.rs", "fn c() {}\n")
        .bytes("code/image.bin", b"\x00\x01binary")
        .file("code/empty.txt", "");
    let url = mock.url();
    let out = p
        .rlm(&batch(
            "code",
            &url,
            &["-o", "out", "--no-batch-small", "--aggregate", "concat"],
        ))
        .run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 3);
    let mut sent: Vec<String> = mock
        .recorded()
        .iter()
        .map(|r| {
            let text = r.user_text();
            ["code/a.py", "code/b.py", "code/pkg/c.rs"]
                .into_iter()
                .find(|f| text.contains(f))
                .unwrap_or("?")
                .to_string()
        })
        .collect();
    sent.sort();
    assert_eq!(sent, ["code/a.py", "code/b.py", "code/pkg/c.rs"]);
    let report = p.report();
    assert_eq!(report["succeeded"], 3);
    let reasons: Vec<&str> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        sorted(reasons.iter().map(|s| s.to_string()).collect()),
        ["code/empty.txt", "code/image.bin"]
    );
}

#[test]
fn the_directory_and_its_filters_are_recorded() {
    let mock = MockLlm::start();
    let p = Project::new().file("src/a.py", "a\n").file("src/b.md", "b\n");
    let url = mock.url();
    let out = p
        .rlm(&batch(
            "src",
            &url,
            &[
                "-o",
                "out",
                "--include",
                "*.py",
                "--exclude",
                "gen/**",
                "--no-recursive",
                "--max-files",
                "5",
                "--aggregate",
                "concat",
            ],
        ))
        .run();
    out.assert_exit(0);
    assert!(
        out.stderr
            .contains("Pattern: src (directory, at most 5 files; include *.py; exclude gen/**; not recursive)"),
        "{}",
        out.stderr
    );
    let settings: Value = read_json(&p.out_dir().join("settings.json"));
    let source = &settings["input"]["source"];
    assert_eq!(source["axis"], "directory");
    assert_eq!(source["dir"], "src");
    assert_eq!(source["include"], serde_json::json!(["*.py"]));
    assert_eq!(source["exclude"], serde_json::json!(["gen/**"]));
    assert_eq!(source["recursive"], false);
    assert_eq!(source["max_files"], 5);
    assert_eq!(settings["input"]["max_files"], 5);
    assert!(p.report()["pattern"].as_str().unwrap().starts_with("src (directory"));
    assert_eq!(mock.requests(), 1);
}

#[cfg(unix)]
#[test]
fn a_link_out_of_the_directory_is_skipped_unless_follow_links() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("secrets/id_rsa", "PRIVATE KEY\n")
        .file("secrets/notes.txt", "notes\n")
        .file("src/a.txt", "a\n");
    std::os::unix::fs::symlink(p.path().join("secrets"), p.path().join("src/keys")).unwrap();
    std::os::unix::fs::symlink(p.path().join("secrets/notes.txt"), p.path().join("src/notes.txt")).unwrap();
    let url = mock.url();
    let out = p
        .rlm(&batch("src", &url, &["-o", "out", "--aggregate", "concat"]))
        .run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 1);
    assert!(
        !mock.recorded().iter().any(|r| r.user_text().contains("PRIVATE")),
        "a file outside the directory was sent"
    );
    let report = p.report();
    let skipped: Vec<&str> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert!(
        skipped.contains(&"src/keys") && skipped.contains(&"src/notes.txt"),
        "{skipped:?}"
    );
    let followed = dry_run(&p, &url, "src", &["--follow-links"]);
    assert!(followed.contains(&"src/keys/id_rsa".to_string()), "{followed:?}");
}

#[test]
fn directory_flags_with_a_glob_are_a_usage_error() {
    let p = Project::new().file("src/a.py", "a\n");
    for flag in [&["--include", "*.py"][..], &["--exclude", "x"], &["--no-recursive"]] {
        let mut args = vec!["batch", "src/*.py", "List"];
        args.extend_from_slice(flag);
        let out = p.rlm(&args).run();
        out.assert_exit(2);
        assert!(
            out.stderr.contains(&format!(
                "{} applies to a directory, not to the glob 'src/*.py'",
                flag[0]
            )),
            "{}",
            out.stderr
        );
    }
    let out = p
        .rlm(&["batch", "src/*.py", "List", "--include", "*.py", "--no-recursive"])
        .run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("--include, --no-recursive apply to a directory"),
        "{}",
        out.stderr
    );
    let out = p.rlm(&["batch", "src/a.py", "List", "--include", "*.py"]).run();
    out.assert_exit(2);
    assert!(out.stderr.contains("not to the file 'src/a.py'"), "{}", out.stderr);
}

#[test]
fn a_missing_directory_says_no_files_matched() {
    let mock = MockLlm::start();
    let p = Project::new().file("src/a.py", "a\n");
    let url = mock.url();
    let out = p.rlm(&batch("nope", &url, &["--include", "*.py"])).run();
    out.assert_exit(2);
    assert!(out.stderr.contains("No files matched"), "{}", out.stderr);
    assert!(out.stderr.contains("nope"), "{}", out.stderr);
    // Without directory flags a missing name stays a glob, with the same message.
    let out = p.rlm(&batch("nope", &url, &[])).run();
    out.assert_exit(2);
    assert!(out.stderr.contains("No files matched"), "{}", out.stderr);
    assert_eq!(mock.requests(), 0);
}

#[test]
fn an_empty_filter_result_says_no_files_matched() {
    let mock = MockLlm::start();
    let p = Project::new().file("src/a.py", "a\n");
    let url = mock.url();
    let out = p.rlm(&batch("src", &url, &["--include", "*.rs"])).run();
    out.assert_exit(2);
    assert!(out.stderr.contains("No files matched"), "{}", out.stderr);
    assert_eq!(mock.requests(), 0);
}

#[test]
fn a_directory_batches_small_files_and_synthesizes_by_default() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("proj/a.py", "def a():\n    return 1\n")
        .file("proj/b.py", "def b():\n    return 2\n")
        .file("proj/conf.json", "{\"x\": 1}\n")
        .file("proj/data.json", "{\"y\": 2}\n");
    let url = mock.url();
    let out = p.rlm(&batch("proj", &url, &["-o", "out"])).run();
    out.assert_exit(0);
    let recorded = mock.recorded();
    // Two batches (code, JSON), one synthesis per type, one cross-type report.
    assert_eq!(
        recorded.len(),
        5,
        "{:?}",
        recorded.iter().map(|r| r.user_text()).collect::<Vec<_>>()
    );
    let first_two: Vec<String> = recorded[..2].iter().map(|r| r.user_text()).collect();
    assert!(
        first_two
            .iter()
            .any(|t| t.contains("proj/a.py") && t.contains("proj/b.py")),
        "{first_two:?}"
    );
    let report = p.report();
    assert_eq!(report["succeeded"], 2, "two batches: {report}");
    assert_eq!(report["files_succeeded"], 4, "{report}");
    let shown = format!("{}{}", out.stdout, out.stderr);
    assert!(shown.contains("Files processed: 4/4"), "{shown}");
    let settings: Value = read_json(&p.out_dir().join("settings.json"));
    assert_eq!(settings["task"]["aggregate"], "synthesize", "{settings}");
    assert_eq!(settings["task"]["batch_small"], true, "{settings}");
    let last = recorded.last().unwrap();
    assert_eq!(
        p.aggregate_md().trim(),
        reply_for(&last.system_text(), &last.user_text()).trim()
    );

    // Either default can be turned off.
    mock.reset_counts();
    let out = p
        .rlm(&batch(
            "proj",
            &url,
            &["-o", "out2", "--no-batch-small", "--aggregate", "concat", "--no-cache"],
        ))
        .run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 4);
}

/// `--no-batch-small` in directory mode sends each file alone to its type's analyst, as a
/// file left alone of its type is sent: its findings reach the report, SARIF and
/// `--fail-on`. Each went to the generic per-file prompt instead, which asks for no
/// findings: `rlm batch src "Review" --no-batch-small --fail-on note` passed with none.
#[test]
fn no_batch_small_in_directory_mode_still_reads_each_file_through_its_analyst() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("src/a.py", "def a():\n    return 1\n")
        .file("src/b.py", "def b():\n    return 2\n");
    let url = mock.url();
    let args = [
        "batch",
        "src",
        "Review",
        "--base-url",
        &url,
        "--no-batch-small",
        "--fail-on",
        "note",
        "-o",
        "out",
    ];
    let out = p.rlm(&args).run();
    out.assert_exit(1);
    let report = p.report();
    assert_eq!(report["units_planned"], 2, "{report:#}");
    assert_eq!(report["findings"]["note"], 2, "{report:#}");
    assert_eq!(report["gate"], "failed", "{report:#}");
    let mut dry = args.to_vec();
    dry.extend_from_slice(&["--dry-run", "--json"]);
    let plan = p.rlm(&dry).run().json();
    for unit in plan["units"].as_array().unwrap() {
        assert_eq!(unit["kind"], "whole_file_analyst", "{unit:#}");
    }
}

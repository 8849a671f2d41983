//! End-to-end tests of `rlm batch` against the mock LLM: concurrency, aggregation, inputs,
//! output names, usage errors, the JSON summary and the wire formats.

use std::collections::HashSet;
use std::time::Duration;

use crate::support::mock_llm::*;
use crate::support::*;
use serde_json::{json, Value};

/// A file whose per-file call the mock answers with exactly `reply`.
fn answering(reply: &str) -> String {
    format!("// source\n{}\n", reply_marker(reply))
}

// ---------------------------------------------------------------------------
// Concurrency

#[test]
fn max_parallel_is_reached_and_never_exceeded() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(200));
    let p = Project::new().ts_files(20);
    let url = mock.url();
    p.rlm(&batch("src/**/*.ts", &url, &["--max-parallel", "3"]))
        .run()
        .assert_exit(0);
    assert_eq!(mock.requests(), 20);
    assert_eq!(mock.max_in_flight(), 3);
    let report = p.report();
    assert_eq!(report["max_parallel"], 3);
    assert_eq!(report["succeeded"], 20);
}

/// A unit's `duration_ms` is its call's own time, not the time it waited for a slot: one
/// call at a time, the units' times add up to no more than the run's (counted from the
/// queue, the 6 calls of 150 ms would add up to 1+2+…+6 = 21 of them). report.json, the
/// events and the store say the same.
#[test]
fn a_units_duration_is_its_calls_time_not_its_wait_for_a_slot() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(150));
    let p = Project::new().ts_files(6);
    let url = mock.url();
    p.rlm(&batch("src/*.ts", &url, &["-j", "1", "-o", "out"]))
        .run()
        .assert_exit(0);
    let report = p.report();
    let units = report["units"].as_array().unwrap();
    assert_eq!(units.len(), 6);
    let durations: Vec<u64> = units.iter().map(|u| u["duration_ms"].as_u64().unwrap()).collect();
    assert!(
        durations.iter().all(|d| *d >= 150),
        "each call took the mock's 150 ms: {durations:?}"
    );
    let sum: u64 = durations.iter().sum();
    let run = report["duration_ms"].as_u64().unwrap();
    assert!(
        sum <= run,
        "one call at a time: {durations:?} add up to more than the run's {run} ms"
    );
    let events: Vec<Value> = p
        .read("out/events.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut logged: Vec<u64> = events
        .iter()
        .filter(|e| e["event"] == "task:completed")
        .map(|e| e["duration_ms"].as_u64().unwrap())
        .collect();
    let mut reported = durations.clone();
    logged.sort_unstable();
    reported.sort_unstable();
    assert_eq!(logged, reported, "events.jsonl and report.json");
    let status = p.rlm(&["status", "--json"]).run().json();
    let mean = status["mean_completed_ms"].as_u64().unwrap();
    assert!(mean.abs_diff(sum / 6) <= 1, "the store's mean {mean} vs {}", sum / 6);
}

#[test]
fn max_parallel_above_the_hard_cap_is_clamped_to_7() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(300));
    let p = Project::new().ts_files(14);
    let url = mock.url();
    let out = p.rlm(&batch("src/**/*.ts", &url, &["--max-parallel", "20"])).run();
    out.assert_exit(0);
    assert!(
        out.stderr.contains("rlm: warning: --max-parallel 20 clamped to 7"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.max_in_flight(), 7);
    assert_eq!(mock.requests(), 14);
    assert_eq!(p.report()["max_parallel"], 7);
}

#[test]
fn project_config_sets_the_width() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(150));
    let p = Project::new()
        .ts_files(8)
        .file(".aiwg/aiwg.config", r#"{"parallelism":{"max_parallel_subagents":2}}"#);
    let url = mock.url();
    p.rlm(&batch("src/**/*.ts", &url, &[])).run().assert_exit(0);
    assert_eq!(mock.max_in_flight(), 2);
    assert_eq!(mock.requests(), 8);
    assert_eq!(p.report()["max_parallel"], 2);
}

#[test]
fn a_configured_width_above_the_hard_cap_is_clamped_and_said() {
    let mock = MockLlm::start();
    let p = Project::new()
        .ts_files(3)
        .file(".aiwg/aiwg.config", r#"{"parallelism":{"max_parallel_subagents":12}}"#);
    let url = mock.url();
    let out = p.rlm(&batch("src/**/*.ts", &url, &[])).run();
    out.assert_exit(0);
    assert!(
        out.stderr
            .contains("rlm: warning: parallelism.max_parallel_subagents 12 in .aiwg/aiwg.config clamped to 7"),
        "{}",
        out.stderr
    );
    assert_eq!(p.report()["max_parallel"], 7);
}

// ---------------------------------------------------------------------------
// Aggregation

#[test]
fn concat_aggregate_is_the_seed_format() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("src/a.ts", &answering("Alpha answer"))
        .file("src/b.ts", &answering("Beta line 1\nBeta line 2\n"))
        .file("src/c/d.ts", &answering("Delta"));
    let url = mock.url();
    p.rlm(&batch("src/**/*.ts", &url, &[])).run().assert_exit(0);
    let dir = p.out_dir();
    let timestamp = dir
        .file_name()
        .unwrap()
        .to_string_lossy()
        .strip_prefix("batch-")
        .expect("the default output dir is batch-{timestamp}")
        .to_string();
    assert_eq!(
        p.aggregate_md(),
        format!(
            "# Batch Processing Results\n\nPattern: src/**/*.ts\nFiles processed: 3\nTimestamp: {timestamp}\n\n---\n\n\
             ## File: src/a.ts\n\nAlpha answer\n\n---\n\n\
             ## File: src/b.ts\n\nBeta line 1\nBeta line 2\n\n---\n\n\
             ## File: src/c/d.ts\n\nDelta\n\n---\n\n"
        )
    );
    // The per-file results are the answers, verbatim.
    assert_eq!(
        std::fs::read_to_string(dir.join("src-b.ts.result.md")).unwrap(),
        "Beta line 1\nBeta line 2\n"
    );
    assert_eq!(
        file_names(&dir),
        [
            ".rlm-lock",
            ".rlm-run",
            "aggregate.md",
            "events.jsonl",
            "plan.json",
            "report.json",
            "settings.json",
            "src-a.ts.result.md",
            "src-b.ts.result.md",
            "src-c-d.ts.result.md"
        ]
    );
    // The seed's markdown report sits beside the run directory.
    let reports = p.markdown_reports();
    assert_eq!(reports.len(), 1);
    assert!(reports[0].ends_with(format!("batch-{timestamp}-report.md")));
    let md = std::fs::read_to_string(&reports[0]).unwrap();
    assert!(md.starts_with(
        "# RLM Batch Completion Report\n\n**Pattern**: src/**/*.ts\n**Sub-Prompt**: List {file}\n**Status**: SUCCESS\n\
         **Files Processed**: 3/3\n"
    ));
}

#[test]
fn merge_unions_json_results() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("src/a.ts", &answering(r#"{"functions": ["b","a"]}"#))
        .file("src/b.ts", &answering(r#"{"functions": ["a","c"]}"#));
    let url = mock.url();
    p.rlm(&batch("src/*.ts", &url, &["--aggregate", "merge", "-o", "out"]))
        .run()
        .assert_exit(0);
    assert_eq!(p.aggregate_json(), json!({"functions": ["a", "b", "c"]}));
    assert_eq!(
        p.read("out/aggregate.json"),
        "{\n  \"functions\": [\n    \"a\",\n    \"b\",\n    \"c\"\n  ]\n}\n"
    );
    // Where each value came from goes beside aggregate.json, in the same shape, and in
    // aggregate.md after each value (issue 25).
    assert_eq!(
        read_json(&p.path().join("out/aggregate.sources.json")),
        json!({"functions": [
            {"value": "a", "files": ["src/a.ts", "src/b.ts"]},
            {"value": "b", "files": ["src/a.ts"]},
            {"value": "c", "files": ["src/b.ts"]}
        ]})
    );
    assert_eq!(
        p.aggregate_md(),
        "# Merged Results\n\n\
         Every item the answers gave, identical ones merged; each names the files it came from.\n\n\
         ## functions\n\n- a — src/a.ts, src/b.ts\n- b — src/a.ts\n- c — src/b.ts\n\n\
         (4 items from 2 answers; 3 after merging identical ones)\n\
         (Which files gave each JSON value: aggregate.sources.json)\n"
    );
    let report = p.report();
    assert_eq!(report["aggregate_json_path"], "out/aggregate.json");
    assert_eq!(report["aggregate_path"], "out/aggregate.md");
}

#[test]
fn merge_dedupes_markdown_lists() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("src/a.ts", &answering("- beta\n- alpha"))
        .file("src/b.ts", &answering("* alpha\n* gamma\n"));
    let url = mock.url();
    p.rlm(&batch("src/*.ts", &url, &["--aggregate", "merge", "-o", "out"]))
        .run()
        .assert_exit(0);
    assert_eq!(
        p.aggregate_md(),
        "# Merged Results\n\n\
         Every item the answers gave, identical ones merged; each names the files it came from.\n\n\
         - beta — src/a.ts\n- alpha — src/a.ts, src/b.ts\n- gamma — src/b.ts\n\n\
         (4 items from 2 answers; 3 after merging identical ones)\n"
    );
    assert!(!p.exists("out/aggregate.json"), "lists are not JSON");
    assert!(!p.exists("out/aggregate.sources.json"));
    assert!(p.report()["aggregate_json_path"].is_null());
}

/// Issue 25: the README's first example, merge over prose answers, reads as a person
/// would want it: each item names its files, nested items stay under their parent, a
/// lead-in line does not count, an answer that is not a list is kept whole under its
/// file's heading, and no "sub-agents".
#[test]
fn merge_of_prose_answers_names_files_keeps_nesting_and_keeps_prose_whole() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file(
            "lib/bisect.py",
            &answering(
                "The functions defined in bisect.py are:\n\n\
                 - `insort_right(a, x)`: insert x in a, keeping it sorted.\n  \
                 - called each time and other options.\n\
                 - `bisect_left(a, x)`\n",
            ),
        )
        .file(
            "lib/heapq.py",
            &answering("- `bisect_left(a, x)`\n- `heappush(heap, item)`\n"),
        )
        .file(
            "lib/this.py",
            &answering("This module defines no functions.\n\n- It only prints a poem.\n\nThat is all."),
        );
    let url = mock.url();
    p.rlm(&batch("lib/*.py", &url, &["--aggregate", "merge", "-o", "out"]))
        .run()
        .assert_exit(0);
    let md = p.aggregate_md();
    assert!(
        md.contains(
            "- `insort_right(a, x)`: insert x in a, keeping it sorted. — lib/bisect.py\n  \
             - called each time and other options.\n\
             - `bisect_left(a, x)` — lib/bisect.py, lib/heapq.py\n\
             - `heappush(heap, item)` — lib/heapq.py\n"
        ),
        "{md}"
    );
    assert!(
        md.contains("(4 items from 2 answers; 3 after merging identical ones)"),
        "{md}"
    );
    assert!(
        md.contains(
            "### File: lib/this.py\n\nThis module defines no functions.\n\n- It only prints a poem.\n\nThat is all.\n"
        ),
        "kept whole: {md}"
    );
    assert!(
        !md.contains("sub-agent") && !md.contains("The functions defined in"),
        "{md}"
    );
    assert!(
        !md.contains("\n- called each time"),
        "a nested item is no item of its own: {md}"
    );
}

#[test]
fn summarize_makes_one_more_call_and_is_cached() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(4);
    let url = mock.url();
    let args = batch("src/*.ts", &url, &["--aggregate", "summarize", "-o", "out"]);
    p.rlm(&args).run().assert_exit(0);
    assert_eq!(mock.requests(), 5);
    let recorded = mock.recorded();
    let last = recorded.last().unwrap();
    let user = last.user_text();
    assert!(
        user.starts_with("Summarize the following batch processing results"),
        "{user}"
    );
    // Every per-file answer is in the summarize prompt, under its file's heading.
    for r in &recorded[..4] {
        let answer = reply_for(&r.system_text(), &r.user_text());
        assert!(user.contains(&answer), "{answer} missing from {user}");
    }
    for i in 0..4 {
        assert!(user.contains(&format!("## File: src/f{i:02}.ts")));
    }
    let summary = reply_for(&last.system_text(), &user);
    assert!(summary.starts_with("SUMMARY of "));
    assert_eq!(p.aggregate_md(), format!("{summary}\n"));
    let report = p.report();
    let calls = report["aggregate_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["cached"], false);
    assert_eq!(report["status"], "SUCCESS");

    // A rerun is free: the per-file results and the summary come from the cache.
    mock.reset_counts();
    p.rlm(&args).run().assert_exit(0);
    assert_eq!(mock.requests(), 0);
    assert_eq!(p.aggregate_md(), format!("{summary}\n"));
    let report = p.report();
    assert_eq!(report["aggregate_calls"][0]["cached"], true);
    assert_eq!(report["cache_hits"], 4);
}

#[test]
fn summarize_groups_results_that_do_not_fit_the_context() {
    let mock = MockLlm::start();
    let mut p = Project::new();
    for i in 0..10 {
        let long = format!("finding {i}: {}", "lorem ipsum dolor sit amet ".repeat(60));
        p = p.file(&format!("src/f{i:02}.ts"), &answering(&long));
    }
    let url = mock.url();
    let out = p
        .rlm(&batch(
            "src/*.ts",
            &url,
            &[
                "--aggregate",
                "summarize",
                "--context-window",
                "3000",
                "--max-tokens",
                "500",
                "-o",
                "out",
            ],
        ))
        .run();
    out.assert_exit(0);
    let recorded = mock.recorded();
    let summaries: Vec<_> = recorded
        .iter()
        .filter(|r| {
            r.user_text()
                .starts_with("Summarize the following batch processing results")
        })
        .collect();
    assert_eq!(recorded.len(), 10 + summaries.len());
    assert!(
        summaries.len() > 2,
        "expected groups and a final call, got {}",
        summaries.len()
    );
    // No summarize request is larger than the window allows (3 chars a token is conservative).
    for s in &summaries {
        let chars = s.user_text().chars().count() + s.system_text().chars().count();
        assert!(
            chars < (3000 - 500) * 4,
            "a summarize request of {chars} chars overflows the window"
        );
    }
    // The final call summarizes the group summaries, not the raw results.
    let last = summaries.last().unwrap().user_text();
    assert!(last.contains("## Summary of part 1/"), "{last}");
    assert!(!last.contains("lorem ipsum"));
    let report = p.report();
    let calls = report["aggregate_calls"].as_array().unwrap();
    assert_eq!(calls.len(), summaries.len());
    assert!(calls.last().unwrap()["label"].as_str().unwrap().contains("final"));
    assert_eq!(report["status"], "SUCCESS");
    assert_eq!(p.aggregate_md(), format!("{}\n", reply_for("", &last)));
}

// ---------------------------------------------------------------------------
// Inputs

#[test]
fn no_match_is_a_usage_error_and_calls_nothing() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(2);
    let url = mock.url();
    let out = p.rlm(&batch("src/**/*.zz", &url, &[])).run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("RLM Batch: No files matched pattern"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("Pattern: src/**/*.zz"), "{}", out.stderr);
    assert_eq!(mock.requests(), 0);
    assert!(!p.exists(".aiwg"), "nothing is written when nothing matched");
}

#[test]
fn binary_files_are_skipped_and_reported() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("src/a.ts", "export const a = 1;\n")
        .bytes("src/blob.ts", b"\x7fELF\x00\x01\x02binary")
        .file("src/c.ts", "export const c = 3;\n");
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, &["-o", "out"])).run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 2, "only the text files are sent");
    assert!(mock.recorded().iter().all(|r| !r.user_text().contains("src/blob.ts")));
    let report = p.report();
    assert_eq!(report["files_matched"], 3);
    assert_eq!(report["succeeded"], 2);
    assert_eq!(report["status"], "SUCCESS");
    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0]["path"], "src/blob.ts");
    assert!(skipped[0]["reason"].as_str().unwrap().contains("binary"));
    assert!(!p.exists("out/src-blob.ts.result.md"));
    // With --output-dir, the markdown report is there too.
    let md = p.read("out/report.md");
    assert!(
        md.contains("## Skipped Files\n\n- src/blob.ts: binary"),
        "the markdown report lists the skipped file:\n{md}"
    );
}

/// The paths of a `--dry-run --json` plan, in plan order.
fn planned(out: &Output) -> Vec<String> {
    out.json()["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["path"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn inputs_respect_gitignore_and_default_exclusions_in_a_stable_order() {
    let p = Project::new()
        .file(".gitignore", "generated/\n")
        .file("src/z.js", "export const z = 1;\n")
        .file("src/a.js", "export const a = 1;\n")
        .file("src/lib/m.js", "export const m = 1;\n")
        .file("src/app.min.js", "var a=1;\n")
        .file("generated/g.js", "export const g = 1;\n")
        .file("node_modules/dep/index.js", "module.exports = 1;\n")
        .file("package-lock.json", "{}\n");
    // A symlink loop: src/lib/loop -> src.
    std::os::unix::fs::symlink(p.path().join("src"), p.path().join("src/lib/loop")).unwrap();
    let plan = |pattern: &str, extra: &[&str]| {
        let mut args = vec![
            "batch",
            pattern,
            "List {file}",
            "--dry-run",
            "--json",
            "--no-batch-small",
        ];
        args.extend_from_slice(extra);
        let out = p.rlm(&args).run();
        out.assert_exit(0);
        planned(&out)
    };
    let ordinary = ["src/a.js", "src/lib/m.js", "src/z.js"];
    assert_eq!(plan("**/*.js", &[]), ordinary);
    assert_eq!(plan("**/*.{js,json}", &[]), ordinary, "lock files stay out");
    let with_ignored = plan("**/*.js", &["--no-ignore"]);
    assert_eq!(with_ignored, ["generated/g.js", "src/a.js", "src/lib/m.js", "src/z.js"]);
    assert_eq!(
        plan("node_modules/**/*.js", &[]),
        ["node_modules/dep/index.js"],
        "named, so included"
    );
    assert_eq!(plan("**/*.min.js", &[]), ["src/app.min.js"]);
    assert_eq!(plan("**/package-lock.json", &[]), ["package-lock.json"]);
    // An absolute pattern plans the same files, shown as given.
    let absolute = format!("{}/src/*.js", p.path().display());
    let shown = plan(&absolute, &[]);
    assert_eq!(shown.len(), 2, "{shown:?}");
    assert!(
        shown[0].ends_with("/src/a.js") && shown[1].ends_with("/src/z.js"),
        "{shown:?}"
    );
}

#[test]
fn without_a_terminal_each_finished_file_is_one_line() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(3);
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, &["--max-parallel", "1"])).run();
    out.assert_exit(0);
    let lines: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(lines.len(), 3, "{}", out.stderr);
    // Calls start in plan order; a unit is counted when its answer is stored, so
    // neighbours may swap.
    let mut seen: Vec<String> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let prefix = format!("[{}/3] ok     src/f0", i + 1);
        assert!(line.starts_with(&prefix), "{line}\n{}", out.stderr);
        seen.push(line[prefix.len() - 6..prefix.len() + 4].to_string());
    }
    seen.sort();
    assert_eq!(seen, ["src/f00.ts", "src/f01.ts", "src/f02.ts"], "{}", out.stderr);
    assert!(!out.stderr.contains('\r'), "no bar redraws off a terminal");
}

#[test]
fn result_names_are_sanitized_unique_and_inside_the_output_dir() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("a/b.ts", "export const ab = 1;\n")
        .file("a-b.ts", "export const a_b = 2;\n")
        .file("lib/x.py", "x = 1\n")
        .file("lib/y.py", "y = 2\n")
        .file("app/main.py", "print(1)\n");
    let url = mock.url();
    p.rlm(&batch("**/*.ts", &url, &[])).run().assert_exit(0);
    p.rlm(&batch("../lib/*.py", &url, &[])).cwd("app").run().assert_exit(0);
    assert_eq!(mock.requests(), 4);

    let first = p.run_dirs().pop().expect("the first run's directory");
    let second_rlm = p.path().join("app/.aiwg/rlm");
    let second = files_under(&second_rlm)
        .into_iter()
        .find(|f| f.ends_with("report.json"))
        .expect("the second run's report")
        .parent()
        .unwrap()
        .to_path_buf();

    let report = read_json(&second.join("report.json"));
    let paths: Vec<&str> = report["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["../lib/x.py", "../lib/y.py"]);

    let results: Vec<_> = p
        .all_files()
        .into_iter()
        .filter(|f| f.to_string_lossy().ends_with(".result.md"))
        .collect();
    assert_eq!(results.len(), 4, "{results:?}");
    let mut names = HashSet::new();
    for r in &results {
        let parent = r.parent().unwrap();
        assert!(
            parent == first || parent == second,
            "{} is outside the output dirs",
            r.display()
        );
        let name = r.file_name().unwrap().to_string_lossy().to_string();
        assert!(!name.contains(".."), "{name}");
        assert!(!name.starts_with('.'), "{name}");
        assert!(names.insert(name.to_ascii_lowercase()), "{name} is not unique");
    }
    let first_names = file_names(&first);
    assert!(first_names.contains(&"a-b.ts.result.md".to_string()), "{first_names:?}");
    assert_eq!(first_names.iter().filter(|n| n.ends_with(".result.md")).count(), 2);
    assert_eq!(
        file_names(&second)
            .into_iter()
            .filter(|n| n.ends_with(".result.md"))
            .collect::<Vec<_>>(),
        ["lib-x.py.result.md", "lib-y.py.result.md"]
    );
    // Each unit's result_file names the file that holds its answer.
    let report = read_json(&first.join("report.json"));
    for u in report["units"].as_array().unwrap() {
        let file = first.join(u["result_file"].as_str().unwrap());
        assert!(file.is_file(), "{}", file.display());
    }
}

#[test]
fn results_in_an_output_dir_are_not_inputs_of_the_next_run() {
    let mock = MockLlm::start();
    let p = Project::new().file("docs/a.md", "# A\n").file("docs/b.md", "# B\n");
    let url = mock.url();
    let args = batch("**/*.md", &url, &["-o", "results"]);
    p.rlm(&args).run().assert_exit(0);
    assert_eq!(mock.requests(), 2);
    assert!(p.exists("results/docs-a.md.result.md"));
    // The rerun sees the same two inputs (all cached), not results/*.md as well.
    mock.reset_counts();
    p.rlm(&args).run().assert_exit(0);
    assert_eq!(mock.requests(), 0);
    let report = read_json(&p.path().join("results/report.json"));
    assert_eq!(report["files_matched"], 2);
    assert_eq!(report["cache_hits"], 2);
}

#[test]
fn an_earlier_runs_output_dir_is_not_an_input_unless_the_pattern_names_it() {
    let mock = MockLlm::start();
    let p = Project::new().file("docs/a.md", "# A\n").file("docs/b.md", "# B\n");
    let url = mock.url();
    p.rlm(&batch("**/*.md", &url, &["-o", "review-1"])).run().assert_exit(0);
    assert!(p.exists("review-1/docs-a.md.result.md"));
    // A second run into another directory reads the two docs, not review-1's report,
    // aggregate, prompts and result files (all cached: nothing is asked).
    mock.reset_counts();
    p.rlm(&batch("**/*.md", &url, &["-o", "review-2"])).run().assert_exit(0);
    assert_eq!(mock.requests(), 0);
    let report = read_json(&p.path().join("review-2/report.json"));
    assert_eq!(report["files_matched"], 2, "{report:#}");
    // Directory mode walks past it too.
    p.rlm(&[
        "batch",
        ".",
        "Review",
        "--base-url",
        &url,
        "--no-batch-small",
        "-o",
        "review-3",
    ])
    .run()
    .assert_exit(0);
    let report = read_json(&p.path().join("review-3/report.json"));
    assert_eq!(report["files_matched"], 2, "{report:#}");
    // A pattern that names the directory reads what is in it.
    p.rlm(&batch("review-1/*.result.md", &url, &["-o", "review-4"]))
        .run()
        .assert_exit(0);
    let report = read_json(&p.path().join("review-4/report.json"));
    assert_eq!(report["files_matched"], 2, "{report:#}");
}

// ---------------------------------------------------------------------------
// Usage errors and exit codes

#[test]
fn no_provider_configured_is_one_line_and_exit_2() {
    let p = Project::new().ts_files(1);
    let out = p
        .rlm(&["batch", "src/*.ts", "List {file}"])
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(2);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(lines[0].starts_with("rlm: error: "), "{}", lines[0]);
    assert!(lines[0].contains("ANTHROPIC_API_KEY"), "{}", lines[0]);
    assert!(lines[0].contains("--base-url"), "{}", lines[0]);
    assert!(!p.exists(".aiwg"));
}

#[test]
fn no_match_is_reported_before_a_missing_key() {
    let p = Project::new().ts_files(1);
    let out = p
        .rlm(&["batch", "src/**/*.zz", "List {file}"])
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("RLM Batch: No files matched pattern"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("ANTHROPIC_API_KEY"), "{}", out.stderr);
}

#[test]
fn dry_run_without_a_key_says_the_real_run_cannot_start() {
    let p = Project::new().ts_files(1);
    let out = p
        .rlm(&["batch", "src/*.ts", "List {file}", "--dry-run"])
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(0);
    let last = out.stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("the real run cannot start: no model provider configured"),
        "{}",
        out.stdout
    );
}

#[test]
fn dry_run_tells_what_the_cost_thresholds_would_do() {
    let p = Project::new().ts_files(1).file(
        ".aiwg/aiwg.config",
        r#"{"rlm":{"prices":{"claude-sonnet-5-5":{"input":100000,"output":100000}}}}"#,
    );
    let out = p.rlm(&["batch", "src/*.ts", "List {file}", "--dry-run"]).run();
    out.assert_exit(0);
    assert!(
        out.stdout.contains("the real run refused: Estimated cost"),
        "{}",
        out.stdout
    );
    let out = p
        .rlm(&["batch", "src/*.ts", "List {file}", "--dry-run", "--force", "--json"])
        .run();
    out.assert_exit(0);
    assert_eq!(out.json()["cost_check"], "proceeds");
}

/// A price in the config is held to a range, the cache prices too: `1e308` made every
/// estimate `$inf`, and a negative cache price lowered the cost `--max-cost` counts. Each is
/// a one-line config error (exit 2), as a negative input price was.
#[test]
fn a_config_price_out_of_range_is_refused() {
    for price in [
        r#"{"input":1e308,"output":1}"#,
        r#"{"input":1,"output":1,"cache_read":-5}"#,
        r#"{"input":1,"output":1,"cache_write":-1}"#,
    ] {
        let config = format!(r#"{{"rlm":{{"prices":{{"claude-sonnet-5-5":{price}}}}}}}"#);
        let p = Project::new().ts_files(1).file(".aiwg/aiwg.config", &config);
        let out = p.rlm(&["batch", "src/*.ts", "List {file}", "--dry-run"]).run();
        out.assert_exit(2);
        assert!(
            out.stderr.contains("rlm.prices.claude-sonnet-5-5 must hold prices"),
            "{price}: {}",
            out.stderr
        );
    }
}

#[test]
fn an_unlisted_model_on_the_official_api_is_estimated_at_the_ceiling() {
    // ~1.2 MB over 4 files: at the $15/$75 ceiling that is well over $1.
    let big = format!("// big\n{}\n", "const x = 1;\n".repeat(25_000));
    let p = Project::new()
        .file("src/a.ts", &big)
        .file("src/b.ts", &big)
        .file("src/c.ts", &big)
        .file("src/d.ts", &big);
    let out = p
        .rlm(&[
            "batch",
            "src/*.ts",
            "List {file}",
            "--model",
            "claude-unlisted-9",
            "--dry-run",
            "--json",
        ])
        .run();
    out.assert_exit(0);
    let plan = out.json();
    assert_eq!(plan["price_known"], false);
    let usd = plan["estimated_cost_usd"].as_f64().unwrap();
    assert!(usd > 1.0, "{plan:#}");
    assert_ne!(plan["cost_check"], "proceeds", "{plan:#}");
    let out = p
        .rlm(&[
            "batch",
            "src/*.ts",
            "List {file}",
            "--model",
            "claude-unlisted-9",
            "--dry-run",
        ])
        .run();
    assert!(
        out.stderr
            .contains("an upper bound: no price listed for claude-unlisted-9"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_unknown_model_on_a_local_server_is_not_limited_by_a_guessed_window() {
    let mock = MockLlm::start();
    // ~60 KB: over any 8k-token guess, so only the server may refuse it.
    let big = format!("// big\n{}\n", "const x = 1;\n".repeat(5_000));
    let p = Project::new().file("src/big.ts", &big);
    let url = mock.url();
    let out = p
        .rlm(&batch(
            "src/*.ts",
            &url,
            &[
                "--provider",
                "openai",
                "--model",
                "local-x",
                "-o",
                "out",
                "--chunking",
                "off",
            ],
        ))
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 1);
    // With a window given, the same file is refused before any call.
    mock.reset_counts();
    let out = p
        .rlm(&batch(
            "src/*.ts",
            &url,
            &[
                "--provider",
                "openai",
                "--model",
                "local-x",
                "--context-window",
                "8192",
                "--no-cache",
                "--chunking",
                "off",
            ],
        ))
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    // Nothing can be sent: a usage error (exit 2), not a failed run.
    out.assert_exit(2);
    assert_eq!(mock.requests(), 0);
    assert!(
        out.stderr
            .contains("nothing can be sent: src/big.ts: too large for the model's context budget"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_brace_alternative_lifts_a_default_exclusion() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("build/gen.ts", "export const g = 1;\n")
        .file("src/a.ts", "export const a = 1;\n")
        .file("dist/d.ts", "export const d = 1;\n");
    let url = mock.url();
    p.rlm(&batch("{build,src}/*.ts", &url, &["-o", "out"]))
        .run()
        .assert_exit(0);
    let paths: Vec<String> = p.report()["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(paths, ["build/gen.ts", "src/a.ts"]);
}

#[test]
fn max_parallel_zero_is_a_usage_error() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(1);
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, &["--max-parallel", "0"])).run();
    out.assert_exit(2);
    assert_eq!(
        out.stderr,
        "rlm: error: invalid value '0' for '--max-parallel <N>': must be between 1 and 1000000 (see rlm batch --help)\n"
    );
    assert_eq!(mock.requests(), 0);
}

/// A negative duration with its unit (`-5s`) is no number, so clap read it as short flags
/// and said only "unexpected argument '-5' found": it is named as the flag's value, with
/// the flag's range, as `--deadline -5` is — for `rlm batch`, `rlm job run` and `rlm resume`.
#[test]
fn a_negative_duration_is_a_usage_error_that_names_its_flag() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(1).file("job.toml", "");
    let url = mock.url();
    for (args, help) in [
        (batch("src/*.ts", &url, &["--deadline", "-5s"]), "rlm batch --help"),
        (
            vec!["job", "run", "job.toml", "--deadline", "-5s"],
            "rlm job run --help",
        ),
        (vec!["resume", "--deadline", "-5s"], "rlm resume --help"),
    ] {
        let out = p.rlm(&args).run();
        out.assert_exit(2);
        assert_eq!(
            out.stderr,
            format!(
                "rlm: error: invalid value '-5s' for '--deadline <DURATION>': must be more than 0 and at most a week \
                 (168h) (see {help})\n"
            ),
            "{args:?}"
        );
    }
    // Any flag that takes a number: its own message, its own name.
    let out = p.rlm(&batch("src/*.ts", &url, &["-j", "-2x"])).run();
    out.assert_exit(2);
    assert!(
        out.stderr
            .contains("invalid value '-2x' for '--max-parallel <N>': '-2x' is not a whole number"),
        "{}",
        out.stderr
    );
    // A value that starts with '-' is one when joined to its flag with '='.
    let out = p.rlm(&batch("src/*.ts", &url, &["--model", "-5x"])).run();
    out.assert_exit(2);
    assert!(
        out.stderr
            .contains("'-5x' was read as a flag, not as the value of --model: write --model=-5x"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.requests(), 0);
    assert!(!p.exists(".aiwg"));
}

#[test]
fn invalid_glob_is_a_usage_error() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(1);
    let url = mock.url();
    let out = p.rlm(&batch("src/[a-", &url, &[])).run();
    out.assert_exit(2);
    assert!(
        out.stderr.starts_with("rlm: error: invalid pattern 'src/[a-'"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert_eq!(mock.requests(), 0);
}

#[test]
fn unknown_flag_is_exit_2() {
    let p = Project::new().ts_files(1);
    let out = p.rlm(&["batch", "src/*.ts", "x", "--no-such-flag"]).run();
    out.assert_exit(2);
    assert!(out.stderr.contains("--no-such-flag"), "{}", out.stderr);
}

#[test]
fn dry_run_calls_and_writes_nothing() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(3);
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, &["--dry-run"])).run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 0);
    assert!(p.all_files().iter().all(|f| !f.starts_with(p.path().join(".aiwg"))));
    assert_eq!(
        out.stdout.lines().filter(|l| l.starts_with("call ")).count(),
        3,
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("nothing was called"), "{}", out.stdout);

    let out = p.rlm(&batch("src/*.ts", &url, &["--dry-run", "--json"])).run();
    out.assert_exit(0);
    let plan = out.json();
    assert_eq!(plan["dry_run"], true);
    assert_eq!(plan["cache_misses"], 3);
    assert_eq!(plan["units"].as_array().unwrap().len(), 3);
    assert_eq!(mock.requests(), 0);
    assert!(!p.exists(".aiwg"));
}

#[test]
fn json_summary_on_stdout_with_consistent_totals() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(3);
    let url = mock.url();
    let out = p
        .rlm(&batch("src/*.ts", &url, &["--json", "--aggregate", "summarize"]))
        .run();
    out.assert_exit(0);
    let summary = out.json();
    for field in [
        "status",
        "files_matched",
        "succeeded",
        "failed",
        "skipped",
        "cache_hits",
        "cache_misses",
        "tokens_in",
        "tokens_out",
        "cost_usd",
        "duration_ms",
        "model",
        "provider",
        "max_parallel",
    ] {
        assert!(summary.get(field).is_some(), "--json output lacks {field}: {summary:#}");
    }
    assert_eq!(summary["status"], "SUCCESS");
    assert_eq!(summary["files_matched"], 3);
    assert_eq!(summary["succeeded"], 3);
    assert_eq!(summary["failed"], json!([]));
    assert_eq!(summary["skipped"], json!([]));
    assert_eq!(summary["cache_hits"], 0);
    assert_eq!(summary["cache_misses"], 3);
    assert_eq!(summary["model"], "claude-sonnet-5-5");
    assert_eq!(summary["provider"], "anthropic");
    assert_eq!(summary["max_parallel"], 4);
    assert!(summary["duration_ms"].is_u64());

    let sum = |list: &Value, a: &str, b: &str| -> u64 {
        list.as_array()
            .unwrap()
            .iter()
            .map(|x| {
                if b.is_empty() {
                    x[a].as_u64().unwrap()
                } else {
                    x[a][b].as_u64().unwrap()
                }
            })
            .sum()
    };
    let tokens_in = sum(&summary["units"], "tokens_in", "") + sum(&summary["aggregate_calls"], "usage", "input_tokens");
    let tokens_out =
        sum(&summary["units"], "tokens_out", "") + sum(&summary["aggregate_calls"], "usage", "output_tokens");
    assert_eq!(summary["tokens_in"], tokens_in);
    assert_eq!(summary["tokens_out"], tokens_out);
    assert_eq!(summary["aggregate_calls"].as_array().unwrap().len(), 1);

    // And they are what the mock billed: ceil(chars / 4) of the prompt and of the reply.
    let recorded = mock.recorded();
    assert_eq!(recorded.len(), 4);
    let (mut billed_in, mut billed_out) = (0u64, 0u64);
    for r in &recorded {
        let (system, user) = (r.system_text(), r.user_text());
        billed_in += (system.chars().count() + user.chars().count()).div_ceil(4) as u64;
        billed_out += (reply_for(&system, &user).chars().count().div_ceil(4) as u64).max(1);
    }
    assert_eq!(tokens_in, billed_in);
    assert_eq!(tokens_out, billed_out);
    // claude-sonnet-5 costs $2 / $10 per million tokens.
    let cost = (billed_in as f64 * 2.0 + billed_out as f64 * 10.0) / 1e6;
    assert!(
        (summary["cost_usd"].as_f64().unwrap() - cost).abs() < 1e-9,
        "{summary:#}"
    );
    // stdout is the report as written.
    let written = p.report();
    assert_eq!(written["tokens_in"], summary["tokens_in"]);
    assert_eq!(written["status"], summary["status"]);
}

#[test]
fn only_skipped_files_is_a_usage_error() {
    let mock = MockLlm::start();
    let p = Project::new().bytes("src/a.ts", b"\x00\x01").file("src/b.ts", "");
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, &[])).run();
    out.assert_exit(2);
    assert!(
        out.stderr
            .starts_with("rlm: error: all 2 files matching 'src/*.ts' were skipped"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("src/b.ts: empty file"), "{}", out.stderr);
    assert_eq!(mock.requests(), 0);

    // One file: said as one.
    let p = Project::new().file("src/b.ts", "");
    let out = p.rlm(&batch("src/*.ts", &url, &[])).run();
    out.assert_exit(2);
    assert!(
        out.stderr
            .starts_with("rlm: error: the one file matching 'src/*.ts' was skipped (src/b.ts: empty file)"),
        "{}",
        out.stderr
    );
}

#[test]
fn cost_safety_thresholds() {
    // A price that makes one small file cost ~$25 (more than $10, less than $100).
    let mock = MockLlm::start();
    let p = Project::new().ts_files(1).file(
        ".aiwg/aiwg.config",
        r#"{"rlm":{"prices":{"claude-sonnet-5-5":{"input":100000,"output":100000}}}}"#,
    );
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, &[])).run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("exceeds safety threshold ($10.00)"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("--force"), "{}", out.stderr);
    let out = p.rlm(&batch("src/*.ts", &url, &["--force", "--max-cost", "5"])).run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("exceeds safety threshold ($5.00)"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.requests(), 0);
    assert!(!p.exists(".aiwg/rlm"));

    let out = p.rlm(&batch("src/*.ts", &url, &["--force", "-o", "out"])).run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 1);
    let report = p.report();
    let tokens = report["tokens_in"].as_u64().unwrap() + report["tokens_out"].as_u64().unwrap();
    let cost = report["cost_usd"].as_f64().unwrap();
    assert!((cost - tokens as f64 * 0.1).abs() < 1e-6, "{report:#}");
    assert!(report["estimated_cost_usd"].as_f64().unwrap() > 10.0);
}

#[test]
fn quiet_prints_only_the_aggregate_path() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(2);
    let url = mock.url();
    let out = p
        .rlm(&batch("src/*.ts", &url, &["--quiet", "-o", "results/deep"]))
        .run();
    out.assert_exit(0);
    assert_eq!(out.stdout, "results/deep/aggregate.md\n");
    assert_eq!(out.stderr, "");
    assert!(p.exists("results/deep/src-f01.ts.result.md"));
    assert!(p.exists("results/deep/report.json"));
}

// ---------------------------------------------------------------------------
// Wire formats

#[test]
fn openai_compatible_local_server_needs_no_key() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(2);
    let url = mock.url();
    let out = p
        .rlm(&batch(
            "src/*.ts",
            &url,
            &["--provider", "openai", "--model", "local-x", "-o", "out"],
        ))
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(0);
    let recorded = mock.recorded();
    assert_eq!(recorded.len(), 2);
    for r in &recorded {
        assert_eq!(r.path, "/v1/chat/completions");
        assert_eq!(r.body["model"], "local-x");
        assert_eq!(r.body["max_tokens"], 4096);
        assert!(r.body.get("max_completion_tokens").is_none(), "{}", r.body);
        assert!(r.body.get("temperature").is_none(), "{}", r.body);
        assert_eq!(r.body["messages"][0]["role"], "system");
        assert_eq!(r.body["messages"][1]["role"], "user");
        assert!(r.header("authorization").is_none(), "no key, no Authorization header");
        assert!(r.header("x-api-key").is_none());
    }
    let report = p.report();
    assert_eq!(report["provider"], "openai");
    assert_eq!(report["model"], "local-x");
    assert_eq!(report["price_known"], false);
    assert_eq!(report["cost_usd"], 0.0);
    let text = p.read("out/src-f00.ts.result.md");
    assert!(text.starts_with("mock result "), "{text}");
}

#[test]
fn a_local_server_without_model_uses_the_one_model_it_serves() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(1);
    let url = mock.url();
    let args = batch("src/*.ts", &url, &["--provider", "openai", "-o", "out"]);
    p.rlm(&args).env_remove("ANTHROPIC_API_KEY").run().assert_exit(0);
    assert_eq!(mock.recorded()[0].body["model"], "mock-model");
    assert_eq!(p.report()["model"], "mock-model");

    // Several models: the user must choose, and is told the names.
    mock.set_models(&["llama3:8b", "qwen2:7b"]);
    mock.reset_counts();
    let out = p.rlm(&args).env_remove("ANTHROPIC_API_KEY").run();
    out.assert_exit(2);
    assert!(
        out.stderr
            .contains("the server serves 2 models (llama3:8b, qwen2:7b): pass --model NAME"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.requests(), 0);
}

/// A server whose model listing runs far past what any listing needs is not read to its
/// end (a server sending without end would fill the memory): one line says so, nothing is
/// sent.
#[test]
fn a_model_listing_far_too_large_is_refused_without_being_read_whole() {
    let mock = MockLlm::start();
    mock.pad_models_listing(64 * 1024 * 1024);
    let p = Project::new().ts_files(1);
    let url = mock.url();
    let out = p
        .rlm(&batch("src/*.ts", &url, &["--provider", "openai"]))
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    assert_ne!(out.status, 0, "{}", out.stderr);
    assert!(out.stderr.contains("the listing is over 32 MB"), "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert_eq!(mock.requests(), 0);
}

#[test]
fn an_unreachable_local_server_without_model_is_one_clear_line() {
    let p = Project::new().ts_files(1);
    let out = p
        .rlm(&batch("src/*.ts", "http://127.0.0.1:9", &["--provider", "openai"]))
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(3);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].contains("http://127.0.0.1:9/v1/models did not list"),
        "{}",
        lines[0]
    );
    assert!(lines[0].ends_with("pass --model NAME"), "{}", lines[0]);
}

#[test]
fn a_key_refused_while_discovering_the_model_exits_3() {
    let mock = MockLlm::start();
    mock.require_key("sk-right");
    let p = Project::new().ts_files(1);
    let url = mock.url();
    let out = p
        .rlm(&batch("src/*.ts", &url, &["--provider", "openai"]))
        .env_remove("ANTHROPIC_API_KEY")
        .env("OPENAI_API_KEY", "sk-wrong-key-123")
        .run();
    out.assert_exit(3);
    assert!(out.stderr.contains("refused the key (HTTP 401)"), "{}", out.stderr);
    assert!(!out.stderr.contains("sk-wrong-key-123"), "{}", out.stderr);
}

#[test]
fn openai_key_is_sent_as_bearer() {
    let mock = MockLlm::start();
    mock.require_key("sk-openai-test");
    let p = Project::new().ts_files(1);
    let url = mock.url();
    p.rlm(&batch(
        "src/*.ts",
        &url,
        &["--provider", "openai", "--temperature", "0"],
    ))
    .env_remove("ANTHROPIC_API_KEY")
    .env("OPENAI_API_KEY", "sk-openai-test")
    .run()
    .assert_exit(0);
    let r = &mock.recorded()[0];
    assert_eq!(r.header("authorization"), Some("Bearer sk-openai-test"));
    assert_eq!(r.body["model"], "mock-model", "the one model the server lists");
    assert_eq!(r.body["temperature"], 0.0);
}

#[test]
fn anthropic_requests_carry_version_and_key() {
    let mock = MockLlm::start();
    mock.require_key(TEST_KEY);
    let p = Project::new().ts_files(2);
    let url = mock.url();
    p.rlm(&batch("src/*.ts", &url, &["--model", "haiku", "--max-tokens", "123"]))
        .run()
        .assert_exit(0);
    let recorded = mock.recorded();
    assert_eq!(recorded.len(), 2);
    for r in &recorded {
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(r.header("x-api-key"), Some(TEST_KEY));
        assert!(r.header("authorization").is_none());
        assert_eq!(r.body["model"], "claude-haiku-5-5");
        assert_eq!(r.body["max_tokens"], 123);
        assert!(r.body["system"].as_str().unwrap().starts_with("You are one worker"));
        assert_eq!(r.body["messages"].as_array().unwrap().len(), 1);
    }
    let users: Vec<String> = recorded.iter().map(|r| r.user_text()).collect();
    // The content sits between tags that carry a random token, closed once.
    let u = users
        .iter()
        .find(|u| u.starts_with("File: src/f00.ts\n\n<file_content_"))
        .unwrap();
    let tag: String = u["File: src/f00.ts\n\n<".len()..]
        .chars()
        .take_while(|c| *c != ' ')
        .collect();
    assert!(tag.len() > "file_content_".len() + 8, "{u}");
    assert!(
        u.contains(&format!(
            "<{tag} path=\"src/f00.ts\">\nexport const f00 = 0;\n</{tag}>\n"
        )),
        "{u}"
    );
    assert!(u.ends_with("\n\nInstruction: List src/f00.ts\n"), "{u}");
}

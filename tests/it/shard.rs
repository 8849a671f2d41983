//! Past one machine, through the binary: `--shard K/N` takes the units whose stable id
//! falls in shard K (each shard its own run directory, recording the shard and the plan),
//! and `rlm merge` combines the shards into one run — the same result files, aggregate,
//! counts, cost and findings as one unsharded run — and refuses runs of different plans
//! or runs that share units.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use crate::support::mock_llm::*;
use crate::support::*;

/// A Python file of `n` functions of 20 lines each (cut into chunks past 1500 lines).
fn python(n: usize) -> String {
    let mut s = String::from("import os\n\n");
    for i in 0..n {
        s.push_str(&format!("def f{i}(x):\n"));
        for j in 0..18 {
            s.push_str(&format!("    x = x + {j}\n"));
        }
        s.push_str("    return x\n");
    }
    s
}

/// Whole files, a chunked file, batches of small files of several types, and one file the
/// mock refuses (a failure in every run; alone of its type, so in a unit of its own).
fn project() -> Project {
    let mut p = Project::new()
        .file("src/big.py", &python(90))
        .file("src/notes.md", "# Notes\n\nSome prose about the project.\n")
        .file("src/data.json", "{\"a\": 1, \"b\": [1, 2]}\n")
        .file("src/broken.csv", "id,note\n1,REFUSE_ME\n");
    for i in 0..10 {
        p = p.file(&format!("src/m{i}.py"), &format!("def g{i}():\n    return {i}\n"));
    }
    p
}

/// A mock that refuses (413: that unit fails, the run goes on) any request naming the refused
/// file.
fn mock() -> MockLlm {
    let mock = MockLlm::start();
    mock.fault_when(
        "REFUSE_ME",
        (0..8).map(|_| Fault::Status(413, "refused".into())).collect(),
    );
    mock
}

const PROMPT: &str = "Review {file} for bugs";

/// `rlm batch src PROMPT --base-url URL --max-files 50 EXTRA…`
fn batch(p: &Project, url: &str, extra: &[&str]) -> Output {
    let mut args = vec!["batch", "src", PROMPT, "--base-url", url, "--max-files", "50", "--json"];
    args.extend_from_slice(extra);
    p.rlm(&args).run()
}

fn report(p: &Project, dir: &str) -> Value {
    read_json(&p.path().join(dir).join("report.json"))
}

/// A run directory's answer files (every result file), by name.
fn result_files(dir: &Path) -> BTreeMap<String, String> {
    let metadata = [
        "report.json",
        "report.md",
        "settings.json",
        "plan.json",
        "events.jsonl",
        "aggregate.md",
        "aggregate.json",
        "results.sarif",
    ];
    files_under(dir)
        .into_iter()
        .filter(|f| f.parent() == Some(dir))
        .filter_map(|f| {
            let name = f.file_name()?.to_string_lossy().to_string();
            (!metadata.contains(&name.as_str()) && !name.starts_with('.'))
                .then(|| (name, std::fs::read_to_string(&f).unwrap_or_default()))
        })
        .collect()
}

/// `aggregate.md` without its timestamp line (a run's own).
fn aggregate_md(p: &Project, dir: &str) -> String {
    p.read(&format!("{dir}/aggregate.md"))
        .lines()
        .filter(|l| !l.starts_with("Timestamp: "))
        .collect::<Vec<_>>()
        .join("\n")
}

fn unit_ids(report: &Value) -> BTreeSet<String> {
    report["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["id"].as_str().unwrap().to_string())
        .collect()
}

fn sarif_results(p: &Project, dir: &str) -> Vec<Value> {
    let sarif = read_json(&p.path().join(dir).join("results.sarif"));
    let mut results = sarif["runs"][0]["results"].as_array().cloned().unwrap_or_default();
    results.sort_by_key(|r| r.to_string());
    results
}

#[test]
fn two_shards_merged_equal_one_unsharded_run() {
    for aggregate in ["concat", "merge"] {
        let p = project();
        // One run over everything.
        let whole = mock();
        let one = batch(&p, &whole.url(), &["--aggregate", aggregate, "-o", "one"]);
        one.assert_exit(1);
        let one_report = report(&p, "one");
        // Two shards, each its own run directory (not from the cache the first run filled),
        // against the same server (the endpoint is part of a request's identity).
        let whole_requests = whole.requests();
        whole.reset_counts();
        let sharded = &whole;
        for k in ["1/2", "2/2"] {
            let dir = format!("s{}", &k[..1]);
            let out = batch(
                &p,
                &sharded.url(),
                &["--aggregate", aggregate, "-o", &dir, "--shard", k, "--no-cache"],
            );
            assert!(out.status == 0 || out.status == 1, "{k}: {}", out.stderr);
        }
        assert_eq!(
            sharded.requests(),
            whole_requests,
            "each unit called once, in one shard"
        );
        let (s1, s2) = (report(&p, "s1"), report(&p, "s2"));
        for (shard, r) in [(1, &s1), (2, &s2)] {
            assert_eq!(r["shard"]["index"], shard);
            assert_eq!(r["shard"]["count"], 2);
            assert_eq!(r["shard"]["plan_units"], one_report["units"].as_array().unwrap().len());
            assert_eq!(r["plan_id"], one_report["plan_id"], "one plan");
        }
        let (ids1, ids2) = (unit_ids(&s1), unit_ids(&s2));
        assert!(ids1.is_disjoint(&ids2));
        assert!(!ids1.is_empty() && !ids2.is_empty(), "{ids1:?} {ids2:?}");
        let mut all = ids1.clone();
        all.extend(ids2);
        assert_eq!(all, unit_ids(&one_report), "the shards cover the plan");

        let merged = p
            .rlm(&["merge", "s1", "s2", "-o", "merged", "--json"])
            .env_remove("ANTHROPIC_API_KEY")
            .run();
        merged.assert_exit(1);
        // Its progress counts the units it serves, as a run counts those it dispatches.
        let served: Vec<&str> = merged.stderr.lines().filter(|l| l.contains(" ok ")).collect();
        assert!(!served.is_empty(), "{}", merged.stderr);
        let total = format!("/{}]", merged.stderr.lines().filter(|l| l.starts_with('[')).count());
        assert!(
            served.iter().all(|l| l.contains(&total)),
            "{aggregate}: {}",
            merged.stderr
        );
        assert_eq!(sharded.requests(), whole_requests, "{aggregate}: merging calls nothing");
        let mut m = merged.json();
        assert_eq!(m["exit_code"], 1, "{m}");
        m.as_object_mut().unwrap().remove("exit_code");
        assert_eq!(m, report(&p, "merged"), "report.json, and the exit code");
        assert_eq!(m["merged_from"], serde_json::json!([s1["run_id"], s2["run_id"]]));
        assert!(m.get("shard").is_none());
        assert_eq!(m["plan_id"], one_report["plan_id"]);
        // As if one run had done it: the same units, result files, aggregate and counts.
        assert_eq!(unit_ids(&m), unit_ids(&one_report));
        assert_eq!(
            result_files(&p.path().join("merged")),
            result_files(&p.path().join("one")),
            "{aggregate}"
        );
        assert_eq!(aggregate_md(&p, "merged"), aggregate_md(&p, "one"), "{aggregate}");
        if aggregate == "merge" {
            assert_eq!(p.read("merged/aggregate.json"), p.read("one/aggregate.json"));
        }
        for field in [
            "status",
            "files_matched",
            "files_succeeded",
            "succeeded",
            "failed",
            "skipped",
            "not_run",
            "cache_hits",
            "cache_misses",
            "tokens_in",
            "tokens_out",
            "findings",
        ] {
            let strip = |v: &Value| {
                let mut v = v.clone();
                if let Some(f) = v.as_object_mut() {
                    f.remove("sarif");
                }
                v
            };
            assert_eq!(strip(&m[field]), strip(&one_report[field]), "{aggregate}: {field}");
        }
        assert!(!m["failed"].as_array().unwrap().is_empty(), "the refused file failed");
        let cost = |r: &Value| r["cost_usd"].as_f64().unwrap();
        assert!(cost(&one_report) > 0.0);
        assert!((cost(&m) - cost(&one_report)).abs() < 1e-9);
        assert!((cost(&m) - cost(&s1) - cost(&s2)).abs() < 1e-9);
        assert!(m["findings"]["note"].as_u64().unwrap() > 0, "{m:#}");
        assert_eq!(sarif_results(&p, "merged"), sarif_results(&p, "one"));
    }
}

#[test]
fn merge_summarizes_the_shards_answers_as_one_run_would() {
    let p = project();
    let whole = mock();
    batch(&p, &whole.url(), &["--aggregate", "summarize", "-o", "one"]).assert_exit(1);
    let sharded = mock();
    for k in ["1/2", "2/2"] {
        let dir = format!("s{}", &k[..1]);
        batch(&p, &sharded.url(), &["-o", &dir, "--shard", k, "--no-cache"]);
    }
    let calls = sharded.requests();
    let merged = p
        .rlm(&[
            "merge",
            "s1",
            "s2",
            "-o",
            "merged",
            "--aggregate",
            "summarize",
            "--json",
        ])
        .run();
    merged.assert_exit(1);
    assert_eq!(sharded.requests(), calls + 1, "one summary call, made by merge");
    assert!(sharded.recorded().last().unwrap().user_text().contains(SUMMARY_PHRASE));
    assert_eq!(p.read("merged/aggregate.md"), p.read("one/aggregate.md"));
    let m = merged.json();
    assert_eq!(m["aggregate"], "summarize");
    assert_eq!(m["aggregate_calls"].as_array().unwrap().len(), 1);
}

#[test]
fn a_shard_records_its_part_of_the_plan() {
    let p = project();
    let mock = mock();
    let out = p
        .rlm(&[
            "batch",
            "src",
            PROMPT,
            "--base-url",
            &mock.url(),
            "--max-files",
            "50",
            "--shard",
            "2/3",
            "-o",
            "s2",
        ])
        .run();
    assert!(out.status == 0 || out.status == 1, "{}", out.stderr);
    let report = report(&p, "s2");
    let plan_id = report["plan_id"].as_str().unwrap();
    assert!(plan_id.starts_with("p-") && plan_id.len() == 18, "{plan_id}");
    let units = report["units"].as_array().unwrap().len();
    assert!(
        out.stderr.contains(&format!(
            "Shard: 2/3 ({units} of the plan's {} units; plan {plan_id})",
            report["shard"]["plan_units"]
        )),
        "{}",
        out.stderr
    );
    let settings = read_json(&p.path().join("s2/settings.json"));
    assert_eq!(settings["plan_id"], plan_id);
    assert_eq!(settings["input"]["shard"], serde_json::json!({"index": 2, "count": 3}));
    assert_eq!(settings["record"]["version"], 1);
    assert_eq!(settings["record"]["kind"], "batch");
    assert_eq!(
        settings["record"]["settings"]["shard"],
        serde_json::json!({"index": 2, "count": 3})
    );
    // The dry run says which units the shard takes, and the plan it belongs to.
    let dry = p
        .rlm(&[
            "batch",
            "src",
            PROMPT,
            "--base-url",
            &mock.url(),
            "--max-files",
            "50",
            "--shard",
            "2/3",
            "--dry-run",
            "--json",
        ])
        .run();
    dry.assert_exit(0);
    let dry = dry.json();
    assert_eq!(dry["plan_id"], plan_id);
    assert_eq!(dry["shard"]["index"], 2);
    assert_eq!(dry["units"].as_array().unwrap().len(), units);
}

#[test]
fn a_shard_that_no_unit_falls_in_has_nothing_to_do() {
    let p = Project::new().file("a.py", "x = 1\n");
    let mock = MockLlm::start();
    // One unit, many shards: all but one are empty.
    let mut empty = 0;
    for k in 1..=8 {
        let shard = format!("{k}/8");
        let out = p
            .rlm(&[
                "batch",
                "*.py",
                "Review {file}",
                "--base-url",
                &mock.url(),
                "--shard",
                &shard,
                "-o",
                "out",
                "--json",
            ])
            .run();
        out.assert_exit(0);
        if out.json()["units"].as_array().unwrap().is_empty() {
            empty += 1;
            assert_eq!(out.json()["status"], "SUCCESS");
        }
    }
    assert_eq!(empty, 7);
    assert_eq!(mock.requests(), 1);
}

#[test]
fn shards_are_range_checked() {
    let p = Project::new().file("a.py", "x = 1\n");
    for (bad, says) in [
        ("3/2", "the shard K must be from 1 to 2"),
        ("0/4", "the shard K must be from 1 to 4"),
        ("1/0", "the number of shards N must be from 1 to 10000"),
        ("2", "write K/N"),
        ("a/b", "write K/N"),
        (" 1/2", "write K/N in plain digits"),
        ("1 /2", "write K/N in plain digits"),
        ("+1/2", "write K/N in plain digits"),
        ("01/02", "write K/N in plain digits"),
        // Space-separated, a leading `-` is the shard's value, not an unknown option.
        ("-1/2", "write K/N in plain digits"),
    ] {
        let out = p.rlm(&["batch", "*.py", "Review {file}", "--shard", bad]).run();
        out.assert_exit(2);
        assert!(out.stderr.contains(says), "{bad}: {}", out.stderr);
        assert!(out.stderr.contains("--shard"), "{bad}: {}", out.stderr);
    }
}

#[test]
fn merge_refuses_runs_of_different_plans_and_runs_that_share_units() {
    let p = project();
    let mock = mock();
    let url = mock.url();
    batch(&p, &url, &["-o", "s1", "--shard", "1/2"]);
    batch(&p, &url, &["-o", "s2", "--shard", "2/2"]);
    let other = p
        .rlm(&[
            "batch",
            "src",
            "Summarize {file}",
            "--base-url",
            &url,
            "--max-files",
            "50",
            "--shard",
            "2/2",
            "-o",
            "other",
        ])
        .run();
    assert!(other.status == 0 || other.status == 1, "{}", other.stderr);
    let (plan, other_plan) = (
        report(&p, "s1")["plan_id"].clone(),
        report(&p, "other")["plan_id"].clone(),
    );
    assert_ne!(plan, other_plan);

    let out = p.rlm(&["merge", "s1", "other", "-o", "merged"]).run();
    out.assert_exit(2);
    let line = out.stderr.trim();
    assert!(line.contains("runs of different plans"), "{line}");
    assert!(
        line.contains(plan.as_str().unwrap()) && line.contains(other_plan.as_str().unwrap()),
        "{line}"
    );
    assert!(
        line.contains("s1 (shard 1/2)") && line.contains("other (shard 2/2)"),
        "{line}"
    );
    assert!(!p.exists("merged/report.json"), "nothing written");

    // The same shard twice shares every unit of it.
    std::fs::create_dir_all(p.path().join("copy")).unwrap();
    for f in files_under(&p.path().join("s1")) {
        let to = p.path().join("copy").join(f.strip_prefix(p.path().join("s1")).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&f, &to).unwrap();
    }
    let out = p.rlm(&["merge", "s1", "copy", "-o", "merged"]).run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("share") && out.stderr.contains("disjoint units"),
        "{}",
        out.stderr
    );

    // Not a finished run; the output is one of the runs.
    std::fs::remove_file(p.path().join("copy/report.json")).unwrap();
    let out = p.rlm(&["merge", "s1", "copy", "-o", "merged"]).run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("no report.json: the run has not finished"),
        "{}",
        out.stderr
    );
    let out = p.rlm(&["merge", "s1", "s2", "-o", "s2"]).run();
    out.assert_exit(2);
    assert!(out.stderr.contains("is one of the runs to merge"), "{}", out.stderr);
    assert!(p.exists("s2/report.json"), "the run is left alone");

    // A record this rlm cannot read, or none: refused as a run of an older rlm, before the
    // runs are compared.
    let garbled = p.path().join("garbled");
    for f in files_under(&p.path().join("s2")) {
        let to = garbled.join(f.strip_prefix(p.path().join("s2")).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&f, &to).unwrap();
    }
    let settings_path = garbled.join("settings.json");
    let mut settings: Value = serde_json::from_str(&std::fs::read_to_string(&settings_path).unwrap()).unwrap();
    settings["record"] = serde_json::json!("not the record of a run");
    std::fs::write(&settings_path, settings.to_string()).unwrap();
    for runs in [["s1", "garbled"], ["other", "garbled"]] {
        let out = p.rlm(&["merge", runs[0], runs[1], "-o", "merged"]).run();
        out.assert_exit(2);
        assert!(
            out.stderr
                .contains("garbled was written by an older rlm that did not record its arguments"),
            "{}",
            out.stderr
        );
    }
    settings.as_object_mut().unwrap().remove("record");
    std::fs::write(&settings_path, settings.to_string()).unwrap();
    let out = p.rlm(&["merge", "s1", "garbled", "-o", "merged"]).run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("garbled was written by an older rlm"),
        "{}",
        out.stderr
    );

    // Inputs changed since the shards ran: not their plan any more.
    p.write("src/m0.py", "def g0():\n    return 'changed'\n");
    let out = p.rlm(&["merge", "s1", "s2", "-o", "merged"]).run();
    out.assert_exit(2);
    assert!(out.stderr.contains("but the runs are of plan"), "{}", out.stderr);
}

#[test]
fn a_merge_reports_the_tier_its_shards_were_billed_at() {
    let p = project();
    let mock = mock();
    let url = mock.url();
    let shard = |k: &str, dir: &str, extra: &[&str]| {
        let mut args = vec!["-o", dir, "--shard", k, "--no-cache", "--aggregate", "concat"];
        args.extend_from_slice(extra);
        let out = batch(&p, &url, &args);
        assert!(out.status == 0 || out.status == 1, "{k}: {}", out.stderr);
        out.json()
    };
    let merge = |dirs: [&str; 2], out: &str| {
        let merged = p
            .rlm(&["merge", dirs[0], dirs[1], "-o", out, "--json"])
            .env_remove("ANTHROPIC_API_KEY")
            .run();
        // (The refused file fails realtime calls only: a batch shard has no failure.)
        assert!(merged.status == 0 || merged.status == 1, "{}", merged.stderr);
        merged.json()
    };
    let b1 = shard("1/2", "b1", &["--batch-api"]);
    let b2 = shard("2/2", "b2", &["--batch-api"]);
    let r2 = shard("2/2", "r2", &[]);
    assert_eq!(
        (b1["price_tier"].as_str(), r2["price_tier"].as_str()),
        (Some("batch"), Some("realtime"))
    );

    // Both shards at the batch price: so is the merge, and its report says so.
    let m = merge(["b1", "b2"], "batched");
    assert_eq!(m["price_tier"], "batch");
    // The merged report lists the shards' batches.
    let batches: Vec<Value> = [&b1, &b2]
        .iter()
        .flat_map(|r| r["batches"].as_array().cloned().unwrap_or_default())
        .collect();
    assert_eq!(batches.len(), 2, "{b1} {b2}");
    assert_eq!(m["batches"], Value::Array(batches));
    let cost = |r: &Value| r["cost_usd"].as_f64().unwrap();
    assert!((cost(&m) - cost(&b1) - cost(&b2)).abs() < 1e-9);
    assert!(
        p.read("batched/report.md")
            .contains("at the batch price (half of list)"),
        "{}",
        p.read("batched/report.md")
    );
    // One at each price: mixed.
    let m = merge(["b1", "r2"], "mixed");
    assert_eq!(m["price_tier"], "mixed");
    assert!((cost(&m) - cost(&b1) - cost(&r2)).abs() < 1e-9);
}

/// The arguments an rlm before the versioned run record kept in `settings.json` (the clap
/// struct itself, under `args`) for `batch(p, url, ["-o", sN, "--shard", "N/2",
/// "--no-cache"])`, field for field.
fn legacy_args(url: &str, shard: u32) -> Value {
    let text = r#"{
        "pattern": "src", "sub_prompt": "PROMPT", "prompt_file": null, "files_from": null,
        "null": false, "changed_since": null, "sarif": null, "fail_on": null, "schema": null,
        "chunking": "Auto", "batch_small": false, "no_batch_small": false, "focus": "General",
        "model": null, "provider": null, "command": null, "agent_env": [], "max_depth": 3,
        "base_url": "URL", "output_dir": "sSHARD", "aggregate": null,
        "max_parallel": null, "no_prompt_cache": false, "no_cache": true, "cache_only": false,
        "batch_api": null, "batch_api_fallback": "Batch", "force": false, "yes": false,
        "dry_run": false, "json": true, "quiet": false, "timeout": 120.0,
        "connect_timeout": 10.0, "retries": 3, "deadline": null, "save_trajectory": null,
        "rate_limit_wait": 600.0, "max_tokens": null, "max_cost": null,
        "context_window": null, "temperature": null, "no_ignore": false, "hidden": false,
        "follow_links": false, "include": [], "exclude": [], "no_recursive": false,
        "shard": {"index": SHARD, "count": 2}, "max_files": 50, "neighbors_of": null,
        "direction": null, "depth": null, "graph": null, "graph_file": null,
        "require_citations": false
    }"#;
    serde_json::from_str(
        &text
            .replace("PROMPT", PROMPT)
            .replace("URL", url)
            .replace("SHARD", &shard.to_string()),
    )
    .unwrap()
}

/// Shards recorded by an rlm older than the versioned run record (`args` in
/// `settings.json`) merge as shards recorded now do: the same result files, synthesis and
/// aggregate.
#[test]
fn shards_recorded_by_an_older_rlm_still_merge() {
    let p = project();
    let mock = mock();
    for k in ["1/2", "2/2"] {
        let dir = format!("s{}", &k[..1]);
        let out = batch(&p, &mock.url(), &["-o", &dir, "--shard", k, "--no-cache"]);
        assert!(out.status == 0 || out.status == 1, "{k}: {}", out.stderr);
    }
    let before = mock.requests();
    p.rlm(&["merge", "s1", "s2", "-o", "merged"]).run().assert_exit(1);
    let synthesis_calls = mock.requests() - before;
    for shard in [1, 2] {
        let path = p.path().join(format!("s{shard}/settings.json"));
        let mut settings = read_json(&path);
        assert_eq!(settings["record"]["settings"]["shard"]["index"], shard);
        settings.as_object_mut().unwrap().remove("record");
        settings["args"] = legacy_args(&mock.url(), shard);
        std::fs::write(&path, settings.to_string()).unwrap();
    }
    let calls = mock.requests();
    let old = p.rlm(&["merge", "s1", "s2", "-o", "merged-old"]).run();
    old.assert_exit(1);
    assert_eq!(
        mock.requests() - calls,
        synthesis_calls,
        "the same synthesis, no unit asked again"
    );
    assert_eq!(
        result_files(&p.path().join("merged-old")),
        result_files(&p.path().join("merged"))
    );
    assert_eq!(aggregate_md(&p, "merged-old"), aggregate_md(&p, "merged"));
    assert_eq!(unit_ids(&report(&p, "merged-old")), unit_ids(&report(&p, "merged")));
}

/// A merge that lacks a shard is no run `rlm resume` takes up (it refuses a merge) nor one
/// the same command finishes (a merge sends nothing): what it says to do next names the
/// merged runs, on the terminal and in report.md.
#[test]
fn a_merge_missing_a_shard_says_to_merge_again_not_to_resume_it() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(8);
    for k in ["1/2", "2/2"] {
        let dir = format!("s{}", &k[..1]);
        let url = mock.url();
        let args = crate::support::batch("src/*.ts", &url, &["-o", &dir, "--shard", k]);
        p.rlm(&args).run().assert_exit(0);
    }
    let out = p.rlm(&["merge", "s1", "-o", "merged"]).run();
    out.assert_exit(1);
    let report = report(&p, "merged");
    let not_run = report["not_run"].as_array().unwrap().len();
    assert!(not_run > 0, "shard 2's units are not run: {report}");
    let md = std::fs::read_to_string(p.path().join("merged/report.md")).unwrap();
    for (what, text) in [("the terminal", out.stdout.as_str()), ("report.md", md.as_str())] {
        assert!(
            !text.contains("rlm resume batch-"),
            "{what} offers a resume of the merge:\n{text}"
        );
        assert!(!text.contains("Run the same command again"), "{what}:\n{text}");
        assert!(text.contains("merge again"), "{what}:\n{text}");
    }
    // What it no longer offers: `rlm resume` refuses a merge, and sends nothing.
    let run = report["run_id"].as_str().unwrap();
    let calls = mock.requests();
    let resumed = p.rlm(&["resume", run, "--yes"]).run();
    resumed.assert_exit(2);
    assert!(
        resumed.stderr.contains("was not started by rlm batch"),
        "{}",
        resumed.stderr
    );
    assert_eq!(mock.requests(), calls);
}

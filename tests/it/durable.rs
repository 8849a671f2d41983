//! Durable runs through the binary: every run is recorded in the task store; `kill -9`,
//! SIGTERM and a budget stop are taken up again by `rlm resume` without paying twice for a
//! completed unit; `rlm status` and `rlm list` read the store.
#![cfg(unix)]

use std::collections::HashMap;
use std::time::Duration;

use crate::support::mock_llm::*;
use crate::support::*;
use serde_json::Value;

/// How many requests the mock received per file (by the `File:` line of the prompt).
fn requests_per_file(mock: &MockLlm) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for r in mock.recorded() {
        if let Some(path) = r.user_text().lines().next().and_then(|l| l.strip_prefix("File: ")) {
            *counts.entry(path.to_string()).or_insert(0) += 1;
        }
    }
    counts
}

fn batch_args<'a>(url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "batch",
        "src/*.ts",
        "List {file}",
        "--base-url",
        url,
        "--model",
        "haiku",
        "-o",
        "out",
        "--no-batch-small",
    ];
    args.extend_from_slice(extra);
    args
}

/// The result files written so far (each is written after its answer was cached).
fn finished(p: &Project) -> Vec<String> {
    let dir = p.path().join("out");
    if !dir.is_dir() {
        return Vec::new();
    }
    file_names(&dir)
        .into_iter()
        .filter_map(|n| n.strip_suffix(".result.md").map(|s| s.replacen("src-", "src/", 1)))
        .collect()
}

#[test]
fn kill_9_mid_run_then_resume_pays_for_no_completed_unit() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(250));
    let p = Project::new().ts_files(16);
    let url = mock.url();
    let running = p.rlm(&batch_args(&url, &["-j", "2"])).spawn();
    assert!(
        wait_until(Duration::from_secs(20), || finished(&p).len() >= 4),
        "the run makes progress"
    );
    running.signal("KILL");
    let _ = running.wait();
    let done_before = finished(&p);
    assert!(done_before.len() < 16, "killed mid-run: {done_before:?}");

    let status = p.rlm(&["status", "--json"]).run();
    status.assert_exit(0);
    let s: Value = serde_json::from_str(&status.stdout).unwrap();
    assert!(
        s.to_string().contains("crashed") || s.to_string().contains("CRASHED"),
        "{s}"
    );

    mock.set_latency(Duration::ZERO);
    let out = p.rlm(&["resume", "--yes"]).run();
    out.assert_exit(0);
    let counts = requests_per_file(&mock);
    for file in &done_before {
        assert_eq!(
            counts.get(file),
            Some(&1),
            "{file} completed before the kill and was requested again"
        );
    }
    assert_eq!(finished(&p).len(), 16);
    let report = p.report();
    assert_eq!(report["succeeded"], 16);
    let list = p.rlm(&["list", "--json"]).run();
    list.assert_exit(0);
    let runs: Value = serde_json::from_str(&list.stdout).unwrap();
    assert_eq!(
        runs.as_array().map(Vec::len).or(runs["runs"].as_array().map(Vec::len)),
        Some(1),
        "{runs}"
    );
    // Nothing is left to resume.
    let again = p.rlm(&["resume"]).run();
    again.assert_exit(2);
    assert!(again.stderr.contains("no unfinished run"), "{}", again.stderr);
}

#[test]
fn sigterm_stops_the_run_and_resume_finishes_it() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(300));
    let p = Project::new().ts_files(12);
    let url = mock.url();
    let running = p.rlm(&batch_args(&url, &["-j", "2"])).spawn();
    assert!(wait_until(Duration::from_secs(20), || finished(&p).len() >= 2));
    running.signal("TERM");
    let out = running.wait();
    out.assert_exit(130);
    let done_before = finished(&p);
    mock.set_latency(Duration::ZERO);
    p.rlm(&["resume", "--yes", "--quiet"]).run().assert_exit(0);
    let counts = requests_per_file(&mock);
    for file in &done_before {
        assert_eq!(counts.get(file), Some(&1), "{file} was paid for twice");
    }
    assert_eq!(p.report()["succeeded"], 12);
}

/// Files whose answers are long: the real cost runs to about twice the estimate, so a
/// --max-cost at the estimate passes the check before the run and stops it halfway.
fn long_answers(n: usize) -> Project {
    let mut p = Project::new();
    for i in 0..n {
        p = p.file(
            &format!("src/f{i:02}.ts"),
            &format!("// {i}\n{}\n", reply_marker(&"long answer ".repeat(400))),
        );
    }
    p
}

fn budget_at_estimate(p: &Project, url: &str) -> String {
    let plan = p.rlm(&batch_args(url, &["--dry-run", "--json"])).run();
    let estimate = plan.json()["estimated_cost_usd"].as_f64().unwrap();
    format!("{:.4}", estimate * 1.01)
}

#[test]
fn a_budget_stop_is_resumable_with_a_higher_budget() {
    let mock = MockLlm::start();
    let p = long_answers(12);
    let url = mock.url();
    let budget = budget_at_estimate(&p, &url);
    let out = p
        .rlm(&batch_args(&url, &["-j", "1", "--max-cost", &budget, "--yes"]))
        .run();
    out.assert_exit(1);
    let stopped_after = mock.requests();
    assert!(stopped_after < 12, "the budget stopped dispatching: {stopped_after}");
    let status = p.rlm(&["status"]).run();
    status.assert_exit(0);
    assert!(status.stdout.to_lowercase().contains("budget"), "{}", status.stdout);
    p.rlm(&["resume", "--max-cost", "10", "--yes"]).run().assert_exit(0);
    assert_eq!(mock.requests(), 12, "each file requested once over both runs");
    assert_eq!(p.report()["succeeded"], 12);
}

/// `rlm list` shows a failed unit as failed and the units a budget stop kept from running
/// apart from it, as `rlm status` and `list --json` count them.
#[test]
fn list_shows_failed_and_cancelled_units_apart_as_status_does() {
    let mock = MockLlm::start();
    let p = long_answers(12);
    mock.fault_when("// 0\n", vec![Fault::Status(500, "mock: server error".into())]);
    let url = mock.url();
    let budget = budget_at_estimate(&p, &url);
    p.rlm(&batch_args(
        &url,
        &["-j", "1", "--max-cost", &budget, "--yes", "--retries", "0"],
    ))
    .run()
    .assert_exit(1);
    let status = p.rlm(&["status", "--json"]).run().json();
    let (failed, cancelled) = (
        status["units"]["failed"].as_u64().unwrap(),
        status["units"]["cancelled"].as_u64().unwrap(),
    );
    assert_eq!(failed, 1, "{status:#}");
    assert!(cancelled > 0, "the budget kept some from running: {status:#}");
    let listed = p.rlm(&["list", "--json"]).run().json();
    assert_eq!(listed[0]["units"]["failed"], failed);
    assert_eq!(listed[0]["units"]["cancelled"], cancelled);
    let list = p.rlm(&["list"]).run();
    list.assert_exit(0);
    let cells = |line: &str| -> Vec<String> {
        line.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect()
    };
    let lines: Vec<&str> = list.stdout.lines().collect();
    let (header, row) = (cells(lines[0]), cells(lines[1]));
    let column = |name: &str| {
        row[header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("{name}: {}", list.stdout))]
        .clone()
    };
    assert_eq!(column("FAILED"), failed.to_string(), "{}", list.stdout);
    assert_eq!(column("CANCELLED"), cancelled.to_string(), "{}", list.stdout);
}

/// `rlm resume -q` with no RUN names the run it picked, in one line on stderr: picking one
/// silently is a surprise even when nothing else is to be said.
#[test]
fn quiet_resume_without_a_run_still_names_the_run_it_picked() {
    let mock = MockLlm::start();
    let p = long_answers(12);
    let url = mock.url();
    let budget = budget_at_estimate(&p, &url);
    p.rlm(&batch_args(&url, &["-j", "1", "--max-cost", &budget, "--yes"]))
        .run()
        .assert_exit(1);
    let id = p.report()["run_id"].as_str().unwrap().to_string();
    let out = p.rlm(&["resume", "-q", "--max-cost", "10", "--yes"]).run();
    out.assert_exit(0);
    let lines: Vec<&str> = out.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line under -q:\n{}", out.stderr);
    assert!(
        lines[0].starts_with(&format!("rlm: resuming run {id} (started ")),
        "{}",
        out.stderr
    );
    assert_eq!(p.report()["succeeded"], 12);
}

#[test]
fn resume_leaves_failed_units_alone_unless_asked() {
    let mock = MockLlm::start();
    let p = long_answers(12);
    mock.fault_when("// 0\n", vec![Fault::Status(500, "mock: server error".into())]);
    let url = mock.url();
    let budget = budget_at_estimate(&p, &url);
    let out = p
        .rlm(&batch_args(
            &url,
            &["-j", "1", "--max-cost", &budget, "--yes", "--retries", "0"],
        ))
        .run();
    out.assert_exit(1);
    assert_eq!(
        requests_per_file(&mock).get("src/f00.ts"),
        Some(&1),
        "the first file failed"
    );
    // Resume (budget raised): the failed unit stays failed, the rest completes.
    mock.reset_counts();
    let out = p.rlm(&["resume", "--max-cost", "10", "--yes"]).run();
    out.assert_exit(1);
    let counts = requests_per_file(&mock);
    assert!(
        !counts.contains_key("src/f00.ts"),
        "a failed unit is not retried without --failed: {counts:?}"
    );
    assert_eq!(p.report()["succeeded"], 11);
    let run_id = p.report()["run_id"].as_str().unwrap().to_string();
    mock.reset_counts();
    p.rlm(&["resume", &run_id, "--failed", "--yes"]).run().assert_exit(0);
    assert_eq!(requests_per_file(&mock).get("src/f00.ts"), Some(&1));
    assert_eq!(p.report()["succeeded"], 12);
}

#[test]
fn two_runs_at_once_share_the_cache_and_the_store() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(50));
    let p = Project::new().ts_files(10);
    let url = mock.url();
    let a = p
        .rlm(&["batch", "src/*.ts", "List {file}", "--base-url", &url, "-o", "out-a"])
        .spawn();
    let b = p
        .rlm(&["batch", "src/*.ts", "List {file}", "--base-url", &url, "-o", "out-b"])
        .spawn();
    a.wait().assert_exit(0);
    b.wait().assert_exit(0);
    let list = p.rlm(&["list"]).run();
    list.assert_exit(0);
    assert!(!list.stderr.contains("warning"), "{}", list.stderr);
    let runs: Value = serde_json::from_str(&p.rlm(&["list", "--json"]).run().stdout).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2, "both runs are recorded, each under its own id: {runs:?}");
    assert_ne!(runs[0]["id"], runs[1]["id"]);
    assert!(runs.iter().all(|r| r["status"] == "SUCCESS"), "{runs:?}");
}

#[test]
fn status_and_list_say_so_when_there_is_nothing() {
    let p = Project::new();
    let out = p.rlm(&["status"]).run();
    out.assert_exit(2);
    assert!(out.stderr.contains("no runs recorded"), "{}", out.stderr);
    let out = p.rlm(&["resume"]).run();
    out.assert_exit(2);
    // No runs yet is an empty list, not an error.
    let out = p.rlm(&["list"]).run();
    out.assert_exit(0);
    assert!(out.stdout.contains("no runs yet"), "{}", out.stdout);
    let out = p.rlm(&["list", "--json"]).run();
    out.assert_exit(0);
    assert_eq!(out.json(), serde_json::json!([]));
}

#[test]
fn a_deadline_stops_dispatching_and_resume_goes_on() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(400));
    let p = Project::new().ts_files(12);
    let url = mock.url();
    let out = p.rlm(&batch_args(&url, &["-j", "1", "--deadline", "1s"])).run();
    out.assert_exit(1);
    let report = p.report();
    assert!(report["error"].as_str().unwrap().contains("--deadline"), "{report:#}");
    let done = report["succeeded"].as_u64().unwrap();
    assert!((1..12).contains(&done), "{done}");
    assert!(p.rlm(&["status"]).run().stdout.to_lowercase().contains("deadline"));
    mock.set_latency(Duration::ZERO);
    // The deadline is the whole run's: a resume without more time has none left, and
    // dispatches nothing.
    let sent = mock.requests();
    let again = p.rlm(&["resume", "--yes"]).run();
    again.assert_exit(1);
    assert_eq!(mock.requests(), sent, "{}", again.stderr);
    assert!(p.rlm(&["status"]).run().stdout.contains("DEADLINE_EXCEEDED"));
    p.rlm(&["resume", "--yes", "--deadline", "60s"]).run().assert_exit(0);
    assert_eq!(p.report()["succeeded"], 12);
    let bad = p.rlm(&batch_args(&url, &["--deadline", "soon"])).run();
    bad.assert_exit(2);
    assert!(bad.stderr.contains("not a duration"), "{}", bad.stderr);
}

#[test]
fn save_trajectory_writes_one_line_per_call_without_the_key() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(3);
    let url = mock.url();
    p.rlm(&batch_args(&url, &["--save-trajectory", "traj/calls.jsonl"]))
        .run()
        .assert_exit(0);
    let text = p.read("traj/calls.jsonl");
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3);
    for line in &lines {
        assert_eq!(line["success"], true);
        assert_eq!(line["model"], "claude-haiku-5-5");
        assert!(line["prompt"]["user"].as_str().unwrap().contains("export const"));
        assert!(line["response"].as_str().unwrap().starts_with("mock result"));
        assert!(line["tokens_in"].as_u64().unwrap() > 0);
    }
    assert!(!text.contains(TEST_KEY));
}

/// A trajectory path that cannot be opened stops the command before the run exists: no
/// run directory, no run in the store (it was left there CRASHED, and `rlm resume` took it
/// up and failed again).
#[test]
fn a_trajectory_that_cannot_be_opened_leaves_no_run_behind() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(2).file("blocker", "a file\n");
    let url = mock.url();
    let out = p
        .rlm(&batch_args(&url, &["--save-trajectory", "blocker/calls.jsonl"]))
        .run();
    out.assert_exit(2);
    assert!(out.stderr.contains("--save-trajectory"), "{}", out.stderr);
    assert_eq!(mock.requests(), 0);
    assert!(!p.exists("out"), "no run directory");
    let list = p.rlm(&["list", "--json"]).run();
    list.assert_exit(0);
    assert_eq!(list.json(), serde_json::json!([]), "{}", list.stdout);
    p.rlm(&["resume", "--yes"]).run().assert_exit(2);
    assert_eq!(mock.requests(), 0);
}

/// What the aggregation calls cost (summarize, synthesize) is the run's spend too: the task
/// store counts it, so `rlm status` and `rlm list` say what report.json says, and a resume
/// starts from it (`--max-cost` counts it; the resumed report keeps it). The store counted
/// only the units' calls.
#[test]
fn the_store_counts_what_the_aggregation_calls_cost() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(3);
    let url = mock.url();
    p.rlm(&batch_args(&url, &["--aggregate", "summarize"]))
        .run()
        .assert_exit(0);
    let report = p.report();
    let aggregate: f64 = report["aggregate_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cost_usd"].as_f64().unwrap())
        .sum();
    assert!(aggregate > 0.0, "{report:#}");
    let status = status_json(&p);
    let paid = report["cost_usd"].as_f64().unwrap();
    let recorded = status["cost_usd"].as_f64().unwrap();
    assert!((paid - recorded).abs() < 1e-9, "report {paid} vs status {recorded}");
    assert_eq!(status["tokens_in"], report["tokens_in"], "{status:#}");
    assert_eq!(status["tokens_out"], report["tokens_out"], "{status:#}");
}

/// What the calls of a pack's files asked alone cost (the pack's answer left them out) is
/// the run's spend too: the store counted only the pack's call.
#[test]
fn the_store_counts_what_the_files_asked_alone_cost() {
    let mock = MockLlm::start();
    let only_a = r#"{"files": [{"file": "src/a.ts", "answer": "a"}]}"#;
    let p = Project::new()
        .file(
            "src/a.ts",
            &format!("// {}\nexport const a = 1;\n", reply_marker(only_a)),
        )
        .file("src/b.ts", "export const b = 2;\n")
        .file("src/c.ts", "export const c = 3;\n");
    let url = mock.url();
    let args = [
        "batch",
        "src/*.ts",
        "List {file}",
        "--base-url",
        &url,
        "--model",
        "haiku",
        "-o",
        "out",
    ];
    p.rlm(&args).run().assert_exit(0);
    let report = p.report();
    assert_eq!(report["asked_alone"], 2, "{report:#}");
    assert_eq!(mock.requests(), 3);
    let status = status_json(&p);
    let paid = report["cost_usd"].as_f64().unwrap();
    let recorded = status["cost_usd"].as_f64().unwrap();
    assert!((paid - recorded).abs() < 1e-9, "report {paid} vs status {recorded}");
    assert_eq!(status["tokens_in"], report["tokens_in"], "{status:#}");
}

/// The status of the newest run, as `rlm status --json` prints it.
fn status_json(p: &Project) -> Value {
    let out = p.rlm(&["status", "--json"]).run();
    out.assert_exit(0);
    out.json()
}

/// `$0.0283` → 0.0283.
fn dollars(text: &str) -> f64 {
    text.trim_start_matches('$')
        .parse()
        .unwrap_or_else(|_| panic!("not an amount: {text}"))
}

/// Equal to three significant digits (what an amount shows at least).
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= b.abs() * 0.005
}

/// The amount in the parentheses that follow `before` in `text`: "… --max-cost ($0.03)".
fn amount_after(text: &str, before: &str) -> String {
    let rest = &text[text.find(before).unwrap_or_else(|| panic!("no {before:?} in {text}")) + before.len()..];
    let rest = rest.trim_start_matches(" (").trim_start_matches('(');
    rest.split([')', ',']).next().unwrap().to_string()
}

#[test]
fn max_cost_counts_the_whole_run_across_resumes() {
    let mock = MockLlm::start();
    let p = long_answers(12);
    let url = mock.url();
    let plan = p.rlm(&batch_args(&url, &["--dry-run", "--json"])).run();
    let per_unit = plan.json()["estimated_cost_usd"].as_f64().unwrap() / 12.0;
    let budget = budget_at_estimate(&p, &url);
    p.rlm(&batch_args(&url, &["-j", "1", "--max-cost", &budget, "--yes"]))
        .run()
        .assert_exit(1);
    let first = status_json(&p);
    let spent = first["cost_usd"].as_f64().unwrap();
    let done = first["units"]["completed"].as_u64().unwrap();
    let per_call = spent / done as f64;
    assert!(done < 12, "{first}");
    // Enough for the rest by the estimate (so the run is not refused), but the answers run
    // long: counted over the whole run, the budget stops it again before the end. Counted
    // per attempt (the bug), this resume would have finished every unit.
    let rest = per_unit * (12 - done) as f64;
    let max = format!("{:.6}", spent + rest * 1.05);
    mock.reset_counts();
    let out = p.rlm(&["resume", "--max-cost", &max, "--yes"]).run();
    out.assert_exit(1);
    assert!(
        mock.requests() < (12 - done) as usize,
        "the budget stopped the resume: {} calls",
        mock.requests()
    );
    let after = status_json(&p);
    assert_eq!(after["status"], "BUDGET_EXCEEDED", "{after}");
    let total = after["cost_usd"].as_f64().unwrap();
    let max: f64 = max.parse().unwrap();
    // Past the budget: the call that crossed it, and the one in flight then (-j 1).
    assert!(
        total <= max + per_call * 2.01,
        "at most the calls in flight past the budget: {total} > {max}"
    );
    let error = p.report()["error"].as_str().unwrap().to_string();
    assert!(error.contains("before this resume"), "{error}");
    // The next resume keeps the raised budget, and a higher one finishes the run.
    let again = p.rlm(&["resume", "--yes"]).run();
    again.assert_exit(2);
    let limit = dollars(&amount_after(&again.stderr, "exceeds --max-cost"));
    assert!(
        close(limit, max),
        "the raised budget ({max}) still holds: {}",
        again.stderr
    );
    p.rlm(&["resume", "--max-cost", "10", "--yes"]).run().assert_exit(0);
    assert_eq!(p.report()["succeeded"], 12);
}

#[test]
fn money_is_shown_with_enough_digits_to_be_true() {
    let mock = MockLlm::start();
    let p = long_answers(12);
    let url = mock.url();
    // A budget of 0: the estimate is more than nothing, and says so.
    let zero = p.rlm(&batch_args(&url, &["--max-cost", "0"])).run();
    zero.assert_exit(2);
    let shown = amount_after(&zero.stderr, "Estimated cost (");
    let limit = amount_after(&zero.stderr, "safety threshold");
    assert_ne!(shown, limit, "{}", zero.stderr);
    assert!(dollars(&shown) > 0.0 && dollars(&limit) == 0.0, "{}", zero.stderr);
    // A budget stop names the budget as given, and a spend that reached it.
    let budget = budget_at_estimate(&p, &url);
    p.rlm(&batch_args(&url, &["-j", "1", "--max-cost", &budget, "--yes"]))
        .run()
        .assert_exit(1);
    let error = p.report()["error"].as_str().unwrap().to_string();
    let spent = amount_after(&error, "the cost so far");
    let limit = amount_after(&error, "reached --max-cost");
    assert!(close(dollars(&limit), budget.parse().unwrap()), "{error}");
    assert!(dollars(&spent) >= dollars(&limit) && spent != limit, "{error}");
    let status = p.rlm(&["status"]).run().stdout;
    assert!(!status.contains("$0.0000 "), "{status}");
}

#[test]
fn an_interrupted_run_is_cancelled_and_resume_names_it_and_appends_to_its_log() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(300));
    let p = Project::new().ts_files(12);
    let url = mock.url();
    let running = p.rlm(&batch_args(&url, &["-j", "2"])).spawn();
    assert!(wait_until(Duration::from_secs(20), || finished(&p).len() >= 2));
    running.signal("TERM");
    running.wait().assert_exit(130);
    // What did not finish is cancelled, not left queued or running.
    let stopped = status_json(&p);
    let units = &stopped["units"];
    assert_eq!(
        (units["queued"].as_u64(), units["running"].as_u64()),
        (Some(0), Some(0)),
        "{stopped}"
    );
    let done = units["completed"].as_u64().unwrap();
    assert_eq!(units["cancelled"].as_u64().unwrap(), 12 - done, "{stopped}");
    let id = stopped["id"].as_str().unwrap().to_string();
    let log_before = p.read("out/events.jsonl");

    mock.set_latency(Duration::ZERO);
    let out = p.rlm(&["resume", "--yes"]).run();
    out.assert_exit(0);
    assert!(
        out.stderr.contains(&format!("rlm: resuming run {id} (started ")),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(&format!(", {} of 12 units left", 12 - done)),
        "{}",
        out.stderr
    );
    let log = p.read("out/events.jsonl");
    assert!(log.starts_with(&log_before), "the log of the first attempt is kept");
    let events: Vec<Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let resumed: Vec<&Value> = events.iter().filter(|e| e["event"] == "run:resumed").collect();
    assert_eq!(resumed.len(), 1, "{log}");
    assert_eq!(resumed[0]["attempt"], 2);
    assert_eq!(resumed[0]["run_id"], id.as_str());
    assert_eq!(events.last().unwrap()["event"], "batch:completed");
    let after = status_json(&p);
    assert_eq!(after["units"]["completed"], 12, "{after}");
    assert_eq!(after["attempts"], 2, "{after}");
}

#[test]
fn the_store_shows_a_completion_when_it_happens_and_never_more_running_than_the_width() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(4);
    // The third file's call never answers: the run sits there with two units done.
    mock.fault_when("f02 = 2", vec![Fault::Hang]);
    let url = mock.url();
    let running = p.rlm(&batch_args(&url, &["-j", "1", "--timeout", "60"])).spawn();
    assert!(wait_until(Duration::from_secs(20), || mock.requests() >= 3));
    let mut seen = Value::Null;
    let shown = wait_until(Duration::from_secs(20), || {
        seen = status_json(&p);
        assert!(
            seen["units"]["running"].as_u64().unwrap() <= 1,
            "wider than -j 1: {seen}"
        );
        seen["units"]["completed"] == 2 && seen["units"]["running"] == 1
    });
    assert!(
        shown,
        "the two completions and the call in flight are in the store: {seen}"
    );
    running.signal("KILL");
    let _ = running.wait();
}

#[test]
fn status_tree_without_an_id_shows_the_latest_root_run() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(2);
    let url = mock.url();
    p.rlm(&batch_args(&url, &[])).run().assert_exit(0);
    let root = p.report()["run_id"].as_str().unwrap().to_string();
    // A run that root's command agent started (later, in the same directory).
    p.rlm(&[
        "batch",
        "src/*.ts",
        "List {file}",
        "--base-url",
        &url,
        "-o",
        "child-out",
    ])
    .env("RLM_PARENT_RUN", &root)
    .env("RLM_DEPTH", "1")
    .run()
    .assert_exit(0);
    let tree = p.rlm(&["status", "--tree"]).run();
    tree.assert_exit(0);
    let lines: Vec<&str> = tree.stdout.lines().collect();
    assert!(lines[0].starts_with(&root), "{}", tree.stdout);
    assert_eq!(lines.len(), 2, "{}", tree.stdout);
    assert!(lines[1].contains("└── batch-"), "{}", tree.stdout);
}

/// The cache entries written so far (the `.tmp` directory and claims aside).
fn cached_entries(p: &Project) -> usize {
    let dir = p.path().join(".aiwg/rlm/cache/results-v1");
    files_under(&dir)
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "json") && !f.to_string_lossy().contains("/.tmp"))
        .count()
}

#[test]
fn an_answer_the_cache_cannot_take_is_kept_and_resume_never_pays_for_it_again() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(150));
    let p = Project::new().ts_files(10);
    let url = mock.url();
    let running = p.rlm(&batch("src/*.ts", &url, &["-j", "1", "-o", "out"])).spawn();
    // Once a few answers are cached, the cache breaks: its temporary directory becomes a file.
    assert!(wait_until(Duration::from_secs(30), || cached_entries(&p) >= 3));
    let tmp = p.path().join(".aiwg/rlm/cache/results-v1/.tmp");
    std::fs::remove_dir_all(&tmp).unwrap();
    std::fs::write(&tmp, "not a directory").unwrap();
    let out = running.wait();
    out.assert_exit(1);
    let paid_first = mock.requests();
    assert!(
        paid_first < 10,
        "dispatching stopped at the failed cache write: {paid_first}"
    );
    assert!(out.stderr.contains("cannot be cached"), "{}", out.stderr);
    assert!(
        out.stderr.contains("pending-cache"),
        "the message says where: {}",
        out.stderr
    );
    let kept = files_under(&p.path().join("out/pending-cache"));
    assert!(!kept.is_empty(), "the uncached answer is kept in the run directory");

    // While the cache is still broken, resume refuses before paying anything.
    mock.reset_counts();
    p.rlm(&["resume", "--yes"]).run().assert_exit(2);
    assert_eq!(mock.requests(), 0);

    // Fixed: resume caches the kept answers and pays only for the units never answered.
    std::fs::remove_file(&tmp).unwrap();
    p.rlm(&["resume", "--yes"]).run().assert_exit(0);
    assert_eq!(
        paid_first + mock.requests(),
        10,
        "every unit paid for exactly once across the two attempts"
    );
    assert!(files_under(&p.path().join("out/pending-cache")).is_empty());
    assert_eq!(p.report()["succeeded"], 10);
}

#[test]
fn resume_builds_the_settings_from_the_recorded_arguments_not_a_command_line() {
    let mock = MockLlm::start();
    let p = long_answers(12);
    let url = mock.url();
    let budget = budget_at_estimate(&p, &url);
    p.rlm(&batch_args(&url, &["-j", "1", "--max-cost", &budget, "--yes"]))
        .run()
        .assert_exit(1);
    // The recorded command line no longer parses: resume does not need it.
    let store = rusqlite::Connection::open(p.path().join(".aiwg/rlm/store.sqlite3")).unwrap();
    store
        .execute(
            "UPDATE runs SET command_json = '[\"rlm\", \"batch\", \"--no-such-flag\"]'",
            [],
        )
        .unwrap();
    drop(store);
    p.rlm(&["resume", "--max-cost", "10", "--yes"]).run().assert_exit(0);
    assert_eq!(mock.requests(), 12, "each file requested once over both runs");
    assert_eq!(p.report()["succeeded"], 12);
}

#[test]
fn answers_a_killed_run_journaled_but_never_cached_are_not_paid_again() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(6);
    let url = mock.url();
    p.rlm(&batch("src/*.ts", &url, &["-o", "out"])).run().assert_exit(0);
    assert!(
        !p.exists("out/answers.journal"),
        "a finished run's journal is gone: all of it is cached"
    );
    assert_eq!(mock.requests(), 6);
    // What a kill -9 between the journal's append and the cache's write leaves: the answers
    // in the run directory's journal, none in the cache.
    let cache = p.path().join(".aiwg/rlm/cache/results-v1");
    let mut journal = String::new();
    for f in files_under(&cache) {
        if f.extension().is_some_and(|e| e == "json") && !f.to_string_lossy().contains("/.tmp") {
            journal.push_str(std::fs::read_to_string(&f).unwrap().trim());
            journal.push('\n');
        }
    }
    assert_eq!(journal.lines().count(), 6);
    std::fs::remove_dir_all(&cache).unwrap();
    std::fs::write(p.path().join("out/answers.journal"), journal).unwrap();
    mock.reset_counts();
    let out = p.rlm(&batch("src/*.ts", &url, &["-o", "out"])).run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 0, "served from the journal: {}", out.stderr);
    assert_eq!(p.report()["cache_hits"], 6);
    assert_eq!(cached_entries(&p), 6, "and put into the cache");
    assert!(!p.exists("out/answers.journal"));
}

#[test]
fn report_json_says_budget_exceeded_and_deadline_exceeded_as_the_store_does() {
    let mock = MockLlm::start();
    let p = long_answers(12);
    let url = mock.url();
    let budget = budget_at_estimate(&p, &url);
    p.rlm(&batch_args(&url, &["-j", "1", "--max-cost", &budget, "--yes"]))
        .run()
        .assert_exit(1);
    let report = p.report();
    assert_eq!(report["status"], "BUDGET_EXCEEDED", "{report:#}");
    assert_eq!(status_json(&p)["status"], "BUDGET_EXCEEDED");
    let next = p.read("out/report.md");
    let id = report["run_id"].as_str().unwrap();
    assert!(next.contains(&format!("`rlm resume {id} --max-cost USD`")), "{next}");

    // A deadline that passed before anything was dispatched: nothing succeeded, and the run
    // is still the deadline's (resumable with more time), not FAILED; and it was no Ctrl-C.
    let q = Project::new().ts_files(3);
    let out = q.rlm(&batch_args(&url, &["-j", "1", "--deadline", "0.001s"])).run();
    out.assert_exit(1);
    let report = q.report();
    assert_eq!(report["status"], "DEADLINE_EXCEEDED", "{report:#}");
    assert_eq!(report["succeeded"], 0);
    assert_eq!(report["not_run"].as_array().unwrap().len(), 3);
    let id = report["run_id"].as_str().unwrap();
    let error = report["error"].as_str().unwrap();
    assert!(error.contains(&format!("rlm resume {id} --deadline")), "{error}");
    assert!(
        !out.stderr.contains("interrupted") && !out.stderr.contains("Ctrl-C"),
        "{}",
        out.stderr
    );
    assert_eq!(status_json(&q)["status"], "DEADLINE_EXCEEDED");
}

#[test]
fn a_run_whose_last_calls_cross_the_budget_after_every_unit_succeeded_is_a_success() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(200));
    let p = long_answers(7);
    let url = mock.url();
    let plan = p.rlm(&batch_args(&url, &["--dry-run", "--json"])).run();
    let budget = format!("{:.6}", plan.json()["estimated_cost_usd"].as_f64().unwrap() * 1.01);
    // All seven are dispatched at once; the answers run long, so the spend crosses the
    // budget (set at the estimate) while the last of them are in flight.
    let out = p
        .rlm(&batch_args(&url, &["-j", "7", "--max-cost", &budget, "--yes"]))
        .run();
    out.assert_exit(0);
    let report = p.report();
    assert!(
        report["cost_usd"].as_f64().unwrap() > budget.parse::<f64>().unwrap(),
        "the budget was crossed: {report:#}"
    );
    assert_eq!(report["status"], "SUCCESS", "{report:#}");
    assert_eq!(report["succeeded"], 7);
    assert!(report["error"].is_null(), "{report:#}");
    assert!(
        report["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("--max-cost")),
        "{report:#}"
    );
    assert_eq!(status_json(&p)["status"], "SUCCESS");
    // Nothing to resume; named, the resume has nothing to pay for and does not refuse.
    let none = p.rlm(&["resume", "--yes"]).run();
    none.assert_exit(2);
    assert!(none.stderr.contains("no unfinished run"), "{}", none.stderr);
    let id = report["run_id"].as_str().unwrap().to_string();
    p.rlm(&["resume", &id, "--yes"]).run().assert_exit(0);
    assert_eq!(mock.requests(), 7, "nothing paid again");
}

#[test]
fn a_deadline_lets_the_calls_in_flight_finish_and_says_how_to_go_on() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(1500));
    let p = Project::new().ts_files(6);
    let url = mock.url();
    let out = p.rlm(&batch_args(&url, &["-j", "3", "--deadline", "1s"])).run();
    out.assert_exit(1);
    assert!(
        out.stderr
            .contains("the --deadline (1.0s) passed: dispatching stopped; the 3 calls in flight finish"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("interrupted") && !out.stderr.contains("Ctrl-C"),
        "{}",
        out.stderr
    );
    let report = p.report();
    assert_eq!(report["status"], "DEADLINE_EXCEEDED");
    assert_eq!(
        report["succeeded"], 3,
        "the calls in flight were let finish: {report:#}"
    );
    let id = report["run_id"].as_str().unwrap().to_string();
    assert!(
        report["error"]
            .as_str()
            .unwrap()
            .contains(&format!("`rlm resume {id} --deadline DURATION`")),
        "{report:#}"
    );
    assert_eq!(mock.requests(), 3);
    mock.set_latency(Duration::ZERO);
    p.rlm(&["resume", "--yes", "--deadline", "60s"]).run().assert_exit(0);
    assert_eq!(
        mock.requests(),
        6,
        "the answers in flight at the deadline were not paid again"
    );
    assert!(requests_per_file(&mock).values().all(|&n| n == 1));
}

#[test]
fn after_a_resume_report_json_counts_the_whole_runs_cost_and_tells_earlier_answers_from_cache_hits() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(300));
    let p = Project::new().ts_files(12);
    let url = mock.url();
    let running = p.rlm(&batch_args(&url, &["-j", "2"])).spawn();
    assert!(wait_until(Duration::from_secs(20), || finished(&p).len() >= 4));
    running.signal("TERM");
    running.wait().assert_exit(130);
    let first = status_json(&p);
    let (spent_before, done) = (
        first["cost_usd"].as_f64().unwrap(),
        first["units"]["completed"].as_u64().unwrap(),
    );
    assert!(spent_before > 0.0 && done < 12, "{first}");

    mock.set_latency(Duration::ZERO);
    p.rlm(&["resume", "--yes"]).run().assert_exit(0);
    let report = p.report();
    let whole = status_json(&p)["cost_usd"].as_f64().unwrap();
    assert!(
        close(report["cost_usd"].as_f64().unwrap(), whole),
        "{report:#} vs {whole}"
    );
    assert!(
        close(report["earlier_cost_usd"].as_f64().unwrap(), spent_before),
        "{report:#}"
    );
    assert_eq!(report["earlier_answers"], done, "{report:#}");
    assert_eq!(
        report["cache_hits"], 0,
        "paid for by the first attempt, not cache hits: {report:#}"
    );
    assert_eq!(report["cache_misses"].as_u64().unwrap(), 12 - done);
    let earlier = report["units"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["answered_earlier"] == true)
        .count();
    assert_eq!(earlier as u64, done);
}

/// The cache keys of the answers a run kept: in the cache, in its run directory's journal
/// and in its `pending-cache/`.
fn kept_keys(p: &Project) -> std::collections::HashSet<String> {
    let mut keys = std::collections::HashSet::new();
    let entries = files_under(&p.path().join(".aiwg/rlm/cache/results-v1"))
        .into_iter()
        .chain(files_under(&p.path().join("out/pending-cache")))
        .filter(|f| f.extension().is_some_and(|e| e == "json") && !f.to_string_lossy().contains("/.tmp"));
    for f in entries {
        if let Ok(entry) = serde_json::from_str::<Value>(&std::fs::read_to_string(&f).unwrap_or_default()) {
            keys.extend(entry["key"].as_str().map(str::to_string));
        }
    }
    let journal = std::fs::read_to_string(p.path().join("out/answers.journal")).unwrap_or_default();
    for line in journal.lines() {
        if let Ok(entry) = serde_json::from_str::<Value>(line) {
            keys.extend(entry["key"].as_str().map(str::to_string));
        }
    }
    keys
}

#[test]
fn a_kill_9_at_j_7_leaves_at_most_7_answers_paid_and_not_kept() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(60));
    let p = Project::new().ts_files(120);
    let url = mock.url();
    let running = p.rlm(&batch_args(&url, &["-j", "7"])).spawn();
    assert!(wait_until(Duration::from_secs(30), || mock.requests() >= 50));
    running.signal("KILL");
    let _ = running.wait();
    let asked = mock.requests();
    let kept = kept_keys(&p).len();
    assert!(asked < 120, "killed mid-run: {asked}");
    assert!(
        asked - kept <= 7,
        "{asked} requests, {kept} answers kept: more than the 7 in flight were lost"
    );
    mock.reset_counts();
    p.rlm(&["resume", "--yes"]).run().assert_exit(0);
    assert_eq!(p.report()["succeeded"], 120);
    assert_eq!(
        mock.requests(),
        120 - kept,
        "the resume paid only for the answers not kept"
    );
}

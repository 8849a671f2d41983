//! `rlm batch --batch-api` through the binary, against the mock's batch APIs (issue 18):
//! a run of a few hundred files, `kill -9` while waiting then `rlm resume` (one
//! submission), errored items retried alone, `rlm cancel`, a split above the request
//! limit, cost at half of list, `rlm status` without a network call, `--batch-api auto`
//! against a server without batch endpoints.
#![cfg(unix)]

use std::time::Duration;

use serde_json::Value;

use crate::support::mock_llm::batch::{BatchFault, BatchProgress};
use crate::support::mock_llm::*;
use crate::support::*;

/// Polls every 20 ms (the default schedule waits seconds).
const FAST_POLLS: &str = "20";

fn ts_project(n: usize) -> Project {
    let p = Project::new();
    for i in 0..n {
        p.write(&format!("src/f{i:03}.ts"), &format!("export const f{i:03} = {i};\n"));
    }
    p
}

/// `rlm batch src/*.ts "List {file}" --base-url URL --model haiku -o out --batch-api EXTRA…`
fn batch_api_args<'a>(url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
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
        "--yes",
        "--no-batch-small",
        "--batch-api",
    ];
    args.extend_from_slice(extra);
    args
}

fn rlm_fast(p: &Project, args: &[&str]) -> Run {
    p.rlm(args).env("RLM_BATCH_POLL_MS", FAST_POLLS)
}

#[test]
fn a_few_hundred_files_go_through_one_batch_and_no_realtime_call() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::AfterPolls(2));
    let p = ts_project(300);
    let url = mock.url();
    let out = rlm_fast(&p, &batch_api_args(&url, &["--json"])).run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 0, "no realtime call");
    assert_eq!(mock.batch_submissions(), 1);
    assert_eq!(mock.batch_sizes(), [300]);
    let report = out.json();
    assert_eq!(report["succeeded"], 300, "{report}");
    assert_eq!(report["price_tier"], "batch");
    assert_eq!(report["batches"].as_array().map(Vec::len), Some(1));
    for i in [0, 150, 299] {
        let file = p.read(&format!("out/src-f{i:03}.ts.result.md"));
        assert!(!file.trim().is_empty());
    }
}

/// `rlm status --json` of the latest run here.
fn status(p: &Project) -> Value {
    let out = p.rlm(&["status", "--json"]).run();
    out.assert_exit(0);
    out.json()
}

/// The files whose result file exists in `out/`.
fn results(p: &Project) -> usize {
    let dir = p.path().join("out");
    if !dir.is_dir() {
        return 0;
    }
    file_names(&dir).iter().filter(|n| n.ends_with(".result.md")).count()
}

#[test]
fn a_new_run_does_not_take_over_a_directory_whose_batch_is_still_at_the_provider() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::Held);
    let p = ts_project(5);
    let url = mock.url();
    let running = rlm_fast(&p, &batch_api_args(&url, &[])).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || mock.batch_polls() >= 1),
        "the run submits and polls"
    );
    running.signal("KILL");
    let _ = running.wait();
    let marker = p.read("out/.rlm-run");

    // The same -o, realtime or not: taking it over would abandon the batch, paid for.
    let out = rlm_fast(
        &p,
        &[
            "batch",
            "src/*.ts",
            "Other {file}",
            "--base-url",
            &url,
            "-o",
            "out",
            "--yes",
        ],
    )
    .run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("still at the provider") && out.stderr.contains("rlm resume batch-"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.requests(), 0, "nothing was sent");
    assert_eq!(p.read("out/.rlm-run"), marker, "the directory is still the first run's");

    // Once collected, the directory is free again.
    mock.set_batch_progress(BatchProgress::AfterPolls(1));
    rlm_fast(&p, &["resume", "--yes"]).run().assert_exit(0);
    let out = rlm_fast(
        &p,
        &[
            "batch",
            "src/*.ts",
            "Other {file}",
            "--base-url",
            &url,
            "-o",
            "out",
            "--yes",
        ],
    )
    .run();
    out.assert_exit(0);
    assert_eq!(mock.batch_submissions(), 1);
}

#[test]
fn kill_9_while_waiting_then_resume_polls_the_same_batch_and_never_submits_again() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::Held);
    let p = ts_project(40);
    let url = mock.url();
    let running = rlm_fast(&p, &batch_api_args(&url, &[])).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || mock.batch_polls() >= 2),
        "the run submits and polls"
    );
    running.signal("KILL");
    let _ = running.wait();
    assert_eq!(mock.batch_submissions(), 1);
    assert_eq!(results(&p), 0, "nothing was collected before the kill");

    // The store has the batch as last polled; reading it calls no one.
    let calls = mock.batch_calls();
    let s = status(&p);
    assert_eq!(mock.batch_calls(), calls, "rlm status made a request to the server");
    let batches = s["batches"].as_array().expect("the status lists the run's batches");
    assert_eq!(batches.len(), 1, "{s}");
    assert_eq!(batches[0]["status"], "in_progress");
    assert_eq!(batches[0]["request_count"], 40);
    assert!(batches[0]["polls"].as_u64().unwrap() >= 1, "{s}");
    let text = p.rlm(&["status"]).run();
    assert!(
        text.stdout.contains("batches   1 at http://127.0.0.1:") && text.stdout.contains("0/40 done"),
        "{}",
        text.stdout
    );
    assert_eq!(mock.batch_calls(), calls);

    mock.set_batch_progress(BatchProgress::AfterPolls(1));
    let out = rlm_fast(&p, &["resume", "--yes"]).run();
    out.assert_exit(0);
    assert_eq!(
        mock.batch_submissions(),
        1,
        "the resume polled the batch it had: {}",
        out.stderr
    );
    assert_eq!(mock.requests(), 0, "and made no realtime call");
    assert_eq!(results(&p), 40);
    assert_eq!(p.report()["succeeded"], 40);
    let s = status(&p);
    assert_eq!(s["display_status"], "SUCCESS", "{s}");
    assert!(s["batches"][0]["collected_at"].is_string(), "{s}");
    // The report lists the run's batch, though this attempt submitted none.
    assert_eq!(p.report()["batches"], serde_json::json!(["msgbatch_mock_1"]));
}

#[test]
fn ctrl_c_while_waiting_says_the_batch_keeps_running_and_status_makes_no_request() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::Held);
    let p = ts_project(10);
    let url = mock.url();
    // The first poll a minute away: nothing but `rlm status` could call the server now.
    let running = p
        .rlm(&batch_api_args(&url, &[]))
        .env("RLM_BATCH_POLL_MS", "60000")
        .spawn();
    assert!(wait_until(Duration::from_secs(30), || {
        mock.batch_submissions() == 1 && status(&p)["batches"].as_array().is_some_and(|b| b.len() == 1)
    }));
    let calls = mock.batch_calls();
    let s = status(&p);
    assert_eq!(mock.batch_calls(), calls, "rlm status made a request to the server");
    assert_eq!(s["display_status"], "RUNNING");
    assert_eq!(s["batches"][0]["polls"], 0);
    let run = s["id"].as_str().unwrap().to_string();

    running.signal("INT");
    let out = running.wait();
    out.assert_exit(130);
    let said = format!(
        "the batch keeps running at the provider; `rlm resume {run}` collects it, `rlm cancel {run}` cancels it"
    );
    assert!(out.stderr.lines().any(|l| l == said), "{}", out.stderr);
    assert_eq!(mock.batch_cancels(), 0, "Ctrl-C leaves the batch running");
    let s = status(&p);
    assert_eq!(s["display_status"], "INTERRUPTED");
    assert!(s["batches"][0]["collected_at"].is_null());
}

#[test]
fn cancel_of_a_run_with_a_credentialed_base_url_needs_the_url_again() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::Held);
    let p = ts_project(4);
    let credentialed = mock.url().replacen("http://", "http://alice:gw-secret-pass@", 1);
    let running = rlm_fast(&p, &batch_api_args(&credentialed, &[])).spawn();
    assert!(wait_until(Duration::from_secs(30), || mock.batch_polls() >= 1));
    running.signal("KILL");
    let _ = running.wait();

    // The recorded URL has no password: canceling with `***` would be refused at a real
    // gateway, so nothing is sent until the URL is given again.
    let calls = mock.batch_calls();
    let refused = rlm_fast(&p, &["cancel"]).run();
    refused.assert_exit(2);
    assert!(refused.stderr.contains("rlm cancel batch-"), "{}", refused.stderr);
    assert!(refused.stderr.contains("--base-url"), "{}", refused.stderr);
    assert_eq!(mock.batch_calls(), calls, "nothing was sent");

    rlm_fast(&p, &["cancel", "--base-url", &credentialed])
        .run()
        .assert_exit(0);
    assert_eq!(mock.batch_cancels(), 1);
}

#[test]
fn cancel_keeps_what_had_finished_and_resume_sends_the_rest() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::HeldAfter(12));
    let p = ts_project(30);
    let url = mock.url();
    let running = rlm_fast(&p, &batch_api_args(&url, &[])).spawn();
    assert!(wait_until(Duration::from_secs(30), || mock.batch_polls() >= 2));
    running.signal("INT");
    running.wait().assert_exit(130);
    assert_eq!(results(&p), 0);

    let out = rlm_fast(&p, &["cancel"]).run();
    out.assert_exit(0);
    assert_eq!(mock.batch_cancels(), 1);
    assert_eq!(mock.requests(), 0, "a cancel calls no model");
    assert_eq!(
        results(&p),
        12,
        "the answers that had finished are kept: {}",
        out.stderr
    );
    assert!(
        out.stderr.contains("1 batch canceled at http://127.0.0.1:")
            && out.stderr.contains("12 finished answers kept")
            && out.stderr.contains("18 not run"),
        "{}",
        out.stderr
    );
    let s = status(&p);
    assert_eq!(s["units"]["completed"], 12, "{s}");
    assert_eq!(s["units"]["cancelled"], 18, "{s}");
    assert!(s["batches"][0]["cancel_requested_at"].is_string());
    assert!(s["batches"][0]["collected_at"].is_string());
    let again = p.rlm(&["cancel"]).run();
    again.assert_exit(2);
    assert!(
        again.stderr.contains("has no batch waiting at the provider"),
        "{}",
        again.stderr
    );

    // What was cancelled is sent again by a resume (the kept answers are cache hits).
    mock.set_batch_progress(BatchProgress::AfterPolls(1));
    rlm_fast(&p, &["resume", "--yes"]).run().assert_exit(0);
    assert_eq!(mock.batch_sizes(), [30, 18]);
    assert_eq!(results(&p), 30);
}

#[test]
fn cancel_while_another_rlm_waits_asks_the_provider_and_that_rlm_collects() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::HeldAfter(5));
    let p = ts_project(20);
    let url = mock.url();
    let running = rlm_fast(&p, &batch_api_args(&url, &[])).spawn();
    assert!(wait_until(Duration::from_secs(30), || mock.batch_polls() >= 2));
    let cancel = p.rlm(&["cancel"]).run();
    cancel.assert_exit(0);
    assert!(
        cancel.stderr.contains("waits for them and collects"),
        "{}",
        cancel.stderr
    );
    let out = running.wait();
    out.assert_exit(1);
    assert_eq!(mock.batch_cancels(), 1);
    assert_eq!(mock.batch_submissions(), 1, "canceled requests are not sent again");
    let report = p.report();
    assert_eq!(report["succeeded"], 5);
    assert_eq!(report["not_run"].as_array().map(Vec::len), Some(15), "{report}");
}

#[test]
fn errored_and_expired_requests_are_retried_alone_in_a_follow_up_batch() {
    let mock = MockLlm::start();
    mock.batch_fault_when("f003 = 3", vec![BatchFault::Errored { retryable: true }]);
    mock.batch_fault_when("f007 = 7", vec![BatchFault::Expired]);
    mock.batch_fault_when("f011 = 11", vec![BatchFault::Canceled]);
    mock.batch_fault_when("f015 = 15", vec![BatchFault::Errored { retryable: false }]);
    let p = ts_project(20);
    let url = mock.url();
    let out = rlm_fast(&p, &batch_api_args(&url, &[])).run();
    out.assert_exit(1);
    assert_eq!(
        mock.batch_sizes(),
        [20, 2],
        "only the errored and the expired: {}",
        out.stderr
    );
    let second: Vec<String> = mock
        .batch_requests()
        .iter()
        .filter(|r| r.batch_id != mock.batch_requests()[0].batch_id)
        .map(|r| r.body.to_string())
        .collect();
    assert!(second.iter().any(|b| b.contains("f003 = 3")) && second.iter().any(|b| b.contains("f007 = 7")));
    assert_eq!(mock.requests(), 0);
    let report = p.report();
    assert_eq!(report["succeeded"], 18, "{report}");
    assert_eq!(report["failed"][0]["path"], "src/f015.ts", "{report}");
    assert_eq!(
        report["not_run"],
        serde_json::json!(["src/f011.ts"]),
        "canceled stays not run"
    );
}

#[test]
fn results_missing_from_the_results_file_are_sent_again_and_said() {
    let mock = MockLlm::start();
    mock.drop_batch_result_lines(2);
    let p = ts_project(6);
    let url = mock.url();
    let out = rlm_fast(&p, &batch_api_args(&url, &[])).run();
    out.assert_exit(0);
    assert!(
        out.stderr
            .contains("have no entry for 2 of its requests (the provider counts 6 succeeded)")
            && out.stderr.contains("they are sent again"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.batch_sizes(), [6, 2]);
    assert_eq!(results(&p), 6);
}

#[test]
fn retries_go_realtime_with_the_realtime_fallback_and_stop_at_the_retry_budget() {
    let mock = MockLlm::start();
    mock.batch_fault_when("f002 = 2", vec![BatchFault::Errored { retryable: true }]);
    let p = ts_project(6);
    let url = mock.url();
    rlm_fast(&p, &batch_api_args(&url, &["--batch-api-fallback", "realtime"]))
        .run()
        .assert_exit(0);
    assert_eq!(mock.batch_submissions(), 1);
    assert_eq!(mock.requests(), 1, "the errored request, in realtime");

    // Always expired: sent once and retried once (--retries 1), then failed.
    let mock = MockLlm::start();
    mock.batch_fault_when("f001 = 1", vec![BatchFault::Expired; 5]);
    let p = ts_project(3);
    let url = mock.url();
    let out = rlm_fast(&p, &batch_api_args(&url, &["--retries", "1"])).run();
    out.assert_exit(1);
    assert_eq!(mock.batch_sizes(), [3, 1]);
    assert!(
        out.stderr
            .contains("expired at the provider (not run within 24 hours) (after 2 sends)"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_submission_above_the_request_limit_is_split() {
    let mock = MockLlm::start();
    mock.set_batch_limits(40, 10_000_000);
    let p = ts_project(100);
    let url = mock.url();
    rlm_fast(&p, &batch_api_args(&url, &[]))
        .env("RLM_BATCH_LIMITS", "40")
        .run()
        .assert_exit(0);
    assert_eq!(mock.batch_sizes(), [40, 40, 20]);
    assert_eq!(mock.batch_refusals(), 0);
    assert_eq!(results(&p), 100);
    let bad = rlm_fast(&p, &batch_api_args(&url, &[]))
        .env("RLM_BATCH_LIMITS", "0")
        .run();
    bad.assert_exit(2);
    assert!(bad.stderr.contains("RLM_BATCH_LIMITS='0'"), "{}", bad.stderr);
}

#[test]
fn batch_calls_cost_half_of_list_and_say_so() {
    let realtime_mock = MockLlm::start();
    let p = ts_project(8);
    let url = realtime_mock.url();
    let mut args = batch_api_args(&url, &["--json"]);
    args.retain(|a| *a != "--batch-api");
    let realtime = p.rlm(&args).run();
    realtime.assert_exit(0);
    let realtime = realtime.json();

    let mock = MockLlm::start();
    let q = ts_project(8);
    let url = mock.url();
    let dry = rlm_fast(&q, &batch_api_args(&url, &["--dry-run", "--json"])).run();
    dry.assert_exit(0);
    let dry = dry.json();
    assert_eq!(dry["price_tier"], "batch");
    assert_eq!(dry["estimate"]["price_tier"], "batch");
    assert_eq!(dry["price_basis"], "listed_batch", "the basis says the batch price");
    assert_eq!(dry["estimate"]["price_basis"], "listed_batch");
    let half = realtime["estimated_cost_usd"].as_f64().unwrap() / 2.0;
    assert!(
        (dry["estimated_cost_usd"].as_f64().unwrap() - half).abs() < 1e-12,
        "{dry}"
    );

    let banner = rlm_fast(&q, &batch_api_args(&url, &["--dry-run"])).run();
    assert!(
        banner.stderr.contains(" at batch price (half of list)"),
        "{}",
        banner.stderr
    );
    let batched = rlm_fast(&q, &batch_api_args(&url, &["--json"])).run();
    batched.assert_exit(0);
    let batched = batched.json();
    assert_eq!(realtime["price_tier"], "realtime");
    assert_eq!(realtime["price_basis"], "listed");
    assert_eq!(batched["price_tier"], "batch");
    assert_eq!(batched["price_basis"], "listed_batch");
    assert_eq!(batched["tokens_in"], realtime["tokens_in"], "the same requests");
    let (full, paid) = (
        realtime["cost_usd"].as_f64().unwrap(),
        batched["cost_usd"].as_f64().unwrap(),
    );
    assert!(
        full > 0.0 && (paid - full / 2.0).abs() < 1e-12,
        "{paid} is not half of {full}"
    );
    assert!(
        q.report_md().contains("at the batch price (half of list)"),
        "{}",
        q.report_md()
    );
}

#[test]
fn a_batch_run_whose_aggregation_went_realtime_is_billed_at_both_prices() {
    let mock = MockLlm::start();
    let p = ts_project(6);
    let url = mock.url();
    let out = rlm_fast(&p, &batch_api_args(&url, &["--aggregate", "summarize", "--json"])).run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 1, "the summary call went realtime");
    let report = out.json();
    assert_eq!(report["price_tier"], "mixed", "{report}");
    assert_eq!(report["price_basis"], "listed_mixed");
    // Without an aggregation call, the units alone: the batch price.
    let q = ts_project(6);
    let out = rlm_fast(&q, &batch_api_args(&url, &["--aggregate", "concat", "--json"])).run();
    out.assert_exit(0);
    assert_eq!(out.json()["price_tier"], "batch");
}

#[test]
fn auto_falls_back_to_realtime_calls_where_the_server_has_no_batch_api() {
    let mock = MockLlm::start();
    mock.disable_batch_api(Some(404));
    let p = ts_project(5);
    let url = mock.url();
    let out = rlm_fast(&p, &batch_api_args(&url, &["auto", "--json"])).run();
    out.assert_exit(0);
    assert!(
        out.stderr
            .contains("has no batch API: --batch-api auto makes realtime calls instead"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.requests(), 5);
    assert_eq!(mock.batch_submissions(), 0);
    let report = out.json();
    assert_eq!(report["price_tier"], "realtime");
    assert!(report["warnings"].to_string().contains("has no batch API"), "{report}");

    // Without `auto`: one line naming the server, exit 2, nothing paid.
    let q = ts_project(5);
    let refused = rlm_fast(&q, &batch_api_args(&url, &[])).run();
    refused.assert_exit(2);
    let line = format!("{url} has no batch API (404 on /v1/messages/batches)");
    assert!(refused.stderr.contains(&line), "{}", refused.stderr);
    assert_eq!(refused.stderr.trim().lines().count(), 1, "{}", refused.stderr);
    assert_eq!(mock.requests(), 5, "nothing more was sent");
}

#[test]
fn batches_of_small_files_and_all_aggregation_calls_go_through_the_batch_api_with_all() {
    let mock = MockLlm::start();
    let mut p = Project::new();
    for i in 0..6 {
        p = p.file(&format!("proj/m{i}.py"), &format!("def f{i}():\n    return {i}\n"));
    }
    for i in 0..3 {
        p = p.file(&format!("proj/d{i}.md"), &format!("# Doc {i}\n\nText {i}.\n"));
    }
    let url = mock.url();
    let out = rlm_fast(
        &p,
        &[
            "batch",
            "proj",
            "Review {file}",
            "--base-url",
            &url,
            "--model",
            "haiku",
            "-o",
            "out",
            "--json",
            "--batch-api",
            "all",
        ],
    )
    .run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 0, "no realtime call at all: {}", out.stderr);
    // The map phase (two batches of small files, one per type), the per-type syntheses,
    // the cross-type report: three batches, phase by phase.
    assert_eq!(mock.batch_sizes(), [2, 2, 1], "{}", out.stderr);
    let map: Vec<_> = mock.batch_requests().into_iter().take(2).collect();
    assert!(
        map.iter().all(|r| r.body.to_string().contains("files")),
        "each batch unit asks for its {{\"files\": …}} answer"
    );
    let report = out.json();
    assert_eq!(report["files_succeeded"], 9, "{report}");
    assert_eq!(report["price_tier"], "batch");
    assert!(
        p.read("out/proj-m3.py.result.md").trim().len() > 1,
        "a member's own result file"
    );
    assert!(!p.aggregate_md().trim().is_empty());
    let calls = report["aggregate_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 3, "{report}");
}

#[test]
fn a_schema_answer_from_a_batch_that_does_not_conform_gets_its_one_retry_in_realtime() {
    const SCHEMA: &str = r#"{"type": "object", "properties": {"functions": {"type": "array", "items": {"type": "string"}}},
        "required": ["functions"], "additionalProperties": false}"#;
    let mock = MockLlm::start();
    let p = ts_project(4).file("functions.schema.json", SCHEMA).file(
        "src/bad.ts",
        &format!("// {}\n", reply_marker(r#"{"functions": [1], "extra": true}"#)),
    );
    let url = mock.url();
    let out = rlm_fast(&p, &batch_api_args(&url, &["--schema", "functions.schema.json"])).run();
    out.assert_exit(1);
    assert_eq!(mock.batch_sizes(), [5]);
    for r in mock.batch_requests() {
        assert_eq!(r.body["tool_choice"]["name"], "answer", "the forced tool, as realtime");
    }
    let retried = mock.recorded();
    assert_eq!(retried.len(), 1, "the bad answer, asked for again in realtime");
    assert!(retried[0].user_text().contains("does not conform to the JSON Schema"));
    let good: Value = serde_json::from_str(&p.read("out/src-f002.ts.result.md")).unwrap();
    assert_eq!(good, serde_json::json!({"functions": ["mock"]}));
    assert!(p.exists("out/src-bad.ts.rejected.md"));
    assert!(out.stderr.contains("does not conform to --schema"), "{}", out.stderr);
}

#[test]
fn the_deadline_ends_the_wait_and_leaves_the_batch_to_collect() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::Held);
    let p = ts_project(6);
    let url = mock.url();
    let out = rlm_fast(&p, &batch_api_args(&url, &["--deadline", "1s"])).run();
    // Nothing came back in time: as for realtime calls, the deadline's status (exit 1), not
    // a failure.
    out.assert_exit(1);
    assert_eq!(p.report()["status"], "DEADLINE_EXCEEDED");
    assert!(
        out.stderr
            .contains("rlm: the --deadline passed while waiting: the batch keeps running at the provider; `rlm resume"),
        "{}",
        out.stderr
    );
    assert!(p.report()["error"]
        .as_str()
        .unwrap()
        .contains("the --deadline (1.0s) passed"));
    assert_eq!(mock.batch_cancels(), 0);
    mock.set_batch_progress(BatchProgress::AfterPolls(1));
    rlm_fast(&p, &["resume", "--deadline", "10m"]).run().assert_exit(0);
    assert_eq!(mock.batch_submissions(), 1);
    assert_eq!(results(&p), 6);
}

#[test]
fn openai_batches_through_the_binary_and_the_config_key_turns_it_on() {
    let mock = MockLlm::start();
    let p = ts_project(12).file(".aiwg/aiwg.config", r#"{"rlm": {"batch_api": "on"}}"#);
    let url = mock.url();
    let out = rlm_fast(
        &p,
        &[
            "batch",
            "src/*.ts",
            "List {file}",
            "--base-url",
            &url,
            "--model",
            "gpt-4.1-mini",
            "-o",
            "out",
            "--json",
        ],
    )
    .env_remove("ANTHROPIC_API_KEY")
    .env("OPENAI_API_KEY", TEST_KEY)
    .run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 0);
    assert_eq!((mock.batch_uploads(), mock.batch_submissions()), (1, 1));
    assert_eq!(out.json()["price_tier"], "batch");
    // `--batch-api off` overrides the config.
    let q = ts_project(2).file(".aiwg/aiwg.config", r#"{"rlm": {"batch_api": true}}"#);
    rlm_fast(
        &q,
        &[
            "batch",
            "src/*.ts",
            "List {file}",
            "--base-url",
            &url,
            "--model",
            "gpt-4.1-mini",
            "--no-batch-small",
            "--batch-api",
            "off",
        ],
    )
    .env_remove("ANTHROPIC_API_KEY")
    .env("OPENAI_API_KEY", TEST_KEY)
    .run()
    .assert_exit(0);
    assert_eq!(mock.requests(), 2);
    let bad = ts_project(1).file(".aiwg/aiwg.config", r#"{"rlm": {"batch_api": "maybe"}}"#);
    let out = bad.rlm(&batch("src/*.ts", &url, &[])).run();
    out.assert_exit(2);
    assert!(out.stderr.contains("rlm.batch_api is `maybe`"), "{}", out.stderr);
}

#[test]
fn the_command_provider_has_no_batch_api() {
    let p = ts_project(1);
    let out = p
        .rlm(&["batch", "src/*.ts", "List {file}", "--command", "cat", "--batch-api"])
        .run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("the command provider has no batch API"),
        "{}",
        out.stderr
    );
}

/// `rlm batch src/*.ts "List {file}" --model haiku -o out --yes --batch-api`, its server
/// from the environment (a `--base-url` would be replayed by `rlm resume`).
const FROM_ENV: [&str; 10] = [
    "batch",
    "src/*.ts",
    "List {file}",
    "--model",
    "haiku",
    "-o",
    "out",
    "--yes",
    "--no-batch-small",
    "--batch-api",
];

fn at(p: &Project, args: &[&str], url: &str) -> Run {
    rlm_fast(p, args).env("ANTHROPIC_BASE_URL", url)
}

/// [`FROM_ENV`] with `--deadline SECS`.
fn with_deadline(secs: &str) -> Vec<&str> {
    let mut args = FROM_ENV.to_vec();
    args.extend_from_slice(&["--deadline", secs]);
    args
}

#[test]
fn cancel_after_a_deadline_stop_polls_collects_and_counts_what_had_finished() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::HeldAfter(5));
    let p = ts_project(11);
    let url = mock.url();
    at(&p, &with_deadline("1s"), &url).run().assert_exit(1);
    assert_eq!(p.report()["status"], "DEADLINE_EXCEEDED");
    let polls = mock.batch_polls();
    assert!(polls >= 1);

    // The run's deadline passed long ago: the cancel waits on its own bound.
    let out = at(&p, &["cancel"], &url).run();
    out.assert_exit(0);
    assert_eq!(mock.batch_cancels(), 1);
    assert!(mock.batch_polls() > polls, "the cancel polls the canceled batch");
    assert_eq!(mock.batch_result_fetches(), 1, "and reads its results");
    assert!(
        out.stderr.contains("5 finished answers kept") && out.stderr.contains("6 not run"),
        "{}",
        out.stderr
    );
    // The progress counts every request of the batches it collects.
    assert!(
        out.stderr.contains("[ 1/11]") && !out.stderr.contains("/0]"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("Estimated cost") && !out.stderr.contains("RLM Batch Initialized"),
        "a cancel starts no run: {}",
        out.stderr
    );
    assert_eq!(results(&p), 5);
    let s = status(&p);
    assert_eq!(s["units"]["completed"], 5, "{s}");
    assert_eq!(s["units"]["cancelled"], 6, "{s}");
    assert!(s["batches"][0]["collected_at"].is_string(), "{s}");
}

#[test]
fn a_resume_with_no_time_left_before_its_deadline_submits_nothing() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::HeldAfter(2));
    let p = ts_project(6);
    let url = mock.url();
    at(&p, &with_deadline("1s"), &url).run().assert_exit(1);
    at(&p, &["cancel"], &url).run().assert_exit(0);
    assert_eq!(mock.batch_submissions(), 1);

    // The run's --deadline has passed: a resume without a new one has no time left, and
    // pays for nothing.
    let out = at(&p, &["resume", "--yes"], &url).run();
    out.assert_exit(1);
    assert_eq!(mock.batch_submissions(), 1, "nothing submitted: {}", out.stderr);
    assert_eq!(p.report()["status"], "DEADLINE_EXCEEDED");
}

#[test]
fn cancel_counts_only_the_batches_it_canceled_and_names_those_that_had_ended() {
    let mock = MockLlm::start();
    // Two batches of three: the first ends by time, after the run's deadline; the second is
    // held until it is canceled.
    mock.set_batch_progress(BatchProgress::AfterTime(Duration::from_millis(1500)));
    mock.set_batch_progress_from(2, BatchProgress::Held);
    let p = ts_project(6);
    let url = mock.url();
    at(&p, &with_deadline("1s"), &url)
        .env("RLM_BATCH_LIMITS", "3")
        .run()
        .assert_exit(1);
    assert_eq!(mock.batch_submissions(), 2);
    std::thread::sleep(Duration::from_millis(600));

    let out = at(&p, &["cancel"], &url).run();
    out.assert_exit(0);
    assert_eq!(mock.batch_cancels(), 1);
    assert!(
        out.stderr.contains("1 batch canceled at http://127.0.0.1:")
            && out
                .stderr
                .contains("(batch msgbatch_mock_1 was not: it had already ended, and is collected as it is)"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("3 finished answers kept"), "{}", out.stderr);
    assert_eq!(results(&p), 3);
}

#[test]
fn cancel_waits_for_its_canceled_batch_only_as_long_as_its_own_bound() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::HeldAfter(2));
    let p = ts_project(4);
    let url = mock.url();
    at(&p, &with_deadline("1s"), &url).run().assert_exit(1);
    // The provider takes its time to end the canceled batch: the cancel does not wait past
    // its own bound.
    mock.set_batch_cancel_holds(true);
    let out = at(&p, &["cancel"], &url).env("RLM_BATCH_CANCEL_WAIT_MS", "300").run();
    out.assert_exit(0);
    assert_eq!(mock.batch_cancels(), 1);
    assert!(
        out.stderr.contains("the canceled batches have not ended within"),
        "{}",
        out.stderr
    );
    assert_eq!(results(&p), 0);
    assert!(status(&p)["batches"][0]["collected_at"].is_null());

    // Once it has ended, a cancel again collects what it had finished.
    mock.set_batch_cancel_holds(false);
    let out = at(&p, &["cancel"], &url).run();
    out.assert_exit(0);
    assert_eq!(mock.batch_cancels(), 1, "asked once");
    assert!(out.stderr.contains("2 finished answers kept"), "{}", out.stderr);
    assert_eq!(results(&p), 2);
}

/// A cancel that stopped before it collected (its own bound passed) leaves the canceled
/// requests to the resume: they never ran, nothing was paid for them, and the resume sends
/// them again, keeping what the batch had finished (the job path has the same, in
/// `tests/it/job.rs`).
#[test]
fn a_resume_after_a_cancel_that_did_not_collect_sends_the_canceled_requests_again() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::HeldAfter(2));
    let p = ts_project(4);
    let url = mock.url();
    at(&p, &with_deadline("1s"), &url).run().assert_exit(1);
    mock.set_batch_cancel_holds(true);
    at(&p, &["cancel"], &url)
        .env("RLM_BATCH_CANCEL_WAIT_MS", "300")
        .run()
        .assert_exit(0);
    assert_eq!((mock.batch_cancels(), results(&p)), (1, 0));

    // The provider ends the canceled batch: two answers, two canceled before they ran.
    mock.set_batch_cancel_holds(false);
    mock.set_batch_progress_from(2, BatchProgress::AfterPolls(0));
    let out = at(&p, &["resume", "--yes", "--deadline", "5m"], &url).run();
    out.assert_exit(0);
    assert_eq!(mock.batch_submissions(), 2, "one follow-up batch: {}", out.stderr);
    assert_eq!(mock.batch_sizes(), [4, 2], "only the canceled requests are sent again");
    assert_eq!(mock.batch_cancels(), 1, "the resume cancels nothing");
    assert_eq!(mock.requests(), 0, "nothing in real time");
    assert_eq!(results(&p), 4);
    assert_eq!(p.report()["status"], "SUCCESS");
    let s = status(&p);
    assert_eq!(s["units"]["completed"], 4, "{s}");
}

#[test]
fn a_resume_pointed_at_another_server_is_refused_before_anything_is_sent() {
    let first = MockLlm::start();
    first.set_batch_progress(BatchProgress::Held);
    let other = MockLlm::start();
    other.number_batches_from(100);
    let (first_url, other_url) = (first.url(), other.url());
    let p = ts_project(10);
    let running = at(&p, &FROM_ENV, &first_url).spawn();
    assert!(wait_until(Duration::from_secs(30), || first.batch_polls() >= 1));
    running.signal("KILL");
    let _ = running.wait();
    let calls = first.batch_calls();

    let said = format!("batch msgbatch_mock_1 waits at {first_url}, but the settings now point at {other_url}");
    for command in [vec!["resume", "--yes"], vec!["cancel"]] {
        let out = at(&p, &command, &other_url).run();
        out.assert_exit(2);
        assert!(
            out.stderr.contains(&said) && out.stderr.contains("--forget"),
            "{command:?}: {}",
            out.stderr
        );
        assert_eq!(out.stderr.matches("rlm: error:").count(), 1, "{}", out.stderr);
        assert!(
            !out.stderr.contains("Initialized"),
            "refused before the run starts: {}",
            out.stderr
        );
    }
    assert_eq!(
        other.batch_calls() + other.requests(),
        0,
        "nothing was sent to the other server"
    );
    assert_eq!(first.batch_calls(), calls, "nor to the first");

    // Given up explicitly: nothing is asked of either server, and the units are not run.
    let out = at(&p, &["cancel", "--forget"], &other_url).run();
    out.assert_exit(0);
    assert!(
        out.stderr
            .contains("batch msgbatch_mock_1 given up (rlm cancel --forget")
            && out.stderr.contains("and 1 given up (--forget)")
            && out.stderr.contains("10 not run"),
        "{}",
        out.stderr
    );
    assert_eq!(first.batch_calls(), calls);
    assert_eq!(
        (other.batch_submissions(), other.batch_polls(), other.batch_cancels()),
        (0, 0, 0)
    );

    // Then a resume sends them again, to the server the settings point at now; `rlm status`
    // names each batch's own server.
    at(&p, &["resume", "--yes"], &other_url).run().assert_exit(0);
    assert_eq!((first.batch_submissions(), other.batch_submissions()), (1, 1));
    assert_eq!(results(&p), 10);
    let text = p.rlm(&["status"]).run().stdout;
    assert!(
        text.contains("batches   2 at 2 servers")
            && text.contains(&format!("msgbatch_mock_1 at {first_url}  collected"))
            && text.contains(&format!("msgbatch_mock_100 at {other_url}  collected")),
        "{text}"
    );
}

#[test]
fn a_batch_its_server_does_not_know_stops_the_resume_and_is_never_sent_again_unasked() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::Held);
    let p = ts_project(8);
    let url = mock.url();
    let running = rlm_fast(&p, &batch_api_args(&url, &[])).spawn();
    assert!(wait_until(Duration::from_secs(30), || mock.batch_polls() >= 1));
    running.signal("KILL");
    let _ = running.wait();

    // Deleted at the provider, or another key's: a 404.
    mock.forget_batches();
    mock.set_batch_progress(BatchProgress::AfterPolls(1));
    let run = status(&p)["id"].as_str().unwrap().to_string();
    for command in [vec!["resume", "--yes"], vec!["cancel"]] {
        let out = rlm_fast(&p, &command).run();
        out.assert_exit(3);
        assert!(
            out.stderr
                .contains(&format!("batch msgbatch_mock_1 is unknown to {url} (404)"))
                && out.stderr.contains("rlm does not send its requests again")
                && out.stderr.contains(&format!("`rlm cancel {run} --forget`")),
            "{command:?}: {}",
            out.stderr
        );
        assert_eq!(mock.batch_submissions(), 1, "{command:?}: not sent again");
        assert_eq!(mock.requests(), 0, "{command:?}: nor realtime");
        assert!(status(&p)["batches"][0]["collected_at"].is_null());
    }

    let out = rlm_fast(&p, &["cancel", "--forget"]).run();
    out.assert_exit(0);
    assert!(out.stderr.contains("and 1 given up (--forget)"), "{}", out.stderr);
    assert_eq!(mock.batch_submissions(), 1);
    rlm_fast(&p, &["resume", "--yes"]).run().assert_exit(0);
    assert_eq!(mock.batch_sizes(), [8], "the one batch the mock knows now");
    assert_eq!(mock.batch_submissions(), 2);
    assert_eq!(results(&p), 8);
}

#[test]
fn a_resume_keeps_the_batch_mode_its_run_took_from_the_config() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::Held);
    let p = ts_project(5).file(".aiwg/aiwg.config", r#"{"rlm": {"batch_api": "on"}}"#);
    let url = mock.url();
    let running = rlm_fast(&p, &batch("src/*.ts", &url, &["-o", "out", "--yes"])).spawn();
    assert!(wait_until(Duration::from_secs(30), || mock.batch_polls() >= 1));
    running.signal("KILL");
    let _ = running.wait();
    assert_eq!(mock.batch_submissions(), 1);

    // The config no longer asks for the batch API: the run's batch is collected anyway.
    p.write(".aiwg/aiwg.config", r#"{"rlm": {}}"#);
    mock.set_batch_progress(BatchProgress::AfterPolls(1));
    let out = rlm_fast(&p, &["resume", "--yes", "--json"]).run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 0, "no realtime call: {}", out.stderr);
    assert_eq!(mock.batch_submissions(), 1, "nothing submitted again");
    assert_eq!(results(&p), 5);
    assert_eq!(out.json()["price_tier"], "batch");
    assert!(status(&p)["batches"][0]["collected_at"].is_string());
}

#[test]
fn cancel_cancels_the_aggregation_batches_too_and_keeps_what_they_had_finished() {
    let mock = MockLlm::start();
    // The map batch ends at its first poll; the per-type syntheses' batch (the second
    // submission) has one of its two requests done, the other held.
    mock.set_batch_progress_from(2, BatchProgress::HeldAfter(1));
    let mut p = Project::new();
    for i in 0..4 {
        p = p.file(&format!("proj/m{i}.py"), &format!("def f{i}():\n    return {i}\n"));
    }
    for i in 0..2 {
        p = p.file(&format!("proj/d{i}.md"), &format!("# Doc {i}\n\nText {i}.\n"));
    }
    let url = mock.url();
    let args = [
        "batch",
        "proj",
        "Review {file}",
        "--base-url",
        &url,
        "--model",
        "haiku",
        "-o",
        "out",
        "--yes",
        "--batch-api",
        "all",
        "--aggregate",
        "synthesize",
    ];
    let running = rlm_fast(&p, &args).spawn();
    assert!(wait_until(Duration::from_secs(30), || {
        mock.batch_submissions() == 2 && mock.batch_polls() >= 3
    }));
    running.signal("KILL");
    let _ = running.wait();
    assert_eq!(mock.batch_sizes(), [2, 2]);
    let waiting = status(&p);
    assert!(waiting["batches"][1]["collected_at"].is_null(), "{waiting}");
    assert_eq!(waiting["batches"][1]["phase"], "aggregate");

    let out = rlm_fast(&p, &["cancel"]).run();
    out.assert_exit(0);
    assert_eq!(
        mock.batch_cancels(),
        1,
        "the aggregation batch is canceled: {}",
        out.stderr
    );
    assert_eq!(mock.requests(), 0, "a cancel calls no model");
    assert!(
        out.stderr.contains("1 batch canceled at")
            && out.stderr.contains("1 finished answer kept")
            && out.stderr.contains("1 not run"),
        "{}",
        out.stderr
    );
    let s = status(&p);
    for b in s["batches"].as_array().unwrap() {
        assert!(b["collected_at"].is_string(), "every batch collected: {s}");
    }
    let again = p.rlm(&["cancel"]).run();
    again.assert_exit(2);

    // The synthesis that had finished is kept (a cache hit); the canceled one and the
    // cross-type report are sent.
    mock.set_batch_progress_from(1, BatchProgress::AfterPolls(1));
    rlm_fast(&p, &["resume", "--yes"]).run().assert_exit(0);
    assert_eq!(mock.batch_sizes(), [2, 2, 1, 1]);
    assert_eq!(mock.requests(), 0);
}

#[test]
fn without_a_terminal_the_wait_prints_a_line_every_interval_between_polls() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::Held);
    let p = ts_project(3);
    let url = mock.url();
    let wait_lines = |stderr: &str| -> Vec<String> {
        stderr
            .lines()
            .filter(|l| l.starts_with("waiting for 1 batch at the provider: 0/3 done"))
            .map(str::to_string)
            .collect()
    };
    // Polls a minute apart, a line every 250 ms: the lines come though no poll does.
    let out = p
        .rlm(&batch_api_args(&url, &["--deadline", "2s"]))
        .env("RLM_BATCH_POLL_MS", "60000")
        .env("RLM_BATCH_WAIT_LINE_MS", "250")
        .run();
    // The deadline stopped the wait: DEADLINE_EXCEEDED (exit 1), the batch left to collect.
    out.assert_exit(1);
    assert_eq!(mock.batch_polls(), 0);
    let lines = wait_lines(&out.stderr);
    assert!(lines.len() >= 3, "{}", out.stderr);
    let mut texts = lines.clone();
    texts.dedup();
    assert_eq!(
        texts.len(),
        lines.len(),
        "each line says how long it has waited: {lines:?}"
    );

    // By default, a line a minute: one, at the start of a shorter wait.
    let q = ts_project(3);
    let out = q
        .rlm(&batch_api_args(&url, &["--deadline", "1s"]))
        .env("RLM_BATCH_POLL_MS", "60000")
        .run();
    out.assert_exit(1);
    assert_eq!(wait_lines(&out.stderr).len(), 1, "{}", out.stderr);
    let bad = q
        .rlm(&batch_api_args(&url, &[]))
        .env("RLM_BATCH_WAIT_LINE_MS", "0")
        .run();
    bad.assert_exit(2);
    assert!(bad.stderr.contains("RLM_BATCH_WAIT_LINE_MS='0'"), "{}", bad.stderr);
}

#[test]
fn the_batch_estimate_counts_no_prompt_cache_read_whatever_the_width() {
    let mut rubric = String::from("Our review rules:\n");
    for i in 0..60 {
        rubric.push_str(&format!(
            "- Rule {i}: functions stay short, names say what they hold, errors are handled.\n"
        ));
    }
    rubric.push_str("\nReview {file} against them.");
    let p = ts_project(4);
    let mock = MockLlm::start();
    let url = mock.url();
    let estimate = |extra: &[&str]| {
        let mut args = vec![
            "batch",
            "src/*.ts",
            &rubric,
            "--base-url",
            &url,
            "--model",
            "haiku",
            "--dry-run",
            "--json",
            "--no-batch-small",
        ];
        args.extend_from_slice(extra);
        let out = p.rlm(&args).run();
        out.assert_exit(0);
        out.json()["estimate"].clone()
    };
    // Realtime, one call at a time: the first writes the prefix, the others read it.
    let realtime = estimate(&["-j", "1"]);
    let written = realtime["cache_write_tokens"].as_u64().unwrap();
    assert!(
        written > 0 && realtime["cache_read_tokens"].as_u64() == Some(3 * written),
        "{realtime}"
    );
    // Through the batch API, hits are best effort: none is counted, every request may
    // write it, and the width changes nothing.
    let one = estimate(&["-j", "1", "--batch-api"]);
    let four = estimate(&["-j", "4", "--batch-api"]);
    assert_eq!(one, four);
    assert_eq!(one["cache_read_tokens"], 0, "{one}");
    assert_eq!(one["cache_write_tokens"].as_u64(), Some(4 * written), "{one}");
    assert_eq!(mock.requests() + mock.batch_submissions(), 0);
}

#[test]
fn the_realtime_fallback_has_what_the_retry_budget_left_after_the_batch_sends() {
    for (retries, realtime_calls, exit) in [("1", 1, 1), ("2", 2, 0)] {
        let mock = MockLlm::start();
        mock.batch_fault_when("f002 = 2", vec![BatchFault::Errored { retryable: true }]);
        // Its realtime call fails once with a server error, then would succeed.
        mock.fault_when("f002 = 2", vec![Fault::ServerError]);
        let p = ts_project(4);
        let url = mock.url();
        let out = rlm_fast(
            &p,
            &batch_api_args(&url, &["--batch-api-fallback", "realtime", "--retries", retries]),
        )
        .run();
        out.assert_exit(exit);
        assert_eq!(mock.batch_submissions(), 1, "--retries {retries}");
        // The batch send was the first attempt: `--retries 1` leaves one realtime call and no
        // retry of it; `--retries 2` one retry.
        assert_eq!(mock.requests(), realtime_calls, "--retries {retries}: {}", out.stderr);
    }
}

#[test]
fn a_batch_refused_for_the_enqueued_token_limit_goes_again_in_smaller_batches() {
    let mock = MockLlm::start();
    // The account may have five requests enqueued at once.
    mock.set_batch_queue_limit(5);
    let p = ts_project(8);
    let url = mock.url();
    let out = rlm_fast(
        &p,
        &[
            "batch",
            "src/*.ts",
            "List {file}",
            "--base-url",
            &url,
            "--model",
            "gpt-4.1-mini",
            "-o",
            "out",
            "--yes",
            "--no-batch-small",
            "--batch-api",
        ],
    )
    .env_remove("ANTHROPIC_API_KEY")
    .env("OPENAI_API_KEY", TEST_KEY)
    .run();
    out.assert_exit(0);
    assert!(
        out.stderr
            .contains("would pass the account's limit (token_limit_exceeded)"),
        "{}",
        out.stderr
    );
    // 8 refused; then two of 4, the second refused while the first waits; then two of 2.
    assert_eq!(mock.batch_sizes(), [0, 4, 0, 2, 2], "{}", out.stderr);
    assert_eq!(mock.requests(), 0);
    assert_eq!(results(&p), 8);
    assert_eq!(p.report()["succeeded"], 8);
}

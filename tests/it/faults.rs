//! Provider faults end to end: what is retried (and how the pool slows down), what stops
//! the run, what the user is told, what never leaks, and Ctrl-C.

use std::time::{Duration, Instant};

use crate::support::mock_llm::*;
use crate::support::*;
use serde_json::Value;

/// The report entry of one unit.
fn unit<'a>(report: &'a Value, path: &str) -> &'a Value {
    report["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["path"] == path)
        .unwrap_or_else(|| panic!("no unit {path} in {report:#}"))
}

/// Three plain files plus `src/target.ts`, whose content alone holds the needle `TARGET_NEEDLE`.
fn project_with_target() -> Project {
    Project::new()
        .ts_files(3)
        .file("src/target.ts", "export const TARGET_NEEDLE = 1;\n")
}

/// Runs a batch where `src/target.ts` first gets `fault`, and checks it was retried once
/// and the batch still succeeded.
fn retried_once(fault: Fault, extra: &[&str]) -> (Project, MockLlm, Output) {
    let mock = MockLlm::start();
    mock.fault_when("TARGET_NEEDLE", vec![fault]);
    let p = project_with_target();
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, extra)).run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 5, "4 files, one retry");
    assert_eq!(mock.pending_faults(), 0);
    let report = p.report();
    assert_eq!(report["status"], "SUCCESS");
    assert_eq!(report["succeeded"], 4);
    assert_eq!(report["failed"].as_array().unwrap().len(), 0);
    assert_eq!(unit(&report, "src/target.ts")["attempts"], 2);
    assert_eq!(unit(&report, "src/f00.ts")["attempts"], 1);
    let result = std::fs::read_to_string(p.out_dir().join("src-target.ts.result.md")).unwrap();
    assert!(result.starts_with("mock result "), "{result}");
    assert!(out.stderr.contains("retrying src/target.ts"), "{}", out.stderr);
    (p, mock, out)
}

// ---------------------------------------------------------------------------
// Retried faults

#[test]
fn server_error_is_retried() {
    let (_, _, out) = retried_once(Fault::ServerError, &[]);
    assert!(out.stderr.contains("server error (500)"), "{}", out.stderr);
}

#[test]
fn overloaded_529_is_retried() {
    let (_, _, out) = retried_once(Fault::Overloaded, &[]);
    assert!(out.stderr.contains("provider overloaded (529)"), "{}", out.stderr);
}

#[test]
fn other_5xx_are_retried() {
    for status in [502, 503, 504] {
        let (_, _, out) = retried_once(Fault::Status(status, "mock: gateway trouble".into()), &[]);
        assert!(out.stderr.contains(&format!("({status})")), "{}", out.stderr);
    }
}

#[test]
fn malformed_reply_is_retried() {
    let (_, _, out) = retried_once(Fault::Malformed, &[]);
    assert!(out.stderr.contains("malformed reply"), "{}", out.stderr);
}

#[test]
fn connection_reset_is_retried() {
    retried_once(Fault::Reset, &[]);
}

#[test]
fn hung_call_times_out_and_is_retried() {
    let (_, _, out) = retried_once(Fault::Hang, &["--timeout", "1"]);
    assert!(out.stderr.contains("no reply within --timeout 1s"), "{}", out.stderr);
    assert!(out.duration >= Duration::from_secs(1), "{:?}", out.duration);
}

#[test]
fn rate_limit_honours_retry_after() {
    let (_, _, out) = retried_once(Fault::RateLimited { retry_after_secs: 1 }, &[]);
    // Whether the pool pauses or only this call waits depends on what else is in flight
    // (see tests/it/pushback.rs); either way the call waited the second it was asked to.
    assert!(out.stderr.contains("rate limited: "), "{}", out.stderr);
    assert!(out.duration >= Duration::from_secs(1), "{:?}", out.duration);
}

// ---------------------------------------------------------------------------
// Failures

#[test]
fn retries_exhausted_fail_that_file_only() {
    let mock = MockLlm::start();
    mock.fault_when("TARGET_NEEDLE", vec![Fault::ServerError, Fault::ServerError]);
    let p = project_with_target();
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, &["--retries", "1", "-o", "out"])).run();
    out.assert_exit(1);
    assert_eq!(mock.requests(), 5, "3 good files, 2 attempts of the bad one");
    let report = p.report();
    assert_eq!(report["status"], "PARTIAL");
    assert_eq!(report["succeeded"], 3);
    let failed = report["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["path"], "src/target.ts");
    let reason = failed[0]["reason"].as_str().unwrap();
    assert!(reason.contains("500"), "{reason}");
    assert!(reason.contains("gave up after 2 attempts"), "{reason}");
    assert_eq!(unit(&report, "src/target.ts")["attempts"], 2);
    // The others are written and aggregated; the failure is listed, not dropped.
    for i in 0..3 {
        assert!(p.exists(&format!("out/src-f{i:02}.ts.result.md")));
    }
    assert!(!p.exists("out/src-target.ts.result.md"));
    let aggregate = p.aggregate_md();
    assert!(aggregate.contains("Files processed: 3\n"), "{aggregate}");
    assert!(
        aggregate.contains(&format!("## Failed files\n\n- src/target.ts: {reason}\n")),
        "{aggregate}"
    );
    let md = p.report_md();
    assert!(md.contains("**Status**: PARTIAL"), "{md}");
    assert!(md.contains(&format!("- src/target.ts: {reason}")), "{md}");
    assert!(out.stdout.contains("RLM Batch: PARTIAL"), "{}", out.stdout);
}

#[test]
fn bad_anthropic_key_stops_the_run_with_one_clear_line() {
    let mock = MockLlm::start();
    mock.require_key("right");
    let p = Project::new().ts_files(20);
    let url = mock.url();
    let out = p
        .rlm(&batch("src/*.ts", &url, &[]))
        .env("ANTHROPIC_API_KEY", "wrong")
        .run();
    out.assert_exit(3);
    let line = "rlm: error: authentication failed (401): check ANTHROPIC_API_KEY";
    assert_eq!(out.stderr.lines().filter(|l| *l == line).count(), 1, "{}", out.stderr);
    assert!(
        mock.requests() <= 4,
        "{} requests: the run should stop at once",
        mock.requests()
    );
    let report = p.report();
    assert_eq!(report["status"], "FAILED");
    assert_eq!(report["succeeded"], 0);
    assert_eq!(report["error"], "authentication failed (401): check ANTHROPIC_API_KEY");
    // The refused calls fail no unit: every unit is not run, as the store has it.
    assert_eq!(report["failed"], serde_json::json!([]), "{report:#}");
    assert_eq!(report["not_run"].as_array().unwrap().len(), 20, "{report:#}");
}

#[test]
fn after_a_wrong_key_resume_with_the_right_one_runs_every_unit_without_failed() {
    let mock = MockLlm::start();
    mock.require_key("right");
    let p = Project::new().ts_files(6);
    let url = mock.url();
    let out = p
        .rlm(&batch("src/*.ts", &url, &["-j", "2"]))
        .env("ANTHROPIC_API_KEY", "wrong")
        .run();
    out.assert_exit(3);
    let report = p.report();
    let run_id = report["run_id"].as_str().unwrap().to_string();
    // The refused calls are left to run again, not failed for good: the report, the events
    // and the store all list none failed and every unit not run.
    assert_eq!(report["failed"], serde_json::json!([]), "{report:#}");
    assert_eq!(report["not_run"].as_array().unwrap().len(), 6, "{report:#}");
    let events = p.read(&format!("{}/events.jsonl", report["output_dir"].as_str().unwrap()));
    assert!(!events.contains("\"task:failed\""), "{events}");
    assert_eq!(events.matches("\"task:cancelled\"").count(), 6, "{events}");
    let status = p.rlm(&["status", &run_id, "--json"]).run();
    let status: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(status["failures"].as_array().unwrap().len(), 0, "{status:#}");
    assert_eq!(status["cancelled"].as_array().unwrap().len(), 6, "{status:#}");
    // With the key fixed, a plain resume (no --failed) completes every unit.
    let out = p.rlm(&["resume", &run_id]).env("ANTHROPIC_API_KEY", "right").run();
    out.assert_exit(0);
    let report = p.report();
    assert_eq!(report["status"], "SUCCESS", "{report:#}");
    assert_eq!(report["succeeded"], 6);
}

#[test]
fn bad_openai_key_names_openai_api_key() {
    let mock = MockLlm::start();
    mock.require_key("right");
    let p = Project::new().ts_files(20);
    let url = mock.url();
    let out = p
        .rlm(&batch("src/*.ts", &url, &["--provider", "openai"]))
        .env_remove("ANTHROPIC_API_KEY")
        .env("OPENAI_API_KEY", "wrong")
        .run();
    out.assert_exit(3);
    // With no --model, the server is asked for its models first: the refusal ends it there.
    let errors: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with("rlm: error:")).collect();
    assert_eq!(errors.len(), 1, "{}", out.stderr);
    assert!(
        errors[0].contains("(HTTP 401)") && errors[0].contains("check OPENAI_API_KEY"),
        "{}",
        errors[0]
    );
    assert_eq!(mock.requests(), 0, "nothing was asked of the model");
    // With a --model, the first call's 401 stops the run.
    let out = p
        .rlm(&batch(
            "src/*.ts",
            &url,
            &["--provider", "openai", "--model", "mock-model"],
        ))
        .env_remove("ANTHROPIC_API_KEY")
        .env("OPENAI_API_KEY", "wrong")
        .run();
    out.assert_exit(3);
    let line = "rlm: error: authentication failed (401): check OPENAI_API_KEY";
    assert_eq!(out.stderr.lines().filter(|l| *l == line).count(), 1, "{}", out.stderr);
    assert!(mock.requests() <= 4, "{} requests", mock.requests());
    assert!(mock.recorded().iter().all(|r| r.path == "/v1/chat/completions"));
}

#[test]
fn exhausted_quota_stops_the_run() {
    for provider in ["anthropic", "openai"] {
        let mock = MockLlm::start();
        mock.push_faults(vec![Fault::InsufficientQuota; 20]);
        let p = Project::new().ts_files(10);
        let url = mock.url();
        let out = p
            .rlm(&batch("src/*.ts", &url, &["--provider", provider]))
            .env("OPENAI_API_KEY", "sk-openai")
            .run();
        out.assert_exit(3);
        assert!(
            out.stderr
                .lines()
                .any(|l| l.starts_with("rlm: error: quota or spend limit reached (429)")),
            "{provider}: {}",
            out.stderr
        );
        assert!(mock.requests() <= 4, "{provider}: {} requests", mock.requests());
        assert_eq!(p.report()["status"], "FAILED");
    }
}

#[test]
fn client_errors_are_not_retried() {
    for (status, says) in [
        (400, "request rejected (400)"),
        (403, "permission denied (403)"),
        (404, "not found (404)"),
    ] {
        let mock = MockLlm::start();
        mock.push_faults(vec![Fault::Status(status, format!("mock: status {status}"))]);
        let p = Project::new().ts_files(1);
        let url = mock.url();
        let out = p.rlm(&batch("src/*.ts", &url, &[])).run();
        out.assert_exit(3);
        assert_eq!(mock.requests(), 1, "{status} must not be retried");
        let error = out
            .stderr
            .lines()
            .find(|l| l.starts_with("rlm: error: "))
            .unwrap_or_else(|| panic!("no error line for {status}: {}", out.stderr));
        assert!(error.contains(says), "{error}");
        assert!(error.contains(&format!("mock: status {status}")), "{error}");
    }
}

#[test]
fn input_too_long_fails_that_file_only() {
    let mock = MockLlm::start();
    mock.fault_when(
        "TARGET_NEEDLE",
        vec![Fault::Status(
            400,
            "prompt is too long: 250000 tokens > 200000 maximum".into(),
        )],
    );
    let p = project_with_target();
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, &[])).run();
    out.assert_exit(1);
    assert_eq!(mock.requests(), 4, "not retried, and the run goes on");
    let report = p.report();
    assert_eq!(report["status"], "PARTIAL");
    assert_eq!(report["succeeded"], 3);
    assert_eq!(report["failed"][0]["path"], "src/target.ts");
    assert!(
        report["failed"][0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("input too long for claude-sonnet-5-5 (400)"),
        "{report:#}"
    );
    assert!(report["error"].is_null());
}

#[test]
fn failed_summary_falls_back_to_concat() {
    let mock = MockLlm::start();
    mock.fault_when(SUMMARY_PHRASE, vec![Fault::ServerError, Fault::ServerError]);
    let p = Project::new().ts_files(2);
    let url = mock.url();
    let out = p
        .rlm(&batch(
            "src/*.ts",
            &url,
            &["--aggregate", "summarize", "--retries", "1"],
        ))
        .run();
    out.assert_exit(1);
    assert_eq!(mock.requests(), 4);
    let report = p.report();
    assert_eq!(report["status"], "PARTIAL");
    assert_eq!(report["succeeded"], 2);
    let error = report["error"].as_str().unwrap();
    assert!(error.starts_with("summarize failed: server error (500)"), "{error}");
    assert!(
        error.ends_with("aggregate.md holds the concatenated results instead"),
        "{error}"
    );
    let aggregate = p.aggregate_md();
    assert!(aggregate.starts_with("# Batch Processing Results\n\nPattern: src/*.ts\nFiles processed: 2\n"));
    // Nothing was cached for the summary: the rerun asks for it again, and only for it.
    mock.reset_counts();
    p.rlm(&batch("src/*.ts", &url, &["--aggregate", "summarize"]))
        .run()
        .assert_exit(0);
    assert_eq!(mock.requests(), 1);
    assert!(p.aggregate_md().starts_with("SUMMARY of "));
}

#[test]
fn truncated_answers_are_kept_and_reported() {
    let mock = MockLlm::start();
    mock.fault_when("TARGET_NEEDLE", vec![Fault::Truncated]);
    let p = project_with_target();
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, &["-o", "out"])).run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 4, "a truncated answer is not retried");
    let report = p.report();
    assert_eq!(report["status"], "SUCCESS");
    assert_eq!(report["truncated"], serde_json::json!(["src/target.ts"]));
    assert_eq!(unit(&report, "src/target.ts")["truncated"], true);
    assert!(p.exists("out/src-target.ts.result.md"));
    let md = p.report_md();
    assert!(md.contains("## Truncated Results"), "{md}");
    assert!(md.contains("- src/target.ts\n"), "{md}");
}

#[test]
fn api_key_is_never_written_or_printed() {
    const KEY: &str = "sk-secret-XYZ123";
    let mock = MockLlm::start();
    mock.require_key(KEY);
    let p = Project::new().ts_files(3);
    let url = mock.url();
    let first = p
        .rlm(&batch("src/*.ts", &url, &["--aggregate", "summarize"]))
        .env("ANTHROPIC_API_KEY", KEY)
        .run();
    first.assert_exit(0);
    // A provider that echoes the key in its error body (fatal: 400).
    mock.push_faults(vec![Fault::Status(400, format!("bad key {KEY}")); 3]);
    let second = p
        .rlm(&batch("src/*.ts", &url, &["--no-cache", "--json"]))
        .env("ANTHROPIC_API_KEY", KEY)
        .run();
    second.assert_exit(3);
    let report = second.json();
    assert_eq!(report["status"], "FAILED");
    assert_eq!(report["error"], "request rejected (400): bad key [REDACTED]");

    let files = p.all_files();
    assert!(files.iter().any(|f| f.to_string_lossy().contains("/cache/")));
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "{} contains the API key",
            f.display()
        );
    }
    for out in [&first, &second] {
        assert!(!out.stdout.contains(KEY), "stdout shows the key:\n{}", out.stdout);
        assert!(!out.stderr.contains(KEY), "stderr shows the key:\n{}", out.stderr);
    }
}

// ---------------------------------------------------------------------------
// Ctrl-C

#[test]
fn interrupt_finishes_in_flight_calls_and_reports() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_secs(3));
    let p = Project::new().ts_files(10);
    let url = mock.url();
    let args = batch("src/*.ts", &url, &["--max-parallel", "2", "-o", "out"]);
    let running = p.rlm(&args).spawn();
    // The signal handler is installed before the first dispatch.
    assert!(wait_until(Duration::from_secs(10), || mock.requests() == 2));
    std::thread::sleep(Duration::from_secs(1).saturating_sub(running.elapsed()));
    running.signal("INT");
    let out = running.wait();
    out.assert_exit(130);
    // The order, not the time: nothing is dispatched after Ctrl-C, the two calls in flight
    // finish (they succeed below), and the run ends.
    assert_eq!(mock.requests(), 2, "nothing is dispatched after Ctrl-C");
    assert!(
        out.stderr.contains("interrupted: dispatching stopped"),
        "{}",
        out.stderr
    );

    let report = p.report();
    assert_eq!(report["status"], "INTERRUPTED");
    assert_eq!(report["succeeded"], 2);
    let not_run: Vec<&str> = report["not_run"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let expected: Vec<String> = (2..10).map(|i| format!("src/f{i:02}.ts")).collect();
    assert_eq!(not_run, expected);
    assert!(p.exists("out/src-f00.ts.result.md"));
    assert!(p.exists("out/src-f01.ts.result.md"));
    assert!(!p.exists("out/src-f02.ts.result.md"));
    assert!(p.aggregate_md().contains("Files processed: 2\n"));

    // The rerun sends only what did not finish.
    mock.set_latency(Duration::ZERO);
    mock.reset_counts();
    p.rlm(&args).run().assert_exit(0);
    assert_eq!(mock.requests(), 8);
    let report = p.report();
    assert_eq!(report["cache_hits"], 2);
    assert_eq!(report["status"], "SUCCESS");
}

#[test]
fn a_run_waiting_for_another_runs_claims_stops_on_sigterm_without_waiting_them_out() {
    // Run A holds the claims on all four keys while its calls take a minute. Run B, on the
    // same files and cache, waits for A's answers rather than paying again. SIGTERM to B:
    // it paid for nothing, so it stops waiting at once — its units are "not started",
    // never cancelled in flight after the grace period (which a claim wait blocked in the
    // kernel would need) — and it ends while A's calls are still in flight.
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_secs(60));
    let p = Project::new().ts_files(4);
    let url = mock.url();
    let a = p.rlm(&batch("src/*.ts", &url, &["-j", "4", "-o", "out-a"])).spawn();
    assert!(
        wait_until(Duration::from_secs(20), || mock.in_flight() == 4),
        "A's calls are in flight"
    );
    let b = p.rlm(&batch("src/*.ts", &url, &["-j", "4", "-o", "out-b"])).spawn();
    assert!(
        wait_until(Duration::from_secs(20), || p.exists("out-b/plan.json")),
        "B planned"
    );
    // Time for B to dispatch its jobs, find A's claims and wait on them (its events, read
    // below, say that all four were dispatched).
    std::thread::sleep(Duration::from_millis(1500));
    b.signal("TERM");
    let out = b.wait();
    out.assert_exit(130);
    assert_eq!(mock.in_flight(), 4, "A's calls were still in flight when B ended");
    assert_eq!(mock.requests(), 4, "B sent nothing");
    let cancelled: Vec<String> = p
        .read("out-b/events.jsonl")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "task:cancelled")
        .map(|e| e["reason"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        cancelled.len(),
        4,
        "B's jobs were all waiting: {cancelled:?}\n{}",
        out.stderr
    );
    assert!(
        cancelled
            .iter()
            .all(|r| r == "not started: the run stopped dispatching"),
        "{cancelled:?}"
    );
    let report = read_json(&p.path().join("out-b/report.json"));
    assert_eq!(report["status"], "INTERRUPTED");
    assert_eq!(report["not_run"].as_array().unwrap().len(), 4);
    a.signal("KILL");
}

#[test]
fn second_interrupt_stops_at_once() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_secs(15));
    let p = Project::new().ts_files(4);
    let url = mock.url();
    let running = p
        .rlm(&batch("src/*.ts", &url, &["--max-parallel", "2", "-o", "out"]))
        .spawn();
    assert!(wait_until(Duration::from_secs(10), || mock.requests() == 2));
    running.signal("INT");
    std::thread::sleep(Duration::from_millis(200));
    running.signal("INT");
    let second = Instant::now();
    let out = running.wait();
    out.assert_exit(130);
    // The calls in flight would answer at 15 s and the grace would end 10 s after the
    // first signal: counted from the second signal (not from a start a loaded machine may
    // slow), the exit is the signal's doing, not theirs. Nothing succeeded (below).
    assert!(second.elapsed() < Duration::from_secs(8), "{:?}", second.elapsed());
    let report = p.report();
    assert_eq!(report["status"], "INTERRUPTED");
    assert_eq!(report["succeeded"], 0);
    assert_eq!(report["not_run"].as_array().unwrap().len(), 4);
    assert!(report["aggregate_path"].is_null());
}

#[test]
fn interrupt_during_summarize_keeps_the_results() {
    for signal in ["INT", "TERM"] {
        let mock = MockLlm::start();
        // The summarize call never answers (and --timeout is the default 120 s).
        mock.fault_when(SUMMARY_PHRASE, vec![Fault::Hang]);
        let p = Project::new().ts_files(3);
        let url = mock.url();
        let running = p
            .rlm(&batch("src/*.ts", &url, &["--aggregate", "summarize", "-o", "out"]))
            .spawn();
        assert!(wait_until(Duration::from_secs(10), || mock.requests() == 4));
        // The summary call is in flight like any other: the first signal gives it the grace
        // period, the second stops it at once.
        running.signal(signal);
        std::thread::sleep(Duration::from_millis(200));
        running.signal(signal);
        let second = Instant::now();
        let out = running.wait();
        out.assert_exit(130);
        // The summary call would time out only at 120 s: counted from the second signal,
        // the exit is the signal's doing.
        assert!(
            second.elapsed() < Duration::from_secs(30),
            "{signal}: {:?}",
            second.elapsed()
        );
        let report = p.report();
        assert_eq!(report["status"], "INTERRUPTED");
        assert_eq!(report["succeeded"], 3);
        assert!(
            report["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap().starts_with("summarize interrupted")),
            "{signal}: {report:#}"
        );
        let aggregate = p.aggregate_md();
        assert!(aggregate.starts_with("# Batch Processing Results\n"), "{aggregate}");
        assert!(aggregate.contains("## File: src/f02.ts\n"), "{aggregate}");
    }
}

#[test]
fn nothing_succeeded_is_exit_3() {
    let mock = MockLlm::start();
    mock.push_faults(vec![Fault::ServerError; 4]);
    let p = Project::new().ts_files(2);
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, &["--retries", "1", "-o", "out"])).run();
    out.assert_exit(3);
    assert_eq!(mock.requests(), 4);
    let report = p.report();
    assert_eq!(report["status"], "FAILED");
    assert_eq!(report["failed"].as_array().unwrap().len(), 2);
    assert!(report["aggregate_path"].is_null());
    assert!(!p.exists("out/aggregate.md"));
}

#[test]
fn an_empty_answer_is_asked_once_more_then_fails_that_file() {
    let mock = MockLlm::start();
    let p = Project::new()
        .ts_files(2)
        .file("src/empty.ts", &format!("// {}\n", reply_marker("")));
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, &["-o", "out"])).run();
    out.assert_exit(1);
    assert_eq!(mock.requests(), 4, "two files, and the empty answer asked twice");
    let report = p.report();
    assert_eq!(report["status"], "PARTIAL");
    assert_eq!(report["failed"][0]["path"], "src/empty.ts");
    let reason = report["failed"][0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("the model returned no answer, twice") && reason.contains("is empty"),
        "{report:#}"
    );
    assert!(!p.exists("out/src-empty.ts.result.md"));
    // Not cached either: the rerun asks again.
    mock.reset_counts();
    p.rlm(&batch("src/*.ts", &url, &["-o", "out"])).run().assert_exit(1);
    assert_eq!(mock.requests(), 2);
}

#[test]
fn a_model_that_echoes_the_key_does_not_put_it_in_results_or_the_cache() {
    const KEY: &str = "sk-echoed-KEY987";
    let mock = MockLlm::start();
    // The input holds the key (a config file, say) and the model repeats it.
    let p = Project::new().file(
        "src/config.ts",
        &format!("// config\n{}\n", reply_marker(&format!("found the key {KEY} here"))),
    );
    let url = mock.url();
    let out = p
        .rlm(&batch("src/*.ts", &url, &["--aggregate", "summarize"]))
        .env("ANTHROPIC_API_KEY", KEY)
        .run();
    out.assert_exit(0);
    let written: Vec<_> = p
        .all_files()
        .into_iter()
        .filter(|f| f.to_string_lossy().contains("/.aiwg/"))
        .collect();
    assert!(written.iter().any(|f| f.to_string_lossy().ends_with(".result.md")));
    assert!(written.iter().any(|f| f.to_string_lossy().contains("/cache/")));
    for f in &written {
        let text = String::from_utf8_lossy(&std::fs::read(f).unwrap()).into_owned();
        assert!(!text.contains(KEY), "{} contains the API key:\n{text}", f.display());
    }
    let result = p.read(&format!(
        "{}/src-config.ts.result.md",
        p.out_dir().strip_prefix(p.path()).unwrap().display()
    ));
    assert!(result.contains("found the key [REDACTED] here"), "{result}");
}

#[test]
fn a_unit_that_times_out_for_good_is_task_timeout_in_the_event_log() {
    let mock = MockLlm::start();
    mock.fault_when("HANG_NEEDLE", vec![Fault::Hang, Fault::Hang]);
    let p = Project::new()
        .file("src/a.ts", "export const a = 1;\n")
        .file("src/h.ts", "export const HANG_NEEDLE = 1;\n");
    let url = mock.url();
    let out = p
        .rlm(&batch(
            "src/*.ts",
            &url,
            &["--timeout", "1", "--retries", "1", "-o", "out"],
        ))
        .run();
    out.assert_exit(1);
    let events: Vec<Value> = p
        .read("out/events.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let timed_out: Vec<&Value> = events.iter().filter(|e| e["event"] == "task:timeout").collect();
    assert_eq!(timed_out.len(), 1, "{events:?}");
    assert_eq!(timed_out[0]["label"], "src/h.ts");
    assert_eq!(timed_out[0]["attempts"], 2);
    assert!(!events.iter().any(|e| e["event"] == "task:failed"), "{events:?}");
    let last = events.last().unwrap();
    assert_eq!(last["event"], "batch:completed");
    assert_eq!(last["status"], "PARTIAL");
    assert_eq!(last["failed"], 1);
}

/// A call waiting out a 429 (`retry-after: 40`, every call paused) holds no request: Ctrl-C
/// ends the run at once — not after the 10 s grace given to calls in flight — and the
/// unit is not run, so the rerun sends it.
#[test]
fn interrupt_while_a_call_waits_out_a_429_stops_at_once() {
    let mock = MockLlm::start();
    mock.push_faults(vec![Fault::RateLimited { retry_after_secs: 40 }]);
    let p = Project::new().ts_files(1);
    let url = mock.url();
    let args = batch("src/*.ts", &url, &["-o", "out"]);
    let running = p.rlm(&args).spawn();
    assert!(wait_until(Duration::from_secs(10), || mock.requests() == 1));
    // The 429's answer is read (the pause begins) before the signal comes.
    assert!(wait_until(Duration::from_secs(10), || mock.wait_idle(Duration::ZERO)));
    std::thread::sleep(Duration::from_millis(300));
    stops_at_once_on_ctrl_c(running);
    let report = p.report();
    assert_eq!(report["status"], "INTERRUPTED");
    assert_eq!(report["not_run"], serde_json::json!(["src/f00.ts"]), "{report:#}");
    p.rlm(&args).run().assert_exit(0);
    assert_eq!(mock.requests(), 2, "the rerun sends it once");
}

/// The same on a job's path: Ctrl-C while a phase's call waits out a 429 stops the job at
/// once, and its resume sends that batch once.
#[test]
fn interrupt_while_a_job_call_waits_out_a_429_stops_at_once() {
    use crate::job::{job_args, job_id, job_project, only_job};
    let mock = MockLlm::start();
    mock.push_faults(vec![Fault::RateLimited { retry_after_secs: 40 }]);
    let p = job_project(2, 2, &[], "");
    let url = mock.url();
    let running = p.rlm(&job_args(&url, &["--yes"])).spawn();
    assert!(wait_until(Duration::from_secs(10), || mock.requests() == 1));
    assert!(wait_until(Duration::from_secs(10), || mock.wait_idle(Duration::ZERO)));
    std::thread::sleep(Duration::from_millis(300));
    stops_at_once_on_ctrl_c(running);
    let id = job_id(&only_job(&p));
    let out = p.rlm(&["job", "resume", &id, "--base-url", &url, "--json"]).run();
    out.assert_exit(0);
    assert_eq!(out.json()["status"], "SUCCESS", "{}", out.stdout);
    assert_eq!(mock.requests(), 2, "the resume sends the batch once");
}

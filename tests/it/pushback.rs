//! Providers that push back or go silent, through the binary: the pool learns a server's
//! concurrency limit without `-j` and pauses only for a spent window, a lying or zero
//! `retry-after` is not hammered, reset headers are honoured, a server that never answers
//! stops the run after about one timeout, an empty reply is retried once, an oversized one
//! fails clearly, and a local server streams and is not queued up. Counts and order only:
//! no timed assertions.

use std::time::Duration;

use crate::support::mock_llm::*;
use crate::support::*;
use serde_json::Value;

fn unit<'a>(report: &'a Value, path: &str) -> &'a Value {
    report["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["path"] == path || u["label"] == path)
        .unwrap_or_else(|| panic!("no unit {path} in {report:#}"))
}

fn events(p: &Project, dir: &str) -> Vec<Value> {
    p.read(&format!("{dir}/events.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn count(events: &[Value], name: &str) -> usize {
    events.iter().filter(|e| e["event"] == name).count()
}

/// `rlm batch` against an OpenAI-compatible server on 127.0.0.1 (a local server).
fn local<'a>(pattern: &'a str, url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = batch(pattern, url, &["--provider", "openai", "--model", "local-x"]);
    args.extend_from_slice(extra);
    args
}

// ---------------------------------------------------------------------------
// Rate limits

#[test]
fn a_concurrency_limit_is_learned_without_j_and_never_pauses_the_pool() {
    for j in [None, Some("7")] {
        let mock = MockLlm::start();
        mock.set_latency(Duration::from_millis(100));
        mock.limit_concurrency(3, None);
        let p = Project::new().ts_files(40);
        let url = mock.url();
        let mut extra = vec!["-o", "out"];
        if let Some(j) = j {
            extra.extend(["-j", j]);
        }
        let out = p.rlm(&batch("src/*.ts", &url, &extra)).run();
        out.assert_exit(0);
        assert_eq!(p.report()["succeeded"], 40, "{}", out.stderr);
        // The first burst finds the limit (1 refusal at -j 4, 4 at -j 7); after that the pool
        // stays at 3 and tries a fourth call only every few rounds.
        let throttled = mock.throttled();
        assert!(throttled >= 1, "the server pushed back");
        assert!(
            throttled <= 8,
            "{throttled} refusals for 40 calls at -j {j:?}:\n{}",
            out.stderr
        );
        assert_eq!(mock.requests(), 40 + throttled, "each refusal was asked again once");
        assert!(mock.max_in_flight() <= 7);
        assert!(!out.stderr.contains("pausing all calls"), "{}", out.stderr);
        let events = events(&p, "out");
        let narrowed = events
            .iter()
            .filter(|e| e["event"] == "pool:width")
            .map(|e| e["to"].as_u64().unwrap())
            .min();
        // At the server's limit — or one below, when a reply was on its way back as a
        // refusal came (the pool then counts one call fewer in flight than the server did).
        assert!(matches!(narrowed, Some(2..=3)), "the pool narrowed to {narrowed:?}");
    }
}

#[test]
fn a_429_delays_only_its_call_while_the_others_go_on() {
    // 8 files at width 4, replies take 300 ms. The target is the fourth of the first wave:
    // its request gets a 429 with retry-after 3 s while the three before it are in flight —
    // a concurrency refusal — so the other seven files go on (about 0.9 s at width 3) and
    // the target's second request is the last one the server sees.
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(300));
    mock.fault_when("TARGET_NEEDLE", vec![Fault::RateLimited { retry_after_secs: 3 }]);
    let p = Project::new()
        .ts_files(7)
        .file("src/f02b.ts", "export const TARGET_NEEDLE = 0;\n");
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, &["--max-parallel", "4"])).run();
    out.assert_exit(0);
    let recorded = mock.recorded();
    assert_eq!(recorded.len(), 9, "8 files and one retry");
    let first = recorded
        .iter()
        .position(|r| r.user_text().contains("TARGET_NEEDLE"))
        .unwrap();
    assert!(
        first < 4 && recorded[first].fault.is_some(),
        "refused in the first wave"
    );
    let last = recorded.last().unwrap();
    assert!(last.user_text().contains("TARGET_NEEDLE") && last.fault.is_none());
    assert!(
        out.stderr.contains("rate limited: retrying src/f02b.ts in 3."),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("pausing all calls"), "{}", out.stderr);
    assert_eq!(unit(&p.report(), "src/f02b.ts")["attempts"], 2);
}

#[test]
fn a_window_that_says_retry_after_0_is_not_hammered() {
    // 8 calls per 2 s, refused calls count against the window, and every 429 says
    // `retry-after: 0`. Taken at its word, a client asks thousands of times a second and
    // keeps the window full for ever; the pool pauses instead, longer each time.
    let mock = MockLlm::start();
    mock.limit_rate_with(RateLimit {
        per_window: 8,
        window: Duration::from_secs(2),
        counts_refused: true,
        retry_after: RetryAfter::Lie(0),
        headers: false,
    });
    let p = Project::new().ts_files(20);
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, &["-o", "out"])).run();
    out.assert_exit(0);
    assert_eq!(p.report()["succeeded"], 20, "{}", out.stderr);
    let throttled = mock.throttled();
    assert!(throttled <= 20, "{throttled} refusals:\n{}", out.stderr);
    assert!(out.stderr.contains("rate limited: pausing all calls"), "{}", out.stderr);
    let paused: Vec<u64> = events(&p, "out")
        .iter()
        .filter(|e| e["event"] == "task:retried" && e["paused_all"] == true)
        .map(|e| e["wait_ms"].as_u64().unwrap())
        .collect();
    assert!(!paused.is_empty());
    assert!(paused.iter().all(|ms| *ms >= 500), "a minimum pause: {paused:?}");
}

#[test]
fn reset_headers_are_honoured_when_there_is_no_retry_after() {
    // 5 calls per 3 s; the 429s carry no retry-after, only the providers' rate-limit
    // headers (remaining 0, reset in ~3 s). One call at a time: the first refusal pauses
    // the pool until the reset, so the 10 files need one refusal (two at most), where
    // backing off from 1 s without the headers would take three or more.
    let mock = MockLlm::start();
    mock.limit_rate_with(RateLimit {
        per_window: 5,
        window: Duration::from_secs(3),
        counts_refused: true,
        retry_after: RetryAfter::Omitted,
        headers: true,
    });
    let p = Project::new().ts_files(10);
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, &["-j", "1", "-o", "out"])).run();
    out.assert_exit(0);
    assert_eq!(p.report()["succeeded"], 10, "{}", out.stderr);
    assert!(mock.throttled() <= 2, "{} refusals:\n{}", mock.throttled(), out.stderr);
    let paused: Vec<u64> = events(&p, "out")
        .iter()
        .filter(|e| e["event"] == "task:retried")
        .map(|e| e["wait_ms"].as_u64().unwrap())
        .collect();
    assert!(paused[0] >= 2_000, "paused until the reset: {paused:?}");
}

#[test]
fn after_a_windows_reset_the_probe_is_answered_and_the_pool_reopens_one_call_at_a_time() {
    // A sliding window of 5 calls per 3 s that counts refused requests, and 429s that say
    // only when its first slot frees (reset headers, no retry-after). Woken at that very
    // moment, a probe would be refused (the refusals of the burst still fill the window)
    // and its refusal would keep the window full; a pool reopened all at once would be
    // refused by the slots not yet free. rlm wakes a little after the reset and reopens
    // one call per success: every pause ends in an answered probe.
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(50));
    mock.limit_rate_with(RateLimit {
        per_window: 5,
        window: Duration::from_secs(3),
        counts_refused: true,
        retry_after: RetryAfter::Omitted,
        headers: true,
    });
    let p = Project::new().ts_files(15);
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, &["-j", "4", "-o", "out"])).run();
    out.assert_exit(0);
    assert_eq!(p.report()["succeeded"], 15, "{}", out.stderr);
    let events = events(&p, "out");
    let refused: Vec<(String, u64)> = events
        .iter()
        .filter(|e| e["event"] == "task:retried")
        .map(|e| (e["unit"].as_str().unwrap().to_string(), e["attempt"].as_u64().unwrap()))
        .collect();
    // The first call to start after each pause is its probe.
    let mut probes = Vec::new();
    let mut paused = false;
    for e in &events {
        if e["event"] == "task:retried" && e["paused_all"] == true {
            paused = true;
        } else if e["event"] == "task:started" && paused {
            probes.push((e["unit"].as_str().unwrap().to_string(), e["attempt"].as_u64().unwrap()));
            paused = false;
        }
    }
    assert!(probes.len() >= 2, "the window paused the pool: {events:#?}");
    let refused_probes: Vec<_> = probes.iter().filter(|p| refused.contains(p)).collect();
    assert!(
        refused_probes.is_empty(),
        "probes refused: {refused_probes:?}\n{}",
        out.stderr
    );
}

#[test]
fn the_rate_limit_budget_message_says_the_limit_and_the_time_spent() {
    let mock = MockLlm::start();
    mock.fault_when("TARGET_NEEDLE", vec![Fault::RateLimited { retry_after_secs: 1 }; 10]);
    let p = Project::new()
        .ts_files(1)
        .file("src/target.ts", "export const TARGET_NEEDLE = 1;\n");
    let url = mock.url();
    let out = p
        .rlm(&batch("src/*.ts", &url, &["--rate-limit-wait", "2.5", "-j", "1"]))
        .run();
    out.assert_exit(1);
    let report = p.report();
    let reason = report["failed"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("would pass --rate-limit-wait 2.5s"), "{reason}");
    let spent: f64 = reason
        .split("rate limited for ")
        .nth(1)
        .and_then(|r| r.split('s').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no time spent in: {reason}"));
    // Each wait is checked against the budget before it starts; the call made after
    // the last wait and the rounding to a tenth may carry the figure a little past it,
    // never by another whole retry (1 s here).
    assert!(spent < 3.4, "{reason}");
}

#[test]
fn a_retry_after_longer_than_the_rate_limit_wait_stops_the_run_at_once_and_resume_goes_on() {
    // Every 429 says `retry-after: 8`, and no call may wait more than 2 s: holding the
    // queued calls for 8 s each only to fail them (44 s for 6 files) helps no one. The first
    // refusal stops the run with one message; no unit failed, so a plain resume goes on.
    let mock = MockLlm::start();
    mock.push_faults(vec![Fault::RateLimited { retry_after_secs: 8 }; 20]);
    let p = Project::new().ts_files(6);
    let url = mock.url();
    let out = p
        .rlm(&batch(
            "src/*.ts",
            &url,
            &["-j", "1", "--rate-limit-wait", "2", "-o", "out", "-q"],
        ))
        .run();
    out.assert_exit(3);
    assert_eq!(mock.requests(), 1, "{}", out.stderr);
    let errors: Vec<&str> = out.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(errors.len(), 1, "{}", out.stderr);
    let report = p.report();
    let error = report["error"].as_str().unwrap();
    assert!(errors[0].ends_with(error), "{}", out.stderr);
    assert!(
        error.contains("asks every call to wait 8") && error.contains("longer than --rate-limit-wait 2s"),
        "{error}"
    );
    assert_eq!(report["failed"], serde_json::json!([]), "{report:#}");
    assert_eq!(report["not_run"].as_array().unwrap().len(), 6);

    mock.clear_faults();
    let resumed = p.rlm(&["resume", "--yes"]).run();
    resumed.assert_exit(0);
    assert_eq!(p.report()["succeeded"], 6, "{}", resumed.stderr);
    assert_eq!(mock.requests(), 7);
}

#[test]
fn time_waited_in_the_queue_while_the_pool_is_paused_counts_against_the_rate_limit_wait() {
    // -j 1, --rate-limit-wait 3, and the first two requests get `retry-after: 2`. f00's 429
    // pauses the pool for 2 s, which f01 waits out in the queue; f01's own 429 then pauses
    // it for 2 s more: f01 has waited 2 s already, so it fails, and so does f00's retry,
    // refused in the queue without a request of its own (it waited 2 s before it). The
    // files queued after that have their whole budget and go on.
    let mock = MockLlm::start();
    mock.push_faults(vec![Fault::RateLimited { retry_after_secs: 2 }; 2]);
    let p = Project::new().ts_files(4);
    let url = mock.url();
    let out = p
        .rlm(&batch(
            "src/*.ts",
            &url,
            &["-j", "1", "--rate-limit-wait", "3", "-o", "out"],
        ))
        .run();
    out.assert_exit(1);
    assert_eq!(
        mock.requests(),
        4,
        "f00 and f01 once each, f02 and f03:\n{}",
        out.stderr
    );
    let report = p.report();
    assert_eq!(report["succeeded"], 2, "{report:#}");
    let f00 = unit(&report, "src/f00.ts");
    assert_eq!(f00["attempts"], 1);
    let reason = f00["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("rate limited: every call is paused for ") && reason.contains("--rate-limit-wait 3s"),
        "{reason}"
    );
    let reason = unit(&report, "src/f01.ts")["reason"].as_str().unwrap();
    assert!(reason.contains("would pass --rate-limit-wait 3s"), "{reason}");
    let spent: f64 = reason
        .split("rate limited for ")
        .nth(1)
        .and_then(|r| r.split('s').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no time spent in: {reason}"));
    assert!(spent >= 1.9, "the pause it waited out in the queue counts: {reason}");
}

// ---------------------------------------------------------------------------
// Servers that never answer

#[test]
fn a_server_that_accepts_and_never_answers_stops_the_run_after_one_timeout() {
    let mock = MockLlm::start();
    mock.push_faults(vec![Fault::Hang; 200]);
    let p = Project::new().ts_files(40);
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, &["--timeout", "1", "-o", "out"])).run();
    out.assert_exit(3);
    let errors: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with("rlm: error: ")).collect();
    assert_eq!(errors.len(), 1, "{}", out.stderr);
    assert!(
        errors[0].contains(&format!(
            "the model server at {url} never answered: no reply within --timeout 1s"
        )),
        "{}",
        errors[0]
    );
    assert!(errors[0].contains("raise --timeout"), "{}", errors[0]);
    // Four in flight time out together; at most the first two were retried meanwhile.
    assert!(mock.requests() <= 6, "{} requests", mock.requests());
    assert!(p.report()["not_run"].as_array().unwrap().len() >= 30);
}

#[test]
fn a_silent_server_leaves_every_unit_not_run_with_one_message_and_a_plain_resume_finishes_the_run() {
    // Seven calls in flight time out together. The one that reaches the limit stops the
    // run and says why, once; no unit failed (the server was silent, not the unit), so the
    // units in flight are not run, like the rest, and a plain `rlm resume` runs them all.
    let mock = MockLlm::start();
    mock.push_faults(vec![Fault::Hang; 200]);
    let p = Project::new().ts_files(30);
    let url = mock.url();
    let out = p
        .rlm(&batch(
            "src/*.ts",
            &url,
            &["--timeout", "1", "-j", "7", "-o", "out", "-q"],
        ))
        .run();
    out.assert_exit(3);
    let errors: Vec<&str> = out.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(errors.len(), 1, "one message under -q:\n{}", out.stderr);
    assert!(
        errors[0].starts_with("rlm: error: the model server at "),
        "{}",
        errors[0]
    );
    let report = p.report();
    assert_eq!(report["status"], "FAILED");
    assert_eq!(report["failed"], serde_json::json!([]), "{report:#}");
    assert_eq!(report["not_run"].as_array().unwrap().len(), 30);
    let error = report["error"].as_str().unwrap();
    assert!(errors[0].ends_with(error), "the report says the same: {error}");
    let events = events(&p, "out");
    let stopping: Vec<&Value> = events.iter().filter(|e| e["event"] == "run:stopping").collect();
    assert_eq!(stopping.len(), 1, "{stopping:?}");
    assert_eq!(stopping[0]["fatal"], true);
    assert_eq!(count(&events, "task:failed"), 0, "{events:?}");
    assert!(count(&events, "task:cancelled") >= 7, "the calls in flight: {events:?}");
    let sent = mock.requests();

    mock.clear_faults();
    let resumed = p.rlm(&["resume", "--yes"]).run();
    resumed.assert_exit(0);
    let report = p.report();
    assert_eq!(report["status"], "SUCCESS", "{}", resumed.stderr);
    assert_eq!(report["succeeded"], 30);
    assert_eq!(mock.requests() - sent, 30, "each unit asked once more");
}

#[test]
fn a_server_that_goes_silent_mid_run_stops_it_instead_of_timing_out_every_unit() {
    // The server answers, then hangs (a crashed or stuck local server): every call in
    // flight failing twice with no answer since stops the run, once, with what is left
    // resumable — not each unit's timeouts and retries in turn.
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(300));
    let p = Project::new().ts_files(40);
    let url = mock.url();
    let running = p
        .rlm(&batch("src/*.ts", &url, &["--timeout", "1", "-j", "2", "-o", "out"]))
        .spawn();
    // A third call starts only once one of the first two was answered (a request takes its
    // fault when it arrives, so the first two are answered whatever comes after).
    while mock.requests() < 3 {
        std::thread::sleep(Duration::from_millis(5));
    }
    mock.push_faults(vec![Fault::Hang; 500]);
    let out = running.wait();
    out.assert_exit(3);
    let errors: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with("rlm: error: ")).collect();
    assert_eq!(errors.len(), 1, "{}", out.stderr);
    assert!(
        errors[0].contains(&format!(
            "the model server at {url} stopped answering: no reply within --timeout 1s"
        )),
        "{}",
        errors[0]
    );
    assert!(errors[0].contains("since its last answer"), "{}", errors[0]);
    let report = p.report();
    assert!(report["succeeded"].as_u64().unwrap() >= 1, "{report:#}");
    assert_eq!(
        report["failed"],
        serde_json::json!([]),
        "no unit failed: the server did"
    );
    let left = report["not_run"].as_array().unwrap().len();
    assert!(left >= 30, "{left} not run");
    // Two calls in flight, each failing twice: four silent attempts (and the one in flight
    // when the fourth stopped the run), not four per unit.
    let silent = 500 - mock.pending_faults();
    assert!(silent <= 5, "{silent} silent attempts");
    let sent = mock.requests();

    mock.clear_faults();
    mock.set_latency(Duration::ZERO);
    let resumed = p.rlm(&["resume", "--yes"]).run();
    resumed.assert_exit(0);
    assert_eq!(p.report()["status"], "SUCCESS", "{}", resumed.stderr);
    assert_eq!(mock.requests() - sent, left, "each unit left asked once");
}

#[test]
fn one_unit_whose_call_always_times_out_fails_alone_and_the_run_goes_on() {
    // One call at a time; one file's call never comes back. Its retries are silent failures
    // in a row, but all of one unit: the unit fails, the server is not taken for dead.
    let mock = MockLlm::start();
    let p = Project::new().ts_files(6);
    // The last file: its retries come after every other unit has answered.
    mock.fault_when("f05.ts", vec![Fault::Hang; 10]);
    let url = mock.url();
    let out = p
        .rlm(&batch(
            "src/*.ts",
            &url,
            &["--timeout", "1", "-j", "1", "--retries", "2", "-o", "out"],
        ))
        .run();
    out.assert_exit(1);
    let report = p.report();
    assert_eq!(report["status"], "PARTIAL", "{report:#}");
    assert_eq!(report["succeeded"], 5, "{report:#}");
    let failed = report["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{report:#}");
    assert!(failed[0]["path"].as_str().unwrap().ends_with("f05.ts"), "{report:#}");
    assert!(!out.stderr.contains("stopped answering"), "{}", out.stderr);
}

#[test]
fn a_listener_that_never_accepts_stops_the_run_after_the_connect_timeout() {
    let dead = DeadEnd::never_accepts();
    let p = Project::new().ts_files(40);
    let url = dead.url();
    let out = p
        .rlm(&batch("src/*.ts", &url, &["--connect-timeout", "1", "-o", "out"]))
        .run();
    out.assert_exit(3);
    let errors: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with("rlm: error: ")).collect();
    assert_eq!(errors.len(), 1, "{}", out.stderr);
    assert!(
        errors[0].contains(&format!(
            "cannot reach the model server at {url}: no connection within --connect-timeout 1s"
        )),
        "{}",
        errors[0]
    );
    let events = events(&p, "out");
    assert!(count(&events, "task:started") <= 6, "{events:?}");
}

#[test]
fn a_refused_connection_stops_the_run_at_once() {
    let dead = DeadEnd::refuses();
    let p = Project::new().ts_files(40);
    let url = dead.url();
    let out = p.rlm(&batch("src/*.ts", &url, &["-o", "out"])).run();
    out.assert_exit(3);
    assert!(
        out.stderr.contains(&format!(
            "rlm: error: cannot reach the model server at {url}: cannot connect"
        )),
        "{}",
        out.stderr
    );
    assert!(count(&events(&p, "out"), "task:started") <= 6);
}

#[test]
fn a_host_name_that_cannot_resolve_stops_the_run_without_a_retry() {
    // A 64-character label is not a DNS name: the resolver fails without asking anyone.
    let url = format!("http://{}.invalid", "a".repeat(64));
    let p = Project::new().ts_files(20);
    let out = p.rlm(&batch("src/*.ts", &url, &["-o", "out"])).run();
    out.assert_exit(3);
    let errors: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with("rlm: error: ")).collect();
    assert_eq!(errors.len(), 1, "{}", out.stderr);
    assert!(errors[0].contains("cannot resolve the host name"), "{}", errors[0]);
    assert!(errors[0].contains("check --base-url"), "{}", errors[0]);
    let events = events(&p, "out");
    assert_eq!(count(&events, "task:retried"), 0, "{events:?}");
    assert!(count(&events, "task:started") <= 4, "only the first wave");
    // The calls that heard the failure fail no unit: they are resent by resume, so the
    // events, report.json and the store all say 0 failed and 20 not run.
    assert_eq!(count(&events, "task:failed"), 0, "{events:?}");
    assert_eq!(count(&events, "task:cancelled"), 20, "{events:?}");
    let report = p.report();
    assert_eq!(report["status"], "FAILED");
    assert_eq!(report["failed"], serde_json::json!([]), "{report:#}");
    assert_eq!(report["not_run"].as_array().unwrap().len(), 20, "{report:#}");
    let status = p.rlm(&["status", "--json"]).run().json();
    assert_eq!(status["units"]["failed"], 0, "{status:#}");
    assert_eq!(status["units"]["cancelled"], 20, "{status:#}");
    assert_eq!(status["failures"], serde_json::json!([]), "{status:#}");
}

#[test]
fn once_the_server_has_answered_timeouts_are_ordinary_faults() {
    let mock = MockLlm::start();
    for needle in ["NEEDLE_B", "NEEDLE_C", "NEEDLE_D"] {
        mock.fault_when(needle, vec![Fault::Hang]);
    }
    let p = Project::new()
        .file("src/a.ts", "export const a = 1;\n")
        .file("src/b.ts", "export const NEEDLE_B = 1;\n")
        .file("src/c.ts", "export const NEEDLE_C = 1;\n")
        .file("src/d.ts", "export const NEEDLE_D = 1;\n");
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, &["-j", "1", "--timeout", "1"])).run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 7, "three timeouts, each retried");
    assert_eq!(p.report()["succeeded"], 4);
}

#[test]
fn connect_timeout_is_range_checked() {
    let p = Project::new().ts_files(1);
    for bad in ["0", "-1", "86401", "soon"] {
        let out = p
            .rlm(&batch("src/*.ts", "http://127.0.0.1:9", &["--connect-timeout", bad]))
            .run();
        out.assert_exit(2);
        assert!(out.stderr.contains("--connect-timeout"), "{}", out.stderr);
    }
}

// ---------------------------------------------------------------------------
// Replies with no answer, or far too much

#[test]
fn an_empty_reply_is_retried_once_then_fails_the_unit_in_both_formats() {
    for openai in [false, true] {
        let mock = MockLlm::start();
        mock.fault_when("ONCE_NEEDLE", vec![Fault::NoContent]);
        mock.fault_when("TWICE_NEEDLE", vec![Fault::NoContent, Fault::NoContent]);
        let p = Project::new()
            .file("src/a.ts", "export const a = 1;\n")
            .file("src/once.ts", "export const ONCE_NEEDLE = 1;\n")
            .file("src/twice.ts", "export const TWICE_NEEDLE = 1;\n");
        let url = mock.url();
        let args = if openai {
            local("src/*.ts", &url, &[])
        } else {
            batch("src/*.ts", &url, &[])
        };
        let out = p.rlm(&args).run();
        out.assert_exit(1);
        assert_eq!(mock.requests(), 5, "openai={openai}: a, once twice, twice twice");
        let report = p.report();
        assert_eq!(unit(&report, "src/once.ts")["attempts"], 2);
        let failed = &report["failed"][0];
        assert_eq!(failed["path"], "src/twice.ts", "{report:#}");
        let reason = failed["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("the model returned no answer, twice"),
            "openai={openai}: {reason}"
        );
    }
}

#[test]
fn empty_or_blank_text_and_a_refusal_are_retried_once_and_a_refusal_keeps_what_it_said() {
    // Anthropic, OpenAI, and OpenAI streamed (a local server): an empty text once (then an
    // answer), whitespace twice, a refusal twice.
    for (name, openai, streamed) in [
        ("anthropic", false, false),
        ("openai", true, false),
        ("local", true, true),
    ] {
        let mock = MockLlm::start();
        mock.fault_when("EMPTY_NEEDLE", vec![Fault::EmptyText]);
        mock.fault_when("BLANK_NEEDLE", vec![Fault::BlankText, Fault::BlankText]);
        let said = "I can't help with that.";
        mock.fault_when("REFUSE_NEEDLE", vec![Fault::Refusal(said.into()); 2]);
        // a.ts goes first: the whole-reply OpenAI case's refused stream request is its own.
        let p = Project::new()
            .file("src/a.ts", "export const a = 1;\n")
            .file("src/blank.ts", "export const BLANK_NEEDLE = 1;\n")
            .file("src/empty.ts", "export const EMPTY_NEEDLE = 1;\n")
            .file("src/refuse.ts", "export const REFUSE_NEEDLE = 1;\n");
        let url = mock.url();
        // 127.0.0.1 is a local server, asked to stream: the whole-reply OpenAI case refuses
        // streaming (its one refused request is not counted below).
        if openai && !streamed {
            mock.refuse_streaming();
        }
        let args = if openai {
            local("src/*.ts", &url, &["-j", "1"])
        } else {
            batch("src/*.ts", &url, &["-j", "1"])
        };
        let mut run = p.rlm(&args);
        if openai {
            run = run.env_remove("ANTHROPIC_API_KEY");
        }
        let out = run.run();
        out.assert_exit(1);
        let report = p.report();
        assert_eq!(
            unit(&report, "src/empty.ts")["status"],
            "succeeded",
            "{name}: {report:#}"
        );
        assert_eq!(unit(&report, "src/empty.ts")["attempts"], 2, "{name}");
        for file in ["src/blank.ts", "src/refuse.ts"] {
            assert_eq!(unit(&report, file)["attempts"], 2, "{name}: {file}");
            let reason = unit(&report, file)["reason"].as_str().unwrap();
            assert!(
                reason.starts_with("the model returned no answer, twice"),
                "{name}: {reason}"
            );
        }
        let reason = unit(&report, "src/refuse.ts")["reason"].as_str().unwrap();
        if openai {
            assert!(
                reason.ends_with(&format!("the model refused: {said}")),
                "{name}: {reason}"
            );
        } else {
            assert!(reason.contains("the model refused"), "{name}: {reason}");
        }
        let blank = unit(&report, "src/blank.ts")["reason"].as_str().unwrap();
        assert!(
            blank.contains("whitespace") || (streamed && blank.contains("no content")),
            "{name}: {blank}"
        );
        let asked = mock
            .recorded()
            .iter()
            .filter(|r| r.body.get("stream") != Some(&Value::Bool(true)) || streamed)
            .count();
        assert_eq!(asked, 7, "{name}: a.ts, and each of the three asked twice");
        assert_eq!(mock.streamed() > 0, streamed, "{name}");
    }
}

#[test]
fn an_oversized_reply_fails_the_call_clearly_and_is_not_asked_again() {
    let mock = MockLlm::start();
    mock.fault_when("BIG_NEEDLE", vec![Fault::Oversized(8_000_000)]);
    let p = Project::new()
        .file("src/a.ts", "export const a = 1;\n")
        .file("src/big.ts", "export const BIG_NEEDLE = 1;\n");
    let url = mock.url();
    // --max-tokens 100: at most 100 × 64 bytes + 1 MiB.
    let out = p.rlm(&batch("src/*.ts", &url, &["--max-tokens", "100"])).run();
    out.assert_exit(1);
    assert_eq!(mock.requests(), 2);
    let report = p.report();
    let reason = report["failed"][0]["reason"].as_str().unwrap();
    assert!(reason.starts_with("the reply was larger than 1.1 MB"), "{reason}");
}

// ---------------------------------------------------------------------------
// Local servers

#[test]
fn a_local_server_streams_and_a_slow_but_steady_reply_outlives_the_timeout() {
    let mock = MockLlm::start();
    // 40 characters: 5 content events, 9 events in all, 300 ms apart: 2.4 s of reply,
    // never 1 s of silence.
    mock.set_stream_gap(Duration::from_millis(300));
    let answer = "a slow answer that keeps coming, 40 char";
    let p = Project::new().file("src/a.ts", &format!("// {}\n", reply_marker(answer)));
    let url = mock.url();
    let out = p
        .rlm(&local("src/*.ts", &url, &["--timeout", "1", "-o", "out"]))
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(0);
    assert_eq!(mock.streamed(), 1);
    let recorded = mock.recorded();
    assert_eq!(recorded.len(), 1, "{}", out.stderr);
    assert_eq!(recorded[0].body["stream"], true);
    assert_eq!(recorded[0].body["stream_options"]["include_usage"], true);
    assert_eq!(p.read("out/src-a.ts.result.md"), answer);
    let report = p.report();
    assert!(
        unit(&report, "src/a.ts")["tokens_out"].as_u64().unwrap() > 0,
        "{report:#}"
    );
}

#[test]
fn a_stream_that_stalls_times_out_after_the_timeout() {
    let mock = MockLlm::start();
    mock.set_stream_gap(Duration::from_millis(1500));
    let p = Project::new().ts_files(1);
    let url = mock.url();
    let out = p
        .rlm(&local("src/*.ts", &url, &["--timeout", "1", "--retries", "0"]))
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(3);
    assert!(
        out.stderr
            .contains("the streamed reply stalled: nothing for --timeout 1s"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_server_that_refuses_to_stream_is_asked_for_whole_replies_from_then_on() {
    let mock = MockLlm::start();
    mock.refuse_streaming();
    let p = Project::new().ts_files(3);
    let url = mock.url();
    let out = p
        .rlm(&local("src/*.ts", &url, &["-j", "1"]))
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(0);
    let streamed: Vec<bool> = mock
        .recorded()
        .iter()
        .map(|r| r.body.get("stream") == Some(&Value::Bool(true)))
        .collect();
    assert_eq!(streamed, [true, false, false, false]);
    assert_eq!(mock.streamed(), 0);
}

#[test]
fn a_server_reached_by_a_host_name_of_this_machine_is_a_local_server() {
    // `http://ollama:11434` (docker compose) or `host.docker.internal` name a server next
    // door: the name is resolved at start, and a loopback or private address is local
    // (streamed replies, one call at first). This machine's own name stands in for them.
    // Not a skip (a skip would pass): a machine whose own name does not resolve to itself
    // cannot run this test, and says so by failing.
    let host = own_host_name().expect(
        "this machine's host name (`hostname`) does not resolve to a loopback or private address \
         (add it to /etc/hosts), so a server reached by a resolved name cannot be tried here",
    );
    let mock = MockLlm::start_on_every_interface();
    mock.set_latency(Duration::from_millis(100));
    let p = Project::new().ts_files(3);
    let url = format!("http://{host}:{}", mock.port());
    let out = p
        .rlm(&local("src/*.ts", &url, &["-o", "out"]))
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(0);
    assert_eq!(mock.streamed(), 3, "{host}: every reply streamed\n{}", out.stderr);
    // One call at a time at first (a remote server would get all three at once at the
    // default width of 4).
    assert_eq!(mock.max_in_flight(), 1, "{host}");
}

/// This machine's host name, when it resolves to loopback or private addresses only.
fn own_host_name() -> Option<String> {
    use std::net::ToSocketAddrs;
    let name = std::process::Command::new("hostname").output().ok()?;
    let name = String::from_utf8(name.stdout).ok()?.trim().to_string();
    if name.is_empty() || name == "localhost" || name.parse::<std::net::IpAddr>().is_ok() {
        return None;
    }
    let addresses: Vec<std::net::IpAddr> = (name.as_str(), 80).to_socket_addrs().ok()?.map(|a| a.ip()).collect();
    let local = |ip: &std::net::IpAddr| match ip {
        std::net::IpAddr::V4(v4) => v4.is_loopback() || v4.is_private(),
        std::net::IpAddr::V6(v6) => v6.is_loopback(),
    };
    (!addresses.is_empty() && addresses.iter().all(local)).then_some(name)
}

#[test]
fn a_local_server_that_serves_one_at_a_time_is_not_queued_up() {
    let mock = MockLlm::start_serial();
    mock.set_latency(Duration::from_millis(150));
    let p = Project::new().ts_files(24);
    let url = mock.url();
    let out = p
        .rlm(&local("src/*.ts", &url, &["-o", "out"]))
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(0);
    // One call at a time, one step wider to see whether it pays (it does not), then back.
    assert!(mock.max_in_flight() <= 2, "{} in flight", mock.max_in_flight());
    let widths: Vec<(u64, u64)> = events(&p, "out")
        .iter()
        .filter(|e| e["event"] == "pool:width")
        .map(|e| (e["from"].as_u64().unwrap(), e["to"].as_u64().unwrap()))
        .collect();
    assert_eq!(widths.last(), Some(&(2, 1)), "{widths:?}");
    // The search gave a step back: nobody pushed back, and nothing says so.
    let whys: Vec<Value> = events(&p, "out")
        .iter()
        .filter(|e| e["event"] == "pool:width")
        .map(|e| e["why"].clone())
        .collect();
    assert!(whys.iter().all(|w| w == "search"), "{whys:?}");
    assert!(!out.stderr.contains("pushing back"), "{}", out.stderr);
}

#[test]
fn a_local_server_that_runs_calls_side_by_side_is_widened() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(150));
    let p = Project::new().ts_files(40);
    let url = mock.url();
    let out = p
        .rlm(&local("src/*.ts", &url, &[]))
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(0);
    assert!(mock.max_in_flight() >= 3, "{} in flight", mock.max_in_flight());
}

#[test]
fn a_given_width_is_where_the_pool_starts_against_a_local_server() {
    // `-j 3` is not searched for (issue 27): its three calls are in flight together from
    // the start, where the default width's search would send them one at a time (it
    // judges a width after four answers). No step, so no width event either.
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(300));
    let p = Project::new().ts_files(3);
    let url = mock.url();
    let out = p
        .rlm(&local("src/*.ts", &url, &["-j", "3", "-o", "out"]))
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 3);
    assert_eq!(mock.max_in_flight(), 3, "{}", out.stderr);
    assert_eq!(count(&events(&p, "out"), "pool:width"), 0);
    // The same run at the default width searches: one call at a time.
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(300));
    let url = mock.url();
    p.rlm(&local("src/*.ts", &url, &["--no-cache", "-o", "out2"]))
        .env_remove("ANTHROPIC_API_KEY")
        .run()
        .assert_exit(0);
    assert_eq!(mock.max_in_flight(), 1);
}

//! `--batch-api` never pays twice when the reply to a batch's create request is lost (issue
//! 18): the intent is in the run store before the request is sent, a create whose outcome is
//! unknown (a reset, a 5xx, a `kill -9` while it is in flight) is reconciled with the
//! provider's listing before anything is sent again — OpenAI by the token in the batch's
//! metadata, Anthropic by creation time, size and results — and only a listing that shows
//! no candidate lets the requests go again.
#![cfg(unix)]

use std::time::Duration;

use serde_json::Value;

use crate::support::mock_llm::batch::{BatchProgress, SubmitFault};
use crate::support::mock_llm::*;
use crate::support::*;

fn ts_project(n: usize, stem: &str) -> Project {
    let p = Project::new();
    for i in 0..n {
        p.write(
            &format!("src/{stem}{i:03}.ts"),
            &format!("export const {stem}{i:03} = {i};\n"),
        );
    }
    p
}

/// `rlm batch src/*.ts "List {file}" -o out --yes --batch-api` with the model `model`, its
/// server from the environment (so a resume replays no `--base-url`).
fn args<'a>(model: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "batch",
        "src/*.ts",
        "List {file}",
        "--model",
        model,
        "-o",
        "out",
        "--yes",
        "--batch-api",
    ];
    args.extend_from_slice(extra);
    args
}

/// The run's command at `url`, polling every 20 ms, with the key of `model`'s provider.
fn at(p: &Project, args: &[&str], url: &str, openai: bool) -> Run {
    let run = p.rlm(args).env("RLM_BATCH_POLL_MS", "20");
    if openai {
        run.env_remove("ANTHROPIC_API_KEY")
            .env("OPENAI_API_KEY", TEST_KEY)
            .env("OPENAI_BASE_URL", url)
    } else {
        run.env("ANTHROPIC_BASE_URL", url)
    }
}

fn results(p: &Project) -> usize {
    let dir = p.path().join("out");
    if !dir.is_dir() {
        return 0;
    }
    file_names(&dir).iter().filter(|n| n.ends_with(".result.md")).count()
}

fn status(p: &Project) -> Value {
    let out = p.rlm(&["status", "--json"]).run();
    out.assert_exit(0);
    out.json()
}

#[test]
fn a_reply_lost_after_the_batch_was_created_finds_it_instead_of_paying_again() {
    for (model, openai) in [("haiku", false), ("gpt-4.1-mini", true)] {
        for fault in [SubmitFault::ResetAfterCreate, SubmitFault::ServerErrorAfterCreate] {
            let mock = MockLlm::start();
            mock.batch_submit_faults(vec![fault]);
            let p = ts_project(12, "f");
            let out = at(&p, &args(model, &["--json"]), &mock.url(), openai).run();
            out.assert_exit(0);
            assert_eq!(
                mock.batch_submissions(),
                1,
                "{model} {fault:?}: the batch the lost reply created is collected, not submitted again: {}",
                out.stderr
            );
            assert!(mock.batch_listings() >= 1, "the listing was read");
            assert!(
                out.stderr
                    .contains("the reply to the submission of 12 requests was lost")
                    && out.stderr.contains("was found at http://127.0.0.1:")
                    && out.stderr.contains("not submitted again"),
                "{model} {fault:?}: {}",
                out.stderr
            );
            if openai {
                assert!(out.stderr.contains("by the token in its metadata"), "{}", out.stderr);
                let metadata = &mock.batch_metadata()[0];
                assert!(
                    metadata["rlm_run"].as_str().is_some_and(|r| r.starts_with("batch-")),
                    "{metadata}"
                );
                assert!(metadata["rlm_submission"].is_string(), "{metadata}");
            }
            assert_eq!(out.json()["succeeded"], 12);
            assert_eq!(results(&p), 12);
            assert_eq!(mock.requests(), 0, "no realtime call");
        }
    }
}

#[test]
fn a_server_error_that_created_nothing_is_submitted_again_once_the_listing_shows_no_batch() {
    let mock = MockLlm::start();
    mock.batch_submit_faults(vec![SubmitFault::ServerErrorBeforeCreate]);
    let p = ts_project(8, "f");
    let out = at(&p, &args("haiku", &["--json"]), &mock.url(), false).run();
    out.assert_exit(0);
    assert!(
        out.stderr
            .contains("lists no batch that can be it, so none was created: its requests are submitted again"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.batch_submissions(), 1, "one batch created, by the second request");
    assert_eq!(results(&p), 8);
}

#[test]
fn kill_9_while_the_create_request_is_in_flight_then_resume_finds_the_batch() {
    for (model, openai) in [("haiku", false), ("gpt-4.1-mini", true)] {
        let mock = MockLlm::start();
        mock.batch_submit_faults(vec![SubmitFault::HangAfterCreate]);
        let p = ts_project(11, "f");
        let running = at(&p, &args(model, &[]), &mock.url(), openai).spawn();
        assert!(
            wait_until(Duration::from_secs(30), || mock.batch_submissions() == 1),
            "the batch is created"
        );
        running.signal("KILL");
        let _ = running.wait();
        // The store has the intent, not the batch: the run has something at the provider.
        let s = status(&p);
        assert!(s["batches"].as_array().is_none_or(Vec::is_empty), "{s}");

        let out = at(&p, &["resume", "--yes"], &mock.url(), openai).run();
        out.assert_exit(0);
        assert_eq!(
            mock.batch_submissions(),
            1,
            "{model}: the resume found the batch and sent nothing again: {}",
            out.stderr
        );
        assert!(
            out.stderr.contains("was never recorded; batch ") && out.stderr.contains("it is collected"),
            "{model}: {}",
            out.stderr
        );
        assert_eq!(results(&p), 11);
        let s = status(&p);
        assert_eq!(s["display_status"], "SUCCESS", "{s}");
        assert_eq!(s["batches"].as_array().map(Vec::len), Some(1), "{s}");
        assert!(s["batches"][0]["collected_at"].is_string(), "{s}");
    }
}

#[test]
fn kill_9_before_the_provider_created_anything_then_resume_submits_once() {
    let mock = MockLlm::start();
    mock.batch_submit_faults(vec![SubmitFault::HangBeforeCreate]);
    let p = ts_project(5, "f");
    let running = at(&p, &args("haiku", &[]), &mock.url(), false).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || mock.batch_calls() >= 2),
        "the create request is in flight"
    );
    // The intent was written before the request went out.
    running.signal("KILL");
    let _ = running.wait();
    assert_eq!(mock.batch_submissions(), 0);

    let out = at(&p, &["resume", "--yes"], &mock.url(), false).run();
    out.assert_exit(0);
    assert!(
        out.stderr
            .contains("lists no batch that can be it, so none was created: its requests are sent again"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.batch_submissions(), 1);
    assert_eq!(results(&p), 5);
}

#[test]
fn batches_that_cannot_be_told_apart_hold_the_requests_until_the_listing_tells() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::Held);
    mock.batch_submit_faults(vec![SubmitFault::HangAfterCreate]);
    let p = ts_project(6, "f");
    let running = at(&p, &args("haiku", &[]), &mock.url(), false).spawn();
    assert!(wait_until(Duration::from_secs(30), || mock.batch_submissions() == 1));
    running.signal("KILL");
    let _ = running.wait();
    // Another run (another directory, other files) submits a batch of the same size.
    let other = ts_project(6, "g");
    let running = at(&other, &args("haiku", &[]), &mock.url(), false).spawn();
    assert!(wait_until(Duration::from_secs(30), || mock.batch_polls() >= 1));
    running.signal("KILL");
    let _ = running.wait();
    assert_eq!(mock.batch_submissions(), 2);

    // Two batches of its size since its intent, neither ended: it cannot tell which.
    let out = at(&p, &["resume", "--yes"], &mock.url(), false).run();
    assert_eq!(mock.batch_submissions(), 2, "nothing sent again: {}", out.stderr);
    assert!(
        out.stderr.contains("msgbatch_mock_1") && out.stderr.contains("cannot be told apart yet"),
        "{}",
        out.stderr
    );
    assert_eq!(results(&p), 0);
    assert_eq!(p.report()["not_run"].as_array().map(Vec::len), Some(6));

    // The other run's batch ends, and its results are not this run's requests: the one
    // left is this run's, collected.
    mock.set_batch_progress(BatchProgress::AfterPolls(1));
    at(&other, &["resume", "--yes"], &mock.url(), false)
        .run()
        .assert_exit(0);
    let out = at(&p, &["resume", "--yes"], &mock.url(), false).run();
    out.assert_exit(0);
    assert_eq!(mock.batch_submissions(), 2, "{}", out.stderr);
    assert!(out.stderr.contains("batch msgbatch_mock_1 was found"), "{}", out.stderr);
    assert_eq!(results(&p), 6);
}

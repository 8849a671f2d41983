//! `--batch-api` never pays twice when the reply to a batch's create request is lost (issue
//! 18): the intent is in the run store before the request is sent, a create whose outcome is
//! unknown (a reset, a 5xx, a `kill -9` while it is in flight) is reconciled with the
//! provider's listing before anything is sent again — OpenAI by the token in the batch's
//! metadata, Anthropic by its results, whose custom ids carry the submission's token (a
//! candidate that has not ended is waited for, never taken) — and only a listing that shows
//! no candidate lets the requests go again. Another run's or another program's batch of the
//! same size is never taken, nor canceled.
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
        "--no-batch-small",
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

/// [`args`] with the prompt `{answer marker} {file}`: the mock answers `answer` to each
/// file, so a result shows which submission it came from.
fn answering(answer: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = args("haiku", extra).into_iter().map(str::to_string).collect();
    args[2] = format!("{} {{file}}", reply_marker(answer));
    args
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// The text of each result file of `p`.
fn answers(p: &Project) -> Vec<String> {
    let dir = p.path().join("out");
    file_names(&dir)
        .iter()
        .filter(|n| n.ends_with(".result.md"))
        .map(|n| std::fs::read_to_string(dir.join(n)).unwrap())
        .collect()
}

/// Starts `args` in `p` and kills it (-9) once the mock has created its batch, whose reply
/// never comes: its intent is left in the store, its batch at the provider.
fn killed_after_create(p: &Project, args: &[&str], mock: &MockLlm) {
    let before = mock.batch_submissions();
    mock.batch_submit_faults(vec![SubmitFault::HangAfterCreate]);
    let running = at(p, args, &mock.url(), false).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || mock.batch_submissions() == before + 1),
        "the batch is created"
    );
    running.signal("KILL");
    let _ = running.wait();
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
    // It says what it checked (the provider's clock may be behind ours), not that nothing
    // was created.
    assert!(
        out.stderr
            .contains(&format!("no batch created at {} since ", mock.url()))
            && out
                .stderr
                .contains(" UTC (by its clock) is it: its requests are submitted again"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("none was created"), "{}", out.stderr);
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
        // The store has the intent, not the batch: the run has something at the provider,
        // and `rlm status` says so (without asking the provider).
        let s = status(&p);
        assert!(s["batches"].as_array().is_none_or(Vec::is_empty), "{s}");
        let unsure = &s["unresolved_submissions"];
        assert_eq!(unsure.as_array().map(Vec::len), Some(1), "{s}");
        assert_eq!(unsure[0]["request_count"], 11, "{s}");
        let text = p.rlm(&["status"]).run();
        text.assert_exit(0);
        assert!(
            text.stdout.contains("a submission of 11 requests at ")
                && text
                    .stdout
                    .contains("got no reply: the provider may be running it; `rlm resume "),
            "{model}: {}",
            text.stdout
        );

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
        assert!(s.get("unresolved_submissions").is_none(), "settled: {s}");
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
        out.stderr.contains("(by its clock) is it: its requests are sent again"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.batch_submissions(), 1);
    assert_eq!(results(&p), 5);
}

#[test]
fn two_lost_submissions_over_the_same_files_each_take_their_own_batch() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::Held);
    // Two checkouts (two run stores) over the same files, with two prompts, one API key:
    // both replies lost, both batches running, of the same size.
    let (a, b) = (ts_project(6, "f"), ts_project(6, "f"));
    let (args_a, args_b) = (answering("ANSWER-A", &[]), answering("ANSWER-B", &[]));
    killed_after_create(&a, &strs(&args_a), &mock);
    killed_after_create(&b, &strs(&args_b), &mock);

    // Neither has ended: a resume waits for them (within its deadline), takes neither, and
    // sends nothing again.
    let out = at(&a, &["resume", "--yes", "--deadline", "1s"], &mock.url(), false).run();
    assert_eq!(mock.batch_submissions(), 2, "nothing sent again: {}", out.stderr);
    assert!(
        out.stderr
            .contains("batches msgbatch_mock_2, msgbatch_mock_1 may be it and have not ended: rlm waits")
            && out.stderr.contains("the --deadline passed before they ended"),
        "{}",
        out.stderr
    );
    assert_eq!(results(&a), 0);
    assert_eq!(mock.batch_cancels(), 0);

    // Both end: each resume takes its own, told by its results' custom ids.
    mock.set_batch_progress(BatchProgress::AfterPolls(1));
    for (p, answer, batch) in [(&a, "ANSWER-A", "msgbatch_mock_1"), (&b, "ANSWER-B", "msgbatch_mock_2")] {
        // (A's earlier resume used its --deadline up: a new one.)
        let out = at(p, &["resume", "--yes", "--deadline", "10m"], &mock.url(), false).run();
        out.assert_exit(0);
        assert!(
            out.stderr.contains(&format!("batch {batch} was found"))
                && out
                    .stderr
                    .contains("by its results, whose custom ids carry this submission's token"),
            "{}",
            out.stderr
        );
        let got = answers(p);
        assert_eq!(got.len(), 6);
        assert!(got.iter().all(|t| t.contains(answer)), "{answer}: {got:?}");
    }
    assert_eq!(mock.batch_submissions(), 2, "each paid once");
}

#[test]
fn a_failed_create_waits_for_another_program_s_batch_of_its_size_and_never_takes_or_cancels_it() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::AfterPolls(3));
    // Another program's batch of 6, running, unknown to this store.
    let other = ts_project(6, "g");
    killed_after_create(&other, &strs(&answering("OTHER", &[])), &mock);

    // This run's create fails and creates nothing.
    mock.batch_submit_faults(vec![SubmitFault::ServerErrorBeforeCreate]);
    let p = ts_project(6, "f");
    let out = at(&p, &strs(&answering("MINE", &[])), &mock.url(), false).run();
    out.assert_exit(0);
    assert!(
        out.stderr
            .contains("batch msgbatch_mock_1 may be it and has not ended: rlm waits for it, and its results tell")
            && out.stderr.contains("(by its clock) is it: its requests are sent again"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.batch_submissions(), 2, "its own batch, once");
    let got = answers(&p);
    assert_eq!(got.len(), 6);
    assert!(got.iter().all(|t| t.contains("MINE")), "{got:?}");
    assert_eq!(mock.batch_cancels(), 0);
}

#[test]
fn cancel_of_a_run_whose_lost_submission_cannot_be_told_says_so_and_cancels_nothing() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::Held);
    let other = ts_project(6, "g");
    killed_after_create(&other, &strs(&answering("OTHER", &[])), &mock);
    mock.batch_submit_faults(vec![SubmitFault::ServerErrorBeforeCreate]);
    let p = ts_project(6, "f");
    let out = at(&p, &strs(&answering("MINE", &["--deadline", "1s"])), &mock.url(), false).run();
    assert!(out.stderr.contains("msgbatch_mock_1 may be it"), "{}", out.stderr);
    assert_eq!(mock.batch_submissions(), 1);

    let out = at(&p, &["cancel"], &mock.url(), false).run();
    out.assert_exit(1);
    assert_eq!(mock.batch_cancels(), 0, "a batch that may be another's is not canceled");
    assert!(
        out.stderr.contains("batch msgbatch_mock_1 at ")
            && out
                .stderr
                .contains("rlm cannot tell whether it is the run's, so it did not cancel it"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("sends them"),
        "resume would hold them again: {}",
        out.stderr
    );
}

#[test]
fn a_found_batch_whose_results_leave_lines_out_is_still_this_submission_s() {
    let mock = MockLlm::start();
    mock.batch_submit_faults(vec![SubmitFault::ResetAfterCreate]);
    // The first results read (the look that tells the batch) have one line of eight.
    mock.drop_batch_result_lines(7);
    let p = ts_project(8, "f");
    let out = at(&p, &args("haiku", &[]), &mock.url(), false).run();
    out.assert_exit(0);
    assert!(
        out.stderr
            .contains("by its results, whose custom ids carry this submission's token"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.batch_submissions(), 1, "not paid twice: {}", out.stderr);
    assert_eq!(results(&p), 8);
}

#[test]
fn two_lost_submissions_in_one_resume_each_settle_against_the_batches_found_before() {
    let mock = MockLlm::start();
    // Two batches of two: the first created and its reply lost while the listing fails (its
    // requests held), the second in flight when rlm is killed, nothing created.
    mock.batch_submit_faults(vec![SubmitFault::ResetAfterCreate, SubmitFault::HangBeforeCreate]);
    mock.fail_batch_listings(3, 500);
    let p = ts_project(4, "f");
    let running = at(&p, &args("haiku", &[]), &mock.url(), false)
        .env("RLM_BATCH_LIMITS", "2")
        .spawn();
    assert!(
        wait_until(Duration::from_secs(30), || mock.batch_listings() >= 4
            && mock.batch_calls() >= 6),
        "the second create is in flight"
    );
    running.signal("KILL");
    let _ = running.wait();
    assert_eq!(mock.batch_submissions(), 1);

    let out = at(&p, &["resume", "--yes"], &mock.url(), false).run();
    out.assert_exit(0);
    assert!(out.stderr.contains("batch msgbatch_mock_1 was found"), "{}", out.stderr);
    assert!(
        out.stderr.contains("(by its clock) is it: its requests are sent again"),
        "the second is not taken for the first's batch: {}",
        out.stderr
    );
    assert!(!out.stderr.contains("UNIQUE"), "{}", out.stderr);
    assert_eq!(mock.batch_submissions(), 2, "the second's requests once");
    assert_eq!(results(&p), 4);
}

#[test]
fn a_listing_refused_with_404_never_advises_running_without_the_batch_api() {
    let mock = MockLlm::start();
    let p = ts_project(3, "f");
    killed_after_create(&p, &args("haiku", &[]), &mock);
    mock.fail_batch_listings(1, 404);
    let out = at(&p, &["resume", "--yes"], &mock.url(), false).run();
    assert_eq!(mock.batch_submissions(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("check the API key and the base URL")
            && out.stderr.contains("--forget` gives the submission up"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("without --batch-api"), "{}", out.stderr);
}

#[test]
fn a_lost_submission_the_listing_cannot_tell_holds_its_requests_and_says_so_once() {
    let mock = MockLlm::start();
    mock.batch_submit_faults(vec![SubmitFault::ResetAfterCreate]);
    mock.fail_batch_listings(3, 500);
    let p = ts_project(3, "f");
    let out = at(&p, &args("haiku", &[]), &mock.url(), false).run();
    assert_eq!(mock.batch_submissions(), 1, "nothing sent again: {}", out.stderr);
    assert!(
        out.stderr.contains("its listing of batches could not be read")
            && out
                .stderr
                .contains("its requests are not sent again (that could pay twice): rlm resume looks again"),
        "{}",
        out.stderr
    );
    assert_eq!(p.report()["not_run"].as_array().map(Vec::len), Some(3));
    let s = status(&p);
    let reasons: Vec<&str> = s["cancelled"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["reason"].as_str())
        .collect();
    assert_eq!(reasons.len(), 3, "{s}");
    assert!(
        reasons
            .iter()
            .all(|r| r.ends_with("rlm resume looks again") && !r.contains("looks again (`rlm resume")),
        "said once: {reasons:?}"
    );

    // The listing reads again: a resume finds the batch and sends nothing again.
    let out = at(&p, &["resume", "--yes"], &mock.url(), false).run();
    out.assert_exit(0);
    assert_eq!(mock.batch_submissions(), 1, "{}", out.stderr);
    assert_eq!(results(&p), 3);
}

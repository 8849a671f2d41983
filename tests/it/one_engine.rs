//! One lifecycle for every call (issue 24): the money promises the realtime path keeps hold
//! on the batch-API path and the job path too — no request paid twice by two runs at once,
//! a budget that bounds a batch run, no hang while a batch's answers are asked again, and a
//! run whose owner died resumable whatever its pid says.
#![cfg(unix)]

use std::time::Duration;

use serde_json::Value;

use crate::support::mock_llm::batch::BatchProgress;
use crate::support::mock_llm::*;
use crate::support::*;

fn ts_project(n: usize) -> Project {
    Project::new().ts_files(n)
}

/// `rlm batch src/*.ts PROMPT --base-url URL --model haiku -o OUT --yes --no-batch-small
/// EXTRA…`: one unit a file.
pub(crate) fn batch_in<'a>(url: &'a str, out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "batch",
        "src/*.ts",
        "List {file}",
        "--base-url",
        url,
        "--model",
        "haiku",
        "-o",
        out,
        "--yes",
        "--no-batch-small",
    ];
    args.extend_from_slice(extra);
    args
}

/// `args` in `p`, polling batches every 20 ms.
fn fast(p: &Project, args: &[&str]) -> Run {
    crate::job::fast(p.rlm(args))
}

/// Scenario 7: more schema-invalid batch answers than the width. Each is asked again in
/// realtime, and each re-ask's slot goes back while the batch's results are kept: the run
/// ends (it used to park every thread for good).
#[test]
fn more_invalid_schema_answers_than_the_width_are_each_asked_again_and_the_run_ends() {
    const SCHEMA: &str = r#"{"type": "object", "properties": {"functions": {"type": "array", "items": {"type": "string"}}},
        "required": ["functions"], "additionalProperties": false}"#;
    let mock = MockLlm::start();
    let p = ts_project(4).file("functions.schema.json", SCHEMA);
    for i in 0..6 {
        p.write(
            &format!("src/bad{i}.ts"),
            &format!("// {}\n", reply_marker(r#"{"functions": [1], "extra": true}"#)),
        );
    }
    let url = mock.url();
    let out = fast(
        &p,
        &batch_in(
            &url,
            "out",
            &["--batch-api", "-j", "2", "--schema", "functions.schema.json"],
        ),
    )
    .timeout(Duration::from_secs(60))
    .run();
    out.assert_exit(1);
    assert_eq!(mock.batch_sizes(), [10]);
    assert_eq!(mock.recorded().len(), 6, "each invalid answer asked again once");
    let report = p.report();
    assert_eq!(report["succeeded"], 4, "{report}");
    assert_eq!(report["failed"].as_array().map(Vec::len), Some(6), "{report}");
    for i in 0..6 {
        assert!(p.exists(&format!("out/src-bad{i}.ts.rejected.md")));
    }
    // Paid: the batch request and the re-ask of each bad file, both counted.
    let units = report["units"].as_array().expect("units");
    let bad: Vec<&Value> = units
        .iter()
        .filter(|u| u["path"].as_str().is_some_and(|p| p.contains("bad")))
        .collect();
    assert_eq!(bad.len(), 6, "{report}");
    for u in bad {
        assert_eq!(u["attempts"], 2, "{u}");
        assert!(u["tokens_in"].as_u64().unwrap() > 0, "{u}");
    }
}

/// The identity rlm records for a live process: `{boot id}:{start time}` (Linux).
fn identity_of(pid: u32) -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..].split_whitespace().collect();
    format!("{}:{}", boot.trim(), fields[19])
}

/// Scenario 9: a run whose rlm died is resumable at once, whatever process its pid now
/// names (a zombie not yet reaped, or a pid taken by another program): its directory's
/// lock went with the process, and the lock is what is trusted.
#[test]
fn a_run_whose_owner_died_resumes_though_its_pid_names_a_live_process() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(400));
    let p = ts_project(6);
    let url = mock.url();
    let running = p.rlm(&batch_in(&url, "out", &["-j", "1"])).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || results_in(&p, "out") >= 1),
        "the run makes progress"
    );
    running.signal("KILL");
    let _ = running.wait();
    // The store names another live process as the owner: a pid taken again.
    let mut other = std::process::Command::new("sleep").arg("30").spawn().unwrap();
    let store = rusqlite::Connection::open(p.path().join(".aiwg/rlm/store.sqlite3")).unwrap();
    let changed = store
        .execute(
            "UPDATE runs SET owner_pid = ?1, owner_identity = ?2",
            rusqlite::params![other.id(), identity_of(other.id())],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(store);
    mock.set_latency(Duration::ZERO);
    let resumed = p.rlm(&["resume", "--yes"]).run();
    let _ = other.kill();
    let _ = other.wait();
    resumed.assert_exit(0);
    assert_eq!(p.report()["succeeded"], 6);
}

/// Scenario 6: `--max-cost` bounds a batch run. A batch is paid for whole, so before each
/// submission its worst case must fit in what is left: what does not is not sent, the run
/// ends BUDGET_EXCEEDED (exit 1), and a resume with a higher budget sends the rest, once.
#[test]
fn max_cost_bounds_a_batch_run_and_a_resume_with_more_sends_the_rest_once() {
    let mock = MockLlm::start();
    let p = ts_project(40);
    let url = mock.url();
    let out = fast(
        &p,
        &batch_in(&url, "out", &["--batch-api", "--max-cost", "0.01", "--json"]),
    )
    .run();
    out.assert_exit(1);
    let report = out.json();
    assert_eq!(report["status"], "BUDGET_EXCEEDED", "{report}");
    let sent: usize = mock.batch_sizes().iter().sum();
    assert!(
        sent > 0 && sent < 40,
        "only what fits was submitted: {:?}",
        mock.batch_sizes()
    );
    assert!(report["cost_usd"].as_f64().unwrap() <= 0.01, "{report}");
    assert_eq!(report["succeeded"].as_u64().unwrap() as usize, sent, "{report}");
    assert_eq!(report["not_run"].as_array().unwrap().len(), 40 - sent, "{report}");
    let id = report["run_id"].as_str().unwrap();
    assert!(
        out.stderr
            .contains(&format!("`rlm resume {id} --max-cost USD` with a higher budget")),
        "{}",
        out.stderr
    );

    let resumed = fast(&p, &["resume", "--yes", "--max-cost", "5"]).run();
    resumed.assert_exit(0);
    assert_eq!(mock.batch_sizes().iter().sum::<usize>(), 40, "nothing was sent twice");
    assert_eq!(mock.requests(), 0);
    assert_eq!(p.report()["succeeded"], 40);
}

/// The dry run of a `--batch-api --max-cost` run says where the cap cuts it, as the run
/// counts it (each request at its worst, at the batch price): how many requests it would
/// submit, and that it ends BUDGET_EXCEEDED. The real run then submits that many. The dry
/// run said only that the run proceeds.
#[test]
fn the_dry_run_of_a_batch_run_says_how_many_requests_max_cost_lets_it_submit() {
    let mock = MockLlm::start();
    let p = ts_project(40);
    let url = mock.url();
    let args = |extra: &[&'static str]| {
        let mut args = batch_in(&url, "out", &["--batch-api", "--max-cost", "0.01"]);
        args.extend_from_slice(extra);
        args
    };
    let dry = fast(&p, &args(&["--dry-run", "--json"])).run();
    dry.assert_exit(0);
    let plan = dry.json();
    let cut = &plan["batch_budget"];
    let submitted = cut["submitted"].as_u64().unwrap() as usize;
    assert!(submitted > 0 && submitted < 40, "{cut}");
    assert_eq!(cut["requests"], 40, "{cut}");
    assert_eq!(cut["not_submitted"].as_u64().unwrap() as usize, 40 - submitted, "{cut}");
    let verdict = plan["cost_check"].as_str().unwrap();
    assert!(
        verdict.contains(&format!("lets only {submitted} of its 40 batch requests"))
            && verdict.contains("BUDGET_EXCEEDED"),
        "{verdict}"
    );
    let text = fast(&p, &args(&["--dry-run"])).run();
    text.assert_exit(0);
    assert!(text.stdout.contains(verdict), "{}", text.stdout);
    assert_eq!(mock.batch_submissions(), 0, "a dry run submits nothing");

    let out = fast(&p, &args(&["--json"])).run();
    out.assert_exit(1);
    assert_eq!(out.json()["status"], "BUDGET_EXCEEDED");
    assert_eq!(
        mock.batch_sizes().iter().sum::<usize>(),
        submitted,
        "as the dry run said"
    );
}

/// Every request the mock was paid for, realtime and in batches.
fn paid_requests(mock: &MockLlm) -> usize {
    mock.requests() + mock.batch_sizes().iter().sum::<usize>()
}

/// Scenario 1: two `--batch-api` runs of the same files at once, each with its own output
/// directory: each request is paid once; the second run waits for the first one's batch
/// and reads its answers from the cache.
#[test]
fn two_batch_runs_of_the_same_files_at_once_pay_once() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::AfterTime(Duration::from_millis(1500)));
    let p = ts_project(12);
    let url = mock.url();
    let a = fast(&p, &batch_in(&url, "out-a", &["--batch-api"])).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || mock.batch_submissions() >= 1),
        "the first run submits"
    );
    let b = fast(&p, &batch_in(&url, "out-b", &["--batch-api"])).spawn();
    a.wait().assert_exit(0);
    let b = b.wait();
    b.assert_exit(0);
    assert_eq!(
        paid_requests(&mock),
        12,
        "a request was paid twice: {:?}",
        mock.batch_sizes()
    );
    for dir in ["out-a", "out-b"] {
        assert_eq!(results_in(&p, dir), 12, "{dir}");
        let report = read_json(&p.path().join(dir).join("report.json"));
        assert_eq!(report["succeeded"], 12, "{dir}: {report}");
    }
    let second = read_json(&p.path().join("out-b/report.json"));
    assert_eq!(
        second["cost_usd"].as_f64(),
        Some(0.0),
        "the second run paid nothing: {second}"
    );
}

/// Scenario 2: a realtime run and a `--batch-api` run of the same files at once: each
/// request is paid once, whichever run pays for it.
#[test]
fn a_realtime_run_and_a_batch_run_at_once_pay_once() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(200));
    mock.set_batch_progress(BatchProgress::AfterTime(Duration::from_millis(1500)));
    let p = ts_project(12);
    let url = mock.url();
    let batch = fast(&p, &batch_in(&url, "out-batch", &["--batch-api"])).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || mock.batch_submissions() >= 1),
        "the batch run submits"
    );
    let realtime = fast(&p, &batch_in(&url, "out-rt", &["-j", "2"])).spawn();
    batch.wait().assert_exit(0);
    realtime.wait().assert_exit(0);
    assert_eq!(paid_requests(&mock), 12, "paid twice: {} realtime", mock.requests());
    assert_eq!(mock.requests(), 0, "the realtime run waited for the batch's answers");
    for dir in ["out-batch", "out-rt"] {
        assert_eq!(results_in(&p, dir), 12, "{dir}");
    }

    // The other way round: the realtime run first, the batch run after it started.
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(300));
    let p = ts_project(12);
    let url = mock.url();
    let realtime = fast(&p, &batch_in(&url, "out-rt", &["-j", "2"])).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || mock.requests() >= 2),
        "the realtime run calls"
    );
    let batch = fast(&p, &batch_in(&url, "out-batch", &["--batch-api"])).spawn();
    realtime.wait().assert_exit(0);
    batch.wait().assert_exit(0);
    assert_eq!(
        paid_requests(&mock),
        12,
        "paid twice: {} realtime, batches {:?}",
        mock.requests(),
        mock.batch_sizes()
    );
    for dir in ["out-batch", "out-rt"] {
        assert_eq!(results_in(&p, dir), 12, "{dir}");
    }
}

/// Scenario 3: the same `--batch-api` command run again after a Ctrl-C, without `rlm
/// resume` (a new output directory, the first batch still at the provider): the second run
/// collects the first one's batch instead of paying again, and reports its bill once.
#[test]
fn a_batch_command_run_again_after_ctrl_c_collects_the_first_batch_and_pays_nothing_more() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::Held);
    let p = ts_project(10);
    let url = mock.url();
    let first = fast(&p, &batch_in(&url, "out-1", &["--batch-api"])).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || mock.batch_polls() >= 1),
        "the first run submits and polls"
    );
    first.signal("INT");
    let first = first.wait();
    assert_ne!(first.status, 0, "{}", first.stderr);
    assert_eq!(mock.batch_submissions(), 1);

    mock.set_batch_progress(BatchProgress::AfterPolls(1));
    let again = fast(&p, &batch_in(&url, "out-2", &["--batch-api", "--json"])).run();
    again.assert_exit(0);
    assert_eq!(
        mock.batch_submissions(),
        1,
        "nothing was submitted again: {}",
        again.stderr
    );
    assert_eq!(mock.requests(), 0);
    let report = again.json();
    assert_eq!(report["succeeded"], 10, "{report}");
    assert!(
        report["cost_usd"].as_f64().unwrap() > 0.0,
        "the bill is reported here: {report}"
    );
    assert!(again.stderr.contains("this run collects it"), "{}", again.stderr);

    // The first run's batch is collected: its resume pays nothing and counts nothing again.
    let resumed = fast(&p, &["resume", "--yes", "--json"]).run();
    resumed.assert_exit(0);
    assert_eq!(mock.batch_submissions(), 1);
    let report = resumed.json();
    assert_eq!(report["succeeded"], 10, "{report}");
    assert_eq!(report["cost_usd"].as_f64(), Some(0.0), "{report}");
}

/// Scenario 5: two realtime `rlm job run` of one job file at once: every call is paid
/// once (the job's workers claim their keys as every realtime call does).
#[test]
fn two_job_runs_of_one_job_file_at_once_pay_once() {
    use crate::job::{job_args, job_project, jobs, REPORT_PHASE};
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(300));
    let p = job_project(10, 4, &[], REPORT_PHASE);
    let url = mock.url();
    let a = p.rlm(&job_args(&url, &[])).spawn();
    let b = p.rlm(&job_args(&url, &[])).spawn();
    a.wait().assert_exit(0);
    b.wait().assert_exit(0);
    assert_eq!(jobs(&p).len(), 2);
    // Three map batches (4 + 4 + 2) and one report call, each paid once.
    assert_eq!(mock.requests(), 4, "paid twice: {} requests", mock.requests());
    for dir in jobs(&p) {
        let report = read_json(&dir.join("report.json"));
        assert_eq!(report["phases"][0]["items_done"], 10, "{report}");
        assert_eq!(report["unprocessed"].as_array().map(Vec::len), Some(0), "{report}");
    }
}

/// Scenario 8: under `rlm job --batch-api`, a batch answer the check rejects was paid for:
/// it is counted (calls and cost), and its realtime re-ask carries its errors.
#[test]
fn a_rejected_batch_answer_of_a_job_is_counted_and_asked_again_with_its_errors() {
    use crate::job::{fast as job_fast, job_args, job_project, only_job};
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::AfterPolls(1));
    let hints = vec![(3, first_attempt_hint(&serde_json::json!({"kind": "bogus"})))];
    let p = job_project(8, 4, &hints, "");
    let out = job_fast(p.rlm(&job_args(&mock.url(), &["--batch-api", "--json", "--yes"]))).run();
    out.assert_exit(0);
    assert_eq!(mock.batch_sizes(), [2]);
    let realtime = mock.recorded();
    assert_eq!(realtime.len(), 1, "the rejected batch, asked again once");
    assert!(
        realtime[0].user_text().contains("Your previous answer was rejected"),
        "the re-ask carries the errors: {}",
        realtime[0].user_text()
    );
    let record = read_json(&only_job(&p).join("job.json"));
    let phase = &record["phases"][0];
    assert_eq!(phase["calls"], 3, "two batch requests and one re-ask: {phase}");
    // The batch holding e3 paid its batch request and its realtime re-ask (twice the
    // batch price): about three times what the other batch paid, not two.
    let events = std::fs::read_to_string(only_job(&p).join("events.jsonl")).unwrap();
    let completed: Vec<Value> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "batch:completed")
        .collect();
    assert_eq!(completed.len(), 2, "{events}");
    let cost_of = |n: &str| {
        completed
            .iter()
            .find(|e| e["batch"].as_str().is_some_and(|b| b.ends_with(n)))
            .and_then(|e| e["cost_usd"].as_f64())
            .unwrap()
    };
    let (rejected, plain) = (cost_of("batch-001"), cost_of("batch-002"));
    assert!(
        rejected > 2.5 * plain,
        "the rejected answer is counted: {rejected} vs {plain}"
    );
    let first = completed
        .iter()
        .find(|e| e["batch"].as_str().unwrap().ends_with("batch-001"))
        .unwrap();
    assert_eq!(first["calls"], 2, "{first}");
}

/// A resume keeps the answers that were paid for and rejected (`*.rejected.md`): they are
/// never cached, and the run's report points at them.
#[test]
fn a_resume_keeps_the_rejected_answers_of_the_earlier_attempt() {
    const SCHEMA: &str = r#"{"type": "object", "properties": {"functions": {"type": "array", "items": {"type": "string"}}},
        "required": ["functions"], "additionalProperties": false}"#;
    let mock = MockLlm::start();
    let p = ts_project(6).file("functions.schema.json", SCHEMA).file(
        "src/a-bad.ts",
        &format!("// {}\n", reply_marker(r#"{"functions": [1]}"#)),
    );
    let url = mock.url();
    mock.set_latency(Duration::from_millis(300));
    let running = p
        .rlm(&batch_in(
            &url,
            "out",
            &["-j", "1", "--schema", "functions.schema.json"],
        ))
        .spawn();
    assert!(
        wait_until(Duration::from_secs(30), || p.exists("out/src-a-bad.ts.rejected.md")),
        "the bad answer is rejected and kept"
    );
    running.signal("KILL");
    let _ = running.wait();
    mock.set_latency(Duration::ZERO);
    let resumed = p.rlm(&["resume", "--yes"]).run();
    resumed.assert_exit(1);
    assert!(
        p.exists("out/src-a-bad.ts.rejected.md"),
        "the paid answer is still there"
    );
    assert_eq!(p.report()["succeeded"], 6);
}

/// Scenario 4: `rlm job run --batch-api` killed (-9) while its create request is in flight
/// (the provider created the batch; the reply never came), then `rlm job resume`: the
/// intent written before the request is found at the provider, and nothing is paid twice.
#[test]
fn a_job_killed_while_its_batch_create_request_is_in_flight_resumes_without_paying_twice() {
    use crate::job::{fast as job_fast, job_id, job_project, map_requests, only_job, REPORT_PHASE};
    use crate::support::mock_llm::batch::SubmitFault;
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::AfterPolls(1));
    mock.batch_submit_faults(vec![SubmitFault::HangAfterCreate]);
    let p = job_project(10, 1, &[], REPORT_PHASE);
    killed_once_its_batch_is_created(&p, &mock);
    let dir = only_job(&p);
    let out = job_fast(p.rlm(&["job", "resume", &job_id(&dir), "--json"])).run();
    out.assert_exit(0);
    assert_eq!(mock.batch_submissions(), 1, "found, not sent again: {}", out.stderr);
    assert!(map_requests(&mock).is_empty(), "no map request paid again in real time");
    assert!(out.stderr.contains("was found at"), "{}", out.stderr);
    let record = read_json(&dir.join("job.json"));
    assert_eq!(record["phases"][0]["items_done"], 10, "{record}");
}

/// The same kill, but the batch the lost reply created has not ended when the job is resumed:
/// the resume settles it the way `rlm batch` does (one way for every path): it says that the
/// batch may be it and waits for it, a Ctrl-C stops that wait at once (sending nothing, the
/// submission held for the next resume), and the next resume, once the batch has ended,
/// collects it.
#[test]
fn a_job_resume_waits_for_a_lost_submissions_running_batch_and_stops_at_once_on_ctrl_c() {
    use crate::job::{fast as job_fast, job_id, job_project, map_requests, only_job};
    use crate::support::mock_llm::batch::SubmitFault;
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::Held);
    mock.batch_submit_faults(vec![SubmitFault::HangAfterCreate]);
    let p = job_project(6, 2, &[], "");
    killed_once_its_batch_is_created(&p, &mock);
    let id = job_id(&only_job(&p));

    let resumed = job_fast(p.rlm(&["job", "resume", &id])).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || mock.batch_polls() >= 3),
        "the resume polls the batch that may be its submission's"
    );
    let out = stops_at_once_on_ctrl_c(resumed);
    assert!(
        out.stderr.contains("may be it and has not ended: rlm waits for it")
            && out.stderr.contains(&format!("`rlm job resume {id}` looks again")),
        "{}",
        out.stderr
    );
    assert_eq!(mock.batch_submissions(), 1, "nothing sent again: {}", out.stderr);
    assert!(map_requests(&mock).is_empty(), "nothing paid in real time");

    mock.set_batch_progress(BatchProgress::AfterPolls(1));
    let done = job_fast(p.rlm(&["job", "resume", &id])).run();
    done.assert_exit(0);
    assert!(done.stderr.contains("was found at"), "{}", done.stderr);
    all_answered_by_one_batch(&mock, &p, 6);
}

/// A batch's results read the one way on every path: a download that fails for a while is
/// tried again, a line that is not JSON is skipped, and every answer is kept once, with
/// nothing paid again in real time (the job path used to fail on either).
#[test]
fn batch_results_that_fail_to_download_or_hold_a_bad_line_are_read_again_on_every_path() {
    use crate::job::{fast as job_fast, job_args, job_project};
    use crate::support::mock_llm::batch::ResultsFault;
    let faults = || vec![ResultsFault::Unavailable, ResultsFault::MalformedLine];

    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::AfterPolls(1));
    mock.batch_results_faults(faults());
    let p = ts_project(6);
    let out = fast(&p, &batch_in(&mock.url(), "out", &["--batch-api", "--json"])).run();
    out.assert_exit(0);
    assert_eq!(out.json()["succeeded"], 6, "{}", out.stderr);
    assert_eq!(mock.batch_result_fetches(), 2, "read again once");
    assert_eq!(mock.requests(), 0, "nothing paid in real time");

    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::AfterPolls(1));
    mock.batch_results_faults(faults());
    let p = job_project(6, 2, &[], "");
    let out = job_fast(p.rlm(&job_args(&mock.url(), &["--batch-api", "--yes", "--json"]))).run();
    out.assert_exit(0);
    assert_eq!(out.json()["status"], "SUCCESS", "{}", out.stderr);
    assert_eq!(mock.batch_result_fetches(), 2, "read again once");
    all_answered_by_one_batch(&mock, &p, 6);
}

/// Results that cannot be read now stop a job without paying for them again in real time;
/// they stay at the provider, and `rlm job resume` reads them.
#[test]
fn a_job_whose_batch_results_cannot_be_read_now_stops_and_its_resume_reads_them() {
    use crate::job::{fast as job_fast, job_args, job_id, job_project, map_requests, only_job};
    use crate::support::mock_llm::batch::ResultsFault;
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::AfterPolls(1));
    mock.batch_results_faults(vec![ResultsFault::Unavailable; 3]);
    let p = job_project(6, 2, &[], "");
    let out = job_fast(p.rlm(&job_args(&mock.url(), &["--batch-api", "--yes"]))).run();
    out.assert_exit(3);
    assert!(
        out.stderr.contains("cannot be read now") && out.stderr.contains("rlm job resume"),
        "{}",
        out.stderr
    );
    assert!(map_requests(&mock).is_empty(), "nothing paid in real time");
    assert_eq!(mock.batch_result_fetches(), 3, "tried three times: {}", out.stderr);
    let id = job_id(&only_job(&p));
    let resumed = job_fast(p.rlm(&["job", "resume", &id])).run();
    resumed.assert_exit(0);
    all_answered_by_one_batch(&mock, &p, 6);
}

/// A job's batch create request that fails is handled as `rlm batch` handles it: a server
/// error that created nothing is sent again (within `--retries`), and a reply lost after the
/// batch was created — the batch still running, so the listing cannot tell at once — is
/// settled by waiting for that batch, which is then collected: never a second batch, never
/// a realtime call, and the job does not fail.
#[test]
fn a_jobs_failed_batch_create_is_sent_again_or_its_batch_found_as_rlm_batch_does() {
    use crate::job::{fast as job_fast, job_args, job_project, map_requests, only_job};
    use crate::support::mock_llm::batch::SubmitFault;
    for (fault, said) in [
        (SubmitFault::ServerErrorBeforeCreate, "its requests are submitted again"),
        (
            SubmitFault::ResetAfterCreate,
            "may be it and has not ended: rlm waits for it",
        ),
    ] {
        let mock = MockLlm::start();
        mock.set_batch_progress(BatchProgress::AfterPolls(3));
        mock.batch_submit_faults(vec![fault]);
        let p = job_project(6, 2, &[], "");
        let out = job_fast(p.rlm(&job_args(&mock.url(), &["--batch-api", "--yes", "--json"]))).run();
        out.assert_exit(0);
        assert_eq!(out.json()["status"], "SUCCESS", "{fault:?}: {}", out.stderr);
        assert_eq!(mock.batch_submissions(), 1, "{fault:?}: {}", out.stderr);
        assert!(out.stderr.contains(said), "{fault:?}: {}", out.stderr);
        assert!(map_requests(&mock).is_empty(), "{fault:?}: nothing paid in real time");
        let record = read_json(&only_job(&p).join("job.json"));
        assert_eq!(record["phases"][0]["items_done"], 6, "{fault:?}: {record}");
    }
}

/// Scenario 6 on the job path: `rlm job --batch-api --max-cost` sends only the map requests
/// whose batch fits the budget at its worst; the job stops BUDGET_EXCEEDED and a resume with
/// more sends the rest, once.
#[test]
fn max_cost_bounds_a_jobs_batch_and_a_resume_with_more_sends_the_rest_once() {
    use crate::job::{fast as job_fast, job_args, job_id, job_project, map_requests, only_job};
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::AfterPolls(1));
    let p = job_project(12, 1, &[], "");
    let out = job_fast(p.rlm(&job_args(
        &mock.url(),
        &["--batch-api", "--yes", "--max-cost", "0.3", "--json"],
    )))
    .run();
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(doc["status"], "BUDGET_EXCEEDED", "{doc}\n{}", out.stderr);
    let sent: usize = mock.batch_sizes().iter().sum();
    assert!(
        sent > 0 && sent < 12,
        "only what fits was submitted: {:?}",
        mock.batch_sizes()
    );
    assert!(map_requests(&mock).is_empty(), "nothing went realtime instead");
    let dir = only_job(&p);
    let record = read_json(&dir.join("job.json"));
    assert!(record["phases"][0]["cost_usd"].as_f64().unwrap() <= 0.3, "{record}");
    assert!(out.stderr.contains("--max-cost"), "{}", out.stderr);

    let resumed = job_fast(p.rlm(&["job", "resume", &job_id(&dir), "--max-cost", "50", "--json"])).run();
    resumed.assert_exit(0);
    assert_eq!(mock.batch_sizes().iter().sum::<usize>(), 12, "nothing was sent twice");
    assert!(map_requests(&mock).is_empty());
}

/// A batch answer the check rejects was paid for, and counts even when the job stops
/// before its realtime re-ask (here for `--max-cost`): the job's calls and cost hold it, and
/// the resume asks it again.
#[test]
fn a_rejected_batch_answer_counts_when_the_job_stops_before_asking_it_again() {
    use crate::job::{fast as job_fast, job_args, job_id, job_project, map_requests, only_job};
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::AfterPolls(1));
    let hints = vec![(1, first_attempt_hint(&serde_json::json!({"kind": "bogus"})))];
    let p = job_project(12, 1, &hints, "");
    let out = job_fast(p.rlm(&job_args(
        &mock.url(),
        &["--batch-api", "--yes", "--max-cost", "0.3", "--json"],
    )))
    .run();
    out.assert_exit(1);
    assert_eq!(out.json()["status"], "BUDGET_EXCEEDED", "{}", out.stderr);
    let sent: usize = mock.batch_sizes().iter().sum();
    assert!((2..12).contains(&sent), "{:?}", mock.batch_sizes());
    assert!(map_requests(&mock).is_empty(), "the re-ask waits for the resume");
    let dir = only_job(&p);
    assert!(
        out.stderr.contains(&format!(
            "`rlm job resume {} --max-cost USD` with a higher budget",
            job_id(&dir)
        )),
        "{}",
        out.stderr
    );
    let record = read_json(&dir.join("job.json"));
    assert_eq!(
        record["phases"][0]["calls"].as_u64(),
        Some(sent as u64),
        "every batch request sent is counted, the rejected one too: {record}"
    );

    let resumed = job_fast(p.rlm(&["job", "resume", &job_id(&dir), "--max-cost", "50", "--json"])).run();
    resumed.assert_exit(0);
    // The rejected request is asked again (in the resume's batch, then with its errors in
    // real time); no other request is sent twice, and every request sent is counted.
    assert_eq!(mock.batch_sizes().iter().sum::<usize>(), 13, "{:?}", mock.batch_sizes());
    let record = read_json(&dir.join("job.json"));
    assert_eq!(record["phases"][0]["items_done"], 12, "{record}");
    assert_eq!(
        record["phases"][0]["calls"].as_u64(),
        Some(13 + map_requests(&mock).len() as u64),
        "{record}\n{}",
        resumed.stderr
    );
}

/// Scenario 1 on the job path: two `rlm job run --batch-api` of one job file at once pay
/// for each map request once: the second job finds the first one's batch holding its keys
/// and waits for its answers.
#[test]
fn two_batch_jobs_of_one_job_file_at_once_pay_once() {
    use crate::job::{fast as job_fast, job_args, job_project, jobs, map_requests};
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::AfterPolls(25));
    let p = job_project(8, 4, &[], "");
    let url = mock.url();
    let a = job_fast(p.rlm(&job_args(&url, &["--batch-api", "--yes"]))).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || mock.batch_submissions() == 1),
        "the first job submits its batch"
    );
    let b = job_fast(p.rlm(&job_args(&url, &["--batch-api", "--yes", "--json"]))).spawn();
    a.wait().assert_exit(0);
    let second = b.wait();
    second.assert_exit(0);
    assert_eq!(mock.batch_sizes(), [2], "one batch of two requests: {}", second.stderr);
    assert!(map_requests(&mock).is_empty(), "nothing paid in real time");
    for dir in jobs(&p) {
        let record = read_json(&dir.join("job.json"));
        assert_eq!(record["phases"][0]["items_done"], 8, "{record}");
    }
}

/// Scenario 2 on the job path: a realtime `rlm job run` and a `--batch-api` one of the same
/// job file at once, both ways round: each map request is paid once, whichever job pays for
/// it (the batch job's stage waits for the realtime job's calls in flight, and the realtime
/// job's workers for the batch).
#[test]
fn a_realtime_job_and_a_batch_job_of_one_job_file_at_once_pay_once() {
    use crate::job::{fast as job_fast, job_args, job_project, jobs, map_requests};
    // The batch job first.
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::AfterTime(Duration::from_millis(1500)));
    let p = job_project(12, 4, &[], "");
    let url = mock.url();
    let batch = job_fast(p.rlm(&job_args(&url, &["--batch-api", "--yes"]))).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || mock.batch_submissions() >= 1),
        "the batch job submits"
    );
    let realtime = job_fast(p.rlm(&job_args(&url, &["--yes"]))).spawn();
    batch.wait().assert_exit(0);
    let rt = realtime.wait();
    rt.assert_exit(0);
    assert_eq!(mock.batch_sizes(), [3], "{}", rt.stderr);
    assert!(map_requests(&mock).is_empty(), "the realtime job waited: {}", rt.stderr);
    for dir in jobs(&p) {
        let record = read_json(&dir.join("job.json"));
        assert_eq!(record["phases"][0]["items_done"], 12, "{record}");
    }

    // The realtime job first: its calls in flight are waited for, not submitted again.
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(600));
    let p = job_project(12, 4, &[], "");
    let url = mock.url();
    let realtime = job_fast(p.rlm(&job_args(&url, &["--yes", "-j", "3"]))).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || mock.requests() >= 3),
        "the realtime job calls"
    );
    let batch = job_fast(p.rlm(&job_args(&url, &["--batch-api", "--yes"]))).spawn();
    realtime.wait().assert_exit(0);
    let b = batch.wait();
    b.assert_exit(0);
    let batched: usize = mock.batch_sizes().iter().sum();
    assert_eq!(
        map_requests(&mock).len() + batched,
        3,
        "each paid once: {} realtime, batches {:?}: {}",
        map_requests(&mock).len(),
        mock.batch_sizes(),
        b.stderr
    );
    for dir in jobs(&p) {
        let record = read_json(&dir.join("job.json"));
        assert_eq!(record["phases"][0]["items_done"], 12, "{record}");
    }
}

/// While a job waits for its provider batch, `rlm job status` shows the phase's batches and
/// items (it showed 0/0 until the first answer came).
#[test]
fn job_status_shows_the_phase_while_its_provider_batch_waits() {
    use crate::job::{fast as job_fast, job_args, job_id, job_project, jobs};
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::Held);
    let p = job_project(8, 4, &[], "");
    let running = job_fast(p.rlm(&job_args(&mock.url(), &["--batch-api", "--yes"]))).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || mock.batch_polls() >= 1),
        "the job waits for its batch"
    );
    let status = p.rlm(&["job", "status", &job_id(&jobs(&p)[0])]).run();
    running.signal("KILL");
    let _ = running.wait();
    status.assert_exit(0);
    assert!(status.stdout.contains("batches 0/2"), "{}", status.stdout);
    assert!(status.stdout.contains("items 0/8"), "{}", status.stdout);
}

/// `--deadline` while a job waits for its provider batch ends the wait, as it ends a batch
/// run's: the batch keeps running at the provider, the job says how to collect it and ends
/// DEADLINE_EXCEEDED, and its resume collects the batch without sending it again.
#[test]
fn a_deadline_while_a_job_waits_for_its_batch_leaves_it_running_and_the_resume_collects_it() {
    use crate::job::{batch_outputs, fast as job_fast, job_args, job_id, job_project, map_requests, only_job};
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::Held);
    let p = job_project(8, 4, &[], "");
    let url = mock.url();
    let out = job_fast(p.rlm(&job_args(&url, &["--batch-api", "--deadline", "1s", "--yes", "--json"]))).run();
    out.assert_exit(130);
    assert_eq!(out.json()["status"], "DEADLINE_EXCEEDED", "{}", out.stderr);
    let id = job_id(&only_job(&p));
    assert!(
        out.stderr
            .contains(&format!("the --deadline passed while waiting: the batch keeps running at the provider; `rlm job resume {id}` collects it")),
        "{}",
        out.stderr
    );
    assert_eq!(mock.batch_submissions(), 1);

    mock.set_batch_progress(BatchProgress::AfterPolls(0));
    let resumed = job_fast(p.rlm(&["job", "resume", &id])).run();
    resumed.assert_exit(0);
    assert_eq!(
        mock.batch_submissions(),
        1,
        "collected, not sent again: {}",
        resumed.stderr
    );
    assert!(map_requests(&mock).is_empty(), "nothing paid in real time");
    assert_eq!(batch_outputs(&only_job(&p), "classify").len(), 2);
}

/// A job's batch is collected only at the server it was sent to, as a batch run's is: a
/// resume pointed at another server is refused before anything is sent, says where the
/// batch waits, and offers `rlm cancel` (a job's batches are never forgotten).
#[test]
fn a_job_resume_pointed_at_another_server_is_refused_before_anything_is_sent() {
    use crate::job::{fast as job_fast, job_id, job_project, jobs};
    let first = MockLlm::start();
    first.set_batch_progress(BatchProgress::Held);
    let other = MockLlm::start();
    let p = job_project(8, 4, &[], "");
    let first_url = first.url();
    killed_once_its_batch_is_recorded(&p, &first_url, Some(&first));
    let id = job_id(&jobs(&p)[0]);
    let calls = first.batch_calls();
    let out = job_fast(p.rlm(&["job", "resume", &id, "--base-url", &other.url()])).run();
    out.assert_exit(2);
    let said = format!(
        "batch msgbatch_mock_1 waits at {first_url}, but the settings now point at {}",
        other.url()
    );
    assert!(out.stderr.contains(&said), "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!("`rlm cancel {id}` cancels it there")),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("--forget"), "{}", out.stderr);
    assert_eq!(other.batch_calls() + other.requests(), 0, "nothing was sent there");
    assert_eq!(first.batch_calls(), calls, "nor to the first");

    // Pointed back, the resume collects it: nothing is sent twice.
    first.set_batch_progress(BatchProgress::AfterPolls(0));
    let resumed = job_fast(p.rlm(&["job", "resume", &id, "--base-url", &first_url])).run();
    resumed.assert_exit(0);
    assert_eq!(first.batch_submissions(), 1, "{}", resumed.stderr);
}

/// Scenario 3 on the job path: `rlm job run --batch-api` killed while it waits for its
/// batch, then the same command run again (a new job, not `rlm job resume`): the new job
/// collects the first one's batch, pays nothing more, and reports its cost once.
#[test]
fn a_batch_job_run_again_after_a_kill_collects_the_first_batch_and_pays_nothing_more() {
    use crate::job::{fast as job_fast, job_args, job_project, jobs, map_requests};
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::AfterPolls(50));
    let p = job_project(8, 4, &[], "");
    let url = mock.url();
    // Killed once its batch is recorded (killed before, its submission's reply is lost: the
    // new job leaves it to `rlm job resume` of the first, which looks for it).
    killed_once_its_batch_is_recorded(&p, &url, None);
    let again = job_fast(p.rlm(&job_args(&url, &["--batch-api", "--yes", "--json"]))).run();
    again.assert_exit(0);
    assert_eq!(
        mock.batch_submissions(),
        1,
        "collected, not sent again: {}",
        again.stderr
    );
    assert!(map_requests(&mock).is_empty(), "nothing paid in real time");
    assert!(again.stderr.contains("whose rlm is gone"), "{}", again.stderr);
    let dirs = jobs(&p);
    let record = read_json(&dirs[1].join("job.json"));
    assert_eq!(record["phases"][0]["items_done"], 8, "{record}");
    assert!(
        record["phases"][0]["cost_usd"].as_f64().unwrap() > 0.0,
        "the batch's cost is reported by the job that collected it: {record}"
    );
}

/// A job that waits for another job's provider batch (its keys held there) stops at once on
/// Ctrl-C, paying nothing: the wait is for an answer, not for a slot.
#[test]
fn a_job_waiting_for_another_jobs_batch_stops_at_once_on_ctrl_c() {
    use crate::job::{fast as job_fast, job_args, job_project, map_requests};
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::Held);
    let p = job_project(4, 2, &[], "");
    let url = mock.url();
    let first = job_fast(p.rlm(&job_args(&url, &["--batch-api", "--yes"]))).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || mock.batch_submissions() == 1),
        "the first job submits its batch"
    );
    let second = job_fast(p.rlm(&job_args(&url, &["--batch-api", "--yes"]))).spawn();
    std::thread::sleep(Duration::from_millis(800));
    stops_at_once_on_ctrl_c(second);
    first.signal("INT");
    let _ = first.wait();
    assert_eq!(mock.batch_submissions(), 1, "the second job sent nothing");
    // Its batch is still at the provider, and no rlm waits for it: `rlm cancel` cancels it
    // there, and says what collects what it had finished.
    let first_id = crate::job::job_id(&crate::job::jobs(&p)[0]);
    let cancel = p.rlm(&["cancel", &first_id]).run();
    cancel.assert_exit(0);
    assert_eq!(mock.batch_cancels(), 1, "{}", cancel.stderr);
    assert!(
        cancel.stderr.contains(&format!("rlm job resume {first_id}")),
        "{}",
        cancel.stderr
    );
    assert!(map_requests(&mock).is_empty(), "nothing paid in real time");
}

/// `rlm cancel` of a job whose provider batch runs: the batch is canceled at the provider;
/// the job, waiting for it, keeps what had finished and stops, paying nothing in real time
/// for what was canceled; `rlm job resume` sends the rest again, through the batch API, and
/// nothing is paid twice.
#[test]
fn rlm_cancel_of_a_running_batch_job_cancels_its_batch_and_the_job_stops_without_paying_in_real_time() {
    use crate::job::{fast as job_fast, job_args, job_id, job_project, jobs, map_requests};
    let mock = MockLlm::start();
    // The first of its two requests is answered; the other runs until it is canceled.
    mock.set_batch_progress(BatchProgress::HeldAfter(1));
    let p = job_project(8, 4, &[], "");
    let url = mock.url();
    let job = job_fast(p.rlm(&job_args(&url, &["--batch-api", "--yes"]))).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || first_job_batch_recorded(&p)),
        "the job records its batch"
    );
    let id = job_id(&jobs(&p)[0]);
    let cancel = p.rlm(&["cancel", &id, "--json"]).run();
    cancel.assert_exit(0);
    assert!(
        cancel.stderr.contains("1 of its 1 provider batch canceled"),
        "{}",
        cancel.stderr
    );
    assert_eq!(mock.batch_cancels(), 1);
    let doc = cancel.json();
    assert_eq!(doc["job_id"], id.as_str(), "{doc}");
    assert_eq!(doc["canceled"], 1, "{doc}");
    assert_eq!(doc["batches"][0]["outcome"], "canceled", "{doc}");
    assert_eq!(doc["exit_code"], 0, "{doc}");
    let out = job.wait();
    assert_eq!(out.status, 130, "stopped, resumable: {}", out.stderr);
    assert!(
        out.stderr.contains("canceled at the provider before it ran"),
        "{}",
        out.stderr
    );
    assert!(
        map_requests(&mock).is_empty(),
        "nothing paid in real time: {}",
        out.stderr
    );
    let record = read_json(&jobs(&p)[0].join("job.json"));
    assert_eq!(
        record["phases"][0]["items_done"], 4,
        "what had finished is kept: {record}"
    );

    resume_sends_only_the_canceled_request(&p, &mock, &id);
}

/// Whether the project's first job has a provider batch in the run store (`rlm status`).
fn first_job_batch_recorded(p: &Project) -> bool {
    crate::job::jobs(p).first().is_some_and(|dir| {
        let status = p.rlm(&["status", &crate::job::job_id(dir), "--json"]).run();
        status.status == 0 && status.json()["batches"].as_array().is_some_and(|b| !b.is_empty())
    })
}

/// `rlm cancel` of a job whose rlm is gone (killed while it waited for its batch): the batch
/// is canceled at the provider; `rlm job resume` collects what it had finished, sends only
/// the rest again (through the batch API), and calls nothing in real time.
#[test]
fn a_killed_batch_job_canceled_then_resumed_keeps_what_finished_and_sends_only_the_rest() {
    use crate::job::{job_id, job_project, jobs};
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::HeldAfter(1));
    let p = job_project(8, 4, &[], "");
    let url = mock.url();
    killed_once_its_batch_is_recorded(&p, &url, Some(&mock));
    let id = job_id(&jobs(&p)[0]);
    let cancel = p.rlm(&["cancel", &id]).run();
    cancel.assert_exit(0);
    assert_eq!(mock.batch_cancels(), 1, "{}", cancel.stderr);

    resume_sends_only_the_canceled_request(&p, &mock, &id);
}

/// `rlm job resume JOB` of a job of 8 items in two requests whose first batch answered one
/// request and had the other canceled: the canceled request alone is sent again, through the
/// batch API, nothing in real time, and every item is done.
fn resume_sends_only_the_canceled_request(p: &Project, mock: &MockLlm, id: &str) {
    use crate::job::{fast as job_fast, jobs, map_requests};
    mock.set_batch_progress(BatchProgress::AfterPolls(0));
    let resumed = job_fast(p.rlm(&["job", "resume", id, "--json"])).run();
    resumed.assert_exit(0);
    assert_eq!(
        mock.batch_sizes(),
        [2, 1],
        "the canceled request alone is sent again: {}",
        resumed.stderr
    );
    assert!(
        map_requests(mock).is_empty(),
        "nothing paid in real time: {}",
        resumed.stderr
    );
    let record = read_json(&jobs(p)[0].join("job.json"));
    assert_eq!(record["phases"][0]["items_done"], 8, "{record}");
}

/// The job in `p` answered all its `items` from one provider batch: one submission, no
/// map call in real time.
fn all_answered_by_one_batch(mock: &MockLlm, p: &Project, items: usize) {
    assert_eq!(mock.batch_submissions(), 1, "one batch, never sent again");
    assert!(crate::job::map_requests(mock).is_empty(), "nothing paid in real time");
    let record = read_json(&crate::job::only_job(p).join("job.json"));
    assert_eq!(record["phases"][0]["items_done"], items, "{record}");
}

/// Runs the job in `p` with `--batch-api` and kills it (-9) once the mock has created its
/// batch, whose reply (the mock's fault says) never comes.
fn killed_once_its_batch_is_created(p: &Project, mock: &MockLlm) {
    use crate::job::{fast as job_fast, job_args};
    let running = job_fast(p.rlm(&job_args(&mock.url(), &["--batch-api", "--yes"]))).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || mock.batch_submissions() == 1),
        "the batch is created"
    );
    running.signal("KILL");
    let _ = running.wait();
}

/// `rlm job --batch-api` against a server that has no batch API: the job stops before
/// paying for anything and says what to do on the job's own command line (`--batch-api
/// off`), not `rlm batch`'s `--batch-api auto`, which a job does not take.
#[test]
fn a_batch_job_against_a_server_without_a_batch_api_says_to_turn_it_off() {
    use crate::job::{fast as job_fast, job_args, job_project, map_requests};
    let mock = MockLlm::start();
    mock.disable_batch_api(Some(404));
    let p = job_project(4, 2, &[], "");
    let out = job_fast(p.rlm(&job_args(&mock.url(), &["--batch-api", "--yes"]))).run();
    out.assert_exit(2);
    assert!(out.stderr.contains("has no batch API"), "{}", out.stderr);
    assert!(out.stderr.contains("--batch-api off"), "{}", out.stderr);
    assert!(!out.stderr.contains("--batch-api auto"), "{}", out.stderr);
    assert!(map_requests(&mock).is_empty(), "nothing paid");
    // What it says works: the job goes on in real time.
    let id = crate::job::job_id(&crate::job::only_job(&p));
    let resumed = job_fast(p.rlm(&["job", "resume", &id, "--batch-api", "off"])).run();
    resumed.assert_exit(0);
    assert_eq!(map_requests(&mock).len(), 2, "two batches of items, in real time");
}

/// Runs the job in `p` with `--batch-api` against `url` and kills it (-9) once its batch
/// is recorded in the run store (and, given the mock, once the batch was polled).
fn killed_once_its_batch_is_recorded(p: &Project, url: &str, polled: Option<&MockLlm>) {
    use crate::job::{fast as job_fast, job_args};
    let running = job_fast(p.rlm(&job_args(url, &["--batch-api", "--yes"]))).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || first_job_batch_recorded(p)
            && polled.is_none_or(|m| m.batch_polls() >= 1)),
        "the job records its batch"
    );
    running.signal("KILL");
    let _ = running.wait();
}

//! `rlm resume` takes up only what is still the run's (issue 17): a run whose output
//! directory a later run took over is superseded, never resumed over the later run's
//! results; the default pick skips it and names a run still going on instead of saying
//! there is nothing; a credentialed base URL, never recorded, must be given again.
#![cfg(unix)]

use std::collections::BTreeMap;
use std::time::Duration;

use crate::support::mock_llm::*;
use crate::support::*;
use serde_json::Value;

fn run_in<'a>(url: &'a str, prompt: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "batch",
        "src/*.ts",
        prompt,
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

fn results_in_out(p: &Project) -> usize {
    let dir = p.path().join("out");
    if !dir.is_dir() {
        return 0;
    }
    file_names(&dir).iter().filter(|n| n.ends_with(".result.md")).count()
}

/// Every file of `out/` with its bytes (the lock file aside: it holds a pid).
fn snapshot(p: &Project) -> BTreeMap<String, Vec<u8>> {
    files_under(&p.path().join("out"))
        .into_iter()
        .filter(|f| !f.ends_with(".rlm-lock"))
        .map(|f| {
            let bytes = std::fs::read(&f).unwrap();
            (f.display().to_string(), bytes)
        })
        .collect()
}

fn status_of(p: &Project, run: &str) -> Value {
    let out = p.rlm(&["status", run, "--json"]).run();
    out.assert_exit(0);
    out.json()
}

/// Run A stops half-way in `out/`; run B, another prompt, then succeeds there. A is
/// superseded: `rlm resume` (named or not) refuses, naming B, and B's outputs stay as they
/// were, byte for byte.
#[test]
fn a_run_whose_directory_a_later_run_took_over_is_not_resumed_over_it() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(200));
    let p = Project::new().ts_files(10);
    let url = mock.url();
    let a = p.rlm(&run_in(&url, "List {file}", &["-j", "1"])).spawn();
    assert!(wait_until(Duration::from_secs(20), || results_in_out(&p) >= 2));
    a.signal("TERM");
    a.wait().assert_exit(130);
    let a_id = p.report()["run_id"].as_str().unwrap().to_string();
    assert_eq!(status_of(&p, &a_id)["status"], "INTERRUPTED");

    mock.set_latency(Duration::ZERO);
    p.rlm(&run_in(&url, "Summarize {file}", &[])).run().assert_exit(0);
    let report = p.report();
    let b_id = report["run_id"].as_str().unwrap().to_string();
    assert_ne!(a_id, b_id);
    assert_eq!(report["succeeded"], 10);
    let b_outputs = snapshot(&p);
    let sent = mock.requests();

    // The store says so, in status and list.
    let a_status = status_of(&p, &a_id);
    assert_eq!(a_status["status"], "SUPERSEDED", "{a_status}");
    assert_eq!(a_status["superseded_by"], b_id.as_str(), "{a_status}");
    let text = p.rlm(&["status", &a_id]).run().stdout;
    assert!(
        text.contains(&format!("run {b_id} took over its output directory")),
        "{text}"
    );
    let list = p.rlm(&["list"]).run().stdout;
    assert!(
        list.lines().any(|l| l.starts_with(&a_id) && l.contains("SUPERSEDED")),
        "{list}"
    );

    // Nothing to resume by default; named, it is refused and B's run is named.
    let picked = p.rlm(&["resume", "--yes"]).run();
    picked.assert_exit(2);
    assert!(picked.stderr.contains("no unfinished run"), "{}", picked.stderr);
    let named = p.rlm(&["resume", &a_id, "--yes"]).run();
    named.assert_exit(2);
    assert!(
        named
            .stderr
            .contains(&format!("run `{b_id}` took over its output directory")),
        "{}",
        named.stderr
    );
    assert_eq!(mock.requests(), sent, "nothing was sent");
    assert_eq!(snapshot(&p), b_outputs, "B's outputs are untouched");
    assert_eq!(status_of(&p, &b_id)["status"], "SUCCESS");

    // A store that did not learn of the takeover (an rlm of an older schema took the
    // directory, say): the directory's own marker still refuses it.
    let store = rusqlite::Connection::open(p.path().join(".aiwg/rlm/store.sqlite3")).unwrap();
    store
        .execute("UPDATE runs SET status = 'INTERRUPTED' WHERE id = ?1", [&a_id])
        .unwrap();
    store.execute("DELETE FROM superseded_runs", []).unwrap();
    drop(store);
    let marked = p.rlm(&["resume", "--yes"]).run();
    marked.assert_exit(2);
    assert!(
        marked.stderr.contains(&format!("now holds run {b_id}")),
        "{}",
        marked.stderr
    );
    assert_eq!(mock.requests(), sent, "nothing was sent");
    assert_eq!(snapshot(&p), b_outputs, "B's outputs are untouched");
}

/// When the only unfinished run here is still going on, `rlm resume` says so with its pid;
/// an interrupted run that shares its `-o` is superseded, not "still running".
#[test]
fn resume_names_the_run_still_going_on_and_never_calls_a_stopped_one_running() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(200));
    let p = Project::new().ts_files(8);
    let url = mock.url();
    let a = p.rlm(&run_in(&url, "List {file}", &["-j", "1"])).spawn();
    assert!(wait_until(Duration::from_secs(20), || results_in_out(&p) >= 1));
    a.signal("TERM");
    a.wait().assert_exit(130);
    let a_id = p.report()["run_id"].as_str().unwrap().to_string();

    // B works in the same directory, slowly.
    mock.set_latency(Duration::from_millis(500));
    let b = p.rlm(&run_in(&url, "Summarize {file}", &["-j", "1"])).spawn();
    let b_running = || {
        let out = p.rlm(&["list", "--json"]).run();
        let runs: Value = out.json();
        runs.as_array().is_some_and(|r| {
            r.iter()
                .any(|r| r["id"] != a_id.as_str() && r["display_status"] == "RUNNING")
        })
    };
    assert!(wait_until(Duration::from_secs(20), b_running));
    let resume = p.rlm(&["resume", "--yes"]).run();
    resume.assert_exit(2);
    assert!(
        resume
            .stderr
            .contains(&format!("still running in rlm process {}", b.pid())),
        "{}",
        resume.stderr
    );
    assert!(
        !resume.stderr.contains(&format!("run {a_id} is still running")),
        "{}",
        resume.stderr
    );
    let named = p.rlm(&["resume", &a_id, "--yes"]).run();
    named.assert_exit(2);
    assert!(
        named.stderr.contains("took over its output directory"),
        "{}",
        named.stderr
    );
    assert!(!named.stderr.contains("is still running"), "{}", named.stderr);
    mock.set_latency(Duration::ZERO);
    b.wait().assert_exit(0);
}

/// A run started with `http://user:pass@host` records the URL without its password:
/// `rlm resume` refuses before sending anything until the URL is given again, and then
/// sends the real credentials — never `***`.
#[test]
fn resume_of_a_run_with_a_credentialed_base_url_needs_the_url_again() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(200));
    let p = Project::new().ts_files(8);
    let credentialed = mock.url().replacen("http://", "http://alice:gw-secret-pass@", 1);
    let a = p
        .rlm(&run_in(
            &credentialed,
            "List {file}",
            &["-j", "1", "--provider", "anthropic"],
        ))
        .spawn();
    assert!(wait_until(Duration::from_secs(20), || results_in_out(&p) >= 2));
    a.signal("TERM");
    a.wait().assert_exit(130);
    let id = p.report()["run_id"].as_str().unwrap().to_string();
    let sent = mock.requests();

    let refused = p.rlm(&["resume", "--yes"]).run();
    refused.assert_exit(2);
    assert!(refused.stderr.contains("pass --base-url again"), "{}", refused.stderr);
    assert_eq!(mock.requests(), sent, "nothing was sent");
    let json = p.rlm(&["resume", "--yes", "--json"]).run();
    json.assert_exit(2);
    assert_eq!(json.json()["error"]["kind"], "usage", "{}", json.stdout);

    mock.set_latency(Duration::ZERO);
    p.rlm(&["resume", &id, "--yes", "--base-url", &credentialed])
        .run()
        .assert_exit(0);
    assert_eq!(p.report()["succeeded"], 8);
    let expected = format!("Basic {}", base64("alice:gw-secret-pass"));
    let auth: Vec<Option<String>> = mock
        .recorded()
        .iter()
        .map(|r| r.header("authorization").map(str::to_string))
        .collect();
    assert!(auth.len() > sent, "the resume sent the rest");
    assert!(
        auth.iter().all(|a| a.as_deref() == Some(expected.as_str())),
        "every request carries the real credentials: {auth:?}"
    );
    for f in p.all_files() {
        let bytes = std::fs::read(&f).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("gw-secret-pass"),
            "{} holds the password",
            f.display()
        );
    }
}

/// Standard base64 with padding (enough for a Basic header).
fn base64(text: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = text.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A run started with `--no-cache` stops half-way; `rlm resume` replays its arguments, and
/// still never pays again for the units the run completed: their answers are the run's own
/// (`--no-cache` kept it from reading other runs' answers, not its own).
#[test]
fn resume_of_a_no_cache_run_pays_only_for_what_it_did_not_complete() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(200));
    let p = Project::new().ts_files(8);
    let url = mock.url();
    let a = p.rlm(&run_in(&url, "List {file}", &["-j", "1", "--no-cache"])).spawn();
    assert!(wait_until(Duration::from_secs(20), || results_in_out(&p) >= 3));
    a.signal("TERM");
    a.wait().assert_exit(130);
    let report = p.report();
    let done = report["succeeded"].as_u64().unwrap();
    let left = report["not_run"].as_array().unwrap().len() as u64;
    assert_eq!(done + left, 8, "{report:#}");
    let md = p.read("out/report.md");
    let run = report["run_id"].as_str().unwrap();
    let said = if left == 1 {
        format!("1 unit was not run before the run stopped (`rlm resume {run}` runs it):")
    } else {
        format!("{left} units were not run before the run stopped (`rlm resume {run}` runs them):")
    };
    assert!(md.contains(&said), "{md}");
    assert!(
        md.contains(&format!(" skipped, {left} not run.")),
        "the summary counts them: {md}"
    );
    for label in report["not_run"].as_array().unwrap() {
        assert!(md.contains(&format!("- {}\n", label.as_str().unwrap())), "{md}");
    }
    let sent = mock.requests() as u64;

    mock.set_latency(Duration::ZERO);
    let resumed = p.rlm(&["resume", "--yes"]).run();
    resumed.assert_exit(0);
    let report = p.report();
    assert_eq!(report["status"], "SUCCESS", "{}", resumed.stderr);
    assert_eq!(report["succeeded"], 8);
    // The calls of the first attempt that were in flight at the interrupt are asked again;
    // the completed units are not.
    assert_eq!(mock.requests() as u64 - sent, left, "only the units left were sent");
    assert_eq!(report["earlier_answers"], done, "{report:#}");
}

/// A unit that failed stays failed across a plain `rlm resume` (which does not ask it
/// again): report.json and report.md say so, as the store does — not "not run".
#[test]
fn a_plain_resume_reports_the_earlier_attempts_failures_as_failed() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(200));
    mock.fault_when("f01.ts", vec![Fault::Status(413, "too large".into()); 10]);
    let p = Project::new().ts_files(8);
    let url = mock.url();
    let a = p.rlm(&run_in(&url, "List {file}", &["-j", "1"])).spawn();
    assert!(wait_until(Duration::from_secs(20), || results_in_out(&p) >= 3));
    a.signal("TERM");
    a.wait().assert_exit(130);
    let first = p.report();
    assert_eq!(first["failed"].as_array().unwrap().len(), 1, "{first:#}");

    mock.set_latency(Duration::ZERO);
    let resumed = p.rlm(&["resume", "--yes"]).run();
    resumed.assert_exit(1);
    let report = p.report();
    assert_eq!(report["status"], "PARTIAL", "{report:#}");
    assert_eq!(report["not_run"], serde_json::json!([]), "{report:#}");
    let failed = report["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{report:#}");
    assert_eq!(failed[0]["path"], "src/f01.ts");
    assert!(
        failed[0]["reason"].as_str().unwrap().contains("rlm resume --failed"),
        "{report:#}"
    );
    assert!(p.read("out/report.md").contains("- Failed: 1\n"));
    let run = report["run_id"].as_str().unwrap().to_string();
    let status = status_of(&p, &run);
    assert_eq!(status["units"]["failed"], 1, "{status:#}");
}

/// Issue 25: after Ctrl-C the terminal summary and `rlm status` name `rlm resume RUN`;
/// after the resume the numbers agree with each other (the answers the earlier attempt
/// paid for are neither cache hits nor tokens the cache saved, at the start or at the
/// end), and `aggregate.md` carries the run's time, not the resume's.
#[test]
fn after_ctrl_c_the_summary_and_status_name_the_resume_and_the_resume_counts_agree() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(300));
    let p = Project::new().ts_files(5);
    let url = mock.url();
    let a = p.rlm(&run_in(&url, "List {file}", &["-j", "1"])).spawn();
    assert!(wait_until(Duration::from_secs(20), || results_in_out(&p) >= 2));
    a.signal("INT");
    let out = a.wait();
    out.assert_exit(130);
    let report = p.report();
    let run = report["run_id"].as_str().unwrap().to_string();
    let done = report["succeeded"].as_u64().unwrap();
    let left = 5 - done;
    assert!(left > 0, "{report:#}");
    let units = |n: u64| {
        if n == 1 {
            "1 unit".to_string()
        } else {
            format!("{n} units")
        }
    };
    assert!(
        out.stdout.contains(&format!(
            "Next: rlm resume {run} sends the {} not run; the finished ones are not paid for again\n",
            units(left)
        )),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains(&format!("Not run: {left}\n")), "{}", out.stdout);
    let md = p.read("out/report.md");
    assert!(
        md.contains(&format!(
            "Run `rlm resume {run}`: it sends only the {} not run",
            units(left)
        )),
        "report.md says the same: {md}"
    );
    assert!(!out.stderr.contains(" 1 calls"), "{}", out.stderr);
    let timestamp = p
        .aggregate_md()
        .lines()
        .find(|l| l.starts_with("Timestamp: "))
        .unwrap()
        .to_string();

    for status in [p.rlm(&["status", &run]).run(), p.rlm(&["status"]).run()] {
        status.assert_exit(0);
        assert!(
            status.stdout.ends_with(&format!(
                "next      rlm resume {run} sends the {} not run\n",
                units(left)
            )),
            "{}",
            status.stdout
        );
    }

    // The resume: its start, its end and its aggregate say the same thing.
    std::thread::sleep(Duration::from_millis(1100));
    mock.set_latency(Duration::ZERO);
    let resumed = p.rlm(&["resume", "--yes"]).run();
    resumed.assert_exit(0);
    assert!(
        resumed.stderr.contains(&format!(
            "Cache: 0 hits, {left} miss{}, {done} answered by earlier attempts\n",
            if left == 1 { "" } else { "es" }
        )),
        "{}",
        resumed.stderr
    );
    assert!(
        resumed.stdout.contains(&format!(
            "Files processed: 5/5 (0 from cache, {done} answered by earlier attempts)\n"
        )),
        "{}",
        resumed.stdout
    );
    assert!(
        resumed.stdout.contains(" in this attempt (0 saved by the cache)\n"),
        "{}",
        resumed.stdout
    );
    assert!(
        resumed.stdout.contains(&format!(
            "of it in earlier attempts, for the {} answered then)",
            units(done)
        )),
        "{}",
        resumed.stdout
    );
    assert!(!resumed.stdout.contains("Next: "), "nothing left: {}", resumed.stdout);
    assert_eq!(p.report()["tokens_saved"], 0);
    assert!(
        p.aggregate_md().contains(&format!("{timestamp}\n")),
        "the run's time, not the resume's: {}",
        p.aggregate_md()
    );
    let status = p.rlm(&["status", &run]).run();
    assert!(!status.stdout.contains("next "), "{}", status.stdout);
}

/// The arguments an rlm before the versioned run record kept (the clap struct itself,
/// under `args`) for `run_in(url, prompt, ["-j", "1", "--no-cache"])`, field for field.
fn legacy_args(url: &str, prompt: &str) -> Value {
    let text = r#"{
        "pattern": "src/*.ts", "sub_prompt": "PROMPT", "prompt_file": null, "files_from": null,
        "null": false, "changed_since": null, "sarif": null, "fail_on": null, "schema": null,
        "chunking": "Auto", "batch_small": false, "no_batch_small": true, "focus": "General",
        "model": "haiku", "provider": null, "command": null, "agent_env": [], "max_depth": 3,
        "base_url": "URL", "output_dir": "out", "aggregate": null, "max_parallel": 1,
        "no_prompt_cache": false, "no_cache": true, "cache_only": false, "batch_api": null,
        "batch_api_fallback": "Batch", "force": false, "yes": false, "dry_run": false,
        "json": false, "quiet": false, "timeout": 120.0, "connect_timeout": 10.0, "retries": 3,
        "deadline": null, "save_trajectory": null, "rate_limit_wait": 600.0,
        "max_tokens": null, "max_cost": null, "context_window": null, "temperature": null,
        "no_ignore": false, "hidden": false, "follow_links": false, "include": [],
        "exclude": [], "no_recursive": false, "shard": null, "max_files": null,
        "neighbors_of": null, "direction": null, "depth": null, "graph": null,
        "graph_file": null, "require_citations": false
    }"#;
    serde_json::from_str(&text.replace("PROMPT", prompt).replace("URL", url)).unwrap()
}

/// A run recorded by an rlm older than the versioned record (its arguments as the clap
/// struct, under `args`) resumes as it would have then: its own flags (`--no-cache`, `-j
/// 1`) replayed, only the units left sent; the resume records the current record.
#[test]
fn a_run_recorded_by_an_older_rlm_still_resumes() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(200));
    let p = Project::new().ts_files(8);
    let url = mock.url();
    let a = p.rlm(&run_in(&url, "List {file}", &["-j", "1", "--no-cache"])).spawn();
    assert!(wait_until(Duration::from_secs(20), || results_in_out(&p) >= 3));
    a.signal("TERM");
    a.wait().assert_exit(130);
    let report = p.report();
    let run = report["run_id"].as_str().unwrap().to_string();
    let done = report["succeeded"].as_u64().unwrap();
    let left = report["not_run"].as_array().unwrap().len() as u64;

    let store = rusqlite::Connection::open(p.path().join(".aiwg/rlm/store.sqlite3")).unwrap();
    let recorded: String = store
        .query_row("SELECT settings_json FROM runs WHERE id = ?1", [&run], |r| r.get(0))
        .unwrap();
    let mut settings: Value = serde_json::from_str(&recorded).unwrap();
    assert_eq!(settings["record"]["version"], 1, "{settings:#}");
    assert_eq!(settings["record"]["kind"], "batch", "{settings:#}");
    assert_eq!(
        settings["record"]["settings"]["cache_mode"], "write_only",
        "{settings:#}"
    );
    settings.as_object_mut().unwrap().remove("record");
    settings["args"] = legacy_args(&url, "List {file}");
    store
        .execute(
            "UPDATE runs SET settings_json = ?1 WHERE id = ?2",
            [&settings.to_string(), &run],
        )
        .unwrap();
    drop(store);
    let sent = mock.requests() as u64;

    mock.set_latency(Duration::ZERO);
    let resumed = p.rlm(&["resume", "--yes"]).run();
    resumed.assert_exit(0);
    let report = p.report();
    assert_eq!(report["status"], "SUCCESS", "{}", resumed.stderr);
    assert_eq!(report["succeeded"], 8);
    assert_eq!(mock.requests() as u64 - sent, left, "only the units left were sent");
    assert_eq!(report["earlier_answers"], done, "{report:#}");
    let written = read_json(&p.path().join("out/settings.json"));
    assert_eq!(written["record"]["version"], 1, "{written:#}");
    assert_eq!(written["record"]["settings"]["max_parallel"], 1, "{written:#}");
    assert_eq!(written["record"]["settings"]["cache_mode"], "write_only", "{written:#}");
    assert!(written.get("args").is_none(), "{written:#}");
}

/// A run started with a global flag before its command (`rlm --color never batch …`) is a
/// batch run: stopped half-way, `rlm resume` takes it up and pays only for what is left.
#[test]
fn a_run_started_with_a_global_flag_first_resumes() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(200));
    let p = Project::new().ts_files(8);
    let url = mock.url();
    let mut args = vec!["--color", "never", "-v"];
    args.extend(run_in(&url, "List {file}", &["-j", "1"]));
    let a = p.rlm(&args).spawn();
    assert!(wait_until(Duration::from_secs(20), || results_in_out(&p) >= 3));
    a.signal("TERM");
    a.wait().assert_exit(130);
    let paid = mock.requests();
    assert!(paid < 8, "the run was stopped half-way ({paid} paid)");

    mock.set_latency(Duration::ZERO);
    let resumed = p.rlm(&["resume", "--yes"]).run();
    resumed.assert_exit(0);
    assert_eq!(p.report()["status"], "SUCCESS", "{}", resumed.stderr);
    assert_eq!(results_in_out(&p), 8);
    assert!(
        mock.requests() <= 8 + 1,
        "{} paid in all: the resume paid again for what the run had kept",
        mock.requests()
    );
}

/// A file edited between a `kill -9` while a `--batch-api` run waits and `rlm resume`: the
/// batch at the provider holds a request with the file's old text, and its answer must not
/// become the answer of the new text (it was cached under the new text's key, served to
/// every later run, and the file reported answered). The batch's claims tell which key each
/// of its requests was sent under.
#[test]
fn a_file_edited_before_the_resume_is_not_answered_by_its_old_batch_request() {
    use crate::support::mock_llm::batch::BatchProgress;
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::Held);
    let p = Project::new().ts_files(4);
    let url = mock.url();
    let args = run_in(&url, "List {file}", &["--yes", "--batch-api"]);
    let running = p.rlm(&args).env("RLM_BATCH_POLL_MS", "20").spawn();
    assert!(wait_until(Duration::from_secs(30), || mock.batch_polls() >= 2));
    running.signal("KILL");
    let _ = running.wait();
    p.write("src/f00.ts", "export const f00 = 100;\n");

    mock.set_batch_progress(BatchProgress::AfterPolls(1));
    p.rlm(&["resume", "--yes"])
        .env("RLM_BATCH_POLL_MS", "20")
        .run()
        .assert_exit(0);
    let sent_new_text = mock
        .batch_requests()
        .iter()
        .map(|r| r.body.to_string())
        .chain(mock.recorded().iter().map(|r| r.body.to_string()))
        .any(|body| body.contains("f00 = 100"));
    assert!(
        sent_new_text,
        "the edited file's new text was never sent, yet it is reported answered"
    );
}

/// A prompt read from standard input (`--prompt-file -`) is gone when the run is resumed:
/// the resume goes on with the prompt the run was given (it said "the sub-prompt is empty",
/// or took whatever was piped to it as a new prompt and paid for every unit again).
#[test]
fn a_run_whose_prompt_came_from_stdin_resumes_with_that_prompt() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(200));
    let p = Project::new().ts_files(8);
    let url = mock.url();
    let mut args = run_in(&url, "", &["-j", "1", "--prompt-file", "-"]);
    args.retain(|a| !a.is_empty());
    let a = p.rlm(&args).stdin(b"Name the constant in {file}").spawn();
    assert!(wait_until(Duration::from_secs(20), || results_in_out(&p) >= 3));
    a.signal("TERM");
    a.wait().assert_exit(130);
    let done = p.report()["succeeded"].as_u64().unwrap();
    let sent = mock.requests() as u64;

    mock.set_latency(Duration::ZERO);
    let resumed = p.rlm(&["resume", "--yes"]).run();
    resumed.assert_exit(0);
    let report = p.report();
    assert_eq!(report["sub_prompt"], "Name the constant in {file}", "{report:#}");
    assert_eq!(report["earlier_answers"], done, "{report:#}");
    assert_eq!(mock.requests() as u64 - sent, 8 - done, "only the units left were sent");
    // Something else piped to a later resume is not a new prompt either.
    let again = p.rlm(&["resume", "--yes"]).stdin(b"Something else {file}").run();
    again.assert_exit(2);
    assert_eq!(mock.requests() as u64 - sent, 8 - done, "{}", again.stderr);
}

/// A file list read from standard input (`--files-from -`) is gone when the run is resumed:
/// a resume given no list says so and what to do, exit 2; it ended at once with exit 0,
/// saying nothing, and left the run unfinished.
#[test]
fn a_resume_whose_file_list_selects_nothing_now_says_so() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(200));
    let p = Project::new().ts_files(8);
    let url = mock.url();
    let list: String = (0..8).map(|i| format!("src/f{i:02}.ts\n")).collect();
    let args = [
        "batch",
        "--files-from",
        "-",
        "List {file}",
        "--base-url",
        &url,
        "--model",
        "haiku",
        "-o",
        "out",
        "--no-batch-small",
        "-j",
        "1",
    ];
    let a = p.rlm(&args).stdin(list.as_bytes()).spawn();
    assert!(wait_until(Duration::from_secs(20), || results_in_out(&p) >= 3));
    a.signal("TERM");
    a.wait().assert_exit(130);
    let run = p.report()["run_id"].as_str().unwrap().to_string();

    let resumed = p.rlm(&["resume", "--yes"]).run();
    resumed.assert_exit(2);
    let last = resumed.stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("rlm: error: "), "{}", resumed.stderr);
    assert!(
        last.contains(&run) && last.contains("standard input"),
        "{}",
        resumed.stderr
    );
    // Given the list again, it goes on.
    mock.set_latency(Duration::ZERO);
    p.rlm(&["resume", "--yes"]).stdin(list.as_bytes()).run().assert_exit(0);
    assert_eq!(p.report()["status"], "SUCCESS");
}

/// A file edited between an interrupt and the resume is a new unit (its key changed): the
/// store records it, so what `rlm status` says was spent is what report.json says and what
/// the server answered. Its moves were refused (an unknown unit) and dropped, with the spend
/// of the units committed beside them: the status said less than the run paid.
#[test]
fn a_file_edited_before_the_resume_is_recorded_and_its_spend_counted() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(200));
    let p = Project::new().ts_files(6);
    let url = mock.url();
    let a = p.rlm(&run_in(&url, "List {file}", &["-j", "1"])).spawn();
    assert!(wait_until(Duration::from_secs(20), || results_in_out(&p) >= 2));
    a.signal("TERM");
    a.wait().assert_exit(130);
    let first = p.report();
    let run = first["run_id"].as_str().unwrap().to_string();
    let done = first["succeeded"].as_u64().unwrap();
    assert!(done < 6, "{first:#}");
    // One answered file and one not yet answered are edited.
    p.write("src/f00.ts", "export const f00 = 100;\n");
    p.write("src/f05.ts", "export const f05 = 500;\n");

    mock.set_latency(Duration::ZERO);
    let resumed = p.rlm(&["resume", "--yes"]).run();
    resumed.assert_exit(0);
    assert!(!resumed.stderr.contains("task store"), "{}", resumed.stderr);
    let report = p.report();
    assert_eq!(report["status"], "SUCCESS", "{report:#}");
    let status = status_of(&p, &run);
    let paid = report["cost_usd"].as_f64().unwrap();
    let recorded = status["cost_usd"].as_f64().unwrap();
    assert!(
        (paid - recorded).abs() < 1e-9,
        "report {paid} vs status {recorded}: {status:#}"
    );
    // Every file once, and the answered one that was edited again.
    assert_eq!(mock.requests(), 7);
}

/// A big file edited before the resume is cut into other chunks (new units the store did
/// not know): they are recorded, and their spend counted. Their moves were refused and
/// dropped, with those of the units committed beside them.
#[test]
fn chunks_of_a_file_edited_before_the_resume_are_recorded_and_their_spend_counted() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(200));
    let lines = |from: usize, n: usize| -> String {
        (from..from + n)
            .map(|i| format!("def f{i}(x):\n    return x + {i}\n\n"))
            .collect()
    };
    let p = Project::new().file("src/big.py", &lines(0, 1500));
    let url = mock.url();
    let args = [
        "batch",
        "src/*.py",
        "List {file}",
        "--base-url",
        &url,
        "--model",
        "haiku",
        "-o",
        "out",
        "-j",
        "1",
    ];
    let a = p.rlm(&args).spawn();
    assert!(wait_until(Duration::from_secs(20), || results_in_out(&p) >= 2));
    a.signal("TERM");
    a.wait().assert_exit(130);
    let run = p.report()["run_id"].as_str().unwrap().to_string();
    // Lines added at the top move every chunk's lines.
    p.write("src/big.py", &format!("{}{}", lines(5000, 50), lines(0, 1500)));

    mock.set_latency(Duration::ZERO);
    let resumed = p.rlm(&["resume", "--yes"]).run();
    resumed.assert_exit(0);
    assert!(!resumed.stderr.contains("task store"), "{}", resumed.stderr);
    let report = p.report();
    assert_eq!(report["status"], "SUCCESS", "{report:#}");
    let status = status_of(&p, &run);
    let paid = report["cost_usd"].as_f64().unwrap();
    let recorded = status["cost_usd"].as_f64().unwrap();
    assert!(
        (paid - recorded).abs() < 1e-9,
        "report {paid} vs status {recorded}: {status:#}"
    );
}

/// A file deleted between an interrupt and the resume is no input of the run any more: its
/// unit, never answered, leaves the store. It stayed queued there, so the finished run was
/// "unfinished" for ever: `rlm status` counted it, and every plain `rlm resume` took the run
/// up again.
#[test]
fn a_file_deleted_before_the_resume_leaves_no_unit_behind() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(200));
    let p = Project::new().ts_files(6);
    let url = mock.url();
    let a = p.rlm(&run_in(&url, "List {file}", &["-j", "1"])).spawn();
    assert!(wait_until(Duration::from_secs(20), || results_in_out(&p) >= 2));
    a.signal("TERM");
    a.wait().assert_exit(130);
    let run = p.report()["run_id"].as_str().unwrap().to_string();
    std::fs::remove_file(p.path().join("src/f05.ts")).unwrap();

    mock.set_latency(Duration::ZERO);
    p.rlm(&["resume", "--yes"]).run().assert_exit(0);
    let status = status_of(&p, &run);
    assert_eq!(status["display_status"], "SUCCESS", "{status:#}");
    assert_eq!(status["units"]["queued"], 0, "{status:#}");
    assert_eq!(status["units"]["cancelled"], 0, "{status:#}");
    let again = p.rlm(&["resume", "--yes"]).run();
    again.assert_exit(2);
    assert!(again.stderr.contains("no unfinished run"), "{}", again.stderr);
}

/// A run is resumed with the provider and model that answered it, whatever keys the
/// resume's shell has: with only OPENAI_API_KEY set, a run Claude answered went on at the
/// server as an OpenAI-compatible one with the one model it lists, asked every unit again
/// (paid twice) and mixed two models' answers in one aggregate.
#[test]
fn a_resume_keeps_the_runs_provider_and_model_whatever_keys_are_set() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(200));
    let p = Project::new().ts_files(6);
    let url = mock.url();
    let mut args = run_in(&url, "List {file}", &["-j", "1"]);
    // The model is left to the provider's default.
    let at = args.iter().position(|a| *a == "--model").unwrap();
    args.drain(at..at + 2);
    let a = p.rlm(&args).spawn();
    assert!(wait_until(Duration::from_secs(20), || results_in_out(&p) >= 2));
    a.signal("TERM");
    a.wait().assert_exit(130);
    let first = p.report();
    let done = first["succeeded"].as_u64().unwrap();
    let sent = mock.requests() as u64;

    mock.set_latency(Duration::ZERO);
    p.rlm(&["resume", "--yes"])
        .env_remove("ANTHROPIC_API_KEY")
        .env("OPENAI_API_KEY", TEST_KEY)
        .run()
        .assert_exit(0);
    let report = p.report();
    assert_eq!(report["provider"], "anthropic", "{report:#}");
    assert_eq!(report["model"], first["model"], "{report:#}");
    assert_eq!(report["earlier_answers"], done, "{report:#}");
    assert_eq!(mock.requests() as u64, sent + 6 - done, "only the units left were sent");
}

/// `rlm resume --failed` without a RUN takes up the latest run with failed units: a run
/// that ended PARTIAL is nothing a plain resume goes on with, but it is what `--failed` is
/// for (it said "no unfinished run").
#[test]
fn resume_failed_without_a_run_takes_up_the_latest_partial_run() {
    let mock = MockLlm::start();
    mock.fault_when("f01.ts", vec![Fault::Status(413, "too large".into()); 10]);
    let p = Project::new().ts_files(4);
    let url = mock.url();
    p.rlm(&run_in(&url, "List {file}", &["--yes"])).run().assert_exit(1);
    let first = p.report();
    assert_eq!(first["status"], "PARTIAL", "{first:#}");
    let run = first["run_id"].as_str().unwrap().to_string();
    let plain = p.rlm(&["resume", "--yes"]).run();
    plain.assert_exit(2);
    assert!(plain.stderr.contains("no unfinished run"), "{}", plain.stderr);

    mock.clear_faults();
    let sent = mock.requests();
    let resumed = p.rlm(&["resume", "--failed", "--yes"]).run();
    resumed.assert_exit(0);
    assert!(
        resumed.stderr.contains(&format!("resuming run {run}")),
        "{}",
        resumed.stderr
    );
    let report = p.report();
    assert_eq!(report["run_id"], run.as_str(), "{report:#}");
    assert_eq!(report["status"], "SUCCESS", "{report:#}");
    assert_eq!(mock.requests() - sent, 1, "only the failed unit was sent again");
    // Nothing is left for either.
    let again = p.rlm(&["resume", "--failed", "--yes"]).run();
    again.assert_exit(2);
    assert!(again.stderr.contains("no run with failed units"), "{}", again.stderr);
}

/// A unit an earlier attempt completed whose file was deleted before the resume is no unit
/// of the run any more: `rlm status` and `rlm list` count the units of the plan as it is,
/// as report.json does, and what the unit cost stays in the run's cost. They counted it
/// (7 units of a 6-unit run).
#[test]
fn a_completed_unit_whose_file_was_deleted_before_the_resume_is_counted_no_more() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(200));
    let p = Project::new().ts_files(7);
    let url = mock.url();
    let a = p.rlm(&run_in(&url, "List {file}", &["-j", "1"])).spawn();
    assert!(wait_until(Duration::from_secs(20), || results_in_out(&p) >= 2));
    a.signal("TERM");
    a.wait().assert_exit(130);
    let first = p.report();
    let run = first["run_id"].as_str().unwrap().to_string();
    let done = first["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["status"] == "succeeded")
        .expect("a unit completed")["path"]
        .as_str()
        .unwrap()
        .to_string();
    let spent = status_of(&p, &run)["cost_usd"].as_f64().unwrap();
    std::fs::remove_file(p.path().join(&done)).unwrap();

    mock.set_latency(Duration::ZERO);
    p.rlm(&["resume", "--yes"]).run().assert_exit(0);
    let report = p.report();
    assert_eq!(report["units_planned"], 6, "{report:#}");
    let status = status_of(&p, &run);
    assert_eq!(status["units"]["completed"], 6, "{status:#}");
    assert!(status["cost_usd"].as_f64().unwrap() >= spent, "{status:#}");
    let list = p.rlm(&["list", "--json"]).run();
    list.assert_exit(0);
    let listed = list.json();
    let row = listed
        .as_array()
        .or_else(|| listed["runs"].as_array())
        .unwrap()
        .iter()
        .find(|r| r["id"] == run.as_str() || r["run_id"] == run.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("{listed:#}"));
    assert_eq!(row["units"]["completed"], 6, "{row:#}");
}

/// A plain `rlm resume` takes up the latest run of `rlm batch`, never a job (`rlm job
/// resume` goes on with those): a job paused after a batch run stopped at its deadline
/// made it refuse, naming the job, though the batch run was there to resume; with
/// `--failed`, the same for a PARTIAL batch run. With no batch run to resume, it names the
/// job and its own resume.
#[test]
fn a_plain_resume_takes_up_the_latest_batch_run_not_a_newer_job() {
    use crate::job::{job_args, job_id, job_project, only_job, REPORT_PHASE};
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(300));
    let p = job_project(4, 2, &[], REPORT_PHASE).ts_files(5);
    let url = mock.url();
    let out = p
        .rlm(&run_in(&url, "List {file}", &["-j", "1", "--deadline", "1s", "--yes"]))
        .run();
    assert_ne!(out.status, 0, "{}", out.stderr);
    let batch_run = p.report()["run_id"].as_str().unwrap().to_string();
    assert_eq!(status_of(&p, &batch_run)["status"], "DEADLINE_EXCEEDED");
    mock.set_latency(Duration::ZERO);
    p.rlm(&job_args(&url, &["--pause-after", "classify", "--yes"]))
        .run()
        .assert_exit(0);
    let job = job_id(&only_job(&p));
    // (The deadline counts the whole run: the resume gives it more time.)
    let resumed = p.rlm(&["resume", "--deadline", "1h", "--yes"]).run();
    resumed.assert_exit(0);
    assert!(
        resumed.stderr.contains(&format!("resuming run {batch_run}")),
        "{}",
        resumed.stderr
    );
    assert_eq!(p.report()["status"], "SUCCESS");
    assert_eq!(results_in_out(&p), 5);

    // Nothing of rlm batch is left: the paused job is named, with its own resume.
    let refused = p.rlm(&["resume", "--yes"]).run();
    refused.assert_exit(2);
    assert_eq!(refused.stderr.lines().count(), 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains(&format!("rlm job resume {job}")),
        "{}",
        refused.stderr
    );

    // `--failed`: a PARTIAL batch run, then a paused job.
    let mock = MockLlm::start();
    mock.fault_when("f01.ts", vec![Fault::Status(413, "too large".into()); 10]);
    let p = job_project(4, 2, &[], REPORT_PHASE).ts_files(3);
    let url = mock.url();
    p.rlm(&run_in(&url, "List {file}", &["--yes"])).run().assert_exit(1);
    let batch_run = p.report()["run_id"].as_str().unwrap().to_string();
    p.rlm(&job_args(&url, &["--pause-after", "classify", "--yes"]))
        .run()
        .assert_exit(0);
    mock.clear_faults();
    let resumed = p.rlm(&["resume", "--failed", "--yes"]).run();
    resumed.assert_exit(0);
    assert!(
        resumed.stderr.contains(&format!("resuming run {batch_run}")),
        "{}",
        resumed.stderr
    );
}

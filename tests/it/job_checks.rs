//! `rlm job` refuses what would stop it half-way before anything is written or paid (a
//! missing `fetch` program — gh for a PR review, also with `--input` —, an unknown
//! `--pause-after` phase, a phase's provider without its key), closes a job whose phase
//! ends in an error like any other end (FAILED in `job.json` and in the run store,
//! `phase:failed` and `job:ended`, a truthful exit code), and prints one JSON document
//! with `--json` whatever happens; `export --post` refuses ids that are not pull request
//! numbers before posting anything. Ctrl-C before a job starts (its items listed by a
//! command or by gh, its model asked for, its cost asked about) ends it at once, exit 130,
//! with nothing it started left running.
#![cfg(unix)]

use std::time::Duration;

use serde_json::{json, Value};

use crate::job::*;
use crate::support::mock_llm::*;
use crate::support::*;

/// A review phase over the entries classified `fix`, fetching with `fetch`.
fn review_phase(fetch: &str) -> String {
    format!(
        "\n[[phase]]\nname = \"review\"\nkind = \"review\"\nprompt = \"review.md\"\noutput_schema = \"item.schema.json\"\n\
         select = \"kind == \\\"fix\\\"\"\nfetch = {fetch}\n"
    )
}

fn events(dir: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn event_names(dir: &std::path::Path) -> Vec<String> {
    events(dir)
        .iter()
        .map(|e| e["event"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn a_pr_review_from_input_without_gh_is_refused_before_anything_is_paid() {
    let mock = MockLlm::start();
    let p = gh_project(&pull_requests(12));
    let url = mock.url();
    let review = |extra: &[&str]| {
        let mut args = vec![
            "job",
            "pr-review",
            "acme/widgets",
            "--vision",
            "VISION.md",
            "--input",
            "gh/prs.json",
            "--base-url",
            &url,
            "--yes",
        ];
        args.extend_from_slice(extra);
        p.rlm(&args).env("PATH", "/nonexistent")
    };
    let out = review(&[]).run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("gh (the GitHub CLI) is not installed") && out.stderr.contains("phase reviews"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    let json_out = review(&["--json"]).run();
    json_out.assert_exit(2);
    let doc = json_out.json();
    assert_eq!(doc["status"], "ERROR");
    assert_eq!(doc["exit_code"], 2);
    // A program the job needs is setup, not a bad flag.
    assert_eq!(doc["error"]["kind"], "config");
    assert!(doc["error"]["message"]
        .as_str()
        .unwrap()
        .contains("gh (the GitHub CLI)"));
    assert!(doc.get("job_id").is_none(), "no job was created: {doc}");
    assert_eq!(mock.requests(), 0, "nothing was sent");
    assert!(jobs(&p).is_empty(), "no job was created");
    // A dry run says so, and still prints the estimate.
    let dry = review(&["--dry-run"]).run();
    dry.assert_exit(0);
    assert!(
        dry.stderr.contains("cannot start as it is: gh (the GitHub CLI)") && dry.stderr.contains("total"),
        "{}",
        dry.stderr
    );
    // With gh on PATH, the same job runs (and fetches its diffs with it).
    let ok = with_gh(
        &p,
        p.rlm(&[
            "job",
            "pr-review",
            "acme/widgets",
            "--vision",
            "VISION.md",
            "--input",
            "gh/prs.json",
            "--base-url",
            &url,
            "-q",
        ]),
    )
    .run();
    ok.assert_exit(0);
    assert!(gh_log(&p).iter().any(|l| l.starts_with("pr diff ")));
}

#[test]
fn a_job_files_missing_fetch_program_is_refused_before_anything_is_paid() {
    let mock = MockLlm::start();
    let hints: Vec<(usize, String)> = (1..=4).map(|i| (i, fields_hint(&json!({"kind": "fix"})))).collect();
    let p = job_project(4, 2, &hints, &review_phase("[\"./fetch-diff.sh\", \"{id}\"]")).file("review.md", "Review.");
    let out = p.rlm(&job_args(&mock.url(), &[])).run();
    out.assert_exit(2);
    assert!(
        out.stderr
            .contains("phase review: the fetch program ./fetch-diff.sh is not found"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.requests(), 0);
    assert!(jobs(&p).is_empty());
    // The same for the program a job file lists its items with.
    p.write(
        "list.toml",
        "name = \"t\"\ncommand = [\"no-such-lister-7f3a\"]\n[[phase]]\nname = \"report\"\nkind = \"report\"\n",
    );
    let out = p.rlm(&["job", "run", "list.toml", "--base-url", &mock.url()]).run();
    out.assert_exit(2);
    assert!(
        out.stderr
            .contains("the job's command no-such-lister-7f3a is not found")
            && !out.stderr.contains("--command"),
        "{}",
        out.stderr
    );
    // Present but not executable: said so.
    p.write("fetch-diff.sh", "#!/bin/sh\necho diff of $1\n");
    let out = p.rlm(&job_args(&mock.url(), &[])).run();
    out.assert_exit(2);
    assert!(out.stderr.contains("is not executable"), "{}", out.stderr);
    assert_eq!(mock.requests(), 0);
    assert!(jobs(&p).is_empty());
}

#[test]
fn an_unknown_pause_after_phase_is_refused_before_the_job_exists() {
    let mock = MockLlm::start();
    let p = job_project(4, 2, &[], REPORT_PHASE);
    let out = p
        .rlm(&job_args(&mock.url(), &["--pause-after", "nosuch", "--json"]))
        .run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("--pause-after: no phase 'nosuch'") && out.stderr.contains("1 classify, 2 report"),
        "{}",
        out.stderr
    );
    assert_eq!(out.json()["status"], "ERROR");
    assert_eq!(mock.requests(), 0);
    assert!(jobs(&p).is_empty(), "no zombie job is left behind");
    let runs = p.rlm(&["list", "--json"]).run();
    assert!(!runs.stdout.contains("job-"), "no run was recorded: {}", runs.stdout);

    // The same on resume: the paused job is not claimed, and stays PAUSED.
    p.rlm(&job_args(&mock.url(), &["--pause-after", "1", "-q"]))
        .run()
        .assert_exit(0);
    let dir = only_job(&p);
    let before = mock.requests();
    let out = p
        .rlm(&["job", "resume", &job_id(&dir), "--pause-after", "9", "--json"])
        .run();
    out.assert_exit(2);
    let doc = out.json();
    assert_eq!(doc["status"], "ERROR");
    assert_eq!(doc["job_id"], job_id(&dir), "the job exists: the document names it");
    assert_eq!(doc["dir"], dir.display().to_string());
    assert_eq!(mock.requests(), before);
    assert_eq!(read_json(&dir.join("job.json"))["status"], "PAUSED");
    // A phase that is done already would never pause the job.
    let out = p
        .rlm(&["job", "resume", &job_id(&dir), "--pause-after", "classify"])
        .run();
    out.assert_exit(2);
    assert!(out.stderr.contains("is done already"), "{}", out.stderr);
    assert_eq!(mock.requests(), before);
    assert_eq!(read_json(&dir.join("job.json"))["status"], "PAUSED");
}

#[test]
fn a_phase_provider_without_its_key_is_refused_before_the_job_starts() {
    let mock = MockLlm::start();
    let p = job_project(4, 2, &[], REPORT_PHASE);
    let toml = p.read("job.toml").replace(
        "kind = \"report\"\n",
        "kind = \"report\"\nprovider = \"openai\"\nmodel = \"gpt-4.1-mini\"\n",
    );
    p.write("job.toml", &toml);
    let out = p
        .rlm(&job_args(&mock.url(), &[]))
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("phase report: OPENAI_API_KEY is not set"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.requests(), 0);
    assert!(jobs(&p).is_empty());
    // With its own endpoint, the banner names each phase's model and endpoint.
    let openai = MockLlm::start();
    let out = p
        .rlm(&job_args(&mock.url(), &["--json"]))
        .env("OPENAI_API_KEY", "sk-test-openai-0123456789")
        .env("OPENAI_BASE_URL", &openai.url())
        .run();
    out.assert_exit(0);
    assert!(
        out.stderr.contains("per phase: classify claude-sonnet")
            && out.stderr.contains(&format!("report gpt-4.1-mini at {}", openai.url())),
        "{}",
        out.stderr
    );
    assert_eq!(openai.requests(), 1, "the report went to its own provider");
}

#[test]
fn a_phase_that_ends_in_an_error_after_paying_closes_the_job_as_failed() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(300));
    let hints: Vec<(usize, String)> = (1..=4).map(|i| (i, fields_hint(&json!({"kind": "fix"})))).collect();
    let p = job_project(4, 2, &hints, &review_phase("[\"./fetch-diff.sh\", \"{id}\"]"))
        .file("review.md", "Review.")
        .file("fetch-diff.sh", "#!/bin/sh\necho diff of $1\n");
    let chmod = std::process::Command::new("chmod")
        .arg("+x")
        .arg(p.path().join("fetch-diff.sh"))
        .status()
        .unwrap();
    assert!(chmod.success());
    let running = p.rlm(&job_args(&mock.url(), &["-j", "1", "--json"])).spawn();
    // The program is there when the job starts, and gone when the review phase needs it.
    assert!(
        wait_until(Duration::from_secs(30), || {
            jobs(&p)
                .first()
                .is_some_and(|d| !batch_outputs(d, "classify").is_empty())
        }),
        "the map phase makes progress"
    );
    std::fs::remove_file(p.path().join("fetch-diff.sh")).unwrap();
    let out = running.wait();
    out.assert_exit(3);
    let dir = only_job(&p);
    let doc = out.json();
    assert_eq!(doc["status"], "FAILED");
    assert_eq!(doc["job_id"], job_id(&dir));
    assert_eq!(doc["exit_code"], 3, "exit 2 would say nothing was sent");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("fetch command cannot run"),
        "{doc}"
    );
    assert!(out.stderr.contains("fetch command cannot run"), "{}", out.stderr);
    let record = read_json(&dir.join("job.json"));
    assert_eq!(record["status"], "FAILED");
    assert_eq!(record["phases"][0]["status"], "completed");
    assert_eq!(record["phases"][1]["status"], "failed");
    let names = event_names(&dir);
    assert!(names.contains(&"phase:failed".to_string()), "{names:?}");
    assert_eq!(names.last().map(String::as_str), Some("job:ended"), "{names:?}");
    let runs = p.rlm(&["list", "--json"]).run();
    runs.assert_exit(0);
    assert_eq!(runs.json()[0]["status"], "FAILED", "{}", runs.stdout);
}

#[test]
fn a_fatal_provider_stop_fails_the_phase_not_leaves_it_running() {
    let mock = MockLlm::start();
    // The map phase is answered (and paid); then the provider's quota is spent.
    mock.fault_when("Summarize the triage.", vec![Fault::InsufficientQuota; 4]);
    let p = job_project(6, 3, &[], REPORT_PHASE);
    let out = p.rlm(&job_args(&mock.url(), &["--json"])).run();
    out.assert_exit(3);
    let doc = out.json();
    assert_eq!(doc["status"], "FAILED");
    assert_eq!(doc["exit_code"], 3);
    assert!(doc["cost_usd"].as_f64().unwrap() > 0.0, "the map phase was paid");
    let dir = only_job(&p);
    let record = read_json(&dir.join("job.json"));
    assert_eq!(record["phases"][0]["status"], "completed");
    assert_eq!(record["phases"][1]["status"], "failed", "{}", record["phases"][1]);
    let names = event_names(&dir);
    assert!(names.contains(&"phase:failed".to_string()), "{names:?}");
    assert_eq!(names.last().map(String::as_str), Some("job:ended"));
    let status = p.rlm(&["job", "status", &job_id(&dir)]).run();
    assert!(
        status.stdout.contains("report             report  failed"),
        "{}",
        status.stdout
    );
    let runs = p.rlm(&["list", "--json"]).run();
    assert_eq!(runs.json()[0]["status"], "FAILED", "{}", runs.stdout);
    // Resume takes the failed phase up again, without paying for the map phase twice.
    mock.clear_faults();
    mock.reset_counts();
    let out = p.rlm(&["job", "resume", &job_id(&dir), "--json"]).run();
    out.assert_exit(0);
    assert_eq!(out.json()["status"], "SUCCESS");
    assert!(map_requests(&mock).is_empty());
    assert_eq!(mock.requests(), 1, "only the report");
}

#[test]
fn json_errors_are_one_document_on_stdout_and_json_may_be_repeated() {
    let p = Project::new();
    let out = p.rlm(&["job", "run", "nope.toml", "--json", "--json"]).run();
    out.assert_exit(2);
    let doc = out.json();
    assert_eq!(doc["status"], "ERROR");
    assert_eq!(doc["exit_code"], 2);
    assert!(doc["error"]["message"].as_str().unwrap().contains("nope.toml"), "{doc}");
    let status = p.rlm(&["job", "status", "--json", "--json"]).run();
    status.assert_exit(2);
    assert_eq!(status.json()["status"], "ERROR");
    let list = p.rlm(&["job", "list", "--json", "--json"]).run();
    list.assert_exit(0);
    assert_eq!(list.json(), json!([]));

    // A finished job: resume refuses, naming it.
    let mock = MockLlm::start();
    let q = job_project(2, 2, &[], "");
    q.rlm(&job_args(&mock.url(), &["-q"])).run().assert_exit(0);
    let dir = only_job(&q);
    let out = q.rlm(&["job", "resume", &job_id(&dir), "--json"]).run();
    out.assert_exit(2);
    let doc = out.json();
    assert_eq!(doc["status"], "ERROR");
    assert_eq!(doc["job_id"], job_id(&dir));
    assert!(doc["error"]["message"].as_str().unwrap().contains("nothing to resume"));
}

#[test]
fn a_rerun_the_cache_answers_is_estimated_free_and_neither_refused_nor_asked_about() {
    let mock = MockLlm::start();
    // Prices high enough that the job's estimate is above $10 (it needs --force).
    let prices = r#"{"rlm": {"prices": {"claude-sonnet-5-5": {"input": 20000.0, "output": 80000.0}}}}"#;
    let p = job_project(8, 4, &[], &format!("{REDUCE_PHASE}{REPORT_PHASE}")).file(".aiwg/aiwg.config", prices);
    let refused = p.rlm(&job_args(&mock.url(), &["--max-cost", "100000"])).run();
    refused.assert_exit(2);
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    p.rlm(&job_args(&mock.url(), &["--max-cost", "100000", "--force", "-q"]))
        .run()
        .assert_exit(0);
    let dir = only_job(&p);
    let id = job_id(&dir);
    let spent = read_json(&dir.join("job.json"))["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["cost_usd"].as_f64().unwrap())
        .sum::<f64>();
    assert!(spent > 10.0, "{spent}");
    mock.reset_counts();

    // The estimate counts what the cache holds: the map phase's batches exactly, the later
    // phases as a rerun of unchanged inputs.
    let dry = p
        .rlm(&["job", "rerun", &id, "--phase", "1", "--dry-run", "--json"])
        .run();
    dry.assert_exit(0);
    let estimate = &dry.json()["estimate"];
    assert_eq!(estimate["usd"], 0.0, "{estimate}");
    assert_eq!(estimate["calls"], 0, "{estimate}");
    assert_eq!(estimate["phases"][0]["batches"], 2);
    assert_eq!(estimate["phases"][0]["cached"], 2);
    assert!(dry.stderr.contains("cached"), "{}", dry.stderr);
    // No --force, no --yes, and a budget just above what was spent: the rerun goes.
    let max = format!("{}", spent + 0.0001);
    let out = p
        .rlm(&["job", "rerun", &id, "--phase", "1", "--max-cost", &max, "--json"])
        .run();
    out.assert_exit(0);
    assert_eq!(out.json()["status"], "SUCCESS");
    assert!(!out.stderr.contains("above $1"), "{}", out.stderr);
    assert_eq!(mock.requests(), 0, "the cache answered every call");

    // A new prompt is paid for (and the phases after it with it).
    p.write("report2.md", "Summarize differently.");
    let dry = p
        .rlm(&[
            "job",
            "rerun",
            &id,
            "--phase",
            "report",
            "--prompt",
            "report2.md",
            "--dry-run",
            "--json",
        ])
        .run();
    dry.assert_exit(0);
    assert_eq!(dry.json()["estimate"]["calls"], 1);
    // A second job over the same items: its map phase is in the cache already.
    let fresh = p.rlm(&job_args(&mock.url(), &["--dry-run", "--json"])).run();
    fresh.assert_exit(0);
    let phases = &fresh.json()["estimate"]["phases"];
    assert_eq!(phases[0]["cached"], 2, "{phases}");
    assert_eq!(phases[0]["calls"], 0, "{phases}");
    // Over --max-cost: the job's own advice, not rlm batch's.
    let over = p
        .rlm(&job_args(&mock.url(), &["--max-cost", "0.01", "--no-cache"]))
        .run();
    over.assert_exit(2);
    assert!(
        over.stderr.contains("fewer items") && !over.stderr.contains("glob"),
        "{}",
        over.stderr
    );
}

#[test]
fn no_cache_holds_for_one_invocation_and_batch_api_can_be_turned_off() {
    let mock = MockLlm::start();
    let p = job_project(6, 3, &[], REPORT_PHASE);
    p.rlm(&job_args(&mock.url(), &["-q"])).run().assert_exit(0);
    let dir = only_job(&p);
    let id = job_id(&dir);
    mock.reset_counts();
    p.rlm(&["job", "rerun", &id, "--phase", "report", "--no-cache", "-q"])
        .run()
        .assert_exit(0);
    assert_eq!(mock.requests(), 1, "--no-cache reads nothing from the cache");
    let settings = read_json(&dir.join("job.json"))["settings"].clone();
    assert!(settings.get("no_cache").is_none(), "not remembered: {settings}");
    p.rlm(&["job", "rerun", &id, "--phase", "report", "-q"])
        .run()
        .assert_exit(0);
    assert_eq!(mock.requests(), 1, "the next rerun is answered by the cache again");

    // --batch-api is remembered, and `--batch-api off` replaces it.
    let q = job_project(6, 3, &[], "");
    fast(q.rlm(&job_args(&mock.url(), &["--batch-api", "-q"])))
        .run()
        .assert_exit(0);
    let dir = only_job(&q);
    let id = job_id(&dir);
    assert_eq!(read_json(&dir.join("job.json"))["settings"]["batch_api"], true);
    let submissions = mock.batch_submissions();
    mock.reset_counts();
    let out = fast(q.rlm(&[
        "job",
        "rerun",
        &id,
        "--phase",
        "1",
        "--no-cache",
        "--batch-api",
        "off",
        "-q",
    ]))
    .run();
    out.assert_exit(0);
    assert_eq!(mock.batch_submissions(), submissions, "no provider batch");
    assert_eq!(map_requests(&mock).len(), 2, "the two batches in real time");
    assert_eq!(read_json(&dir.join("job.json"))["settings"]["batch_api"], false);
}

#[test]
fn batch_api_off_on_resume_still_collects_the_provider_batch_sent_before() {
    let mock = MockLlm::start();
    mock.set_batch_progress(batch::BatchProgress::Held);
    let p = job_project(8, 4, &[], REPORT_PHASE);
    let running = fast(p.rlm(&job_args(&mock.url(), &["--batch-api", "--yes"]))).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || mock.batch_polls() >= 2),
        "the job submits and polls"
    );
    running.signal("KILL");
    let _ = running.wait();
    let dir = only_job(&p);
    mock.set_batch_progress(batch::BatchProgress::AfterPolls(1));
    let out = fast(p.rlm(&["job", "resume", &job_id(&dir), "--batch-api", "off", "--json"])).run();
    out.assert_exit(0);
    assert_eq!(out.json()["status"], "SUCCESS", "{}", out.stderr);
    assert_eq!(mock.batch_submissions(), 1, "nothing sent twice");
    assert!(
        map_requests(&mock).is_empty(),
        "the batch sent before answered the map phase"
    );
    assert!(out.stderr.contains("collecting the provider batch"), "{}", out.stderr);
}

#[test]
fn a_rerun_of_failed_batches_keeps_item_order_and_unprocessed_items_count_once() {
    let mock = MockLlm::start();
    // Entries 1-3 fail in both map phases (the request is refused as too large), once each.
    mock.fault_when("entry 2 ", vec![Fault::Status(413, "request too large".into()); 2]);
    let second =
        "\n[[phase]]\nname = \"tag\"\nkind = \"map\"\nprompt = \"tag.md\"\noutput_schema = \"item.schema.json\"\n\
                  batch_size = 3\n";
    let p = job_project(6, 3, &[], second).file("tag.md", "TAG-ENTRIES.");
    let out = p.rlm(&job_args(&mock.url(), &["--json"])).run();
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(doc["status"], "PARTIAL");
    assert_eq!(doc["unprocessed"], 3, "e1-e3, failed by both phases, are three items");
    let dir = only_job(&p);
    let id = job_id(&dir);
    let status = p.rlm(&["job", "status", &id]).run();
    assert!(status.stdout.contains("Unprocessed: 3 items"), "{}", status.stdout);

    let out = p.rlm(&["job", "rerun", &id, "--phase", "classify", "--json"]).run();
    out.assert_exit(0);
    assert_eq!(out.json()["status"], "SUCCESS");
    for phase in ["classify", "tag"] {
        let ids: Vec<String> = read_json(&dir.join(format!("data/{phase}.json")))
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            ids,
            ["e1", "e2", "e3", "e4", "e5", "e6"],
            "{phase} keeps the items' order"
        );
    }
}

#[test]
fn a_phase_without_batches_is_named_in_its_own_summary_line() {
    let mock = MockLlm::start();
    // A reduce without a prompt calls nothing; its summary names it, not the map phase.
    let reduce = "\n[[phase]]\nname = \"groups\"\nkind = \"reduce\"\ngroup_by = \"topic\"\n";
    let p = job_project(4, 2, &[], reduce);
    let out = p.rlm(&job_args(&mock.url(), &[])).run();
    out.assert_exit(0);
    let summaries: Vec<&str> = out.stderr.lines().filter(|l| l.contains(" done")).collect();
    assert!(
        summaries.iter().any(|l| l.starts_with("Phase 1/2: classify: 2/2 done")),
        "{}",
        out.stderr
    );
    assert!(
        summaries.iter().any(|l| l.starts_with("Phase 2/2: groups: 0/0 done")),
        "{}",
        out.stderr
    );
}

/// Three entries classified `fix`, a review phase over them, and the fake gh in `bin/`.
fn three_fixes_to_review_with_gh() -> crate::support::Project {
    let review = "\n[[phase]]\nname = \"review\"\nkind = \"review\"\nprompt = \"review.md\"\n\
                  output_schema = \"item.schema.json\"\nselect = \"kind == \\\"fix\\\"\"\n";
    let hints: Vec<(usize, String)> = (1..=3).map(|i| (i, fields_hint(&json!({"kind": "fix"})))).collect();
    let p = job_project(3, 3, &hints, review)
        .file("review.md", "Review.")
        .file("bin/gh", GH);
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(p.path().join("bin/gh"))
        .status()
        .unwrap();
    p
}

#[test]
fn post_refuses_ids_that_are_not_pull_request_numbers_before_posting_anything() {
    let mock = MockLlm::start();
    let p = three_fixes_to_review_with_gh();
    p.write("job.toml", &format!("repo = \"acme/widgets\"\n{}", p.read("job.toml")));
    p.rlm(&job_args(&mock.url(), &["-q"])).run().assert_exit(0);
    let id = job_id(&only_job(&p));
    // The comments are written; posting them is refused, naming the id, and nothing is posted.
    let written = with_gh(&p, p.rlm(&["job", "export", &id, "--format", "github-comments"])).run();
    written.assert_exit(0);
    assert_eq!(written.stdout.lines().count(), 3);
    let out = with_gh(
        &p,
        p.rlm(&["job", "export", &id, "--format", "github-comments", "--post", "--yes"]),
    )
    .run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("--post: 'e1' is not a pull request number") && out.stderr.contains("nothing was posted"),
        "{}",
        out.stderr
    );
    let errors = out.stderr.lines().filter(|l| l.contains("error")).count();
    assert_eq!(errors, 1, "{}", out.stderr);
    assert!(
        gh_log(&p).iter().all(|l| !l.starts_with("pr comment")),
        "{:?}",
        gh_log(&p)
    );
}

#[test]
fn a_missing_prompt_schema_or_context_file_names_its_phase_and_key() {
    let mock = MockLlm::start();
    for (from, to, said) in [
        (
            "prompt = \"report.md\"",
            "prompt = \"nope.md\"",
            "phase 2 (report): `prompt`: cannot read it",
        ),
        (
            "output_schema = \"item.schema.json\"",
            "output_schema = \"nope.json\"",
            "phase 1 (classify): `output_schema`: cannot read it",
        ),
        (
            "context = \"GUIDE.md\"",
            "context = \"NOPE.md\"",
            "`context`: cannot read it",
        ),
    ] {
        let p = job_project(2, 2, &[], REPORT_PHASE);
        p.write("job.toml", &p.read("job.toml").replace(from, to));
        let out = p.rlm(&job_args(&mock.url(), &[])).run();
        out.assert_exit(2);
        assert!(
            out.stderr.contains(&format!("job.toml: {said}")) && out.stderr.to_lowercase().contains("nope"),
            "{}",
            out.stderr
        );
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
        assert!(jobs(&p).is_empty());
    }
    assert_eq!(mock.requests(), 0);
}

#[test]
fn phases_not_yet_run_are_pending_in_json_and_the_report_counts_in_good_grammar() {
    let mock = MockLlm::start();
    let p = job_project(1, 1, &[], REPORT_PHASE);
    let out = p.rlm(&job_args(&mock.url(), &["--pause-after", "1", "--json"])).run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(doc["status"], "PAUSED");
    assert_eq!(doc["phases"][0]["status"], "completed");
    assert_eq!(doc["phases"][1]["status"], "pending", "{doc}");
    let id = job_id(&only_job(&p));
    let status = p.rlm(&["job", "status", &id, "--json"]).run();
    assert_eq!(status.json()["phases"][1]["status"], "pending");
    let text = p.rlm(&["job", "status", &id]).run();
    assert!(text.stdout.contains("pending"), "{}", text.stdout);

    p.rlm(&["job", "resume", &id, "-q"]).run().assert_exit(0);
    let report = std::fs::read_to_string(only_job(&p).join("report.md")).unwrap();
    assert!(
        report.contains("- classify (map): 1 of 1 batch, 1 item answered, 0 unprocessed"),
        "{report}"
    );
    assert!(
        report.contains("- report (report): the narrative written by the model"),
        "{report}"
    );
}

#[test]
fn resuming_a_budget_stop_without_a_higher_max_cost_says_what_was_spent() {
    let mock = MockLlm::start();
    // Answers far longer than the estimate expects: the spend crosses --max-cost mid-job.
    let hints: Vec<(usize, String)> = (1..=6)
        .map(|i| (i, fields_hint(&json!({"kind": "fix", "topic": "long ".repeat(4000)}))))
        .collect();
    let p = job_project(6, 1, &hints, "");
    let dry = p.rlm(&job_args(&mock.url(), &["--dry-run", "--json"])).run();
    let estimate = dry.json()["estimate"]["usd"].as_f64().unwrap();
    let max = format!("{:.4}", estimate * 1.1);
    let out = p
        .rlm(&job_args(
            &mock.url(),
            &["-j", "1", "--max-cost", &max, "--yes", "--json"],
        ))
        .run();
    out.assert_exit(1);
    assert_eq!(out.json()["status"], "BUDGET_EXCEEDED", "{}", out.stderr);
    // The stop is worded as `rlm batch` words it, the budget as given.
    let stopped = out.json()["stopped"].as_str().unwrap_or_default().to_string();
    assert!(
        stopped.starts_with("the cost so far ($")
            && stopped.contains(&format!(") reached --max-cost (${max}): dispatching stopped"))
            && stopped.contains("rlm job resume --max-cost with a higher budget goes on"),
        "{stopped}"
    );
    let id = job_id(&only_job(&p));
    let before = mock.requests();
    let out = p.rlm(&["job", "resume", &id]).run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("the job has spent $")
            && out.stderr.contains(&format!("exceeds --max-cost (${max})"))
            && out.stderr.contains("higher --max-cost")
            && !out.stderr.contains("$0.00"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.requests(), before, "nothing was sent");
}

/// A server that answered the first phase and then hangs: the second phase's calls coming
/// back with nothing are its going silent (the job's earlier phase heard it), said so once.
#[test]
fn a_server_that_answered_an_earlier_phase_and_then_hangs_stopped_answering() {
    let mock = MockLlm::start();
    let tag = "\n[[phase]]\nname = \"tag\"\nkind = \"map\"\nprompt = \"tag.md\"\noutput_schema = \"item.schema.json\"\nbatch_size = 2\n";
    let p = job_project(6, 3, &[], tag).file("tag.md", "TAG-ENTRIES: give each entry its kind again.");
    mock.fault_when("TAG-ENTRIES", vec![Fault::Hang; 50]);
    let out = p
        .rlm(&job_args(&mock.url(), &["--timeout", "1", "-j", "2", "--yes"]))
        .run();
    out.assert_exit(3);
    assert!(out.stderr.contains("stopped answering"), "{}", out.stderr);
    assert!(!out.stderr.contains("never answered"), "{}", out.stderr);
}

/// A schema no answer object can pass (`false`, a `type` that is not an object, one that
/// forbids the id) would have every batch paid for, rejected and asked again until it
/// failed: it is refused before anything is written or paid, naming the phase and the key.
#[test]
fn a_schema_no_answer_can_pass_is_refused_before_anything_is_paid() {
    let mock = MockLlm::start();
    for (schema, said) in [
        ("false", "accepts nothing"),
        (r#"{"type":"string"}"#, "`type` is \"string\""),
        (
            r#"{"type":"object","additionalProperties":false,"properties":{"kind":{"enum":["fix"]}}}"#,
            "\"id\" is not one of them",
        ),
    ] {
        let p = job_project(4, 2, &[], REPORT_PHASE);
        p.write("item.schema.json", schema);
        let out = p.rlm(&job_args(&mock.url(), &["--yes"])).run();
        out.assert_exit(2);
        assert!(
            out.stderr
                .contains("job.toml: phase 1 (classify): `output_schema`: no answer can pass item.schema.json")
                && out.stderr.contains(said),
            "{schema}: {}",
            out.stderr
        );
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
        assert!(jobs(&p).is_empty());
    }
    assert_eq!(mock.requests(), 0, "nothing is sent for a schema no answer can pass");
}

/// `rlm resume` of a job that ended names no command that refuses it in turn: `rlm job
/// resume` has nothing to take up either, and a rerun is what redoes a phase.
#[test]
fn rlm_resume_of_a_job_that_ended_says_there_is_nothing_to_resume() {
    let mock = MockLlm::start();
    let p = job_project(2, 2, &[], REPORT_PHASE);
    p.rlm(&job_args(&mock.url(), &[])).run().assert_exit(0);
    let id = job_id(&only_job(&p));
    let calls = mock.requests();
    let job_resume = p.rlm(&["job", "resume", &id]).run();
    job_resume.assert_exit(2);
    let out = p.rlm(&["resume", &id]).run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("nothing to resume") && out.stderr.contains(&format!("rlm job rerun {id} --phase N")),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("rlm job resume"), "{}", out.stderr);
    assert_eq!(mock.requests(), calls);
}

/// `rlm job status --json` accounts for every call the job paid for: after a rerun with a
/// new prompt, the calls of the phase's earlier run are the job's still (`calls`, and
/// `earlier` beside the phases, which show their latest run), so the phases and `earlier`
/// add up to `cost_usd`, and `calls` is what the server answered.
#[test]
fn job_status_counts_the_calls_and_cost_of_runs_a_rerun_replaced() {
    let mock = MockLlm::start();
    let p = job_project(4, 2, &[], REPORT_PHASE).file("classify-v2.md", "CLASSIFY-AGAIN: the kinds, again.");
    p.rlm(&job_args(&mock.url(), &["-q"])).run().assert_exit(0);
    let id = job_id(&only_job(&p));
    p.rlm(&["job", "rerun", &id, "--phase", "1", "--prompt", "classify-v2.md", "-q"])
        .run()
        .assert_exit(0);
    let status = p.rlm(&["job", "status", &id, "--json"]).run();
    status.assert_exit(0);
    let doc = status.json();
    assert_eq!(doc["calls"], json!(mock.requests()), "{doc}");
    let phases: f64 = doc["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["cost_usd"].as_f64().unwrap())
        .sum();
    let earlier = doc["earlier"]["cost_usd"].as_f64().unwrap();
    assert!(earlier > 0.0, "{doc}");
    assert!(
        (phases + earlier - doc["cost_usd"].as_f64().unwrap()).abs() < 1e-9,
        "{doc}"
    );
    let text = p.rlm(&["job", "status", &id]).run();
    assert!(text.stdout.contains("in runs a rerun replaced"), "{}", text.stdout);
}

/// An item that cannot fit the model's context window alone is no batch any provider can
/// answer (it refuses the call as too long, every time and every rerun, with the batch's
/// other items): it should be named before anything is paid, or its batch cut to fit.
#[test]
fn an_item_larger_than_the_context_window_is_named_before_anything_is_sent() {
    let mock = MockLlm::start();
    let p = job_project(3, 3, &[], "");
    let mut entries = p.read("entries.jsonl");
    entries.push_str(&json!({"id": "huge", "text": "word ".repeat(400_000)}).to_string());
    entries.push('\n');
    p.write("entries.jsonl", &entries);
    let out = p
        .rlm(&job_args(
            &mock.url(),
            &["--context-window", "32000", "--max-tokens", "4000", "--yes"],
        ))
        .run();
    out.assert_exit(2);
    assert!(
        out.stderr
            .contains("phase 1 (classify): item huge is about 500006 tokens, more than the context window of")
            && out.stderr.contains("(32000 tokens)"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(jobs(&p).is_empty());
    // Items that fit are sent as ever.
    p.write(
        "entries.jsonl",
        &p.read("entries.jsonl").lines().take(3).collect::<Vec<_>>().join("\n"),
    );
    let out = p
        .rlm(&job_args(
            &mock.url(),
            &["--context-window", "32000", "--max-tokens", "4000", "--yes"],
        ))
        .run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 1);
}

/// `--deadline` stops dispatching and lets the calls in flight finish, as it does for `rlm
/// batch`: it is no Ctrl-C. A Ctrl-C after it starts the grace period, it does not cut the
/// calls off at once, so their answers (paid for) are kept and a resume does not pay for
/// them again.
#[test]
fn a_deadline_lets_the_calls_in_flight_finish_and_a_later_ctrl_c_does_not_cut_them_off() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_secs(4));
    let p = job_project(6, 2, &[], REPORT_PHASE);
    let run = p.rlm(&job_args(&mock.url(), &["--deadline", "1s", "--yes"])).spawn();
    assert!(wait_until(Duration::from_secs(20), || mock.in_flight() == 3));
    // Past the deadline, the three map calls still in flight.
    std::thread::sleep(Duration::from_millis(1500));
    run.signal("INT");
    let out = run.wait();
    out.assert_exit(130);
    let dir = only_job(&p);
    assert_eq!(batch_outputs(&dir, "classify").len(), 3, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("the --deadline passed: dispatching stopped; the 3 calls in flight finish and are kept"),
        "{}",
        out.stderr
    );
    assert_eq!(map_requests(&mock).len(), 3);
    mock.set_latency(Duration::ZERO);
    p.rlm(&["job", "resume", &job_id(&dir), "-q"]).run().assert_exit(0);
    assert_eq!(map_requests(&mock).len(), 3, "no map call is paid for twice");
}

/// A job stopped half-way through a phase (Ctrl-C) has no phase running and no ETA in
/// `rlm job status`: nobody works on it until `rlm job resume` (it said `running · ETA ~0s`).
#[test]
fn a_job_stopped_in_a_phase_shows_it_stopped_with_no_eta() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(400));
    let p = job_project(20, 2, &[], REPORT_PHASE);
    let run = p.rlm(&job_args(&mock.url(), &["-j", "1", "--yes"])).spawn();
    assert!(wait_until(Duration::from_secs(30), || jobs(&p)
        .first()
        .is_some_and(|dir| batch_outputs(dir, "classify").len() >= 2)));
    let out = stops_at_once_on_ctrl_c(run);
    let dir = only_job(&p);
    let done = batch_outputs(&dir, "classify").len();
    assert!(
        (2..10).contains(&done),
        "stopped half-way: {done} of 10 batches: {}",
        out.stderr
    );
    let status = p.rlm(&["job", "status", &job_id(&dir)]).run();
    status.assert_exit(0);
    assert!(status.stdout.contains("Status: INTERRUPTED"), "{}", status.stdout);
    let classify = status
        .stdout
        .lines()
        .find(|l| l.contains("classify"))
        .unwrap_or_default();
    assert!(classify.contains("stopped"), "{}", status.stdout);
    assert!(!status.stdout.contains("ETA"), "{}", status.stdout);
    let json = p.rlm(&["job", "status", &job_id(&dir), "--json"]).run();
    assert!(
        json.json()["eta_seconds"]
            .as_array()
            .unwrap()
            .iter()
            .all(Value::is_null),
        "{}",
        json.stdout
    );
}

/// Ctrl-C while a job's `command` lists its items ends that command with rlm: the process
/// supervision promises no orphans.
#[test]
fn ctrl_c_while_the_ingest_command_runs_leaves_no_orphan() {
    let mock = MockLlm::start();
    let p = job_project(2, 2, &[], "");
    p.write(
        "job.toml",
        &p.read("job.toml").replace(
            "input = \"entries.jsonl\"",
            "command = [\"sh\", \"-c\", \"echo $$ > ingest.pid; sleep 30; cat entries.jsonl\"]",
        ),
    );
    let run = p.rlm(&job_args(&mock.url(), &["--yes"])).spawn();
    assert!(wait_until(Duration::from_secs(20), || p.exists("ingest.pid")
        && !p.read("ingest.pid").trim().is_empty()));
    let pid = p.read("ingest.pid").trim().to_string();
    run.signal("INT");
    let out = run.wait();
    assert_eq!(out.status, 130, "{}", out.stderr);
    // Exit 130 said by rlm, not its death by the signal.
    assert!(
        out.stderr.contains("interrupted: the job's command sh was stopped"),
        "{}",
        out.stderr
    );
    assert!(gone_soon(&pid), "the ingest command {pid} outlived rlm");
    assert_eq!(mock.requests(), 0);
}

/// Ctrl-C while gh lists the pull requests of `rlm job pr-review`, or while gh is asked
/// whether it sees the repository (a PR review from `--input`), ends gh with rlm, as it ends
/// a job's `command`.
#[test]
fn ctrl_c_while_gh_runs_before_a_pr_review_leaves_no_orphan() {
    let mock = MockLlm::start();
    let p = gh_project(&pull_requests(3));
    let url = mock.url();
    for (hang_on, extra) in [("pr list", &[][..]), ("repo view", &["--input", "gh/prs.json"][..])] {
        let _ = std::fs::remove_file(p.path().join("gh.log.pid"));
        let mut args = vec![
            "job",
            "pr-review",
            "acme/widgets",
            "--vision",
            "VISION.md",
            "--base-url",
            &url,
            "--yes",
        ];
        args.extend_from_slice(extra);
        let run = with_gh(&p, p.rlm(&args)).env("GH_HANG_ON", hang_on).spawn();
        assert!(
            wait_until(Duration::from_secs(20), || p.exists("gh.log.pid")
                && !p.read("gh.log.pid").trim().is_empty()),
            "gh {hang_on} never ran"
        );
        let pid = p.read("gh.log.pid").trim().to_string();
        let out = stops_at_once_on_ctrl_c(run);
        assert!(
            out.stderr.contains(&format!("interrupted: gh {hang_on}")),
            "{}",
            out.stderr
        );
        assert!(gone_soon(&pid), "gh {hang_on} ({pid}) outlived rlm");
    }
    assert_eq!(mock.requests(), 0);
    assert!(jobs(&p).is_empty(), "no job was created");
}

/// The cost question, asked at a terminal, answers Ctrl-C: the job listens to Ctrl-C from
/// before it lists its items, and a read of stdin would not hear it. The job ends at once,
/// exit 130, nothing created and nothing sent.
#[test]
fn ctrl_c_at_the_cost_question_ends_the_job_before_it_starts() {
    let mock = MockLlm::start();
    // Prices that put the estimate above $1 (asked about) and below $10 (--force).
    let prices = r#"{"rlm": {"prices": {"claude-sonnet-5-5": {"input": 5000.0, "output": 5000.0}}}}"#;
    let p = job_project(2, 2, &[], "").file(".aiwg/aiwg.config", prices);
    let run = p.rlm(&job_args(&mock.url(), &[])).terminal().spawn();
    run.await_stderr("Proceed? (y/n)");
    let out = stops_at_once_on_ctrl_c(run);
    assert!(
        out.stderr
            .contains("interrupted at the cost question: nothing was called"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.requests(), 0);
    assert!(jobs(&p).is_empty(), "no job was created");
}

/// Ctrl-C while a job waits for a busy local server to say which model it serves (a wait
/// of up to minutes) ends the wait: exit 130, before the job is created.
#[test]
fn ctrl_c_while_the_model_is_discovered_ends_the_job_before_it_starts() {
    let mock = MockLlm::start();
    mock.set_models_latency(Duration::from_secs(30));
    let p = job_project(2, 2, &[], "");
    let run = p
        .rlm(&job_args(&mock.url(), &["--yes"]))
        .env_remove("ANTHROPIC_API_KEY")
        .spawn();
    run.await_stderr("/v1/models");
    let out = stops_at_once_on_ctrl_c(run);
    assert!(
        out.stderr
            .contains("interrupted while asking the server which model it serves"),
        "{}",
        out.stderr
    );
    assert!(jobs(&p).is_empty(), "no job was created");
}

/// Ctrl-C while `export --post` posts lets the comment being posted finish, records it and
/// posts no more (exit 130), so that `--post` again posts each comment once; a second
/// Ctrl-C stops gh itself, leaving it neither running nor recorded.
#[test]
fn ctrl_c_while_comments_are_posted_stops_after_the_one_being_posted() {
    let mock = MockLlm::start();
    let p = three_fixes_to_review_with_gh();
    // Pull request numbers for ids, as gh pr comment needs.
    p.write(
        "entries.jsonl",
        &p.read("entries.jsonl").replace("\"id\":\"e", "\"id\":\""),
    );
    p.write("job.toml", &format!("repo = \"acme/widgets\"\n{}", p.read("job.toml")));
    p.rlm(&job_args(&mock.url(), &["-q"])).run().assert_exit(0);
    let dir = only_job(&p);
    let id = job_id(&dir);
    let post = |seconds: &str| {
        let _ = std::fs::remove_file(p.path().join("gh.log.pid"));
        let run = with_gh(
            &p,
            p.rlm(&["job", "export", &id, "--format", "github-comments", "--post", "--yes"]),
        )
        .env("GH_HANG_ON", "pr comment")
        .env("GH_HANG_SECONDS", seconds)
        .spawn();
        assert!(wait_until(Duration::from_secs(20), || p.exists("gh.log.pid")
            && !p.read("gh.log.pid").trim().is_empty()));
        let pid = p.read("gh.log.pid").trim().to_string();
        (run, pid)
    };
    let comments = || gh_log(&p).iter().filter(|l| l.starts_with("pr comment")).count();
    let recorded = || {
        std::fs::read_to_string(dir.join("comments-posted.jsonl"))
            .unwrap_or_default()
            .lines()
            .count()
    };

    let (run, pid) = post("2");
    run.signal("INT");
    let out = run.wait();
    out.assert_exit(130);
    assert!(
        out.stderr
            .contains("interrupted: 1 comment(s) posted, the rest not: --post again posts them"),
        "{}",
        out.stderr
    );
    assert!(gone_soon(&pid));
    assert_eq!((comments(), recorded()), (1, 1));

    let (run, pid) = post("30");
    run.signal("INT");
    std::thread::sleep(Duration::from_millis(300));
    let out = stops_at_once_on_ctrl_c(run);
    assert!(
        out.stderr.contains("gh was stopped while it posted on acme/widgets#2"),
        "{}",
        out.stderr
    );
    assert!(gone_soon(&pid), "gh pr comment ({pid}) outlived rlm");
    assert_eq!((comments(), recorded()), (2, 1));

    let rest = with_gh(
        &p,
        p.rlm(&["job", "export", &id, "--format", "github-comments", "--post", "--yes"]),
    )
    .run();
    rest.assert_exit(0);
    assert_eq!((comments(), recorded()), (4, 3), "the first is not posted again");
}

/// Whether the process `pid`, which leads its own process group, is gone within ten
/// seconds. If not, its group is killed, so that a failing test leaves nothing running.
pub(crate) fn gone_soon(pid: &str) -> bool {
    let alive = || {
        std::process::Command::new("kill")
            .args(["-0", pid])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let gone = wait_until(Duration::from_secs(10), || !alive());
    if !gone {
        let _ = std::process::Command::new("kill")
            .args(["-9", "--", &format!("-{pid}")])
            .status();
    }
    gone
}

/// `rlm job list` with only a job whose `job.json` cannot be read says no job can be read,
/// not that there are no jobs yet (the warning names the job).
#[test]
fn job_list_with_only_an_unreadable_job_says_so() {
    let mock = MockLlm::start();
    let p = job_project(2, 2, &[], "");
    p.rlm(&job_args(&mock.url(), &["-q"])).run().assert_exit(0);
    let dir = only_job(&p);
    std::fs::write(dir.join("job.json"), "{ not json").unwrap();
    let list = p.rlm(&["job", "list"]).run();
    list.assert_exit(0);
    assert!(list.stdout.contains("No job can be read"), "{}", list.stdout);
    assert!(!list.stdout.contains("No jobs yet"), "{}", list.stdout);
    assert!(list.stderr.contains(&job_id(&dir)), "{}", list.stderr);
}

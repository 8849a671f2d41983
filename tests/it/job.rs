//! `rlm job` through the binary: job files (TOML and JSON) with map, reduce and report
//! phases; invalid answers asked for again, then their items unprocessed and a rerun that
//! takes only them; a PR review of a few hundred pull requests from a stand-in `gh`;
//! `kill -9` in the map phase, then `resume` without paying twice; `rerun --phase 2`
//! without a map call; `--pause-after`; export in its three formats; `--post` only with
//! the flag.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::mock_llm::*;
use crate::support::*;

/// What the map prompt says, so its requests can be told apart.
pub(crate) const MAP_PROMPT: &str = "CLASSIFY-ENTRIES: give each entry its kind.";
pub(crate) const REDUCE_PROMPT: &str = "GROUP-ENTRIES: confirm the groups.";

pub(crate) const ITEM_SCHEMA: &str = r#"{"type":"object","properties":{"id":{"type":"string"},"kind":{"enum":["fix","feature","docs"]},
"topic":{"type":"string"}},"required":["id","kind","topic"]}"#;

/// A stand-in for the GitHub CLI: gh's JSON shapes from `$GH_DATA/prs.json`, a diff per
/// pull request, comments read from stdin; every invocation appended to `$GH_LOG`.
/// `GH_FAIL=auth|repo` answers as a logged-out gh or for an unknown repository (only the
/// command `GH_FAIL_ON` names, e.g. `pr diff`, when it is set); `GH_NO_DIFF="3 7"` has no
/// diff for those pull requests, as gh says of a number that is no pull request;
/// `GH_HANG_ON="pr list"` makes that command write its pid to `$GH_LOG.pid` and hang
/// (`GH_HANG_SECONDS`, 30 unless set).
pub(crate) const GH: &str = r#"#!/bin/sh
printf '%s\n' "$*" >> "$GH_LOG"
repo=$(printf '%s\n' "$@" | awk 'prev == "-R" { print; exit } { prev = $0 }')
[ -n "$repo" ] || repo=$3
if [ -z "$GH_FAIL_ON" ] || [ "$1 $2" = "$GH_FAIL_ON" ]; then
  case "$GH_FAIL" in
    auth) printf 'To get started with GitHub CLI, please run:  gh auth login\nAlternatively, populate the GH_TOKEN environment variable with a GitHub API authentication token.\n' >&2; exit 4 ;;
    repo) echo "GraphQL: Could not resolve to a Repository with the name '$repo'. (repository)" >&2; exit 1 ;;
  esac
fi
if [ "$1 $2" = "$GH_HANG_ON" ]; then echo $$ > "$GH_LOG.pid"; sleep "${GH_HANG_SECONDS:-30}"; fi
case "$1 $2" in
  "pr list") cat "$GH_DATA/prs.json" ;;
  "pr diff")
    for n in $GH_NO_DIFF; do
      if [ "$n" = "$3" ]; then
        echo "GraphQL: Could not resolve to a PullRequest with the number of $3. (repository.pullRequest)" >&2; exit 1
      fi
    done
    printf 'diff --git a/src/f%s.rs b/src/f%s.rs\n@@ -1 +1 @@\n-old\n+new %s\n' "$3" "$3" "$3" ;;
  "pr comment") cat >> "$GH_LOG.bodies"; printf '\n---\n' >> "$GH_LOG.bodies" ;;
  "repo view") printf '{"name":"%s"}\n' "${repo#*/}" ;;
  *) echo "gh stand-in: unknown command: $*" >&2; exit 1 ;;
esac
"#;

/// A project with a job file: `entries.jsonl` of `n` entries, a map phase `classify`
/// (batches of `batch`) and the phases `extra` adds.
pub(crate) fn job_project(n: usize, batch: usize, hints: &[(usize, String)], extra: &str) -> Project {
    let mut entries = String::new();
    for i in 1..=n {
        let hint = hints
            .iter()
            .filter(|(at, _)| *at == i)
            .map(|(_, h)| h.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        entries.push_str(&json!({"id": format!("e{i}"), "text": format!("entry {i} {hint}")}).to_string());
        entries.push('\n');
    }
    Project::new()
        .file("entries.jsonl", &entries)
        .file("classify.md", MAP_PROMPT)
        .file("group.md", REDUCE_PROMPT)
        .file("report.md", "Summarize the triage.")
        .file("GUIDE.md", "The project's guide.")
        .file("item.schema.json", ITEM_SCHEMA)
        .file(
            "job.toml",
            &format!(
                "name = \"triage\"\ninput = \"entries.jsonl\"\nid = \"id\"\ncontext = \"GUIDE.md\"\n\n[[phase]]\n\
                 name = \"classify\"\nkind = \"map\"\nprompt = \"classify.md\"\noutput_schema = \"item.schema.json\"\n\
                 batch_size = {batch}\n{extra}"
            ),
        )
}

pub(crate) const REPORT_PHASE: &str = "\n[[phase]]\nname = \"report\"\nkind = \"report\"\nprompt = \"report.md\"\n";
pub(crate) const REDUCE_PHASE: &str =
    "\n[[phase]]\nname = \"groups\"\nkind = \"reduce\"\nprompt = \"group.md\"\ngroup_by = \"topic\"\n";

pub(crate) fn job_args<'a>(url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["job", "run", "job.toml", "--base-url", url];
    args.extend_from_slice(extra);
    args
}

/// The job directories, oldest first.
pub(crate) fn jobs(p: &Project) -> Vec<PathBuf> {
    let root = p.path().join(".aiwg/rlm/jobs");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .map(|e| e.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    dirs.sort();
    dirs
}

pub(crate) fn only_job(p: &Project) -> PathBuf {
    let all = jobs(p);
    assert_eq!(all.len(), 1, "{all:?}");
    all[0].clone()
}

pub(crate) fn job_id(dir: &Path) -> String {
    dir.file_name().unwrap().to_string_lossy().into_owned()
}

/// The map phase's requests, by the ids of the entries they carried.
pub(crate) fn map_requests(mock: &MockLlm) -> Vec<Vec<String>> {
    mock.recorded()
        .iter()
        .filter(|r| r.system_text().contains(MAP_PROMPT))
        .map(|r| {
            let user = r.user_text();
            (1..=200)
                .map(|i| format!("e{i}"))
                .filter(|id| user.contains(&format!("\"id\":\"{id}\"")))
                .collect()
        })
        .collect()
}

pub(crate) fn batch_outputs(dir: &Path, phase: &str) -> Vec<String> {
    let d = dir.join("batches").join(phase);
    if !d.is_dir() {
        return Vec::new();
    }
    file_names(&d)
        .into_iter()
        .filter(|n| n.ends_with("-output.json"))
        .collect()
}

#[test]
fn a_job_file_with_map_and_report_phases_runs_to_its_report() {
    let mock = MockLlm::start();
    let p = job_project(10, 4, &[], REPORT_PHASE);
    let out = p.rlm(&job_args(&mock.url(), &["--json"])).run();
    out.assert_exit(0);
    let doc = out.json();
    let dir = only_job(&p);
    assert_eq!(doc["job_id"], job_id(&dir));
    assert_eq!(doc["dir"], dir.display().to_string());
    assert_eq!(doc["status"], "SUCCESS");
    // Three map batches (4 + 4 + 2) and one report call.
    assert_eq!(mock.requests(), 4);
    assert_eq!(
        map_requests(&mock)
            .iter()
            .map(Vec::len)
            .collect::<Vec<_>>()
            .iter()
            .sum::<usize>(),
        10
    );
    // Structured output: {"items": [...]} with the per-item schema inside.
    let first = mock
        .recorded()
        .into_iter()
        .find(|r| r.system_text().contains(MAP_PROMPT))
        .unwrap();
    assert_eq!(
        first.body["tools"][0]["input_schema"]["properties"]["items"]["type"],
        "array"
    );
    assert_eq!(
        first.body["tools"][0]["input_schema"]["properties"]["items"]["items"]["properties"]["kind"]["enum"][0],
        "fix"
    );
    assert!(
        first.system_text().contains("The project's guide."),
        "the context reaches every worker"
    );
    for file in [
        "job.json",
        "data/items.json",
        "data/classify.json",
        "data/report.json",
        "batches/classify/batch-001-input.json",
        "batches/classify/batch-003-output.json",
        "prompts/01-classify.md",
        "prompts/01-classify.schema.json",
        "prompts/02-report.md",
        "prompts/context.md",
        "events.jsonl",
        "report.md",
        "report.json",
    ] {
        assert!(dir.join(file).is_file(), "{file} is missing");
    }
    let answers = read_json(&dir.join("data/classify.json"));
    let ids: Vec<&str> = answers
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, (1..=10).map(|i| format!("e{i}")).collect::<Vec<_>>());
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("| fix | 10 |"), "counts come from the data:\n{report}");
    assert!(report.contains("Narrative (written by the model)"), "{report}");
    let record = read_json(&dir.join("job.json"));
    assert_eq!(record["settings"]["base_url"], mock.url());
    assert!(!std::fs::read_to_string(dir.join("job.json"))
        .unwrap()
        .contains(TEST_KEY));
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    assert!(events.contains("\"event\":\"batch:completed\"") && events.contains("\"event\":\"job:ended\""));
    // Each batch's line counts its items; the report's call answers for none of its own.
    assert!(
        out.stderr.contains("classify/batch-003 completed (2 items, "),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("report/batch-001 completed ("), "{}", out.stderr);
    assert!(!out.stderr.contains("(0 items"), "{}", out.stderr);

    // Listed by rlm job list and, as a run of kind job, by rlm list / rlm status.
    let list = p.rlm(&["job", "list", "--json"]).run();
    list.assert_exit(0);
    assert_eq!(list.json()[0]["job_id"], job_id(&dir));
    assert_eq!(list.json()[0]["status"], "SUCCESS");
    let runs = p.rlm(&["list", "--json"]).run();
    runs.assert_exit(0);
    assert!(runs.stdout.contains(&job_id(&dir)), "{}", runs.stdout);
    let status = p.rlm(&["job", "status", &job_id(&dir)]).run();
    status.assert_exit(0);
    assert!(
        status.stdout.contains("classify") && status.stdout.contains("batches 3/3"),
        "{}",
        status.stdout
    );
    p.rlm(&["status", &job_id(&dir)]).run().assert_exit(0);
}

#[test]
fn the_same_keys_as_json_are_a_job_file_too() {
    let mock = MockLlm::start();
    let p = job_project(3, 5, &[], "").file(
        "job.json",
        r#"{"name": "triage", "input": "entries.jsonl", "phase": [
            {"name": "classify", "kind": "map", "prompt": "classify.md", "output_schema": "item.schema.json"}]}"#,
    );
    let out = p
        .rlm(&["job", "run", "job.json", "--base-url", &mock.url(), "-q"])
        .run();
    out.assert_exit(0);
    assert_eq!(
        read_json(&only_job(&p).join("data/classify.json"))
            .as_array()
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn invalid_answers_are_asked_for_again_then_their_items_are_unprocessed_and_a_rerun_takes_only_them() {
    let mock = MockLlm::start();
    // e2 always answers an invalid kind; e5 only on the first attempt.
    let hints = [
        (2, fields_hint(&json!({"kind": "bogus"}))),
        (5, first_attempt_hint(&json!({"kind": "bogus"}))),
    ];
    let p = job_project(6, 3, &hints, "");
    let out = p.rlm(&job_args(&mock.url(), &["--json"])).run();
    out.assert_exit(1);
    assert_eq!(out.json()["status"], "PARTIAL");
    let dir = only_job(&p);
    let calls = map_requests(&mock);
    let first_batch = calls.iter().filter(|ids| ids.contains(&"e1".to_string())).count();
    let second_batch = calls.iter().filter(|ids| ids.contains(&"e4".to_string())).count();
    assert_eq!(first_batch, 3, "one answer and two retries (the default)");
    assert_eq!(second_batch, 2, "a valid second answer is kept");
    let reasked: Vec<Recorded> = mock
        .recorded()
        .into_iter()
        .filter(|r| r.user_text().contains(REASKED_PHRASE))
        .collect();
    assert_eq!(reasked.len(), 3);
    assert!(
        reasked
            .iter()
            .any(|r| r.user_text().contains("items[1] (\"id\" e2) at /kind")),
        "the errors are appended: {}",
        reasked[0].user_text()
    );
    let record = read_json(&dir.join("job.json"));
    assert_eq!(record["phases"][0]["unprocessed"], json!(["e1", "e2", "e3"]));
    assert_eq!(record["phases"][0]["batches_failed"], 1);
    assert!(dir.join("batches/classify/batch-001-rejected.txt").is_file());
    assert!(!dir.join("batches/classify/batch-001-output.json").exists());
    let answers = read_json(&dir.join("data/classify.json"));
    assert_eq!(answers.as_array().unwrap().len(), 3, "e4-e6 are answered");
    let status = p.rlm(&["job", "status", &job_id(&dir)]).run();
    assert!(status.stdout.contains("Unprocessed: 3 items"), "{}", status.stdout);

    // Resume does not send the failed batch again; a rerun sends only its items.
    mock.reset_counts();
    let rerun = p.rlm(&["job", "rerun", &job_id(&dir), "--phase", "1", "-q"]).run();
    rerun.assert_exit(1);
    let calls = map_requests(&mock);
    assert!(!calls.is_empty());
    for ids in &calls {
        assert_eq!(ids, &["e1", "e2", "e3"], "only the unprocessed items are sent again");
    }
    let answers = read_json(&dir.join("data/classify.json"));
    assert_eq!(answers.as_array().unwrap().len(), 3, "the answers of e4-e6 are kept");
}

#[test]
fn kill_9_in_the_map_phase_then_resume_pays_for_no_completed_batch() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(200));
    let p = job_project(40, 2, &[], REPORT_PHASE);
    let running = p.rlm(&job_args(&mock.url(), &["-j", "2"])).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || {
            jobs(&p)
                .first()
                .is_some_and(|d| batch_outputs(d, "classify").len() >= 4)
        }),
        "the map phase makes progress"
    );
    running.signal("KILL");
    let _ = running.wait();
    let dir = only_job(&p);
    let done_before: Vec<Value> = batch_outputs(&dir, "classify")
        .iter()
        .map(|name| read_json(&dir.join("batches/classify").join(name)))
        .collect();
    assert!(done_before.len() < 20, "killed mid-phase");

    let status = p.rlm(&["job", "status", "--json"]).run();
    status.assert_exit(0);
    assert_eq!(status.json()["status"], "RUNNING");
    assert_eq!(status.json()["owner_gone"], true);
    assert!(
        status.json()["eta_seconds"]
            .as_array()
            .unwrap()
            .iter()
            .all(Value::is_null),
        "no ETA for a job nobody works on: {}",
        status.stdout
    );
    let shown = p.rlm(&["status", &job_id(&dir)]).run();
    assert!(
        shown
            .stdout
            .contains(&format!("`rlm job resume {}` goes on", job_id(&dir))),
        "{}",
        shown.stdout
    );

    mock.set_latency(Duration::ZERO);
    let out = p.rlm(&["job", "resume", "--json"]).run();
    out.assert_exit(0);
    assert_eq!(out.json()["status"], "SUCCESS");
    let calls = map_requests(&mock);
    for answer in &done_before {
        let first = answer[0]["id"].as_str().unwrap().to_string();
        let paid = calls.iter().filter(|ids| ids.contains(&first)).count();
        assert_eq!(paid, 1, "{first}'s batch was done before the kill and was paid again");
    }
    assert_eq!(read_json(&dir.join("data/classify.json")).as_array().unwrap().len(), 40);
    assert!(dir.join("report.md").is_file());
}

#[test]
fn pause_after_stops_with_paused_and_resume_goes_on() {
    let mock = MockLlm::start();
    let p = job_project(6, 3, &[], REPORT_PHASE);
    let out = p
        .rlm(&job_args(&mock.url(), &["--pause-after", "classify", "--json"]))
        .run();
    out.assert_exit(0);
    assert_eq!(out.json()["status"], "PAUSED");
    let dir = only_job(&p);
    assert!(dir.join("data/classify.json").is_file());
    assert!(!dir.join("report.md").exists(), "the report is not paid for yet");
    assert_eq!(mock.requests(), 2);
    // An export of the paused job says the report phase has not run, not "0 of 0 batches".
    let export = p.rlm(&["job", "export", &job_id(&dir), "--format", "markdown"]).run();
    export.assert_exit(0);
    assert!(
        export.stdout.contains("- classify (map): 2 of 2 batches"),
        "{}",
        export.stdout
    );
    assert!(
        export.stdout.contains("- report (report): not run yet"),
        "{}",
        export.stdout
    );
    // The run store says PAUSED too, and `rlm resume` points at the job's own resume.
    let list = p.rlm(&["list", "--json"]).run();
    list.assert_exit(0);
    assert_eq!(list.json()[0]["status"], "PAUSED", "{}", list.stdout);
    let resume = p.rlm(&["resume"]).run();
    resume.assert_exit(2);
    assert!(
        resume.stderr.contains(&format!("rlm job resume {}", job_id(&dir))),
        "{}",
        resume.stderr
    );
    let out = p.rlm(&["job", "resume", &job_id(&dir), "--json"]).run();
    out.assert_exit(0);
    assert_eq!(out.json()["status"], "SUCCESS");
    assert_eq!(mock.requests(), 3, "only the report call");
    assert!(dir.join("report.md").is_file());
    let again = p.rlm(&["job", "resume", &job_id(&dir)]).run();
    again.assert_exit(2);
    assert!(again.stderr.contains("nothing to resume"), "{}", again.stderr);
}

/// A job goes on with the provider that answered it, whatever keys the shell of its resume
/// has: with only OPENAI_API_KEY set, a job Claude answered went on at the server as an
/// OpenAI-compatible one with the model it lists, and the report mixed two models' work.
#[test]
fn a_job_resumes_with_the_provider_that_answered_it_whatever_keys_are_set() {
    let mock = MockLlm::start();
    let p = job_project(6, 3, &[], REPORT_PHASE);
    p.rlm(&job_args(&mock.url(), &["--pause-after", "classify"]))
        .run()
        .assert_exit(0);
    let dir = only_job(&p);
    let before = read_json(&dir.join("job.json"));
    assert_eq!(before["resolved"]["provider"], "anthropic", "{before:#}");
    let out = p
        .rlm(&["job", "resume", &job_id(&dir)])
        .env_remove("ANTHROPIC_API_KEY")
        .env("OPENAI_API_KEY", TEST_KEY)
        .run();
    out.assert_exit(0);
    let after = read_json(&dir.join("job.json"));
    assert_eq!(after["resolved"]["provider"], "anthropic", "{}", out.stderr);
    assert_eq!(
        after["resolved"]["models"], before["resolved"]["models"],
        "{}",
        out.stderr
    );
    let report_call = mock.recorded().last().unwrap().path.clone();
    assert_eq!(report_call, "/v1/messages", "the report phase went to the Messages API");
}

#[test]
fn rerun_of_phase_2_makes_no_map_call_and_the_same_prompt_is_served_by_the_cache() {
    let mock = MockLlm::start();
    let hints: Vec<(usize, String)> = (1..=8)
        .map(|i| (i, fields_hint(&json!({"topic": format!("topic-{}", i % 3)}))))
        .collect();
    let p = job_project(8, 4, &hints, &format!("{REDUCE_PHASE}{REPORT_PHASE}"));
    p.rlm(&job_args(&mock.url(), &["-q"])).run().assert_exit(0);
    let dir = only_job(&p);
    let groups = read_json(&dir.join("data/groups.json"));
    assert_eq!(groups.as_array().unwrap().len(), 3, "{groups}");
    assert!(dir.join("data/preclusters.json").is_file());
    assert!(mock.recorded().iter().any(|r| r.system_text().contains(REDUCE_PROMPT)));

    mock.reset_counts();
    let out = p.rlm(&["job", "rerun", &job_id(&dir), "--phase", "2", "--json"]).run();
    out.assert_exit(0);
    assert!(map_requests(&mock).is_empty(), "no map call");
    assert_eq!(
        mock.requests(),
        0,
        "the same prompts and inputs are answered by the cache"
    );
    let record = read_json(&dir.join("job.json"));
    assert_eq!(
        record["phases"][1]["batches_cached"],
        record["phases"][1]["batches_total"]
    );

    // A new prompt pays again, for that phase's calls only.
    p.write("group2.md", "GROUP-ENTRIES again, differently.");
    let out = p
        .rlm(&[
            "job",
            "rerun",
            &job_id(&dir),
            "--phase",
            "groups",
            "--prompt",
            "group2.md",
            "-q",
        ])
        .run();
    out.assert_exit(0);
    assert!(map_requests(&mock).is_empty());
    assert!(mock
        .recorded()
        .iter()
        .any(|r| r.system_text().contains("GROUP-ENTRIES again")));
    assert!(dir.join("prompts/02-groups.v2.md").is_file());
}

/// `n` pull requests in gh's shapes: groups of three duplicates (a shared fingerprint and
/// files), the rest alone (every tenth classified `review`, the others `close`); a lock
/// file in every third one; a few off-vision ones.
pub(crate) fn pull_requests(n: usize) -> Vec<Value> {
    (1..=n)
        .map(|i| {
            let group = (i <= 150).then(|| (i - 1) / 3);
            let fingerprint = group.map_or(format!("single-{i}"), |g| format!("feature-{g}"));
            let mut files = vec![json!({"path": format!("src/{fingerprint}.rs"), "additions": 5, "deletions": 1})];
            if i % 3 == 0 {
                files.push(json!({"path": "Cargo.lock", "additions": 40, "deletions": 12}));
            }
            if i % 2 == 0 {
                files.push(json!({"path": "CHANGELOG.md", "additions": 1, "deletions": 0}));
            }
            // Singletons: every tenth is worth a review, the others are not.
            let verdict = if group.is_some() || i % 10 == 0 {
                "review"
            } else {
                "close"
            };
            let mut hint = json!({"fingerprint": fingerprint, "intent": format!("work on {fingerprint}"),
                "vision_alignment": 7, "quick_verdict": verdict});
            if i > 280 {
                hint["vision_alignment"] = json!(1);
                hint["flags"] = json!(["off-vision"]);
                hint["quick_verdict"] = json!("close");
            }
            // The first duplicate group's refinement names a stranger: it keeps the
            // programmatic ranking.
            let stranger = if i == 1 {
                fields_hint(&json!({"best_candidate": 99999}))
            } else {
                String::new()
            };
            let review = fields_hint(&json!({"verdict": "merge", "recommended_action": "merge", "confidence": 0.9}));
            json!({
                "number": i,
                "title": format!("Work on {fingerprint} ({i})"),
                // The refinement sees a member's first 200 characters: the stranger goes first.
                "body": format!("{stranger}{} {review} {}", fields_hint(&hint), "Long description. ".repeat(40)),
                "author": {"login": format!("dev{}", i % 11), "name": "", "is_bot": false},
                "createdAt": "2026-01-05T10:00:00Z",
                "updatedAt": "2026-02-01T10:00:00Z",
                "labels": [{"name": "enhancement", "color": "a2eeef", "description": "", "id": "LA_1"}],
                "files": files,
                "additions": 6 + i,
                "deletions": 1,
                "comments": [{"author": {"login": "bot"}, "body": "thanks", "createdAt": "2026-01-06T00:00:00Z"}],
                "statusCheckRollup": [{"__typename": "CheckRun", "name": "ci", "status": "COMPLETED",
                    "conclusion": if i % 10 == 0 { "FAILURE" } else { "SUCCESS" }}],
                "reviewDecision": if i % 4 == 0 { "APPROVED" } else { "" },
                "mergeable": if i % 9 == 0 { "CONFLICTING" } else { "MERGEABLE" },
            })
        })
        .collect()
}

/// A project with the stand-in gh on PATH and `prs` as its pull requests.
pub(crate) fn gh_project(prs: &[Value]) -> Project {
    let p = Project::new()
        .file("VISION.md", "# Vision\nA command-line tool. Not a web app.\n")
        .file("gh/prs.json", &Value::Array(prs.to_vec()).to_string())
        .file("bin/gh", GH);
    let status = std::process::Command::new("chmod")
        .args(["+x"])
        .arg(p.path().join("bin/gh"))
        .status()
        .unwrap();
    assert!(status.success());
    p
}

pub(crate) fn with_gh(p: &Project, run: Run) -> Run {
    let path = format!(
        "{}:{}",
        p.path().join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    run.env("PATH", &path)
        .env("GH_DATA", &p.path().join("gh").display().to_string())
        .env("GH_LOG", &p.path().join("gh.log").display().to_string())
}

pub(crate) fn gh_log(p: &Project) -> Vec<String> {
    std::fs::read_to_string(p.path().join("gh.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_pr_review_of_three_hundred_prs_finds_the_duplicates_and_reports_as_the_seed_does() {
    let mock = MockLlm::start();
    let p = gh_project(&pull_requests(300));
    let url = mock.url();
    let out = with_gh(
        &p,
        p.rlm(&[
            "job",
            "pr-review",
            "acme/widgets",
            "--vision",
            "VISION.md",
            "--base-url",
            &url,
            "--json",
            "--yes",
        ]),
    )
    .timeout(Duration::from_secs(120))
    .run();
    out.assert_exit(0);
    assert_eq!(out.json()["status"], "SUCCESS");
    let dir = only_job(&p);
    let log = gh_log(&p);
    assert_eq!(
        log[0],
        "pr list -R acme/widgets --state open --limit 100000 --json number,title,body,author,createdAt,updatedAt,\
         labels,files,additions,deletions,comments,statusCheckRollup,reviewDecision,mergeable"
    );

    // gh's shapes normalized into the seed's record.
    let prs = read_json(&dir.join("data/prs.json"));
    let pr3 = &prs[2];
    assert_eq!(pr3["author"], "dev3");
    assert_eq!(pr3["labels"], json!(["enhancement"]));
    assert_eq!(pr3["files"], json!(["src/feature-0.rs", "Cargo.lock"]));
    assert_eq!(pr3["comments"], 1);
    assert_eq!(pr3["ci_status"], "success");
    assert_eq!(prs[9]["ci_status"], "failure");
    assert_eq!(prs[3]["review_status"], "approved");
    assert_eq!(pr3["review_status"], "none");
    assert_eq!(prs[8]["has_conflicts"], true);
    assert!(pr3["body"].as_str().unwrap().chars().count() <= 501);

    // 50 groups of three, and nothing chained through the lock file or the changelog.
    assert_eq!(
        read_json(&dir.join("data/classifications.json"))
            .as_array()
            .unwrap()
            .len(),
        300
    );
    let pre = read_json(&dir.join("data/preclusters.json"));
    let sizes: Vec<u64> = pre
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["members"].as_array().unwrap().len() as u64)
        .collect();
    assert_eq!(sizes, vec![3; 50], "{pre}");
    let clusters = read_json(&dir.join("data/clusters.json"));
    let clusters = clusters.as_array().unwrap();
    assert_eq!(clusters.len(), 50);
    let first = &clusters[0];
    assert_eq!(
        first["source"], "programmatic",
        "an answer naming a stranger falls back"
    );
    assert!(first["members"].as_array().unwrap().contains(&first["best_candidate"]));
    assert!(clusters[1..].iter().all(|c| c["source"] == "model"));

    // Only the best candidates are reviewed — of the 50 clusters, and the 13 pull requests
    // in none that are classified `review` — each with its diff.
    let reviews = read_json(&dir.join("data/reviews.json"));
    assert_eq!(reviews.as_array().unwrap().len(), 63);
    let diffs = log.iter().filter(|l| l.starts_with("pr diff ")).count();
    assert_eq!(diffs, 63);
    assert!(log.iter().all(|l| !l.starts_with("pr comment")));

    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    for section in [
        "# acme/widgets PR Review Report",
        "**Total PRs scanned**: 300 | **Clusters found**: 50",
        "## Executive Summary",
        "- 100 PRs identified as duplicates (reducible to 200 unique efforts)",
        "- 63 PRs recommended for immediate merge",
        "### Merge (63 PRs)",
        "### Close — Duplicates (100 PRs)",
        "### Close — Off-Vision (20 PRs)",
        "### Needs Human Review (117 PRs)",
        "| #151 | Work on single-151 (151) | dev8 | not reviewed in depth; classified close",
        "## Cluster Details",
        "| #2 | #1 | 90% |",
    ] {
        assert!(report.contains(section), "missing {section:?} in\n{report}");
    }
    let report_json = read_json(&dir.join("report.json"));
    assert_eq!(report_json["totals"]["duplicates"], 100);
    let totals = &report_json["totals"];
    let accounted: u64 = ["merge", "close_duplicates", "close_off_vision", "needs_human_review"]
        .iter()
        .map(|k| totals[k].as_u64().unwrap())
        .sum();
    assert_eq!(accounted, 300, "every pull request in exactly one table: {totals}");

    // Export: JSON, Markdown, GitHub comments — posted only with --post, and --yes without a terminal.
    let id = job_id(&dir);
    let json_out = p.rlm(&["job", "export", &id, "--format", "json"]).run();
    json_out.assert_exit(0);
    assert_eq!(json_out.json()["report"]["totals"]["prs"], 300);
    assert_eq!(json_out.json()["records"].as_array().unwrap().len(), 300);
    let md = p
        .rlm(&["job", "export", &id, "--format", "markdown", "-o", "out/report.md"])
        .run();
    md.assert_exit(0);
    assert_eq!(p.read("out/report.md"), report);
    let comments = with_gh(&p, p.rlm(&["job", "export", &id, "--format", "github-comments"])).run();
    comments.assert_exit(0);
    let lines: Vec<Value> = comments
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 63);
    assert_eq!(lines[0]["repo"], "acme/widgets");
    assert!(
        lines[0]["body"].as_str().unwrap().contains("verdict **merge**"),
        "{}",
        lines[0]
    );
    assert!(dir.join("comments.jsonl").is_file());
    assert!(
        gh_log(&p).iter().all(|l| !l.starts_with("pr comment")),
        "no post without --post"
    );
    let refused = with_gh(
        &p,
        p.rlm(&["job", "export", &id, "--format", "github-comments", "--post"]),
    )
    .run();
    refused.assert_exit(2);
    assert!(refused.stderr.contains("add --yes"), "{}", refused.stderr);
    assert!(
        gh_log(&p).iter().all(|l| !l.starts_with("pr comment")),
        "no post without a yes"
    );
    let posted = with_gh(
        &p,
        p.rlm(&["job", "export", &id, "--format", "github-comments", "--post", "--yes"]),
    )
    .run();
    posted.assert_exit(0);
    let comment_calls: Vec<String> = gh_log(&p).into_iter().filter(|l| l.starts_with("pr comment")).collect();
    assert_eq!(comment_calls.len(), 63);
    assert!(
        comment_calls.contains(&"pr comment 1 -R acme/widgets --body-file -".to_string()),
        "{comment_calls:?}"
    );
    let bodies = std::fs::read_to_string(p.path().join("gh.log.bodies")).unwrap();
    assert!(bodies.contains("rlm PR review"));
    // Posting again posts nothing twice.
    with_gh(
        &p,
        p.rlm(&["job", "export", &id, "--format", "github-comments", "--post", "--yes"]),
    )
    .run()
    .assert_exit(0);
    assert_eq!(gh_log(&p).iter().filter(|l| l.starts_with("pr comment")).count(), 63);
}

#[test]
fn gh_problems_and_bad_input_are_one_line_each_and_nothing_is_sent() {
    let mock = MockLlm::start();
    let p = gh_project(&pull_requests(3));
    let url = mock.url();
    let review = |p: &Project| {
        p.rlm(&[
            "job",
            "pr-review",
            "acme/widgets",
            "--vision",
            "VISION.md",
            "--base-url",
            &url,
        ])
    };
    for (fail, needle) in [("auth", "not logged in"), ("repo", "acme/widgets: no such repository")] {
        let out = with_gh(&p, review(&p)).env("GH_FAIL", fail).run();
        out.assert_exit(2);
        assert!(out.stderr.contains(needle), "{fail}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    }
    let missing = review(&p).env("PATH", "/nonexistent").run();
    missing.assert_exit(2);
    // No advice to pass --input instead: the review fetches its diffs with gh too.
    assert!(
        missing.stderr.contains("gh (the GitHub CLI) is not installed") && !missing.stderr.contains("--input"),
        "{}",
        missing.stderr
    );
    assert_eq!(missing.stderr.trim().lines().count(), 1, "{}", missing.stderr);
    let not_repo = p
        .rlm(&[
            "job",
            "pr-review",
            "widgets",
            "--vision",
            "VISION.md",
            "--base-url",
            &url,
        ])
        .run();
    not_repo.assert_exit(2);
    assert!(not_repo.stderr.contains("give OWNER/REPO"), "{}", not_repo.stderr);
    let refused = p
        .rlm(&[
            "job",
            "pr-review",
            "acme/widgets",
            "--vision",
            "VISION.md",
            "--input",
            "gh/prs.json",
            "--batch-api",
            "--command",
            "cat",
        ])
        .run();
    refused.assert_exit(2);
    assert!(
        refused.stderr.contains("--batch-api") && refused.stderr.contains("no batch API"),
        "{}",
        refused.stderr
    );
    let broken = p.file("bad.toml", "name = \"x\"\n[[phase]]\nname = \"a\"\nkind = \"map\"\n");
    let out = broken.rlm(&["job", "run", "bad.toml", "--base-url", &url]).run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("phase 1 (a): a map phase needs `prompt`"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.requests(), 0);
    assert!(jobs(&broken).is_empty(), "nothing was written");
}

#[test]
fn a_dry_run_prints_the_estimate_per_phase_and_writes_nothing() {
    let p = gh_project(&pull_requests(120));
    let out = p
        .rlm(&[
            "job",
            "pr-review",
            "acme/widgets",
            "--vision",
            "VISION.md",
            "--input",
            "gh/prs.json",
            "--dry-run",
        ])
        .run();
    out.assert_exit(0);
    for needle in [
        "1 classifications (map)",
        "2 clusters (reduce)",
        "3 reviews (review)",
        "4 report (report)",
        "total",
    ] {
        assert!(out.stderr.contains(needle), "{needle}: {}", out.stderr);
    }
    assert!(
        out.stderr.contains("    120        3"),
        "120 PRs in 3 batches of 50: {}",
        out.stderr
    );
    assert!(jobs(&p).is_empty());
}

/// A job's dry run shows small costs with their digits, as `rlm batch --dry-run` does (the
/// one money formatter): a 2-item job on haiku with a short answer budget cost `$0.00` in
/// every row.
#[test]
fn a_dry_run_shows_small_costs_with_their_digits() {
    let mock = MockLlm::start();
    let p = job_project(2, 2, &[], "max_tokens = 20\n");
    let out = p.rlm(&job_args(&mock.url(), &["--model", "haiku", "--dry-run"])).run();
    out.assert_exit(0);
    let rows: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.trim_start().starts_with("1 classify") || l.trim_start().starts_with("total"))
        .collect();
    assert_eq!(rows.len(), 2, "{}", out.stderr);
    for row in rows {
        let cost = row.split_whitespace().last().unwrap();
        assert!(cost.starts_with("$0.00"), "a small cost: {row}");
        assert_ne!(cost, "$0.00", "shown with its digits: {row}");
    }
    assert_eq!(mock.requests(), 0);
    assert!(jobs(&p).is_empty());
}

/// A job's own human output — `rlm job status`, `rlm job list`, its summary line and its
/// report — show a small cost with its digits, through the one money formatter: a 2-item
/// haiku job costs well under a cent, which `${:.4}` showed as `$0.0001` or `$0.0000`.
#[test]
fn a_jobs_status_list_summary_and_report_show_a_small_cost_with_its_digits() {
    let mock = MockLlm::start();
    let p = job_project(2, 2, &[], "max_tokens = 20\n");
    let out = p.rlm(&job_args(&mock.url(), &["--model", "haiku", "--yes"])).run();
    out.assert_exit(0);
    let id = job_id(&only_job(&p));
    let json = p.rlm(&["job", "status", &id, "--json"]).run();
    json.assert_exit(0);
    let cost = json.json()["cost_usd"].as_f64().unwrap();
    assert!(cost > 0.0 && cost < 0.001, "a small cost: {cost}");
    let shown = rlm::money::usd(cost);
    // Three significant digits, not `$0.00`.
    assert!(shown.len() >= "$0.000123".len(), "{shown}");
    let status = p.rlm(&["job", "status", &id]).run();
    status.assert_exit(0);
    assert!(
        status.stdout.contains(&format!("Cost: {shown} ·")),
        "{shown}: {}",
        status.stdout
    );
    let list = p.rlm(&["job", "list"]).run();
    list.assert_exit(0);
    assert!(list.stdout.contains(&format!(" {shown} ")), "{shown}: {}", list.stdout);
    assert!(
        out.stdout.contains(&format!(" out, {shown}")),
        "{shown}: {}",
        out.stdout
    );
    let report = p.rlm(&["job", "export", &id, "--format", "markdown"]).run();
    report.assert_exit(0);
    assert!(
        report.stdout.contains(&format!("**Cost**: {shown}\n")),
        "{shown}: {}",
        report.stdout
    );
}

/// Issue 25: the bundled local model's window is known (8,192 tokens), so a job that
/// names it gets the model's own answer budget, not the jobs' default of 16,000 tokens that
/// would leave its window no room (a usage error).
#[test]
fn a_job_on_the_bundled_local_model_gets_its_answer_budget() {
    let p = gh_project(&pull_requests(10));
    let args = [
        "job",
        "pr-review",
        "acme/widgets",
        "--vision",
        "VISION.md",
        "--input",
        "gh/prs.json",
        "--dry-run",
    ];
    p.rlm(&[&args[..], &["--model", "smollm2"]].concat())
        .run()
        .assert_exit(0);
    let out = p
        .rlm(&[&args[..], &["--model", "smollm2", "--max-tokens", "9000"]].concat())
        .run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("8192-token context window of smollm2"),
        "{}",
        out.stderr
    );
}

/// Copies `examples/jobs/NAME/` into the project under `NAME/`.
pub(crate) fn with_example(p: Project, name: &str) -> Project {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/jobs").join(name);
    let mut p = p;
    for file in file_names(&src) {
        let text = std::fs::read_to_string(src.join(&file)).unwrap();
        p = p.file(&format!("{name}/{file}"), &text);
    }
    p
}

#[test]
fn the_issue_triage_example_runs_as_shipped() {
    let mock = MockLlm::start();
    let p = with_example(Project::new(), "issue-triage");
    let out = p
        .rlm(&[
            "job",
            "run",
            "issue-triage/job.toml",
            "--base-url",
            &mock.url(),
            "--json",
        ])
        .run();
    out.assert_exit(0);
    assert_eq!(out.json()["status"], "SUCCESS");
    let dir = only_job(&p);
    assert_eq!(read_json(&dir.join("data/issues.json")).as_array().unwrap().len(), 12);
    assert_eq!(read_json(&dir.join("data/triage.json")).as_array().unwrap().len(), 12);
    assert!(dir.join("data/duplicates.json").is_file() && dir.join("report.md").is_file());
}

#[test]
fn the_pr_review_example_job_file_runs_as_the_preset_does() {
    // 20 pull requests in pairs that change the same file (each with its own line counts,
    // as gh reports them), with their own fingerprints and intents; 10 alone.
    let prs: Vec<Value> = (1..=30usize)
        .map(|n| {
            let file = if n <= 20 {
                format!("src/pair{}.rs", n.div_ceil(2))
            } else {
                format!("src/alone{n}.rs")
            };
            let answer = json!({"fingerprint": format!("fp-{n}"), "intent": format!("topic{n} work"),
                "quick_verdict": if n % 3 == 0 { "close" } else { "review" }, "vision_alignment": 6,
                "verdict": "merge", "recommended_action": "merge", "confidence": 0.9});
            crate::job_clusters::gh_pr(n, &[&file], &answer)
        })
        .collect();
    let p = with_example(gh_project(&prs), "pr-review");
    let mock = MockLlm::start();
    let url = mock.url();
    let file_job = with_gh(
        &p,
        p.rlm(&["job", "run", "pr-review/job.toml", "--base-url", &url, "--json"]),
    )
    .run();
    file_job.assert_exit(0);
    assert!(
        gh_log(&p)[0].starts_with("pr list -R OWNER/REPO --state open"),
        "{:?}",
        gh_log(&p)
    );
    let preset = with_gh(
        &p,
        p.rlm(&[
            "job",
            "pr-review",
            "acme/widgets",
            "--vision",
            "pr-review/VISION.md",
            "--base-url",
            &url,
            "--json",
        ]),
    )
    .run();
    preset.assert_exit(0);
    let (a, b) = (jobs(&p)[0].clone(), jobs(&p)[1].clone());
    assert_eq!(read_json(&a.join("job.json"))["kind"], "pr-review");
    // The same records, the same clusters (by the files' paths), the same reviews, the
    // same report.
    assert_eq!(read_json(&a.join("data/prs.json")), read_json(&b.join("data/prs.json")));
    let members = |dir: &Path| crate::job_clusters::precluster_members(dir);
    assert_eq!(members(&a).len(), 10, "the pairs are found by their files");
    assert_eq!(members(&a), members(&b));
    let reviewed = |dir: &Path| -> Vec<Value> {
        read_json(&dir.join("data/reviews.json"))
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["number"].clone())
            .collect()
    };
    assert_eq!(
        reviewed(&a).len(),
        16,
        "10 pairs' best, and the 6 alone classified review"
    );
    assert_eq!(reviewed(&a), reviewed(&b));
    let totals = |dir: &Path| read_json(&dir.join("report.json"))["totals"].clone();
    assert_eq!(totals(&a), totals(&b));
    let report = std::fs::read_to_string(a.join("report.md")).unwrap();
    for section in [
        "# OWNER/REPO PR Review Report",
        "### Merge (16 PRs)",
        "### Close — Duplicates (10 PRs)",
        "### Needs Human Review (4 PRs)",
        "## Cluster Details",
    ] {
        assert!(report.contains(section), "missing {section:?} in\n{report}");
    }
    // The preset embeds the example's prompts and schemas.
    assert_eq!(
        std::fs::read_to_string(b.join("prompts/01-classifications.md")).unwrap(),
        p.read("pr-review/classify.md")
    );
}

// ---------------------------------------------------------------------------
// --batch-api: map phases through the provider's batch API

/// Polls every 20 ms (the default schedule waits seconds).
pub(crate) fn fast(run: Run) -> Run {
    run.env("RLM_BATCH_POLL_MS", "20")
}

#[test]
fn batch_api_sends_the_map_phase_as_one_provider_batch_at_half_the_price() {
    let mock = MockLlm::start();
    mock.set_batch_progress(batch::BatchProgress::AfterPolls(1));
    let p = job_project(12, 4, &[], REPORT_PHASE);
    let out = fast(p.rlm(&job_args(&mock.url(), &["--batch-api", "--json", "--yes"]))).run();
    out.assert_exit(0);
    assert_eq!(out.json()["status"], "SUCCESS", "{}", out.stderr);
    assert_eq!(mock.batch_submissions(), 1);
    assert_eq!(mock.batch_sizes(), [3], "three batches of four items, one request each");
    assert!(map_requests(&mock).is_empty(), "no realtime map call");
    assert_eq!(mock.requests(), 1, "only the report call is realtime");
    let dir = only_job(&p);
    let data = read_json(&dir.join("data/classify.json"));
    assert_eq!(data.as_array().map(Vec::len), Some(12), "{data}");
    assert_eq!(batch_outputs(&dir, "classify").len(), 3);
    // The batch is in the run store, as a batch run's are: `rlm status` shows it, collected.
    let status = p.rlm(&["status", &job_id(&dir), "--json"]).run();
    status.assert_exit(0);
    let batches = &status.json()["batches"];
    assert_eq!(batches.as_array().map(Vec::len), Some(1), "{batches}");
    assert_eq!(batches[0]["phase"], "classify", "{batches}");
    assert!(batches[0]["collected_at"].is_string(), "{batches}");
    // The same job realtime costs twice as much for its map phase.
    let record = read_json(&dir.join("job.json"));
    let batch_cost = record["phases"][0]["cost_usd"].as_f64().unwrap();
    let realtime = MockLlm::start();
    let q = job_project(12, 4, &[], REPORT_PHASE);
    q.rlm(&job_args(&realtime.url(), &["-q", "--yes"])).run().assert_exit(0);
    let record = read_json(&only_job(&q).join("job.json"));
    let realtime_cost = record["phases"][0]["cost_usd"].as_f64().unwrap();
    assert!(batch_cost > 0.0);
    assert!(
        (batch_cost * 2.0 - realtime_cost).abs() < 1e-9,
        "{batch_cost} vs {realtime_cost}"
    );
}

#[test]
fn batch_api_job_killed_while_waiting_resumes_by_polling_the_batch_it_sent() {
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
    assert_eq!(mock.batch_submissions(), 1);
    let dir = only_job(&p);
    assert!(batch_outputs(&dir, "classify").is_empty());

    mock.set_batch_progress(batch::BatchProgress::AfterPolls(1));
    // `--batch-api` is remembered: the resume polls the batch, never sends it again.
    let out = fast(p.rlm(&["job", "resume", &job_id(&dir), "--json"])).run();
    out.assert_exit(0);
    assert_eq!(out.json()["status"], "SUCCESS", "{}", out.stderr);
    assert_eq!(mock.batch_submissions(), 1, "{}", out.stderr);
    assert!(map_requests(&mock).is_empty(), "no realtime map call");
    assert_eq!(batch_outputs(&dir, "classify").len(), 2);
}

#[test]
fn batch_api_requests_that_errored_or_expired_go_again_in_a_follow_up_batch_as_rlm_batch_sends_them() {
    let mock = MockLlm::start();
    mock.set_batch_progress(batch::BatchProgress::AfterPolls(1));
    // Batch 1 (entries 1-4) expires once, batch 2 (5-8) errors once in a way that may pass,
    // batch 3 (9-12) is an invalid request.
    mock.batch_fault_when("entry 2", vec![batch::BatchFault::Expired]);
    mock.batch_fault_when("entry 6", vec![batch::BatchFault::Errored { retryable: true }]);
    mock.batch_fault_when("entry 10", vec![batch::BatchFault::Errored { retryable: false }]);
    let p = job_project(12, 4, &[], "");
    let out = fast(p.rlm(&job_args(&mock.url(), &["--batch-api", "--json", "--yes"]))).run();
    out.assert_exit(1);
    assert_eq!(
        mock.batch_sizes(),
        [3, 2],
        "the expired and the errored again, in a batch: {}",
        out.stderr
    );
    assert!(map_requests(&mock).is_empty(), "nothing in real time: {}", out.stderr);
    assert!(
        out.stderr
            .contains("2 requests errored or expired at the provider (or were canceled before they ran): sent again in a follow-up batch"),
        "{}",
        out.stderr
    );
    let dir = only_job(&p);
    assert_eq!(batch_outputs(&dir, "classify").len(), 2);
    let record = read_json(&dir.join("job.json"));
    let phase = &record["phases"][0];
    assert_eq!(phase["failed_batches"], json!([3]), "{record}");
    assert_eq!(phase["batches_done"], 2, "{record}");

    // Always expired: sent once and again three times (a job's fault retries), then its
    // batch fails, as `rlm batch` fails such a unit; never in real time.
    let mock = MockLlm::start();
    mock.set_batch_progress(batch::BatchProgress::AfterPolls(1));
    mock.batch_fault_when("entry 2", vec![batch::BatchFault::Expired; 10]);
    let p = job_project(8, 4, &[], "");
    let out = fast(p.rlm(&job_args(&mock.url(), &["--batch-api", "--yes"]))).run();
    out.assert_exit(1);
    assert_eq!(mock.batch_sizes(), [2, 1, 1, 1], "{}", out.stderr);
    assert!(map_requests(&mock).is_empty(), "nothing in real time: {}", out.stderr);
    assert!(
        out.stderr
            .contains("expired at the provider (not run within 24 hours) (after 4 sends)"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_jobs_batch_refused_for_the_enqueued_token_limit_goes_again_in_smaller_batches_as_rlm_batch_sends_it() {
    let mock = MockLlm::start();
    // The account may have five requests enqueued at once.
    mock.set_batch_queue_limit(5);
    let p = job_project(16, 2, &[], "");
    let out = fast(
        p.rlm(&job_args(
            &mock.url(),
            &[
                "--batch-api",
                "--provider",
                "openai",
                "--model",
                "gpt-4.1-mini",
                "--json",
                "--yes",
            ],
        ))
        .env_remove("ANTHROPIC_API_KEY")
        .env("OPENAI_API_KEY", TEST_KEY),
    )
    .run();
    out.assert_exit(0);
    assert!(
        out.stderr
            .contains("would pass the account's limit (token_limit_exceeded)"),
        "{}",
        out.stderr
    );
    // 8 refused; then two of 4, the second refused while the first waits; then two of 2 —
    // the same batches `rlm batch` sends.
    assert_eq!(mock.batch_sizes(), [0, 4, 0, 2, 2], "{}", out.stderr);
    all_classified_through_batches(&mock, &p, &out, 16);
}

#[test]
fn a_jobs_batch_results_missing_a_request_send_it_again_in_a_batch_as_rlm_batch_does() {
    let mock = MockLlm::start();
    mock.set_batch_progress(batch::BatchProgress::AfterPolls(1));
    mock.drop_batch_result_lines(1);
    let p = job_project(12, 4, &[], "");
    let out = fast(p.rlm(&job_args(&mock.url(), &["--batch-api", "--json", "--yes"]))).run();
    out.assert_exit(0);
    assert!(
        out.stderr
            .contains("have no entry for 1 of its requests (the provider counts 3 succeeded)"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.batch_sizes(), [3, 1], "{}", out.stderr);
    all_classified_through_batches(&mock, &p, &out, 12);
}

/// A job resumed with `--batch-api off` collects the batch it sent; a request of it that
/// expired goes in real time (nothing new is submitted), within what the job's three fault
/// retries left after its batch send, as `rlm batch`'s realtime fallback does: never more
/// than 1 + 3 sends of one request in all.
#[test]
fn a_jobs_realtime_fallback_has_what_the_retry_budget_left_after_the_batch_sends() {
    let mock = MockLlm::start();
    mock.set_batch_progress(batch::BatchProgress::Held);
    // Batch 1 (entries 1-4) expires at the provider, and fails with a server error every
    // time it is called in real time.
    mock.batch_fault_when("entry 2", vec![batch::BatchFault::Expired]);
    mock.fault_when("entry 2", vec![Fault::ServerError; 10]);
    let p = job_project(8, 4, &[], "");
    let out = fast(p.rlm(&job_args(&mock.url(), &["--batch-api", "--deadline", "1s", "--yes"]))).run();
    assert_ne!(
        out.status, 0,
        "the deadline stops the job while it waits: {}",
        out.stderr
    );
    assert_eq!(mock.batch_submissions(), 1, "{}", out.stderr);
    let dir = only_job(&p);

    mock.set_batch_progress(batch::BatchProgress::AfterPolls(1));
    let out = fast(p.rlm(&["job", "resume", &job_id(&dir), "--batch-api=off"])).run();
    out.assert_exit(1);
    assert_eq!(mock.batch_submissions(), 1, "nothing submitted again: {}", out.stderr);
    let batch_sends = mock
        .batch_requests()
        .iter()
        .filter(|r| r.body.to_string().contains("entry 2"))
        .count();
    let realtime = map_requests(&mock)
        .iter()
        .filter(|ids| ids.contains(&"e2".to_string()))
        .count();
    assert_eq!(batch_sends, 1, "{}", out.stderr);
    assert_eq!(
        realtime, 3,
        "one realtime call and two retries: the batch send was the first of 1 + 3: {}",
        out.stderr
    );
    assert_eq!(batch_outputs(&dir, "classify").len(), 1, "the other batch is kept");
    let record = read_json(&dir.join("job.json"));
    assert_eq!(record["phases"][0]["failed_batches"], json!([1]), "{record}");
}

/// Nothing of the map phase went in real time, and all `items` were classified.
fn all_classified_through_batches(mock: &MockLlm, p: &Project, out: &Output, items: usize) {
    assert!(map_requests(mock).is_empty(), "nothing in real time: {}", out.stderr);
    let dir = only_job(p);
    assert_eq!(
        read_json(&dir.join("data/classify.json")).as_array().map(Vec::len),
        Some(items)
    );
}

#[test]
fn batch_api_answers_that_fail_the_check_are_asked_again_in_real_time() {
    let mock = MockLlm::start();
    mock.set_batch_progress(batch::BatchProgress::AfterPolls(1));
    // Entry 3's batch answers an invalid kind until it is asked again with the errors:
    // the batch API's answer is rejected, and the realtime worker asks (twice).
    let hints = vec![(3, first_attempt_hint(&json!({"kind": "bogus"})))];
    let p = job_project(8, 4, &hints, "");
    let out = fast(p.rlm(&job_args(&mock.url(), &["--batch-api", "--json", "--yes"]))).run();
    out.assert_exit(0);
    assert_eq!(out.json()["status"], "SUCCESS", "{}", out.stderr);
    assert_eq!(mock.batch_submissions(), 1);
    let realtime = map_requests(&mock);
    // Asked again once, with the errors: the batch's answer was the first attempt.
    assert_eq!(realtime.len(), 1, "only the rejected batch goes realtime: {realtime:?}");
    assert!(
        realtime.iter().all(|ids| ids.contains(&"e3".to_string())),
        "{realtime:?}"
    );
    let dir = only_job(&p);
    assert_eq!(
        read_json(&dir.join("data/classify.json")).as_array().map(Vec::len),
        Some(8)
    );
}

/// A job or run id with a newline is named on one line, escaped; an empty id names no job
/// (every id starts with nothing) and no run.
#[test]
fn ids_that_name_nothing_are_said_on_one_line() {
    let mock = MockLlm::start();
    let p = job_project(2, 2, &[], "");
    p.rlm(&job_args(&mock.url(), &["--yes"])).run().assert_exit(0);
    for (args, said) in [
        (vec!["job", "status", "a\nb"], "no job 'a\\nb'"),
        (vec!["job", "status", ""], "no job ''"),
        (vec!["status", "a\nb"], "no run `a\\nb`"),
        (vec!["resume", ""], "no run ``"),
    ] {
        let out = p.rlm(&args).run();
        assert_ne!(out.status, 0, "{args:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(said), "{args:?}: {}", out.stderr);
    }
}

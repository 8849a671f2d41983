//! A review phase's `fetch` through the binary: an item whose fetch failed is never reviewed
//! without it — it is an unprocessed item of the phase, said on stderr, in `events.jsonl`,
//! in the phase's notes and in the report, and a rerun takes it; a failure every item would
//! meet (gh not logged in, a repository gh cannot see) stops the phase before its batches
//! are paid for, and `resume` goes on; a PR review from `--input` asks gh once whether it
//! can see the repository before anything is paid, and a job with no such phase left to
//! run asks GitHub nothing.
#![cfg(unix)]

use serde_json::{json, Value};

use crate::job::*;
use crate::support::mock_llm::*;
use crate::support::*;

const REVIEW_PROMPT: &str = "REVIEW-ENTRIES: review each entry with its diff.";

/// A review phase over the entries classified `fix`, fetching with `fetch`.
fn review_phase(fetch: &str) -> String {
    format!(
        "\n[[phase]]\nname = \"review\"\nkind = \"review\"\nprompt = \"review.md\"\noutput_schema = \"item.schema.json\"\n\
         select = \"kind == \\\"fix\\\"\"\nfetch = {fetch}\nbatch_size = 2\n"
    )
}

/// `n` entries, every one classified `fix`, then a review fetching with `fetch`, then `rest`.
fn review_project(n: usize, fetch: &str, rest: &str) -> Project {
    let hints: Vec<(usize, String)> = (1..=n).map(|i| (i, fields_hint(&json!({"kind": "fix"})))).collect();
    job_project(n, 4, &hints, &format!("{}{rest}", review_phase(fetch))).file("review.md", REVIEW_PROMPT)
}

/// The ids of the entries each review request carried.
fn review_requests(mock: &MockLlm) -> Vec<Vec<String>> {
    mock.recorded()
        .iter()
        .filter(|r| r.system_text().contains(REVIEW_PROMPT))
        .map(|r| {
            let user = r.user_text();
            (1..=50)
                .map(|i| format!("e{i}"))
                .filter(|id| user.contains(&format!("\"id\":\"{id}\"")))
                .collect()
        })
        .collect()
}

fn events(dir: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn chmod_x(p: &Project, path: &str) {
    let status = std::process::Command::new("chmod")
        .arg("+x")
        .arg(p.path().join(path))
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn an_item_whose_fetch_failed_is_not_reviewed_but_unprocessed_and_said_so_and_a_rerun_takes_it() {
    let mock = MockLlm::start();
    let fetch = "#!/bin/sh\necho \"$1\" >> fetch.log\n\
                 if [ \"$1\" = e3 ] && [ ! -f fixed ]; then echo \"boom: no diff for $1\" >&2; exit 1; fi\n\
                 echo \"diff of $1\"\n";
    let p = review_project(6, "[\"./fetch.sh\", \"{id}\"]", REPORT_PHASE).file("fetch.sh", fetch);
    chmod_x(&p, "fetch.sh");
    let out = p.rlm(&job_args(&mock.url(), &["--json"])).run();
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(doc["status"], "PARTIAL", "{doc}");
    assert_eq!(doc["unprocessed"], 1);
    assert!(
        out.stderr
            .lines()
            .any(|l| l.contains("item e3 left unprocessed: its fetch failed") && l.contains("boom: no diff for e3")),
        "{}",
        out.stderr
    );
    // Never reviewed blind: no review request carried e3; the others were reviewed.
    let reviewed: Vec<String> = review_requests(&mock).concat();
    assert!(out.stderr.contains("done, 1 item unprocessed, $"), "{}", out.stderr);
    assert!(!reviewed.contains(&"e3".to_string()), "{reviewed:?}");
    assert_eq!(reviewed.len(), 5, "{reviewed:?}");
    let dir = only_job(&p);
    let record = read_json(&dir.join("job.json"));
    let review = &record["phases"][1];
    assert_eq!(review["status"], "partial", "{review}");
    assert_eq!(review["unprocessed"], json!(["e3"]));
    assert!(
        review["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("not reviewed, their fetch failed: 1 item(s) (first: e3")),
        "{review}"
    );
    let failed: Vec<Value> = events(&dir)
        .into_iter()
        .filter(|e| e["event"] == "item:fetch_failed")
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["id"], "e3");
    assert!(failed[0]["reason"].as_str().unwrap().contains("boom"));
    let answers = read_json(&dir.join("data/review.json"));
    assert!(answers.as_array().unwrap().iter().all(|a| a["id"] != "e3"), "{answers}");
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        report.contains("## Unprocessed (1 item)") && report.contains("- review: e3 — its fetch failed"),
        "{report}"
    );
    let status = p.rlm(&["job", "status", &job_id(&dir)]).run();
    assert!(
        status.stdout.contains("not reviewed, their fetch failed") && status.stdout.contains("Unprocessed: 1 item ("),
        "{}",
        status.stdout
    );

    // Once the fetch works, a rerun of the phase fetches and reviews only e3.
    p.write("fixed", "");
    std::fs::remove_file(p.path().join("fetch.log")).unwrap();
    mock.reset_counts();
    let out = p
        .rlm(&["job", "rerun", &job_id(&dir), "--phase", "review", "--json"])
        .run();
    out.assert_exit(0);
    assert_eq!(out.json()["status"], "SUCCESS");
    assert_eq!(p.read("fetch.log"), "e3\n");
    assert_eq!(review_requests(&mock), vec![vec!["e3".to_string()]]);
    assert!(map_requests(&mock).is_empty());
    let answers = read_json(&dir.join("data/review.json"));
    assert_eq!(answers.as_array().unwrap().len(), 6, "{answers}");
    let record = read_json(&dir.join("job.json"));
    assert_eq!(record["phases"][1]["unprocessed"], json!([]));
    assert!(record["phases"][1].get("unprocessed_reasons").is_none(), "{record}");
}

#[test]
fn gh_not_logged_in_or_an_unknown_repository_stops_the_review_before_it_is_paid_and_resume_goes_on() {
    let mock = MockLlm::start();
    for (fail, said) in [
        ("auth", "gh is not logged in to GitHub: run gh auth login"),
        ("repo", "acme/widgets: no such repository on GitHub"),
    ] {
        let p = review_project(8, "[\"gh\", \"pr\", \"diff\", \"{id}\", \"-R\", \"{repo}\"]", "").file("bin/gh", GH);
        chmod_x(&p, "bin/gh");
        p.write("job.toml", &format!("repo = \"acme/widgets\"\n{}", p.read("job.toml")));
        mock.reset_counts();
        // gh sees the repository when the job starts; its diffs fail later.
        let out = with_gh(&p, p.rlm(&job_args(&mock.url(), &["--json"])))
            .env("GH_FAIL", fail)
            .env("GH_FAIL_ON", "pr diff")
            .run();
        out.assert_exit(3);
        let doc = out.json();
        assert_eq!(doc["status"], "FAILED", "{doc}");
        let message = doc["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(said) && message.contains("rlm job resume"),
            "{message}"
        );
        let lines: Vec<&str> = out.stderr.lines().filter(|l| l.contains(said)).collect();
        assert_eq!(lines.len(), 1, "one line says it once:\n{}", out.stderr);
        assert_eq!(map_requests(&mock).len(), 2, "the map phase ran");
        assert!(review_requests(&mock).is_empty(), "nothing of the review was paid");
        let diffs = gh_log(&p).iter().filter(|l| l.starts_with("pr diff ")).count();
        assert!(diffs < 8, "it stopped before fetching every diff: {diffs}");
        let dir = only_job(&p);
        let record = read_json(&dir.join("job.json"));
        assert_eq!(record["phases"][1]["status"], "failed", "{record}");

        // Fixed: resume fetches every diff and reviews, without paying for the map again.
        mock.reset_counts();
        let out = with_gh(&p, p.rlm(&["job", "resume", &job_id(&dir), "--json"])).run();
        out.assert_exit(0);
        assert_eq!(out.json()["status"], "SUCCESS", "{}", out.stderr);
        assert!(map_requests(&mock).is_empty());
        assert_eq!(review_requests(&mock).concat().len(), 8);
    }
}

#[test]
fn a_pr_review_from_input_asks_gh_once_before_anything_is_paid_and_only_when_a_review_is_left() {
    let mock = MockLlm::start();
    let p = gh_project(&pull_requests(12));
    let url = mock.url();
    let review = |repo: &str, extra: &[&str]| {
        let mut args = vec![
            "job",
            "pr-review",
            repo,
            "--vision",
            "VISION.md",
            "--input",
            "gh/prs.json",
            "--base-url",
            &url,
            "--yes",
        ]
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        with_gh(&p, p.rlm(&args))
    };
    for (fail, repo, said) in [
        (
            "auth",
            "acme/widgets",
            "gh is not logged in to GitHub: run gh auth login",
        ),
        ("repo", "acme/widgts", "acme/widgts: no such repository on GitHub"),
    ] {
        let out = review(repo, &[]).env("GH_FAIL", fail).run();
        out.assert_exit(2);
        assert!(out.stderr.contains(said), "{fail}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
        assert_eq!(mock.requests(), 0, "nothing was sent");
        assert!(jobs(&p).is_empty(), "no job was created");
    }
    assert_eq!(
        gh_log(&p),
        [
            "repo view acme/widgets --json name",
            "repo view acme/widgts --json name"
        ],
        "one question each, and no diff"
    );
    // A dry run asks GitHub nothing.
    review("acme/widgets", &["--dry-run"]).run().assert_exit(0);
    assert_eq!(gh_log(&p).len(), 2);

    // Paused after the reviews: resuming has no review left, and asks GitHub nothing.
    review("acme/widgets", &["--pause-after", "reviews", "-q"])
        .run()
        .assert_exit(0);
    let dir = only_job(&p);
    assert_eq!(read_json(&dir.join("job.json"))["status"], "PAUSED");
    let asked = gh_log(&p).len();
    let out = with_gh(&p, p.rlm(&["job", "resume", &job_id(&dir), "-q"]))
        .env("GH_FAIL", "auth")
        .run();
    out.assert_exit(0);
    assert_eq!(gh_log(&p).len(), asked, "{:?}", gh_log(&p));
}

/// An item whose id starts with `-` is never handed to the fetch command where an argument
/// starts with it: the program would read it as an option (`git show --output=FILE` writes
/// the file). The item is unprocessed, with why; the others are fetched and reviewed.
#[test]
fn an_id_that_reads_as_an_option_is_not_passed_to_the_fetch_command() {
    let mock = MockLlm::start();
    let fetch = "#!/bin/sh\nprintf '%s\\n' \"$1\" >> fetch.log\necho \"diff of $1\"\n";
    let p = review_project(3, "[\"./fetch.sh\", \"{id}\"]", "").file("fetch.sh", fetch);
    chmod_x(&p, "fetch.sh");
    let hostile = json!({"id": "--output=pwned", "text": format!("x {}", fields_hint(&json!({"kind": "fix"})))});
    p.write("entries.jsonl", &format!("{}{hostile}\n", p.read("entries.jsonl")));
    let out = p.rlm(&job_args(&mock.url(), &["--json"])).run();
    out.assert_exit(1);
    let log = p.read("fetch.log");
    assert!(log.lines().all(|l| !l.starts_with('-')), "{log}");
    assert_eq!(log.lines().count(), 3, "{log}");
    assert!(
        out.stderr
            .contains("item --output=pwned left unprocessed: its fetch failed: its id starts with '-'"),
        "{}",
        out.stderr
    );
    assert_eq!(review_requests(&mock).concat().len(), 3);
}

/// Ctrl-C while a review phase's fetch commands run stops them (stopped and reaped, none
/// outlives rlm), the job ends INTERRUPTED (exit 130) without sending the phase anything,
/// and `rlm job resume` fetches again and goes on.
#[test]
fn ctrl_c_while_a_review_phase_fetches_stops_its_commands_and_the_resume_fetches_again() {
    let mock = MockLlm::start();
    let fetch = "#!/bin/sh\necho $$ >> fetch.pids\nif [ -f slow ]; then sleep 30; fi\necho \"$1\" >> fetch.done\n\
                 echo \"diff of $1\"\n";
    let p = review_project(4, "[\"./fetch.sh\", \"{id}\"]", "")
        .file("fetch.sh", fetch)
        .file("slow", "");
    chmod_x(&p, "fetch.sh");
    let run = p.rlm(&job_args(&mock.url(), &["--yes"])).spawn();
    assert!(
        wait_until(std::time::Duration::from_secs(30), || p.exists("fetch.pids")
            && p.read("fetch.pids").lines().count() >= 4),
        "the fetch commands run"
    );
    run.signal("INT");
    let out = run.wait();
    assert_eq!(out.status, 130, "{}", out.stderr);
    for pid in p.read("fetch.pids").lines() {
        assert!(
            crate::job_checks::gone_soon(pid.trim()),
            "fetch command {pid} outlived rlm"
        );
    }
    assert!(!p.exists("fetch.done"), "a fetch command ran to its end after Ctrl-C");
    assert!(review_requests(&mock).is_empty(), "nothing of the review was sent");
    let dir = only_job(&p);
    assert_eq!(read_json(&dir.join("job.json"))["status"], "INTERRUPTED");

    std::fs::remove_file(p.path().join("slow")).unwrap();
    let resumed = p.rlm(&["job", "resume", &job_id(&dir), "--json"]).run();
    resumed.assert_exit(0);
    assert_eq!(review_requests(&mock).concat().len(), 4, "{}", resumed.stderr);
}

//! `rlm job pr-review` through the binary, on what goes wrong in real repositories:
//! unrelated pull requests must not be chained into one cluster (and reported as duplicates
//! to close) by the lock file and the changelog they all touch, or by intents that differ
//! only in a number; the report accounts for every pull request exactly once, and one a
//! phase did not process is not clustered, reviewed or merged; the example job file
//! behaves as the preset does.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::job::*;
use crate::support::mock_llm::*;
use crate::support::*;

/// One pull request in gh's shapes: `files` its paths, `answer` what its classification
/// (and review) says, through the mock's hints.
pub(crate) fn gh_pr(number: usize, files: &[&str], answer: &Value) -> Value {
    let files: Vec<Value> = files
        .iter()
        .map(|f| json!({"path": f, "additions": 3 + number % 7, "deletions": 1}))
        .collect();
    json!({
        "number": number,
        "title": format!("Change {number}"),
        "body": format!("{} A description.", fields_hint(answer)),
        "author": {"login": format!("dev{}", number % 5), "name": "", "is_bot": false},
        "createdAt": "2026-01-05T10:00:00Z",
        "updatedAt": "2026-02-01T10:00:00Z",
        "labels": [],
        "files": files,
        "additions": 3 + number % 7,
        "deletions": 1,
        "comments": [],
        "statusCheckRollup": [],
        "reviewDecision": "",
        "mergeable": "MERGEABLE",
    })
}

/// `rlm job pr-review acme/widgets` over `gh/prs.json`, gh on PATH for the diffs.
pub(crate) fn review_from_input(p: &Project, url: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "job",
        "pr-review",
        "acme/widgets",
        "--vision",
        "VISION.md",
        "--input",
        "gh/prs.json",
        "--base-url",
        url,
        "--yes",
    ];
    args.extend_from_slice(extra);
    with_gh(p, p.rlm(&args)).timeout(Duration::from_secs(120)).run()
}

/// The members of every programmatic cluster, as numbers.
pub(crate) fn precluster_members(dir: &Path) -> Vec<Vec<u64>> {
    read_json(&dir.join("data/preclusters.json"))
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            c["members"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m.as_u64().unwrap())
                .collect()
        })
        .collect()
}

fn newest_job(p: &Project) -> PathBuf {
    jobs(p).last().cloned().unwrap()
}

#[test]
fn lock_files_changelogs_and_common_files_do_not_chain_a_small_repositorys_prs() {
    let mock = MockLlm::start();
    // 40 pull requests, each with its own file; 1-8 also touch Cargo.lock and the
    // changelog, 9-16 the crate root and the README (in a fifth of the PRs: common);
    // 17 and 18 both change src/auth.rs and nothing else: a real pair.
    let prs: Vec<Value> = (1..=40)
        .map(|n| {
            let own = format!("src/own{n}.rs");
            let files: Vec<&str> = match n {
                1..=8 => vec![&own, "Cargo.lock", "CHANGELOG.md"],
                9..=16 => vec![&own, "src/lib.rs", "README.md"],
                17 | 18 => vec!["src/auth.rs"],
                _ => vec![&own],
            };
            let answer = json!({"fingerprint": format!("fp-{n}"), "intent": format!("topic{n} work"),
                "quick_verdict": "close", "vision_alignment": 6});
            gh_pr(n, &files, &answer)
        })
        .collect();
    let p = gh_project(&prs);
    let out = review_from_input(&p, &mock.url(), &["--json"]);
    out.assert_exit(0);
    let dir = only_job(&p);
    assert_eq!(precluster_members(&dir), vec![vec![17, 18]]);
    let report = read_json(&dir.join("report.json"));
    assert_eq!(report["totals"]["duplicates"], 1, "{}", report["totals"]);
}

#[test]
fn intents_that_differ_in_their_number_are_not_one_cluster() {
    let mock = MockLlm::start();
    // 500 pull requests: 20 unrelated fixes `fix-issue-11` … `fix-issue-30` (their own
    // files and fingerprints), one real pair with the same intent, the rest all different.
    let prs: Vec<Value> = (1..=500)
        .map(|n| {
            let intent = match n {
                1..=20 => format!("fix-issue-{}", n + 10),
                21 | 22 => "dark-mode toggle".to_string(),
                _ => format!("topic{n} work"),
            };
            let answer = json!({"fingerprint": format!("fp-{n}"), "intent": intent,
                "quick_verdict": "close", "vision_alignment": 6});
            gh_pr(n, &[&format!("src/own{n}.rs")], &answer)
        })
        .collect();
    let p = gh_project(&prs);
    let out = review_from_input(&p, &mock.url(), &["-q"]);
    out.assert_exit(0);
    let dir = newest_job(&p);
    assert_eq!(precluster_members(&dir), vec![vec![21, 22]]);
    let clusters = read_json(&dir.join("data/clusters.json"));
    assert_eq!(clusters.as_array().unwrap().len(), 1);
}

/// The pull request numbers of the rows of each table of a PR-review `report.md`.
fn report_tables(report: &str) -> Vec<(String, Vec<u64>)> {
    let mut tables: Vec<(String, Vec<u64>)> = Vec::new();
    for line in report.lines() {
        if let Some(title) = line.strip_prefix("### ") {
            if !title.starts_with("Cluster:") && !title.starts_with("Assessment") {
                tables.push((title.to_string(), Vec::new()));
            }
        } else if line.starts_with("## Cluster Details") {
            break;
        } else if let (Some(row), Some((_, rows))) = (line.strip_prefix("| #"), tables.last_mut()) {
            rows.push(row.split(' ').next().unwrap().parse().unwrap());
        }
    }
    tables
}

#[test]
fn the_report_accounts_for_every_pr_once_and_never_merges_a_duplicate() {
    let mock = MockLlm::start();
    let answer = |fingerprint: &str, verdict: &str, vision: u64| {
        json!({"fingerprint": fingerprint, "intent": format!("{fingerprint} work"), "quick_verdict": verdict,
            "vision_alignment": vision, "verdict": "merge", "recommended_action": "merge", "confidence": 0.9})
    };
    let mut prs = vec![
        // A pair: 1001 is the better one; 1002 is classified `merge`, but it is a duplicate.
        gh_pr(1001, &["src/theme.rs"], &answer("dark-mode", "review", 9)),
        gh_pr(1002, &["src/theme2.rs"], &answer("dark-mode", "merge", 7)),
    ];
    // Unique efforts worth a review, and ones that are not.
    for n in 1003..=1010 {
        prs.push(gh_pr(
            n,
            &[&format!("src/own{n}.rs")],
            &answer(&format!("fp-{n}"), "review", 7),
        ));
    }
    for n in 1011..=1013 {
        prs.push(gh_pr(
            n,
            &[&format!("src/own{n}.rs")],
            &answer(&format!("fp-{n}"), "close", 5),
        ));
    }
    let mut off = answer("crypto", "close", 1);
    off["flags"] = json!(["off-vision"]);
    prs.push(gh_pr(1014, &["src/miner.rs"], &off));
    let p = gh_project(&prs);
    let out = review_from_input(&p, &mock.url(), &["--json"]);
    out.assert_exit(0);
    let dir = only_job(&p);

    // The pair's best and every unique effort classified `review` are reviewed; the
    // duplicate is not, whatever its classification says.
    let reviewed: Vec<u64> = read_json(&dir.join("data/reviews.json"))
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["number"].as_u64().unwrap())
        .collect();
    assert_eq!(reviewed, [1001, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010]);
    let diffs: Vec<String> = gh_log(&p).into_iter().filter(|l| l.starts_with("pr diff")).collect();
    assert_eq!(diffs.len(), 9, "{diffs:?}");

    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let tables = report_tables(&report);
    let titles: Vec<&str> = tables.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        titles,
        [
            "Merge (9 PRs)",
            "Close — Duplicates (1 PRs)",
            "Close — Off-Vision (1 PRs)",
            "Needs Human Review (3 PRs)"
        ],
        "{report}"
    );
    assert_eq!(tables[1].1, [1002]);
    assert_eq!(tables[2].1, [1014]);
    assert_eq!(tables[3].1, [1011, 1012, 1013]);
    let mut every: Vec<u64> = tables.iter().flat_map(|(_, rows)| rows.clone()).collect();
    every.sort_unstable();
    assert_eq!(
        every,
        (1001..=1014).collect::<Vec<u64>>(),
        "each PR in exactly one table"
    );
    assert!(report.contains("not reviewed in depth; classified close"), "{report}");
    let totals = read_json(&dir.join("report.json"))["totals"].clone();
    assert_eq!(totals["merge"], 9);
    assert_eq!(totals["needs_human_review"], 3);
    assert_eq!(totals["prs"], 14);
}

/// The number in the summary line that ends with `tail` (`- 12 PRs need human review`).
fn summary_count(report: &str, tail: &str) -> usize {
    report
        .lines()
        .find_map(|l| l.strip_prefix("- ")?.strip_suffix(tail)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no summary line ending {tail:?} in\n{report}"))
}

#[test]
fn pull_requests_a_phase_did_not_process_are_no_later_phases_results_and_the_summary_matches_the_tables() {
    let mock = MockLlm::start();
    let answer = |fingerprint: &str, vision: u64| {
        json!({"fingerprint": fingerprint, "intent": format!("{fingerprint} work"), "quick_verdict": "review",
            "vision_alignment": vision, "verdict": "merge", "recommended_action": "merge", "confidence": 0.9})
    };
    // Two classification batches (50 + 10); the first is refused once. #1 and #51 are one
    // effort (the same file and fingerprint), #1 the better one.
    let mut prs = vec![gh_pr(1, &["src/theme.rs"], &answer("dark-mode", 9))];
    for n in 2..=50 {
        prs.push(gh_pr(n, &[&format!("src/own{n}.rs")], &answer(&format!("fp-{n}"), 7)));
    }
    prs[2]["body"] = json!(format!("REFUSE-THIS-BATCH {}", prs[2]["body"].as_str().unwrap()));
    prs.push(gh_pr(51, &["src/theme.rs"], &answer("dark-mode", 6)));
    for n in 52..=60 {
        prs.push(gh_pr(n, &[&format!("src/own{n}.rs")], &answer(&format!("fp-{n}"), 7)));
    }
    mock.fault_when(
        "REFUSE-THIS-BATCH",
        vec![Fault::Status(413, "request too large".into())],
    );
    let p = gh_project(&prs);
    let out = review_from_input(&p, &mock.url(), &["--json"]);
    out.assert_exit(1);
    assert_eq!(out.json()["status"], "PARTIAL");
    assert_eq!(out.json()["unprocessed"], 50);
    let dir = only_job(&p);

    // Never classified, so never clustered or reviewed.
    assert!(
        precluster_members(&dir).iter().flatten().all(|&m| m > 50),
        "{:?}",
        precluster_members(&dir)
    );
    let reviewed: Vec<u64> = read_json(&dir.join("data/reviews.json"))
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["number"].as_u64().unwrap())
        .collect();
    assert_eq!(reviewed, (51..=60).collect::<Vec<u64>>());
    let notes = read_json(&dir.join("job.json"))["phases"][1]["notes"].clone();
    assert!(
        notes.to_string().contains("50 item(s) left out of the clusters"),
        "{notes}"
    );

    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let tables = report_tables(&report);
    let rows = |title: &str| -> Vec<u64> {
        tables
            .iter()
            .find(|(t, _)| t.starts_with(title))
            .map(|(_, r)| r.clone())
            .unwrap_or_else(|| panic!("no table {title} in\n{report}"))
    };
    let human = rows("Needs Human Review");
    assert!((1..=50).all(|n| human.contains(&n)), "{human:?}");
    for title in ["Merge", "Close — Duplicates", "Close — Off-Vision"] {
        assert!(rows(title).iter().all(|&n| n > 50), "{title}: {:?}", rows(title));
    }
    assert!(
        report.contains(
            "| #1 | Change 1 | dev1 | not processed by classifications: its batch failed after the retries |"
        ),
        "{report}"
    );
    // The summary's numbers are the tables' rows.
    assert_eq!(summary_count(&report, "PRs need human review"), human.len());
    assert_eq!(
        summary_count(&report, "PRs recommended for immediate merge"),
        rows("Merge").len()
    );
    assert!(
        report.contains("- 60 open PRs scanned, 10 analyzed across 10 distinct themes"),
        "{report}"
    );
    assert!(report.contains("- 50 PRs were not processed"), "{report}");
    // Unique efforts are counted among the analyzed, as the themes are.
    let duplicates = rows("Close — Duplicates").len();
    assert!(
        report.contains(&format!(
            "- {duplicates} PRs identified as duplicates (reducible to {} unique efforts)",
            10 - duplicates
        )),
        "{report}"
    );
    let mut every: Vec<u64> = tables.iter().flat_map(|(_, rows)| rows.clone()).collect();
    every.sort_unstable();
    assert_eq!(every, (1..=60).collect::<Vec<u64>>(), "each PR in exactly one table");

    // A rerun classifies them, and the later phases take them in.
    let out = with_gh(
        &p,
        p.rlm(&["job", "rerun", &job_id(&dir), "--phase", "classifications", "--json"]),
    )
    .timeout(Duration::from_secs(120))
    .run();
    out.assert_exit(0);
    assert_eq!(out.json()["status"], "SUCCESS");
    assert_eq!(precluster_members(&dir), vec![vec![1, 51]]);
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(!report.contains("not processed"), "{report}");
    assert_eq!(report_tables(&report)[1].1, [51], "#51 is #1's duplicate:\n{report}");
}

//! `rlm job pr-review` through the binary, on what goes wrong in real repositories:
//! unrelated pull requests must not be chained into one cluster (and reported as duplicates
//! to close) by the lock file and the changelog they all touch, or by intents that differ
//! only in a number; the report accounts for every pull request exactly once; the example
//! job file behaves as the preset does.
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

//! Two real rlm processes at once (issue 17): a run holds its output directory, so a second
//! run on it refuses (naming the first one's pid) instead of paying again and mixing
//! outputs; runs sharing a cache pay once per key; runs started together get distinct ids;
//! and a holder killed with `kill -9` blocks nobody.
#![cfg(unix)]

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use crate::support::mock_llm::*;
use crate::support::*;
use serde_json::Value;

/// How many requests the mock received per file (by the `File:` line of the prompt).
fn requests_per_file(mock: &MockLlm) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for r in mock.recorded() {
        if let Some(path) = r.user_text().lines().next().and_then(|l| l.strip_prefix("File: ")) {
            *counts.entry(path.to_string()).or_insert(0) += 1;
        }
    }
    counts
}

fn run_in<'a>(url: &'a str, prompt: &'a str, out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "batch",
        "src/*.ts",
        prompt,
        "--base-url",
        url,
        "--model",
        "haiku",
        "-o",
        out,
        "--no-batch-small",
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn a_second_run_on_a_busy_output_directory_refuses_naming_the_first() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(150));
    let p = Project::new().ts_files(10);
    let url = mock.url();
    let first = p.rlm(&run_in(&url, "List {file}", "out", &["-j", "2"])).spawn();
    assert!(
        wait_until(Duration::from_secs(20), || results_in(&p, "out") >= 1),
        "the first run makes progress"
    );
    // The same prompt would pay again; another prompt would mix its outputs in.
    for prompt in ["List {file}", "Summarize {file}"] {
        let second = p.rlm(&run_in(&url, prompt, "out", &[])).run();
        second.assert_exit(2);
        assert!(
            second
                .stderr
                .contains(&format!("in use by rlm process {}", first.pid())),
            "{}",
            second.stderr
        );
    }
    // An agent reading --json is told what kind of refusal it is.
    let second = p.rlm(&run_in(&url, "List {file}", "out", &["--json"])).run();
    second.assert_exit(2);
    assert_eq!(second.json()["error"]["kind"], "in_use", "{}", second.stdout);
    let out = first.wait();
    out.assert_exit(0);
    assert_eq!(p.report()["succeeded"], 10);
    assert_eq!(results_in(&p, "out"), 10, "nothing of the first run was removed");
    assert_eq!(mock.requests(), 10, "the refused runs sent nothing");
    assert!(p.aggregate_md().contains("mock result"));
    // Once the first run is over, the directory is free again.
    p.rlm(&run_in(&url, "Summarize {file}", "out", &[]))
        .run()
        .assert_exit(0);
    assert_eq!(p.report()["sub_prompt"], "Summarize {file}");
}

#[test]
fn a_killed_run_leaves_its_directory_and_its_claims_free() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(300));
    let p = Project::new().ts_files(8);
    let url = mock.url();
    let doomed = p.rlm(&run_in(&url, "List {file}", "out", &["-j", "4"])).spawn();
    // Killed while it holds the directory and the claims of the calls in flight.
    assert!(wait_until(Duration::from_secs(20), || mock.in_flight() >= 2));
    doomed.signal("KILL");
    let _ = doomed.wait();
    mock.set_latency(Duration::ZERO);
    let next = p.rlm(&run_in(&url, "List {file}", "out", &["-j", "4"])).run();
    next.assert_exit(0);
    assert_eq!(p.report()["succeeded"], 8);
    let locks = p.path().join(".aiwg/rlm/cache/locks");
    let left: Vec<String> = std::fs::read_dir(&locks)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        left.len() <= 4,
        "at most the killed run's claims are left, and they bind nobody: {left:?}"
    );
}

#[test]
fn resuming_a_run_that_is_still_going_refuses_naming_its_pid() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(200));
    let p = Project::new().ts_files(8);
    let url = mock.url();
    // A default (timestamped) run directory is held the same way.
    let running = p
        .rlm(&[
            "batch",
            "src/*.ts",
            "List {file}",
            "--base-url",
            &url,
            "-j",
            "1",
            "--no-batch-small",
        ])
        .spawn();
    assert!(wait_until(Duration::from_secs(20), || mock.requests() >= 2));
    let list: Value = serde_json::from_str(&p.rlm(&["list", "--json"]).run().stdout).unwrap();
    let id = list[0]["id"].as_str().unwrap().to_string();
    let resume = p.rlm(&["resume", &id, "--yes"]).run();
    resume.assert_exit(2);
    assert!(
        resume
            .stderr
            .contains(&format!("run {id} is still running in rlm process {}", running.pid())),
        "{}",
        resume.stderr
    );
    running.wait().assert_exit(0);
    assert_eq!(p.report()["succeeded"], 8);
    assert_eq!(mock.requests(), 8, "the refused resume sent nothing");
}

#[test]
fn two_runs_sharing_a_cache_pay_once_for_each_key() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(300));
    let p = Project::new().ts_files(8);
    let url = mock.url();
    let a = p.rlm(&run_in(&url, "List {file}", "out-a", &["-j", "4"])).spawn();
    let b = p.rlm(&run_in(&url, "List {file}", "out-b", &["-j", "4"])).spawn();
    a.wait().assert_exit(0);
    b.wait().assert_exit(0);
    let counts = requests_per_file(&mock);
    assert_eq!(counts.len(), 8, "{counts:?}");
    assert!(counts.values().all(|&n| n == 1), "a key was paid for twice: {counts:?}");
    for dir in ["out-a", "out-b"] {
        assert_eq!(results_in(&p, dir), 8, "{dir}");
        let report = read_json(&p.path().join(dir).join("report.json"));
        assert_eq!(report["succeeded"], 8, "{dir}: {report:#}");
    }
    // On Linux every claim is a byte of one `keys.lock`; elsewhere a file a key, removed
    // when let go.
    let locks = p.path().join(".aiwg/rlm/cache/locks");
    let left: Vec<String> = std::fs::read_dir(&locks)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        left.iter().all(|name| name == "keys.lock"),
        "claims are cleaned up: {left:?}"
    );
}

#[test]
fn runs_started_together_get_distinct_ids_and_all_are_recorded() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(2);
    let url = mock.url();
    let outs: Vec<String> = (0..6).map(|i| format!("out-{i}")).collect();
    let running: Vec<Running> = outs
        .iter()
        .map(|out| p.rlm(&run_in(&url, "List {file}", out, &[])).spawn())
        .collect();
    for r in running {
        r.wait().assert_exit(0);
    }
    let ids: Vec<String> = outs
        .iter()
        .map(|out| {
            read_json(&p.path().join(out).join("report.json"))["run_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let distinct: HashSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), 6, "{ids:?}");
    for (id, out) in ids.iter().zip(&outs) {
        let status = p.rlm(&["status", id, "--json"]).run();
        status.assert_exit(0);
        let s = status.json();
        assert_eq!(s["status"], "SUCCESS", "{s}");
        assert!(s["output_dir"].as_str().unwrap().ends_with(out.as_str()), "{s}");
    }
    let list: Value = serde_json::from_str(&p.rlm(&["list", "--json"]).run().stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 6);
}

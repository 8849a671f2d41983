//! `rlm batch --batch-api` through the binary, against the mock's batch APIs (issue 18):
//! a run of a few hundred files, `kill -9` while waiting then `rlm resume` (one
//! submission), errored items retried alone, `rlm cancel`, a split above the request
//! limit, cost at half of list, `rlm status` without a network call, `--batch-api auto`
//! against a server without batch endpoints.
#![cfg(unix)]

use std::time::Duration;

use serde_json::Value;

use crate::support::mock_llm::batch::{BatchFault, BatchProgress};
use crate::support::mock_llm::*;
use crate::support::*;

/// Polls every 20 ms (the default schedule waits seconds).
const FAST_POLLS: &str = "20";

fn ts_project(n: usize) -> Project {
    let p = Project::new();
    for i in 0..n {
        p.write(&format!("src/f{i:03}.ts"), &format!("export const f{i:03} = {i};\n"));
    }
    p
}

/// `rlm batch src/*.ts "List {file}" --base-url URL --model haiku -o out --batch-api EXTRA…`
fn batch_api_args<'a>(url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "batch",
        "src/*.ts",
        "List {file}",
        "--base-url",
        url,
        "--model",
        "haiku",
        "-o",
        "out",
        "--yes",
        "--batch-api",
    ];
    args.extend_from_slice(extra);
    args
}

fn rlm_fast(p: &Project, args: &[&str]) -> Run {
    p.rlm(args).env("RLM_BATCH_POLL_MS", FAST_POLLS)
}

#[test]
fn a_few_hundred_files_go_through_one_batch_and_no_realtime_call() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::AfterPolls(2));
    let p = ts_project(300);
    let url = mock.url();
    let out = rlm_fast(&p, &batch_api_args(&url, &["--json"])).run();
    eprintln!("{}", out.stderr);
    out.assert_exit(0);
    assert_eq!(mock.requests(), 0, "no realtime call");
    assert_eq!(mock.batch_submissions(), 1);
    assert_eq!(mock.batch_sizes(), [300]);
    let report = out.json();
    assert_eq!(report["succeeded"], 300, "{report}");
    assert_eq!(report["price_tier"], "batch");
    assert_eq!(report["batches"].as_array().map(Vec::len), Some(1));
    for i in [0, 150, 299] {
        let file = p.read(&format!("out/src-f{i:03}.ts.result.md"));
        assert!(!file.trim().is_empty());
    }
}

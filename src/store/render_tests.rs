//! Tests of the `status` / `list` / `--tree` renderings on hand-made summaries.

use std::path::PathBuf;

use super::*;
use crate::store::{Owner, RunId, RunStatus, UnitCounts};

/// 2026-11-22T10:15:30Z.
const START_MS: i64 = (20_779 * 86_400 + 10 * 3600 + 15 * 60 + 30) * 1000;

fn run(id: &str, status: RunStatus, liveness: Option<Liveness>) -> RunSummary {
    RunSummary {
        id: RunId::from(id),
        command: vec![
            "rlm".into(),
            "batch".into(),
            "src/**/*.ts".into(),
            "count the functions, don't guess".into(),
        ],
        cwd: PathBuf::from("/project"),
        output_dir: PathBuf::from("/project/.aiwg/rlm").join(id),
        created_at: Timestamp::from_millis(START_MS),
        started_at: Some(Timestamp::from_millis(START_MS)),
        finished_at: (status != RunStatus::Running).then(|| Timestamp::from_millis(START_MS + 600_000)),
        status,
        parent: None,
        depth: 0,
        settings: serde_json::json!({"model": "haiku"}),
        tokens_in: 1_234_567,
        tokens_out: 89_000,
        cost_usd: 0.04216,
        attempts: 1,
        elapsed_ms: 600_000,
        units: UnitCounts {
            queued: 25,
            running: 10,
            completed: 60,
            failed: 3,
            timed_out: 2,
            cancelled: 0,
        },
        owner: liveness.map(|liveness| Owner {
            pid: 4242,
            heartbeat_at: Some(Timestamp::from_millis(START_MS + 100_000)),
            liveness,
        }),
        superseded_by: None,
        not_cached: 0,
        mean_completed_ms: Some(2_000),
        completed_since_start: 60,
    }
}

fn failures() -> Vec<Failure> {
    vec![
        Failure {
            unit: "u3".into(),
            label: "src/auth/legacy.ts".into(),
            state: UnitState::TimedOut,
            attempts: 1,
            reason: Some("no answer in 300s".into()),
        },
        Failure {
            unit: "u9".into(),
            label: "src/api/users.ts".into(),
            state: UnitState::Failed,
            attempts: 3,
            reason: None,
        },
    ]
}

#[test]
fn status_of_a_running_run_shows_counts_cost_eta_and_failures() {
    // 60 units in 120 s → 2 s each; 35 remaining → 70 s.
    let now = Timestamp::from_millis(START_MS + 120_000);
    let text = status_text(
        &run("batch-2026-11-22-101530", RunStatus::Running, Some(Liveness::Alive)),
        &failures(),
        (&[], &[]),
        now,
    );
    assert_eq!(
        text,
        "run       batch-2026-11-22-101530  RUNNING (rlm process 4242)\n\
         command   rlm batch 'src/**/*.ts' 'count the functions, don'\\''t guess'\n\
         started   2026-11-22 10:15 UTC\n\
         units     100: 60 completed, 10 running, 25 queued, 3 failed, 2 timed out\n\
         cost      $0.0422 · 1,234,567 tokens in · 89,000 tokens out\n\
         eta       about 1m 10s\n\
         output    /project/.aiwg/rlm/batch-2026-11-22-101530\n\
         \n\
         failures (2)\n  \
           src/auth/legacy.ts  timed_out after 1 attempt: no answer in 300s\n  \
           src/api/users.ts  failed after 3 attempts: no reason recorded\n"
    );
}

#[test]
fn status_says_how_to_go_on_with_a_crashed_run() {
    let now = Timestamp::from_millis(START_MS + 120_000);
    let crashed = status_text(
        &run("batch-x", RunStatus::Running, Some(Liveness::Gone)),
        &[],
        (&[], &[]),
        now,
    );
    assert!(crashed
        .starts_with("run       batch-x  CRASHED (its rlm process 4242 is gone; `rlm resume batch-x` goes on)\n"));
    assert!(!crashed.contains("eta"), "no ETA for a run nobody works on");
    let stalled = status_text(
        &run("batch-x", RunStatus::Running, Some(Liveness::Stalled)),
        &[],
        (&[], &[]),
        now,
    );
    assert!(
        stalled.contains("STALLED (rlm process 4242, no heartbeat for 20s)"),
        "{stalled}"
    );
    let done = status_text(&run("batch-x", RunStatus::Partial, None), &[], (&[], &[]), now);
    assert!(
        done.contains("batch-x  PARTIAL\n") && done.contains("finished  2026-11-22 10:25 UTC\n"),
        "{done}"
    );
}

#[test]
fn status_json_has_the_summary_the_readable_status_and_the_failures() {
    let now = Timestamp::from_millis(START_MS + 120_000);
    let json = status_json(
        &run("batch-x", RunStatus::Running, Some(Liveness::Gone)),
        &failures(),
        (&[], &[]),
        now,
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["id"], "batch-x");
    assert_eq!(v["status"], "RUNNING");
    assert_eq!(v["display_status"], "CRASHED");
    assert_eq!(v["eta_seconds"], serde_json::Value::Null);
    assert_eq!(v["units"]["completed"], 60);
    assert_eq!(v["owner"]["liveness"], "gone");
    assert_eq!(v["started_at"], "2026-11-22T10:15:30.000Z");
    assert_eq!(v["failures"][0]["state"], "timed_out");
    assert_eq!(v["failures"][1]["reason"], serde_json::Value::Null);
    assert_eq!(v["settings"]["model"], "haiku");
}

#[test]
fn list_is_an_aligned_table_and_json_array() {
    let mut stopped = run("batch-2026-11-22-101530", RunStatus::BudgetExceeded, None);
    (stopped.units.queued, stopped.units.running, stopped.units.cancelled) = (0, 0, 35);
    let runs = [
        run("batch-2026-11-22-101530-2", RunStatus::Running, Some(Liveness::Alive)),
        stopped,
    ];
    let text = list_text(&runs);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(
        lines[0],
        "ID                         STATUS           STARTED (UTC)     UNITS   FAILED  CANCELLED  COST     COMMAND"
    );
    // Failed and timed out units are failed; the cancelled ones (not run) are not.
    assert_eq!(
        lines[2],
        "batch-2026-11-22-101530    BUDGET_EXCEEDED  2026-11-22 10:15  60/100  5       35         $0.0422  \
         rlm batch 'src/**/*.ts' 'count the functions, don'\\''t gues…",
        "a long command is cut at 60 characters"
    );
    assert_eq!(list_text(&[]), "no runs yet; `rlm batch` starts one\n");

    let v: serde_json::Value = serde_json::from_str(&list_json(&runs, Timestamp::from_millis(START_MS))).unwrap();
    assert_eq!(v.as_array().map(Vec::len), Some(2));
    assert_eq!(v[1]["display_status"], "BUDGET_EXCEEDED");
}

#[test]
fn the_tree_draws_branches_with_state_and_cost() {
    let leaf = |id: &str, status| RunTree {
        run: run(id, status, None),
        children: vec![],
    };
    let tree = RunTree {
        run: run("root", RunStatus::Running, Some(Liveness::Alive)),
        children: vec![
            RunTree {
                run: run("a", RunStatus::Success, None),
                children: vec![leaf("a1", RunStatus::Failed)],
            },
            leaf("b", RunStatus::Partial),
        ],
    };
    assert_eq!(
        tree_text(&tree),
        "root  RUNNING  60/100 units  $0.0422\n\
         ├── a  SUCCESS  60/100 units  $0.0422\n\
         │   └── a1  FAILED  60/100 units  $0.0422\n\
         └── b  PARTIAL  60/100 units  $0.0422\n"
    );
    let v: serde_json::Value = serde_json::from_str(&tree_json(&tree, Timestamp::from_millis(START_MS))).unwrap();
    assert_eq!(v["children"][0]["children"][0]["id"], "a1");
    assert_eq!(v["children"][1]["status"], "PARTIAL");
}

#[test]
fn small_formats() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(1000), "1,000");
    assert_eq!(thousands(1_234_567), "1,234,567");
    assert_eq!(duration(Duration::from_secs(35)), "35s");
    assert_eq!(duration(Duration::from_secs(250)), "4m 10s");
    assert_eq!(duration(Duration::from_secs(7500)), "2h 5m");
    assert_eq!(
        shell_words(&["a".into(), String::new(), "it's".into()]),
        "a '' 'it'\\''s'"
    );
    assert_eq!(cut("abcdef", 4), "abc…");
    assert_eq!(cut("abc", 4), "abc");
}

#[test]
fn status_shows_the_batches_as_last_polled() {
    use crate::batch_state::{BatchCounts, BatchStatus};
    use crate::store::BatchSubmission;
    let now = Timestamp::from_millis(START_MS + 120_000);
    let batch = |id: &str, status, counts: BatchCounts, polled: Option<i64>, collected: bool| BatchSubmission {
        batch_id: id.into(),
        provider: "anthropic".into(),
        server: "https://api.anthropic.com".into(),
        phase: "map".into(),
        request_count: 300,
        submitted_at: Timestamp::from_millis(START_MS),
        status,
        polled_at: polled.map(|ms| Timestamp::from_millis(START_MS + ms)),
        polls: if polled.is_some() { 4 } else { 0 },
        counts,
        cancel_requested_at: None,
        collected_at: collected.then(|| Timestamp::from_millis(START_MS + 60_000)),
    };
    let batches = [
        batch(
            "msgbatch_1",
            BatchStatus::Ended,
            BatchCounts {
                succeeded: 298,
                errored: 2,
                ..BatchCounts::default()
            },
            Some(60_000),
            true,
        ),
        batch(
            "msgbatch_2",
            BatchStatus::InProgress,
            BatchCounts {
                processing: 150,
                succeeded: 149,
                expired: 1,
                ..BatchCounts::default()
            },
            Some(100_000),
            false,
        ),
    ];
    let text = status_text(
        &run("batch-x", RunStatus::Running, Some(Liveness::Alive)),
        &[],
        (&batches, &[]),
        now,
    );
    assert!(
        text.contains(
            "batches   2 at https://api.anthropic.com (1 waiting) · 450/600 done, 3 errored · last polled \
             2026-11-22 10:17 UTC (20s ago)\n  \
             msgbatch_1  collected  map  300/300 done, 2 errored, 0 expired, 0 canceled · polled 4 times\n  \
             msgbatch_2  in_progress  map  150/300 done, 0 errored, 1 expired, 0 canceled · polled 4 times\n"
        ),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&status_json(
        &run("batch-x", RunStatus::Running, None),
        &[],
        (&batches, &[]),
        now,
    ))
    .unwrap();
    assert_eq!(json["batches"][1]["status"], "in_progress");
    assert_eq!(json["batches"][1]["counts"]["succeeded"], 149);
    let none: serde_json::Value = serde_json::from_str(&status_json(
        &run("batch-x", RunStatus::Running, None),
        &[],
        (&[], &[]),
        now,
    ))
    .unwrap();
    assert!(none.get("batches").is_none(), "no batches, no key");
}

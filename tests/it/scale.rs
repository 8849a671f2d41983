//! Cost that grows with the work, not the corpus (issue 27): a plan holds no text, so a
//! unit's file is read again when it is sent and checked against the hash it was planned
//! with; answers are made durable in groups, and a kill -9 between two group commits pays
//! again only what was in flight.
#![cfg(unix)]

use std::time::Duration;

use crate::one_engine::batch_in;
use crate::support::mock_llm::*;
use crate::support::*;

/// The user messages the mock was sent, joined.
fn sent_text(mock: &MockLlm) -> String {
    mock.recorded()
        .iter()
        .map(|r| r.body.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A file edited after the run was planned, before its unit was sent, fails that unit
/// with a clear reason: what is sent under a planned key is always what was planned.
#[test]
fn a_file_edited_after_planning_fails_its_unit_and_is_never_sent_changed() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(1500));
    let p = Project::new()
        .file("src/a.ts", "export const a = 1;\n")
        .file("src/b.ts", "export const b = 2;\n")
        .file("src/c.ts", "export const c = 3;\n")
        .file("src/d.ts", "export const d = 4;\n");
    let url = mock.url();
    // One call at a time, two admitted: d is read when the first call has ended.
    let running = p.rlm(&batch_in(&url, "out", &["-j", "1", "--json"])).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || mock.requests() >= 1),
        "the first call is made"
    );
    p.write("src/d.ts", "export const d = 'EDITED AFTER PLANNING';\n");
    let out = running.wait();
    out.assert_exit(1);
    let report = out.json();
    assert_eq!(report["succeeded"], 3, "{report:#}");
    assert_eq!(report["failed"].as_array().map(Vec::len), Some(1), "{report:#}");
    let failure = report.to_string();
    assert!(
        failure.contains("changed since the run was planned; rerun to plan it again"),
        "{failure}"
    );
    let sent = sent_text(&mock);
    assert_eq!(mock.requests(), 3, "d is never sent");
    assert!(!sent.contains("EDITED AFTER PLANNING"), "{sent}");
    assert!(!sent.contains("export const d"), "{sent}");
    // A rerun plans it again, and sends what the file holds now.
    mock.set_latency(Duration::ZERO);
    p.rlm(&batch_in(&url, "out2", &[])).run().assert_exit(0);
    assert_eq!(mock.requests(), 4, "only d is asked again");
    assert!(sent_text(&mock).contains("EDITED AFTER PLANNING"));
}

/// Cache entries in place under `.aiwg/rlm/cache` (each a paid answer).
fn cached_answers(p: &Project) -> usize {
    files_under(&p.path().join(".aiwg/rlm/cache/results-v1"))
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "json"))
        .count()
}

/// Answers are made durable in groups (one sync for up to the run's width of them), but each
/// is in place in the cache before its slot is handed back: a kill -9 between two group
/// commits loses no answer, and the resume pays only for what had no answer yet.
#[test]
fn a_kill_between_group_commits_pays_again_only_what_was_not_answered() {
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(300));
    let p = Project::new().ts_files(10);
    let url = mock.url();
    let running = p.rlm(&batch_in(&url, "out", &["-j", "3"])).spawn();
    assert!(
        wait_until(Duration::from_secs(30), || cached_answers(&p) >= 4),
        "the run makes progress"
    );
    running.signal("KILL");
    let _ = running.wait();
    // A request written just before the kill can reach the mock after it: the count is
    // read once it has settled, or the resume would be charged with it.
    let mut paid_before = mock.requests();
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let now = mock.requests();
        if now == paid_before {
            break;
        }
        paid_before = now;
    }
    let kept = cached_answers(&p);
    assert!((4..=10).contains(&kept), "{kept}");
    // Paid and not kept: only what was in flight, never more than the width at once (a
    // count of requests against kept answers would also count a retry under load).
    assert!(paid_before >= kept, "{paid_before} paid, {kept} kept");
    assert!(
        mock.max_in_flight() <= 3,
        "in flight at most the width: {}",
        mock.max_in_flight()
    );
    mock.set_latency(Duration::ZERO);
    let resumed = p.rlm(&["resume", "--yes"]).run();
    resumed.assert_exit(0);
    assert_eq!(p.report()["succeeded"], 10);
    // At most what had no answer kept: an answer journaled at the kill but not yet in the
    // cache (see `batch::pending`) is served from the journal, so it may pay less.
    let paid_again = mock.requests() - paid_before;
    assert!(
        paid_again <= 10 - kept,
        "every answer kept at the kill is served, not paid again: {paid_again} paid again, {kept} kept"
    );
}

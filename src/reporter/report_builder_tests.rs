//! Tests of the report builder: events in, report out.
use super::*;

fn ctx() -> ReportContext {
    ReportContext {
        run_id: "batch-1".into(),
        pattern: "*.ts".into(),
        sub_prompt: "p".into(),
        model: "m".into(),
        provider: "anthropic".into(),
        aggregate: "concat".into(),
        max_parallel: 4,
        price_basis: PriceBasis::Listed,
        price_tier: crate::provider::catalog::PriceTier::Realtime,
        estimated_cost_usd: 0.0,
        files_matched: 4,
        skipped: vec![],
        unreadable: vec![SkippedFile {
            path: "locked.ts".into(),
            reason: "cannot read: Permission denied".into(),
        }],
        warnings: vec![],
        plan_id: "p-0".into(),
        shard: None,
        merged_from: vec![],
        earlier_cost_usd: 0.0,
        earlier_completed: Default::default(),
        model_caution: None,
    }
}

fn failed(unit: &str, reason: &str) -> Event {
    Event::Failed {
        unit: UnitId::named(unit),
        label: unit.into(),
        kind: UnitKind::Map,
        attempts: 1,
        duration_ms: 1,
        usage: Usage::default(),
        cost_usd: 0.25,
        error: None,
        reason: reason.into(),
    }
}

#[test]
fn an_unreadable_file_makes_the_run_partial_and_the_fatal_error_wins() {
    let units = ["a", "b", "c"].map(|u| (UnitId::named(u), u.to_string()));
    let mut b = ReportBuilder::new(ctx(), units.clone());
    b.report(&Event::Completed {
        unit: UnitId::named("a"),
        label: "a".into(),
        kind: UnitKind::Map,
        attempts: 1,
        duration_ms: 1,
        usage: Usage::default(),
        saved: Usage::default(),
        cost_usd: 0.5,
        cache_saved_usd: 0.0,
        cached: false,
        truncated: false,
        result_file: Some("a.result.md".into()),
    });
    let report = ReportBuilder::new(ctx(), units.clone()).finish(RunEnd::default());
    assert_eq!(report.status, RunStatus::Failed, "nothing succeeded");
    b.report(&Event::Stopping {
        reason: "budget".into(),
        fatal: false,
    });
    b.report(&failed("b", "overloaded"));
    b.report(&Event::Stopping {
        reason: "authentication failed (401)".into(),
        fatal: true,
    });
    let report = b.finish(RunEnd {
        errors: vec!["summarize failed".into()],
        ..RunEnd::default()
    });
    assert_eq!(report.status, RunStatus::Failed, "a fatal error fails the run");
    assert_eq!(report.error.as_deref(), Some("authentication failed (401)"));
    assert_eq!(report.warnings, ["budget", "summarize failed"]);
    assert_eq!(report.failed.len(), 2, "the unreadable file and b");
    assert_eq!(report.not_run, ["c"]);
    assert!((report.cost_usd - 0.75).abs() < 1e-9);
    assert!(report.units[2].reason.as_deref().unwrap().contains("stopped first"));

    let mut ok = ReportBuilder::new(ctx(), [(UnitId::named("a"), "a".to_string())]);
    ok.report(&Event::Completed {
        unit: UnitId::named("a"),
        label: "a".into(),
        kind: UnitKind::Map,
        attempts: 1,
        duration_ms: 1,
        usage: Usage::default(),
        saved: Usage::default(),
        cost_usd: 0.0,
        cache_saved_usd: 0.0,
        cached: true,
        truncated: false,
        result_file: None,
    });
    assert_eq!(
        ok.finish(RunEnd::default()).status,
        RunStatus::Partial,
        "the unreadable file counts"
    );
}

/// A unit's files, as [`ReportBuilder::with_unit_files`] takes them.
fn files(names: &[&str]) -> Box<[std::sync::Arc<str>]> {
    names.iter().map(|n| std::sync::Arc::from(*n)).collect()
}

#[test]
fn files_are_counted_once_and_a_file_succeeds_only_when_all_its_units_do() {
    let units = ["chunk1", "chunk2", "batch", "whole"].map(|u| (UnitId::named(u), u.to_string()));
    let mut b = ReportBuilder::new(ctx(), units).with_unit_files([
        files(&["big.py"]),
        files(&["big.py"]),
        files(&["a.py", "b.py", "d.py"]),
        files(&["c.py"]),
    ]);
    for unit in ["chunk1", "batch", "whole"] {
        b.report(&Event::Completed {
            unit: UnitId::named(unit),
            label: unit.into(),
            kind: UnitKind::Map,
            attempts: 1,
            duration_ms: 1,
            usage: Usage::default(),
            saved: Usage::default(),
            cost_usd: 0.0,
            cache_saved_usd: 0.0,
            cached: false,
            truncated: false,
            result_file: None,
        });
    }
    b.report(&failed("chunk2", "bad"));
    let report = b.finish(RunEnd::default());
    assert_eq!(report.succeeded, 3, "units");
    assert_eq!(
        report.files_succeeded, 4,
        "a.py, b.py, d.py and c.py; big.py lost a chunk"
    );
}

#[test]
fn a_member_queued_after_the_start_and_not_run_keeps_its_file_from_counting() {
    let units = [(UnitId::named("batch"), "batch".to_string())];
    let mut b = ReportBuilder::new(ctx(), units).with_unit_files([files(&["a.md", "c.md"])]);
    b.report(&Event::Completed {
        unit: UnitId::named("batch"),
        label: "batch".into(),
        kind: UnitKind::Map,
        attempts: 1,
        duration_ms: 1,
        usage: Usage::default(),
        saved: Usage::default(),
        cost_usd: 0.0,
        cache_saved_usd: 0.0,
        cached: false,
        truncated: false,
        result_file: None,
    });
    // The batch's answer left c.md out, and no call could be made for it alone.
    b.report(&Event::Queued {
        unit: UnitId::named("member-c"),
        label: "c.md".into(),
        kind: UnitKind::Map,
    });
    b.report(&Event::Cancelled {
        unit: UnitId::named("member-c"),
        label: "c.md".into(),
        kind: UnitKind::Map,
        reason: "not run: its batch's answer had no usable entry for it".into(),
    });
    let report = b.finish(RunEnd::default());
    assert_eq!(report.files_succeeded, 1, "a.md only");
    assert_eq!(report.not_run, ["c.md"]);
    assert_eq!(report.status, RunStatus::Partial);
}

fn completed(unit: &str) -> Event {
    Event::Completed {
        unit: UnitId::named(unit),
        label: unit.into(),
        kind: UnitKind::Map,
        attempts: 1,
        duration_ms: 1,
        usage: Usage::default(),
        saved: Usage::default(),
        cost_usd: 0.5,
        cache_saved_usd: 0.0,
        cached: false,
        truncated: false,
        result_file: Some(format!("{unit}.result.md")),
    }
}

fn ended(reason: crate::report::RunEndReason) -> RunEnd {
    RunEnd {
        reason,
        ..RunEnd::default()
    }
}

#[test]
fn a_limit_is_the_status_even_with_nothing_succeeded_but_not_when_everything_did() {
    use crate::report::RunEndReason::{Budget, Deadline};
    let clean = || ReportContext {
        unreadable: vec![],
        ..ctx()
    };
    let units = || ["a", "b"].map(|u| (UnitId::named(u), u.to_string()));
    for (reason, status) in [
        (Budget, RunStatus::BudgetExceeded),
        (Deadline, RunStatus::DeadlineExceeded),
    ] {
        // Nothing succeeded: the limit stopped the run, which is resumable; not FAILED.
        let mut b = ReportBuilder::new(clean(), units());
        b.report(&Event::Stopping {
            reason: "the limit".into(),
            fatal: false,
        });
        b.report(&failed("a", "timed out"));
        let report = b.finish(ended(reason));
        assert_eq!(report.status, status);
        assert_eq!(report.error.as_deref(), Some("the limit"));

        // Every unit succeeded, the limit crossed by the last calls: SUCCESS, said as a warning.
        let mut b = ReportBuilder::new(clean(), units());
        b.report(&completed("a"));
        b.report(&Event::Stopping {
            reason: "the limit".into(),
            fatal: false,
        });
        b.report(&completed("b"));
        let report = b.finish(ended(reason));
        assert_eq!(report.status, RunStatus::Success, "{reason:?}");
        assert_eq!(report.error, None);
        assert!(
            report.warnings.iter().any(|w| w.ends_with("the limit")),
            "{:?}",
            report.warnings
        );
    }
}

#[test]
fn after_a_resume_the_cost_is_the_whole_runs_and_earlier_answers_are_no_cache_hits() {
    let ctx = ReportContext {
        unreadable: vec![],
        earlier_cost_usd: 1.25,
        earlier_completed: ["a".to_string()].into(),
        ..ctx()
    };
    let units = ["a", "b", "c"].map(|u| (UnitId::named(u), u.to_string()));
    let mut b = ReportBuilder::new(ctx, units);
    let served = |unit: &str| Event::Completed {
        unit: UnitId::named(unit),
        label: unit.into(),
        kind: UnitKind::Map,
        attempts: 0,
        duration_ms: 0,
        usage: Usage::default(),
        saved: Usage::default(),
        cost_usd: 0.0,
        cache_saved_usd: 0.0,
        cached: true,
        truncated: false,
        result_file: None,
    };
    b.report(&served("a"));
    b.report(&served("b"));
    b.report(&completed("c"));
    let report = b.finish(RunEnd::default());
    assert!((report.cost_usd - 1.75).abs() < 1e-9, "{}", report.cost_usd);
    assert!((report.earlier_cost_usd - 1.25).abs() < 1e-9);
    assert_eq!(
        (report.earlier_answers, report.cache_hits, report.cache_misses),
        (1, 1, 1)
    );
    assert!(report.units[0].answered_earlier && !report.units[0].cached);
    assert!(report.units[1].cached && !report.units[1].answered_earlier);
}

#[test]
fn a_unit_left_open_is_not_run_or_not_finished_as_the_event_log_and_the_store_say() {
    let units = [(UnitId::named("a"), "a"), (UnitId::named("b"), "b")];
    let mut b = ReportBuilder::new(ctx(), units);
    b.report(&Event::Started {
        unit: UnitId::named("b"),
        attempt: 1,
    });
    let report = b.finish(ended(crate::report::RunEndReason::Interrupted));
    let reasons: Vec<&str> = report.units.iter().map(|u| u.reason.as_deref().unwrap()).collect();
    assert_eq!(
        reasons,
        [
            super::super::left_open(crate::store::RunStatus::Interrupted, false, None),
            super::super::left_open(crate::store::RunStatus::Interrupted, true, None),
        ]
    );
    assert_eq!(reasons[0], "not run: the run was interrupted (rlm resume goes on)");
}

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
    }
}

fn failed(unit: &str, reason: &str, fatal: bool) -> Event {
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
        fatal,
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
    b.report(&failed("b", "authentication failed (401)", true));
    b.add_error("summarize failed".into());
    let report = b.finish(RunEnd::default());
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

#[test]
fn files_are_counted_once_and_a_file_succeeds_only_when_all_its_units_do() {
    let units = ["chunk1", "chunk2", "batch", "whole"].map(|u| (UnitId::named(u), u.to_string()));
    let mut b = ReportBuilder::new(ctx(), units);
    b.set_unit_files([
        (UnitId::named("chunk1"), vec!["big.py".to_string()]),
        (UnitId::named("chunk2"), vec!["big.py".to_string()]),
        (
            UnitId::named("batch"),
            vec!["a.py".to_string(), "b.py".to_string(), "d.py".to_string()],
        ),
        (UnitId::named("whole"), vec!["c.py".to_string()]),
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
    b.report(&failed("chunk2", "bad", false));
    let report = b.finish(RunEnd::default());
    assert_eq!(report.succeeded, 3, "units");
    assert_eq!(
        report.files_succeeded, 4,
        "a.py, b.py, d.py and c.py; big.py lost a chunk"
    );
}

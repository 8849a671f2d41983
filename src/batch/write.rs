//! What a run writes besides per-unit answers: the plan and settings at the start, the
//! result files of cache hits, the aggregate, and the report at the end. A write that
//! fails here is recorded and said, never dropped.

use std::path::Path;
use std::time::Instant;

use super::dispatcher::Dispatcher;
use super::execution::Execution;
use crate::aggregate::Aggregate;
use crate::cache::CacheEntry;
use crate::exec::Event;
use crate::input::Manifest;
use crate::printer::Printer;
use crate::provider::Usage;
use crate::report::{RunReport, RunStatus};
use crate::reporter::{ReportBuilder, RunEnd};
use crate::run_dir::RunDir;
use crate::settings::BatchSettings;
use crate::unit::{UnitKind, WorkUnit};

/// `settings.json` (the resolved settings, no secret) and `plan.json` (manifest and units)
/// in the run directory, so a run can be inspected (and later resumed) without its command.
pub fn plan_files(
    run_dir: &RunDir,
    settings: &BatchSettings,
    manifest: &Manifest,
    units: &[WorkUnit],
    printer: &Printer,
) {
    let plan = serde_json::json!({ "input": settings.input.source, "manifest": manifest, "units": units });
    // Each dispatched unit's prompt goes in prompts/ (see job::keep_prompt).
    if let Err(e) = std::fs::create_dir_all(run_dir.dir.join("prompts")) {
        printer.warn(&format!("cannot create the prompts directory: {e}"));
    }
    for (name, value) in [
        ("settings.json", serde_json::to_value(settings).unwrap_or_default()),
        ("plan.json", plan),
    ] {
        if let Err(e) = run_dir.write(name, &format!("{value:#}\n")) {
            printer.warn(&format!("cannot write {name}: {e}"));
        }
    }
}

/// Writes the result files of cache hits (on a few threads: a fully cached rerun of
/// thousands of files is mostly this) and records them, with the blocked units.
pub fn cache_hits(
    dispatcher: &mut Dispatcher,
    run_dir: &RunDir,
    units: &[WorkUnit],
    hits: Vec<(usize, CacheEntry)>,
    blocked: Vec<(usize, String)>,
) {
    let written = crate::parallel::map(&hits, crate::parallel::io_threads(), |(i, entry)| {
        let written = run_dir.write(&units[*i].result_name, &entry.text);
        if written.is_ok() {
            super::job::write_members(run_dir, &units[*i], &entry.text);
        }
        written
    });
    for ((i, entry), written) in hits.into_iter().zip(written) {
        let unit = &units[i];
        let written = written.unwrap_or_else(|| Err(std::io::Error::other("the writer thread failed")));
        let event = match written {
            Ok(_) => {
                dispatcher.texts.insert(unit.id.clone(), entry.text);
                Event::Completed {
                    unit: unit.id.clone(),
                    label: unit.label.clone(),
                    kind: UnitKind::Map,
                    attempts: 0,
                    duration_ms: 0,
                    usage: Usage::default(),
                    saved: entry.usage,
                    cost_usd: 0.0,
                    cached: true,
                    truncated: entry.truncated,
                    result_file: Some(unit.result_name.clone()),
                }
            }
            Err(e) => failed(unit, format!("cannot write its result file: {e}")),
        };
        dispatcher.emit(event);
    }
    for (i, reason) in blocked {
        dispatcher.emit(failed(&units[i], reason));
    }
}

fn failed(unit: &WorkUnit, reason: String) -> Event {
    Event::Failed {
        unit: unit.id.clone(),
        label: unit.label.clone(),
        kind: UnitKind::Map,
        attempts: 0,
        duration_ms: 0,
        usage: Usage::default(),
        cost_usd: 0.0,
        error: None,
        reason,
        fatal: false,
    }
}

/// Where the aggregate went.
#[derive(Debug, Default)]
pub struct AggregatePaths {
    pub markdown: Option<String>,
    pub json: Option<String>,
}

/// Writes `aggregate.md` (and `aggregate.json`); a failure is an error of the run.
pub fn aggregate(run_dir: &RunDir, cwd: &Path, aggregate: &Aggregate, builder: &mut ReportBuilder) -> AggregatePaths {
    let mut paths = AggregatePaths::default();
    match run_dir.write("aggregate.md", &aggregate.markdown) {
        Ok(path) => paths.markdown = Some(shown(&path, cwd)),
        Err(e) => builder.add_error(format!("cannot write the aggregate: {e}")),
    }
    if let Some(json) = &aggregate.json {
        match run_dir.write("aggregate.json", &format!("{json:#}\n")) {
            Ok(path) => paths.json = Some(shown(&path, cwd)),
            Err(e) => builder.add_error(format!("cannot write the JSON aggregate: {e}")),
        }
    }
    paths
}

/// Builds the report and writes it (`report.json` and the markdown report).
#[allow(clippy::too_many_arguments)]
pub fn report(
    exec: &mut Execution,
    run_dir: &RunDir,
    settings: &BatchSettings,
    paths: AggregatePaths,
    started: Instant,
    started_at: jiff::Timestamp,
    printer: &Printer,
    findings: Option<crate::report::FindingsSummary>,
) -> RunReport {
    let interrupted = exec.interrupted && !exec.deadline_passed();
    let reporters = &mut exec.dispatcher.reporters;
    let events_path = reporters.log.as_mut().map(|log| {
        if let Some(warning) = log.finish() {
            reporters.builder.add_error(warning);
        }
        shown(&run_dir.dir.join("events.jsonl"), &settings.cwd)
    });
    let mut report = reporters.builder.finish(RunEnd {
        // A --deadline stop is not an interrupt: the run ends partial and resumable.
        interrupted,
        duration_ms: started.elapsed().as_millis() as u64,
        started_at: started_at.to_string(),
        finished_at: jiff::Timestamp::now().to_string(),
        output_dir: shown(&run_dir.dir, &settings.cwd),
        report_path: shown(&run_dir.report_md, &settings.cwd),
        aggregate_path: paths.markdown,
        aggregate_json_path: paths.json,
        events_path,
    });
    if let Some(f) = &findings {
        if f.failed_on.is_some() && report.status == RunStatus::Success {
            report.status = RunStatus::Partial;
        }
    }
    report.findings = findings;
    if let Some(log) = exec.dispatcher.reporters.log.as_mut() {
        let outcome = serde_json::json!({
            "status": report.status.name(),
            "succeeded": report.succeeded,
            "failed": report.failed.len(),
            "cost_usd": report.cost_usd,
            "duration_ms": report.duration_ms,
        });
        if let Some(warning) = log.complete(&outcome) {
            report.warnings.push(warning);
        }
    }
    let json = serde_json::to_string_pretty(&report).unwrap_or_default();
    let written = run_dir
        .write("report.json", &json)
        .and_then(|_| run_dir.write_report_md(&report.to_markdown()));
    if let Err(e) = written {
        let e = format!("cannot write the report: {e}");
        printer.error(&e);
        report.error.get_or_insert(e);
        if report.status == RunStatus::Success {
            report.status = RunStatus::Partial;
        }
    }
    report
}

/// A path as printed: relative to the working directory when inside it, else absolute,
/// so it works from where the user ran the command.
pub fn shown(path: &Path, cwd: &Path) -> String {
    let s = path.strip_prefix(cwd).unwrap_or(path).display().to_string();
    crate::escape::name(&s).into_owned()
}

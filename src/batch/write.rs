//! What a run writes besides per-unit answers: the plan and settings at the start, the
//! result files of cache hits, the aggregate, and the report at the end. A write that
//! fails here is recorded and said, never dropped.

use std::path::Path;
use std::time::Instant;

use super::dispatcher::Dispatcher;
use super::execution::Execution;
use super::planning::Plan;
use crate::aggregate::Aggregate;
use crate::cache::{Cache, CacheEntry};
use crate::exec::Event;
use crate::printer::Printer;
use crate::provider::catalog::PriceTier;
use crate::provider::Usage;
use crate::report::{Gate, RunEndReason, RunReport, RunStatus};
use crate::reporter::RunEnd;
use crate::request::RequestContext;
use crate::run_dir::RunDir;
use crate::settings::BatchSettings;
use crate::unit::{UnitKind, WorkUnit};

/// `settings.json` (the resolved settings and the record of the options they came from, no
/// secret; the plan's identity) and `plan.json` (manifest and units) in the run directory,
/// so a run can be inspected, resumed and merged without its command. Returns what could not be written
/// (warnings: the run goes on).
pub fn plan_files(run_dir: &RunDir, settings: &BatchSettings, plan: &Plan) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut recorded = super::recorded_settings(settings);
    if let Some(map) = recorded.as_object_mut() {
        map.insert("plan_id".into(), serde_json::json!(plan.plan_id));
        map.insert("plan_units".into(), serde_json::json!(plan.plan_units));
    }
    /// Serialized as it is, not through a `serde_json::Value` (a tree of every unit's
    /// fields, which cost more than the writing for plans of thousands of units).
    #[derive(serde::Serialize)]
    struct PlanFile<'a> {
        input: &'a crate::settings::InputSource,
        plan_id: &'a crate::shard::PlanId,
        manifest: &'a crate::input::Manifest,
        units: &'a [WorkUnit],
    }
    let plan = PlanFile {
        input: &settings.input.source,
        plan_id: &plan.plan_id,
        manifest: &plan.manifest,
        units: &plan.units,
    };
    // Each dispatched unit's prompt goes in prompts/ (see job::keep_prompt).
    if let Err(e) = fs_err::create_dir_all(run_dir.dir.join("prompts")) {
        warnings.push(format!("cannot create the prompts directory: {e}"));
    }
    let written = [
        ("settings.json", run_dir.write_json("settings.json", &recorded)),
        ("plan.json", run_dir.write_json("plan.json", &plan)),
    ];
    for (name, written) in written {
        if let Err(e) = written {
            warnings.push(format!("cannot write {name}: {e}"));
        }
    }
    warnings
}

/// Reads the answers of cache hits and writes their result files (on a few threads: a
/// fully cached rerun of thousands of files is mostly this), and records them, with the
/// blocked units.
pub fn cache_hits(
    dispatcher: &mut Dispatcher,
    run_dir: &RunDir,
    units: &[WorkUnit],
    requests: &RequestContext,
    cache: &Cache,
    hits: Vec<(usize, CacheEntry)>,
    blocked: Vec<(usize, String)>,
) {
    // Each answer is recorded as soon as its result file is written, while the next ones
    // are being written.
    let mut next = hits.iter();
    let write = |(i, entry): &(usize, CacheEntry)| {
        let unit = &units[*i];
        let expect = crate::request::expect_of(unit, requests);
        let read = super::answers::read(unit, &entry.text, expect, requests.schema.as_ref());
        let cached = super::answers::Cached {
            fresh: false,
            cache,
            key: &unit.cache_key,
        };
        let written = super::answers::write(run_dir, Some(cached), unit, &entry.text, &read);
        (read, written)
    };
    crate::parallel::each_in_order(&hits, crate::parallel::io_threads(), 64, write, |read| {
        let Some((i, entry)) = next.next() else { return };
        let unit = &units[*i];
        let event = match read {
            Some((answers, Ok(()))) => {
                dispatcher.served(unit.id.clone(), answers);
                Event::Completed {
                    unit: unit.id.clone(),
                    label: unit.label.clone(),
                    kind: UnitKind::Map,
                    attempts: 0,
                    duration_ms: 0,
                    usage: Usage::default(),
                    saved: entry.usage,
                    cost_usd: 0.0,
                    cache_saved_usd: 0.0,
                    cached: true,
                    truncated: entry.truncated,
                    result_file: Some(unit.result_name.clone()),
                }
            }
            Some((_, Err(e))) => failed(unit, format!("cannot write its result file: {e}")),
            None => failed(unit, "internal error: the writer thread failed".into()),
        };
        dispatcher.emit(event);
    });
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
    }
}

/// Where the aggregate went.
#[derive(Debug, Default)]
pub struct AggregatePaths {
    pub markdown: Option<String>,
    pub json: Option<String>,
}

/// Writes `aggregate.md` (and `aggregate.json`, and beside a merged one
/// `aggregate.sources.json`): where they went, and what could not be
/// written (an error of the run).
pub fn aggregate(run_dir: &RunDir, cwd: &Path, aggregate: &Aggregate) -> (AggregatePaths, Vec<String>) {
    let mut paths = AggregatePaths::default();
    let mut errors = Vec::new();
    match run_dir.write("aggregate.md", &aggregate.markdown) {
        Ok(path) => paths.markdown = Some(shown(&path, cwd)),
        Err(e) => errors.push(format!("cannot write the aggregate: {e}")),
    }
    if let Some(json) = &aggregate.json {
        match run_dir.write("aggregate.json", &format!("{json:#}\n")) {
            Ok(path) => paths.json = Some(shown(&path, cwd)),
            Err(e) => errors.push(format!("cannot write the JSON aggregate: {e}")),
        }
    }
    if let Some(sources) = &aggregate.sources {
        if let Err(e) = run_dir.write(crate::aggregate::SOURCES_FILE, &format!("{sources:#}\n")) {
            errors.push(format!("cannot write where the merged values came from: {e}"));
        }
    }
    (paths, errors)
}

/// How the report is finished: where the run's files went, when it ran, why it ended.
pub struct ReportEnd {
    pub paths: AggregatePaths,
    pub started: Instant,
    pub started_at: jiff::Timestamp,
    pub reason: RunEndReason,
    pub findings: Option<crate::report::FindingsSummary>,
    /// Errors of the run that are no event (an aggregate not written, a summary failed).
    pub errors: Vec<String>,
}

/// Builds the report and writes it (`report.json` and the markdown report).
pub fn report(
    exec: &mut Execution,
    run_dir: &RunDir,
    settings: &BatchSettings,
    end: ReportEnd,
    printer: &Printer,
) -> RunReport {
    let reporters = &mut exec.dispatcher.reporters;
    let mut errors = end.errors;
    let events_path = reporters.log.as_mut().map(|log| {
        errors.extend(log.finish());
        shown(&run_dir.dir.join("events.jsonl"), &settings.cwd)
    });
    let mut report = reporters.builder.finish(RunEnd {
        reason: end.reason,
        duration_ms: end.started.elapsed().as_millis() as u64,
        started_at: end.started_at.to_string(),
        finished_at: jiff::Timestamp::now().to_string(),
        output_dir: shown(&run_dir.dir, &settings.cwd),
        report_path: shown(&run_dir.report_md, &settings.cwd),
        aggregate_path: end.paths.markdown,
        aggregate_json_path: end.paths.json,
        events_path,
        errors,
    });
    if report.price_tier == PriceTier::Batch && exec.dispatcher.paid_realtime {
        // Under --batch-api, an aggregation call (or a fallback) made at the list price.
        report.set_price_tier(PriceTier::Mixed);
    }
    if let Some(f) = &end.findings {
        if settings.task.fail_on.is_some() {
            report.gate = Some(if f.failed_on.is_some() {
                Gate::Failed
            } else {
                Gate::Passed
            });
        }
    }
    report.findings = end.findings;
    if let Some(log) = exec.dispatcher.reporters.log.as_mut() {
        let outcome = serde_json::json!({
            "status": report.status.name(),
            "gate": report.gate,
            "succeeded": report.succeeded,
            "failed": report.failed.len(),
            "cost_usd": report.cost_usd,
            "duration_ms": report.duration_ms,
        });
        if let Some(warning) = log.complete(&outcome) {
            report.warnings.push(warning);
        }
    }
    // The two at once: a report of 100,000 units takes a while to write either way.
    let written = std::thread::scope(|scope| {
        let json = scope.spawn(|| run_dir.write_json("report.json", &report));
        let md = run_dir.write_report_md(&report.to_markdown());
        let json = json
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the thread writing report.json failed")));
        json.and(md)
    });
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
    // Escaped, not lossy, where a name is not UTF-8 (`out\xFF/aggregate.md`).
    let s = crate::input::display_path(path.strip_prefix(cwd).unwrap_or(path));
    crate::escape::name(&s).into_owned()
}

//! `rlm batch`: inputs → manifest → plan → cache pre-pass → execute → aggregate → report.
//!
//! [`run`] reads as that flow; each stage is a call into the module that owns it. The
//! dispatcher owns what the user sees; units run in the pool and write their answer (to
//! the cache, then their result file) before they count as done.

mod aggregate_stage;
mod conform;
mod dispatcher;
pub(crate) mod estimate;
mod execution;
mod findings_stage;
mod graph_inputs;
mod job;
mod output;
mod plan_json;
mod prepass;
pub(crate) mod startup;
mod synthesize;
mod trajectory;
mod write;

use std::sync::Arc;
use std::time::Instant;

use crate::aggregate::{AggregateStrategy, ResultItem};
use crate::cache::{Cache, CacheMode};
use crate::content_plan::{self, ContentOptions};
use crate::error::{ExitStatus, RlmError};
use crate::exec::{CallContext, Event, Limiter, RetryPolicy};
use crate::plan::{self, KeyParts, PlanContext};
use crate::printer::Printer;
use crate::prompt::Delimiter;
use crate::reporter::{EventLog, ProgressReporter, ReportBuilder, ReportContext, Reporters};
use crate::reporter::{StoreReporter, StoreTarget};
use crate::run_dir::RunDir;
use crate::settings::BatchSettings;
use crate::store::{NewRun, RunId, RunStatus as StoreRunStatus, TaskStore};

use dispatcher::Dispatcher;
use execution::Execution;
use job::{Job, JobContext};
use output::PlanView;

/// Runs one batch and returns its exit status. An error is something that stopped the
/// run before any call was made (exit 2) or a refusal at the start; everything after the
/// first call is reported, and the exit code says whether money was spent.
pub async fn run(settings: BatchSettings, printer: Printer) -> Result<ExitStatus, RlmError> {
    let started = Instant::now();
    let started_at = jiff::Timestamp::now();

    // Inputs → manifest.
    let manifest = startup::resolve_inputs(&settings, &printer)?;
    if manifest.files.is_empty() {
        // A list-based axis (changed files, a file list) selected nothing: nothing to do.
        return Ok(nothing_to_do(&settings, &manifest, &printer));
    }
    for warning in &manifest.warnings {
        printer.warn(warning);
    }
    let mut blocker = settings.provider.blocker.clone();
    if let (Some(b), false) = (&blocker, settings.output.dry_run) {
        return Err(RlmError::Usage(b.clone()));
    }
    let model = match startup::resolve_model(&settings, &printer).await {
        Ok(model) => model,
        Err(e) if settings.output.dry_run => {
            blocker = blocker.or(Some(e));
            crate::provider::ModelInfo::resolve("unknown".into(), None, &settings.budget.prices, false)
        }
        Err(e) => return Err(RlmError::Usage(e)),
    };

    // Manifest → plan.
    let keys = KeyParts {
        query: plan::batch_query(settings.task.schema.as_ref()),
        sub_prompt: settings.task.sub_prompt.clone(),
        model: model.id.clone(),
        endpoint: settings.provider.endpoint_identity(),
        require_citations: settings.task.require_citations,
    };
    let delimiter = Delimiter::new();
    let content = ContentOptions {
        chunking: settings.task.chunking,
        batch_small: settings.task.batch_small,
        chunk_always: settings.task.chunk_always,
        focus: settings.task.focus,
        templates: content_plan::load_templates(&settings.rlm_dir())?,
    };
    let units = content_plan::plan(
        &manifest,
        &PlanContext {
            keys: &keys,
            model: &model,
            max_tokens: settings.provider.max_tokens,
        },
        &content,
        &delimiter,
    );

    // Cache pre-pass, estimate, and the checks that come before any call.
    let cache = Cache::new(&settings.rlm_dir());
    let pre = prepass::run(&units, &cache, settings.exec.cache_mode, settings.provider.max_tokens)?;
    if settings.exec.cache_mode == CacheMode::ReadOnly && !pre.misses.is_empty() {
        return Err(RlmError::Usage(prepass::cache_only_message(&units, &pre.misses)));
    }
    let estimate = estimate::estimate(&units, &pre, &settings, &model);
    let view = PlanView {
        settings: &settings,
        model: &model,
        manifest: &manifest,
        units: &units,
        pre: &pre,
        estimate: &estimate,
        delimiter: &delimiter,
    };
    if let Some(w) = &settings.exec.parallelism.warning {
        printer.warn(w);
    }
    printer.banner(&output::init_block(&view));
    if settings.output.dry_run {
        output::dry_run(&printer, &view, blocker.as_deref());
        return Ok(ExitStatus::Success);
    }
    estimate::confirm(&settings, &estimate, &printer)?;
    // The task store: `rlm status`, `list` and `resume` know the run from it.
    let store = match TaskStore::open(&settings.rlm_dir()) {
        Ok(store) => Some(store),
        Err(e) => {
            printer.warn(&format!("{e}; rlm status and rlm resume will not know this run"));
            None
        }
    };
    let run_dir = match &settings.resume {
        Some(target) => RunDir::reopen(
            &settings.rlm_dir(),
            &target.output_dir,
            &target.run_id,
            settings.redactor(),
        )?,
        None => RunDir::create_unique(
            &settings.rlm_dir(),
            settings.output.output_dir.as_deref(),
            settings.redactor(),
            &|id| store.as_ref().is_some_and(|s| s.run(&RunId::from(id)).is_ok()),
        )?,
    };
    if settings.exec.cache_mode != CacheMode::ReadOnly {
        cache
            .prepare()
            .map_err(|e| RlmError::Usage(format!("{e}: the cache must be writable before anything is paid for")))?;
    }
    write::plan_files(&run_dir, &settings, &manifest, &units, &printer);
    tracing::debug!(dir = %run_dir.dir.display(), "run directory ready");

    // Execute: one pool, one dispatcher, events to the reporters.
    let (events_tx, events_rx) = tokio::sync::mpsc::unbounded_channel();
    let width = settings.exec.parallelism.width;
    let limiter = Limiter::new(width);
    let call = CallContext::new(
        startup::provider(&settings, &model, &run_dir.run_id)?,
        RetryPolicy {
            retries: settings.exec.retries,
            rate_limit_wait: settings.exec.rate_limit_wait,
            base: settings.exec.backoff_base,
            max: std::time::Duration::from_secs(60),
        },
        limiter.clone(),
        events_tx,
        settings.provider.shown_base_url(),
    );
    let reporters = Reporters {
        progress: ProgressReporter::new(printer.clone(), model.is_free()),
        log: EventLog::create(
            &run_dir.dir.join("events.jsonl"),
            &run_dir.run_id,
            settings.provider.depth,
            settings.redactor(),
        )
        .map_err(|e| printer.warn(&format!("no event log: {e}")))
        .ok(),
        builder: {
            let mut builder = ReportBuilder::new(
                report_context(&settings, &model, &run_dir, &manifest, estimate.usd),
                units.iter().map(|u| (u.id.clone(), u.label.clone())),
            );
            builder.set_unit_files(
                units
                    .iter()
                    .map(|u| (u.id.clone(), u.inputs.iter().map(|i| i.display.clone()).collect())),
            );
            builder
        },
        store: store.and_then(|store| {
            let target = match &settings.resume {
                Some(t) => StoreTarget::Resumed(RunId::from(t.run_id.as_str())),
                None => StoreTarget::New(Box::new(new_run(&settings, &run_dir))),
            };
            let served: Vec<usize> = pre.hits.iter().map(|(i, _)| *i).collect();
            StoreReporter::start(store, target, &units, &served, settings.provider.depth)
                .map_err(|e| printer.warn(&format!("{e}; rlm status and rlm resume will not know this run")))
                .ok()
        }),
    };
    tracing::debug!(store = reporters.store.is_some(), "reporters ready");
    let jobs = Arc::new(JobContext {
        call: Arc::new(call),
        cache: cache.clone(),
        run_dir: run_dir.clone(),
        keys,
        delimiter,
        max_tokens: settings.provider.max_tokens,
        schema: settings.task.schema.clone(),
        trajectory: match &settings.exec.trajectory {
            Some(path) => Some(trajectory::Trajectory::open(path, settings.redactor()).map_err(RlmError::Usage)?),
            None => None,
        },
        read_cache: settings.exec.cache_mode.reads(),
        may_call: settings.exec.cache_mode != CacheMode::ReadOnly,
    });
    let dispatcher = Dispatcher::new(reporters, model.clone(), settings.budget.max_cost, printer.clone());
    let deadline = settings.exec.deadline.map(|d| started + d);
    let mut exec = Execution::new(dispatcher, jobs, events_rx, limiter, width, deadline);
    exec.dispatcher.emit(Event::RunStarted {
        units: units.len(),
        cached: pre.hits.len(),
        to_call: pre.misses.len(),
        width,
        model: model.id.clone(),
        provider: settings.provider.kind.name().to_string(),
    });
    write::cache_hits(&mut exec.dispatcher, &run_dir, &units, pre.hits, pre.blocked);
    tracing::debug!("cache hits written");
    let skip = settings.resume.as_ref().map(|t| &t.skip);
    let mut misses: Vec<Job> = Vec::with_capacity(pre.misses.len());
    for &i in &pre.misses {
        let unit = &units[i];
        if skip.is_some_and(|s| s.contains(unit.id.as_str())) {
            exec.dispatcher.emit(Event::Cancelled {
                unit: unit.id.clone(),
                label: unit.label.clone(),
                kind: crate::unit::UnitKind::Map,
                reason: "failed in the earlier run: rlm resume --failed tries it again".into(),
            });
        } else {
            misses.push(Job::Unit(unit.clone()));
        }
    }
    exec.run_phase(misses).await;

    // Aggregate what succeeded, in plan order.
    let results: Vec<ResultItem> = units
        .iter()
        .filter_map(|u| {
            exec.dispatcher.texts.get(&u.id).map(|text| ResultItem {
                path: u.label.clone(),
                text: text.clone(),
            })
        })
        .collect();
    let types: Vec<crate::content::ContentType> = units
        .iter()
        .filter(|u| exec.dispatcher.texts.contains_key(&u.id))
        .map(|u| match &u.content {
            Some(c) => c.content_type,
            None => crate::content::detect(&u.label, "").content_type,
        })
        .collect();
    let mut paths = write::AggregatePaths::default();
    let mut answer = None;
    if !results.is_empty() {
        let failed = exec.dispatcher.reporters.builder.failed_so_far();
        let strategy = match (settings.output.answer_on_stdout, results.len()) {
            // `rlm query` on a file read in one piece: its answer is the answer.
            (true, 1) => AggregateStrategy::Concat,
            _ => settings.task.aggregate,
        };
        let aggregate = aggregate_stage::build(
            aggregate_stage::AggregateInput {
                strategy,
                pattern: &settings.input.pattern,
                timestamp: &run_dir.timestamp,
                results: &results,
                types: &types,
                sub_prompt: &settings.task.sub_prompt,
                templates: &content.templates,
                failed: &failed,
                context_window: model.context_window,
                max_tokens: settings.provider.max_tokens,
                require_citations: settings.task.require_citations,
            },
            &mut exec,
        )
        .await;
        if settings.output.answer_on_stdout {
            answer = Some(match results.as_slice() {
                [one] => one.text.clone(),
                _ => aggregate.markdown.clone(),
            });
        }
        paths = write::aggregate(
            &run_dir,
            &settings.cwd,
            &aggregate,
            &mut exec.dispatcher.reporters.builder,
        );
    }

    // Report.
    tracing::debug!("aggregate written");
    exec.dispatcher.reporters.progress.finish();
    if exec.deadline_passed() {
        let limit = settings.exec.deadline.map(|d| d.as_secs_f64()).unwrap_or_default();
        exec.dispatcher.reporters.builder.add_error(format!(
            "the --deadline ({limit}s) passed: dispatching stopped; rlm resume goes on with the units not run"
        ));
    }
    let collected = findings_stage::collect(&settings, &units, &exec.dispatcher.texts);
    let findings = findings_stage::write(&settings, &run_dir, &collected, &printer);
    let report = write::report(
        &mut exec, &run_dir, &settings, paths, started, started_at, &printer, findings,
    );
    findings_stage::publish(&settings, &collected, &report.to_markdown(), &printer);
    if let Some(store) = &mut exec.dispatcher.reporters.store {
        store.finish(store_status(&report));
        if let Some(e) = &store.failure {
            printer.warn(&format!("the task store could not record all of this run: {e}"));
        }
    }
    output::completion(&printer, &report, settings.output.quiet, answer.as_deref());
    Ok(report.status.exit_status())
}

/// The end of a run whose input list selected no file: said plainly, exit 0, and with
/// `--json` one document that says so (plus an empty SARIF log at `--sarif`).
fn nothing_to_do(settings: &BatchSettings, manifest: &crate::input::Manifest, printer: &Printer) -> ExitStatus {
    findings_stage::write_empty(settings, printer);
    let message = format!(
        "no files to process: {} selected none{}; nothing was sent",
        settings.input.pattern,
        if manifest.skipped.is_empty() {
            String::new()
        } else {
            format!(" ({} listed but skipped)", manifest.skipped.len())
        }
    );
    if settings.output.json {
        printer.json(&serde_json::json!({
            "status": "success",
            "files_matched": manifest.matched(),
            "succeeded": 0,
            "skipped": manifest.skipped,
            "message": message,
            "findings": {"error": 0, "warning": 0, "note": 0},
        }));
    } else {
        printer.banner(&format!("rlm: {message}"));
    }
    ExitStatus::Success
}

/// The run as the task store records it.
fn new_run(settings: &BatchSettings, run_dir: &RunDir) -> NewRun {
    let redactor = settings.redactor();
    NewRun {
        id: Some(run_dir.run_id.clone()),
        kind: "batch".into(),
        // Keys and URL credentials are never stored (a resumed run needs them given again).
        command: settings
            .argv
            .iter()
            .map(|a| {
                let a = redactor.scrub(a);
                match a.find("http://").or_else(|| a.find("https://")) {
                    Some(at) => format!("{}{}", &a[..at], crate::secret::redact_url(&a[at..])),
                    None => a.into_owned(),
                }
            })
            .collect(),
        cwd: settings.cwd.clone(),
        output_dir: Some(run_dir.dir.clone()),
        parent: settings.parent_run.as_deref().map(RunId::from),
        depth: settings.provider.depth,
        settings: serde_json::to_value(settings).unwrap_or_default(),
    }
}

/// The store's status for a finished run.
fn store_status(report: &crate::report::RunReport) -> StoreRunStatus {
    use crate::report::RunStatus as R;
    let budget = report.error.as_deref().is_some_and(|e| e.contains("--max-cost"));
    let deadline = report.error.as_deref().is_some_and(|e| e.contains("--deadline"));
    match report.status {
        _ if budget => StoreRunStatus::BudgetExceeded,
        _ if deadline => StoreRunStatus::DeadlineExceeded,
        R::Success => StoreRunStatus::Success,
        R::Partial => StoreRunStatus::Partial,
        R::Failed => StoreRunStatus::Failed,
        R::Interrupted => StoreRunStatus::Interrupted,
    }
}

/// What the report says that events do not.
fn report_context(
    settings: &BatchSettings,
    model: &crate::provider::ModelInfo,
    run_dir: &RunDir,
    manifest: &crate::input::Manifest,
    estimated_cost_usd: f64,
) -> ReportContext {
    ReportContext {
        run_id: run_dir.run_id.clone(),
        pattern: settings.input.pattern.clone(),
        sub_prompt: settings.task.sub_prompt.clone(),
        model: model.id.clone(),
        provider: settings.provider.kind.name().to_string(),
        aggregate: settings.task.aggregate.name().to_string(),
        max_parallel: settings.exec.parallelism.width,
        price_basis: model.price_basis,
        estimated_cost_usd,
        files_matched: manifest.matched(),
        skipped: manifest.skipped.clone(),
        unreadable: manifest.unreadable.clone(),
        warnings: settings.exec.parallelism.warning.iter().cloned().collect(),
    }
}

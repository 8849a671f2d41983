//! `rlm batch`: inputs → manifest → plan → cache pre-pass → execute → aggregate → report.
//!
//! [`run`] reads as that flow; each stage is a call into the module that owns it. The
//! dispatcher owns what the user sees; units run in the pool and write their answer (to
//! the cache, then their result file) before they count as done.

mod aggregate_stage;
mod dispatcher;
mod estimate;
mod execution;
mod graph_inputs;
mod job;
mod output;
mod prepass;
mod startup;
mod write;

use std::sync::Arc;
use std::time::Instant;

use crate::aggregate::ResultItem;
use crate::cache::{Cache, CacheMode};
use crate::error::{ExitStatus, RlmError};
use crate::exec::{CallContext, Event, Limiter, RetryPolicy};
use crate::plan::{self, KeyParts, PlanContext};
use crate::printer::Printer;
use crate::prompt::Delimiter;
use crate::reporter::{EventLog, ProgressReporter, ReportBuilder, ReportContext, Reporters};
use crate::run_dir::RunDir;
use crate::settings::BatchSettings;

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
        query: plan::batch_query(),
        sub_prompt: settings.task.sub_prompt.clone(),
        model: model.id.clone(),
        endpoint: settings.provider.endpoint_identity(),
        require_citations: settings.task.require_citations,
    };
    let units = plan::plan(
        &manifest,
        &PlanContext {
            keys: &keys,
            model: &model,
            max_tokens: settings.provider.max_tokens,
        },
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
    let run_dir = RunDir::create(
        &settings.rlm_dir(),
        settings.output.output_dir.as_deref(),
        settings.redactor(),
    )?;
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
        startup::provider(&settings, &model)?,
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
        log: EventLog::create(&run_dir.dir.join("events.jsonl"), &run_dir.run_id, settings.redactor())
            .map_err(|e| printer.warn(&format!("no event log: {e}")))
            .ok(),
        builder: ReportBuilder::new(
            report_context(&settings, &model, &run_dir, &manifest, estimate.usd),
            units.iter().map(|u| (u.id.clone(), u.label.clone())),
        ),
    };
    let jobs = Arc::new(JobContext {
        call: Arc::new(call),
        cache: cache.clone(),
        run_dir: run_dir.clone(),
        keys,
        delimiter: Delimiter::new(),
        max_tokens: settings.provider.max_tokens,
        read_cache: settings.exec.cache_mode.reads(),
        may_call: settings.exec.cache_mode != CacheMode::ReadOnly,
    });
    let dispatcher = Dispatcher::new(reporters, model.clone(), settings.budget.max_cost, printer.clone());
    let mut exec = Execution::new(dispatcher, jobs, events_rx, limiter, width);
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
    let misses: Vec<Job> = pre.misses.iter().map(|&i| Job::Unit(units[i].clone())).collect();
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
    let mut paths = write::AggregatePaths::default();
    if !results.is_empty() {
        let failed = exec.dispatcher.reporters.builder.failed_so_far();
        let aggregate = aggregate_stage::build(
            aggregate_stage::AggregateInput {
                strategy: settings.task.aggregate,
                pattern: &settings.input.pattern,
                timestamp: &run_dir.timestamp,
                results: &results,
                failed: &failed,
                context_window: model.context_window,
                max_tokens: settings.provider.max_tokens,
                require_citations: settings.task.require_citations,
            },
            &mut exec,
        )
        .await;
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
    let report = write::report(&mut exec, &run_dir, &settings, paths, started, started_at, &printer);
    output::completion(&printer, &report, settings.output.quiet);
    Ok(report.status.exit_status())
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

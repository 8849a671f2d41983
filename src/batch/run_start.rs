//! A run's start: its directory opened (plan and settings written, the cache made ready),
//! the run recorded in the store, the reporters and the executor built, and what the
//! report says that events do not.

use std::sync::Arc;
use std::time::Instant;

use super::batch_api_run::{BatchApiRun, Delivery};
use super::dispatcher::Dispatcher;
use super::execution::Execution;
use super::job::JobContext;
use super::{key_claim, model_caution, pending, startup, trajectory, write, Merged, Plan};
use crate::cache::CacheMode;
use crate::error::{InUse, OutputFailure, RlmError, StoreFailure, StoreRefusal};
use crate::exec::{CallContext, Limiter, RetryPolicy};
use crate::printer::Printer;
use crate::reporter::{EventLog, ProgressReporter, ReportBuilder, ReportContext, Reporters};
use crate::reporter::{StoreReporter, StoreTarget};
use crate::run_dir::RunDir;
use crate::settings::{BatchSettings, RunRecord};
use crate::store::{NewRun, RunId, TaskStore};

/// The run directory (a resumed run's own), with the plan and settings written into it,
/// and the cache made ready: nothing is paid for that could not be kept. Returns the
/// warnings it said, for the report.
pub(super) fn open_run_dir(
    settings: &BatchSettings,
    plan: &Plan,
    printer: &Printer,
) -> Result<(RunDir, Vec<String>), RlmError> {
    // Run ids are reserved in the store, so two runs started at once never share one. A
    // store that fails to reserve one refuses the run (an id it could not check may be
    // another run's); a store that cannot be opened records nothing of this run either (it
    // warns so), so no id of it can clash there.
    let store = TaskStore::open(&settings.rlm_dir()).ok();
    let taken = |id: &str| match &store {
        Some(store) => store
            .reserve_run_id(id)
            .map(|free| !free)
            .map_err(|e| StoreFailure::ReserveRunId(e).into()),
        None => Ok(false),
    };
    let run_dir = match &settings.resume {
        Some(target) => {
            // Before the directory is taken up: a refused resume leaves it as it was.
            pending::ready(settings, &plan.cache, &target.output_dir)?;
            let mut run_dir = RunDir::reopen(
                &settings.rlm_dir(),
                &target.output_dir,
                &target.run_id,
                target.lock.clone(),
                settings.redactor(),
            )?;
            run_dir.timestamp.clone_from(&target.run_timestamp);
            run_dir
        }
        None => {
            let run_dir = RunDir::create_unique(
                &settings.rlm_dir(),
                settings.output.output_dir.as_deref(),
                settings.redactor(),
                &taken,
                &|earlier| batches_left_at_the_provider(store.as_ref(), earlier),
            )?;
            pending::ready(settings, &plan.cache, &run_dir.dir)?;
            run_dir
        }
    };
    let warnings = write::plan_files(&run_dir, settings, plan);
    for warning in &warnings {
        printer.warn(warning);
    }
    tracing::debug!(dir = %run_dir.dir.display(), "run directory ready");
    Ok((run_dir, warnings))
}

/// Refuses to take over the directory of run `earlier` while batches of it are still at the
/// provider (submitted, not collected): its results would have nowhere to go, and the
/// batches would run on, paid for, with nobody to collect them.
fn batches_left_at_the_provider(store: Option<&TaskStore>, earlier: &str) -> Result<(), RlmError> {
    let Some(store) = store else { return Ok(()) };
    let run = RunId::from(earlier);
    let waiting = store
        .batch_submissions(&run)
        .map_err(|source| StoreFailure::EarlierBatches {
            run: run.clone(),
            source,
        })?
        .into_iter()
        .filter(|b| b.collected_at.is_none())
        .count()
        // A submission whose reply was never recorded may have created one.
        + store.batch_intents(&run).map_or(0, |i| i.len());
    if waiting == 0 {
        return Ok(());
    }
    Err(InUse::BatchesWaiting {
        run: earlier.to_string(),
        waiting,
    }
    .into())
}

/// What a run brings to its start besides its plan.
pub(super) struct Started<'a> {
    /// `rlm merge`: the runs that answered its units.
    pub(super) merged: Option<&'a Merged>,
    /// Said since the plan was made (the cost question, the run directory), for the report.
    pub(super) warnings: Vec<String>,
    /// `--save-trajectory`, opened before the run directory (see [`open_trajectory`]).
    pub(super) trajectory: Option<Arc<trajectory::Trajectory>>,
}

/// Opens `--save-trajectory PATH` before the run exists: a path that cannot be opened stops
/// the command there, leaving no run directory and no run in the store that never started
/// (one that `rlm list` showed crashed and `rlm resume` took up).
pub(super) fn open_trajectory(settings: &BatchSettings) -> Result<Option<Arc<trajectory::Trajectory>>, RlmError> {
    settings
        .exec
        .trajectory
        .as_ref()
        .map(|path| {
            trajectory::Trajectory::open(path, settings.redactor())
                .map(Arc::new)
                .map_err(|e| OutputFailure::Trajectory(e).into())
        })
        .transpose()
}

/// The execution machinery: the provider, the pool's limiter, the dispatcher and its
/// reporters (progress, events.jsonl, the report builder, the task store).
pub(super) fn start(
    settings: &BatchSettings,
    plan: &Plan,
    run_dir: &RunDir,
    printer: &Printer,
    (started, started_at): (Instant, jiff::Timestamp),
    Started {
        merged,
        mut warnings,
        trajectory,
    }: Started<'_>,
) -> Result<Execution, RlmError> {
    let (events_tx, events_rx) = tokio::sync::mpsc::unbounded_channel();
    let (paid_tx, paid_rx) = tokio::sync::mpsc::unbounded_channel();
    let width = settings.exec.parallelism.width;
    let limiter = Limiter::starting_at(width, settings.exec.parallelism.given);
    let call = CallContext::new(
        startup::provider(settings, &plan.model, &run_dir.run_id)?,
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
    // Each warning is said as it happens, and kept for the report.
    let mut warn = |message: String| {
        printer.warn(&message);
        warnings.push(message);
    };
    let units = &plan.units;
    let log = match EventLog::open(
        &run_dir.dir.join("events.jsonl"),
        &run_dir.run_id,
        settings.provider.depth,
        settings.redactor(),
        settings
            .resume
            .as_ref()
            .map(crate::settings::ResumeTarget::event_fields),
    ) {
        Ok(log) => Some(log),
        Err(e) => {
            warn(format!("no event log: {e}"));
            None
        }
    };
    let store = match TaskStore::open(&settings.rlm_dir()) {
        Ok(store) => {
            let target = match &settings.resume {
                Some(t) => StoreTarget::Resumed {
                    run: RunId::from(t.run_id.as_str()),
                    retry_failed: t.retry_failed,
                    limits: t.limits,
                },
                None => StoreTarget::New(Box::new(new_run(settings, run_dir, started_at))),
            };
            let served: Vec<usize> = plan.pre.hits.iter().map(|(i, _)| *i).collect();
            match StoreReporter::start(store, target, units, &served, settings.provider.depth) {
                Ok(store) => Some(store),
                Err(e) => {
                    warn(format!("{e}; rlm status and rlm resume will not know this run"));
                    None
                }
            }
        }
        Err(e) => {
            warn(format!("{e}; rlm status and rlm resume will not know this run"));
            None
        }
    };
    let builder = ReportBuilder::new(
        report_context(settings, plan, run_dir, merged, warnings),
        units.iter().map(|u| (u.id.clone(), u.label.clone())),
    )
    .with_unit_files(
        units
            .iter()
            .map(|u| u.inputs.iter().map(|i| i.display.clone()).collect()),
    )
    .with_content_shares(units.iter().map(|u| (u.content_bytes, u.prompt_bytes)));
    let reporters = Reporters {
        progress: ProgressReporter::new(
            printer.clone(),
            plan.model.is_free(),
            units.iter().map(|u| u.id.clone()).collect(),
        ),
        log,
        builder,
        store,
    };
    // Realtime answers are journaled before their slot is handed back (see `pending`).
    let journal = match pending::Journal::open(&run_dir.dir) {
        Ok(journal) => Some(Arc::new(journal)),
        Err(e) => {
            tracing::debug!(error = %e, "no answer journal: answers are cached before their slot is freed");
            None
        }
    };
    let jobs = Arc::new(JobContext {
        journal,
        syncer: Arc::new(crate::fs_atomic::GroupSync::new(settings.exec.parallelism.width)),
        call: Arc::new(call),
        paid: paid_tx,
        cache: plan.cache.clone(),
        run_dir: run_dir.clone(),
        requests: plan.requests.clone(),
        trajectory,
        pending: plan.pending.clone(),
        read_cache: settings.exec.cache_mode.reads(),
        may_call: settings.exec.cache_mode != CacheMode::ReadOnly,
        claims: Arc::new(key_claim::KeyClaims::new(
            plan.cache.clone(),
            TaskStore::open(&settings.rlm_dir()).ok(),
            &run_dir.run_id,
            settings.exec.cache_mode.reads(),
            plan.requests.max_tokens,
        )),
    });
    let batch_api = match plan.delivery {
        Delivery::Realtime => None,
        // Batches are recorded in the store before anything waits for them: no store, no
        // batches (the run store reporter said why it could not open it).
        Delivery::BatchApi { .. } if reporters.store.is_none() => return Err(StoreRefusal::BatchApiWithoutStore.into()),
        delivery @ Delivery::BatchApi { .. } => Some(Box::new(BatchApiRun::start(
            settings,
            &plan.model,
            RunId::from(run_dir.run_id.as_str()),
            delivery,
            printer,
        )?)),
    };
    let dispatcher = Dispatcher::new(
        reporters,
        plan.model.clone(),
        settings.budget.max_cost,
        0.0,
        printer.clone(),
    )
    .with_earlier_spend(settings.resume.as_ref().map_or(0.0, |t| t.spent_usd))
    .with_limiter(limiter.clone())
    .with_deadline(settings.exec.deadline, &run_dir.run_id);
    // Budget and deadline count the whole run: a resume has what the earlier attempts left.
    let deadline = settings
        .exec
        .deadline
        .map(|d| started + settings.resume.as_ref().map_or(d, |t| t.remaining(d)));
    let mut exec = Execution::new(dispatcher, jobs, (events_rx, paid_rx), limiter, width, deadline);
    exec.batch_api = batch_api;
    Ok(exec)
}

/// The run as the task store records it.
pub(super) fn new_run(settings: &BatchSettings, run_dir: &RunDir, started_at: jiff::Timestamp) -> NewRun {
    let redactor = settings.redactor();
    let recorded = recorded_settings(settings);
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
        settings: recorded,
        started: Some(crate::store::Timestamp::from_millis(started_at.as_millisecond())),
    }
}

/// The settings as a run records them (in the task store and `settings.json`), with the
/// record of the options they were built from, for `rlm resume` and `rlm merge` to build
/// them again (without URL credentials; keys are never part of either).
pub(crate) fn recorded_settings(settings: &BatchSettings) -> serde_json::Value {
    let mut recorded = serde_json::to_value(settings).unwrap_or_default();
    if let Some(map) = recorded.as_object_mut() {
        map.insert(RunRecord::KEY.into(), settings.record.to_recorded());
    }
    recorded
}

/// What the report says that events do not.
pub(super) fn report_context(
    settings: &BatchSettings,
    plan: &Plan,
    run_dir: &RunDir,
    merged: Option<&Merged>,
    started: Vec<String>,
) -> ReportContext {
    ReportContext {
        run_id: run_dir.run_id.clone(),
        plan_id: plan.plan_id.to_string(),
        shard: settings.input.shard.map(|shard| crate::report::ShardRecord {
            shard,
            plan_units: plan.plan_units,
        }),
        merged_from: merged.map(|m| m.runs.clone()).unwrap_or_default(),
        pattern: settings.input.pattern.clone(),
        sub_prompt: settings.task.sub_prompt.clone(),
        model: plan.model.id.clone(),
        provider: settings.provider.kind.name().to_string(),
        aggregate: settings.task.aggregate.name().to_string(),
        max_parallel: settings.exec.parallelism.width,
        price_basis: plan.model.price_basis,
        price_tier: merged.map_or(plan.delivery.unit_tier(), |m| m.price_tier),
        estimated_cost_usd: merged.map_or(plan.estimate.usd, |m| m.estimated_cost_usd),
        files_matched: plan.manifest.matched(),
        skipped: plan.manifest.skipped.clone(),
        unreadable: plan.manifest.unreadable.clone(),
        warnings: plan.warnings.iter().cloned().chain(started).collect(),
        earlier_cost_usd: settings.resume.as_ref().map_or(0.0, |t| t.spent_usd),
        earlier_completed: settings
            .resume
            .as_ref()
            .map(|t| t.earlier_completed.clone())
            .unwrap_or_default(),
        model_caution: model_caution(settings, plan),
    }
}

//! `rlm batch`: plan → execute → aggregate → report.
//!
//! [`run`] reads as that flow, each stage a plain value the next one takes.
//! [`planning::plan`] resolves the inputs and the model, cuts the files into units, renders
//! each unit's request once for its key and size, looks in the cache and estimates the
//! cost ([`Plan`]); the dry run prints that plan. [`execute`] runs the misses through one
//! pool ([`execution::Execution`]) and returns the [`Outcomes`]: every file's answer as read
//! ([`answers::FileAnswer`], findings deduplicated across units), the failures and why
//! dispatching stopped. [`aggregate`] combines the answers and [`finish`] writes the
//! findings and the report, which is built from the events the reporters heard — they only
//! listen.
//!
//! `rlm merge` ([`run_merged`]) is the same flow with the execution stage replaced: the
//! units are answered by other runs of the plan ([`served`]).

mod aggregate_failure;
mod aggregate_stage;
mod answers;
mod batch_api_run;
mod conform;
mod dispatcher;
mod dry_run;
pub(crate) mod estimate;
mod execution;
mod findings_stage;
mod graph_inputs;
mod job;
mod keep;
pub mod key_claim;
pub mod lost_submission;
mod output;
mod pending;
mod planning;
mod prepass;
mod run_start;
mod served;
pub(crate) mod startup;
mod synthesize;
mod trajectory;
mod write;

use std::collections::HashSet;
use std::time::Instant;

use crate::aggregate::Processed;
use crate::error::{ExitStatus, LockHolder, RlmError};
use crate::exec::Event;
use crate::plan::Budget;
use crate::printer::Printer;
use crate::report::{RunEndReason, RunReport};
use crate::run_dir::RunDir;
use crate::settings::BatchSettings;
use crate::store::{RunId, RunStatus as StoreRunStatus};
use crate::unit_failure::{FailureKind, UnitFailure};

use aggregate_stage::{aggregate, Aggregated};
use answers::FileAnswer;
pub use batch_api_run::{cancel_each, refuse_batches_elsewhere, BatchApiRun, Heard, Host, Request, RunRecorder, Stage};
use dispatcher::StopReason;
use execution::Execution;
pub use execution::Pause;
pub(crate) use planning::{Plan, Planned};
pub(crate) use run_start::recorded_settings;
use run_start::{open_run_dir, start, Started};
pub(crate) use served::{Recorded, RecordedUnit};

/// Runs one batch and returns its exit status. An error is something that stopped the
/// run before any call was made (exit 2) or a refusal at the start; everything after the
/// first call is reported, and the exit code says whether money was spent.
pub async fn run(mut settings: BatchSettings, printer: Printer) -> Result<ExitStatus, RlmError> {
    let started = Instant::now();
    let started_at = jiff::Timestamp::now();
    let mut plan = match planning::plan(&mut settings, &printer).await? {
        Planned::Plan(plan) => plan,
        Planned::Nothing(manifest) => return Ok(nothing_to_do(&settings, &manifest, &printer)),
    };
    for warning in &plan.warnings {
        printer.warn(warning);
    }
    if !settings.exec.batch_api.cancel {
        // (`rlm cancel` starts nothing and spends nothing: its own lines say what it does.)
        if settings.output.answer_on_stdout {
            // `rlm query`: one file and one question, no batch to describe.
            printer.banner(&output::query_block(&settings, &plan));
        } else {
            printer.banner(&output::init_block(&settings, &plan));
        }
    }
    if settings.output.dry_run {
        dry_run::show(&printer, &settings, &plan);
        tracing::debug!(resident_mib = ?crate::memory::resident_mib(), "dry run shown");
        // The process ends here: freeing every file's text and every unit one by one (a
        // visible part of planning tens of thousands of files) would gain nothing.
        std::mem::forget(plan);
        return Ok(ExitStatus::Success);
    }
    if !settings.exec.batch_api.cancel {
        // (`rlm cancel` calls nothing.)
        findings_stage::check_sarif_path(&settings)?;
        plan.warnings
            .extend(estimate::confirm(&settings, &plan.estimate, &printer)?);
    }
    let trajectory = run_start::open_trajectory(&settings)?;
    let (run_dir, warnings) = open_run_dir(&settings, &plan, &printer)?;
    // Planning's scratch (every request rendered once to be measured) is free by now.
    crate::memory::release_free();
    let times = (started, started_at);
    let mut exec = start(
        &settings,
        &plan,
        &run_dir,
        &printer,
        times,
        Started {
            merged: None,
            warnings,
            trajectory,
        },
    )?;
    plan.manifest.let_go_of_files();
    let mut outcomes = execute(&settings, &plan, &mut exec).await;
    // What the dispatch held (a provider batch's bodies and maps) is free by now; the
    // aggregate is built next, from every answer.
    crate::memory::release_free();
    tracing::debug!(resident_mib = ?crate::memory::resident_mib(), "dispatch ended");
    let aggregated = aggregate(&settings, &plan, &run_dir, &mut outcomes, &mut exec).await;
    let answer = aggregated.answer.clone();
    let report = finish(&settings, &run_dir, &mut exec, &outcomes, aggregated, times, &printer);
    let cancel_end = exec.batch_api.as_ref().and_then(|b| b.cancel_end());
    let exit = match &cancel_end {
        // `rlm cancel`: done when the batches are canceled and what finished is kept; not
        // when a batch of the run may still run, and bill, unknown.
        Some(end) if end.unresolved => ExitStatus::Partial,
        Some(_) => ExitStatus::Success,
        None => report.exit_status(),
    };
    output::completion(&printer, &report, exit, settings.output.quiet, answer.as_deref());
    // As above: the plan is only memory, and the process ends.
    std::mem::forget(plan);
    if let Some(end) = cancel_end {
        printer.important(&end.line);
    }
    Ok(exit)
}

/// `rlm cancel` while another rlm (`holder`) waits for the run's batches: the cancel is
/// asked of the provider; the waiting rlm collects.
pub async fn cancel_at_provider(
    settings: &BatchSettings,
    run: &str,
    batches: &[String],
    holder: LockHolder,
    printer: &Printer,
) -> Result<ExitStatus, RlmError> {
    batch_api_run::cancel_at_provider(settings, &RunId::from(run), batches, holder, printer).await?;
    Ok(ExitStatus::Success)
}

/// Plans a run without starting it (`rlm merge` plans the whole plan its runs split).
pub(crate) async fn plan(settings: &mut BatchSettings, printer: &Printer) -> Result<Planned, RlmError> {
    planning::plan(settings, printer).await
}

/// What `rlm merge` brings to a run: the units its runs answered, and those runs.
pub(crate) struct Merged {
    pub recorded: Recorded,
    /// The merged runs' ids, as their reports name them.
    pub runs: Vec<String>,
    /// What the merged runs estimated, together.
    pub estimated_cost_usd: f64,
    /// The tier the merged runs' units were billed at (`mixed` when they differ).
    pub price_tier: crate::provider::catalog::PriceTier,
    /// The provider batches the merged runs submitted, in their order.
    pub batches: Vec<String>,
}

/// `rlm merge`: `plan` (the whole plan) run with its units answered by the merged runs,
/// then aggregated, its findings collected and reported, as one run over the whole plan.
pub(crate) async fn run_merged(
    settings: &BatchSettings,
    plan: &Plan,
    merged: &Merged,
    printer: &Printer,
) -> Result<ExitStatus, RlmError> {
    let times = (Instant::now(), jiff::Timestamp::now());
    let trajectory = run_start::open_trajectory(settings)?;
    let (run_dir, warnings) = open_run_dir(settings, plan, printer)?;
    let startup = Started {
        merged: Some(merged),
        warnings,
        trajectory,
    };
    let mut exec = start(settings, plan, &run_dir, printer, times, startup)?;
    // Its report lists the batches its runs' units went through, as theirs did.
    exec.dispatcher
        .reporters
        .builder
        .set_earlier_batches(merged.batches.clone());
    exec.dispatcher.emit(Event::RunStarted {
        units: plan.units.len(),
        cached: 0,
        to_call: 0,
        width: settings.exec.parallelism.width,
        model: plan.model.id.clone(),
        provider: settings.provider.kind.name().to_string(),
    });
    let budget = Budget::of(&plan.model, settings.provider.max_tokens);
    served::serve(&mut exec.dispatcher, &run_dir, plan, &merged.recorded, budget);
    let mut outcomes = Outcomes::of(plan, &mut exec);
    let aggregated = aggregate(settings, plan, &run_dir, &mut outcomes, &mut exec).await;
    let answer = aggregated.answer.clone();
    let report = finish(settings, &run_dir, &mut exec, &outcomes, aggregated, times, printer);
    let exit = report.exit_status();
    output::completion(printer, &report, exit, settings.output.quiet, answer.as_deref());
    Ok(exit)
}

/// The map phase: cache hits served, misses called, batch members retried alone.
async fn execute(settings: &BatchSettings, plan: &Plan, exec: &mut Execution) -> Outcomes {
    let width = settings.exec.parallelism.width;
    exec.dispatcher.emit(Event::RunStarted {
        units: plan.units.len(),
        cached: plan.pre.hits.len(),
        to_call: plan.pre.misses.len(),
        width,
        model: plan.model.id.clone(),
        provider: settings.provider.kind.name().to_string(),
    });
    let run_dir = exec.jobs.run_dir.clone();
    write::cache_hits(
        &mut exec.dispatcher,
        &run_dir,
        &plan.units,
        &plan.requests,
        &plan.cache,
        plan.pre.hits.clone(),
        plan.pre.blocked.clone(),
    );
    let skip = settings.resume.as_ref().map(|t| &t.skip);
    let budget = Budget::of(&plan.model, settings.provider.max_tokens);
    match exec.batch_api.take() {
        // `--batch-api`: through the provider's batch API (see `batch_api_run`).
        Some(mut batch_api) => {
            batch_api
                .run_units(exec, &plan.units, &plan.pre.misses, skip, budget)
                .await;
            exec.batch_api = Some(batch_api);
        }
        None => exec.run_units(&plan.units, &plan.pre.misses, skip, budget).await,
    }
    Outcomes::of(plan, exec)
}

/// What the map phase came to.
pub(crate) struct Outcomes {
    /// Every file's answer, in plan order (a batch's members in their order, then members
    /// retried alone), each finding once across them (see [`crate::answer::dedupe`]).
    pub answers: Vec<FileAnswer>,
    /// The files that could not be read and the units that failed.
    pub failures: Vec<UnitFailure>,
    /// Why dispatching stopped early, if it did.
    pub stop: Option<StopReason>,
}

impl Outcomes {
    /// The answers the dispatcher kept, taken in plan order, with the failures.
    fn of(plan: &Plan, exec: &mut Execution) -> Outcomes {
        let mut kept = std::mem::take(&mut exec.dispatcher.answers);
        let mut answers: Vec<FileAnswer> = plan
            .units
            .iter()
            .filter_map(|u| kept.remove(&u.id))
            .flat_map(|a| a.files)
            .collect();
        let mut read: Vec<&mut crate::answer::Answer> = answers.iter_mut().map(|f| &mut f.answer).collect();
        crate::answer::dedupe(&mut read);
        let failures = plan
            .manifest
            .unreadable
            .iter()
            .map(|s| UnitFailure {
                unit: s.path.clone(),
                kind: FailureKind::Unreadable,
                reason: s.reason.clone(),
            })
            .chain(exec.dispatcher.failures())
            .collect();
        Outcomes {
            answers,
            failures,
            stop: exec.dispatcher.stop.clone(),
        }
    }

    /// How many files and units the answers come from.
    fn processed(&self) -> Processed {
        let files: HashSet<&str> = self.answers.iter().map(|a| a.path.as_ref()).collect();
        let units: HashSet<&crate::unit::UnitId> = self.answers.iter().map(|a| &a.unit).collect();
        Processed {
            files: files.len(),
            units: units.len(),
        }
    }
}

/// When the answers come from the bundled local model (by the name the server gave it or
/// `--model` named), the sentence that says they come from a toy (issue 25).
pub(super) fn model_caution(settings: &BatchSettings, plan: &Plan) -> Option<String> {
    if settings.provider.kind == crate::provider::ProviderKind::Command {
        return None;
    }
    crate::provider::bundled_model::BundledModel::recognize(&plan.model.id).map(|m| m.caution())
}

/// The findings, the report and the store's last word on the run.
fn finish(
    settings: &BatchSettings,
    run_dir: &RunDir,
    exec: &mut Execution,
    outcomes: &Outcomes,
    aggregated: Aggregated,
    (started, started_at): (Instant, jiff::Timestamp),
    printer: &Printer,
) -> RunReport {
    exec.dispatcher.reporters.progress.finish();
    if let Some(journal) = &exec.jobs.journal {
        journal.retire();
    }
    let mut errors = aggregated.errors;
    if exec.deadline_passed() && !matches!(exec.dispatcher.stop, Some(StopReason::Deadline(_))) {
        // Passed outside the pool (waiting for a batch): said here, as the pool's stop says it.
        errors.insert(0, exec.dispatcher.deadline_reason(0));
    }
    let toy = settings.provider.kind != crate::provider::ProviderKind::Command
        && crate::provider::bundled_model::BundledModel::recognize(&exec.jobs.requests.model).is_some();
    let collected = findings_stage::collect(settings, &outcomes.answers, toy);
    let findings = findings_stage::write(settings, run_dir, &collected, printer, &mut errors);
    let reason = end_reason(exec, outcomes);
    let end = write::ReportEnd {
        paths: aggregated.paths,
        started,
        started_at,
        reason,
        findings,
        errors,
    };
    let report = write::report(exec, run_dir, settings, end, printer);
    tracing::debug!(resident_mib = ?crate::memory::resident_mib(), "report written");
    findings_stage::publish(settings, &collected, &report.to_markdown(), printer);
    if let Some(store) = &mut exec.dispatcher.reporters.store {
        if let Some(e) = store.finish(store_status(&report)) {
            printer.warn(&format!("the task store could not record all of this run: {e}"));
        }
    }
    report
}

/// Why dispatching ended, as the status sees it.
fn end_reason(exec: &Execution, outcomes: &Outcomes) -> RunEndReason {
    if exec.deadline_passed() {
        RunEndReason::Deadline
    } else if exec.interrupted {
        RunEndReason::Interrupted
    } else {
        // The map phase's reason, or one the aggregation calls met.
        match outcomes.stop.as_ref().or(exec.dispatcher.stop.as_ref()) {
            Some(StopReason::Budget(_)) => RunEndReason::Budget,
            Some(StopReason::Fatal(_)) => RunEndReason::Fatal,
            Some(StopReason::Deadline(_)) => RunEndReason::Deadline,
            Some(StopReason::WriteFailed(_)) | None => RunEndReason::Completed,
        }
    }
}

/// The end of a run whose input list selected no file: said plainly, exit 0, and with
/// `--json` one document that says so (plus an empty SARIF log at `--sarif`).
fn nothing_to_do(settings: &BatchSettings, manifest: &crate::input::Manifest, printer: &Printer) -> ExitStatus {
    let sarif_error = findings_stage::write_empty(settings, printer);
    // The run's status words (report.json, the store), and its exit: a SARIF log that could
    // not be written is an error of the run, as in any run.
    let (status, exit) = match &sarif_error {
        None => ("SUCCESS", ExitStatus::Success),
        Some(_) => ("PARTIAL", ExitStatus::Partial),
    };
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
            "schema_version": crate::report::REPORT_SCHEMA_VERSION,
            "status": status,
            "exit_code": exit.code(),
            "files_matched": manifest.matched(),
            "succeeded": 0,
            "skipped": manifest.skipped,
            "message": message,
            "error": sarif_error,
            "findings": {"error": 0, "warning": 0, "note": 0},
        }));
    } else {
        printer.banner(&format!("rlm: {message}"));
    }
    exit
}

/// The store's status for a finished run: the report's, in the store's words.
fn store_status(report: &RunReport) -> StoreRunStatus {
    use crate::report::RunStatus as R;
    match report.status {
        R::Success => StoreRunStatus::Success,
        R::Partial => StoreRunStatus::Partial,
        R::Failed => StoreRunStatus::Failed,
        R::Interrupted => StoreRunStatus::Interrupted,
        R::BudgetExceeded => StoreRunStatus::BudgetExceeded,
        R::DeadlineExceeded => StoreRunStatus::DeadlineExceeded,
    }
}

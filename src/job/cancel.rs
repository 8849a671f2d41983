//! `rlm cancel JOB`: the job's provider batches not collected yet are canceled at the
//! provider, each cancel recorded in the run store ([`crate::batch::cancel_each`], as for a
//! batch run). The job collects what had finished: a running job at its next poll, and it
//! then stops without sending anything in real time; a stopped job at `rlm job resume`,
//! which sends again what the batches did not run. Nothing is paid twice.

use crate::error::{ExitStatus, RlmError, SystemFailure};
use crate::printer::{ColorChoice, Printer};
use crate::provider::batch_api::{batch_api, BatchApi, BatchTimeouts};
use crate::settings::Environment;
use crate::store::{BatchSubmission, RunId, TaskStore};

use super::job_dir::JobDir;
use super::settings::{CallFlags, RunFlags};

/// What `rlm cancel` of a job is given (see [`crate::runs::Cancel::Job`]).
pub struct CancelJob {
    pub job: String,
    pub batches: Vec<BatchSubmission>,
    /// `--base-url`, when the job's held credentials (never remembered).
    pub base_url: Option<String>,
    pub quiet: bool,
    /// One JSON document on stdout: the job, and each batch with what became of it.
    pub json: bool,
}

/// Cancels the job's batches; one line says what was done and what collects them.
pub fn cancel(request: CancelJob, color: ColorChoice, env: &Environment) -> ExitStatus {
    let printer = Printer::new(
        crate::printer::PrinterMode {
            quiet: request.quiet,
            json: request.json,
            ..crate::printer::PrinterMode::default()
        },
        crate::secret::Redactor::default(),
    );
    // A runtime that cannot start is the system's failure, said and exited as everywhere
    // else (2, and an error document under `--json`).
    let outcome = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime.block_on(cancel_batches(&request, color, env, &printer)),
        Err(e) => Err(RlmError::from(SystemFailure::Runtime(e))),
    };
    match outcome {
        Ok(status) => status,
        Err(e) => {
            let (message, status) = (e.to_string(), e.exit_status());
            printer.error(&message);
            if request.json {
                let mut doc = crate::error::error_document(e.kind(), &message);
                doc["job_id"] = serde_json::json!(request.job);
                printer.json(&doc);
            }
            status
        }
    }
}

async fn cancel_batches(
    request: &CancelJob,
    color: ColorChoice,
    env: &Environment,
    printer: &Printer,
) -> Result<ExitStatus, RlmError> {
    let dir = JobDir::open(&env.cwd, Some(&request.job))?;
    let record = dir.read_record()?;
    let given = CallFlags {
        base_url: request.base_url.clone(),
        ..CallFlags::default()
    };
    let flags = RunFlags {
        yes: true,
        quiet: request.quiet,
        ..RunFlags::default()
    };
    let settings = super::resolve(record.remembered_settings(), &given, flags, color, env)?;
    // One client for each provider the job's phases call, found by the server each batch
    // was sent to.
    let mut clients: Vec<Box<dyn BatchApi>> = Vec::new();
    for phase in &record.definition.phases {
        let provider = settings.phase_provider(phase)?;
        let model = provider.model.clone().unwrap_or_default();
        if let Ok(api) = batch_api(&provider.http_config(&model), None, BatchTimeouts::default()) {
            if !clients.iter().any(|c| c.server() == api.server()) {
                clients.push(api);
            }
        }
    }
    let run = RunId::from(request.job.as_str());
    let mut store = TaskStore::open(&settings.rlm_dir())?;
    let (mut asked, mut unreached) = (0, Vec::new());
    // Each batch and what became of it, for `--json`.
    let mut outcomes = Vec::new();
    for batch in &request.batches {
        let outcome = if batch.cancel_requested_at.is_some() {
            // An earlier cancel asked already.
            asked += 1;
            "canceled before"
        } else if let Some(api) = clients.iter().find(|c| c.server() == batch.server) {
            let n = crate::batch::cancel_each(
                api.as_ref(),
                &mut store,
                &run,
                std::slice::from_ref(&batch.batch_id),
                printer,
            )
            .await?;
            asked += n;
            if n == 1 {
                "canceled"
            } else {
                "already ended"
            }
        } else {
            unreached.push(batch);
            "not reached"
        };
        outcomes.push(serde_json::json!({
            "batch_id": batch.batch_id,
            "phase": batch.phase,
            "server": batch.server,
            "outcome": outcome,
        }));
    }
    let job = &request.job;
    let n = request.batches.len();
    printer.banner(&format!(
        "rlm: job {job}: {asked} of its {n} provider {} canceled; the job collects what had finished (a running job at \
         its next poll, and it stops; else `rlm job resume {job}`, which sends the rest again: nothing is paid twice)",
        if n == 1 { "batch" } else { "batches" },
    ));
    let status = if unreached.is_empty() {
        ExitStatus::Success
    } else {
        ExitStatus::Partial
    };
    if request.json {
        printer.json(&serde_json::json!({
            "job_id": job,
            "canceled": asked,
            "batches": outcomes,
            "exit_code": status.code(),
        }));
    }
    if unreached.is_empty() {
        return Ok(status);
    }
    for batch in unreached {
        printer.warn(&format!(
            "batch {} was sent to {}, which the job's settings no longer point at: it was not canceled and may still \
             run and bill (`rlm cancel {job} --base-url URL` names the server)",
            batch.batch_id, batch.server
        ));
    }
    Ok(status)
}

//! The coordinator: runs a job's phases in order from the first one not done, each to its
//! end or until the job stops (interrupt, deadline, budget, a fatal refusal, a failed
//! write) or pauses (`--pause-after`), and settles the job's status and exit code.

use serde_json::{json, Value};

use super::definition::PhaseKind;
use super::job_dir::JobDir;
use super::progress::Progress;
use super::settings::JobSettings;
use super::state::{JobRecord, JobStatus, PhaseStatus};
use super::store_link::StoreLink;
use super::{map, reduce, report, review};
use crate::cache::Cache;
use crate::error::{ExitStatus, RlmError};
use crate::exec::Interrupt;
use crate::printer::Printer;
use crate::prompt::Delimiter;
use crate::provider::ModelInfo;
use crate::schema::OutputSchema;
use crate::store::Timestamp;

/// Why a job stopped dispatching.
#[derive(Debug, Clone)]
pub enum Stop {
    Interrupted,
    Deadline,
    Budget(String),
    /// The provider refused the job.
    Fatal(String),
    /// A paid answer could not be written (it is cached).
    WriteError(String),
    /// A provider batch was canceled while the job waited for it: why.
    Canceled(String),
}

/// A phase's prompt and schema as resolved into the job's prompts/.
#[derive(Debug, Clone)]
pub struct ResolvedPhase {
    pub prompt: Option<String>,
    pub schema: Option<OutputSchema>,
}

/// One invocation of a job: everything the phases share.
pub struct JobRun {
    pub settings: JobSettings,
    pub dir: JobDir,
    pub record: JobRecord,
    pub printer: Printer,
    pub progress: Progress,
    pub store: StoreLink,
    pub interrupt: Interrupt,
    pub cache: Cache,
    pub delimiter: Delimiter,
    /// Each phase's model.
    pub models: Vec<ModelInfo>,
    pub phases: Vec<ResolvedPhase>,
    /// The context document every worker sees.
    pub context: Option<String>,
    pub stop: Option<Stop>,
    /// The endpoints (as shown) that answered an earlier phase: a later phase's calls that
    /// come back with nothing there mean the server stopped answering, not that it never did.
    pub answered_endpoints: std::collections::HashSet<String>,
}

impl JobRun {
    /// `Phase 2/4: Cluster & de-duplicate`.
    pub fn phase_label(&self, index: usize) -> String {
        let phase = &self.record.definition.phases[index];
        format!(
            "Phase {}/{}: {}",
            index + 1,
            self.record.definition.phases.len(),
            phase.title.as_deref().unwrap_or(&phase.name)
        )
    }

    /// The ingested items.
    pub fn items(&self) -> Result<Vec<Value>, RlmError> {
        super::job_dir::read_json(&self.dir.data(&self.record.definition.items))
    }

    /// Runs the phases from the first not done, then settles the job: its status in
    /// `job.json` and in the run store, `job:ended`, the summary (one JSON document with
    /// `--json`), and the exit code. A phase that ends in an error is closed like any
    /// other end (its status `failed`, the job `FAILED`), never left `running`.
    pub async fn execute(mut self) -> ExitStatus {
        let spent_before = self.spend();
        let outcome = self.run_phases().await;
        // A phase that stopped early leaves its bar: clear it before the summary.
        self.printer.finish_bar();
        let (paused, failure) = match outcome {
            Ok(paused) => (paused, None),
            Err((index, error)) => {
                if let Some(i) = index {
                    self.phase_failed(i, &error.to_string());
                }
                (false, Some(error))
            }
        };
        self.record.status = match &failure {
            Some(_) => JobStatus::Failed,
            None => self.settle(paused),
        };
        self.record.stopped = match &failure {
            Some(e) => Some(e.to_string()),
            None => self.stop_reason(),
        };
        self.finish_record();
        self.store.end(self.record.status);
        self.dir
            .event(&json!({"event": "job:ended", "status": self.record.status.name(),
            "cost_usd": self.record.cost_usd()}));
        let paid = self.spend() > spent_before;
        let exit = match &failure {
            // Exit 2 says nothing was sent: an error after paying is a failure (3).
            Some(e) if paid && e.exit_status() == ExitStatus::Usage => ExitStatus::Failed,
            Some(e) => e.exit_status(),
            None => exit_status(self.record.status),
        };
        self.summarize(failure.as_ref(), exit);
        exit
    }

    /// Calls made and money spent so far, over every invocation.
    fn spend(&self) -> (u64, u64) {
        let calls = self.record.earlier.calls + self.record.phases.iter().map(|p| p.calls).sum::<u64>();
        let cost = self.record.cost_usd();
        // Compared, never shown: micro-dollars are enough to tell "something was paid".
        (calls, (cost * 1e6).round() as u64)
    }

    /// The phases, in order, until the job is done, stops or pauses; `Ok(true)` when it
    /// paused. An error names the phase it ended, if one was running.
    async fn run_phases(&mut self) -> Result<bool, (Option<usize>, RlmError)> {
        // Checked before the job was created (`preflight`): it names a phase.
        let pause_after = match &self.settings.pause_after {
            Some(p) => Some(self.record.definition.phase_index(p).map_err(|e| (None, e))?),
            None => None,
        };
        self.record.status = JobStatus::Running;
        self.record.stopped = None;
        self.dir.write_record(&mut self.record).map_err(|e| (None, e))?;
        while let Some(index) = self.record.next_phase() {
            let started = std::time::Instant::now();
            let name = self.record.phases[index].name.clone();
            {
                let state = &mut self.record.phases[index];
                state.status = Some(PhaseStatus::Running);
                state.started_at.get_or_insert_with(|| Timestamp::now().to_rfc3339());
            }
            self.dir.write_record(&mut self.record).map_err(|e| (Some(index), e))?;
            self.dir
                .event(&json!({"event": "phase:started", "phase": name, "index": index + 1}));
            self.progress.phase_begun(&self.phase_label(index));
            let kind = self.record.definition.phases[index].kind;
            let result = match kind {
                PhaseKind::Map => map::run(self, index).await,
                PhaseKind::Reduce => reduce::run(self, index).await,
                PhaseKind::Review => review::run(self, index).await,
                PhaseKind::Report => report::run(self, index).await,
            };
            self.record.phases[index].elapsed_ms += started.elapsed().as_millis() as u64;
            result.map_err(|e| (Some(index), e))?;
            match &self.stop {
                Some(Stop::Fatal(why) | Stop::WriteError(why)) => {
                    // The job cannot go on: the phase failed (resume takes it up again).
                    let why = why.clone();
                    self.phase_failed(index, &why);
                    return Ok(false);
                }
                Some(_) => {
                    // Interrupted, the deadline, the budget: the phase is not done, and
                    // `resume` goes on with it.
                    self.record.phases[index].status = Some(PhaseStatus::Running);
                    return Ok(false);
                }
                None => {}
            }
            let state = &mut self.record.phases[index];
            if !matches!(state.status, Some(PhaseStatus::Failed)) {
                // A reduce's failed shards fell back to the programmatic ranking: only items
                // left unprocessed make a phase partial.
                state.status = Some(if state.unprocessed.is_empty() {
                    PhaseStatus::Completed
                } else {
                    PhaseStatus::Partial
                });
            }
            state.finished_at = Some(Timestamp::now().to_rfc3339());
            let state = state.clone();
            self.progress.phase_finished(&state);
            self.dir.event(
                &json!({"event": "phase:completed", "phase": name, "status": state.status,
                "batches": state.batches_total, "failed": state.batches_failed, "cost_usd": state.cost_usd}),
            );
            self.dir.write_record(&mut self.record).map_err(|e| (Some(index), e))?;
            if state.status == Some(PhaseStatus::Failed) {
                return Ok(false);
            }
            if pause_after == Some(index) && self.record.next_phase().is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Phase `index` ended without its results: `failed`, with `phase:failed` saying why.
    fn phase_failed(&mut self, index: usize, why: &str) {
        let state = &mut self.record.phases[index];
        state.status = Some(PhaseStatus::Failed);
        state.finished_at = Some(Timestamp::now().to_rfc3339());
        let name = state.name.clone();
        self.dir
            .event(&json!({"event": "phase:failed", "phase": name, "reason": why}));
    }

    /// The job's status when this invocation ends.
    fn settle(&self, paused: bool) -> JobStatus {
        match &self.stop {
            Some(Stop::Interrupted | Stop::Canceled(_)) => return JobStatus::Interrupted,
            Some(Stop::Deadline) => return JobStatus::DeadlineExceeded,
            Some(Stop::Budget(_)) => return JobStatus::BudgetExceeded,
            Some(Stop::Fatal(_) | Stop::WriteError(_)) => return JobStatus::Failed,
            None => {}
        }
        if self.record.phases.iter().any(|p| p.status == Some(PhaseStatus::Failed)) {
            return JobStatus::Failed;
        }
        if paused {
            return JobStatus::Paused;
        }
        let answered: usize = self.record.phases.iter().map(|p| p.batches_done).sum();
        let unprocessed = self.record.unprocessed();
        if unprocessed > 0 && answered == 0 {
            JobStatus::Failed
        } else if unprocessed > 0 {
            JobStatus::Partial
        } else {
            JobStatus::Success
        }
    }

    fn stop_reason(&self) -> Option<String> {
        self.stop.as_ref().map(|s| match s {
            Stop::Interrupted => "interrupted".to_string(),
            Stop::Deadline => "the --deadline passed".to_string(),
            Stop::Budget(why) | Stop::Fatal(why) | Stop::WriteError(why) | Stop::Canceled(why) => why.clone(),
        })
    }

    fn finish_record(&mut self) {
        if let Err(e) = self.dir.write_record(&mut self.record) {
            self.printer.warn(&format!("cannot update job.json: {e}"));
        }
    }

    /// The end of the invocation: one JSON document, or a few lines.
    fn summarize(&self, failure: Option<&RlmError>, exit: ExitStatus) {
        let r = &self.record;
        if let Some(e) = failure {
            self.printer.error(&e.to_string());
        }
        if self.settings.output.json {
            let mut doc = summary_json(&self.dir, r);
            doc["exit_code"] = json!(exit.code());
            if let Some(e) = failure {
                doc["error"] = json!({"kind": e.kind(), "message": e.to_string()});
            }
            self.printer.json(&doc);
            return;
        }
        if let (Some(why), None) = (&r.stopped, failure) {
            match self.stop {
                Some(Stop::Fatal(_) | Stop::WriteError(_)) => self.printer.error(why),
                _ => self.printer.warn(&format!("the job stopped: {why}")),
            }
        }
        let (tin, tout) = r.tokens();
        let mut lines = vec![format!(
            "Job {} {}: {} items, {} of {} phases done, {} tokens in / {} out, {}",
            r.job_id,
            r.status.name(),
            r.items,
            r.phases.iter().filter(|p| p.status().is_done()).count(),
            r.phases.len(),
            tin,
            tout,
            crate::money::usd(r.cost_usd())
        )];
        if r.unprocessed() > 0 {
            lines.push(format!(
                "{} unprocessed (their batch or fetch failed): rlm job rerun {} --phase PHASE takes only them",
                crate::printer::plural(r.unprocessed(), "item"),
                r.job_id
            ));
        }
        match r.status {
            JobStatus::Paused => lines.push(format!(
                "Paused: look at {}, then rlm job resume {}",
                self.dir.root.join("data").display(),
                r.job_id
            )),
            s if s.is_unfinished() => lines.push(format!("Go on with: rlm job resume {}", r.job_id)),
            _ => {}
        }
        if self.dir.report_md().exists() {
            lines.push(format!("Report: {}", self.dir.report_md().display()));
        }
        self.printer.data(&lines.join("\n"));
    }
}

/// The exit code of a job's status.
pub fn exit_status(status: JobStatus) -> ExitStatus {
    match status {
        JobStatus::Success | JobStatus::Paused => ExitStatus::Success,
        JobStatus::Partial | JobStatus::BudgetExceeded => ExitStatus::Partial,
        JobStatus::Failed => ExitStatus::Failed,
        JobStatus::Interrupted | JobStatus::DeadlineExceeded | JobStatus::Running => ExitStatus::Interrupted,
    }
}

/// The `--json` document of a job: at least `job_id`, `dir` and `status`.
pub fn summary_json(dir: &JobDir, r: &JobRecord) -> Value {
    let (tin, tout) = r.tokens();
    json!({
        "job_id": r.job_id,
        "name": r.name,
        "kind": r.kind,
        "dir": dir.root.display().to_string(),
        "status": r.status.name(),
        "stopped": r.stopped,
        "created_at": r.created_at,
        "updated_at": r.updated_at,
        "items": r.items,
        "unprocessed": r.unprocessed(),
        "tokens_in": tin,
        "tokens_out": tout,
        "cost_usd": r.cost_usd(),
        "calls": r.calls(),
        // What phases spent before a rerun reset them: the phases show their latest run.
        "earlier": r.earlier,
        "phases": phases_json(r),
        "report": dir.report_md().exists().then(|| dir.report_md().display().to_string()),
    })
}

/// Each phase's state, with `pending` for a phase not yet run (as `rlm job status` says),
/// not the `null` job.json holds for it.
fn phases_json(r: &JobRecord) -> Vec<Value> {
    r.phases
        .iter()
        .map(|p| {
            let mut v = serde_json::to_value(p).unwrap_or_else(|_| json!({"name": p.name}));
            v["status"] = json!(p.status());
            v
        })
        .collect()
}

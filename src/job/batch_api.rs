//! `rlm job --batch-api`: a map phase's worker calls through the provider's batch API, at
//! half the price. Each batch of items is one request of a provider batch.
//!
//! The phase runs on the one batch-API stage every path uses ([`BatchApiRun`]): the same
//! claims, intents, submissions, polls, collects, follow-up batches and `--max-cost` bound
//! as `rlm batch --batch-api`, recorded in the run store under the job's id (the job is a
//! run of kind `job` there). This file is the job's side of it ([`JobHost`]): what a
//! request is (a batch of items, rendered by [`WorkerRequest::completion_request`]), how a
//! result is kept (checked like a realtime worker's answer — the schema, every id once —
//! then cached, and written as the batch's output file by the dispatcher), and how the job
//! hears it (its stop, its progress lines). So
//! - a crash, Ctrl-C or `--deadline` leaves the batch running at the provider, and `rlm
//!   job resume` polls it again, never submitting those requests twice;
//! - another rlm that needs one of its answers meanwhile (a second job of the same file, a
//!   batch run, realtime or batch) waits for it instead of paying again, and when this
//!   job's rlm is gone, whoever needs its answers collects its batch;
//! - an answer the check rejects is paid, counted, and asked again by the realtime
//!   workers with the errors appended, under the phase's `retries`; a cached answer is
//!   served by them too;
//! - a request the stage sends in real time after its provider batch sends (a resume with
//!   `--batch-api off` collecting a batch whose request expired) has what those sends left
//!   of the fault retries, as a `rlm batch` unit's realtime fallback does.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use tokio::task::{JoinError, JoinSet};
use tokio::time::Instant;

use super::batches::{BatchDone, BatchJob};
use super::job_dir::read_json_if_whole;
use super::runner::Stop;
use super::worker::{store, PhaseReply, PriorAnswer, WorkerContext, WorkerEnd, WorkerOutcome, WorkerRequest};
use crate::batch::{BatchApiRun, Heard, Host, Pause, Request, Stage};
use crate::cache::{Cache, CacheEntry};
use crate::error::{FlagError, RlmError, StoreFailure};
use crate::exec::{Event, Interrupt, ReplyCheck};
use crate::printer::Printer;
use crate::provider::batch_api::{batch_api, custom_id_for, unit_part, BatchError, BatchItem, BatchTimeouts, Reply};
use crate::provider::catalog::PriceTier;
use crate::settings::{BatchApiSettings, ProviderSettings};
use crate::store::{RunId, TaskStore};
use crate::unit::UnitId;

/// What the phase's batch API needs besides its jobs.
pub struct Phase<'a> {
    pub provider: &'a ProviderSettings,
    pub model: &'a str,
    pub settings: &'a BatchApiSettings,
    /// The run store's directory (`.aiwg/rlm`).
    pub rlm_dir: PathBuf,
    /// The phase as the store records its batches: its name, and a rerun's generation
    /// (`classify~2`).
    pub tag: String,
    /// `batches/{phase}/provider-batches[~N].json`, where an older rlm recorded the
    /// phase's batches: still collected, never written.
    pub legacy_record: PathBuf,
    /// Send what is not sent yet (`--batch-api` on); else only collect what was sent.
    pub submit: bool,
    /// The job's id: its run in the store.
    pub run: &'a str,
    /// What `--max-cost` leaves of the job's budget (`None` without one).
    pub budget_left: Option<f64>,
    pub printer: &'a Printer,
}

/// What the batch API did for a phase: the batches it answered (for the dispatcher to
/// count), the rest for the realtime workers, and whether the job must stop now (and why,
/// when not for Ctrl-C or the deadline: the provider batches keep running).
pub struct Collected {
    pub answered: Vec<BatchDone>,
    pub rest: Vec<BatchJob>,
    pub stopped: bool,
    /// Why the job stops here, resumable: a budget that cannot hold another batch, a
    /// batch canceled while the job waited, results that cannot be read now, requests
    /// held because their submission's batch cannot be told yet, a refusal.
    pub stop: Option<Stop>,
}

/// How an older rlm recorded a phase's batches (`provider-batches.json`).
#[derive(Debug, Default, Deserialize)]
struct LegacyRecord {
    #[serde(default)]
    batches: Vec<LegacyBatch>,
}

#[derive(Debug, Deserialize)]
struct LegacyBatch {
    id: String,
    custom_ids: Vec<String>,
}

/// Whether the phase has provider batches or submissions that an earlier attempt sent and
/// did not collect: they are collected even with `--batch-api` off (they are paid for).
pub fn sent_before(phase: &Phase<'_>) -> bool {
    if phase.legacy_record.is_file() {
        return true;
    }
    let Ok(store) = TaskStore::open(&phase.rlm_dir) else {
        return false;
    };
    let run = RunId::from(phase.run);
    let batches = store.batch_submissions(&run).unwrap_or_default();
    let intents = store.batch_intents(&run).unwrap_or_default();
    batches.iter().any(|b| b.phase == phase.tag && b.collected_at.is_none())
        || intents.iter().any(|i| i.phase == phase.tag)
}

/// Sends `jobs` that miss the cache through the batch API (or finds the batches an earlier
/// attempt sent), waits for them and collects their answers, on the one batch-API stage.
pub async fn collect(
    phase: Phase<'_>,
    workers: &Arc<WorkerContext>,
    mut jobs: Vec<BatchJob>,
    interrupt: &mut Interrupt,
) -> Result<Collected, RlmError> {
    let api = batch_api(&phase.provider.http_config(phase.model), None, BatchTimeouts::default())
        .map_err(FlagError::invalid("--batch-api"))?;
    let store = TaskStore::open(&phase.rlm_dir).map_err(StoreFailure::BatchApiUnrecorded)?;
    let resume = format!("rlm job resume {}", phase.run);
    let mut stage = BatchApiRun::open(
        api,
        store,
        RunId::from(phase.run),
        phase.settings,
        phase.printer,
        (resume.clone(), Some(&phase.tag)),
    )?
    .with_retries(workers.call.policy.retries);
    if !phase.submit {
        stage = stage.collect_only();
    }
    if let Some(legacy) = read_json_if_whole::<LegacyRecord>(&phase.legacy_record) {
        let by_part: HashMap<String, &UnitId> = jobs
            .iter()
            .map(|j| (custom_id_for(j.request.unit.as_str()), &j.request.unit))
            .collect();
        for batch in legacy.batches {
            let requests = batch
                .custom_ids
                .into_iter()
                .filter_map(|c| {
                    let unit = by_part.get(unit_part(&c))?.to_string();
                    Some((c, unit))
                })
                .collect();
            stage.collect_also(batch.id, &phase.tag, requests);
        }
    }
    let mut host = JobHost {
        workers: workers.clone(),
        printer: phase.printer,
        interrupt,
        started: Instant::now(),
        budget: phase.budget_left,
        spent: 0.0,
        signal: false,
        stop: None,
        not_run: None,
        no_batch_api: None,
        resume: resume.clone(),
        answered: Vec::new(),
        realtime: HashSet::new(),
        priors: HashMap::new(),
        fault_retries: HashMap::new(),
    };
    // Boxed: the stage's wait and reconcile make a large future, run once a phase.
    Box::pin(stage.run_requests(&mut host, jobs.iter().collect(), &phase.tag)).await;
    let JobHost {
        mut answered,
        realtime,
        mut priors,
        mut fault_retries,
        signal,
        stop,
        not_run,
        no_batch_api,
        started,
        ..
    } = host;
    if let Some(message) = no_batch_api {
        return Err(RlmError::Usage(message));
    }
    let rest = if signal || stop.is_some() || not_run.is_some() {
        // The job stops here: nothing is called in real time. A rejected answer was paid
        // for all the same: counted now, its batch left for the resume to ask again.
        for job in &jobs {
            if let Some(prior) = priors.remove(&job.n) {
                let outcome = WorkerOutcome {
                    usage: prior.usage,
                    cost_usd: prior.cost_usd,
                    calls: 1,
                    duration_ms: started.elapsed().as_millis() as u64,
                    ..WorkerOutcome::ended(WorkerEnd::Halted)
                };
                answered.push(BatchDone::new(job, outcome));
            }
        }
        Vec::new()
    } else {
        jobs.retain(|j| realtime.contains(&j.n));
        for job in &mut jobs {
            job.request.prior = priors.remove(&job.n);
            job.request.fault_retries = fault_retries.remove(&job.n);
        }
        jobs
    };
    let stop = if signal {
        None
    } else {
        stop.or(not_run.map(Stop::Canceled))
    };
    Ok(Collected {
        answered,
        rest,
        stopped: signal || stop.is_some(),
        stop,
    })
}

/// A job phase's side of the batch-API stage (see the module doc).
struct JobHost<'a> {
    workers: Arc<WorkerContext>,
    printer: &'a Printer,
    interrupt: &'a mut Interrupt,
    started: Instant,
    /// What `--max-cost` left when the phase started, and what its batches spent since.
    budget: Option<f64>,
    spent: f64,
    /// Ctrl-C, SIGTERM or the deadline came.
    signal: bool,
    /// Why the stage stopped the job (a budget, a refusal).
    stop: Option<Stop>,
    /// Why the first request not run was not (the job stops, resumable).
    not_run: Option<String>,
    /// The server has no batch API: what to say (the job ends, nothing sent).
    no_batch_api: Option<String>,
    /// `rlm job resume JOB`.
    resume: String,
    /// Batches answered (or failed) through the batch API.
    answered: Vec<BatchDone>,
    /// Batches left to the realtime workers (by number): served from the cache, asked
    /// again with a rejected answer's errors, or sent realtime as the stage decides.
    realtime: HashSet<usize>,
    /// The rejected (paid) answer of each batch asked again.
    priors: HashMap<usize, PriorAnswer>,
    /// The fault retries left to each batch sent realtime after its provider batch sends
    /// spent part of them (only those with fewer than the phase's).
    fault_retries: HashMap<usize, u32>,
}

/// What keeping one result of a job's batch came to.
enum JobKept {
    /// Accepted and cached.
    Done(BatchDone),
    /// Paid, rejected by the check: asked again in real time with its errors.
    Reask { n: usize, prior: PriorAnswer },
}

impl Request for &BatchJob {
    fn id(&self) -> &UnitId {
        &self.request.unit
    }

    fn label(&self) -> &str {
        &self.request.label
    }
}

impl JobHost<'_> {
    fn done(&mut self, w: &BatchJob, outcome: WorkerOutcome) {
        self.answered.push(BatchDone::new(w, outcome));
    }
}

impl Stage for JobHost<'_> {
    fn emit(&mut self, event: Event) {
        match event {
            Event::Warning { message } => self.printer.warn(&message),
            Event::BatchSubmitted { batch_id, requests, .. } => self.printer.progress(&format!(
                "  submitted provider batch {batch_id} ({requests} requests); rlm job resume collects it if this rlm \
                 stops"
            )),
            _ => {}
        }
    }

    fn claims(&self) -> Option<(Cache, u32)> {
        let w = &self.workers;
        w.cache_reads.then(|| (w.cache.clone(), w.max_tokens))
    }

    fn backoff(&self, attempt: u32) -> Duration {
        self.workers.call.policy.backoff(attempt)
    }

    fn budget_left(&self) -> Option<f64> {
        self.budget.map(|left| left - self.spent)
    }

    fn stop_for_budget(&mut self, reason: String) {
        self.stop.get_or_insert(Stop::Budget(reason));
    }

    fn halt(&mut self, reason: String) {
        self.stop.get_or_insert(Stop::Fatal(reason));
    }

    async fn pause(&mut self, until: Instant) -> Pause {
        if self.interrupt.deadline_passed {
            return Pause::DeadlinePassed;
        }
        if self.signal {
            return Pause::Interrupted;
        }
        if self.interrupt.sleep_until(until).await {
            return Pause::Elapsed;
        }
        self.signal = true;
        if self.interrupt.deadline_passed {
            Pause::DeadlinePassed
        } else {
            Pause::Interrupted
        }
    }

    fn may_submit(&mut self) -> bool {
        if self.interrupt.check_deadline() {
            self.signal = true;
        }
        self.may_call()
    }

    fn may_call(&self) -> bool {
        !self.signal && self.stop.is_none()
    }

    async fn join_heard<T: 'static>(&mut self, tasks: &mut JoinSet<T>) -> Option<Result<T, JoinError>> {
        loop {
            tokio::select! {
                biased;
                () = self.interrupt.recv() => {
                    // A second Ctrl-C abandons what is being kept (its batch is not
                    // collected: a resume reads it again).
                    if self.signal && !self.interrupt.deadline_passed {
                        tasks.abort_all();
                    }
                    self.signal = true;
                }
                joined = tasks.join_next() => return joined,
            }
        }
    }

    fn no_batch_api(&mut self, e: &BatchError) {
        // Nothing was sent. A job takes no `--batch-api auto`: it says its own way on.
        if let BatchError::Unsupported { server, path, status } = e {
            self.no_batch_api.get_or_insert_with(|| {
                format!(
                    "--batch-api: {server} has no batch API ({status} on {path}); nothing was sent: `{} --batch-api \
                     off` makes realtime calls",
                    self.resume
                )
            });
        }
        self.halt(format!("--batch-api: {e}"));
    }

    fn results_unread(&mut self, message: String) {
        // Paid for, at the provider: the job stops, and its resume reads them.
        self.printer.warn(&message);
        self.stop.get_or_insert(Stop::Fatal(message));
    }

    fn why_stopped(&self) -> &'static str {
        match &self.stop {
            _ if self.interrupt.deadline_passed => "the --deadline passed",
            _ if self.signal => "the job was interrupted",
            Some(Stop::Budget(_)) => "the spend reached --max-cost",
            Some(_) => "the provider refused the job",
            None => "the job stopped early",
        }
    }
}

impl<'j> Host<&'j BatchJob> for JobHost<'_> {
    type Kept = JobKept;

    fn announce(&mut self, _: &'j BatchJob) {
        // The phase's progress counts its batches already.
    }

    fn fail(&mut self, w: &'j BatchJob, attempts: u32, reason: String) {
        let outcome = WorkerOutcome {
            calls: attempts,
            duration_ms: self.started.elapsed().as_millis() as u64,
            ..WorkerOutcome::ended(WorkerEnd::Failed { reason })
        };
        self.done(w, outcome);
    }

    fn cancelled(&mut self, _: &'j BatchJob, reason: &str) {
        self.not_run.get_or_insert_with(|| reason.to_string());
    }

    async fn serve(&mut self, w: &'j BatchJob, _: Box<CacheEntry>) {
        // The realtime workers read it, check it, and ask again with its errors if the
        // phase rejects it.
        self.realtime.insert(w.n);
    }

    async fn run_realtime(&mut self, ws: Vec<&'j BatchJob>, retries: u32) {
        // The realtime workers call them, each within what its batch sends left of the
        // phase's retries.
        let phase_retries = self.workers.call.policy.retries;
        for w in ws {
            self.realtime.insert(w.n);
            if retries < phase_retries {
                self.fault_retries.insert(w.n, retries);
            }
        }
    }

    fn key(&self, w: &'j BatchJob) -> String {
        w.request.key.0.clone()
    }

    fn item(&self, w: &'j BatchJob, custom_id: &str) -> Result<BatchItem, String> {
        Ok(BatchItem {
            custom_id: custom_id.to_string(),
            request: w.request.completion_request(self.workers.max_tokens),
        })
    }

    fn worst_cost(&self, w: &'j BatchJob) -> f64 {
        let r = w.request.completion_request(self.workers.max_tokens);
        let bytes = (r.system.len() + r.shared.len() + r.user.len()) as u64;
        self.workers.model.worst_batch_cost(bytes, r.max_tokens)
    }

    fn keep(
        &self,
        w: &'j BatchJob,
        reply: Reply,
        submitted: Instant,
        _may_call: bool,
    ) -> impl std::future::Future<Output = JobKept> + Send + 'static {
        let workers = self.workers.clone();
        let (n, ids, check, request): (usize, Vec<serde_json::Value>, _, WorkerRequest) =
            (w.n, w.ids.clone(), w.check.clone(), w.request.clone());
        async move {
            // Paid at the batch price, whatever the answer is worth.
            let usage = reply.usage();
            let cost_usd = workers.model.cost_at(usage, PriceTier::Batch);
            let verdict = match reply.completion(&request.completion_request(workers.max_tokens)) {
                Err(reason) => Err((
                    String::new(),
                    vec![format!("the batch result could not be read: {reason}")],
                )),
                Ok(c) => PhaseReply::new(check.as_ref(), &request)
                    .check(&c.text)
                    .map_err(|errors| (c.text, errors)),
            };
            match verdict {
                Err((text, errors)) => JobKept::Reask {
                    n,
                    prior: PriorAnswer {
                        text,
                        usage,
                        cost_usd,
                        errors,
                    },
                },
                Ok(accepted) => {
                    let write_error = store(&workers, &request, &accepted, usage).await;
                    let outcome = WorkerOutcome {
                        usage,
                        cost_usd,
                        calls: 1,
                        duration_ms: submitted.elapsed().as_millis() as u64,
                        write_error,
                        ..WorkerOutcome::ended(WorkerEnd::Accepted(accepted))
                    };
                    JobKept::Done(BatchDone::answered(n, ids, outcome))
                }
            }
        }
    }

    fn kept(&mut self, kept: JobKept, _sends: u32) -> Heard {
        match kept {
            JobKept::Done(done) => {
                self.spent += done.cost_usd();
                // An answer that could not be cached stops the job (its dispatcher says so).
                let go_on = !done.write_failed();
                self.answered.push(done);
                Heard { go_on, kept: true }
            }
            JobKept::Reask { n, prior } => {
                self.spent += prior.cost_usd;
                self.priors.insert(n, prior);
                self.realtime.insert(n);
                Heard {
                    go_on: true,
                    kept: false,
                }
            }
        }
    }
}

//! The batch-API stage (issue 18): with `--batch-api`, the units that miss the cache — and
//! under `--batch-api all` the aggregation calls, phase by phase — go through the
//! provider's batch API instead of realtime calls, at half the price.
//!
//! A phase ([`BatchApiRun::run_work`]) goes like this:
//! 1. **Submit.** Each request is rendered by the one renderer ([`request::render`]; the
//!    same bytes a realtime call sends) as the submission is written, never all at once;
//!    [`submit_all`] cuts submissions at the provider's limits. Each batch, with the custom
//!    ids of its requests, is recorded in the run store *before* anything waits for it: a
//!    `kill -9`, Ctrl-C, a closed laptop or the end of a CI job leaves it running at the
//!    provider, and `rlm resume` finds it in the store and polls it instead of submitting
//!    the same units again.
//! 2. **Wait.** Polls back off ([`PollSchedule`]); each is recorded, so `rlm status` shows
//!    it without a network call. The wait shows done / errored / total, the time waited and
//!    the next poll. Ctrl-C or `--deadline` ends the wait and leaves the batch running.
//! 3. **Collect.** An ended batch's results are streamed. A succeeded result is kept as a
//!    realtime answer is ([`job::keep_paid`]: cached first, then its result files written and
//!    its answers read), a few at a time beside the reader; an invalid `--schema` answer gets
//!    its one realtime retry. `errored` (when retryable) and `expired` requests — only they —
//!    are tried again, in a follow-up batch or realtime (`--batch-api-fallback`), within
//!    `--retries`; `canceled` ones stay not run. Each outcome is recorded after its answer is
//!    cached, and the batch marked collected once every result is kept.
//!
//! A batch is polled and collected only at the server it was recorded at: a resume whose
//! settings point at another server is refused before anything is sent
//! ([`refuse_batches_elsewhere`]), and a batch the server does not know (404: deleted, or
//! another key's) stops the run — its requests are never sent again behind the user's back
//! (they may be running, and paid for, under that key). `rlm cancel RUN --forget` gives such
//! batches up explicitly.
//!
//! `rlm cancel` runs the same stage with `cancel` set: every batch of the run not collected
//! yet, whatever its phase, is canceled at the provider first, then collected as in 3 (what
//! had finished is kept; under `--batch-api all` the aggregation phases collect theirs);
//! nothing is submitted and no model is called.
//!
//! The provider bills these requests at its batch price: outcomes carry their usage as
//! [`JobOutcome::batch_usage`], which the dispatcher prices at [`PriceTier::Batch`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;

use super::execution::{Execution, Pause};
use super::job::{self, Job, JobContext, JobFailure, JobOutcome, SummaryJob};
use crate::error::RlmError;
use crate::exec::{Event, JobMeta, PoolHandler};
use crate::plan::Budget;
use crate::printer::{Printer, ProgressStyleKind};
use crate::provider::batch_api::{
    self, batch_api, custom_id_for, new_token, reconcile, submit_all_within, BatchApi, BatchCounts, BatchError,
    BatchItem, BatchState, BatchStatus, BatchTimeouts, Intent, ItemOutcome, PollSchedule, Reconciled, Recorder, Reply,
    SubmissionTag, Submitted,
};
use crate::provider::catalog::PriceTier;
use crate::provider::{ErrorKind, HttpConfig, ModelInfo};
use crate::report::format_duration;
use crate::request::{self, Expect};
use crate::settings::{BatchApiMode, BatchFallback, BatchSettings};
use crate::store::{BatchIntent, NewBatchIntent, NewBatchSubmission, RequestOutcome, RunId, TaskStore};
use crate::unit::{UnitId, UnitKind, WorkUnit};

/// Results kept at once beside the reader (each caches its answer and writes its files).
const KEEPING: usize = 16;
/// Outcomes recorded in the store per transaction.
const OUTCOMES_PER_WRITE: usize = 1000;
/// How often the progress bar's text (time waited, next poll) is refreshed on a terminal.
const BAR_TICK: Duration = Duration::from_secs(1);
/// How often the results of an ended batch are asked for before the stage gives up on them
/// for now (`rlm resume` reads them later).
const RESULT_ATTEMPTS: u32 = 3;
/// The longest `rlm cancel` waits between two polls of a batch it canceled.
const CANCEL_POLL_MOST: Duration = Duration::from_secs(15);

/// How a run's calls are made, decided when it is planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Realtime calls.
    Realtime,
    /// The units through the provider's batch API; with `aggregation`, the aggregation
    /// calls too.
    BatchApi { aggregation: bool },
}

impl Delivery {
    /// The price the per-unit calls are billed at.
    pub fn unit_tier(self) -> PriceTier {
        match self {
            Delivery::Realtime => PriceTier::Realtime,
            Delivery::BatchApi { .. } => PriceTier::Batch,
        }
    }

    /// The price the aggregation calls are billed at.
    pub fn aggregate_tier(self) -> PriceTier {
        match self {
            Delivery::BatchApi { aggregation: true } => PriceTier::Batch,
            _ => PriceTier::Realtime,
        }
    }
}

/// The batch API of the run's endpoint.
fn client(settings: &BatchSettings, model: &str) -> Result<Box<dyn BatchApi>, BatchError> {
    let p = &settings.provider;
    let config = HttpConfig {
        kind: p.kind,
        base_url: p.base_url.clone(),
        api_key: p.api_key.clone(),
        model: model.to_string(),
        temperature: p.temperature,
        timeout: p.timeout,
        connect_timeout: p.connect_timeout,
    };
    batch_api(&config, settings.exec.batch_api.limits, BatchTimeouts::default())
}

/// How the run's calls are made, and the notice to give when `--batch-api auto` falls back
/// to realtime calls. A server that is not the provider's own is asked first whether it
/// has a batch API at all (one listing), so that a run never starts around one it lacks:
/// without `auto` that is an error naming the server, before anything is paid for.
pub async fn delivery(settings: &BatchSettings, model: &ModelInfo) -> Result<(Delivery, Option<String>), RlmError> {
    let mode = settings.exec.batch_api.mode;
    if !mode.is_on() || settings.exec.cache_mode == crate::cache::CacheMode::ReadOnly {
        // Off, or `--cache-only`: nothing is called.
        return Ok((Delivery::Realtime, None));
    }
    let batched = Delivery::BatchApi {
        aggregation: mode == BatchApiMode::All,
    };
    if settings.provider.official {
        return Ok((batched, None));
    }
    let api = client(settings, &model.id).map_err(|e| RlmError::Config(e.to_string()))?;
    match api.probe().await {
        Ok(()) => Ok((batched, None)),
        Err(e) if e.is_unsupported() && mode == BatchApiMode::Auto => Ok((
            Delivery::Realtime,
            Some(format!(
                "{} has no batch API: --batch-api auto makes realtime calls instead (at the list price)",
                api.server()
            )),
        )),
        Err(e) if e.is_unsupported() => Err(RlmError::Config(e.to_string())),
        Err(e) => Err(RlmError::Provider(format!("--batch-api: {e}"))),
    }
}

/// Refuses, before anything is sent, a resume (or `rlm cancel`) of run `run` whose settings
/// point at another server than one of its uncollected batches was recorded at: the batch
/// can only be polled, collected or canceled there. `rlm cancel --forget` passes (it gives
/// such batches up).
pub fn refuse_batches_elsewhere(settings: &BatchSettings, run: &RunId) -> Result<(), RlmError> {
    if settings.exec.batch_api.forget {
        return Ok(());
    }
    let store = TaskStore::open(&settings.rlm_dir()).map_err(|e| RlmError::Store(e.to_string()))?;
    let batches = store
        .batch_submissions(run)
        .map_err(|e| RlmError::Store(e.to_string()))?;
    let current = batch_api::server_name(&settings.provider.base_url);
    let provider = settings.provider.kind.name();
    let intents = store.batch_intents(run).map_err(|e| RlmError::Store(e.to_string()))?;
    let elsewhere: Vec<(&str, &str)> = batches
        .iter()
        .filter(|b| b.collected_at.is_none() && (b.server != current || b.provider != provider))
        .map(|b| (b.batch_id.as_str(), b.server.as_str()))
        .chain(
            intents
                .iter()
                .filter(|i| i.server != current || i.provider != provider)
                .map(|i| (i.token.as_str(), i.server.as_str())),
        )
        .collect();
    match elsewhere.as_slice() {
        [] => Ok(()),
        [(first, server), rest @ ..] => Err(RlmError::Config(elsewhere_message(
            run,
            first,
            server,
            rest.len(),
            &current,
        ))),
    }
}

/// Why a batch recorded at `recorded` is not reached through `current`, and what to do.
fn elsewhere_message(run: &RunId, batch_id: &str, recorded: &str, more: usize, current: &str) -> String {
    let more = match more {
        0 => String::new(),
        1 => " (and 1 more batch)".to_string(),
        n => format!(" (and {n} more batches)"),
    };
    format!(
        "run {run}: batch {batch_id}{more} waits at {recorded}, but the settings now point at {current} (--base-url, \
         ANTHROPIC_BASE_URL / OPENAI_BASE_URL or the config changed); nothing was sent. Point them back at \
         {recorded} to collect it, or give it up with `rlm cancel {run} --forget` (its requests are then sent \
         again, and paid again)"
    )
}

/// `rlm cancel` while another rlm (`holder`) waits for the run's batches: each is canceled
/// at the provider and the cancel recorded; the waiting rlm sees it at its next poll and
/// collects what had finished.
pub async fn cancel_at_provider(
    settings: &BatchSettings,
    run: &RunId,
    batches: &[String],
    holder: &str,
    printer: &Printer,
) -> Result<(), RlmError> {
    if settings.exec.batch_api.forget {
        return Err(RlmError::InUse(format!(
            "rlm cancel --forget: {holder} waits for run {run} and collects its batches; stop it first (Ctrl-C), \
             then give them up"
        )));
    }
    let model = settings.provider.model.as_deref().unwrap_or("unknown");
    let api = client(settings, model).map_err(|e| RlmError::Config(e.to_string()))?;
    let mut store = TaskStore::open(&settings.rlm_dir()).map_err(|e| RlmError::Store(e.to_string()))?;
    let mut asked = 0;
    for batch_id in batches {
        match api.cancel(batch_id).await {
            Ok(_) => {
                asked += 1;
                if let Err(e) = store.record_batch_cancel_requested(run, batch_id) {
                    printer.warn(&format!("the run store could not record the cancel of {batch_id}: {e}"));
                }
            }
            Err(e @ BatchError::Call { .. }) if !e.is_retryable() && !is_refusal_of_us(&e) => {
                // Most likely over already: its results are collected as they are.
                printer.warn(&format!("batch {batch_id}: {e}"));
            }
            Err(e) => return Err(RlmError::Provider(format!("cancelling batch {batch_id}: {e}"))),
        }
    }
    printer.banner(&format!(
        "rlm: asked {} to cancel {asked} of the {} {} of run {run}; {holder} waits for them and collects what had \
         finished",
        api.server(),
        batches.len(),
        if batches.len() == 1 { "batch" } else { "batches" },
    ));
    Ok(())
}

/// A refusal of the key or the account (not of the request).
fn is_refusal_of_us(e: &BatchError) -> bool {
    matches!(e, BatchError::Call { error, .. } if error.kind == ErrorKind::Fatal)
}

/// A batch an earlier attempt of the run submitted and did not collect.
#[derive(Debug)]
struct Earlier {
    batch_id: String,
    phase: String,
    /// The server it was recorded at.
    server: String,
    /// Its custom ids.
    custom_ids: Vec<String>,
    cancel_requested: bool,
}

/// The batch-API stage of one run (see the module doc).
pub struct BatchApiRun {
    api: Box<dyn BatchApi>,
    aggregation: bool,
    fallback: BatchFallback,
    schedule: PollSchedule,
    /// `--retries`: how many more times an errored or expired request is sent.
    retries: u32,
    /// `rlm cancel`.
    cancel: bool,
    /// `rlm cancel --forget`: batches that cannot be reached are given up.
    forget: bool,
    /// Without a terminal, a line about the wait this often.
    wait_line: Duration,
    /// A batch the server did not know stopped the run (see [`BatchApiRun::unknown`]).
    refused: bool,
    /// `--batch-api auto`: a server that refuses batches gets realtime calls.
    auto: bool,
    store: TaskStore,
    run: RunId,
    printer: Printer,
    /// Batches of earlier attempts still to collect (a resume): waited for, never
    /// submitted again.
    earlier: Vec<Earlier>,
    /// Every batch earlier attempts submitted, collected or not (for the report).
    recorded: Vec<String>,
    /// Requests sent per unit over the whole run (every attempt), for the retry budget.
    sent: HashMap<String, u32>,
    /// The first failure to write the store (said once).
    store_failure: Option<String>,
    /// Submissions of earlier attempts whose batch was never recorded (the reply to their
    /// create request never came): looked for at the provider before anything is sent.
    intents: Vec<BatchIntent>,
    /// Requests in a submission whose batch cannot be told yet (custom id → why): not sent
    /// again, not run; the next resume looks again.
    held: HashMap<String, String>,
    /// Submissions tagged so far by this attempt.
    submissions: u64,
    /// How long `rlm cancel` waits for its canceled batches to end.
    cancel_wait: Duration,
    /// What `rlm cancel` found and did.
    pub cancel_summary: CancelSummary,
}

/// What `rlm cancel` did, for its last line.
#[derive(Debug, Default, Clone, Copy)]
pub struct CancelSummary {
    pub batches: usize,
    /// Given up without a cancel (`--forget`).
    pub forgotten: usize,
    pub kept: usize,
    pub not_run: usize,
}

impl BatchApiRun {
    /// The stage of run `run`: its batch API, and what the store knows of its batches
    /// (a resume waits for those an earlier attempt did not collect).
    pub fn start(
        settings: &BatchSettings,
        model: &ModelInfo,
        run: RunId,
        delivery: Delivery,
        printer: &Printer,
    ) -> Result<Self, RlmError> {
        let Delivery::BatchApi { aggregation } = delivery else {
            return Err(RlmError::System("internal error: no batch API was planned".into()));
        };
        let api = client(settings, &model.id).map_err(|e| RlmError::Config(e.to_string()))?;
        let store = TaskStore::open(&settings.rlm_dir()).map_err(|e| {
            RlmError::Store(format!(
                "--batch-api records each batch in the run store before waiting for it, and the store cannot be \
                 opened ({e}); nothing was sent"
            ))
        })?;
        let mut earlier = Vec::new();
        let mut sent: HashMap<String, u32> = HashMap::new();
        let submissions = store
            .batch_submissions(&run)
            .map_err(|e| RlmError::Store(e.to_string()))?;
        let recorded = submissions.iter().map(|b| b.batch_id.clone()).collect();
        for batch in submissions {
            let requests = store
                .batch_requests(&run, &batch.batch_id)
                .map_err(|e| RlmError::Store(e.to_string()))?;
            for r in &requests {
                *sent.entry(r.unit_id.clone()).or_default() += 1;
            }
            if batch.collected_at.is_none() {
                if batch.server != api.server() && !settings.exec.batch_api.forget {
                    return Err(RlmError::Config(elsewhere_message(
                        &run,
                        &batch.batch_id,
                        &batch.server,
                        0,
                        api.server(),
                    )));
                }
                earlier.push(Earlier {
                    batch_id: batch.batch_id,
                    phase: batch.phase,
                    server: batch.server,
                    custom_ids: requests.into_iter().map(|r| r.custom_id).collect(),
                    cancel_requested: batch.cancel_requested_at.is_some(),
                });
            }
        }
        let intents = store.batch_intents(&run).map_err(|e| RlmError::Store(e.to_string()))?;
        if let Some(elsewhere) = intents
            .iter()
            .find(|i| i.server != api.server() && !settings.exec.batch_api.forget)
        {
            return Err(RlmError::Config(elsewhere_message(
                &run,
                &format!("submission {}", elsewhere.token),
                &elsewhere.server,
                0,
                api.server(),
            )));
        }
        Ok(BatchApiRun {
            api,
            aggregation,
            fallback: settings.exec.batch_api.fallback,
            schedule: settings.exec.batch_api.poll,
            retries: settings.exec.retries,
            cancel: settings.exec.batch_api.cancel,
            forget: settings.exec.batch_api.forget,
            wait_line: settings.exec.batch_api.wait_line,
            refused: false,
            auto: settings.exec.batch_api.mode == BatchApiMode::Auto,
            store,
            run,
            printer: printer.clone(),
            earlier,
            recorded,
            sent,
            store_failure: None,
            intents,
            held: HashMap::new(),
            submissions: 0,
            cancel_wait: settings.exec.batch_api.cancel_wait,
            cancel_summary: CancelSummary::default(),
        })
    }

    /// Whether the aggregation calls go through the batch API too (`--batch-api all`).
    pub fn batches_aggregation(&self) -> bool {
        self.aggregation
    }

    /// `rlm cancel`: the line that says what it did.
    pub fn cancel_line(&self) -> Option<String> {
        if !self.cancel || self.refused {
            // A batch that could not be reached: the run's own status says so.
            return None;
        }
        let c = self.cancel_summary;
        let forgotten = match c.forgotten {
            0 => String::new(),
            1 => " and 1 given up (--forget)".to_string(),
            n => format!(" and {n} given up (--forget)"),
        };
        Some(format!(
            "rlm: run {}: {} {} canceled at {}{forgotten}; {} finished {} kept (cached, result files written), {} not \
             run (`rlm resume {}` sends {})",
            self.run,
            c.batches,
            if c.batches == 1 { "batch" } else { "batches" },
            self.api.server(),
            c.kept,
            if c.kept == 1 { "answer" } else { "answers" },
            c.not_run,
            self.run,
            if c.not_run == 1 { "it" } else { "them" },
        ))
    }

    /// The map phase: the units that missed the cache (failed ones of an earlier attempt
    /// only under `rlm resume --failed`), then the files a batch's answer left out, each
    /// alone.
    pub async fn run_units(
        &mut self,
        exec: &mut Execution,
        units: &[WorkUnit],
        misses: &[usize],
        skip: Option<&HashSet<String>>,
        budget: Budget,
    ) {
        self.reconcile_intents(exec).await;
        let recorded = std::mem::take(&mut self.recorded);
        exec.dispatcher.reporters.builder.set_earlier_batches(recorded);
        if self.cancel {
            self.cancel_all(exec).await;
        }
        let mut work = Vec::with_capacity(misses.len());
        for &i in misses {
            let unit = &units[i];
            if skip.is_some_and(|s| s.contains(unit.id.as_str())) {
                exec.dispatcher.emit(Event::Cancelled {
                    unit: unit.id.clone(),
                    label: unit.label.clone(),
                    kind: UnitKind::Map,
                    reason: "failed in the earlier run: rlm resume --failed tries it again".into(),
                });
            } else {
                work.push(Work::Unit(unit));
            }
        }
        self.run_work(exec, work, "map").await;
        let retried = exec.members_to_retry(units, budget);
        if exec.interrupted || exec.deadline_passed() {
            exec.members_not_run(&retried);
            return;
        }
        if !retried.is_empty() {
            let work = retried.iter().map(|(_, m)| Work::Unit(m)).collect();
            self.run_work(exec, work, "members").await;
            exec.merge_members(retried);
        }
        // (A batch the server did not know halted the run: that is its status, not an
        // interruption; no call is made after a halt.)
        if self.cancel && !self.refused && !(self.aggregation && self.earlier.iter().any(|e| e.phase == AGGREGATE)) {
            // Nothing more is called: the aggregate is the concatenation of what finished.
            // Under `--batch-api all` with aggregation batches to collect, the aggregation
            // goes on instead: its phases collect what their canceled batches had finished
            // and call nothing (the phases make no realtime call under `all`).
            exec.interrupted = true;
        }
    }

    /// One aggregation phase under `--batch-api all`: cached summaries served, the others
    /// through the batch API.
    pub async fn run_summaries(&mut self, exec: &mut Execution, jobs: Vec<Job>) {
        self.reconcile_intents(exec).await;
        let summaries: Vec<SummaryJob> = jobs
            .into_iter()
            .filter_map(|j| match j {
                Job::Summary(s) => Some(s),
                Job::Unit(_) => None,
            })
            .collect();
        let ctx = exec.jobs.clone();
        let mut work = Vec::new();
        for s in &summaries {
            let meta = Work::Summary(s).meta();
            exec.dispatcher.emit(Event::Queued {
                unit: meta.unit.clone(),
                label: meta.label.clone(),
                kind: meta.kind,
            });
            let key = job::summary_call(&ctx, s).key;
            let cached = if ctx.read_cache {
                job::lookup(&ctx, &key).await
            } else {
                Ok(None)
            };
            let mut outcome = JobOutcome::new(meta);
            match cached {
                Ok(Some(entry)) => {
                    outcome.cached = true;
                    outcome.saved = entry.usage;
                    outcome.truncated = entry.truncated;
                    outcome.text = Some(entry.text);
                    exec.dispatcher.finished(outcome);
                }
                Ok(None) if !ctx.may_call => {
                    exec.dispatcher
                        .finished(outcome.failed("--cache-only: this summary is not cached".into()));
                }
                Ok(None) => work.push(Work::Summary(s)),
                Err(reason) => {
                    exec.dispatcher.finished(outcome.failed(reason));
                }
            }
        }
        self.run_work(exec, work, AGGREGATE).await;
        if self.cancel
            && summaries
                .iter()
                .any(|s| !exec.dispatcher.aggregate_texts.contains_key(&s.id))
        {
            // A summary canceled before it ran: the aggregate is the concatenation.
            exec.interrupted = true;
        }
    }

    /// Runs one phase's requests through the batch API (see the module doc).
    async fn run_work(&mut self, exec: &mut Execution, work: Vec<Work<'_>>, phase: &'static str) {
        if work.is_empty() {
            return;
        }
        let mut p = Phase::new(phase, work);
        self.take_earlier(&mut p);
        let mut to_send: Vec<usize> = (0..p.work.len()).filter(|&i| !p.in_flight[i]).collect();
        if !self.held.is_empty() {
            // In a submission whose batch cannot be told yet: not sent again.
            to_send.retain(|&i| match self.held.get(p.custom_ids[i].as_str()).cloned() {
                Some(reason) => {
                    self.cancelled(exec, &mut p, i, &reason);
                    false
                }
                None => true,
            });
        }
        if self.cancel {
            // Nothing is submitted (every batch was canceled first, see `cancel_all`).
            for i in std::mem::take(&mut to_send) {
                self.cancelled(
                    exec,
                    &mut p,
                    i,
                    "not run: rlm cancel stopped the run first (rlm resume sends it)",
                );
            }
        }
        loop {
            let mut realtime = Vec::new();
            if !to_send.is_empty() {
                let send = std::mem::take(&mut to_send);
                if exec.may_call() {
                    realtime = self.submit(exec, &mut p, send).await;
                }
            }
            if !realtime.is_empty() && exec.may_call() {
                self.run_realtime(exec, &mut p, realtime).await;
            }
            if p.batches.is_empty() {
                break;
            }
            match self.wait(exec, &mut p).await {
                Waited::Stopped => return,
                Waited::Done(retry) if retry.is_empty() => {}
                Waited::Done(retry) if self.fallback == BatchFallback::Realtime => {
                    if exec.may_call() {
                        self.run_realtime(exec, &mut p, retry).await;
                    }
                }
                Waited::Done(retry) => to_send = retry,
            }
            // Refused for the account's enqueued-token limit: again, smaller, now that the
            // phase's other batches have ended.
            to_send.append(&mut p.requeue);
            if p.batches.is_empty() && to_send.is_empty() {
                break;
            }
        }
    }

    /// The submissions of earlier attempts whose batch was never recorded (killed between
    /// the create request and its reply, or the reply lost): each is looked for at the
    /// provider first. Found, it is recorded and collected as any batch of the run; shown
    /// not created, its requests are sent again; not told apart yet, they are held (not
    /// sent, not run) until a later resume looks again. Runs once, before anything is sent.
    async fn reconcile_intents(&mut self, exec: &mut Execution) {
        let known = self.store.known_batch_ids().unwrap_or_default();
        for intent in std::mem::take(&mut self.intents) {
            let requests = match self.store.batch_intent_requests(&self.run, &intent.token) {
                Ok(requests) => requests,
                Err(e) => {
                    self.printer.warn(&format!(
                        "the run store could not read submission {}: {e}",
                        intent.token
                    ));
                    continue;
                }
            };
            let custom_ids: Vec<String> = requests.iter().map(|(c, _)| c.clone()).collect();
            if intent.server != self.api.server() {
                // Only under `--forget` (`start` refused it otherwise).
                exec.dispatcher.emit(Event::Warning {
                    message: format!(
                        "submission {} of {} requests given up (rlm cancel --forget): it was sent to {}, and the \
                         settings point at {}; if it created a batch there, that batch is billed there",
                        intent.token,
                        intent.request_count,
                        intent.server,
                        self.api.server()
                    ),
                });
                self.store_write(|s, run| s.drop_batch_intent(run, &intent.token));
                continue;
            }
            let tag = SubmissionTag {
                run: self.run.to_string(),
                token: intent.token.clone(),
            };
            let looked_for = Intent {
                tag: &tag,
                recorded_at_ms: intent.recorded_at.as_millis(),
                custom_ids: &custom_ids,
                known: &known,
            };
            let lost = format!(
                "the reply to submission {} ({} requests, sent by an earlier attempt) was never recorded",
                intent.token, intent.request_count
            );
            match reconcile(self.api.as_ref(), &looked_for).await {
                Ok(Reconciled::Found { state, how }) => {
                    let batch = NewBatchSubmission {
                        state: &state,
                        provider: self.api.kind().name(),
                        server: self.api.server(),
                        phase: &intent.phase,
                        requests: &requests,
                        token: Some(&intent.token),
                    };
                    if let Err(e) = self.store.record_batch_submission(&self.run, &batch) {
                        self.hold(
                            &custom_ids,
                            &format!("{lost}, and its batch {} could not be recorded ({e})", state.batch_id),
                        );
                        continue;
                    }
                    exec.dispatcher.emit(Event::Warning {
                        message: format!(
                            "{lost}; batch {} was found at {} ({how}): it is collected, not submitted again",
                            state.batch_id,
                            self.api.server()
                        ),
                    });
                    for (_, unit) in &requests {
                        *self.sent.entry(unit.clone()).or_default() += 1;
                    }
                    self.recorded.push(state.batch_id.clone());
                    self.earlier.push(Earlier {
                        batch_id: state.batch_id,
                        phase: intent.phase,
                        server: intent.server,
                        custom_ids,
                        cancel_requested: false,
                    });
                }
                Ok(Reconciled::NotCreated) => {
                    exec.dispatcher.emit(Event::Warning {
                        message: format!(
                            "{lost}; {} lists no batch that can be it, so none was created: its requests are sent again",
                            self.api.server()
                        ),
                    });
                    self.store_write(|s, run| s.drop_batch_intent(run, &intent.token));
                }
                Ok(Reconciled::Unsure(candidates)) => {
                    let what = match candidates.as_slice() {
                        [] => "the provider's listing is too long to tell whether it created a batch".to_string(),
                        many => format!("batches {} may be it and cannot be told apart yet", many.join(", ")),
                    };
                    let why = format!("{lost}, and {what}");
                    exec.dispatcher.emit(Event::Warning {
                        message: format!("{why}; its requests are not sent again (that could pay twice)"),
                    });
                    self.hold(&custom_ids, &why);
                }
                Err(e) => {
                    let why = format!("{lost}, and the provider's listing of batches could not be read ({e})");
                    exec.dispatcher.emit(Event::Warning {
                        message: format!("{why}; its requests are not sent again (that could pay twice)"),
                    });
                    self.hold(&custom_ids, &why);
                }
            }
        }
    }

    /// Requests of a submission whose batch cannot be told yet: not sent, not run.
    fn hold(&mut self, custom_ids: &[String], why: &str) {
        let reason = format!("not run: {why} (`rlm resume {}` looks for its batch again)", self.run);
        for c in custom_ids {
            self.held.insert(c.clone(), reason.clone());
        }
    }

    /// The batches of an earlier attempt that hold requests of this phase: waited for
    /// (polled at once), their requests not sent again.
    fn take_earlier(&mut self, p: &mut Phase<'_>) {
        let now = Instant::now();
        let mut kept = Vec::new();
        for e in std::mem::take(&mut self.earlier) {
            let ours: Vec<String> = e
                .custom_ids
                .iter()
                .filter(|c| p.by_custom.contains_key(c.as_str()))
                .cloned()
                .collect();
            if e.phase != p.name || ours.is_empty() {
                kept.push(e);
                continue;
            }
            for c in &ours {
                if let Some(&i) = p.by_custom.get(c.as_str()) {
                    p.in_flight[i] = true;
                }
            }
            tracing::debug!(batch = %e.batch_id, requests = ours.len(), "waiting for a batch of an earlier attempt");
            p.batches.push(Waiting {
                batch_id: e.batch_id,
                custom_ids: ours,
                polls: 0,
                next_poll: now,
                submitted: now,
                counts: BatchCounts::default(),
                cancel_requested: e.cancel_requested,
            });
        }
        self.earlier = kept;
    }

    /// `rlm cancel`: asks the provider to cancel every batch of the run not collected yet,
    /// whatever its phase, before anything is collected (so none keeps running, and billed,
    /// whatever happens next). Under `--forget`, a batch recorded at another server, or one
    /// the server does not know, is given up instead.
    async fn cancel_all(&mut self, exec: &mut Execution) {
        let server = self.api.server().to_string();
        let mut kept = Vec::with_capacity(self.earlier.len());
        for mut e in std::mem::take(&mut self.earlier) {
            if e.server != server {
                // Only under `--forget` (`start` refused it otherwise).
                let why = format!("it was recorded at {}, and the settings point at {server}", e.server);
                self.give_up(exec, &e.batch_id, &e.custom_ids, &why);
                continue;
            }
            if !e.cancel_requested {
                match self.api.cancel(&e.batch_id).await {
                    Ok(state) => {
                        self.store_write(|s, run| s.record_batch_cancel_requested(run, &state.batch_id));
                        e.cancel_requested = true;
                        self.printer
                            .progress(&format!("rlm: asked {server} to cancel batch {}", e.batch_id));
                    }
                    Err(err @ BatchError::UnknownBatch { .. }) if self.forget => {
                        self.give_up(exec, &e.batch_id, &e.custom_ids, &err.to_string());
                        continue;
                    }
                    // Already over, or unknown (the poll says which): its results are
                    // collected as they are.
                    Err(err) => exec.dispatcher.emit(Event::Warning {
                        message: format!(
                            "batch {}: the cancel was refused ({err}); collecting what it has",
                            e.batch_id
                        ),
                    }),
                }
            }
            self.cancel_summary.batches += 1;
            kept.push(e);
        }
        self.earlier = kept;
    }

    /// `rlm cancel --forget`: batch `batch_id` is given up without being collected (its
    /// requests recorded `canceled`, the batch collected): `rlm resume` sends them again.
    fn give_up(&mut self, exec: &mut Execution, batch_id: &str, custom_ids: &[String], why: &str) {
        exec.dispatcher.emit(Event::Warning {
            message: format!(
                "batch {batch_id} given up (rlm cancel --forget: {why}); it was not canceled, so if it still runs at \
                 its provider it is billed there"
            ),
        });
        let reason = format!("given up by rlm cancel --forget: {why}");
        let rows: Vec<RequestOutcome<'_>> = custom_ids
            .iter()
            .map(|c| RequestOutcome {
                custom_id: c,
                outcome: "canceled",
                reason: Some(&reason),
            })
            .collect();
        self.store_write(|s, run| s.record_batch_outcomes(run, batch_id, &rows));
        self.store_write(|s, run| s.record_batch_collected(run, batch_id));
        self.cancel_summary.forgotten += 1;
    }

    /// Submits the requests `send` (indexes into the phase's work) in as many batches as the
    /// limits need, each recorded before the next. Returns the requests that must go
    /// realtime instead (too large for any batch, or a server without a batch API under
    /// `--batch-api auto`).
    async fn submit(&mut self, exec: &mut Execution, p: &mut Phase<'_>, send: Vec<usize>) -> Vec<usize> {
        for &i in &send {
            p.announce(exec, i);
        }
        let ctx = exec.jobs.clone();
        let mut left = send;
        let mut attempt = 0;
        loop {
            let mut recorder = RunRecorder {
                store: &mut self.store,
                run: &self.run,
                failure: &mut self.store_failure,
                provider: self.api.kind().name(),
                server: self.api.server().to_string(),
                phase: p.name,
                work: &p.work,
                by_custom: &p.by_custom,
                submissions: &mut self.submissions,
                recorded: Vec::new(),
                notices: Vec::new(),
            };
            let result = {
                let work = &p.work;
                let items = left.iter().map(|&i| item(&ctx, work[i]));
                submit_all_within(self.api.as_ref(), items, p.max_requests, &mut recorder).await
            };
            let RunRecorder { recorded, notices, .. } = recorder;
            for message in notices {
                exec.dispatcher.emit(Event::Warning { message });
            }
            // The submissions' bodies (up to 32 MB each) are freed.
            crate::memory::release_free();
            let now = Instant::now();
            let mut sent: HashSet<String> = HashSet::new();
            for s in recorded {
                exec.dispatcher.emit(Event::BatchSubmitted {
                    batch_id: s.batch_id.clone(),
                    phase: p.name.to_string(),
                    requests: s.custom_ids.len(),
                });
                for c in &s.custom_ids {
                    if let Some(&i) = p.by_custom.get(c.as_str()) {
                        *self.sent.entry(p.work[i].id().to_string()).or_default() += 1;
                        p.in_flight[i] = true;
                    }
                }
                sent.extend(s.custom_ids.iter().cloned());
                p.batches.push(Waiting {
                    batch_id: s.batch_id,
                    custom_ids: s.custom_ids,
                    polls: 0,
                    next_poll: now + self.schedule.delay(0),
                    submitted: now,
                    counts: s.state.counts,
                    cancel_requested: false,
                });
            }
            left.retain(|&i| !sent.contains(&p.custom_ids[i]));
            match result {
                Ok(report) => {
                    let mut realtime = Vec::new();
                    for (custom_id, e) in report.rejected {
                        let Some(&i) = p.by_custom.get(custom_id.as_str()) else {
                            continue;
                        };
                        match e {
                            BatchError::ItemTooLarge { .. } => realtime.push(i),
                            e => self.fail(exec, p, i, format!("not sent to the batch API: {e}")),
                        }
                    }
                    return realtime;
                }
                Err(e) if e.is_unsupported() && self.auto => {
                    exec.dispatcher.emit(Event::Warning {
                        message: format!("{e}: --batch-api auto makes realtime calls instead"),
                    });
                    return left;
                }
                Err(e @ BatchError::Unreconciled { .. }) => {
                    // Its requests may be running, and paid for, at the provider: never sent
                    // again blindly. The others go on.
                    let message = e.to_string();
                    exec.dispatcher.emit(Event::Warning {
                        message: message.clone(),
                    });
                    let BatchError::Unreconciled { custom_ids, .. } = e else {
                        return Vec::new();
                    };
                    let held: HashSet<&str> = custom_ids.iter().map(String::as_str).collect();
                    let reason = format!(
                        "not run: {message} (`rlm resume {}` looks for its batch again)",
                        self.run
                    );
                    for &i in &left {
                        if held.contains(p.custom_ids[i].as_str()) {
                            self.cancelled(exec, p, i, &reason);
                        }
                    }
                    left.retain(|&i| !held.contains(p.custom_ids[i].as_str()));
                    if left.is_empty() || !exec.may_call() {
                        return Vec::new();
                    }
                }
                Err(e) if e.is_retryable() && attempt < self.retries && !left.is_empty() => {
                    attempt += 1;
                    let wait = e
                        .retry_after()
                        .unwrap_or_else(|| exec.jobs.call.policy.backoff(attempt));
                    tracing::debug!(attempt, ?wait, "submitting a batch again: {e}");
                    match exec.pause(Instant::now() + wait).await {
                        Pause::Elapsed => continue,
                        Pause::Interrupted | Pause::DeadlinePassed => return Vec::new(),
                    }
                }
                Err(e) => {
                    let fatal = e.is_unsupported()
                        || matches!(&e, BatchError::Call { error, .. } if error.kind == ErrorKind::Fatal);
                    if fatal {
                        exec.dispatcher
                            .halt(super::dispatcher::StopReason::Fatal(format!("--batch-api: {e}")));
                    }
                    for i in left {
                        self.fail(exec, p, i, format!("the batch could not be submitted: {e}"));
                    }
                    return Vec::new();
                }
            }
        }
    }

    /// Runs the requests `indexes` as realtime calls, through the pool, each within what
    /// `--retries` has left after its batch sends (the realtime fallback shares the budget:
    /// a unit sent once in a batch gets one realtime call and `--retries` minus one retries
    /// of it).
    async fn run_realtime(&mut self, exec: &mut Execution, p: &mut Phase<'_>, indexes: Vec<usize>) {
        let mut by_budget: std::collections::BTreeMap<u32, Vec<usize>> = std::collections::BTreeMap::new();
        for i in indexes {
            let sent = self.sent.get(p.work[i].id().as_str()).copied().unwrap_or(0);
            // `again_or_fail` sends nothing again past the budget: `sent <= retries`.
            by_budget.entry(self.retries.saturating_sub(sent)).or_default().push(i);
        }
        for (retries, indexes) in by_budget.into_iter().rev() {
            let jobs = Self::realtime_jobs(exec, p, indexes);
            if !jobs.is_empty() {
                exec.run_announced_with_retries(jobs, retries).await;
            }
        }
    }

    /// The realtime jobs of the requests `indexes`, announced to the reporters.
    fn realtime_jobs(exec: &mut Execution, p: &mut Phase<'_>, indexes: Vec<usize>) -> Vec<Job> {
        let mut jobs = Vec::with_capacity(indexes.len());
        for i in indexes {
            if p.done[i] {
                continue;
            }
            p.done[i] = true;
            if !p.queued[i] {
                p.queued[i] = true;
                let meta = p.work[i].meta();
                exec.dispatcher.emit(Event::Queued {
                    unit: meta.unit,
                    label: meta.label,
                    kind: meta.kind,
                });
            }
            jobs.push(p.work[i].job());
        }
        jobs
    }

    /// Waits for the phase's batches, collecting each as it ends. Returns the requests to
    /// send again (errored or expired, within the retry budget), or `Stopped` when the wait
    /// ended early (Ctrl-C, `--deadline`, a refused key, an answer that could not be kept).
    async fn wait(&mut self, exec: &mut Execution, p: &mut Phase<'_>) -> Waited {
        let started = Instant::now();
        let mut display = WaitDisplay::new(&self.printer, started, self.wait_line);
        let mut retry = Vec::new();
        // `rlm cancel` waits for its canceled batches on a bound of its own (the run's
        // `--deadline` does not apply to it).
        let give_up = self.cancel.then(|| started + self.cancel_wait);
        while !p.batches.is_empty() {
            let next = p.batches.iter().map(|b| b.next_poll).min().unwrap_or_else(Instant::now);
            display.show(p, next);
            // The display is refreshed between polls (the bar's clock every second, a line
            // a minute without a terminal), however far apart the polls are.
            let wake = display.next_refresh().map_or(next, |at| at.min(next));
            let wake = give_up.map_or(wake, |at| at.min(wake));
            match exec.pause(wake).await {
                Pause::Elapsed if give_up.is_some_and(|at| Instant::now() >= at) => {
                    self.leave(exec, p, Left::CancelWait);
                    return Waited::Stopped;
                }
                Pause::Elapsed => {}
                Pause::Interrupted => {
                    self.leave(exec, p, Left::Interrupted);
                    return Waited::Stopped;
                }
                Pause::DeadlinePassed => {
                    self.leave(exec, p, Left::Deadline);
                    return Waited::Stopped;
                }
            }
            if Instant::now() < next {
                continue;
            }
            let now = Instant::now();
            let mut i = 0;
            while i < p.batches.len() {
                if p.batches[i].next_poll > now {
                    i += 1;
                    continue;
                }
                let polled = self.api.poll(&p.batches[i].batch_id).await;
                match polled {
                    Ok(state) => {
                        self.store_write(|s, run| s.record_batch_poll(run, &state));
                        exec.dispatcher.emit(Event::BatchPolled {
                            batch_id: state.batch_id.clone(),
                            status: state.status,
                            counts: state.counts,
                        });
                        let b = &mut p.batches[i];
                        b.counts = state.counts;
                        if state.has_ended() {
                            let b = p.batches.remove(i);
                            display.ended(&b.batch_id, state.status);
                            let collected = self.collect(exec, p, b, state, &mut retry).await;
                            // The batch's results file and replies are freed.
                            crate::memory::release_free();
                            if collected == Collected::Stopped {
                                self.leave(exec, p, Left::Stopped);
                                return Waited::Stopped;
                            }
                            continue;
                        }
                        b.polls += 1;
                        let delay = self.schedule.delay(b.polls);
                        // A canceled batch ends soon: `rlm cancel` polls it often.
                        let delay = if self.cancel {
                            delay.min(CANCEL_POLL_MOST)
                        } else {
                            delay
                        };
                        b.next_poll = now + delay;
                    }
                    Err(e) if e.is_retryable() => {
                        tracing::debug!(batch = %p.batches[i].batch_id, "poll failed, trying again later: {e}");
                        let b = &mut p.batches[i];
                        b.polls += 1;
                        b.next_poll = now + e.retry_after().unwrap_or_else(|| self.schedule.delay(b.polls));
                    }
                    Err(e @ BatchError::UnknownBatch { .. }) if self.forget => {
                        let b = p.batches.remove(i);
                        self.give_up(exec, &b.batch_id, &b.custom_ids, &e.to_string());
                        for c in &b.custom_ids {
                            if let Some(&k) = p.by_custom.get(c.as_str()) {
                                self.cancelled(
                                    exec,
                                    p,
                                    k,
                                    "not run: its batch was given up (rlm cancel --forget); rlm resume sends it",
                                );
                            }
                        }
                        continue;
                    }
                    Err(e @ BatchError::UnknownBatch { .. }) => {
                        // Deleted, or another key's: its requests may be running, and paid
                        // for, under that key. They are never sent again unasked.
                        self.unknown(exec, &e);
                        self.leave(exec, p, Left::Stopped);
                        return Waited::Stopped;
                    }
                    Err(e) => {
                        exec.dispatcher
                            .halt(super::dispatcher::StopReason::Fatal(format!("--batch-api: {e}")));
                        self.leave(exec, p, Left::Stopped);
                        return Waited::Stopped;
                    }
                }
                i += 1;
            }
        }
        Waited::Done(retry)
    }

    /// Reads an ended batch's results and keeps them (see the module doc). Requests to send
    /// again go into `retry`.
    async fn collect(
        &mut self,
        exec: &mut Execution,
        p: &mut Phase<'_>,
        b: Waiting,
        state: BatchState,
        retry: &mut Vec<usize>,
    ) -> Collected {
        let mut expected: HashSet<usize> = b
            .custom_ids
            .iter()
            .filter_map(|c| p.by_custom.get(c.as_str()).copied())
            .filter(|&i| !p.done[i])
            .collect();
        let mut seen: HashSet<usize> = HashSet::new();
        let mut outcomes: Vec<(String, &'static str, Option<String>)> = Vec::new();
        let mut keeping: JoinSet<(usize, JobOutcome)> = JoinSet::new();
        let mut stopped = false;
        let mut unread: Option<String> = None;
        if state.status == BatchStatus::Failed
            && state.over_token_limit
            && (expected.len() > 1 || !p.batches.is_empty())
        {
            self.requeue(exec, p, &b, expected);
            return Collected::Kept;
        }
        let mut attempt = 0;
        'read: loop {
            attempt += 1;
            let mut stream = match self.api.results(&state).await {
                Ok(stream) => stream,
                Err(BatchError::Failed { reason, .. }) => {
                    // The provider refused the whole batch (its input did not validate).
                    for &i in &expected {
                        outcomes.push((p.custom_ids[i].clone(), "errored", Some(reason.clone())));
                        self.fail(
                            exec,
                            p,
                            i,
                            format!("the provider refused batch {}: {reason}", b.batch_id),
                        );
                    }
                    expected.clear();
                    break 'read;
                }
                Err(e) if e.is_retryable() && attempt < RESULT_ATTEMPTS => continue,
                Err(e) => {
                    unread = Some(e.to_string());
                    break 'read;
                }
            };
            while let Some(next) = stream.next().await {
                let result = match next {
                    Ok(result) => result,
                    // A line that cannot be read (the stream goes on past it; its request,
                    // never seen, is sent again).
                    Err(BatchError::Malformed { reason, .. }) => {
                        tracing::debug!(batch = %b.batch_id, "a malformed result line: {reason}");
                        continue;
                    }
                    Err(e) if attempt < RESULT_ATTEMPTS => {
                        // The transfer broke: read them again, keeping what is kept.
                        tracing::debug!(batch = %b.batch_id, "reading the results again: {e}");
                        continue 'read;
                    }
                    Err(e) => {
                        unread = Some(e.to_string());
                        break 'read;
                    }
                };
                let Some(&i) = p.by_custom.get(result.custom_id.as_str()) else {
                    continue;
                };
                if !expected.contains(&i) || !seen.insert(i) {
                    continue;
                }
                match result.outcome {
                    ItemOutcome::Succeeded(reply) => {
                        keeping.spawn(keep_result(
                            exec.jobs.clone(),
                            p.work[i].owned(),
                            reply,
                            (b.submitted, i),
                            !self.cancel,
                        ));
                        while keeping.len() >= KEEPING {
                            if !self.kept(exec, p, &mut keeping, &mut outcomes).await {
                                stopped = true;
                                break 'read;
                            }
                        }
                    }
                    ItemOutcome::Errored { reason, retryable } => {
                        outcomes.push((p.custom_ids[i].clone(), "errored", Some(reason.clone())));
                        expected.remove(&i);
                        if retryable {
                            self.again_or_fail(exec, p, i, retry, &format!("errored at the provider: {reason}"));
                        } else {
                            self.fail(exec, p, i, format!("errored at the provider: {reason}"));
                        }
                    }
                    ItemOutcome::Expired => {
                        outcomes.push((p.custom_ids[i].clone(), "expired", None));
                        expected.remove(&i);
                        self.again_or_fail(exec, p, i, retry, "expired at the provider (not run within 24 hours)");
                    }
                    ItemOutcome::Canceled => {
                        outcomes.push((p.custom_ids[i].clone(), "canceled", None));
                        expected.remove(&i);
                        self.cancelled(
                            exec,
                            p,
                            i,
                            "canceled at the provider before it ran: not run (rlm resume sends it again)",
                        );
                    }
                }
                if outcomes.len() >= OUTCOMES_PER_WRITE {
                    self.record_outcomes(&b.batch_id, &mut outcomes);
                }
            }
            break 'read;
        }
        while !keeping.is_empty() {
            if !self.kept(exec, p, &mut keeping, &mut outcomes).await {
                stopped = true;
            }
        }
        for (i, _) in p.work.iter().enumerate() {
            if p.done[i] {
                expected.remove(&i);
            }
        }
        self.record_outcomes(&b.batch_id, &mut outcomes);
        if stopped {
            return Collected::Stopped;
        }
        if let Some(e) = unread {
            // The results are at the provider, paid for: a later resume reads them.
            exec.dispatcher.emit(Event::Warning {
                message: format!(
                    "the results of batch {} cannot be read now ({e}): `rlm resume {}` reads them later",
                    b.batch_id, self.run
                ),
            });
            let reason = format!(
                "its result in batch {} could not be read: `rlm resume {}` collects it",
                b.batch_id, self.run
            );
            for i in expected {
                self.cancelled(exec, p, i, &reason);
            }
            return Collected::Kept;
        }
        // A request the results do not mention has no answer: it is sent again (said, since
        // the provider may count it as succeeded).
        if !expected.is_empty() {
            let what = if self.cancel {
                "they are not run (rlm resume sends them)"
            } else {
                "they are sent again, within --retries"
            };
            exec.dispatcher.emit(Event::Warning {
                message: format!(
                    "the results of batch {} have no entry for {} of its requests (the provider counts {} succeeded): \
                     {what}",
                    b.batch_id,
                    expected.len(),
                    state.counts.succeeded
                ),
            });
        }
        for i in expected {
            self.again_or_fail(exec, p, i, retry, "the batch's results have no entry for it");
        }
        self.store_write(|s, run| s.record_batch_collected(run, &b.batch_id));
        if state.status == BatchStatus::Canceled || b.cancel_requested {
            tracing::debug!(batch = %b.batch_id, "a canceled batch collected");
        }
        Collected::Kept
    }

    /// Batch `b` was refused for the account's enqueued-token limit (OpenAI
    /// `token_limit_exceeded`; nothing ran): its requests `expected` are submitted again in
    /// batches half its size, once the phase's other batches have ended. The refused send
    /// does not count against `--retries`. (A single request refused while no other batch
    /// of the phase waits fails as the refusal says.)
    fn requeue(&mut self, exec: &mut Execution, p: &mut Phase<'_>, b: &Waiting, expected: HashSet<usize>) {
        let half = (expected.len() / 2).max(1);
        p.max_requests = Some(p.max_requests.map_or(half, |n| n.min(half)));
        exec.dispatcher.emit(Event::Warning {
            message: format!(
                "batch {} was refused: the tokens enqueued at {} would pass the account's limit \
                 (token_limit_exceeded); its {} requests go again in batches of at most {half}, once the run's \
                 other batches have ended",
                b.batch_id,
                self.api.server(),
                expected.len(),
            ),
        });
        for i in expected {
            if let Some(n) = self.sent.get_mut(p.work[i].id().as_str()) {
                *n = n.saturating_sub(1);
            }
            p.in_flight[i] = false;
            p.requeue.push(i);
        }
        self.store_write(|s, run| s.record_batch_collected(run, &b.batch_id));
    }

    /// Hears the next kept result; false when dispatching must stop (an answer could not be
    /// written, a refused key on a `--schema` retry).
    async fn kept(
        &mut self,
        exec: &mut Execution,
        p: &mut Phase<'_>,
        keeping: &mut JoinSet<(usize, JobOutcome)>,
        outcomes: &mut Vec<(String, &'static str, Option<String>)>,
    ) -> bool {
        let Some(joined) = keeping.join_next().await else {
            return true;
        };
        let (i, mut outcome) = match joined {
            Ok(kept) => kept,
            Err(e) => {
                tracing::debug!("keeping a batch result failed: {e}");
                return true;
            }
        };
        p.done[i] = true;
        outcome.attempts = self.sent.get(p.work[i].id().as_str()).copied().unwrap_or(1);
        outcomes.push((p.custom_ids[i].clone(), "succeeded", None));
        if outcome.failure.is_none() {
            self.cancel_summary.kept += 1;
        }
        let write_failed = outcome.write_error.is_some();
        let fatal = matches!(outcome.failure, Some(JobFailure::Fatal(_)));
        exec.dispatcher.finished(outcome);
        !(write_failed || fatal)
    }

    /// Sends request `i` again (when its unit has sends left) or fails it.
    fn again_or_fail(&mut self, exec: &mut Execution, p: &mut Phase<'_>, i: usize, retry: &mut Vec<usize>, why: &str) {
        let sent = self.sent.get(p.work[i].id().as_str()).copied().unwrap_or(1);
        if self.cancel {
            self.cancelled(
                exec,
                p,
                i,
                &format!("{why}; not sent again: rlm cancel stopped the run"),
            );
        } else if sent <= self.retries {
            p.in_flight[i] = false;
            retry.push(i);
        } else {
            let tries = if sent == 1 { "send" } else { "sends" };
            self.fail(exec, p, i, format!("{why} (after {sent} {tries})"));
        }
    }

    fn fail(&mut self, exec: &mut Execution, p: &mut Phase<'_>, i: usize, reason: String) {
        if std::mem::replace(&mut p.done[i], true) {
            return;
        }
        let mut outcome = JobOutcome::new(p.work[i].meta());
        outcome.attempts = self.sent.get(p.work[i].id().as_str()).copied().unwrap_or(0);
        exec.dispatcher.finished(outcome.failed(reason));
    }

    fn cancelled(&mut self, exec: &mut Execution, p: &mut Phase<'_>, i: usize, reason: &str) {
        if std::mem::replace(&mut p.done[i], true) {
            return;
        }
        self.cancel_summary.not_run += 1;
        let meta = p.work[i].meta();
        exec.dispatcher.emit(Event::Cancelled {
            unit: meta.unit,
            label: meta.label,
            kind: meta.kind,
            reason: reason.to_string(),
        });
    }

    /// A recorded batch the server does not know: the run stops, naming the batch and the
    /// server, and says how to give it up.
    fn unknown(&mut self, exec: &mut Execution, e: &BatchError) {
        self.refused = true;
        let run = &self.run;
        exec.dispatcher.halt(super::dispatcher::StopReason::Fatal(format!(
            "--batch-api: {e}. rlm does not send its requests again (they may be running, and paid for, under \
             that key): use the API key it was submitted with, or give it up with `rlm cancel {run} --forget` \
             (then `rlm resume {run}` sends them again, and pays again)"
        )));
    }

    /// The wait ended early: the batches keep running at the provider, and the run says
    /// how to collect them.
    fn leave(&mut self, exec: &mut Execution, p: &mut Phase<'_>, why: Left) {
        let run = self.run.clone();
        let keeps = format!(
            "the batch keeps running at the provider; `rlm resume {run}` collects it, `rlm cancel {run}` cancels it"
        );
        match why {
            Left::Interrupted => self.printer.important(&keeps),
            Left::Deadline => self
                .printer
                .important(&format!("rlm: the --deadline passed while waiting: {keeps}")),
            Left::Stopped if !p.batches.is_empty() => self.printer.important(&format!(
                "rlm: the batches not collected stay at the provider: `rlm resume {run}` collects them, \
                 `rlm cancel {run}` cancels them"
            )),
            Left::Stopped => {}
            Left::CancelWait => self.printer.important(&format!(
                "rlm: the canceled batches have not ended within {}: `rlm cancel {run}` again, or `rlm resume \
                 {run}`, collects what they had finished",
                format_duration(u64::try_from(self.cancel_wait.as_millis()).unwrap_or(u64::MAX))
            )),
        }
        let batches = std::mem::take(&mut p.batches);
        for b in batches {
            let reason = format!(
                "waiting in batch {} at the provider: `rlm resume {run}` collects it",
                b.batch_id
            );
            for c in &b.custom_ids {
                if let Some(&i) = p.by_custom.get(c.as_str()) {
                    self.cancelled(exec, p, i, &reason);
                }
            }
        }
    }

    fn record_outcomes(&mut self, batch_id: &str, outcomes: &mut Vec<(String, &'static str, Option<String>)>) {
        if outcomes.is_empty() {
            return;
        }
        let taken = std::mem::take(outcomes);
        let rows: Vec<RequestOutcome<'_>> = taken
            .iter()
            .map(|(custom_id, outcome, reason)| RequestOutcome {
                custom_id,
                outcome,
                reason: reason.as_deref(),
            })
            .collect();
        self.store_write(|s, run| s.record_batch_outcomes(run, batch_id, &rows));
    }

    /// A store write whose failure is said once and stops nothing (the answers are in the
    /// cache and the run directory either way).
    fn store_write(&mut self, write: impl FnOnce(&mut TaskStore, &RunId) -> Result<(), crate::store::StoreError>) {
        if let Err(e) = write(&mut self.store, &self.run) {
            if self.store_failure.is_none() {
                self.printer.warn(&format!(
                    "the run store could not record a batch ({e}); rlm status may not show it"
                ));
                self.store_failure = Some(e.to_string());
            }
        }
    }
}

/// The run store's side of a phase's submissions: each intent written before its create
/// request is sent, each batch (with its requests' unit ids) once it exists, settling the
/// intent in the same transaction.
struct RunRecorder<'s, 'w> {
    store: &'s mut TaskStore,
    run: &'s RunId,
    /// The first failure to write the store.
    failure: &'s mut Option<String>,
    provider: &'static str,
    server: String,
    phase: &'static str,
    work: &'s [Work<'w>],
    by_custom: &'s HashMap<String, usize>,
    submissions: &'s mut u64,
    /// The batches recorded, in order.
    recorded: Vec<Submitted>,
    /// What the user should hear.
    notices: Vec<String>,
}

impl RunRecorder<'_, '_> {
    /// `(custom_id, unit_id)` of the requests `custom_ids`.
    fn requests(&self, custom_ids: &[String]) -> Vec<(String, String)> {
        custom_ids
            .iter()
            .filter_map(|c| {
                self.by_custom
                    .get(c.as_str())
                    .map(|&i| (c.clone(), self.work[i].id().to_string()))
            })
            .collect()
    }

    fn failed(&mut self, e: &crate::store::StoreError) -> String {
        self.failure.get_or_insert(e.to_string());
        e.to_string()
    }
}

impl Recorder for RunRecorder<'_, '_> {
    fn intend(&mut self, custom_ids: &[String]) -> Result<SubmissionTag, String> {
        *self.submissions += 1;
        let tag = SubmissionTag {
            run: self.run.to_string(),
            token: new_token(*self.submissions),
        };
        let requests = self.requests(custom_ids);
        let intent = NewBatchIntent {
            token: &tag.token,
            provider: self.provider,
            server: &self.server,
            phase: self.phase,
            requests: &requests,
        };
        match self.store.record_batch_intent(self.run, &intent) {
            Ok(()) => Ok(tag),
            Err(e) => Err(self.failed(&e)),
        }
    }

    fn record(&mut self, submitted: &Submitted, tag: &SubmissionTag) -> Result<(), String> {
        let requests = self.requests(&submitted.custom_ids);
        let batch = NewBatchSubmission {
            state: &submitted.state,
            provider: self.provider,
            server: &self.server,
            phase: self.phase,
            requests: &requests,
            token: Some(&tag.token),
        };
        if let Err(e) = self.store.record_batch_submission(self.run, &batch) {
            return Err(self.failed(&e));
        }
        self.recorded.push(submitted.clone());
        Ok(())
    }

    fn void(&mut self, tag: &SubmissionTag) {
        if let Err(e) = self.store.drop_batch_intent(self.run, &tag.token) {
            // Left in the store, the intent is looked for at the next resume: harmless.
            tracing::debug!("the run store could not drop an intent: {e}");
        }
    }

    fn known(&self) -> HashSet<String> {
        self.store.known_batch_ids().unwrap_or_default()
    }

    fn notice(&mut self, message: String) {
        self.notices.push(message);
    }
}

/// The phase name of aggregation batches (`--batch-api all`).
const AGGREGATE: &str = "aggregate";

/// One request of a phase: a unit, or an aggregation call.
#[derive(Clone, Copy)]
enum Work<'a> {
    Unit(&'a WorkUnit),
    Summary(&'a SummaryJob),
}

impl Work<'_> {
    fn id(&self) -> &UnitId {
        match self {
            Work::Unit(u) => &u.id,
            Work::Summary(s) => &s.id,
        }
    }

    fn meta(&self) -> JobMeta {
        match self {
            Work::Unit(u) => JobMeta {
                unit: u.id.clone(),
                label: u.label.clone(),
                kind: UnitKind::Map,
            },
            Work::Summary(s) => JobMeta {
                unit: s.id.clone(),
                label: s.label.clone(),
                kind: UnitKind::Aggregate,
            },
        }
    }

    /// The realtime job of the same request.
    fn job(&self) -> Job {
        match self {
            Work::Unit(u) => Job::Unit((*u).clone()),
            Work::Summary(s) => Job::Summary((*s).clone()),
        }
    }

    /// An owned copy, to keep a result off the reader.
    fn owned(&self) -> Owned {
        match self {
            Work::Unit(u) => Owned::Unit((*u).clone()),
            Work::Summary(s) => Owned::Summary((*s).clone()),
        }
    }
}

/// [`Work`], owned.
enum Owned {
    Unit(WorkUnit),
    Summary(SummaryJob),
}

/// One request of a batch, rendered now (and, for a unit, its prompt kept in the run
/// directory as a realtime call keeps it).
fn item(ctx: &JobContext, work: Work<'_>) -> BatchItem {
    let request = match work {
        Work::Unit(unit) => {
            let rendered = request::render(unit, &ctx.requests);
            job::keep_prompt(ctx, unit, &rendered.request);
            rendered.request
        }
        Work::Summary(s) => job::summary_call(ctx, s).request,
    };
    BatchItem {
        custom_id: custom_id_for(work.id().as_str()),
        request,
    }
}

/// Keeps one succeeded result as a realtime answer is kept: read against the request it
/// answers (rendered again: the same bytes), an invalid `--schema` answer asked for once
/// more in realtime (unless `may_call` is false: `rlm cancel` calls no model, and the
/// unit fails), then cached and written.
async fn keep_result(
    ctx: Arc<JobContext>,
    work: Owned,
    reply: Reply,
    (submitted, index): (Instant, usize),
    may_call: bool,
) -> (usize, JobOutcome) {
    let waited = u64::try_from(submitted.elapsed().as_millis()).unwrap_or(u64::MAX);
    let outcome = match work {
        Owned::Unit(unit) => {
            let meta = Work::Unit(&unit).meta();
            let rendered = request::render(&unit, &ctx.requests);
            let mut outcome = answered(&ctx, meta, &reply, &rendered.request, waited);
            if rendered.expect == Expect::Schema {
                if let Some(schema) = &ctx.requests.schema {
                    if may_call {
                        outcome = super::conform::conform(&ctx, schema, &rendered.request, &unit, outcome).await;
                        outcome.duration_ms = waited;
                    } else if let Some(text) = outcome.text.take() {
                        match schema.check(&text) {
                            Ok(value) => outcome.text = Some(crate::schema::canonical_text(&value)),
                            Err(rejection) => {
                                outcome = outcome.failed(format!(
                                    "the answer does not conform to --schema {}: {}; not asked again (rlm cancel \
                                     calls no model; rlm resume --failed asks again)",
                                    schema.path.display(),
                                    rejection.first()
                                ));
                            }
                        }
                    }
                }
            }
            match outcome.text.take().filter(|_| outcome.failure.is_none()) {
                Some(text) => job::keep_paid(ctx, unit, rendered, text, outcome, None).await,
                None => outcome,
            }
        }
        Owned::Summary(summary) => {
            let meta = Work::Summary(&summary).meta();
            let call = job::summary_call(&ctx, &summary);
            let mut outcome = answered(&ctx, meta, &reply, &call.request, waited);
            match outcome.text.take().filter(|_| outcome.failure.is_none()) {
                Some(text) => job::keep_summary(&ctx, call, &summary.label, text, outcome, None).await,
                None => outcome,
            }
        }
    };
    (index, outcome)
}

/// A reply read as the realtime call's would be: its text (an empty one is a failure) and
/// its usage, at the batch price; logged to `--save-trajectory`.
fn answered(
    ctx: &JobContext,
    meta: JobMeta,
    reply: &Reply,
    request: &crate::provider::CompletionRequest,
    waited: u64,
) -> JobOutcome {
    let mut outcome = JobOutcome::new(meta);
    outcome.duration_ms = waited;
    outcome.batch_usage = reply.usage();
    let completion = reply.completion(request);
    if let Some(trajectory) = &ctx.trajectory {
        let (response, error) = match &completion {
            Ok(c) => (Some(c.text.as_str()), None),
            Err(e) => (None, Some(e.as_str())),
        };
        let warning = trajectory.record(&super::trajectory::CallRecord {
            unit: outcome.meta.unit.as_str(),
            label: &outcome.meta.label,
            model: &ctx.requests.model,
            request,
            response,
            error,
            usage: outcome.batch_usage,
            duration_ms: waited,
            attempts: 1,
        });
        if let Some(message) = warning {
            let _ = ctx.call.events.send(Event::Warning { message });
        }
    }
    match completion {
        Ok(c) if c.text.trim().is_empty() => outcome.failed(format!(
            "the model returned an empty answer (stop reason: {})",
            c.stop_reason.as_deref().unwrap_or("none")
        )),
        Ok(c) => {
            outcome.truncated = c.truncated;
            outcome.text = Some(c.text);
            outcome
        }
        Err(reason) => outcome.failed(format!("the batch result could not be read: {reason}")),
    }
}

/// A phase's requests and where each one is.
struct Phase<'a> {
    name: &'static str,
    work: Vec<Work<'a>>,
    custom_ids: Vec<String>,
    by_custom: HashMap<String, usize>,
    /// Announced to the reporters (`task:queued`).
    queued: Vec<bool>,
    /// In a batch at the provider.
    in_flight: Vec<bool>,
    /// Has its outcome (kept, failed, cancelled, or handed to a realtime call).
    done: Vec<bool>,
    /// The batches waited for.
    batches: Vec<Waiting>,
    /// At most this many requests a batch (after a refusal for the enqueued-token limit).
    max_requests: Option<usize>,
    /// Requests to submit again once the phase's batches have ended (see
    /// [`BatchApiRun::requeue`]).
    requeue: Vec<usize>,
}

impl<'a> Phase<'a> {
    fn new(name: &'static str, work: Vec<Work<'a>>) -> Self {
        let custom_ids: Vec<String> = work.iter().map(|w| custom_id_for(w.id().as_str())).collect();
        let by_custom = custom_ids.iter().enumerate().map(|(i, c)| (c.clone(), i)).collect();
        let n = work.len();
        Phase {
            name,
            work,
            custom_ids,
            by_custom,
            queued: vec![false; n],
            in_flight: vec![false; n],
            done: vec![false; n],
            batches: Vec::new(),
            max_requests: None,
            requeue: Vec::new(),
        }
    }

    fn announce(&mut self, exec: &mut Execution, i: usize) {
        if std::mem::replace(&mut self.queued[i], true) {
            return;
        }
        let meta = self.work[i].meta();
        exec.dispatcher.emit(Event::Queued {
            unit: meta.unit,
            label: meta.label,
            kind: meta.kind,
        });
    }
}

/// A batch being waited for.
struct Waiting {
    batch_id: String,
    /// The custom ids of this phase's requests in it.
    custom_ids: Vec<String>,
    polls: u32,
    next_poll: Instant,
    /// When this attempt started waiting for it.
    submitted: Instant,
    /// At the last poll.
    counts: BatchCounts,
    cancel_requested: bool,
}

/// How a wait ended.
enum Waited {
    /// Every batch was collected; these requests are to be sent again.
    Done(Vec<usize>),
    Stopped,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Collected {
    Kept,
    /// Dispatching stopped while collecting.
    Stopped,
}

/// Why the wait was left.
#[derive(Debug, Clone, Copy)]
enum Left {
    Interrupted,
    Deadline,
    Stopped,
    /// `rlm cancel`'s canceled batches did not end within its own wait.
    CancelWait,
}

/// What the wait shows: a bar on a terminal (its text refreshed every [`BAR_TICK`]), a line
/// every `line_every` (a minute) without one.
struct WaitDisplay {
    printer: Printer,
    kind: ProgressStyleKind,
    started: Instant,
    line_every: Duration,
    last_line: Option<Instant>,
}

impl WaitDisplay {
    fn new(printer: &Printer, started: Instant, line_every: Duration) -> Self {
        WaitDisplay {
            printer: printer.clone(),
            kind: printer.progress_kind(),
            started,
            line_every,
            last_line: None,
        }
    }

    /// When the display is next due to change, if it ever changes between polls.
    fn next_refresh(&self) -> Option<Instant> {
        match self.kind {
            ProgressStyleKind::Bar => Some(Instant::now() + BAR_TICK),
            ProgressStyleKind::Lines => Some(self.last_line.map_or_else(Instant::now, |at| at + self.line_every)),
            ProgressStyleKind::Off => None,
        }
    }

    fn show(&mut self, p: &Phase<'_>, next: Instant) {
        let (mut done, mut errored, mut total) = (0, 0, 0);
        for b in &p.batches {
            let in_batch = b.custom_ids.len() as u64;
            total += in_batch;
            done += b.counts.done().min(in_batch);
            errored += b.counts.errored + b.counts.expired;
        }
        let now = Instant::now();
        let waited = format_duration(u64::try_from(now.duration_since(self.started).as_millis()).unwrap_or(0));
        let next_in = format_duration(u64::try_from(next.saturating_duration_since(now).as_millis()).unwrap_or(0));
        let batches = match p.batches.len() {
            1 => "1 batch".to_string(),
            n => format!("{n} batches"),
        };
        match self.kind {
            ProgressStyleKind::Bar => self.printer.update_bar(
                done,
                total,
                format!("{batches} at the provider · {errored} errored · waited {waited} · next poll in {next_in}"),
            ),
            ProgressStyleKind::Lines => {
                if self
                    .last_line
                    .is_some_and(|at| now.duration_since(at) < self.line_every)
                {
                    return;
                }
                self.last_line = Some(now);
                self.printer.progress(&format!(
                    "waiting for {batches} at the provider: {done}/{total} done, {errored} errored · waited {waited} \
                     · next poll in {next_in}"
                ));
            }
            ProgressStyleKind::Off => {}
        }
    }

    /// A batch has ended: its results are read now.
    fn ended(&self, batch_id: &str, status: BatchStatus) {
        if self.kind == ProgressStyleKind::Lines {
            let waited = format_duration(u64::try_from(self.started.elapsed().as_millis()).unwrap_or(0));
            self.printer.progress(&format!(
                "batch {batch_id} is {status} after {waited} of waiting: collecting its results"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tiers_follow_the_delivery() {
        assert_eq!(Delivery::Realtime.unit_tier(), PriceTier::Realtime);
        let units = Delivery::BatchApi { aggregation: false };
        assert_eq!(
            (units.unit_tier(), units.aggregate_tier()),
            (PriceTier::Batch, PriceTier::Realtime)
        );
        let all = Delivery::BatchApi { aggregation: true };
        assert_eq!(all.aggregate_tier(), PriceTier::Batch);
    }
}

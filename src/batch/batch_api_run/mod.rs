//! The batch-API stage (issue 18): with `--batch-api`, the units that miss the cache — and
//! under `--batch-api all` the aggregation calls, phase by phase — go through the
//! provider's batch API instead of realtime calls, at half the price. It is the one stage
//! for every path (issue 24): a job's phase runs its batches of items on it too, as the
//! [`Host`] it works for ([`host`]: what a request is, how its answer is kept and counted).
//!
//! A phase ([`BatchApiRun::run_work`]) goes like this:
//! 1. **Submit.** Each request is rendered by the one renderer ([`crate::request::render`]; the
//!    same bytes a realtime call sends) as the submission is written, never all at once;
//!    [`crate::provider::batch_api::submit_all`] cuts submissions at the provider's limits. Each batch, with the custom
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
//! [`JobOutcome::batch_usage`], which the dispatcher prices at [`crate::provider::catalog::PriceTier::Batch`].
//!
//! This file drives the phases; each step is in a file of its own: [`submit`] (with the
//! reconcile of lost submissions and the realtime fallback), [`wait`], [`collect`] (a
//! succeeded result kept by [`keep`]), [`cancel`], and the delivery choice in [`delivery`].
//! [`open`] opens the stage of a run (or of one job phase); [`phase`] holds a phase's requests
//! and where each one is; [`recorder`] the run store's
//! side of a submission.

mod cancel;
mod claims;
mod collect;
mod delivery;
mod host;
mod keep;
mod open;
mod phase;
mod recorder;
mod settle;
mod submit;
mod wait;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use super::execution::Execution;
use super::job::{self, Job, JobOutcome, SummaryJob};
use crate::exec::{Event, PoolHandler};
use crate::plan::Budget;
use crate::printer::Printer;
use crate::provider::batch_api::{BatchApi, PollSchedule};
use crate::request;
use crate::settings::BatchFallback;
use crate::store::{BatchIntent, RunId, TaskStore};
use crate::unit::{UnitId, WorkUnit};

pub use cancel::{cancel_at_provider, cancel_each, CancelSummary};
pub use delivery::{delivery, refuse_batches_elsewhere, Delivery};
pub use host::{Heard, Host, Request, Stage};
use phase::{Phase, Work};
pub use recorder::RunRecorder;
pub use submit::submitted_within;
use wait::Waited;

/// A batch an earlier attempt of the run submitted and did not collect.
#[derive(Debug)]
struct Earlier {
    batch_id: String,
    phase: String,
    /// The server it was recorded at.
    server: String,
    /// `(custom_id, unit_id)` of its requests.
    requests: Vec<(String, String)>,
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
    sent: HashMap<UnitId, u32>,
    /// The first failure to write the store (said once).
    store_failure: Option<String>,
    /// Submissions of earlier attempts whose batch was never recorded (the reply to their
    /// create request never came): looked for at the provider before anything is sent.
    intents: Vec<BatchIntent>,
    /// Requests in a submission whose batch cannot be told yet (unit id → why): not sent
    /// again, not run; the next resume looks again.
    held: HashMap<String, String>,
    /// The candidates of each lost submission this attempt could not settle (none: the
    /// listing could not tell): `rlm cancel` cannot cancel what it cannot tell.
    unresolved: Vec<Vec<String>>,
    /// Submissions tagged so far by this attempt.
    submissions: u64,
    /// How long `rlm cancel` waits for its canceled batches to end.
    cancel_wait: Duration,
    /// What resumes the run, as messages say it (`rlm resume RUN`, `rlm job resume JOB`).
    resume: String,
    /// `rlm cancel --forget` can give its batches up (not a job's).
    forgettable: bool,
    /// Requests not sent yet are submitted; else (a job's `--batch-api` turned off since)
    /// only the batches sent before are collected, and the rest go realtime.
    submit_new: bool,
    /// What `rlm cancel` found and did.
    pub cancel_summary: CancelSummary,
}

impl BatchApiRun {
    /// Runs the requests `work` of phase `phase` (as the store records it) for `host`: the
    /// lost submissions of earlier attempts settled first, then the phase (see the module
    /// doc).
    pub async fn run_requests<W: Request, H: Host<W>>(&mut self, host: &mut H, work: Vec<W>, phase: &str) {
        self.reconcile_intents(host).await;
        self.run_work(host, work, phase).await;
    }

    /// Whether the aggregation calls go through the batch API too (`--batch-api all`).
    pub fn batches_aggregation(&self) -> bool {
        self.aggregation
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
                exec.dispatcher.emit(super::execution::failed_earlier(unit));
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
            let key = request::render_summary(&s.prompt, &ctx.requests).key;
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
    async fn run_phase<W: Request, H: Host<W>>(&mut self, exec: &mut H, work: Vec<W>, phase: &str) {
        if work.is_empty() {
            return;
        }
        let keys = work.iter().map(|&w| exec.key(w)).collect();
        let mut p = Phase::new(phase.to_string(), work, keys);
        self.take_earlier(&mut p);
        // The requests in batches of earlier attempts are announced before any is collected,
        // as those submitted now are: the progress counts them all (`[k/N]`).
        for i in 0..p.work.len() {
            if p.in_flight[i] {
                p.announce(exec, i);
            }
        }
        let mut to_send: Vec<usize> = (0..p.work.len()).filter(|&i| !p.in_flight[i]).collect();
        if !self.held.is_empty() {
            // In a submission whose batch cannot be told yet: not sent again.
            to_send.retain(|&i| match self.held.get(p.work[i].id().as_str()).cloned() {
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
            if !self.submit_new {
                // Collected only: what is not in a batch already goes realtime.
                realtime = std::mem::take(&mut to_send);
            }
            if !to_send.is_empty() {
                let send = std::mem::take(&mut to_send);
                if exec.may_submit() {
                    realtime = self.submit(exec, &mut p, send).await;
                }
            }
            if !realtime.is_empty() && exec.may_call() {
                self.run_realtime(exec, &mut p, realtime).await;
            }
            if p.batches.is_empty() {
                // What is left waits for other runs' answers to the same requests.
                match self.wait_for_others(exec, &mut p).await {
                    Some(send) if !send.is_empty() => {
                        to_send = send;
                        continue;
                    }
                    Some(_) if !p.batches.is_empty() => {}
                    _ => break,
                }
            }
            match self.wait(exec, &mut p).await {
                Waited::Stopped => return,
                Waited::Done(retry) if retry.is_empty() => {}
                Waited::Done(retry) if self.fallback == BatchFallback::Realtime => {
                    if exec.may_call() {
                        self.run_realtime(exec, &mut p, retry).await;
                    }
                }
                Waited::Done(retry) => {
                    self.printer.progress(&format!(
                        "{}: {} requests errored or expired at the provider (or were canceled before they ran): sent \
                         again in a follow-up batch",
                        p.name,
                        retry.len()
                    ));
                    to_send = retry;
                }
            }
            // Refused for the account's enqueued-token limit: again, smaller, now that the
            // phase's other batches have ended.
            to_send.append(&mut p.requeue);
            if !p.awaiting.is_empty() && exec.may_submit() {
                let mut again = self.look_again(exec, &mut p).await;
                to_send.append(&mut again);
            }
            if p.batches.is_empty() && to_send.is_empty() && p.awaiting.is_empty() {
                break;
            }
        }
    }

    /// Runs one phase's requests (see [`BatchApiRun::run_phase`]), then lets go of the keys
    /// it claimed and never submitted (a budget, a stop).
    async fn run_work<W: Request, H: Host<W>>(&mut self, exec: &mut H, work: Vec<W>, phase: &str) {
        self.run_phase(exec, work, phase).await;
        self.store_write(TaskStore::release_unsent_claims);
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

/// The phase name of aggregation batches (`--batch-api all`).
const AGGREGATE: &str = "aggregate";

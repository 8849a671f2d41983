//! The executing part of a run: one pool, one limiter, one dispatcher and one interrupt
//! listener for every phase — the per-unit calls and the aggregation calls alike. With
//! `--batch-api`, a phase goes through the provider's batch API instead
//! ([`super::batch_api_run`]), heard by the same dispatcher.

use std::collections::HashSet;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;

use super::batch_api_run::BatchApiRun;
use super::dispatcher::{Dispatcher, StopReason};
use super::job::{run_job, Job, JobContext};
use crate::exec::{self, run_pool, Event, Interrupt, Limiter, PoolContext, PoolEnd, GRACE};
use crate::plan::Budget;
use crate::unit::{UnitId, UnitKind, WorkUnit};

/// How many more jobs than calls are admitted: a freed slot finds a job ready.
const ADMISSION_FACTOR: usize = 2;

/// A run from its first call to its last.
pub struct Execution {
    pub dispatcher: Dispatcher,
    pub jobs: Arc<JobContext>,
    events: UnboundedReceiver<Event>,
    /// What jobs report when their calls are paid for (see [`exec::Paid`]).
    paid: UnboundedReceiver<exec::Paid>,
    interrupt: Interrupt,
    limiter: Arc<Limiter>,
    width: usize,
    /// Ctrl-C or SIGTERM arrived.
    pub interrupted: bool,
    /// `--batch-api`: how phases go through the provider's batch API (`None`: realtime).
    pub batch_api: Option<Box<BatchApiRun>>,
}

/// How a wait between two batch polls ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pause {
    Elapsed,
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// `--deadline` passed.
    DeadlinePassed,
}

impl Execution {
    pub fn new(
        dispatcher: Dispatcher,
        jobs: Arc<JobContext>,
        (events, paid): (UnboundedReceiver<Event>, UnboundedReceiver<exec::Paid>),
        limiter: Arc<Limiter>,
        width: usize,
        deadline: Option<std::time::Instant>,
    ) -> Self {
        Execution {
            dispatcher,
            jobs,
            events,
            paid,
            // From here on, Ctrl-C and SIGTERM are heard instead of killing the process.
            interrupt: Interrupt::new().with_deadline(deadline),
            limiter,
            width,
            interrupted: false,
            batch_api: None,
        }
    }

    /// Runs one phase of jobs: through the pool, or (aggregation calls under
    /// `--batch-api all`) through the provider's batch API.
    pub async fn run_phase(&mut self, jobs: Vec<Job>) -> PoolEnd {
        if jobs.is_empty() {
            return PoolEnd::Completed;
        }
        let summaries = jobs.iter().all(|j| matches!(j, Job::Summary(_)));
        if summaries && self.batch_api.as_ref().is_some_and(|b| b.batches_aggregation()) {
            if let Some(mut batch_api) = self.batch_api.take() {
                batch_api.run_summaries(self, jobs).await;
                self.batch_api = Some(batch_api);
                return if self.interrupted {
                    PoolEnd::Interrupted
                } else {
                    PoolEnd::Completed
                };
            }
        }
        self.run_pool(jobs).await
    }

    /// Runs one phase of jobs through the pool, as realtime calls.
    pub async fn run_pool(&mut self, jobs: Vec<Job>) -> PoolEnd {
        for job in &jobs {
            let meta = exec::Job::meta(job);
            self.dispatcher.emit(Event::Queued {
                unit: meta.unit,
                label: meta.label,
                kind: meta.kind,
            });
        }
        self.run_announced(jobs).await
    }

    /// [`Execution::run_pool`] for jobs already announced to the reporters (`task:queued`).
    pub async fn run_announced(&mut self, jobs: Vec<Job>) -> PoolEnd {
        self.run_announced_within(jobs, None).await
    }

    /// [`Execution::run_announced`] with at most `retries` fault retries per call (fewer than
    /// `--retries`): a batch request's realtime fallback has spent part of the budget on its
    /// batch sends. The calls go through the run's one call context, the cap passed with
    /// each: a second context would start the run's shared counts (a server gone silent, its
    /// pushback) again from nothing.
    pub async fn run_announced_with_retries(&mut self, jobs: Vec<Job>, retries: u32) -> PoolEnd {
        self.run_announced_within(jobs, Some(retries)).await
    }

    /// The pool over `jobs`, each call with at most `fault_retries` fault retries (`None`:
    /// `--retries`).
    async fn run_announced_within(&mut self, jobs: Vec<Job>, fault_retries: Option<u32>) -> PoolEnd {
        if jobs.is_empty() {
            return PoolEnd::Completed;
        }
        let ctx = self.jobs.clone();
        let pool = PoolContext {
            events: &mut self.events,
            paid: &mut self.paid,
            interrupt: &mut self.interrupt,
            limiter: &self.limiter,
            admission: self.width * ADMISSION_FACTOR,
            grace: GRACE,
        };
        let end = run_pool(
            jobs,
            move |job| run_job(ctx.clone(), job, fault_retries),
            pool,
            &mut self.dispatcher,
        )
        .await;
        if end == PoolEnd::Interrupted {
            self.interrupted = true;
        }
        end
    }

    /// The map phase: every planned unit that missed the cache (those failed in an earlier
    /// attempt only under `rlm resume --failed`), then the files a batch's answer left out,
    /// each retried alone.
    pub async fn run_units(
        &mut self,
        units: &[WorkUnit],
        misses: &[usize],
        skip: Option<&HashSet<String>>,
        budget: Budget,
    ) {
        let mut jobs: Vec<Job> = Vec::with_capacity(misses.len());
        for &i in misses {
            let unit = &units[i];
            if skip.is_some_and(|s| s.contains(unit.id.as_str())) {
                self.dispatcher.emit(failed_earlier(unit));
            } else {
                jobs.push(Job::Unit(unit.clone()));
            }
        }
        self.run_phase(jobs).await;
        self.retry_members(units, budget).await;
    }

    /// Batch members without a usable answer, each as a unit of its own; when no more calls
    /// may be made, each is recorded as not run, with why — never left counted with its
    /// batch's success.
    async fn retry_members(&mut self, units: &[WorkUnit], budget: Budget) {
        let retried = self.members_to_retry(units, budget);
        if retried.is_empty() {
            return;
        }
        if !self.may_call() {
            self.members_not_run(&retried);
            return;
        }
        let jobs = retried.iter().map(|(_, m)| Job::Unit(m.clone())).collect();
        self.run_phase(jobs).await;
        self.merge_members(retried);
    }

    /// The members of batches of small files whose entry in the batch's answer was missing
    /// or invalid, each as a unit of its own (with the batch it belongs to).
    pub fn members_to_retry(&self, units: &[WorkUnit], budget: Budget) -> Vec<(UnitId, WorkUnit)> {
        let mut retried: Vec<(UnitId, WorkUnit)> = Vec::new();
        for unit in units {
            let Some(answers) = self.dispatcher.answers.get(&unit.id) else {
                continue;
            };
            for (index, why) in &answers.retry {
                if let Some(member) = crate::plan::member_unit(unit, *index, &self.jobs.requests, budget) {
                    tracing::debug!(unit = %unit.label, member = %member.label, why, "retrying a batch member alone");
                    retried.push((unit.id.clone(), member));
                }
            }
        }
        retried
    }

    /// Members that needed a call of their own when no more calls could be made: each is
    /// made known to the reporters and recorded as not run, with why (its batch's answer
    /// had no usable entry for it, and what stopped the run), so its file does not count as
    /// processed.
    pub fn members_not_run(&mut self, retried: &[(UnitId, WorkUnit)]) {
        let stopped = self.why_stopped();
        for (_, member) in retried {
            self.dispatcher.emit(Event::Queued {
                unit: member.id.clone(),
                label: member.label.clone(),
                kind: UnitKind::Map,
            });
            self.dispatcher.emit(Event::Cancelled {
                unit: member.id.clone(),
                label: member.label.clone(),
                kind: UnitKind::Map,
                reason: format!(
                    "not run: its batch's answer had no usable entry for it, and {stopped} before it could be asked \
                     alone (rlm resume asks it)"
                ),
            });
        }
    }

    /// The answers of members retried alone, back with the batch they belong to.
    pub fn merge_members(&mut self, retried: Vec<(UnitId, WorkUnit)>) {
        for (parent, member) in retried {
            let Some(answers) = self.dispatcher.answers.remove(&member.id) else {
                continue;
            };
            if let Some(parent) = self.dispatcher.answers.get_mut(&parent) {
                parent.files.extend(answers.files);
            }
        }
    }

    /// Whether more calls may be made: not interrupted, not halted (fatal error, budget,
    /// write failure).
    pub fn may_call(&self) -> bool {
        !self.interrupted && !self.limiter.is_halted() && self.dispatcher.over_budget().is_none()
    }

    /// Whether a batch may be submitted: calls may be made and the `--deadline` has not
    /// passed (checked now: a resume with no time left submits nothing).
    pub fn may_submit(&mut self) -> bool {
        !self.interrupt.check_deadline() && self.may_call()
    }

    /// `--deadline` is what stopped the run.
    pub fn deadline_passed(&self) -> bool {
        self.interrupt.deadline_passed
    }

    /// Waits until `until`, or until Ctrl-C, SIGTERM or the deadline, whichever comes
    /// first (the batch-API stage waits here between polls).
    pub async fn pause(&mut self, until: tokio::time::Instant) -> Pause {
        if self.interrupt.deadline_passed {
            return Pause::DeadlinePassed;
        }
        if self.interrupted {
            return Pause::Interrupted;
        }
        if self.interrupt.sleep_until(until).await {
            Pause::Elapsed
        } else if self.interrupt.deadline_passed {
            Pause::DeadlinePassed
        } else {
            self.interrupted = true;
            Pause::Interrupted
        }
    }

    /// The next of `tasks` to end, hearing meanwhile what the pool hears between its jobs:
    /// paid calls (their slots go back: a `--schema` re-ask made while a batch's results
    /// are kept holds one, and nobody else reads them then), events, and Ctrl-C, SIGTERM or
    /// the deadline (no call starts after them; a second Ctrl-C abandons what is left, which
    /// the provider keeps for `rlm resume`). `None` once `tasks` is empty.
    pub async fn join_heard<T: 'static>(
        &mut self,
        tasks: &mut tokio::task::JoinSet<T>,
    ) -> Option<Result<T, tokio::task::JoinError>> {
        loop {
            tokio::select! {
                biased;
                () = self.interrupt.recv() => {
                    if !self.interrupt.deadline_passed {
                        if self.interrupted {
                            tasks.abort_all();
                        }
                        self.interrupted = true;
                    }
                    self.limiter.halt();
                }
                Some(p) = self.paid.recv() => self.hear_paid(p),
                Some(event) = self.events.recv() => exec::PoolHandler::event(&mut self.dispatcher, event),
                joined = tasks.join_next() => {
                    while let Ok(event) = self.events.try_recv() {
                        exec::PoolHandler::event(&mut self.dispatcher, event);
                    }
                    while let Ok(p) = self.paid.try_recv() {
                        self.hear_paid(p);
                    }
                    return joined;
                }
            }
        }
    }

    fn hear_paid(&mut self, paid: exec::Paid) {
        if exec::PoolHandler::paid(&mut self.dispatcher, paid) != exec::Flow::Continue {
            self.limiter.halt();
        }
    }

    /// Why no more calls may be made, for the report.
    pub fn why_stopped(&self) -> &'static str {
        if self.interrupt.deadline_passed {
            "the --deadline passed"
        } else if self.interrupted {
            "the run was interrupted"
        } else {
            match self.dispatcher.stop {
                Some(StopReason::Budget(_)) => "the spend reached --max-cost",
                Some(StopReason::Deadline(_)) => "the --deadline passed",
                Some(StopReason::Fatal(_)) => "the provider refused the run",
                Some(StopReason::WriteFailed(_)) => "an answer could not be written",
                None if self.dispatcher.over_budget().is_some() => "the spend reached --max-cost",
                None => "the run stopped early",
            }
        }
    }
}

/// A unit an earlier attempt of a resumed run failed, which a plain `rlm resume` does not
/// ask again: still failed (as the store has it), not "not run", in the report and the
/// events alike.
pub(super) fn failed_earlier(unit: &WorkUnit) -> Event {
    Event::Failed {
        unit: unit.id.clone(),
        label: unit.label.clone(),
        kind: UnitKind::Map,
        attempts: 0,
        duration_ms: 0,
        usage: crate::provider::Usage::default(),
        cost_usd: 0.0,
        error: None,
        reason: "failed in an earlier attempt of the run: rlm resume --failed tries it again".into(),
    }
}

//! Who a batch-API phase works for ([`Host`]): a batch run ([`Execution`], its units and
//! aggregation calls) or a job's phase (`crate::job::batch_api`, its batches of items). The
//! stage — submit, claim, settle, wait, collect, send again — is one; the host says what a
//! request is, keeps its answer, counts it and says it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::{JoinError, JoinSet};
use tokio::time::Instant;

use super::keep::keep_result;
use super::phase::Work;
use crate::batch::dispatcher::StopReason;
use crate::batch::execution::{Execution, Pause};
use crate::batch::job::{self, JobFailure, JobOutcome};
use crate::cache::{Cache, CacheEntry};
use crate::exec::{Event, JobMeta, PoolHandler};
use crate::provider::batch_api::{BatchError, BatchItem, Reply};
use crate::request;
use crate::unit::UnitId;

/// One request of a phase, as the stage holds it (cheap to copy: a reference).
pub trait Request: Copy {
    /// Its unit: what the store records it under, and its custom id is made of.
    fn id(&self) -> &UnitId;
    /// What messages call it (a file, a chunk, a job's batch).
    fn label(&self) -> &str;
}

/// What the stage needs from whoever it works for, whatever its requests are: where it
/// speaks, how it waits, and whether it may go on.
pub trait Stage {
    /// An event of the stage: a warning, a batch submitted or polled.
    fn emit(&mut self, event: Event);
    /// The cache the claims are checked against, and the requests' `max_tokens`; `None`
    /// under `--no-cache` (no claims: the run wants its own answers).
    fn claims(&self) -> Option<(Cache, u32)>;
    /// How long to wait before the `attempt`th send of a submission that failed.
    fn backoff(&self, attempt: u32) -> Duration;
    /// What is left of `--max-cost` (`None` without one).
    fn budget_left(&self) -> Option<f64>;
    /// Stops the run for its budget: `reason` says why.
    fn stop_for_budget(&mut self, reason: String);
    /// Stops the run: the provider refused it.
    fn halt(&mut self, reason: String);
    /// Waits until `until`, or until Ctrl-C, SIGTERM or the deadline.
    fn pause(&mut self, until: Instant) -> impl Future<Output = Pause>;
    /// Whether a batch may be submitted (calls may be made, the deadline has not passed).
    fn may_submit(&mut self) -> bool;
    /// Whether more calls may be made.
    fn may_call(&self) -> bool;
    /// The next of `tasks` to end, hearing Ctrl-C meanwhile.
    fn join_heard<T: 'static>(&mut self, tasks: &mut JoinSet<T>) -> impl Future<Output = Option<Result<T, JoinError>>>;
    /// Why no more calls may be made.
    fn why_stopped(&self) -> &'static str;

    /// The server has no batch API (`e`): nothing was sent. The run stops.
    fn no_batch_api(&mut self, e: &BatchError) {
        self.halt(format!("--batch-api: {e}"));
    }

    /// An ended batch's results cannot be read now (`message` says which, and what reads
    /// them later); its requests are not run.
    fn results_unread(&mut self, message: String) {
        self.emit(Event::Warning { message });
    }
}

/// What a batch-API phase needs from whoever it works for, about its requests (see the
/// module doc).
pub trait Host<W: Request>: Stage {
    /// What keeping one succeeded result comes to, off the reader.
    type Kept: Send + 'static;

    /// Request `w` is made known (`task:queued`), once.
    fn announce(&mut self, w: W);
    /// Request `w` failed after `attempts` sends, for `reason` (nothing paid).
    fn fail(&mut self, w: W, attempts: u32, reason: String);
    /// Request `w` is not run, for `reason` (a resume runs it).
    fn cancelled(&mut self, w: W, reason: &str);
    /// Request `w`, answered meanwhile by another run: served from its cache entry.
    fn serve(&mut self, w: W, entry: Box<CacheEntry>) -> impl Future<Output = ()>;
    /// Requests `ws` (announced) go as realtime calls, each with at most `retries` fault
    /// retries.
    fn run_realtime(&mut self, ws: Vec<W>, retries: u32) -> impl Future<Output = ()>;

    /// Request `w`'s cache key (what its claim is on).
    fn key(&self, w: W) -> String;
    /// Request `w` as a batch item under `custom_id`: rendered now; why not, when its files
    /// changed since they were planned.
    fn item(&self, w: W, custom_id: &str) -> Result<BatchItem, String>;
    /// The most request `w` can cost through the batch API.
    fn worst_cost(&self, w: W) -> f64;
    /// Keeps one succeeded result of request `w`, off the reader: read against its request,
    /// checked, cached and written. `may_call`: a realtime re-ask may be made.
    fn keep(
        &self,
        w: W,
        reply: Reply,
        submitted: Instant,
        may_call: bool,
    ) -> impl Future<Output = Self::Kept> + Send + 'static;
    /// A kept result, counted (its request was sent `sends` times). Whether the stage goes on
    /// (false: an answer could not be written, the key was refused), and whether the answer
    /// was kept.
    fn kept(&mut self, kept: Self::Kept, sends: u32) -> Heard;
}

/// What a kept result came to (see [`Host::kept`]).
pub struct Heard {
    pub go_on: bool,
    pub kept: bool,
}

impl Request for Work<'_> {
    fn id(&self) -> &UnitId {
        Work::id(self)
    }

    fn label(&self) -> &str {
        match self {
            Work::Unit(u) => &u.label,
            Work::Summary(s) => &s.label,
        }
    }
}

impl Stage for Execution {
    fn emit(&mut self, event: Event) {
        self.dispatcher.emit(event);
    }

    fn claims(&self) -> Option<(Cache, u32)> {
        let ctx: &Arc<job::JobContext> = &self.jobs;
        ctx.read_cache.then(|| (ctx.cache.clone(), ctx.requests.max_tokens))
    }

    fn backoff(&self, attempt: u32) -> Duration {
        self.jobs.call.policy.backoff(attempt)
    }

    fn budget_left(&self) -> Option<f64> {
        self.dispatcher.budget_left()
    }

    fn stop_for_budget(&mut self, reason: String) {
        self.dispatcher.stop_for_budget(reason);
    }

    fn halt(&mut self, reason: String) {
        self.dispatcher.halt(StopReason::Fatal(reason));
    }

    async fn pause(&mut self, until: Instant) -> Pause {
        Execution::pause(self, until).await
    }

    fn may_submit(&mut self) -> bool {
        Execution::may_submit(self)
    }

    fn may_call(&self) -> bool {
        Execution::may_call(self)
    }

    async fn join_heard<T: 'static>(&mut self, tasks: &mut JoinSet<T>) -> Option<Result<T, JoinError>> {
        Execution::join_heard(self, tasks).await
    }

    fn why_stopped(&self) -> &'static str {
        Execution::why_stopped(self)
    }
}

impl<'a> Host<Work<'a>> for Execution {
    type Kept = JobOutcome;

    fn announce(&mut self, w: Work<'a>) {
        let JobMeta { unit, label, kind } = w.meta();
        self.dispatcher.emit(Event::Queued { unit, label, kind });
    }

    fn fail(&mut self, w: Work<'a>, attempts: u32, reason: String) {
        let mut outcome = JobOutcome::new(w.meta());
        outcome.attempts = attempts;
        self.dispatcher.finished(outcome.failed(reason));
    }

    fn cancelled(&mut self, w: Work<'a>, reason: &str) {
        let JobMeta { unit, label, kind } = w.meta();
        self.dispatcher.emit(Event::Cancelled {
            unit,
            label,
            kind,
            reason: reason.to_string(),
        });
    }

    async fn serve(&mut self, w: Work<'a>, entry: Box<CacheEntry>) {
        let ctx = self.jobs.clone();
        let mut outcome = JobOutcome::new(w.meta());
        outcome.cached = true;
        outcome.saved = entry.usage;
        outcome.truncated = entry.truncated;
        let outcome = match w {
            Work::Unit(unit) => {
                let rendered = request::render_unread(unit, &ctx.requests);
                job::keep(ctx, unit.clone(), rendered, entry.text, outcome).await
            }
            Work::Summary(_) => {
                outcome.text = Some(entry.text);
                outcome
            }
        };
        self.dispatcher.finished(outcome);
    }

    async fn run_realtime(&mut self, ws: Vec<Work<'a>>, retries: u32) {
        let jobs = ws.iter().map(Work::job).collect();
        self.run_announced_with_retries(jobs, retries).await;
    }

    fn key(&self, w: Work<'a>) -> String {
        match w {
            Work::Unit(unit) => unit.cache_key.0.clone(),
            Work::Summary(s) => request::render_summary(&s.prompt, &self.jobs.requests).key.0,
        }
    }

    fn item(&self, w: Work<'a>, custom_id: &str) -> Result<BatchItem, String> {
        let ctx = &self.jobs;
        let request = match w {
            Work::Unit(unit) => {
                // Its files read again (and its prompt kept in the run directory, as a
                // realtime call keeps it).
                let unit = unit.with_text()?;
                let rendered = request::render(&unit, &ctx.requests);
                job::keep_prompt(ctx, &unit, &rendered.request);
                rendered.request
            }
            Work::Summary(s) => request::render_summary(&s.prompt, &ctx.requests).request,
        };
        Ok(BatchItem {
            custom_id: custom_id.to_string(),
            request,
        })
    }

    fn worst_cost(&self, w: Work<'a>) -> f64 {
        let ctx = &self.jobs;
        let bytes = match w {
            Work::Unit(unit) => unit.prompt_bytes,
            Work::Summary(s) => {
                let r = request::render_summary(&s.prompt, &ctx.requests).request;
                (r.system.len() + r.shared.len() + r.user.len()) as u64
            }
        };
        self.dispatcher.worst_batch_cost(bytes, ctx.requests.max_tokens)
    }

    fn keep(
        &self,
        w: Work<'a>,
        reply: Reply,
        submitted: Instant,
        may_call: bool,
    ) -> impl Future<Output = JobOutcome> + Send + 'static {
        keep_result(self.jobs.clone(), w.owned(), reply, submitted, may_call)
    }

    fn kept(&mut self, mut outcome: JobOutcome, sends: u32) -> Heard {
        // Its batch sends, and the realtime calls of a `--schema` re-ask.
        outcome.attempts += sends;
        let kept = outcome.failure.is_none();
        let write_failed = outcome.write_error.is_some();
        let fatal = matches!(outcome.failure, Some(JobFailure::Fatal(_)));
        self.dispatcher.finished(outcome);
        Heard {
            go_on: !(write_failed || fatal),
            kept,
        }
    }
}

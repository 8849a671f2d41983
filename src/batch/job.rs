//! One job of the pool: a unit (read its inputs, call, cache, write the result) or an
//! aggregation call (check the cache, call, cache).
//!
//! File I/O and hashing run on the blocking pool, off the async workers. A paid answer is
//! put in the cache first, then fsynced, then written to its result file: there is no
//! moment where a result is written but not durably cached. Once the answer is in the
//! cache (before the fsync), the job tells the dispatcher what its calls cost and hands back
//! its slot ([`exec::Paid`]), so the next call does not wait for the disk; the answer
//! counts when the job ends, after the fsync.
//!
//! Before paying for a key, a job claims it ([`super::key_claim`]), and holds the claim
//! until the answer is cached: two rlm processes sharing a cache never pay for one key at
//! the same time; the second is served the first one's answer.

use std::sync::Arc;
use std::time::Instant;

use super::answers::UnitAnswers;
use super::conform::{conform, Asking};
use super::keep::{cache_entry_text, persist};
pub(super) use super::keep::{keep, keep_paid, lookup};
use super::key_claim::{KeyClaim, KeyClaims};
use crate::cache::{Cache, CacheEntry, ClaimGuard};
use crate::exec::{self, call_within_retries, CallContext, CallFailure, CallResult, JobMeta, Place, Start};
use crate::provider::{CompletionRequest, ErrorKind, Usage};
use crate::request::{self, Expect, RenderedSummary, RequestContext, SummaryPrompt};
use crate::run_dir::RunDir;
use crate::unit::{UnitId, UnitKind, WorkUnit};

/// What every job of a run shares, read-only.
pub struct JobContext {
    pub call: Arc<CallContext>,
    /// Where a unit says its calls are paid for and its answer in place, handing back its
    /// slot before it waits for the disk.
    pub paid: tokio::sync::mpsc::UnboundedSender<exec::Paid>,
    pub cache: Cache,
    pub run_dir: RunDir,
    /// How a unit becomes its request.
    pub requests: RequestContext,
    /// `--save-trajectory`: every call logged.
    pub trajectory: Option<Arc<super::trajectory::Trajectory>>,
    /// Answers an earlier attempt paid for but could not cache (see [`super::pending`]).
    pub pending: std::collections::HashMap<String, CacheEntry>,
    /// Jobs look in the cache first (units the pre-pass did not see: a batch member
    /// retried alone, aggregation calls).
    pub read_cache: bool,
    /// False under `--cache-only`: an uncached call fails instead of calling.
    pub may_call: bool,
    /// The run's answer journal (see [`super::pending`]).
    pub journal: Option<Arc<super::pending::Journal>>,
    /// How a key is claimed before it is paid for (see [`super::key_claim`]).
    pub claims: Arc<KeyClaims>,
    /// Makes paid answers' cache entries durable in groups (one sync for up to the run's
    /// width of them).
    pub syncer: Arc<crate::fs_atomic::GroupSync>,
}

/// A job of the pool.
#[derive(Debug)]
pub enum Job {
    Unit(WorkUnit),
    Summary(SummaryJob),
}

/// One summary or synthesis call.
#[derive(Debug, Clone)]
pub struct SummaryJob {
    pub id: UnitId,
    pub label: std::sync::Arc<str>,
    /// What it reads; [`request::render_summary`] makes it the request.
    pub prompt: SummaryPrompt,
}

impl exec::Job for Job {
    fn meta(&self) -> JobMeta {
        match self {
            Job::Unit(u) => JobMeta {
                unit: u.id.clone(),
                label: u.label.clone(),
                kind: UnitKind::Map,
            },
            Job::Summary(s) => JobMeta {
                unit: s.id.clone(),
                label: s.label.clone(),
                kind: UnitKind::Aggregate,
            },
        }
    }
}

/// Why a job has no answer.
#[derive(Debug, Clone, PartialEq)]
pub enum JobFailure {
    /// This unit failed; the run goes on.
    Unit { kind: Option<ErrorKind>, reason: String },
    /// The provider refused us; the run stops.
    Fatal(String),
    /// The run must stop, though this unit had no answer of its own (see
    /// [`CallFailure::Stop`]): it is not run, and `reason` is said once for the run.
    Stop { reason: String, abandon: bool },
    /// The run stopped before the call could start (or be answered).
    Halted,
}

/// What a finished job reports to the dispatcher.
#[derive(Debug)]
pub struct JobOutcome {
    pub meta: JobMeta,
    pub attempts: u32,
    /// The calls' own time: from the first call's dispatch (its slot taken) to the last
    /// answer, retries and a `--schema` re-ask included, the wait for the first slot not.
    pub duration_ms: u64,
    /// When the first call of this job was sent.
    pub dispatched: Option<Instant>,
    /// What the realtime calls of this job used (and cost), whether or not it succeeded.
    pub usage: Usage,
    /// What its batch-API request used: billed at the batch price.
    pub batch_usage: Usage,
    /// Served from the cache: what the original call used.
    pub saved: Usage,
    pub cached: bool,
    pub truncated: bool,
    pub result_file: Option<String>,
    /// An aggregation call's answer.
    pub text: Option<String>,
    /// A unit's answers, per file.
    pub answers: Option<UnitAnswers>,
    pub failure: Option<JobFailure>,
    /// The answer could not be persisted (cache or result file): dispatching must stop.
    pub write_error: Option<String>,
    /// The call's slot, held until the answer is in the cache and the dispatcher has heard
    /// what it cost (an [`exec::Paid`], or this outcome): a budget stops the pool before
    /// another call can start, and so does a failure to put the answer in the cache (one
    /// to fsync it is heard when the job ends).
    pub slot: Option<crate::exec::Slot>,
}

impl JobOutcome {
    pub(super) fn new(meta: JobMeta) -> Self {
        JobOutcome {
            meta,
            attempts: 0,
            duration_ms: 0,
            dispatched: None,
            usage: Usage::default(),
            batch_usage: Usage::default(),
            saved: Usage::default(),
            cached: false,
            truncated: false,
            result_file: None,
            text: None,
            answers: None,
            failure: None,
            write_error: None,
            slot: None,
        }
    }

    pub(super) fn failed(mut self, reason: String) -> Self {
        self.failure = Some(JobFailure::Unit { kind: None, reason });
        self
    }
}

/// Runs one job to its end, each call with at most `fault_retries` fault retries (`None`:
/// `--retries`; fewer for a provider batch's realtime fallback). Its place in the limiter's
/// queue is taken now, when it is dispatched, so calls start in plan order.
pub fn run_job(
    ctx: Arc<JobContext>,
    job: Job,
    fault_retries: Option<u32>,
) -> impl std::future::Future<Output = JobOutcome> + Send + 'static {
    let place = ctx.call.limiter.place();
    async move {
        let outcome = JobOutcome::new(exec::Job::meta(&job));
        match job {
            Job::Unit(unit) => run_unit(ctx, unit, outcome, (place, fault_retries)).await,
            Job::Summary(summary) => run_summary(ctx, summary, outcome, (place, fault_retries)).await,
        }
    }
}

async fn run_unit(
    ctx: Arc<JobContext>,
    unit: WorkUnit,
    mut outcome: JobOutcome,
    (place, fault_retries): (Place, Option<u32>),
) -> JobOutcome {
    let key = unit.cache_key.clone();
    // The pre-pass read the cache for every planned unit, and the claim below reads it
    // again under the key's lock: only an answer kept outside the cache (or, under
    // --cache-only, where no claim is taken) is looked up here.
    if ctx.read_cache && (!ctx.may_call || ctx.pending.contains_key(key.as_str())) {
        match lookup(&ctx, &key).await {
            Ok(Some(entry)) => {
                outcome.cached = true;
                outcome.saved = entry.usage;
                outcome.truncated = entry.truncated;
                let rendered = request::render_unread(&unit, &ctx.requests);
                return keep(ctx, unit, rendered, entry.text, outcome).await;
            }
            Ok(None) => {}
            Err(reason) => return outcome.failed(reason),
        }
    }
    if !ctx.may_call {
        return outcome.failed("--cache-only: this unit is not cached".into());
    }
    let (claim, place) = match ctx.claims.claim(&key, place, &ctx.call.limiter).await {
        KeyClaim::Served(entry) => {
            outcome.cached = true;
            outcome.saved = entry.usage;
            outcome.truncated = entry.truncated;
            let rendered = request::render_unread(&unit, &ctx.requests);
            return keep(ctx, unit, rendered, entry.text, outcome).await;
        }
        KeyClaim::Held(claim, place) => (claim, place),
        KeyClaim::Halted => {
            outcome.failure = Some(JobFailure::Halted);
            return outcome;
        }
        KeyClaim::Elsewhere(why) => return outcome.failed(why),
    };
    // Its text is read again now, as it is about to be paid for (the plan holds none),
    // and checked against the hash it was planned with.
    let unit = match unit.with_text() {
        Ok(std::borrow::Cow::Owned(loaded)) => loaded,
        Ok(std::borrow::Cow::Borrowed(_)) => unit,
        Err(why) => return outcome.failed(why),
    };
    let rendered = request::render(&unit, &ctx.requests);
    debug_assert_eq!(
        rendered.key, key,
        "{}: rendered under another key than planned",
        unit.label
    );
    keep_prompt(&ctx, &unit, &rendered.request);
    let schema = ctx
        .requests
        .schema
        .as_ref()
        .filter(|_| rendered.expect == Expect::Schema);
    let mut outcome = match schema {
        Some(schema) => {
            conform(
                &ctx,
                schema,
                &rendered.request,
                &unit,
                outcome,
                Start::Call(place),
                Asking {
                    may_reask: true,
                    fault_retries,
                },
            )
            .await
        }
        None => {
            call(
                &ctx,
                &rendered.request,
                (&unit.id, &unit.label),
                outcome,
                (place, fault_retries),
            )
            .await
        }
    };
    let Some(text) = outcome.text.take().filter(|_| outcome.failure.is_none()) else {
        return outcome;
    };
    keep_paid(ctx, unit, rendered, text, outcome, claim).await
}

/// Keeps a summary just paid for: cached, its text on the outcome.
pub(super) async fn keep_summary(
    ctx: &Arc<JobContext>,
    call: RenderedSummary,
    label: &str,
    text: String,
    mut outcome: JobOutcome,
    claim: Option<ClaimGuard>,
) -> JobOutcome {
    let entry = CacheEntry {
        inputs: call.artifacts,
        ..cache_entry_text(ctx, call.key, &text, &outcome)
    };
    if let Some(e) = persist(ctx, entry, label, None, claim).await {
        outcome.write_error = Some(e);
    }
    outcome.text = Some(text);
    outcome
}

async fn run_summary(
    ctx: Arc<JobContext>,
    job: SummaryJob,
    mut outcome: JobOutcome,
    (place, fault_retries): (Place, Option<u32>),
) -> JobOutcome {
    let summary = request::render_summary(&job.prompt, &ctx.requests);
    let key = summary.key.clone();
    if ctx.read_cache {
        match lookup(&ctx, &key).await {
            Ok(Some(entry)) => {
                outcome.cached = true;
                outcome.saved = entry.usage;
                outcome.truncated = entry.truncated;
                outcome.text = Some(entry.text);
                return outcome;
            }
            Ok(None) => {}
            Err(reason) => return outcome.failed(reason),
        }
    }
    if !ctx.may_call {
        return outcome.failed("--cache-only: this summary is not cached".into());
    }
    let (claim, place) = match ctx.claims.claim(&key, place, &ctx.call.limiter).await {
        KeyClaim::Served(entry) => {
            outcome.cached = true;
            outcome.saved = entry.usage;
            outcome.truncated = entry.truncated;
            outcome.text = Some(entry.text);
            return outcome;
        }
        KeyClaim::Held(claim, place) => (claim, place),
        KeyClaim::Halted => {
            outcome.failure = Some(JobFailure::Halted);
            return outcome;
        }
        KeyClaim::Elsewhere(why) => return outcome.failed(why),
    };
    let mut outcome = call(
        &ctx,
        &summary.request,
        (&job.id, &job.label),
        outcome,
        (place, fault_retries),
    )
    .await;
    let Some(text) = outcome.text.take().filter(|_| outcome.failure.is_none()) else {
        return outcome;
    };
    keep_summary(&ctx, summary, &job.label, text, outcome, claim).await
}

/// The model call, its retries (at most `fault_retries` fault retries, `None`: `--retries`),
/// and an empty answer counted as a failure. Its time is counted from the dispatch of the
/// job's first call (see [`JobOutcome::duration_ms`]).
pub(super) async fn call(
    ctx: &JobContext,
    request: &CompletionRequest,
    (unit, label): (&UnitId, &str),
    mut outcome: JobOutcome,
    (place, fault_retries): (Place, Option<u32>),
) -> JobOutcome {
    let retries = fault_retries.unwrap_or(ctx.call.policy.retries);
    let result = call_within_retries(&ctx.call, request, unit, label, place, retries).await;
    record_call(ctx, request, (unit, label), &result);
    outcome.attempts = result.attempts;
    outcome.slot = result.slot;
    if outcome.dispatched.is_none() {
        outcome.dispatched = result.dispatched;
    }
    outcome.duration_ms = outcome.dispatched.map_or(0, |t| t.elapsed().as_millis() as u64);
    match result.outcome {
        Ok(completion) => {
            outcome.usage = completion.usage;
            outcome.truncated = completion.truncated;
            if completion.text.trim().is_empty() {
                return outcome.failed(format!(
                    "the model returned an empty answer (stop reason: {})",
                    completion.stop_reason.as_deref().unwrap_or("none")
                ));
            }
            outcome.text = Some(completion.text);
        }
        Err(failure) => outcome.failure = Some(unit_failure(failure)),
    }
    outcome
}

/// A call that ended without an answer, as a job's failure.
pub(super) fn unit_failure(failure: CallFailure) -> JobFailure {
    match failure {
        CallFailure::Unit { kind, reason } => JobFailure::Unit {
            kind: Some(kind),
            reason,
        },
        CallFailure::Fatal(reason) => JobFailure::Fatal(reason),
        CallFailure::Stop { reason, abandon } => JobFailure::Stop { reason, abandon },
        CallFailure::Halted => JobFailure::Halted,
    }
}

/// Logs one call (its retries in one record) to `--save-trajectory`, when asked; a log
/// that cannot be written is said once as a warning.
pub(super) fn record_call(
    ctx: &JobContext,
    request: &CompletionRequest,
    (unit, label): (&UnitId, &str),
    result: &CallResult,
) {
    let Some(trajectory) = &ctx.trajectory else {
        return;
    };
    let (response, error, usage) = match &result.outcome {
        Ok(c) => (Some(c.text.as_str()), None, c.usage),
        Err(CallFailure::Unit { reason, .. }) => (None, Some(reason.clone()), Usage::default()),
        Err(CallFailure::Fatal(reason) | CallFailure::Stop { reason, .. }) => {
            (None, Some(reason.clone()), Usage::default())
        }
        Err(CallFailure::Halted) => (None, Some("the run stopped first".to_string()), Usage::default()),
    };
    let warning = trajectory.record(&super::trajectory::CallRecord {
        unit: unit.as_str(),
        label,
        model: ctx.call.provider.model(),
        request,
        response,
        error: error.as_deref(),
        usage,
        duration_ms: result.dispatched.map_or(0, |t| t.elapsed().as_millis() as u64),
        attempts: result.attempts,
    });
    if let Some(message) = warning {
        let _ = ctx.call.events.send(exec::Event::Warning { message });
    }
}

/// `prompts/<unit id>.md` in the run directory: what this unit sends, to inspect or replay.
/// Best effort: a prompt that cannot be kept does not stop the call.
pub(super) fn keep_prompt(ctx: &JobContext, unit: &WorkUnit, request: &CompletionRequest) {
    let text = format!(
        "<!-- system -->\n{}\n<!-- user -->\n{}",
        request.system,
        request.user_text()
    );
    let _ = ctx.run_dir.write_record(&format!("prompts/{}.md", unit.id), &text);
}

//! One worker call: the cache first; then the model, through rlm's one re-ask loop
//! ([`crate::exec::ask`]): the call under the run's limiter with its retries for faults and rate
//! limits, the answer checked — against the schema and against the batch (the phase's
//! [`AnswerCheck`]) — and asked for again with the errors appended, up to the phase's
//! `retries`. An accepted answer is written to the cache (fsynced) before the worker
//! returns, so it is never paid twice.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use crate::answer::json::find_json as extract_json;
use crate::batch::key_claim::{KeyClaim, KeyClaims};
use crate::cache::{ArtifactRef, Cache, CacheEntry, CacheKey};
use crate::exec::{ask, AskEnd, AskPolicy, CallContext, CallFailure, Place, ReaskWording, ReplyCheck, Start};
use crate::provider::{CompletionRequest, ModelInfo, Usage};
use crate::schema::first_error;
use crate::unit::UnitId;

/// How a phase's answer is asked for again: up to the phase's `retries` (set per phase),
/// each re-ask said aloud, the errors quoted but not the answer (a batch's answer is long,
/// and the errors name what to fix). An answer cut off at the output limit is not asked
/// again: the same request would be cut off again.
const PHASE_POLICY: AskPolicy = AskPolicy {
    retries: 0,
    stop_at_cut_off: true,
    announce_reasks: true,
    wording: ReaskWording {
        because: "",
        quote_answer: false,
        closing: "Answer again, with the whole JSON object: one valid object for every item, each with its id \
                  unchanged.",
    },
    fault_retries: None,
};

/// Whether an answer is what the phase asked for.
pub trait AnswerCheck: Send + Sync {
    /// The accepted answer (normalized: items in input order), or every error found.
    fn check(&self, answer: &Value) -> Result<Value, Vec<String>>;
}

/// A phase's check of an answer's text: read as JSON (a free-text answer as a JSON
/// string), then the phase's [`AnswerCheck`].
pub(super) struct PhaseReply<'a> {
    check: &'a dyn AnswerCheck,
    structured: bool,
}

impl<'a> PhaseReply<'a> {
    pub(super) fn new(check: &'a dyn AnswerCheck, request: &WorkerRequest) -> Self {
        PhaseReply {
            check,
            structured: request.schema.is_some(),
        }
    }
}

impl ReplyCheck for PhaseReply<'_> {
    type Accepted = Value;

    fn check(&self, text: &str) -> Result<Value, Vec<String>> {
        match parse(text, self.structured) {
            Ok(value) => self.check.check(&value),
            Err(e) => Err(vec![format!("the answer is not JSON ({e})")]),
        }
    }
}

/// What every worker of a phase shares.
pub struct WorkerContext {
    pub call: Arc<CallContext>,
    pub cache: Cache,
    /// How a key is claimed before it is paid for: the engine's one way
    /// ([`crate::batch::key_claim`]).
    pub claims: Arc<KeyClaims>,
    /// Cached answers are read (not under `--no-cache`).
    pub cache_reads: bool,
    pub model: ModelInfo,
    pub max_tokens: u32,
    /// Invalid answers asked for again before the call fails.
    pub retries: u32,
}

/// One call's messages and key.
#[derive(Debug, Clone)]
pub struct WorkerRequest {
    pub unit: UnitId,
    pub label: String,
    pub system: String,
    pub user: String,
    /// The structured-output schema; `None` for a free-text answer.
    pub schema: Option<Arc<Value>>,
    pub key: CacheKey,
    pub artifacts: Vec<ArtifactRef>,
    /// An answer to this request already paid for (through the batch API) and rejected:
    /// the worker counts it and starts from its re-ask.
    pub prior: Option<PriorAnswer>,
    /// Fault retries of each call, when fewer than the phase's: what `--retries` has left
    /// after this request's provider batch sends (its realtime fallback shares the budget,
    /// as a `rlm batch` unit's does). `None`: the phase's.
    pub fault_retries: Option<u32>,
}

impl WorkerRequest {
    /// What is sent first for this request (in real time, or in a provider batch).
    pub(super) fn completion_request(&self, max_tokens: u32) -> CompletionRequest {
        CompletionRequest {
            system: self.system.clone(),
            user: self.user.clone(),
            max_tokens,
            schema: self.schema.clone(),
            // The system prompt (the job's context document, the phase's instructions) is
            // the same for every call of a phase: the provider caches it once it is long
            // enough.
            cache_prefix: true,
            ..CompletionRequest::default()
        }
    }
}

/// A paid answer the check rejected (see [`WorkerRequest::prior`]).
#[derive(Debug, Clone)]
pub struct PriorAnswer {
    pub text: String,
    pub usage: Usage,
    pub cost_usd: f64,
    /// Why it was rejected: quoted back in the re-ask.
    pub errors: Vec<String>,
}

/// How a worker ended.
#[derive(Debug, Clone)]
pub enum WorkerEnd {
    /// An answer that passed the check (a free-text answer is a JSON string).
    Accepted(Value),
    /// Answers came, but none passed the check: the last one, and why.
    Rejected {
        last_text: Option<String>,
        last_value: Option<Value>,
        reason: String,
    },
    /// The call failed for this batch (its retries spent, or the input too long).
    Failed { reason: String },
    /// The provider refused the job: every other call would fail the same way.
    Fatal(String),
    /// The run stopped before the call could start.
    Halted,
}

/// A worker's end, what it cost and how long it took.
#[derive(Debug, Clone)]
pub struct WorkerOutcome {
    pub end: WorkerEnd,
    /// Answered from the cache: nothing was paid.
    pub cached: bool,
    pub usage: Usage,
    pub cost_usd: f64,
    /// Model requests sent (fault retries and re-asks included).
    pub calls: u32,
    /// Answers that were rejected and asked for again.
    pub reasked: u32,
    pub duration_ms: u64,
    /// The accepted answer could not be cached: dispatching must stop.
    pub write_error: Option<String>,
}

impl WorkerOutcome {
    /// A worker that ended `end` with nothing paid and no call made yet.
    pub fn ended(end: WorkerEnd) -> Self {
        WorkerOutcome {
            end,
            cached: false,
            usage: Usage::default(),
            cost_usd: 0.0,
            calls: 0,
            reasked: 0,
            duration_ms: 0,
            write_error: None,
        }
    }
}

/// Runs one worker to its end. `place` is its place in the limiter's queue, taken when it
/// was dispatched.
pub async fn run_worker(
    ctx: Arc<WorkerContext>,
    request: WorkerRequest,
    check: Arc<dyn AnswerCheck>,
    place: Place,
) -> WorkerOutcome {
    let started = Instant::now();
    let mut outcome = WorkerOutcome::ended(WorkerEnd::Halted);
    if let Some(prior) = &request.prior {
        // Paid (through the batch API) and rejected: counted here, whatever comes next.
        outcome.usage.add(prior.usage);
        outcome.cost_usd += prior.cost_usd;
        outcome.calls += 1;
    }
    if ctx.cache_reads {
        if let Some(value) = cached_answer(&ctx, &request, check.as_ref()).await {
            outcome.end = WorkerEnd::Accepted(value);
            outcome.cached = true;
            outcome.duration_ms = started.elapsed().as_millis() as u64;
            return outcome;
        }
    }
    // Claimed before paying (held until the accepted answer is cached): two jobs — or a
    // job and a batch run — asking for the same answer at once pay for it once.
    let (_claim, place) = match ctx.claims.claim(&request.key, place, &ctx.call.limiter).await {
        KeyClaim::Served(entry) => {
            if let Ok(value) = PhaseReply::new(check.as_ref(), &request).check(&entry.text) {
                outcome.end = WorkerEnd::Accepted(value);
                outcome.cached = true;
                outcome.duration_ms = started.elapsed().as_millis() as u64;
                return outcome;
            }
            // Cached, but not an answer this phase accepts: asked for anew.
            (None, ctx.call.limiter.place())
        }
        KeyClaim::Held(claim, place) => (claim, place),
        KeyClaim::Halted => return outcome,
        KeyClaim::Elsewhere(reason) => {
            outcome.end = WorkerEnd::Failed { reason };
            return outcome;
        }
    };
    let start = match &request.prior {
        // Counted above; the first call is its re-ask, with its errors.
        Some(prior) => Start::Rejected {
            text: prior.text.clone(),
            errors: prior.errors.clone(),
            place,
        },
        None => Start::Call(place),
    };
    let sent = request.completion_request(ctx.max_tokens);
    let policy = AskPolicy {
        retries: ctx.retries,
        fault_retries: request.fault_retries,
        ..PHASE_POLICY
    };
    let reply = PhaseReply::new(check.as_ref(), &request);
    let asked = ask(
        &ctx.call,
        &sent,
        (&request.unit, &request.label),
        start,
        &reply,
        &policy,
    )
    .await;
    // The accepted answer's slot is held until the answer is cached.
    let _slot = asked.slot;
    outcome.calls += asked.calls;
    outcome.usage.add(asked.usage);
    outcome.cost_usd += ctx.model.cost(asked.usage);
    outcome.reasked += asked.reasked;
    let structured = request.schema.is_some();
    outcome.end = match asked.end {
        AskEnd::Accepted(accepted) => {
            outcome.write_error = store(&ctx, &request, &accepted, asked.last_usage).await;
            WorkerEnd::Accepted(accepted)
        }
        AskEnd::Rejected { text, errors } => WorkerEnd::Rejected {
            last_value: parse(&text, structured).ok(),
            last_text: Some(text),
            reason: format!(
                "no valid answer after {} attempt{}: {}",
                asked.answers,
                if asked.answers == 1 { "" } else { "s" },
                first_error(&errors)
            ),
        },
        AskEnd::CutOff { text } => WorkerEnd::Rejected {
            last_value: parse(&text, structured).ok(),
            last_text: Some(text),
            reason: format!(
                "the answer was cut off at the output limit ({} tokens): lower the phase's batch_size or raise \
                 max_tokens",
                ctx.max_tokens
            ),
        },
        AskEnd::Failed(CallFailure::Unit { reason, .. }) => WorkerEnd::Failed { reason },
        AskEnd::Failed(CallFailure::Fatal(reason) | CallFailure::Stop { reason, .. }) => WorkerEnd::Fatal(reason),
        AskEnd::Failed(CallFailure::Halted) => WorkerEnd::Halted,
    };
    // The worker's time runs from its first call's dispatch, not from its wait for a slot.
    outcome.duration_ms = asked.dispatched.map_or(0, |t| t.elapsed().as_millis() as u64);
    outcome
}

/// The answer as JSON (a free-text answer is a JSON string).
pub(super) fn parse(text: &str, structured: bool) -> Result<Value, String> {
    if structured {
        extract_json(text).map_err(|e| e.to_string())
    } else if text.trim().is_empty() {
        Err("the answer is empty".into())
    } else {
        Ok(Value::String(text.trim().to_string()))
    }
}

/// A cached answer that still passes the check.
pub(super) async fn cached_answer(
    ctx: &Arc<WorkerContext>,
    request: &WorkerRequest,
    check: &dyn AnswerCheck,
) -> Option<Value> {
    let (cache, key, max) = (ctx.cache.clone(), request.key.clone(), ctx.max_tokens);
    let entry = match tokio::task::spawn_blocking(move || cache.get(&key, max)).await {
        Ok(Ok(Some(entry))) => entry,
        Ok(Ok(None)) => return None,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "cache entry unreadable: calling again");
            return None;
        }
        Err(_) => return None,
    };
    PhaseReply::new(check, request).check(&entry.text).ok()
}

/// Caches an accepted answer; `Some(error)` when it could not be written.
pub(super) async fn store(
    ctx: &Arc<WorkerContext>,
    request: &WorkerRequest,
    accepted: &Value,
    usage: Usage,
) -> Option<String> {
    let text = match accepted {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let entry = CacheEntry {
        key: request.key.0.clone(),
        model: ctx.model.id.clone(),
        inputs: request.artifacts.clone(),
        text,
        usage,
        truncated: false,
        max_tokens: ctx.max_tokens,
        created_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    };
    let cache = ctx.cache.clone();
    match tokio::task::spawn_blocking(move || cache.put(&entry)).await {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(format!("cannot write the cache: {e}")),
        Err(e) => Some(format!("cannot write the cache: {e}")),
    }
}

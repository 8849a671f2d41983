//! One worker call: the cache first; then the model, under the run's limiter with its
//! retries for faults and rate limits (`exec::call_with_retries`); then the answer checked
//! — against the schema and against the batch (the phase's [`AnswerCheck`]) — and asked for
//! again with the errors appended, up to the phase's `retries`. An accepted answer is
//! written to the cache (fsynced) before the worker returns, so it is never paid twice.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use crate::answer::json::find_json as extract_json;
use crate::batch::key_claim::{KeyClaim, KeyClaims};
use crate::cache::{ArtifactRef, Cache, CacheEntry, CacheKey};
use crate::exec::{call_with_retries, CallContext, CallFailure, Event, Place};
use crate::provider::{CompletionRequest, ModelInfo, Usage};
use crate::schema::Rejection;
use crate::unit::UnitId;

/// How many error lines are quoted back to the model.
const MAX_QUOTED_ERRORS: usize = 20;

/// Whether an answer is what the phase asked for.
pub trait AnswerCheck: Send + Sync {
    /// The accepted answer (normalized: items in input order), or every error found.
    fn check(&self, answer: &Value) -> Result<Value, Vec<String>>;
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

/// Runs one worker to its end. `place` is its place in the limiter's queue, taken when it
/// was dispatched.
pub async fn run_worker(
    ctx: Arc<WorkerContext>,
    request: WorkerRequest,
    check: Arc<dyn AnswerCheck>,
    place: Place,
) -> WorkerOutcome {
    let started = Instant::now();
    let mut outcome = WorkerOutcome {
        end: WorkerEnd::Halted,
        cached: false,
        usage: Usage::default(),
        cost_usd: 0.0,
        calls: 0,
        reasked: 0,
        duration_ms: 0,
        write_error: None,
    };
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
            let served = parse(&entry.text, request.schema.is_some())
                .ok()
                .and_then(|value| check.check(&value).ok());
            if let Some(value) = served {
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
    let mut user = request.user.clone();
    let mut place = Some(place);
    let mut attempt = 0;
    if let Some(prior) = &request.prior {
        // Counted above; the next call is its re-ask, with its errors.
        if ctx.retries == 0 {
            outcome.end = WorkerEnd::Rejected {
                last_text: Some(prior.text.clone()),
                last_value: parse(&prior.text, request.schema.is_some()).ok(),
                reason: format!(
                    "no valid answer after 1 attempt: {}",
                    Rejection::Invalid(prior.errors.clone()).first()
                ),
            };
            return outcome;
        }
        attempt = 1;
        outcome.reasked += 1;
        user = reask_message(&request.user, &prior.errors);
    }
    // The worker's time runs from its first call's dispatch, not from its wait for a slot.
    let mut dispatched: Option<Instant> = None;
    outcome.end = loop {
        let sent = CompletionRequest {
            system: request.system.clone(),
            user: user.clone(),
            max_tokens: ctx.max_tokens,
            schema: request.schema.clone(),
            // The system prompt (the job's context document, the phase's instructions) is the
            // same for every call of a phase: the provider caches it once it is long enough.
            cache_prefix: true,
            ..CompletionRequest::default()
        };
        let place = place.take().unwrap_or_else(|| ctx.call.limiter.place());
        let result = call_with_retries(&ctx.call, &sent, &request.unit, &request.label, place).await;
        outcome.calls += result.attempts;
        dispatched = dispatched.or(result.dispatched);
        let completion = match result.outcome {
            Ok(c) => c,
            Err(CallFailure::Unit { reason, .. }) => break WorkerEnd::Failed { reason },
            Err(CallFailure::Fatal(reason) | CallFailure::Stop { reason, .. }) => break WorkerEnd::Fatal(reason),
            Err(CallFailure::Halted) => break WorkerEnd::Halted,
        };
        outcome.usage.add(completion.usage);
        outcome.cost_usd += ctx.model.cost(completion.usage);
        let parsed = parse(&completion.text, request.schema.is_some());
        if completion.truncated {
            // The same request would be cut off again: no point asking twice.
            break WorkerEnd::Rejected {
                last_text: Some(completion.text),
                last_value: parsed.ok(),
                reason: format!(
                    "the answer was cut off at the output limit ({} tokens): lower the phase's batch_size or raise \
                     max_tokens",
                    ctx.max_tokens
                ),
            };
        }
        let errors = match parsed {
            Ok(value) => match check.check(&value) {
                Ok(accepted) => {
                    outcome.write_error = store(&ctx, &request, &accepted, completion.usage).await;
                    break WorkerEnd::Accepted(accepted);
                }
                Err(errors) => errors,
            },
            Err(e) => vec![format!("the answer is not JSON ({e})")],
        };
        if attempt >= ctx.retries {
            let rejection = Rejection::Invalid(errors);
            break WorkerEnd::Rejected {
                last_text: Some(completion.text.clone()),
                last_value: parse(&completion.text, request.schema.is_some()).ok(),
                reason: format!(
                    "no valid answer after {} attempt{}: {}",
                    attempt + 1,
                    if attempt == 0 { "" } else { "s" },
                    rejection.first()
                ),
            };
        }
        attempt += 1;
        outcome.reasked += 1;
        let _ = ctx.call.events.send(Event::Warning {
            message: format!(
                "{}: answer rejected ({} error{}), asking again",
                request.label,
                errors.len(),
                if errors.len() == 1 { "" } else { "s" }
            ),
        });
        user = reask_message(&request.user, &errors);
    };
    outcome.duration_ms = dispatched.map_or(0, |t| t.elapsed().as_millis() as u64);
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

/// The message of a second attempt: the original one, then what was wrong. The previous
/// answer is not quoted back: a batch's answer is long, and the errors name what to fix.
pub fn reask_message(user: &str, errors: &[String]) -> String {
    let shown: Vec<String> = errors.iter().take(MAX_QUOTED_ERRORS).cloned().collect();
    let more = errors.len().saturating_sub(MAX_QUOTED_ERRORS);
    let mut bullets = Rejection::Invalid(shown).bullets();
    if more > 0 {
        bullets.push_str(&format!("- and {more} more\n"));
    }
    format!(
        "{user}\nYour previous answer was rejected:\n{bullets}Answer again, with the whole JSON object: one valid \
         object for every item, each with its id unchanged.\n"
    )
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
    let value = parse(&entry.text, request.schema.is_some()).ok()?;
    check.check(&value).ok()
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

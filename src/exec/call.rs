//! One model call with retries, under the run's shared limiter and cooldown.
//!
//! Each attempt takes a slot from the [`Limiter`] and gives it back before waiting to retry.
//! How a failure is retried depends on its [`ErrorKind`] alone: rate limits on a time
//! budget (and a pause for every call), faults on the count budget, fatal errors never
//! (they halt the limiter before the slot is released, so no other call starts after a 401).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;

use super::{Cooldown, Event, Limiter, Place, RetryPolicy};
use crate::provider::{CallError, Completion, CompletionRequest, ErrorKind, Provider};
use crate::unit::UnitId;

/// What every call of a run shares.
#[derive(Debug)]
pub struct CallContext {
    pub provider: Arc<dyn Provider>,
    pub policy: RetryPolicy,
    pub cooldown: Cooldown,
    pub limiter: Arc<Limiter>,
    pub events: UnboundedSender<Event>,
    /// The endpoint as shown in messages (credentials hidden).
    pub endpoint: String,
    /// Whether the endpoint has answered at all in this run (any HTTP status counts).
    reached: AtomicBool,
}

impl CallContext {
    pub fn new(
        provider: Arc<dyn Provider>,
        policy: RetryPolicy,
        limiter: Arc<Limiter>,
        events: UnboundedSender<Event>,
        endpoint: String,
    ) -> Self {
        CallContext {
            provider,
            policy,
            cooldown: Cooldown::default(),
            limiter,
            events,
            endpoint,
            reached: AtomicBool::new(false),
        }
    }

    fn emit(&self, event: Event) {
        let _ = self.events.send(event);
    }
}

/// Why a call finally failed.
#[derive(Debug, Clone, PartialEq)]
pub enum CallFailure {
    /// This unit failed; the run goes on.
    Unit { kind: ErrorKind, reason: String },
    /// The provider refused us; the run stops.
    Fatal(String),
    /// The run stopped before the call could (re)start.
    Halted,
}

/// The end of a call: its answer or failure, and how many attempts were sent.
#[derive(Debug)]
pub struct CallResult {
    pub outcome: Result<Completion, CallFailure>,
    pub attempts: u32,
    /// A successful call's slot, still held: the caller releases it once the answer is
    /// written (see [`super::Slot::note_success`]).
    pub slot: Option<super::Slot>,
}

/// Calls the provider until it answers, a final error arrives, or a budget runs out. The
/// first attempt waits at `place` (taken when the job was dispatched); retries queue anew.
pub async fn call_with_retries(
    ctx: &CallContext,
    request: &CompletionRequest,
    unit: &UnitId,
    label: &str,
    place: Place,
) -> CallResult {
    let mut place = Some(place);
    let mut attempts = 0;
    let mut faults = 0;
    let mut throttles = 0;
    let mut first_throttle: Option<Instant> = None;
    let failed = |failure: CallFailure, attempts: u32| CallResult {
        outcome: Err(failure),
        attempts,
        slot: None,
    };
    loop {
        ctx.cooldown.wait().await;
        let place = place.take().unwrap_or_else(|| ctx.limiter.place());
        let Some(slot) = place.acquire().await else {
            return failed(CallFailure::Halted, attempts);
        };
        // A 429 may have paused the pool while this call waited for its slot.
        ctx.cooldown.wait().await;
        attempts += 1;
        ctx.emit(Event::Started {
            unit: unit.clone(),
            attempt: attempts,
        });
        let error = match ctx.provider.complete(request).await {
            Ok(completion) => {
                ctx.reached.store(true, Ordering::Relaxed);
                if let Some(change) = slot.note_success() {
                    ctx.emit(Event::WidthChanged {
                        from: change.from,
                        to: change.to,
                    });
                }
                return CallResult {
                    outcome: Ok(completion),
                    attempts,
                    slot: Some(slot),
                };
            }
            Err(e) => e,
        };
        if error.kind != ErrorKind::Unreachable {
            ctx.reached.store(true, Ordering::Relaxed);
        }
        let CallError {
            kind,
            reason,
            retry_after,
        } = error;
        let wait = match kind {
            ErrorKind::Fatal => {
                // Halted before the slot is released: nothing else starts after this.
                ctx.limiter.halt();
                drop(slot);
                return failed(CallFailure::Fatal(reason), attempts);
            }
            ErrorKind::Unit => return failed(CallFailure::Unit { kind, reason }, attempts),
            ErrorKind::RateLimited => {
                throttles += 1;
                let since = *first_throttle.get_or_insert_with(Instant::now);
                let wait =
                    retry_after.map_or_else(|| ctx.policy.backoff(throttles), |h| ctx.policy.after_server_hint(h));
                if since.elapsed() + wait > ctx.policy.rate_limit_wait {
                    return failed(
                        CallFailure::Unit {
                            kind,
                            reason: format!(
                                "{reason} (still rate limited after {}s; raise --rate-limit-wait or lower --max-parallel)",
                                since.elapsed().as_secs()
                            ),
                        },
                        attempts,
                    );
                }
                // Everyone waits, this call included (at the top of the loop); paused before
                // the slot is released, so no waiting call slips through.
                ctx.cooldown.extend(wait);
                narrow(ctx, slot);
                wait
            }
            ErrorKind::Overloaded | ErrorKind::Transient | ErrorKind::Timeout | ErrorKind::Unreachable => {
                faults += 1;
                if faults > ctx.policy.retries {
                    let tries = if attempts == 1 {
                        "1 attempt".to_string()
                    } else {
                        format!("{attempts} attempts")
                    };
                    if kind == ErrorKind::Unreachable && !ctx.reached.load(Ordering::Relaxed) {
                        // Nothing has ever answered: every other call would fail the same way.
                        ctx.limiter.halt();
                        drop(slot);
                        return failed(
                            CallFailure::Fatal(format!(
                                "cannot reach the model server at {}: {reason} (gave up after {tries}) — is it running? check --base-url",
                                ctx.endpoint
                            )),
                            attempts,
                        );
                    }
                    return failed(
                        CallFailure::Unit {
                            kind,
                            reason: format!("{reason} (gave up after {tries})"),
                        },
                        attempts,
                    );
                }
                if kind == ErrorKind::Overloaded {
                    narrow(ctx, slot);
                } else {
                    drop(slot);
                }
                retry_after.map_or_else(|| ctx.policy.backoff(faults), |h| ctx.policy.after_server_hint(h))
            }
        };
        ctx.emit(Event::Retried {
            unit: unit.clone(),
            label: label.to_string(),
            attempt: attempts,
            error: kind,
            reason,
            wait_ms: wait.as_millis() as u64,
        });
        if kind != ErrorKind::RateLimited {
            tokio::time::sleep(wait).await;
        }
    }
}

/// Releases the slot with pushback, and tells the user when the pool narrowed.
fn narrow(ctx: &CallContext, slot: super::Slot) {
    if let Some(change) = slot.pushed_back() {
        ctx.emit(Event::WidthChanged {
            from: change.from,
            to: change.to,
        });
    }
}

/// How long the pool waits for calls in flight after an interrupt.
pub const GRACE: Duration = Duration::from_secs(10);

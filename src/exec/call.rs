//! One model call with retries, under the run's shared limiter.
//!
//! Each attempt takes a slot from the [`Limiter`] and gives it back before waiting to retry.
//! How a failure is retried depends on its [`ErrorKind`]: rate limits on a time budget
//! (`--rate-limit-wait`; the limiter decides whether the 429 narrows the pool or pauses
//! it), faults on the count budget (`--retries`), an empty reply once, fatal errors never
//! (they halt the limiter before the slot is released, so no other call starts after a
//! 401). An endpoint that sends nothing back — no connection, or not a byte within
//! `--timeout` — a few times in a row before it has ever answered stops the run: every
//! other call would wait just as long for nothing. So does a 429 whose own hint pauses
//! every call for longer than `--rate-limit-wait`. Such a stop is the run's, not a unit's:
//! the one call that hears it first says why ([`CallFailure::Stop`]), once for the run, and
//! its unit, like every other call in flight, is not run (`rlm resume` takes them up).
//!
//! The rate-limit budget counts what a call spends waiting out 429s: its own waits after
//! a refusal and the time it waits in the queue while the pool is paused
//! ([`super::RateBudget`]); a pause longer than what it has left fails it at once.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;

use super::limiter::Throttle;
use super::{Event, Limiter, Place, RateBudget, Refused, RetryPolicy, WidthWhy};
use crate::provider::{CallError, Completion, CompletionRequest, ErrorKind, Provider, RateWindow};
use crate::unit::UnitId;

/// Silent failures in a row, before the endpoint ever answered, that stop the run (fewer
/// when fewer calls are in flight: one `--timeout` is what a silent server may cost).
const SILENT_LIMIT: u32 = 3;

/// Silent failures in a row, with no answer between them, that stop a run whose endpoint
/// had answered before (a server that crashed or hung mid-run), per call the pool may have
/// in flight: every call in flight failing twice, the server's last answer behind them all
/// — and of more than one unit, so one unit whose call always times out (a reply too long
/// to finish) fails alone after its retries, as any unit does. Without it each unit left
/// would wait out its own timeouts and retries — hours of `--timeout`s at the defaults.
const SILENT_AGAIN_PER_SLOT: u32 = 2;

/// The silent failures since the endpoint's last answer.
#[derive(Debug, Default)]
struct SilentStreak {
    count: u32,
    /// The unit of the first, and whether another unit's came since.
    first: Option<UnitId>,
    several_units: bool,
}

/// What every call of a run shares.
#[derive(Debug)]
pub struct CallContext {
    pub provider: Arc<dyn Provider>,
    pub policy: RetryPolicy,
    pub limiter: Arc<Limiter>,
    pub events: UnboundedSender<Event>,
    /// The endpoint as shown in messages (credentials hidden).
    pub endpoint: String,
    /// Whether the endpoint has answered at all in this run (any HTTP status counts).
    reached: AtomicBool,
    /// Silent failures so far while it never has.
    silent: AtomicU32,
    /// Silent failures since its last answer (any HTTP status), once it has answered.
    silent_since_answer: std::sync::Mutex<SilentStreak>,
}

impl CallContext {
    /// The context of a run's calls. A local server's pool starts at one call and searches
    /// for its best width (see the limiter).
    pub fn new(
        provider: Arc<dyn Provider>,
        policy: RetryPolicy,
        limiter: Arc<Limiter>,
        events: UnboundedSender<Event>,
        endpoint: String,
    ) -> Self {
        if provider.is_local() {
            limiter.search_from_one();
        }
        CallContext {
            provider,
            policy,
            limiter,
            events,
            endpoint,
            reached: AtomicBool::new(false),
            silent: AtomicU32::new(0),
            silent_since_answer: std::sync::Mutex::default(),
        }
    }

    fn emit(&self, event: Event) {
        let _ = self.events.send(event);
    }

    fn width_changed(&self, change: Option<super::WidthChange>, why: super::WidthWhy) {
        if let Some(change) = change {
            self.emit(Event::WidthChanged {
                from: change.from,
                to: change.to,
                why,
            });
        }
    }

    /// Counts a silent failure: `None` while the call may be retried; else the end of the
    /// call — the first to reach the limit stops the run and says why (with the count that
    /// got there), every later one is simply not run (no growing count, no second message).
    fn silent_failure(&self, unit: &UnitId, kind: ErrorKind, reason: &str) -> Option<CallFailure> {
        if self.reached.load(Ordering::Relaxed) {
            return self.silent_again(unit, kind, reason);
        }
        if self.limiter.is_halted() {
            return Some(CallFailure::Halted);
        }
        let n = self.silent.fetch_add(1, Ordering::Relaxed) + 1;
        let needed = SILENT_LIMIT.min(self.limiter.width() as u32).max(1);
        if n < needed {
            return None;
        }
        if !self.limiter.halt_first() {
            return Some(CallFailure::Halted);
        }
        let advice = match kind {
            ErrorKind::Timeout => "is it stuck or overloaded? check the server, or raise --timeout",
            ErrorKind::Unreachable => "is it running, and is --base-url right?",
            _ => "is --base-url the right address and scheme (http or https)?",
        };
        let tries = if n == 1 {
            "1 attempt".to_string()
        } else {
            format!("{n} attempts in a row")
        };
        let reason = if kind == ErrorKind::Unreachable {
            format!(
                "cannot reach the model server at {}: {reason} ({tries}, it never answered) — {advice}",
                self.endpoint
            )
        } else {
            format!(
                "the model server at {} never answered: {reason} ({tries}, nothing ever came back) — {advice}",
                self.endpoint
            )
        };
        // The calls still in flight wait for the same nothing: they are abandoned.
        Some(CallFailure::Stop { reason, abandon: true })
    }

    /// The endpoint answered and then went silent: [`SILENT_AGAIN_PER_SLOT`] failures per
    /// slot in a row, none answered since, stop the run (what is left stays resumable).
    fn silent_again(&self, unit: &UnitId, kind: ErrorKind, reason: &str) -> Option<CallFailure> {
        if self.limiter.is_halted() {
            return Some(CallFailure::Halted);
        }
        let (n, several_units) = {
            let mut streak = self.streak();
            streak.count += 1;
            match &streak.first {
                None => streak.first = Some(unit.clone()),
                Some(first) if first != unit => streak.several_units = true,
                Some(_) => {}
            }
            (streak.count, streak.several_units)
        };
        let needed = SILENT_LIMIT.max(SILENT_AGAIN_PER_SLOT * self.limiter.cap() as u32);
        let stops = n >= needed && several_units;
        if !stops || !self.limiter.halt_first() {
            return stops.then_some(CallFailure::Halted);
        }
        let advice = match kind {
            ErrorKind::Timeout => "is it stuck or overloaded? check the server, or raise --timeout",
            _ => "is it still running?",
        };
        let reason = format!(
            "the model server at {} stopped answering: {reason} ({n} attempts in a row since its last answer) — \
             {advice}; `rlm resume` sends what is left",
            self.endpoint
        );
        Some(CallFailure::Stop { reason, abandon: true })
    }

    /// Whether the endpoint has answered (any HTTP status) through this context.
    pub fn has_answered(&self) -> bool {
        self.reached.load(Ordering::Relaxed)
    }

    /// The endpoint answered before, through another context (an earlier phase of a job):
    /// failures that come back with nothing are then its going silent, not its never
    /// having been reachable.
    pub fn mark_answered(&self) {
        self.reached.store(true, Ordering::Relaxed);
    }

    /// An answer from the endpoint (any HTTP status): it is not silent.
    fn answered(&self) {
        self.reached.store(true, Ordering::Relaxed);
        *self.streak() = SilentStreak::default();
    }

    fn streak(&self) -> std::sync::MutexGuard<'_, SilentStreak> {
        self.silent_since_answer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The reason a 429 stopped the run: its hint pauses every call longer than any may wait.
    fn too_long_to_wait(&self, reason: &str, retry_after: Option<Duration>, window: Option<RateWindow>) -> String {
        let reset = window.and_then(|w| w.resets_in);
        let (hint, said) = if retry_after >= reset {
            (retry_after.unwrap_or_default(), "its retry-after")
        } else {
            (reset.unwrap_or_default(), "its rate-limit reset")
        };
        format!(
            "{reason} — the provider at {} asks every call to wait {} ({said}), longer than --rate-limit-wait {}s: \
             the run stopped; rlm resume goes on once the limit has reset (or raise --rate-limit-wait)",
            self.endpoint,
            crate::duration::format_duration(hint.as_millis() as u64),
            self.policy.rate_limit_wait.as_secs_f64()
        )
    }
}

/// Why a call finally failed.
#[derive(Debug, Clone, PartialEq)]
pub enum CallFailure {
    /// This unit failed; the run goes on.
    Unit { kind: ErrorKind, reason: String },
    /// The provider refused us; the run stops.
    Fatal(String),
    /// The run must stop, though this call had no answer of its own (the endpoint never
    /// answered, or asked every call to wait longer than `--rate-limit-wait`): its unit is
    /// not run, and `reason` is said once, for the run. `abandon`: the calls still in flight
    /// wait for nothing and are cancelled; otherwise they finish (they may be paid for).
    Stop { reason: String, abandon: bool },
    /// The run stopped before the call could (re)start, or while it waited for nothing.
    Halted,
}

/// The end of a call: its answer or failure, and how many attempts were sent.
#[derive(Debug)]
pub struct CallResult {
    pub outcome: Result<Completion, CallFailure>,
    pub attempts: u32,
    /// When its first attempt got a slot and was sent: a call's own time runs from here
    /// (its retries and their waits included, the wait for its first slot not). `None`
    /// when no attempt was sent.
    pub dispatched: Option<Instant>,
    /// A successful call's slot, still held: the caller releases it once the answer is
    /// written (see [`super::Slot::note_success`]).
    pub slot: Option<super::Slot>,
}

/// Calls the provider until it answers, a final error arrives, or a budget runs out. The
/// first attempt waits at `place` (taken when the job was dispatched); retries queue anew.
///
/// At most `fault_retries` fault retries (never more than the policy's `--retries`): a
/// request whose provider batch sends spent part of `--retries` gets only what is left in
/// its realtime fallback, through the run's one context, so its shared counts (a server
/// gone silent, pushback) carry on.
pub async fn call_within_retries(
    ctx: &CallContext,
    request: &CompletionRequest,
    unit: &UnitId,
    label: &str,
    place: Place,
    fault_retries: u32,
) -> CallResult {
    let fault_retries = fault_retries.min(ctx.policy.retries);
    let mut place = Some(place);
    let mut attempts = 0;
    let mut faults = 0;
    let mut empties = 0;
    let mut throttles = 0;
    let limit = ctx.policy.rate_limit_wait;
    let mut budget = RateBudget::new(limit);
    let mut dispatched: Option<Instant> = None;
    let failed = |failure: CallFailure, attempts: u32, dispatched: Option<Instant>| CallResult {
        outcome: Err(failure),
        attempts,
        dispatched,
        slot: None,
    };
    loop {
        // Waits for this call's turn, a free slot, and the end of any pause of the pool
        // (counted against its rate-limit budget).
        let place = place.take().unwrap_or_else(|| ctx.limiter.place());
        let slot = match place.acquire_within(Some(&mut budget)).await {
            Ok(slot) => slot,
            Err(Refused::Halted) => return failed(CallFailure::Halted, attempts, dispatched),
            Err(Refused::PausedPast { left, waited }) => {
                let reason = format!(
                    "rate limited: every call is paused for {:.1}s more, and waiting that out would pass \
                     --rate-limit-wait {}s ({:.1}s spent waiting already): {}",
                    left.as_secs_f64(),
                    limit.as_secs_f64(),
                    waited.as_secs_f64(),
                    wait_advice(ctx.limiter.cap())
                );
                let kind = ErrorKind::RateLimited;
                return failed(CallFailure::Unit { kind, reason }, attempts, dispatched);
            }
        };
        attempts += 1;
        dispatched.get_or_insert_with(Instant::now);
        ctx.emit(Event::Started {
            unit: unit.clone(),
            attempt: attempts,
        });
        let error = match ctx.provider.complete(request).await {
            Ok(completion) => {
                ctx.answered();
                ctx.width_changed(slot.note_success(), WidthWhy::Search);
                return CallResult {
                    outcome: Ok(completion),
                    attempts,
                    dispatched,
                    slot: Some(slot),
                };
            }
            Err(e) => e,
        };
        if !error.silent {
            ctx.answered();
        }
        let CallError {
            kind,
            reason,
            retry_after,
            window,
            silent,
        } = error;
        let mut paused_all = false;
        let wait = match kind {
            ErrorKind::Fatal => {
                // Halted before the slot is released: nothing else starts after this.
                ctx.limiter.halt();
                drop(slot);
                return failed(CallFailure::Fatal(reason), attempts, dispatched);
            }
            ErrorKind::Unit => return failed(CallFailure::Unit { kind, reason }, attempts, dispatched),
            ErrorKind::RateLimited => {
                throttles += 1;
                let throttled = slot.throttled(Throttle { retry_after, window }, limit);
                ctx.width_changed(throttled.change, WidthWhy::Pushback);
                if throttled.stops_run {
                    let reason = ctx.too_long_to_wait(&reason, retry_after, window);
                    return failed(CallFailure::Stop { reason, abandon: false }, attempts, dispatched);
                }
                if ctx.limiter.is_halted() {
                    return failed(CallFailure::Halted, attempts, dispatched);
                }
                // This call waits what the server asked, and longer when its 429s repeat;
                // when the whole pool pauses, at least that long.
                let own = at_least(
                    retry_after.map(|h| ctx.policy.after_server_hint(h)),
                    ctx.policy.backoff(throttles),
                );
                paused_all = throttled.pause.is_some();
                let wait = own.max(throttled.pause.unwrap_or_default());
                if budget.exceeded_by(wait) {
                    return failed(
                        CallFailure::Unit {
                            kind,
                            reason: format!(
                                "{reason} (rate limited for {:.1}s; waiting {:.1}s more would pass --rate-limit-wait {}s: \
                                 {})",
                                budget.waited.as_secs_f64(),
                                wait.as_secs_f64(),
                                limit.as_secs_f64(),
                                wait_advice(ctx.limiter.cap())
                            ),
                        },
                        attempts,
                        dispatched,
                    );
                }
                own
            }
            ErrorKind::Overloaded
            | ErrorKind::Transient
            | ErrorKind::Timeout
            | ErrorKind::Unreachable
            | ErrorKind::EmptyReply => {
                if silent {
                    if let Some(end) = ctx.silent_failure(unit, kind, &reason) {
                        drop(slot);
                        return failed(end, attempts, dispatched);
                    }
                }
                faults += 1;
                if kind == ErrorKind::EmptyReply {
                    empties += 1;
                }
                if faults > fault_retries || empties > 1 {
                    let tries = if attempts == 1 {
                        "1 attempt".to_string()
                    } else {
                        format!("{attempts} attempts")
                    };
                    let reason = if empties > 1 {
                        format!("the model returned no answer, twice: {reason}")
                    } else {
                        format!("{reason} (gave up after {tries})")
                    };
                    return failed(CallFailure::Unit { kind, reason }, attempts, dispatched);
                }
                if kind == ErrorKind::Overloaded {
                    ctx.width_changed(slot.overloaded(), WidthWhy::Pushback);
                } else {
                    ctx.width_changed(slot.faulted(), WidthWhy::Search);
                }
                at_least(
                    retry_after.map(|h| ctx.policy.after_server_hint(h)),
                    ctx.policy.backoff(faults),
                )
            }
        };
        ctx.emit(Event::Retried {
            unit: unit.clone(),
            label: label.into(),
            attempt: attempts,
            error: kind,
            reason,
            wait_ms: wait.max(ctx.limiter.paused_for()).as_millis() as u64,
            paused_all,
        });
        let from = Instant::now();
        // A call waiting out a backoff or a 429 holds no request: once the run stops (Ctrl-C,
        // the budget, a fatal error) no slot would take its retry, so it ends now instead
        // of at the end of its wait (a `retry-after: 40` held Ctrl-C for the whole grace).
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = ctx.limiter.halted() => return failed(CallFailure::Halted, attempts, dispatched),
        }
        if kind == ErrorKind::RateLimited {
            budget.waited += from.elapsed();
        }
    }
}

/// A server's hint, but never less than the backoff: `retry-after: 0` must not make a busy
/// loop, and a hint repeated despite failing must not keep the pace.
fn at_least(hint: Option<Duration>, backoff: Duration) -> Duration {
    hint.map_or(backoff, |h| h.max(backoff))
}

/// How long the pool waits for calls in flight after an interrupt.
pub const GRACE: Duration = Duration::from_secs(10);

/// What to do about a spent `--rate-limit-wait`: fewer calls at once helps only where more
/// than one may run.
fn wait_advice(max_parallel: usize) -> &'static str {
    if max_parallel > 1 {
        "raise it, or lower --max-parallel"
    } else {
        "raise it"
    }
}

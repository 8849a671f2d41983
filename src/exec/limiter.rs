//! The pool's adaptive width: how many calls may be in flight, learned from how the
//! provider answers, and when none may start at all.
//!
//! The policy:
//! - **Start** at the cap (`--max-parallel`); a local server's pool starts at one call and
//!   searches for its width (below) only when the width is rlm's default: a width the user
//!   gave (`-j N`) is where the pool starts against any server (issue 27: a `-j 7` run
//!   against a fast local server spent most of its time below 7).
//! - **A 429 while other calls of ours are in flight** means "too many at once" (a
//!   concurrency limit): the width drops to the number of calls still in flight — what the
//!   server is carrying — and that becomes the *sustained* width. Only the refused call
//!   waits (see `call.rs`); the others go on. A burst of k refusals out of w calls settles at
//!   w − k, the server's real limit, within the burst.
//! - **A 429 with nothing else of ours in flight, or whose headers say a request or token
//!   budget is spent**, means "not now" to every call (a per-minute window): the whole pool
//!   pauses until the window resets (the reset headers or `retry-after`), at least about a
//!   second. Pauses that follow one another with no success between them grow
//!   exponentially with jitter (1, 2, 4 … 60 s), whatever the server says, so a server that
//!   answers `retry-after: 1` (or 0) for minutes is asked once per pause, not once a second.
//!   After a pause one call goes alone; its success reopens the pool one call at a time
//!   (each success of a call started since the pause lets one more go): a sliding window
//!   frees its slots in the order they were taken, so a pool that reopened all at once
//!   would be refused — and refusals that count against the window would keep it full.
//!   When the narrowing
//!   that led to such a pause was the window filling up, not a concurrency limit, the
//!   sustained width it lowered is restored.
//! - **Growth**: a success widens the pool by one while it is below the sustained width (a
//!   quick return after an overload or a pause). At the sustained width it tries one more
//!   only after [`PROBE_ROUNDS`] rounds of successes and only while calls wait for a slot,
//!   so a limit once found is tested rarely; a wider width that survives a round becomes the
//!   sustained one. Never above the cap.
//! - **Overload** (529, 503) halves the width, once per burst, and leaves the sustained width
//!   alone (the width grows back to it). Only pushback on a call that started after the last
//!   decrease counts, so the seven 529s of one burst halve the width once, not seven times.
//! - **Local servers** (llama.cpp's server runs one request at a time), when no width was
//!   given, start at one call and
//!   widen by one only while each step raises the calls completed per second by at least
//!   half of what the step could add; the first step that does not, or a fault or pushback
//!   during a step, goes back to the best width for good ([`WidthSearch`]).
//!
//! - **A pause no call may wait out**: when the server's own hint (`retry-after`, a reset
//!   header) asks the whole pool to wait longer than `--rate-limit-wait`, holding the calls
//!   only to fail each of them later helps no one: the limiter halts, and the call that heard
//!   it stops the run with one message (its units are not run; `rlm resume` goes on once
//!   the window has reset). Time a call spends waiting in the queue while the pool is
//!   paused counts against its own `--rate-limit-wait` ([`RateBudget`]); a pause longer
//!   than what a call has left fails that call at once instead of holding it.
//!
//! A slot is taken per attempt and given back while a call waits to retry, so a narrowed
//! pool is really narrower. Slots are given out first come, first served, so `-j 1` runs
//! units in plan order. Once halted (an interrupt, a fatal error, the budget), no slot is
//! given out.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::retry::random_unit;
use super::width_search::WidthSearch;
use crate::provider::RateWindow;

/// Rounds of successes at the sustained width before one more call is tried.
pub const PROBE_ROUNDS: usize = 8;
/// The first pause of the pool (before jitter); each pause with no success since the last
/// one doubles it.
const FIRST_PAUSE: Duration = Duration::from_secs(1);
/// The longest pause the backoff alone makes (a server's reset time may ask for more).
const LONGEST_PAUSE: Duration = Duration::from_secs(60);

/// The shared limiter of one run.
#[derive(Debug)]
pub struct Limiter {
    cap: usize,
    /// The cap was given (`-j N`): the pool starts there and no width search lowers it.
    given: bool,
    state: Mutex<State>,
    notify: Notify,
}

#[derive(Debug)]
struct State {
    width: usize,
    /// The widest the provider is known to carry (the cap until a 429 says otherwise).
    sustained: usize,
    /// The sustained width before the narrowings since the last success; restored when they
    /// end in a pause (the window was full, it was not a concurrency limit).
    narrowed_from: Option<usize>,
    in_flight: usize,
    halted: bool,
    /// Bumped at every decrease: pushback on a slot taken before it is of an old burst.
    epoch: u64,
    /// Bumped at every change of width: a success counts for growth only at the width its
    /// call started at.
    generation: u64,
    successes: usize,
    /// No slot is given out before this.
    paused_until: Option<Instant>,
    /// Pauses with no success since the first of them.
    pauses: u32,
    /// After a pause: at most this many calls at once — one (the probe) at first, one more
    /// with each success of a call started since — until the width is reached.
    ramp: Option<usize>,
    /// Local servers: the search for the width that serves most.
    search: Option<WidthSearch>,
    /// Tickets of the callers waiting for a slot, in arrival order.
    queue: VecDeque<u64>,
    next_ticket: u64,
}

/// A change of width, for the user to hear about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WidthChange {
    pub from: usize,
    pub to: usize,
}

/// What a 429 said.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Throttle {
    pub retry_after: Option<Duration>,
    pub window: Option<RateWindow>,
}

/// What the limiter made of a 429.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttled {
    pub change: Option<WidthChange>,
    /// The whole pool waits this long (from now); `None`: only the refused call waits.
    pub pause: Option<Duration>,
    /// The server's hint paused the whole pool for longer than any call may wait
    /// (`--rate-limit-wait`): the limiter halted, and this call is the first to hear it
    /// (it says why the run stopped; calls that hear it later are simply not run).
    pub stops_run: bool,
}

/// How long one call may spend waiting out rate limits (`--rate-limit-wait`), and how long
/// it has so far: its own waits after a 429 and the time it waited in the queue while the
/// pool was paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateBudget {
    pub limit: Duration,
    pub waited: Duration,
}

impl RateBudget {
    pub fn new(limit: Duration) -> Self {
        RateBudget {
            limit,
            waited: Duration::ZERO,
        }
    }

    /// Whether waiting `more` would pass the limit.
    pub fn exceeded_by(&self, more: Duration) -> bool {
        self.waited + more > self.limit
    }
}

/// Why a place in the queue gave no slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The run stopped dispatching.
    Halted,
    /// The pool is paused for `left` more, which would take the call past its
    /// `--rate-limit-wait` (it had waited `waited` already).
    PausedPast { left: Duration, waited: Duration },
}

impl State {
    fn change_width(&mut self, to: usize) -> Option<WidthChange> {
        let from = self.width;
        if to == from {
            return None;
        }
        self.width = to;
        self.generation += 1;
        self.successes = 0;
        if to < from {
            self.epoch += 1;
        }
        Some(WidthChange { from, to })
    }

    /// The search met trouble: back to its best width.
    fn search_trouble(&mut self) -> Option<WidthChange> {
        let width = self.width;
        let best = self.search.as_mut()?.trouble(width)?;
        self.sustained = best;
        self.change_width(best)
    }
}

impl Limiter {
    /// A limiter that starts (and stays at most) at `cap`, rlm's default width: a local
    /// server may search below it ([`Limiter::search_from_one`]).
    pub fn new(cap: usize) -> Arc<Self> {
        Self::starting_at(cap, false)
    }

    /// A limiter at a width the user gave (`given`: `-j N`, a job phase's `concurrency`),
    /// which starts there against any server, or at rlm's default ([`Limiter::new`]).
    pub fn starting_at(cap: usize, given: bool) -> Arc<Self> {
        let cap = cap.max(1);
        Arc::new(Limiter {
            cap,
            given,
            state: Mutex::new(State {
                width: cap,
                sustained: cap,
                narrowed_from: None,
                in_flight: 0,
                halted: false,
                epoch: 0,
                generation: 0,
                successes: 0,
                paused_until: None,
                pauses: 0,
                ramp: None,
                search: None,
                queue: VecDeque::new(),
                next_ticket: 0,
            }),
            notify: Notify::new(),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A local server: start at one call and widen only while throughput improves — unless
    /// the width was given, which is where the pool stays.
    pub fn search_from_one(&self) {
        let mut s = self.state();
        if s.search.is_none() && self.cap > 1 && !self.given {
            s.search = Some(WidthSearch::default());
            s.change_width(1);
        }
    }

    /// Waits for a slot, behind everyone who asked earlier; `None` once halted.
    pub async fn acquire(self: &Arc<Self>) -> Option<Slot> {
        self.place().acquire().await
    }

    /// A place in the queue, taken now; the slot is waited for later with
    /// [`Place::acquire`]. A job takes its place when it is dispatched, so slots follow
    /// the plan's order even when the jobs' first steps finish out of order.
    pub fn place(self: &Arc<Self>) -> Place {
        let mut s = self.state();
        let ticket = s.next_ticket;
        s.next_ticket += 1;
        s.queue.push_back(ticket);
        Place {
            limiter: self.clone(),
            ticket,
        }
    }

    /// No slot is given out from now on; waiters get `None`.
    pub fn halt(&self) {
        self.halt_first();
    }

    /// [`Limiter::halt`]; true for the caller that halted it (the one to say why the run
    /// stopped), false when it already was.
    pub fn halt_first(&self) -> bool {
        let first = !std::mem::replace(&mut self.state().halted, true);
        self.notify.notify_waiters();
        first
    }

    /// Returns once the limiter is halted (an interrupt, a fatal error, the budget): what a
    /// job waiting for something other than a slot (another run's claim on its key) waits
    /// for beside it.
    pub async fn halted(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.state().halted {
                return;
            }
            notified.await;
        }
    }

    pub fn is_halted(&self) -> bool {
        self.state().halted
    }

    /// The most calls it ever lets run at once (`--max-parallel`).
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// The current width.
    pub fn width(&self) -> usize {
        self.state().width
    }

    /// The widest the provider is known to carry.
    pub fn sustained(&self) -> usize {
        self.state().sustained
    }

    /// Calls in flight now.
    pub fn in_flight(&self) -> usize {
        self.state().in_flight
    }

    /// How long the pool stays paused from now (zero when it is not).
    pub fn paused_for(&self) -> Duration {
        self.state()
            .paused_until
            .map_or(Duration::ZERO, |u| u.saturating_duration_since(Instant::now()))
    }

    fn release(&self) {
        let mut s = self.state();
        s.in_flight = s.in_flight.saturating_sub(1);
        drop(s);
        self.notify.notify_waiters();
    }
}

/// A caller's place in the queue; it leaves the queue when it is used or dropped, and
/// the next in line is told.
#[derive(Debug)]
pub struct Place {
    limiter: Arc<Limiter>,
    ticket: u64,
}

impl Place {
    /// Waits for this place's turn, the end of any pause and a free slot; `None` once halted.
    pub async fn acquire(self) -> Option<Slot> {
        self.acquire_within(None).await.ok()
    }

    /// [`Place::acquire`] for a call with a rate-limit budget: the time it waits while the
    /// pool is paused is added to `budget`, and a pause that would take it past its limit
    /// refuses it at once (it is not held only to fail later).
    pub async fn acquire_within(self, mut budget: Option<&mut RateBudget>) -> Result<Slot, Refused> {
        let limiter = self.limiter.clone();
        let ticket = self.ticket;
        loop {
            let notified = limiter.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let paused_until = {
                let mut s = limiter.state();
                if s.halted {
                    return Err(Refused::Halted);
                }
                let now = Instant::now();
                match s.paused_until {
                    Some(until) if until > now => {
                        let left = until - now;
                        if let Some(budget) = budget.as_deref() {
                            if budget.exceeded_by(left) {
                                return Err(Refused::PausedPast {
                                    left,
                                    waited: budget.waited,
                                });
                            }
                        }
                        Some(until)
                    }
                    _ => {
                        let width = s.ramp.map_or(s.width, |r| r.min(s.width));
                        if s.queue.front() == Some(&ticket) && s.in_flight < width {
                            s.in_flight += 1;
                            return Ok(Slot {
                                limiter: limiter.clone(),
                                epoch: s.epoch,
                                generation: s.generation,
                            });
                        }
                        None
                    }
                }
            };
            match paused_until {
                Some(until) => {
                    let from = Instant::now();
                    tokio::select! {
                        () = &mut notified => {}
                        () = tokio::time::sleep_until(until) => {}
                    }
                    if let Some(budget) = budget.as_deref_mut() {
                        budget.waited += from.elapsed();
                    }
                }
                None => notified.await,
            }
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut s = self.limiter.state();
        if let Some(i) = s.queue.iter().position(|t| *t == self.ticket) {
            s.queue.remove(i);
        }
        drop(s);
        self.limiter.notify.notify_waiters();
    }
}

/// Permission for one attempt; released when dropped.
#[derive(Debug)]
pub struct Slot {
    limiter: Arc<Limiter>,
    epoch: u64,
    generation: u64,
}

impl Slot {
    /// The attempt succeeded: the pool reopens after a pause, and grows.
    pub fn succeeded(self) -> Option<WidthChange> {
        self.note_success()
    }

    /// [`Slot::succeeded`], keeping the slot: a job holds it until its answer is in the
    /// cache (not yet fsynced: see [`crate::exec::Paid`]) and its cost counted, so at most
    /// `width` answers are ever paid for but not yet kept.
    pub fn note_success(&self) -> Option<WidthChange> {
        let change = {
            let mut s = self.limiter.state();
            let s = &mut *s;
            // Evidence about the present: the call started after the last decrease.
            if self.epoch == s.epoch {
                s.pauses = 0;
                s.narrowed_from = None;
                if let Some(ramp) = s.ramp {
                    s.ramp = (ramp + 1 < s.width).then_some(ramp + 1);
                    self.limiter.notify.notify_waiters();
                }
            }
            if self.generation != s.generation {
                None
            } else if let Some(search) = s.search.as_mut() {
                let to = search.succeeded(Instant::now(), s.width, self.limiter.cap);
                to.and_then(|to| {
                    s.sustained = to;
                    s.change_width(to)
                })
            } else if s.width < s.sustained {
                s.change_width(s.width + 1)
            } else {
                s.successes += 1;
                if s.width > s.sustained && s.successes >= s.width {
                    // The wider width carried a whole round: it is sustained.
                    s.sustained = s.width;
                    s.successes = 0;
                    None
                } else if s.width == s.sustained
                    && s.width < self.limiter.cap
                    && s.successes >= PROBE_ROUNDS * s.width
                    && !s.queue.is_empty()
                {
                    s.change_width(s.width + 1)
                } else {
                    None
                }
            }
        };
        change
    }

    /// The provider said 429: narrow to what it carries, or pause the whole pool — or, when
    /// the server's hint pauses it for longer than `wait_limit` (`--rate-limit-wait`), halt.
    pub fn throttled(self, throttle: Throttle, wait_limit: Duration) -> Throttled {
        let outcome = {
            let mut s = self.limiter.state();
            let s = &mut *s;
            let now = Instant::now();
            let others = s.in_flight.saturating_sub(1);
            let spent = throttle.window.is_some_and(|w| w.spent);
            let searched = s.search_trouble();
            if spent || others == 0 {
                let paused = s.paused_until.is_some_and(|u| u > now);
                if !paused {
                    s.pauses += 1;
                }
                let reset = throttle.window.and_then(|w| w.resets_in);
                let hinted = throttle.retry_after.max(reset).unwrap_or(Duration::ZERO);
                // A reset says when the window frees its first slot: a little later, the
                // slots taken just after it are free too, and the refusals it counted.
                let woken = throttle.retry_after.max(reset.map(|r| r + reset_margin(r)));
                let until = now + pause_length(s.pauses, woken.unwrap_or(Duration::ZERO));
                s.paused_until = Some(s.paused_until.map_or(until, |u| u.max(until)));
                s.ramp = Some(1);
                if let Some(before) = s.narrowed_from.take() {
                    s.sustained = s.sustained.max(before);
                }
                s.epoch += 1;
                s.successes = 0;
                // Only the server's word stops the run: our own backoff never grows past
                // a minute, and a call that cannot wait it out fails alone.
                let stops_run = hinted > wait_limit && !std::mem::replace(&mut s.halted, true);
                Throttled {
                    change: searched,
                    pause: s.paused_until.map(|u| u.saturating_duration_since(now)),
                    stops_run,
                }
            } else {
                let to = s.width.min(others).max(1);
                if s.narrowed_from.is_none() {
                    s.narrowed_from = Some(s.sustained);
                }
                s.sustained = s.sustained.min(to);
                let change = s.change_width(to);
                s.successes = 0;
                Throttled {
                    change: searched.or(change),
                    pause: None,
                    stops_run: false,
                }
            }
        };
        drop(self);
        outcome
    }

    /// The provider is overloaded (529, 503): halve the width, once per burst.
    pub fn overloaded(self) -> Option<WidthChange> {
        let change = {
            let mut s = self.limiter.state();
            let searched = s.search_trouble();
            if searched.is_some() {
                searched
            } else if s.epoch == self.epoch && s.width > 1 {
                let to = (s.width / 2).max(1);
                s.change_width(to)
            } else {
                None
            }
        };
        change
    }

    /// The attempt failed otherwise (a timeout, a server error): a local server's width
    /// search stops at its best width.
    pub fn faulted(self) -> Option<WidthChange> {
        let change = self.limiter.state().search_trouble();
        drop(self);
        change
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.limiter.release();
    }
}

/// How much later than a rate-limit reset the pool wakes: a tenth of the wait, at most a
/// second. A sliding window frees its slots one by one, from the time it names; a window
/// that counts refused requests holds one more for each refusal (issue 17: waking at the
/// reset itself, the probe was refused and the refusal kept the window full).
fn reset_margin(reset: Duration) -> Duration {
    (reset / 10).min(Duration::from_secs(1))
}

/// How long pause number `n` (1-based, counted since the last success) lasts: what the
/// server asked, but at least an "equal jitter" backoff, uniform in [d/2, d] with
/// d = 1 s·2^(n-1) capped at 60 s — a server's hint only lengthens it.
fn pause_length(n: u32, hinted: Duration) -> Duration {
    let d = FIRST_PAUSE
        .saturating_mul(1u32 << n.saturating_sub(1).min(16))
        .min(LONGEST_PAUSE);
    let backoff = d / 2 + d.mul_f64(random_unit() / 2.0);
    // A little spread after a hint too, so a pool does not come back in one instant.
    let hinted = hinted
        + hinted
            .mul_f64(0.1)
            .min(Duration::from_millis(250))
            .mul_f64(random_unit());
    backoff.max(hinted)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--rate-limit-wait` at its default: no hint in these tests reaches it.
    const PATIENT: Duration = Duration::from_secs(600);

    async fn take(l: &Arc<Limiter>, n: usize) -> Vec<Slot> {
        let mut v = Vec::new();
        for _ in 0..n {
            v.push(l.acquire().await.unwrap());
        }
        v
    }

    #[tokio::test]
    async fn a_burst_of_429s_settles_at_what_the_server_carries() {
        let l = Limiter::new(7);
        let mut slots = take(&l, 7).await;
        // The server carries 3: the other 4 are refused while those 3 are in flight.
        let refused: Vec<Slot> = slots.drain(3..).collect();
        let outcomes: Vec<Throttled> = refused
            .into_iter()
            .map(|s| s.throttled(Throttle::default(), PATIENT))
            .collect();
        assert!(
            outcomes.iter().all(|o| o.pause.is_none()),
            "a concurrency 429 pauses no one"
        );
        assert_eq!((l.width(), l.sustained(), l.in_flight()), (3, 3, 3));
        assert_eq!(l.paused_for(), Duration::ZERO);
        // The three old calls succeed: they started before the decrease, so nothing grows.
        for s in slots {
            assert_eq!(s.succeeded(), None);
        }
        assert_eq!(l.width(), 3);
    }

    #[tokio::test]
    async fn at_the_sustained_width_one_more_is_tried_only_after_rounds_and_while_calls_wait() {
        let l = Limiter::new(7);
        let mut slots = take(&l, 4).await;
        for s in slots.drain(3..) {
            s.throttled(Throttle::default(), PATIENT);
        }
        drop(slots);
        assert_eq!(l.width(), 3);
        // With calls waiting, the probe comes after PROBE_ROUNDS rounds.
        let mut changes = Vec::new();
        for i in 1..=PROBE_ROUNDS * 3 {
            let slot = l.acquire().await.unwrap();
            let waiting = l.place();
            if let Some(c) = slot.succeeded() {
                changes.push((i, c));
            }
            drop(waiting);
        }
        assert_eq!(changes, [(PROBE_ROUNDS * 3, WidthChange { from: 3, to: 4 })]);
        // The probe width is refused: back to 3, and sustained stays 3.
        let slots = take(&l, 4).await;
        let mut slots = slots.into_iter();
        let first = slots.next().unwrap().throttled(Throttle::default(), PATIENT);
        assert_eq!(first.change, Some(WidthChange { from: 4, to: 3 }));
        assert_eq!(l.sustained(), 3);
        drop(slots);
        // Nobody waiting: no probe however long it goes well.
        for _ in 0..100 {
            l.acquire().await.unwrap().succeeded();
        }
        assert_eq!(l.width(), 3);
    }

    #[tokio::test]
    async fn a_429_with_nothing_else_in_flight_pauses_everyone_and_repeats_back_off() {
        let l = Limiter::new(4);
        let lone = l.acquire().await.unwrap();
        let hint = Throttle {
            retry_after: Some(Duration::from_secs(1)),
            window: None,
        };
        let first = lone.throttled(hint, PATIENT).pause.unwrap();
        assert!(
            first >= Duration::from_secs(1) && first <= Duration::from_millis(1250),
            "{first:?}"
        );
        // A server that keeps saying "1 s": each pause with no success between doubles.
        let mut pauses = Vec::new();
        for _ in 0..7 {
            l.state().paused_until = None; // as if the pause had passed
            let probe = l.acquire().await.unwrap();
            pauses.push(probe.throttled(hint, PATIENT).pause.unwrap());
        }
        assert!(pauses[5] >= Duration::from_secs(30), "{pauses:?}");
        assert!(
            pauses.iter().all(|p| *p <= LONGEST_PAUSE + Duration::from_millis(250)),
            "{pauses:?}"
        );
        // `retry-after: 0` still waits.
        l.state().paused_until = None;
        l.state().pauses = 0;
        let zero = l.acquire().await.unwrap().throttled(
            Throttle {
                retry_after: Some(Duration::ZERO),
                window: None,
            },
            PATIENT,
        );
        assert!(zero.pause.unwrap() >= Duration::from_millis(500));
    }

    #[tokio::test]
    async fn a_spent_window_pauses_the_pool_until_it_resets_then_one_call_probes() {
        let l = Limiter::new(4);
        let mut slots = take(&l, 4).await;
        let spent = Throttle {
            retry_after: None,
            window: Some(RateWindow {
                spent: true,
                resets_in: Some(Duration::from_millis(300)),
            }),
        };
        let outcome = slots.pop().unwrap().throttled(spent, PATIENT);
        assert!(
            outcome.pause.unwrap() >= Duration::from_millis(500),
            "at least the backoff floor"
        );
        assert_eq!(l.width(), 4, "a window says nothing about width");
        drop(slots);
        let waiter = tokio::spawn({
            let l = l.clone();
            async move { l.acquire().await.map(|s| (s, Instant::now())) }
        });
        let paused_at = Instant::now();
        let (probe, got) = waiter.await.unwrap().unwrap();
        assert!(got.duration_since(paused_at) >= Duration::from_millis(400));
        // Probing: a second call waits until the probe succeeds.
        let acquirer = || {
            let l = l.clone();
            tokio::spawn(async move { l.acquire().await.unwrap() })
        };
        let second = acquirer();
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!second.is_finished(), "one call probes alone");
        probe.succeeded();
        let second = second.await.unwrap();
        // Then the pool reopens one call per success: two at once now, not four.
        let third = acquirer();
        let fourth = acquirer();
        let third = third.await.unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!fourth.is_finished(), "two at once after one success");
        second.succeeded();
        let fourth = fourth.await.unwrap();
        third.succeeded();
        fourth.succeeded();
        assert_eq!(take(&l, 4).await.len(), 4, "back to the whole width");
    }

    #[tokio::test]
    async fn the_pool_wakes_a_little_after_a_windows_reset() {
        let l = Limiter::new(2);
        let reset = |ms| Throttle {
            retry_after: None,
            window: Some(RateWindow {
                spent: true,
                resets_in: Some(Duration::from_millis(ms)),
            }),
        };
        let pause = l
            .acquire()
            .await
            .unwrap()
            .throttled(reset(4_000), PATIENT)
            .pause
            .unwrap();
        assert!(pause >= Duration::from_millis(4_400), "a tenth later: {pause:?}");
        l.state().paused_until = None;
        let pause = l
            .acquire()
            .await
            .unwrap()
            .throttled(reset(60_000), PATIENT)
            .pause
            .unwrap();
        assert!(
            pause >= Duration::from_secs(61) && pause <= Duration::from_millis(61_300),
            "at most a second later: {pause:?}"
        );
        // A retry-after is taken as it is.
        l.state().paused_until = None;
        let hint = Throttle {
            retry_after: Some(Duration::from_secs(4)),
            window: None,
        };
        let pause = l.acquire().await.unwrap().throttled(hint, PATIENT).pause.unwrap();
        assert!(pause <= Duration::from_millis(4_300), "{pause:?}");
    }

    #[tokio::test]
    async fn narrowings_that_end_in_a_pause_were_a_window_and_do_not_lower_the_sustained_width() {
        let l = Limiter::new(5);
        let slots = take(&l, 5).await;
        for s in slots {
            s.throttled(Throttle::default(), PATIENT);
        }
        assert_eq!(l.width(), 1);
        assert_eq!(l.sustained(), 5, "restored by the pause");
        assert!(l.paused_for() > Duration::ZERO);
        l.state().paused_until = None;
        // After the pause, the probe's success reopens and the width climbs back quickly.
        for _ in 0..4 {
            l.acquire().await.unwrap().succeeded();
        }
        assert_eq!(l.width(), 5);
    }

    #[tokio::test]
    async fn time_waited_while_paused_counts_against_a_calls_budget_and_a_longer_pause_refuses_it_at_once() {
        let l = Limiter::new(2);
        let hint = |ms| Throttle {
            retry_after: Some(Duration::from_millis(ms)),
            window: None,
        };
        let lone = l.acquire().await.unwrap();
        let pause = lone.throttled(hint(300), PATIENT).pause.unwrap();
        let mut budget = RateBudget::new(Duration::from_secs(5));
        let slot = l.place().acquire_within(Some(&mut budget)).await.unwrap();
        assert!(
            budget.waited >= pause.checked_sub(Duration::from_millis(50)).unwrap(),
            "{budget:?} after a pause of {pause:?}"
        );
        // The next pause is longer than what this call has left: refused without waiting.
        let pause = slot.throttled(hint(1_000), PATIENT).pause.unwrap();
        let mut short = RateBudget {
            limit: Duration::from_millis(700),
            waited: Duration::from_millis(400),
        };
        match l.place().acquire_within(Some(&mut short)).await {
            Err(Refused::PausedPast { left, waited }) => {
                assert!(
                    left <= pause && waited == Duration::from_millis(400),
                    "{left:?} {waited:?}"
                );
            }
            other => panic!("held instead of refused: {other:?}"),
        }
        assert_eq!(short.waited, Duration::from_millis(400), "nothing more was waited");
        assert!(!l.is_halted(), "a call's budget stops only that call");
    }

    #[tokio::test]
    async fn a_hint_longer_than_any_call_may_wait_halts_the_pool_and_only_the_first_says_so() {
        let l = Limiter::new(3);
        let slots = take(&l, 2).await;
        let day = Throttle {
            retry_after: None,
            window: Some(RateWindow {
                spent: true,
                resets_in: Some(Duration::from_secs(3_600)),
            }),
        };
        let outcomes: Vec<Throttled> = slots.into_iter().map(|s| s.throttled(day, PATIENT)).collect();
        assert_eq!(outcomes.iter().map(|o| o.stops_run).collect::<Vec<_>>(), [true, false]);
        assert!(l.is_halted());
        assert!(l.acquire().await.is_none(), "nothing starts after it");
        // Our own backoff never stops a run: a short hint with a short limit only pauses.
        let l = Limiter::new(1);
        let short = Throttle {
            retry_after: Some(Duration::from_millis(100)),
            window: None,
        };
        let outcome = l.acquire().await.unwrap().throttled(short, Duration::from_millis(200));
        assert!(!outcome.stops_run && outcome.pause.is_some() && !l.is_halted());
    }

    #[tokio::test]
    async fn halted_returns_once_the_limiter_halts() {
        let l = Limiter::new(1);
        let waiter = tokio::spawn({
            let l = l.clone();
            async move { l.halted().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        assert!(l.halt_first());
        assert!(!l.halt_first(), "the first halt is the one that counts");
        waiter.await.unwrap();
        l.halted().await;
    }

    #[tokio::test]
    async fn overload_halves_once_per_burst_and_grows_back_to_the_sustained_width() {
        let l = Limiter::new(7);
        let slots = take(&l, 7).await;
        let mut changes = slots.into_iter().map(Slot::overloaded);
        assert_eq!(changes.next().flatten(), Some(WidthChange { from: 7, to: 3 }));
        assert!(changes.all(|c| c.is_none()), "one burst halves once");
        assert_eq!((l.width(), l.sustained(), l.in_flight()), (3, 7, 0));
        for _ in 0..4 {
            l.acquire().await.unwrap().succeeded();
        }
        assert_eq!(l.width(), 7);
        for _ in 0..100 {
            l.acquire().await.unwrap().succeeded();
        }
        assert_eq!(l.width(), 7, "never above the cap");
    }

    #[tokio::test]
    async fn a_narrowed_pool_waits_and_halt_releases_waiters() {
        let l = Limiter::new(2);
        let a = l.acquire().await.unwrap();
        let b = l.acquire().await.unwrap();
        drop(a);
        let c = l.acquire().await.unwrap();
        assert_eq!(l.in_flight(), 2);
        let waiter = tokio::spawn({
            let l = l.clone();
            async move { l.acquire().await.is_some() }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        drop(b);
        assert!(waiter.await.unwrap());
        drop(c);
        l.halt();
        assert!(l.acquire().await.is_none());
    }

    #[tokio::test]
    async fn slots_go_first_come_first_served() {
        let l = Limiter::new(1);
        let held = l.acquire().await.unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..5 {
            let (l, order) = (l.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let slot = l.acquire().await.unwrap();
                order.lock().unwrap().push(i);
                tokio::task::yield_now().await;
                drop(slot);
            }));
            // Each waiter is queued before the next one is spawned.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(held);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3, 4]);
    }

    #[tokio::test]
    async fn a_local_server_starts_at_one_and_a_fault_during_a_step_goes_back() {
        let l = Limiter::new(4);
        l.search_from_one();
        assert_eq!(l.width(), 1);
        for _ in 0..WidthSearch::sample(1) {
            l.acquire().await.unwrap().succeeded();
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        assert_eq!(l.width(), 2);
        assert_eq!(
            l.acquire().await.unwrap().faulted(),
            Some(WidthChange { from: 2, to: 1 })
        );
        for _ in 0..50 {
            l.acquire().await.unwrap().succeeded();
        }
        assert_eq!(l.width(), 1, "settled at the best width");
    }

    #[tokio::test]
    async fn a_given_width_is_where_a_local_server_starts() {
        let l = Limiter::starting_at(4, true);
        l.search_from_one();
        assert_eq!(l.width(), 4);
        let mut slots = Vec::new();
        for _ in 0..4 {
            slots.push(l.acquire().await.unwrap());
        }
        assert_eq!(l.in_flight(), 4, "four at once from the start");
    }
}

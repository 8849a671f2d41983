//! The pool's adaptive width: at most `cap` calls in flight, fewer while the provider
//! pushes back.
//!
//! Additive increase, multiplicative decrease (as TCP does): a rate limit or an overload
//! halves the width (at least 1), and each run of `width` successes raises it by one, never
//! above the cap. Only pushback on a call that started after the last decrease counts, so
//! the seven 429s of one burst halve the width once, not seven times. A slot is taken per
//! attempt and given back while a call waits to retry, so a narrowed pool is really
//! narrower. Slots are given out first come, first served, so `-j 1` runs units in plan
//! order. Once halted (an interrupt, a fatal error, the budget), no slot is given out.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

/// The shared limiter of one run.
#[derive(Debug)]
pub struct Limiter {
    cap: usize,
    state: Mutex<State>,
    notify: Notify,
}

#[derive(Debug)]
struct State {
    width: usize,
    in_flight: usize,
    halted: bool,
    /// Bumped at every decrease; a slot remembers the epoch it was taken in.
    epoch: u64,
    successes: usize,
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

impl Limiter {
    /// A limiter that starts (and stays at most) at `cap`.
    pub fn new(cap: usize) -> Arc<Self> {
        let cap = cap.max(1);
        Arc::new(Limiter {
            cap,
            state: Mutex::new(State {
                width: cap,
                in_flight: 0,
                halted: false,
                epoch: 0,
                successes: 0,
                queue: VecDeque::new(),
                next_ticket: 0,
            }),
            notify: Notify::new(),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
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
        self.state().halted = true;
        self.notify.notify_waiters();
    }

    pub fn is_halted(&self) -> bool {
        self.state().halted
    }

    /// The current width.
    pub fn width(&self) -> usize {
        self.state().width
    }

    /// Calls in flight now.
    pub fn in_flight(&self) -> usize {
        self.state().in_flight
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
    /// Waits for this place's turn and a free slot; `None` once halted.
    pub async fn acquire(self) -> Option<Slot> {
        let limiter = self.limiter.clone();
        let ticket = self.ticket;
        loop {
            let notified = limiter.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut s = limiter.state();
                if s.halted {
                    return None;
                }
                if s.queue.front() == Some(&ticket) && s.in_flight < s.width {
                    s.in_flight += 1;
                    return Some(Slot {
                        limiter: limiter.clone(),
                        epoch: s.epoch,
                    });
                }
            }
            notified.await;
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
}

impl Slot {
    /// The attempt succeeded: one step towards a wider pool.
    pub fn succeeded(self) -> Option<WidthChange> {
        self.note_success()
    }

    /// [`Slot::succeeded`], keeping the slot: a job holds it until its answer is in the
    /// cache (not yet fsynced: see [`crate::exec::Paid`]) and its cost counted, so at most
    /// `width` answers are ever paid for but not yet kept.
    pub fn note_success(&self) -> Option<WidthChange> {
        let change = {
            let mut s = self.limiter.state();
            s.successes += 1;
            if s.width < self.limiter.cap && s.successes >= s.width {
                s.successes = 0;
                s.width += 1;
                Some(WidthChange {
                    from: s.width - 1,
                    to: s.width,
                })
            } else {
                None
            }
        };
        change
    }

    /// The provider pushed back: halve the width, once per burst.
    pub fn pushed_back(self) -> Option<WidthChange> {
        let change = {
            let mut s = self.limiter.state();
            if s.epoch == self.epoch && s.width > 1 {
                let from = s.width;
                s.width = (s.width / 2).max(1);
                s.epoch += 1;
                s.successes = 0;
                Some(WidthChange { from, to: s.width })
            } else {
                None
            }
        };
        drop(self);
        change
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.limiter.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn width_halves_once_per_burst_and_grows_back() {
        let l = Limiter::new(7);
        let slots: Vec<Slot> = futures_join(&l, 7).await;
        assert_eq!(l.in_flight(), 7);
        let mut changes = slots.into_iter().map(Slot::pushed_back);
        assert_eq!(changes.next().flatten(), Some(WidthChange { from: 7, to: 3 }));
        assert!(changes.all(|c| c.is_none()), "one burst halves once");
        assert_eq!((l.width(), l.in_flight()), (3, 0));
        // Three successes at width 3 widen it to 4; then four more to 5.
        for _ in 0..3 {
            l.acquire().await.unwrap().succeeded();
        }
        assert_eq!(l.width(), 4);
        for _ in 0..4 {
            l.acquire().await.unwrap().succeeded();
        }
        assert_eq!(l.width(), 5);
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
        a.pushed_back();
        assert_eq!(l.width(), 1);
        // One still in flight at width 1: the next waits until it is released.
        let waiter = tokio::spawn({
            let l = l.clone();
            async move { l.acquire().await.is_some() }
        });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        drop(b);
        assert!(waiter.await.unwrap());
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
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        drop(held);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3, 4]);
    }

    async fn futures_join(l: &Arc<Limiter>, n: usize) -> Vec<Slot> {
        let mut v = Vec::new();
        for _ in 0..n {
            v.push(l.acquire().await.unwrap());
        }
        v
    }
}

//! The bounded worker pool: every model call of a run, map and aggregate alike, runs here.
//!
//! Jobs are admitted a few more than the pool is wide (so a freed slot is taken at once);
//! the [`Limiter`] decides how many calls are really in flight. The dispatcher — a
//! [`PoolHandler`] — hears every event and every finished job as it happens and answers
//! with a [`Flow`]. Interrupt, grace period, completion, events and dispatch are one biased
//! `select!`, so the order of what can happen is visible in one place. A job that panics or
//! is cancelled is reported as lost with its unit, never silently dropped.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::{Id, JoinSet};
use tokio::time::Instant;

use super::{Event, Interrupt, Limiter};
use crate::unit::{UnitId, UnitKind};

/// Who a job is, for the events about it.
#[derive(Debug, Clone)]
pub struct JobMeta {
    pub unit: UnitId,
    pub label: std::sync::Arc<str>,
    pub kind: UnitKind,
}

/// A job the pool can run.
pub trait Job: Send + 'static {
    fn meta(&self) -> JobMeta;
}

/// What the handler wants after a job finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// Dispatch nothing more; calls in flight finish (they are paid for).
    Drain,
    /// Dispatch nothing more and cancel what is in flight (a fatal error).
    Abort,
}

/// Why the pool returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolEnd {
    /// Every job ran.
    Completed,
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// The handler asked to stop.
    Stopped,
}

/// Why a job has no output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lost {
    /// Cancelled in flight (a second interrupt, the grace period, a fatal error).
    Cancelled,
    /// The job panicked (a bug): the message.
    Panicked(String),
}

/// A job's calls are over and its answer is in place (not yet durable): what they used, and
/// the slot of the last one. The handler counts the cost and frees the slot while the job
/// waits for the disk, so that wait does not hold up the next call (issue 16's fan-out).
#[derive(Debug)]
pub struct Paid {
    pub unit: UnitId,
    pub usage: crate::provider::Usage,
    pub slot: super::Slot,
}

/// Receives what happens in the pool; lives on the dispatcher, so it needs no locking.
pub trait PoolHandler<O> {
    /// A job finished (its result is already on disk).
    fn finished(&mut self, output: O) -> Flow;
    /// A job's calls are paid for (see [`Paid`]); it finishes later. Heard before its
    /// [`PoolHandler::finished`].
    fn paid(&mut self, paid: Paid) -> Flow {
        drop(paid);
        Flow::Continue
    }
    /// Something a job reported while running.
    fn event(&mut self, event: Event);
    /// A job ended without an output.
    fn lost(&mut self, meta: JobMeta, why: Lost);
    /// The first interrupt arrived; `in_flight` calls get `grace` to finish.
    fn interrupting(&mut self, in_flight: usize, grace: Duration);
    /// `--deadline` passed with `in_flight` calls: `true` stops dispatching and lets them
    /// finish (they are paid for, as after a budget stop); `false` (the default) handles it
    /// as an interrupt.
    fn deadline_passed(&mut self, in_flight: usize) -> bool {
        let _ = in_flight;
        false
    }
}

/// What a pool run shares with the rest of the run.
pub struct PoolContext<'a> {
    /// Events the jobs send while running.
    pub events: &'a mut UnboundedReceiver<Event>,
    /// What jobs report when their calls are paid for.
    pub paid: &'a mut UnboundedReceiver<Paid>,
    pub interrupt: &'a mut Interrupt,
    pub limiter: &'a Limiter,
    /// Most jobs admitted at once.
    pub admission: usize,
    /// How long calls in flight may finish after an interrupt.
    pub grace: Duration,
}

/// Runs `job` over `jobs`, admitting at most `ctx.admission` at a time.
pub async fn run_pool<J, O, F, Fut, H>(jobs: Vec<J>, job: F, ctx: PoolContext<'_>, handler: &mut H) -> PoolEnd
where
    J: Job,
    O: Send + 'static,
    F: Fn(J) -> Fut,
    Fut: Future<Output = O> + Send + 'static,
    H: PoolHandler<O>,
{
    let PoolContext {
        events,
        paid,
        interrupt,
        limiter,
        admission,
        grace,
    } = ctx;
    let admission = admission.max(1);
    let mut jobs = jobs.into_iter().peekable();
    let mut tasks: JoinSet<O> = JoinSet::new();
    let mut running: HashMap<Id, JobMeta> = HashMap::new();
    let mut stopping: Option<PoolEnd> = None;
    let mut grace_deadline: Option<Instant> = None;

    loop {
        let can_dispatch = stopping.is_none() && jobs.peek().is_some() && tasks.len() < admission;
        if !can_dispatch && tasks.is_empty() && (stopping.is_some() || jobs.peek().is_none()) {
            break;
        }
        tokio::select! {
            biased;
            () = interrupt.recv() => {
                if interrupt.take_deadline() && handler.deadline_passed(limiter.in_flight()) {
                    // Drained, not interrupted: a Ctrl-C after it still interrupts.
                    if stopping.is_none() {
                        stopping = Some(PoolEnd::Stopped);
                        limiter.halt();
                    }
                } else if stopping == Some(PoolEnd::Interrupted) {
                    tasks.abort_all();
                } else {
                    stopping = Some(PoolEnd::Interrupted);
                    limiter.halt();
                    grace_deadline = Some(Instant::now() + grace);
                    handler.interrupting(limiter.in_flight(), grace);
                }
            }
            () = sleep_until_opt(grace_deadline), if grace_deadline.is_some() => {
                tasks.abort_all();
                grace_deadline = None;
            }
            // A paid call before the events: its slot goes back (the budget counted) as
            // soon as it can, not after the reporters have heard every queued event.
            Some(p) = paid.recv() => {
                let flow = handler.paid(p);
                if flow != Flow::Continue && stopping.is_none() {
                    stopping = Some(PoolEnd::Stopped);
                    limiter.halt();
                }
            }
            Some(event) = events.recv() => handler.event(event),
            Some(joined) = tasks.join_next_with_id(), if !tasks.is_empty() => {
                // Events a job sent before it ended are heard before its end.
                while let Ok(event) = events.try_recv() {
                    handler.event(event);
                }
                while let Ok(p) = paid.try_recv() {
                    let flow = handler.paid(p);
                    if flow != Flow::Continue && stopping.is_none() {
                        stopping = Some(PoolEnd::Stopped);
                        limiter.halt();
                    }
                }
                match joined {
                    Ok((id, output)) => {
                        running.remove(&id);
                        let flow = handler.finished(output);
                        if flow != Flow::Continue && stopping.is_none() {
                            stopping = Some(PoolEnd::Stopped);
                            limiter.halt();
                        }
                        if flow == Flow::Abort {
                            tasks.abort_all();
                        }
                    }
                    Err(e) => {
                        if let Some(meta) = running.remove(&e.id()) {
                            let why = if e.is_panic() { Lost::Panicked(panic_message(e)) } else { Lost::Cancelled };
                            handler.lost(meta, why);
                        }
                    }
                }
            }
            () = std::future::ready(()), if can_dispatch => {
                if let Some(next) = jobs.next() {
                    let meta = next.meta();
                    let handle = tasks.spawn(job(next));
                    running.insert(handle.id(), meta);
                }
            }
        }
    }
    while let Ok(event) = events.try_recv() {
        handler.event(event);
    }
    while let Ok(p) = paid.try_recv() {
        handler.paid(p);
    }
    stopping.unwrap_or(PoolEnd::Completed)
}

fn panic_message(e: tokio::task::JoinError) -> String {
    let payload = e.into_panic();
    payload
        .downcast_ref::<&str>()
        .map(ToString::to_string)
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    struct Item(usize);
    impl Job for Item {
        fn meta(&self) -> JobMeta {
            JobMeta {
                unit: UnitId::named(format!("u{}", self.0)),
                label: self.0.to_string().into(),
                kind: UnitKind::Map,
            }
        }
    }

    #[derive(Default)]
    struct Counter {
        done: usize,
        stop_after: Option<(usize, Flow)>,
        lost: Vec<(String, Lost)>,
    }

    impl PoolHandler<usize> for Counter {
        fn finished(&mut self, _: usize) -> Flow {
            self.done += 1;
            match self.stop_after {
                Some((n, flow)) if n == self.done => flow,
                _ => Flow::Continue,
            }
        }
        fn event(&mut self, _: Event) {}
        fn lost(&mut self, meta: JobMeta, why: Lost) {
            self.lost.push((meta.label.to_string(), why));
        }
        fn interrupting(&mut self, _: usize, _: Duration) {}
    }

    async fn run(
        n: usize,
        admission: usize,
        handler: &mut Counter,
        job: impl Fn(Item) -> tokio::task::JoinHandle<usize>,
    ) -> PoolEnd {
        let (_tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let (_paid_tx, mut paid) = tokio::sync::mpsc::unbounded_channel();
        let limiter = Limiter::new(admission);
        let mut interrupt = Interrupt::new();
        let job = |i: Item| {
            let h = job(i);
            async move { h.await.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic())) }
        };
        let ctx = PoolContext {
            events: &mut rx,
            paid: &mut paid,
            interrupt: &mut interrupt,
            limiter: &limiter,
            admission,
            grace: Duration::from_secs(1),
        };
        run_pool((0..n).map(Item).collect(), job, ctx, handler).await
    }

    #[tokio::test]
    async fn never_more_than_admitted_and_all_run() {
        let active = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let mut handler = Counter::default();
        let job = |Item(i): Item| {
            let (active, peak) = (active.clone(), peak.clone());
            tokio::spawn(async move {
                let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5 + (i % 3) as u64)).await;
                active.fetch_sub(1, Ordering::SeqCst);
                i
            })
        };
        let end = run(40, 3, &mut handler, job).await;
        assert_eq!(end, PoolEnd::Completed);
        assert_eq!(handler.done, 40);
        assert_eq!(peak.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn abort_cancels_the_rest_and_reports_them_lost() {
        let mut handler = Counter {
            stop_after: Some((2, Flow::Abort)),
            ..Counter::default()
        };
        let job = |Item(i): Item| {
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(if i < 2 { 1 } else { 5_000 })).await;
                i
            })
        };
        let end = run(10, 4, &mut handler, job).await;
        assert_eq!(end, PoolEnd::Stopped);
        assert_eq!(handler.done, 2);
        assert_eq!(
            handler.lost.len(),
            2,
            "the two others in flight were cancelled: {:?}",
            handler.lost
        );
    }

    #[tokio::test]
    async fn a_panicking_job_is_lost_with_its_message() {
        let mut handler = Counter::default();
        let job = |Item(i): Item| {
            tokio::spawn(async move {
                assert!(i != 1, "boom {i}");
                i
            })
        };
        let end = run(3, 2, &mut handler, job).await;
        assert_eq!(end, PoolEnd::Completed);
        assert_eq!(handler.done, 2);
        assert_eq!(handler.lost, [("1".to_string(), Lost::Panicked("boom 1".into()))]);
    }

    /// Records what it hears, in order.
    #[derive(Default)]
    struct Recorder {
        heard: Vec<String>,
    }

    impl PoolHandler<usize> for Recorder {
        fn finished(&mut self, output: usize) -> Flow {
            self.heard.push(format!("finished {output}"));
            Flow::Continue
        }
        fn paid(&mut self, paid: Paid) -> Flow {
            self.heard.push(format!("paid {}", paid.unit));
            drop(paid.slot);
            Flow::Continue
        }
        fn event(&mut self, _: Event) {}
        fn lost(&mut self, _: JobMeta, _: Lost) {}
        fn interrupting(&mut self, _: usize, _: Duration) {}
    }

    /// A job that says it is paid for hands its slot back at once: the next job's call
    /// starts while the first one still waits (for the disk), and the handler hears the
    /// payment before the end. (Were the slot held to the end, the first job would wait for
    /// the second forever.)
    #[tokio::test]
    async fn a_slot_handed_back_when_paid_lets_the_next_call_start_and_paid_is_heard_first() {
        let (_tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let (paid_tx, mut paid) = tokio::sync::mpsc::unbounded_channel();
        let limiter = Limiter::new(1);
        let mut interrupt = Interrupt::new();
        let second_started = Arc::new(tokio::sync::Notify::new());
        let job = {
            let limiter = limiter.clone();
            let second_started = second_started.clone();
            move |Item(i): Item| {
                let (limiter, paid_tx, second_started) = (limiter.clone(), paid_tx.clone(), second_started.clone());
                async move {
                    let Some(slot) = limiter.acquire().await else {
                        return i + 100;
                    };
                    if i == 1 {
                        second_started.notify_one();
                        return i;
                    }
                    let unit = UnitId::named(format!("u{i}"));
                    paid_tx
                        .send(Paid {
                            unit,
                            usage: crate::provider::Usage::default(),
                            slot,
                        })
                        .unwrap();
                    // Waits "for the disk" until the next job has had the slot.
                    second_started.notified().await;
                    i
                }
            }
        };
        let mut handler = Recorder::default();
        let ctx = PoolContext {
            events: &mut rx,
            paid: &mut paid,
            interrupt: &mut interrupt,
            limiter: &limiter,
            admission: 2,
            grace: Duration::from_secs(1),
        };
        let run = run_pool(vec![Item(0), Item(1)], job, ctx, &mut handler);
        let end = tokio::time::timeout(Duration::from_secs(30), run).await;
        assert_eq!(end, Ok(PoolEnd::Completed), "the first job never let the second start");
        assert_eq!(handler.heard[0], "paid u0");
        assert!(handler.heard.contains(&"finished 0".to_string()) && handler.heard.contains(&"finished 1".to_string()));
    }
}

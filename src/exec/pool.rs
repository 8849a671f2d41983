//! The bounded worker pool: a semaphore of `width` permits keeps every slot busy (no
//! waves), a handler hears every finished unit as it finishes, and Ctrl-C / SIGTERM stop
//! dispatching while in-flight calls get a grace period to finish.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::Notice;

/// How long in-flight calls may run on after an interrupt.
pub const GRACE: Duration = Duration::from_secs(10);

/// What the handler wants after a unit finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// Stop the run now: cancel what is in flight, dispatch nothing more.
    Stop,
}

/// Why the pool returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolEnd {
    /// Every item ran.
    Completed,
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// The handler asked to stop.
    Stopped,
}

/// Receives what happens in the pool; lives on the dispatcher, so it needs no locking.
pub trait PoolHandler<O> {
    /// A unit finished (its result is already on disk).
    fn finished(&mut self, output: O) -> Flow;
    /// A retry or a rate-limit pause.
    fn notice(&mut self, notice: Notice);
    /// The first interrupt arrived; `in_flight` calls get [`GRACE`] to finish.
    fn interrupting(&mut self, in_flight: usize);
    /// A unit was dispatched.
    fn dispatched(&mut self) {}
}

/// Runs `job` over `items` with at most `width` in flight. Each job gets its slot's
/// permit and may drop it early — when its model call is done, before it writes files — so
/// the cap counts calls in flight and local work never holds a slot.
pub async fn run_pool<T, O, F, Fut, H>(
    items: Vec<T>,
    width: usize,
    job: F,
    notices: &mut UnboundedReceiver<Notice>,
    handler: &mut H,
) -> PoolEnd
where
    T: Send + 'static,
    O: Send + 'static,
    F: Fn(T, OwnedSemaphorePermit) -> Fut,
    Fut: Future<Output = O> + Send + 'static,
    H: PoolHandler<O>,
{
    let semaphore = Arc::new(Semaphore::new(width.max(1)));
    let mut items = items.into_iter().peekable();
    let mut tasks: JoinSet<O> = JoinSet::new();
    let mut stopping: Option<PoolEnd> = None;
    let mut grace_deadline: Option<Instant> = None;
    let mut interrupt = Interrupt::new();

    loop {
        let can_dispatch = stopping.is_none() && items.peek().is_some();
        if !can_dispatch && tasks.is_empty() {
            break;
        }
        tokio::select! {
            biased;
            () = interrupt.recv() => {
                if stopping == Some(PoolEnd::Interrupted) {
                    tasks.abort_all();
                } else if stopping.is_none() {
                    stopping = Some(PoolEnd::Interrupted);
                    grace_deadline = Some(Instant::now() + GRACE);
                    handler.interrupting(tasks.len());
                }
            }
            () = sleep_until_opt(grace_deadline), if grace_deadline.is_some() => {
                tasks.abort_all();
                grace_deadline = None;
            }
            Some(joined) = tasks.join_next(), if !tasks.is_empty() => {
                // A cancelled or panicked task has no output: the caller sees its unit as
                // not finished and reports it so.
                if let Ok(output) = joined {
                    if handler.finished(output) == Flow::Stop && stopping.is_none() {
                        stopping = Some(PoolEnd::Stopped);
                        tasks.abort_all();
                    }
                }
            }
            Some(notice) = notices.recv() => handler.notice(notice),
            Ok(permit) = semaphore.clone().acquire_owned(), if can_dispatch => {
                if let Some(item) = items.next() {
                    handler.dispatched();
                    tasks.spawn(job(item, permit));
                }
            }
        }
    }
    while let Ok(notice) = notices.try_recv() {
        handler.notice(notice);
    }
    stopping.unwrap_or(PoolEnd::Completed)
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Ctrl-C and (on Unix) SIGTERM, each of which may arrive more than once.
pub struct Interrupt {
    #[cfg(unix)]
    signals: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Interrupt {
    /// Starts listening; from now on these signals no longer kill the process.
    pub fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Interrupt {
                signals: signal(SignalKind::interrupt())
                    .and_then(|i| Ok((i, signal(SignalKind::terminate())?)))
                    .ok(),
            }
        }
        #[cfg(not(unix))]
        Interrupt {}
    }

    /// Returns when the next signal arrives.
    pub async fn recv(&mut self) {
        #[cfg(unix)]
        match &mut self.signals {
            Some((int, term)) => {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
            }
            None => std::future::pending().await,
        }
        #[cfg(not(unix))]
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl Default for Interrupt {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counter {
        done: usize,
        stop_after: Option<usize>,
    }

    impl PoolHandler<usize> for Counter {
        fn finished(&mut self, _: usize) -> Flow {
            self.done += 1;
            if Some(self.done) == self.stop_after {
                Flow::Stop
            } else {
                Flow::Continue
            }
        }
        fn notice(&mut self, _: Notice) {}
        fn interrupting(&mut self, _: usize) {}
    }

    #[tokio::test]
    async fn never_more_than_width_and_all_run() {
        let active = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let (_tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut handler = Counter {
            done: 0,
            stop_after: None,
        };
        let job = |i: usize, permit: OwnedSemaphorePermit| {
            let (active, peak) = (active.clone(), peak.clone());
            async move {
                let _permit = permit;
                let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5 + (i % 3) as u64)).await;
                active.fetch_sub(1, Ordering::SeqCst);
                i
            }
        };
        let end = run_pool((0..40).collect(), 3, job, &mut rx, &mut handler).await;
        assert_eq!(end, PoolEnd::Completed);
        assert_eq!(handler.done, 40);
        assert_eq!(peak.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn stop_cancels_the_rest() {
        let (_tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut handler = Counter {
            done: 0,
            stop_after: Some(2),
        };
        let job = |i: usize, _permit: OwnedSemaphorePermit| async move {
            tokio::time::sleep(Duration::from_millis(if i < 2 { 1 } else { 5_000 })).await;
            i
        };
        let end = run_pool((0..10).collect(), 4, job, &mut rx, &mut handler).await;
        assert_eq!(end, PoolEnd::Stopped);
        assert_eq!(handler.done, 2);
    }
}

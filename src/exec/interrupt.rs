//! Ctrl-C and SIGTERM, each of which may arrive more than once.

/// The signals a run listens to; from creation on they no longer kill the process.
pub struct Interrupt {
    #[cfg(unix)]
    signals: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
    /// `--deadline`: when it passes, the run stops as if interrupted (once).
    deadline: Option<tokio::time::Instant>,
    /// The deadline is what stopped the run.
    pub deadline_passed: bool,
    /// The deadline passed and nobody asked about it yet ([`Interrupt::take_deadline`]).
    deadline_unheard: bool,
}

impl Interrupt {
    /// Starts listening.
    pub fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Interrupt {
                signals: signal(SignalKind::interrupt())
                    .and_then(|i| Ok((i, signal(SignalKind::terminate())?)))
                    .ok(),
                deadline: None,
                deadline_passed: false,
                deadline_unheard: false,
            }
        }
        #[cfg(not(unix))]
        Interrupt {
            deadline: None,
            deadline_passed: false,
            deadline_unheard: false,
        }
    }

    /// Also stops the run when `deadline` passes.
    pub fn with_deadline(mut self, deadline: Option<std::time::Instant>) -> Self {
        self.deadline = deadline.map(tokio::time::Instant::from_std);
        self
    }

    /// Returns when the next signal arrives, or the deadline passes (the first time).
    pub async fn recv(&mut self) {
        let deadline = if self.deadline_passed { None } else { self.deadline };
        // A deadline already past (a resume whose earlier attempts used the time up) stops
        // the run before anything is dispatched: tokio's timer fires a past deadline only
        // at its next tick, after the pool's first dispatch.
        if deadline.is_some_and(|at| tokio::time::Instant::now() >= at) {
            self.deadline_passed = true;
            self.deadline_unheard = true;
            return;
        }
        tokio::select! {
            () = self.signal() => {}
            () = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            } => {
                self.deadline_passed = true;
                self.deadline_unheard = true;
            }
        }
    }

    /// Sleeps until `until`: true when it came first, false when a signal or the deadline
    /// did (then [`Interrupt::deadline_passed`] says which).
    pub async fn sleep_until(&mut self, until: tokio::time::Instant) -> bool {
        tokio::select! {
            biased;
            () = self.recv() => false,
            () = tokio::time::sleep_until(until) => true,
        }
    }

    /// Whether the deadline has passed, said now (not only when [`Interrupt::recv`] is next
    /// awaited): a timer is heard only when awaited, and what is about to pay (a batch
    /// submission) must not start past the deadline.
    pub fn check_deadline(&mut self) -> bool {
        if !self.deadline_passed && self.deadline.is_some_and(|at| tokio::time::Instant::now() >= at) {
            self.deadline_passed = true;
            self.deadline_unheard = true;
        }
        self.deadline_passed
    }

    /// Whether the last [`Interrupt::recv`] returned because the deadline passed (true
    /// once): a deadline is no Ctrl-C, and the pool lets the calls in flight finish.
    pub fn take_deadline(&mut self) -> bool {
        std::mem::take(&mut self.deadline_unheard)
    }

    /// Returns when the next signal arrives.
    async fn signal(&mut self) {
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

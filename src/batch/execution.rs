//! The executing part of a run: one pool, one limiter, one dispatcher and one interrupt
//! listener for every phase — the per-unit calls and the aggregation calls alike.

use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;

use super::dispatcher::Dispatcher;
use super::job::{run_job, Job, JobContext};
use crate::exec::{self, run_pool, Event, Interrupt, Limiter, PoolContext, PoolEnd, GRACE};

/// How many more jobs than calls are admitted: a freed slot finds a job ready.
const ADMISSION_FACTOR: usize = 2;

/// A run from its first call to its last.
pub struct Execution {
    pub dispatcher: Dispatcher,
    jobs: Arc<JobContext>,
    events: UnboundedReceiver<Event>,
    interrupt: Interrupt,
    limiter: Arc<Limiter>,
    width: usize,
    /// Ctrl-C or SIGTERM arrived.
    pub interrupted: bool,
}

impl Execution {
    pub fn new(
        dispatcher: Dispatcher,
        jobs: Arc<JobContext>,
        events: UnboundedReceiver<Event>,
        limiter: Arc<Limiter>,
        width: usize,
        deadline: Option<std::time::Instant>,
    ) -> Self {
        Execution {
            dispatcher,
            jobs,
            events,
            // From here on, Ctrl-C and SIGTERM are heard instead of killing the process.
            interrupt: Interrupt::new().with_deadline(deadline),
            limiter,
            width,
            interrupted: false,
        }
    }

    /// Runs one phase of jobs through the pool.
    pub async fn run_phase(&mut self, jobs: Vec<Job>) -> PoolEnd {
        if jobs.is_empty() {
            return PoolEnd::Completed;
        }
        for job in &jobs {
            let meta = exec::Job::meta(job);
            self.dispatcher.emit(Event::Queued {
                unit: meta.unit,
                label: meta.label,
                kind: meta.kind,
            });
        }
        let ctx = self.jobs.clone();
        let pool = PoolContext {
            events: &mut self.events,
            interrupt: &mut self.interrupt,
            limiter: &self.limiter,
            admission: self.width * ADMISSION_FACTOR,
            grace: GRACE,
        };
        let end = run_pool(jobs, move |job| run_job(ctx.clone(), job), pool, &mut self.dispatcher).await;
        if end == PoolEnd::Interrupted {
            self.interrupted = true;
        }
        end
    }

    /// Whether more calls may be made: not interrupted, not halted (fatal error, budget,
    /// write failure).
    pub fn may_call(&self) -> bool {
        !self.interrupted && !self.limiter.is_halted() && self.dispatcher.over_budget().is_none()
    }

    /// `--deadline` is what stopped the run.
    pub fn deadline_passed(&self) -> bool {
        self.interrupt.deadline_passed
    }

    /// Why no more calls may be made, for the report.
    pub fn why_stopped(&self) -> &'static str {
        if self.interrupt.deadline_passed {
            "the --deadline passed"
        } else if self.interrupted {
            "the run was interrupted"
        } else {
            "the run stopped early"
        }
    }
}

//! The dispatcher: owns what the user sees of a run and what the run has produced. It hears
//! the pool (job outcomes and the events jobs send), turns outcomes into events with their
//! cost, fans every event out to the reporters, keeps the answers and the spend, and
//! decides whether dispatching goes on: a fatal error aborts; the budget, the deadline and
//! a write failure drain (calls in flight finish: they are paid for).
//!
//! Reporters only listen: nothing is read back out of them.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use super::answers::UnitAnswers;
use super::job::{JobFailure, JobOutcome};
use crate::exec::{Event, Flow, JobMeta, Lost, Paid, PoolHandler};
use crate::printer::Printer;
use crate::provider::catalog::PriceTier;
use crate::provider::ModelInfo;
use crate::reporter::Reporters;
use crate::unit::{UnitId, UnitKind};
use crate::unit_failure::{FailureKind, UnitFailure};

/// Why a run stopped dispatching before it ran out of work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// The spend reached `--max-cost`.
    Budget(String),
    /// An answer could not be kept (cache or result file).
    WriteFailed(String),
    /// The provider refused the run (a bad key, no quota, an unreachable server).
    Fatal(String),
    /// `--deadline` passed (the whole run's, across resumes).
    Deadline(String),
}

/// What a deadline stop says: the limit as given, and the command that goes on.
#[derive(Debug, Clone)]
struct DeadlineNote {
    limit: Duration,
    run_id: String,
}

/// The run's dispatcher.
pub struct Dispatcher {
    pub reporters: Reporters,
    model: ModelInfo,
    max_cost: Option<f64>,
    printer: Printer,
    /// Spent by this run so far (every call, aggregation included).
    spent: f64,
    /// Spent by earlier attempts of this run (`rlm resume`): counts against `--max-cost`.
    spent_before: f64,
    /// The answers of the units that succeeded (cache hits included), per file.
    pub answers: HashMap<UnitId, UnitAnswers>,
    /// The answers of aggregation calls that succeeded, and why the others failed.
    pub aggregate_texts: HashMap<UnitId, String>,
    pub aggregate_failures: HashMap<UnitId, String>,
    /// Why dispatching stopped, first reason first.
    pub stop: Option<StopReason>,
    /// Whether the provider's refusal of the run has been said (once, as the run's error).
    fatal_said: bool,
    /// The units that failed, in the order they failed.
    failed: Vec<UnitFailure>,
    /// Halted when dispatching stops, before the finished job's slot is released.
    limiter: Option<std::sync::Arc<crate::exec::Limiter>>,
    /// Units whose cost was counted when they said they were paid for (not again when they
    /// finish).
    counted: HashSet<UnitId>,
    /// `--deadline`, for what its stop says.
    deadline: Option<DeadlineNote>,
    /// A call was paid at the list price (realtime): a batch-API run that made one is
    /// reported at the `mixed` tier.
    pub paid_realtime: bool,
}

impl Dispatcher {
    pub fn new(
        reporters: Reporters,
        model: ModelInfo,
        max_cost: Option<f64>,
        spent_before: f64,
        printer: Printer,
    ) -> Self {
        Dispatcher {
            reporters,
            model,
            max_cost,
            printer,
            spent: 0.0,
            spent_before,
            answers: HashMap::new(),
            aggregate_texts: HashMap::new(),
            aggregate_failures: HashMap::new(),
            stop: None,
            fatal_said: false,
            failed: Vec::new(),
            limiter: None,
            counted: HashSet::new(),
            deadline: None,
            paid_realtime: false,
        }
    }

    /// The run's `--deadline` (the whole run's) and its id, for what a deadline stop says.
    pub fn with_deadline(mut self, limit: Option<Duration>, run_id: &str) -> Self {
        self.deadline = limit.map(|limit| DeadlineNote {
            limit,
            run_id: run_id.to_string(),
        });
        self
    }

    /// The reason a deadline stop gives: which limit passed, that the calls in flight are
    /// let finish, and that only `rlm resume RUN --deadline …` goes on (a plain resume has
    /// no time left: the deadline counts the whole run).
    pub fn deadline_reason(&self, in_flight: usize) -> String {
        let (limit, run) = match &self.deadline {
            Some(d) => (
                format!(" ({})", crate::duration::format_duration(d.limit.as_millis() as u64)),
                d.run_id.as_str(),
            ),
            None => (String::new(), "RUN"),
        };
        let calls = match in_flight {
            0 => String::new(),
            1 => "; the call in flight finishes and is recorded".to_string(),
            n => format!("; the {n} calls in flight finish and are recorded"),
        };
        format!(
            "the --deadline{limit} passed: dispatching stopped{calls}. The deadline counts the whole run: \
             `rlm resume {run} --deadline DURATION` with more time goes on (finished answers are cached)"
        )
    }

    /// Counts `usd` spent by the run's earlier attempts against `--max-cost`.
    pub fn with_earlier_spend(mut self, usd: f64) -> Self {
        self.spent_before = usd;
        self
    }

    /// The pool's limiter, halted as soon as dispatching stops.
    pub fn with_limiter(mut self, limiter: std::sync::Arc<crate::exec::Limiter>) -> Self {
        self.limiter = Some(limiter);
        self
    }

    /// Sends an event to every reporter (and keeps the failures of units).
    pub fn emit(&mut self, event: Event) {
        if let Event::Failed {
            label,
            reason,
            kind: UnitKind::Map,
            error,
            ..
        } = &event
        {
            self.failed.push(UnitFailure {
                unit: label.to_string(),
                kind: FailureKind::of_call(*error),
                reason: reason.clone(),
            });
        }
        self.reporters.emit(&event);
    }

    /// The units that failed so far, with why.
    pub fn failures(&self) -> Vec<UnitFailure> {
        self.failed.clone()
    }

    /// Stops dispatching (the first reason is kept). A fatal reason is said once, as the
    /// run's error (the progress display prints it, the report keeps it).
    fn stop(&mut self, why: StopReason) -> Flow {
        if self.stop.is_none() {
            let (reason, fatal) = match &why {
                StopReason::Budget(r) | StopReason::WriteFailed(r) | StopReason::Deadline(r) => (r.clone(), false),
                StopReason::Fatal(r) => (r.clone(), true),
            };
            self.stop = Some(why);
            self.emit(Event::Stopping { reason, fatal });
        }
        Flow::Drain
    }

    /// Stops dispatching from outside the pool (the batch-API stage: a refused key, a
    /// server without a batch API): no call starts after this.
    pub fn halt(&mut self, why: StopReason) {
        self.stop(why);
        if let Some(limiter) = &self.limiter {
            limiter.halt();
        }
    }

    /// What is left of `--max-cost` (earlier attempts' spend counted); `None` without one.
    pub fn budget_left(&self) -> Option<f64> {
        self.max_cost.map(|max| max - self.spent - self.spent_before)
    }

    /// The most `request` can cost through the batch API (see
    /// [`ModelInfo::worst_batch_cost`]).
    pub fn worst_batch_cost(&self, prompt_bytes: u64, max_tokens: u32) -> f64 {
        self.model.worst_batch_cost(prompt_bytes, max_tokens)
    }

    /// Stops the run for its budget: `reason` says why.
    pub fn stop_for_budget(&mut self, reason: String) {
        self.halt(StopReason::Budget(reason));
    }

    /// Whether the run's spend (earlier attempts included) has reached `--max-cost`.
    pub fn over_budget(&self) -> Option<String> {
        let max = self.max_cost?;
        let spent = self.spent + self.spent_before;
        crate::error::budget_reached(spent, max).then(|| {
            crate::error::OverBudget::Reached {
                spent,
                spent_before: self.spent_before,
                max_cost: max,
                spender: crate::error::Spender::Run,
            }
            .to_string()
        })
    }

    /// Records a unit served from the cache before the pool started.
    pub fn served(&mut self, unit: UnitId, answers: UnitAnswers) {
        self.warn_about(&answers);
        self.answers.insert(unit, answers);
    }

    fn warn_about(&mut self, answers: &UnitAnswers) {
        for message in answers.warnings() {
            self.emit(Event::Warning { message });
        }
    }
}

impl PoolHandler<JobOutcome> for Dispatcher {
    fn finished(&mut self, mut outcome: JobOutcome) -> Flow {
        // Released last: no call can start on it before the budget has been checked.
        let slot = outcome.slot.take();
        let JobMeta { unit, label, kind } = outcome.meta;
        // Realtime calls at the list price, batch-API requests at the batch price.
        let cost_usd = self.model.cost(outcome.usage) + self.model.cost_at(outcome.batch_usage, PriceTier::Batch);
        let cache_saved_usd = self.model.cache_savings(outcome.usage, PriceTier::Realtime)
            + self.model.cache_savings(outcome.batch_usage, PriceTier::Batch);
        if self.counted.remove(&unit) {
            // What [`PoolHandler::paid`] counted is the realtime calls' part; a batch result
            // that was asked again in realtime still cost its batch request.
            self.spent += self.model.cost_at(outcome.batch_usage, PriceTier::Batch);
        } else {
            self.spent += cost_usd;
        }
        // A call paid at the list price (realtime): a batch-API run that made one was
        // billed at both prices.
        self.paid_realtime |= outcome.usage.total() > 0;
        let mut usage = outcome.usage;
        usage.add(outcome.batch_usage);
        let mut flow = Flow::Continue;
        // An answer with a write error and no failure is one the cache did not take (a
        // result file that cannot be written fails its unit): `keep_paid` kept it in the run
        // directory's `pending-cache/`, and the run says so per unit.
        let uncached = outcome.failure.is_none() && outcome.write_error.is_some() && kind == UnitKind::Map;
        match outcome.failure {
            None => {
                if let Some(answers) = outcome.answers {
                    self.warn_about(&answers);
                    self.answers.insert(unit.clone(), answers);
                }
                if kind == UnitKind::Aggregate {
                    if let Some(text) = outcome.text {
                        self.aggregate_texts.insert(unit.clone(), text);
                    }
                }
                let uncached = uncached.then(|| Event::Uncached {
                    unit: unit.clone(),
                    label: label.clone(),
                });
                self.emit(Event::Completed {
                    unit,
                    label,
                    kind,
                    attempts: outcome.attempts,
                    duration_ms: outcome.duration_ms,
                    usage,
                    saved: outcome.saved,
                    cost_usd,
                    cache_saved_usd,
                    cached: outcome.cached,
                    truncated: outcome.truncated,
                    result_file: outcome.result_file,
                });
                if let Some(event) = uncached {
                    self.emit(event);
                }
            }
            Some(JobFailure::Halted) => self.emit(Event::Cancelled {
                unit,
                label,
                kind,
                reason: if outcome.attempts == 0 {
                    "not started: the run stopped dispatching".into()
                } else {
                    "not run: the run stopped before this call was answered".into()
                },
            }),
            // The run stops for the provider, not for this unit: not run (a plain resume
            // takes it up), the reason said once, as the run's error.
            Some(JobFailure::Stop { reason, abandon }) => {
                self.stop(StopReason::Fatal(reason));
                self.emit(Event::Cancelled {
                    unit,
                    label,
                    kind,
                    reason: "not run: the run stopped before this call was answered".into(),
                });
                flow = if abandon { Flow::Abort } else { Flow::Drain };
            }
            Some(JobFailure::Unit { kind: error, reason }) => {
                if kind == UnitKind::Aggregate {
                    self.aggregate_failures.insert(unit.clone(), reason.clone());
                }
                self.emit(Event::Failed {
                    unit,
                    label,
                    kind,
                    attempts: outcome.attempts,
                    duration_ms: outcome.duration_ms,
                    usage,
                    cost_usd,
                    error,
                    reason,
                });
            }
            // A call the provider refused for the whole run (a wrong key, a host name that
            // does not resolve, an unknown model) says nothing about its unit: like the
            // units the stop kept from running, it is not run — in the events, the report
            // and the store alike — and a plain `rlm resume` takes it once the cause is
            // fixed. The reason is said once, as the run's error.
            Some(JobFailure::Fatal(reason)) => {
                if kind == UnitKind::Aggregate {
                    self.aggregate_failures.insert(unit.clone(), reason.clone());
                }
                if self.stop.is_none() {
                    self.stop(StopReason::Fatal(reason));
                } else if !self.fatal_said && !matches!(self.stop, Some(StopReason::Fatal(_))) {
                    // Heard after a budget or deadline stop: still the run's error, said once.
                    self.emit(Event::Stopping { reason, fatal: true });
                }
                self.fatal_said = true;
                self.emit(Event::Cancelled {
                    unit,
                    label,
                    kind,
                    reason: "not run: the provider refused the run before this call was answered".into(),
                });
                flow = Flow::Abort;
            }
        }
        if let Some(error) = outcome.write_error {
            flow = flow_max(
                flow,
                self.stop(StopReason::WriteFailed(format!(
                    "{error}: dispatching stopped; the answers paid for so far are in the run directory, so running \
                     rlm resume after fixing this pays nothing for them"
                ))),
            );
        }
        if flow == Flow::Continue {
            if let Some(reason) = self.over_budget() {
                flow = self.stop(StopReason::Budget(reason));
            }
        }
        if flow != Flow::Continue {
            if let Some(limiter) = &self.limiter {
                limiter.halt();
            }
        }
        drop(slot);
        flow
    }

    /// The budget is checked before the slot is released, as when a job finishes: no call
    /// starts on it past `--max-cost`.
    fn paid(&mut self, paid: Paid) -> Flow {
        let Paid { unit, usage, slot } = paid;
        self.spent += self.model.cost(usage);
        self.counted.insert(unit);
        let mut flow = Flow::Continue;
        if let Some(reason) = self.over_budget() {
            flow = self.stop(StopReason::Budget(reason));
            if let Some(limiter) = &self.limiter {
                limiter.halt();
            }
        }
        drop(slot);
        flow
    }

    fn event(&mut self, event: Event) {
        self.emit(event);
    }

    fn lost(&mut self, meta: JobMeta, why: Lost) {
        let JobMeta { unit, label, kind } = meta;
        match why {
            Lost::Cancelled => self.emit(Event::Cancelled {
                unit,
                label,
                kind,
                reason: "cancelled while its call was in flight".into(),
            }),
            Lost::Panicked(message) => {
                let reason = format!("internal error: {message} (this is a bug in rlm; please report it)");
                if kind == UnitKind::Aggregate {
                    self.aggregate_failures.insert(unit.clone(), reason.clone());
                }
                self.emit(Event::Failed {
                    unit,
                    label,
                    kind,
                    attempts: 0,
                    duration_ms: 0,
                    usage: Default::default(),
                    cost_usd: 0.0,
                    error: None,
                    reason,
                });
            }
        }
    }

    /// A deadline is no Ctrl-C: dispatching stops and the calls in flight finish, as at a
    /// budget stop (aborted after a grace period, they would be paid for again on resume).
    fn deadline_passed(&mut self, in_flight: usize) -> bool {
        let reason = self.deadline_reason(in_flight);
        self.stop(StopReason::Deadline(reason));
        if let Some(limiter) = &self.limiter {
            limiter.halt();
        }
        true
    }

    fn interrupting(&mut self, in_flight: usize, grace: Duration) {
        self.printer.progress(&format!(
            "interrupted: dispatching stopped; waiting up to {}s for {in_flight} call{} in flight (Ctrl-C again to stop now)",
            grace.as_secs(),
            if in_flight == 1 { "" } else { "s" }
        ));
    }
}

/// The stronger of two flows.
fn flow_max(a: Flow, b: Flow) -> Flow {
    match (a, b) {
        (Flow::Abort, _) | (_, Flow::Abort) => Flow::Abort,
        (Flow::Drain, _) | (_, Flow::Drain) => Flow::Drain,
        _ => Flow::Continue,
    }
}

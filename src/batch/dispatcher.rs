//! The dispatcher: owns what the user sees of a run. It hears the pool (job outcomes and
//! the events jobs send), turns outcomes into events with their cost, fans every event out
//! to the reporters, and decides whether dispatching goes on: a fatal error aborts, the
//! budget and a write failure drain (calls in flight finish: they are paid for).

use std::collections::HashMap;
use std::time::Duration;

use super::job::{JobFailure, JobOutcome};
use crate::exec::{Event, Flow, JobMeta, Lost, PoolHandler};
use crate::printer::Printer;
use crate::provider::ModelInfo;
use crate::reporter::Reporters;
use crate::unit::UnitId;

/// The run's dispatcher.
pub struct Dispatcher {
    pub reporters: Reporters,
    model: ModelInfo,
    max_cost: Option<f64>,
    printer: Printer,
    /// The answers of the units and calls that succeeded (cache hits included).
    pub texts: HashMap<UnitId, String>,
    stopped: bool,
    /// What the run's earlier attempts spent (`rlm resume`): `--max-cost` counts the whole run.
    earlier_spend: f64,
}

impl Dispatcher {
    pub fn new(reporters: Reporters, model: ModelInfo, max_cost: Option<f64>, printer: Printer) -> Self {
        Dispatcher {
            reporters,
            model,
            max_cost,
            printer,
            texts: HashMap::new(),
            stopped: false,
            earlier_spend: 0.0,
        }
    }

    /// Counts `usd` spent by the run's earlier attempts against `--max-cost`.
    pub fn with_earlier_spend(mut self, usd: f64) -> Self {
        self.earlier_spend = usd;
        self
    }

    /// Sends an event to every reporter.
    pub fn emit(&mut self, event: Event) {
        self.reporters.emit(&event);
    }

    /// Stops dispatching for `reason` (once).
    fn stop(&mut self, reason: String) -> Flow {
        if !self.stopped {
            self.stopped = true;
            self.emit(Event::Stopping { reason });
        }
        Flow::Drain
    }

    /// Whether the run's spend (earlier attempts included) has reached `--max-cost`.
    pub fn over_budget(&self) -> Option<String> {
        let max = self.max_cost?;
        let spent = self.earlier_spend + self.reporters.builder.cost();
        (spent >= max && (spent > 0.0 || max == 0.0)).then(|| {
            let (shown, limit) = crate::money::usd_pair(spent, max);
            let earlier = if self.earlier_spend > 0.0 {
                format!(", {} of it before this resume", crate::money::usd(self.earlier_spend))
            } else {
                String::new()
            };
            format!(
                "the cost so far ({shown}{earlier}) reached --max-cost ({limit}): dispatching stopped; calls in \
                 flight finish and are recorded (rlm resume --max-cost with a higher budget goes on: finished \
                 answers are cached)"
            )
        })
    }
}

impl PoolHandler<JobOutcome> for Dispatcher {
    fn finished(&mut self, outcome: JobOutcome) -> Flow {
        let JobMeta { unit, label, kind } = outcome.meta;
        let cost_usd = self.model.cost(outcome.usage);
        let mut flow = Flow::Continue;
        match outcome.failure {
            None => {
                if let Some(text) = outcome.text {
                    self.texts.insert(unit.clone(), text);
                }
                self.emit(Event::Completed {
                    unit,
                    label,
                    kind,
                    attempts: outcome.attempts,
                    duration_ms: outcome.duration_ms,
                    usage: outcome.usage,
                    saved: outcome.saved,
                    cost_usd,
                    cached: outcome.cached,
                    truncated: outcome.truncated,
                    result_file: outcome.result_file,
                });
            }
            Some(JobFailure::Halted) => self.emit(Event::Cancelled {
                unit,
                label,
                kind,
                reason: "not started: the run stopped dispatching".into(),
            }),
            Some(JobFailure::Unit { kind: error, reason }) => self.emit(Event::Failed {
                unit,
                label,
                kind,
                attempts: outcome.attempts,
                duration_ms: outcome.duration_ms,
                usage: outcome.usage,
                cost_usd,
                error,
                reason,
                fatal: false,
            }),
            Some(JobFailure::Fatal(reason)) => {
                self.stopped = true;
                self.emit(Event::Failed {
                    unit,
                    label,
                    kind,
                    attempts: outcome.attempts,
                    duration_ms: outcome.duration_ms,
                    usage: outcome.usage,
                    cost_usd,
                    error: Some(crate::provider::ErrorKind::Fatal),
                    reason,
                    fatal: true,
                });
                flow = Flow::Abort;
            }
        }
        if let Some(error) = outcome.write_error {
            flow = flow_max(
                flow,
                self.stop(format!(
                    "{error}: dispatching stopped — every answer paid for so far is cached, so running again \
                     after fixing this pays nothing for them"
                )),
            );
        }
        if flow == Flow::Continue {
            if let Some(reason) = self.over_budget() {
                flow = self.stop(reason);
            }
        }
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
            Lost::Panicked(message) => self.emit(Event::Failed {
                unit,
                label,
                kind,
                attempts: 0,
                duration_ms: 0,
                usage: Default::default(),
                cost_usd: 0.0,
                error: None,
                reason: format!("internal error: {message} (this is a bug in rlm; please report it)"),
                fatal: false,
            }),
        }
    }

    fn interrupting(&mut self, in_flight: usize, grace: Duration) {
        self.printer.progress(&format!(
            "interrupted: dispatching stopped; waiting up to {}s for {in_flight} calls in flight (Ctrl-C again to stop now)",
            grace.as_secs()
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

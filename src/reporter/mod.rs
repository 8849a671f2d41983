//! Reporters: each consumes the run's [`Event`]s and does one thing with them — the live
//! progress display, the `events.jsonl` log, the report builder. Each can be tested alone
//! from a list of events.

mod event_log;
mod progress;
mod report_builder;
mod store_reporter;

pub use event_log::EventLog;
pub use progress::ProgressReporter;
pub use report_builder::{ReportBuilder, ReportContext, RunEnd};
pub use store_reporter::{StoreReporter, StoreTarget};

use crate::exec::Event;

/// Why a unit the run left open (queued, or started and not ended) did not end, when the
/// run stopped with `status`: the one wording of the event log's `task:cancelled` and the
/// task store. `why`: what stopped the run, when it was neither Ctrl-C nor a limit.
pub(crate) fn left_open(status: crate::store::RunStatus, started: bool, why: Option<&str>) -> String {
    use crate::store::RunStatus;
    let verb = if started { "not finished" } else { "not run" };
    match status {
        RunStatus::Interrupted => format!("{verb}: the run was interrupted (rlm resume goes on)"),
        RunStatus::BudgetExceeded => {
            format!("{verb}: --max-cost was reached (rlm resume --max-cost with a higher budget goes on)")
        }
        RunStatus::DeadlineExceeded => {
            format!("{verb}: the --deadline passed (rlm resume --deadline with more time goes on)")
        }
        _ => match why {
            Some(why) => format!("{verb}: the run stopped first ({why}; rlm resume goes on)"),
            None => format!("{verb}: the run stopped first (rlm resume goes on)"),
        },
    }
}

/// Something that hears every event of a run.
pub trait Reporter {
    fn report(&mut self, event: &Event);
}

/// The run's reporters, in the order they hear each event.
pub struct Reporters {
    pub progress: ProgressReporter,
    pub log: Option<EventLog>,
    pub builder: ReportBuilder,
    /// The task store (`rlm status`, `list`, `resume`); `None` when it cannot be opened.
    pub store: Option<StoreReporter>,
}

impl Reporters {
    pub fn emit(&mut self, event: &Event) {
        self.builder.report(event);
        if let Some(log) = &mut self.log {
            log.report(event);
        }
        self.progress.report(event);
        if let Some(store) = &mut self.store {
            store.report(event);
        }
    }
}
